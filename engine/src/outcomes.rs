//! [`Outcomes`]: the answers of one `submit_many` call, as a stream.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;

use ferry_shard::Outcome;

/// The outcomes of the inputs of one
/// [`Engine::submit_many`](crate::Engine::submit_many) (or
/// [`Batcher::submit_many`](crate::Batcher::submit_many)) call, as a
/// [`Stream`] of `(index, outcome)`: `index` is the input's position in the
/// call, and the pairs come as the inputs are answered, not in the order
/// given. Every input comes out exactly once, then the stream ends;
/// [`all`](Outcomes::all) waits for every one and puts them back in order.
/// `Send` when the input, output and error types are.
///
/// Dropping it stops nothing: the inputs are still batched and sent,
/// unless the engine withdraws inputs whose callers are gone
/// (`withdraw_on_drop`), in which case those not yet taken into a batch
/// are withdrawn.
///
/// ```
/// use ferry::Engine;
/// use futures::StreamExt;
///
/// let engine: Engine<u64, u64, u64, String> = Engine::builder()
///     .shards(2)
///     .pin(false)
///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
///     .unwrap();
/// let mut outcomes = engine.submit_many([(1, 10), (2, 20), (3, 30)]);
/// assert_eq!(outcomes.len(), 3);
/// let mut seen = futures::executor::block_on(async {
///     let mut seen = Vec::new();
///     while let Some(pair) = outcomes.next().await {
///         seen.push(pair);
///     }
///     seen
/// });
/// seen.sort_by_key(|(index, _)| *index);
/// assert_eq!(seen, vec![(0, Ok(10)), (1, Ok(20)), (2, Ok(30))]);
/// assert!(outcomes.is_empty());
/// ```
#[must_use = "the inputs' outcomes are in this stream (dropping it withdraws them only with withdraw_on_drop)"]
pub struct Outcomes<I, O, E>(ferry_shard::Outcomes<I, O, E>);

impl<I, O, E> Outcomes<I, O, E> {
    pub(crate) fn new(outcomes: ferry_shard::Outcomes<I, O, E>) -> Self {
        Self(outcomes)
    }

    /// Outcomes not yet yielded.
    ///
    /// ```
    /// # let engine: ferry::Engine<u64, u64, u64, ()> = ferry::Engine::builder()
    /// #     .shards(1).pin(false)
    /// #     .start(|_| |_k: u64, inputs: Vec<u64>| async move { Ok::<_, ()>(inputs) })
    /// #     .unwrap();
    /// let outcomes = engine.submit_many((0..5).map(|i| (i, i)));
    /// assert_eq!(outcomes.len(), 5);
    /// ```
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether every outcome has been yielded.
    ///
    /// ```
    /// # let engine: ferry::Engine<u64, u64, u64, ()> = ferry::Engine::builder()
    /// #     .shards(1).pin(false)
    /// #     .start(|_| |_k: u64, inputs: Vec<u64>| async move { Ok::<_, ()>(inputs) })
    /// #     .unwrap();
    /// assert!(engine.submit_many(Vec::<(u64, u64)>::new()).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Waits for every outcome, and returns them in the order the inputs
    /// were given.
    ///
    /// ```
    /// # let engine: ferry::Engine<u64, u64, u64, ()> = ferry::Engine::builder()
    /// #     .shards(2).pin(false)
    /// #     .start(|_| |_k: u64, inputs: Vec<u64>| async move { Ok::<_, ()>(inputs) })
    /// #     .unwrap();
    /// let all = futures::executor::block_on(engine.submit_many([(7, 1), (8, 2)]).all());
    /// assert_eq!(all, vec![Ok(1), Ok(2)]);
    /// ```
    pub async fn all(self) -> Vec<Outcome<I, O, E>> {
        self.0.all().await
    }
}

impl<I, O, E> Unpin for Outcomes<I, O, E> {}

impl<I, O, E> Stream for Outcomes<I, O, E> {
    type Item = (usize, Outcome<I, O, E>);

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.0).poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<I, O, E> std::fmt::Debug for Outcomes<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outcomes")
            .field("pending", &self.len())
            .finish()
    }
}
