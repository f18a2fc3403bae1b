//! One answer cell for many inputs: the outcomes of a `submit_many` call.
//!
//! An input submitted alone is answered through a oneshot channel of its
//! own: one allocation, and on the caller's side one future to poll and one
//! waker to register, per input. A caller handing over hundreds of inputs
//! at once would pay that hundreds of times. Here every input of one call
//! shares one cell instead: the shards push `(index, outcome)` pairs into
//! it as batches finish, and the caller reads them as a stream
//! ([`Outcomes`]), taking everything that arrived since its last look under
//! one lock. An input costs its sender a reference count and a push.
//!
//! Invariant: every index handed out is yielded exactly once — by the
//! sender's [`send`](GatherSender::send), by the sender's drop (`Aborted`:
//! its batch was dropped with the shard), or at once for an input refused
//! on the caller's side ([`Outcomes::refuse`]).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::Ordering::SeqCst;
use std::task::{Context, Poll};

use futures::Stream;

use crate::core::Outcome;
use crate::error::FerryError;
use crate::refused::Refused;
use crate::sync::{Arc, AtomicBool, AtomicWaker, Mutex, MutexGuard};

/// Outcomes a call makes room for at once, at most (`with_capacity`).
const ROOM_MAX: usize = 1_024;

/// An outcome and the position of its input in the call.
type Indexed<I, O, E> = (usize, Outcome<I, O, E>);

/// What the shards and the caller share.
struct Cell<I, O, E> {
    /// Outcomes pushed and not yet taken by the caller.
    arrived: Mutex<Vec<Indexed<I, O, E>>>,
    /// The caller's task, once it waits.
    waker: AtomicWaker,
    /// The caller dropped its [`Outcomes`]: nobody reads what arrives.
    abandoned: AtomicBool,
}

impl<I, O, E> Cell<I, O, E> {
    fn arrived(&self) -> MutexGuard<'_, Vec<Indexed<I, O, E>>> {
        // A panic cannot happen while the lock is held (a push, a drain),
        // but if one did, the vector is still whole.
        self.arrived
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Adds an outcome for the caller to take. Only the push that finds
    /// nothing waiting wakes the caller: a later one finds an outcome it
    /// has not taken yet, whose push woke it (or which it finds when it
    /// looks again after registering its waker), so it will take both.
    fn push(&self, index: usize, outcome: Outcome<I, O, E>) {
        let first = {
            let mut arrived = self.arrived();
            arrived.push((index, outcome));
            arrived.len() == 1
        };
        if first {
            self.waker.wake();
        }
    }
}

/// Where one input of a call sends its outcome. Dropped unsent (its batch
/// was dropped as its shard stopped), it answers `Aborted`.
pub struct GatherSender<I, O, E> {
    cell: Option<Arc<Cell<I, O, E>>>,
    index: usize,
}

impl<I, O, E> GatherSender<I, O, E> {
    /// Delivers this input's outcome.
    pub fn send(mut self, outcome: Outcome<I, O, E>) {
        if let Some(cell) = self.cell.take() {
            cell.push(self.index, outcome);
        }
    }

    /// Whether the caller dropped the call's [`Outcomes`].
    pub fn is_abandoned(&self) -> bool {
        self.cell
            .as_ref()
            .is_some_and(|cell| cell.abandoned.load(SeqCst))
    }
}

impl<I, O, E> Drop for GatherSender<I, O, E> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            cell.push(self.index, Err(FerryError::Aborted));
        }
    }
}

impl<I, O, E> std::fmt::Debug for GatherSender<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatherSender")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

/// The outcomes of the inputs of one `submit_many` call, as a [`Stream`] of
/// `(index, outcome)`: `index` is the input's position in the call, and the
/// pairs come as the inputs are answered, not in the order given. Every
/// input comes out exactly once, then the stream ends;
/// [`all`](Outcomes::all) waits for every one and puts them back in order.
///
/// Dropping it stops nothing: the inputs are still batched and sent, unless
/// the engine withdraws inputs whose callers are gone (`withdraw_on_drop`),
/// in which case those not yet taken into a batch are withdrawn.
///
/// ```
/// use ferry_shard::{FerryError, Outcomes, Refused};
/// use futures::StreamExt;
///
/// // Outcomes are made by `submit_many`; one refused on the spot comes
/// // out like any other.
/// let mut outcomes = Outcomes::<u32, u32, ()>::new();
/// outcomes.refuse(7, Refused::TooHeavy);
/// assert_eq!(outcomes.len(), 1);
/// let all = futures::executor::block_on(outcomes.all());
/// assert_eq!(all, vec![Err(FerryError::Refused { input: 7, reason: Refused::TooHeavy })]);
/// ```
pub struct Outcomes<I, O, E> {
    cell: Arc<Cell<I, O, E>>,
    /// Taken from the cell, not yet yielded.
    taken: VecDeque<Indexed<I, O, E>>,
    /// Inputs of the call so far (the next index).
    inputs: usize,
    /// Inputs not yet yielded.
    pending: usize,
}

impl<I, O, E> Default for Outcomes<I, O, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<I, O, E> Outcomes<I, O, E> {
    /// An empty call, to which inputs are added as they are handed over.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty call with room for the outcomes of about `inputs` inputs
    /// (at most `ROOM_MAX` ahead: they are taken as they come).
    pub fn with_capacity(inputs: usize) -> Self {
        let room = inputs.min(ROOM_MAX);
        Self {
            cell: Arc::new(Cell {
                arrived: Mutex::new(Vec::with_capacity(room)),
                waker: AtomicWaker::new(),
                abandoned: AtomicBool::new(false),
            }),
            taken: VecDeque::with_capacity(room),
            inputs: 0,
            pending: 0,
        }
    }

