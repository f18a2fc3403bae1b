//! The futures of one input's outcome: [`Submit`] (from any thread, `Send`)
//! and [`LocalSubmit`] (from a task on the engine's own shard).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use ferry_shard::{Answer, FerryError, LocalAnswer, Outcome, Refused};

/// The future of one input's outcome, returned by
/// [`Engine::submit`](crate::Engine::submit) and
/// [`Batcher::submit`](crate::Batcher::submit). `Send`, `Unpin`, and
/// independent of the executor polling it.
///
/// ```
/// use ferry::{Batcher, Submit};
///
/// let batcher: Batcher<u32, u32, String> = Batcher::builder()
///     .shards(1)
///     .pin(false)
///     .start(|_shard| |inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
///     .unwrap();
/// let submit: Submit<u32, u32, String> = batcher.submit(5);
/// assert_eq!(futures::executor::block_on(submit), Ok(5));
/// ```
#[must_use = "the outcome of the input is in this future (dropping it withdraws the input only with withdraw_on_drop)"]
pub struct Submit<I, O, E> {
    state: SubmitState<I, O, E>,
}

enum SubmitState<I, O, E> {
    Ready(Option<Outcome<I, O, E>>),
    Waiting(Answer<I, O, E>),
}

impl<I, O, E> Submit<I, O, E> {
    pub(crate) fn refused(input: I, reason: Refused) -> Self {
        Self {
            state: SubmitState::Ready(Some(Err(FerryError::Refused { input, reason }))),
        }
    }

    pub(crate) fn waiting(answer: Answer<I, O, E>) -> Self {
        Self {
            state: SubmitState::Waiting(answer),
        }
    }

    /// Takes the refusal out of a submission refused on the caller's
    /// thread; `None` if the input was admitted (the future then awaits its
    /// answer as before). For a caller that must know at once, before
    /// submitting the next input: the Kafka consumer keeps a partition's
    /// records in offset order this way.
    #[cfg(feature = "kafka")]
    pub(crate) fn take_refusal(&mut self) -> Option<(I, Refused)> {
        match &mut self.state {
            SubmitState::Ready(outcome) => match outcome.take() {
                Some(Err(FerryError::Refused { input, reason })) => Some((input, reason)),
                other => {
                    *outcome = other;
                    None
                }
            },
            SubmitState::Waiting(_) => None,
        }
    }
}

// Nothing in a `Submit` is pinned structurally: the outcome is moved out
// whole and the answer is itself `Unpin`.
impl<I, O, E> Unpin for Submit<I, O, E> {}

impl<I, O, E> Future for Submit<I, O, E> {
    type Output = Outcome<I, O, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            SubmitState::Ready(outcome) => {
                Poll::Ready(outcome.take().expect("Submit polled after it completed"))
            }
            SubmitState::Waiting(answer) => Pin::new(answer).poll(cx),
        }
    }
}

impl<I, O, E> std::fmt::Debug for Submit<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            SubmitState::Ready(_) => "ready",
            SubmitState::Waiting(_) => "waiting",
        };
        f.debug_struct("Submit").field("state", &state).finish()
    }
}

/// The future of an [`Engine::submit_local`](crate::Engine::submit_local):
/// answered directly by the shard it runs on, or through the ordinary path.
/// Not `Send`.
///
/// ```
/// use ferry::{Engine, LocalSubmit};
///
/// let engine: Engine<u64, u64, u64, String> = Engine::builder()
///     .shards(1)
///     .pin(false)
///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
///     .unwrap();
/// // Off the shards, it takes the ordinary path.
/// let local: LocalSubmit<u64, u64, String> = engine.submit_local(1, 2);
/// assert_eq!(futures::executor::block_on(local), Ok(2));
/// ```
#[must_use = "the outcome of the input is in this future (dropping it withdraws the input only with withdraw_on_drop)"]
pub struct LocalSubmit<I, O, E> {
    state: LocalState<I, O, E>,
}

enum LocalState<I, O, E> {
    Local(LocalAnswer<I, O, E>),
    Remote(Submit<I, O, E>),
}

impl<I, O, E> LocalSubmit<I, O, E> {
    pub(crate) fn local(answer: LocalAnswer<I, O, E>) -> Self {
        Self {
            state: LocalState::Local(answer),
        }
    }

    pub(crate) fn remote(submit: Submit<I, O, E>) -> Self {
        Self {
            state: LocalState::Remote(submit),
        }
    }
}

// As for `Submit`: nothing inside is pinned structurally.
impl<I, O, E> Unpin for LocalSubmit<I, O, E> {}

impl<I, O, E> Future for LocalSubmit<I, O, E> {
    type Output = Outcome<I, O, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            LocalState::Local(answer) => Pin::new(answer).poll(cx),
            LocalState::Remote(submit) => Pin::new(submit).poll(cx),
        }
    }
}

impl<I, O, E> std::fmt::Debug for LocalSubmit<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            LocalState::Local(_) => "local",
            LocalState::Remote(_) => "remote",
        };
        f.debug_struct("LocalSubmit")
            .field("state", &state)
            .finish()
    }
}