    /// The next input of the call will be answered through the sender
    /// returned.
    pub fn sender(&mut self) -> GatherSender<I, O, E> {
        GatherSender {
            cell: Some(Arc::clone(&self.cell)),
            index: self.next_index(),
        }
    }

    /// The next input of the call is refused at once, and comes back.
    pub fn refuse(&mut self, input: I, reason: Refused) {
        let index = self.next_index();
        self.taken
            .push_back((index, Err(FerryError::Refused { input, reason })));
    }

    fn next_index(&mut self) -> usize {
        let index = self.inputs;
        self.inputs += 1;
        self.pending += 1;
        index
    }

    /// Outcomes still to come (or taken and not yet yielded).
    pub fn len(&self) -> usize {
        self.pending
    }

    /// Whether every outcome has been yielded.
    pub fn is_empty(&self) -> bool {
        self.pending == 0
    }

    /// Waits for every outcome, and returns them in the order the inputs
    /// were given.
    pub async fn all(mut self) -> Vec<Outcome<I, O, E>> {
        use futures::StreamExt;
        let mut slots: Vec<Option<Outcome<I, O, E>>> = Vec::new();
        slots.resize_with(self.inputs, || None);
        while let Some((index, outcome)) = self.next().await {
            debug_assert!(slots[index].is_none(), "each input comes out once");
            slots[index] = Some(outcome);
        }
        slots
            .into_iter()
            .map(|slot| slot.expect("every input comes out"))
            .collect()
    }

    /// Moves what arrived into `taken`; whether anything did.
    fn take_arrived(&mut self) -> bool {
        let mut arrived = self.cell.arrived();
        self.taken.extend(arrived.drain(..));
        !self.taken.is_empty()
    }

    fn yield_taken(&mut self) -> Option<Indexed<I, O, E>> {
        let next = self.taken.pop_front()?;
        self.pending -= 1;
        Some(next)
    }
}

impl<I, O, E> Unpin for Outcomes<I, O, E> {}

impl<I, O, E> Stream for Outcomes<I, O, E> {
    type Item = (usize, Outcome<I, O, E>);

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(next) = this.yield_taken() {
            return Poll::Ready(Some(next));
        }
        if this.pending == 0 {
            return Poll::Ready(None);
        }
        if !this.take_arrived() {
            // Registered before the second look: a push after the first
            // look either shows in the second or wakes the new waker.
            this.cell.waker.register(cx.waker());
            if !this.take_arrived() {
                return Poll::Pending;
            }
        }
        Poll::Ready(this.yield_taken())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.pending, Some(self.pending))
    }
}

impl<I, O, E> Drop for Outcomes<I, O, E> {
    fn drop(&mut self) {
        self.cell.abandoned.store(true, SeqCst);
    }
}

impl<I, O, E> std::fmt::Debug for Outcomes<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outcomes")
            .field("inputs", &self.inputs)
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    type Of = Outcomes<u32, u32, ()>;

    #[test]
    fn each_input_comes_out_once_and_then_the_stream_ends() {
        let mut outcomes = Of::new();
        let (a, b) = (outcomes.sender(), outcomes.sender());
        outcomes.refuse(9, Refused::Full);
        std::thread::spawn(move || {
            b.send(Ok(20));
            a.send(Ok(10));
        })
        .join()
        .unwrap();
        let mut seen: Vec<_> = futures::executor::block_on(outcomes.collect());
        seen.sort_by_key(|(index, _)| *index);
        let refused = Err(FerryError::Refused {
            input: 9,
            reason: Refused::Full,
        });
        assert_eq!(seen, vec![(0, Ok(10)), (1, Ok(20)), (2, refused)]);
    }

    #[test]
    fn all_puts_them_back_in_the_order_given() {
        let mut outcomes = Of::new();
        let senders: Vec<_> = (0..5).map(|_| outcomes.sender()).collect();
        for (i, sender) in senders.into_iter().enumerate().rev() {
            sender.send(Ok(i as u32 * 2));
        }
        let all = futures::executor::block_on(outcomes.all());
        assert_eq!(all, vec![Ok(0), Ok(2), Ok(4), Ok(6), Ok(8)]);
    }

    #[test]
    fn a_sender_dropped_unsent_answers_aborted() {
        let mut outcomes = Of::new();
        drop(outcomes.sender());
        let all = futures::executor::block_on(outcomes.all());
        assert_eq!(all, vec![Err(FerryError::Aborted)]);
    }

    #[test]
    fn a_push_wakes_the_waiting_caller() {
        let mut outcomes = Of::new();
        let sender = outcomes.sender();
        let pusher = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            sender.send(Ok(1));
        });
        // Blocks until woken: a lost wake-up would hang here.
        let first = futures::executor::block_on(outcomes.next());
        assert_eq!(first, Some((0, Ok(1))));
        pusher.join().unwrap();
        assert_eq!(futures::executor::block_on(outcomes.next()), None);
    }

    #[test]
    fn dropping_the_outcomes_marks_every_sender_abandoned() {
        let mut outcomes = Of::new();
        let sender = outcomes.sender();
        assert!(!sender.is_abandoned());
        drop(outcomes);
        assert!(sender.is_abandoned());
        sender.send(Ok(1)); // nobody reads it; not an error
    }

    #[test]
    fn len_counts_what_is_still_to_come() {
        let mut outcomes = Of::new();
        let sender = outcomes.sender();
        outcomes.refuse(1, Refused::Closed);
        assert_eq!((outcomes.len(), outcomes.size_hint()), (2, (2, Some(2))));
        sender.send(Ok(3));
        let _ = futures::executor::block_on(outcomes.next());
        let _ = futures::executor::block_on(outcomes.next());
        assert!(outcomes.is_empty());
    }
}
