//! One answer cell for many inputs: the outcomes of a `submit_many` call.
//!
//! An input submitted alone is answered through a oneshot channel of its
//! own: one allocation, and on the caller's side one future to poll and one
//! waker to register, per input. A caller passing hundreds of inputs
//! at once would pay that hundreds of times. Here every input of one call
//! shares one cell instead, and what crosses threads is paid per call and
//! per shard round, not per input:
//!
//! - the caller hands each shard its share with one reference to the cell
//!   ([`ToShard`]) and each input's index in the call;
//! - the shard wraps that reference once ([`Gathering`], shard-local), and
//!   each input's reply ([`GatherReply`]) points into it without an atomic;
//!   answers are kept there, and the shard hands them over at the end of
//!   its round ([`Deliveries::deliver`]): one lock and at most one wake-up
//!   per call per round;
//! - the caller reads them as a stream ([`Outcomes`]), taking everything
//!   that arrived since its last look under one lock.
//!
//! Wake-up: only a delivery that finds the cell empty wakes the caller; a
//! later one finds an outcome the caller has not taken, whose delivery
//! woke it. The caller, finding nothing, registers its waker and looks
//! again before it sleeps. (Checked by `tests/loom_gather.rs`.)
//!
//! Invariant: every index a call hands out comes out of its stream exactly
//! once — answered, refused on the caller's side ([`Outcomes::refuse`]),
//! or `Aborted` when a reply is dropped unsent (its batch was dropped with
//! the shard).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::atomic::Ordering::SeqCst;
use std::task::{Context, Poll};

use futures::Stream;

use crate::sync::{Arc, AtomicBool, AtomicWaker, Mutex, MutexGuard};
use crate::value::error::FerryError;
use crate::value::error::Outcome;
use crate::value::refused::Refused;

/// Outcomes a call makes room for at once, at most (`with_capacity`).
const ROOM_MAX: usize = 1_024;

/// An outcome and the position of its input in the call.
type Indexed<I, O, E> = (usize, Outcome<I, O, E>);

/// What the shards and the caller share.
struct Cell<I, O, E> {
    /// Outcomes delivered and not yet taken by the caller.
    arrived: Mutex<Vec<Indexed<I, O, E>>>,
    /// The caller's task, once it waits.
    waker: AtomicWaker,
    /// The caller dropped its [`Outcomes`]: nobody reads what arrives.
    abandoned: AtomicBool,
}

impl<I, O, E> Cell<I, O, E> {
    fn arrived(&self) -> MutexGuard<'_, Vec<Indexed<I, O, E>>> {
        // No code that can panic runs under the lock (moves of values the
        // shard already owns), but if one did, the vector is still whole.
        self.arrived
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Hands `outcomes` to the caller (emptying it), waking it if the cell
    /// had nothing in it.
    fn hand_over(&self, outcomes: &mut Vec<Indexed<I, O, E>>) {
        if outcomes.is_empty() {
            return;
        }
        let was_empty = {
            let mut arrived = self.arrived();
            let was_empty = arrived.is_empty();
            arrived.append(outcomes);
            was_empty
        };
        if was_empty {
            self.waker.wake();
        }
    }
}

/// A call's cell, as one shard receives it with its share of the inputs.
pub struct ToShard<I, O, E>(Arc<Cell<I, O, E>>);

impl<I, O, E> ToShard<I, O, E> {
    /// Whether this is the cell of `outcomes`' call.
    pub fn is_of(&self, outcomes: &Outcomes<I, O, E>) -> bool {
        Arc::ptr_eq(&self.0, &outcomes.cell)
    }

    /// Answers the inputs of the call in `indexed` (index, input) at once,
    /// each with `outcome` of its input (a share refused whole before any
    /// shard admitted it).
    pub fn answer_all(
        &self,
        indexed: impl IntoIterator<Item = (usize, I)>,
        outcome: impl Fn(I) -> Outcome<I, O, E>,
    ) {
        let mut outcomes: Vec<_> = indexed
            .into_iter()
            .map(|(index, input)| (index, outcome(input)))
            .collect();
        self.0.hand_over(&mut outcomes);
    }
}

impl<I, O, E> std::fmt::Debug for ToShard<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToShard")
    }
}

/// A shard's delivery list: the calls with answers kept since its last
/// [`deliver`](Deliveries::deliver). Dropped, it delivers what it keeps.
pub struct Deliveries<I, O, E> {
    pending: Rc<Pending<I, O, E>>,
}

/// The calls with answers kept on a shard, each once.
type Pending<I, O, E> = RefCell<Vec<Rc<Kept<I, O, E>>>>;

/// One call's answers kept on one shard.
struct Kept<I, O, E> {
    cell: Arc<Cell<I, O, E>>,
    outcomes: RefCell<Vec<Indexed<I, O, E>>>,
    /// Where to note that this call has answers to deliver; gone once the
    /// shard's list is (the shard is stopping): then answers go at once.
    list: Weak<Pending<I, O, E>>,
}

impl<I, O, E> Kept<I, O, E> {
    fn keep(self: &Rc<Self>, index: usize, outcome: Outcome<I, O, E>) {
        let first = {
            let mut outcomes = self.outcomes.borrow_mut();
            outcomes.push((index, outcome));
            outcomes.len() == 1
        };
        if !first {
            return;
        }
        match self.list.upgrade() {
            Some(list) => list.borrow_mut().push(Rc::clone(self)),
            None => self.cell.hand_over(&mut self.outcomes.borrow_mut()),
        }
    }
}

impl<I, O, E> Drop for Kept<I, O, E> {
    fn drop(&mut self) {
        self.cell.hand_over(self.outcomes.get_mut());
    }
}

impl<I, O, E> Default for Deliveries<I, O, E> {
    fn default() -> Self {
        Self {
            pending: Rc::new(RefCell::new(Vec::new())),
        }
    }
}

impl<I, O, E> Deliveries<I, O, E> {
    /// The shard received a share of `inputs` inputs of a call: their
    /// replies come from the [`Gathering`] returned.
    pub fn gathering(&self, to: ToShard<I, O, E>, inputs: usize) -> Gathering<I, O, E> {
        Gathering(Rc::new(Kept {
            cell: to.0,
            outcomes: RefCell::new(Vec::with_capacity(inputs)),
            list: Rc::downgrade(&self.pending),
        }))
    }

    /// Hands every answer kept since the last call to its caller.
    pub fn deliver(&self) {
        if self.is_empty() {
            return;
        }
        // Taken out of the list first: a delivery wakes a caller, and a
        // waker is foreign code that must not find the list borrowed.
        let mut pending = std::mem::take(&mut *self.pending.borrow_mut());
        for kept in pending.drain(..) {
            kept.cell.hand_over(&mut kept.outcomes.borrow_mut());
        }
        // The emptied list goes back, keeping its room for the next round.
        let mut list = self.pending.borrow_mut();
        if list.is_empty() {
            *list = pending;
        }
    }

    /// Whether answers are kept, waiting for [`deliver`](Self::deliver).
    pub fn is_empty(&self) -> bool {
        self.pending.borrow().is_empty()
    }
}

impl<I, O, E> Drop for Deliveries<I, O, E> {
    fn drop(&mut self) {
        self.deliver();
    }
}

impl<I, O, E> std::fmt::Debug for Deliveries<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliveries")
            .field("calls", &self.pending.borrow().len())
            .finish()
    }
}

/// One call's share on one shard: makes its inputs' replies.
pub struct Gathering<I, O, E>(Rc<Kept<I, O, E>>);

impl<I, O, E> Gathering<I, O, E> {
    /// The reply of the call's input `index`.
    pub fn reply(&self, index: usize) -> GatherReply<I, O, E> {
        GatherReply {
            kept: Some(Rc::clone(&self.0)),
            index,
        }
    }
}

/// Where one input of a call sends its outcome (on its shard's thread).
/// Dropped unsent (its batch was dropped as its shard stopped), it answers
/// `Aborted`.
pub struct GatherReply<I, O, E> {
    kept: Option<Rc<Kept<I, O, E>>>,
    index: usize,
}

impl<I, O, E> GatherReply<I, O, E> {
    /// Keeps this input's outcome, for its shard's next delivery.
    pub fn send(mut self, outcome: Outcome<I, O, E>) {
        if let Some(kept) = self.kept.take() {
            kept.keep(self.index, outcome);
        }
    }

    /// Whether the caller dropped the call's [`Outcomes`].
    pub fn is_abandoned(&self) -> bool {
        self.kept
            .as_ref()
            .is_some_and(|kept| kept.cell.abandoned.load(SeqCst))
    }
}

impl<I, O, E> Drop for GatherReply<I, O, E> {
    fn drop(&mut self) {
        if let Some(kept) = self.kept.take() {
            kept.keep(self.index, Err(FerryError::Aborted));
        }
    }
}

impl<I, O, E> std::fmt::Debug for GatherReply<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatherReply")
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
    /// An empty call, to which inputs are added as they are passed.
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

    /// Adds an input to the call, answered through a shard's `Gathering`
    /// of [`to_shard`](Self::to_shard): returns its index.
    pub fn add(&mut self) -> usize {
        let index = self.inputs;
        self.inputs += 1;
        self.pending += 1;
        index
    }

    /// Adds an input to the call, refused at once: it comes back.
    pub fn refuse(&mut self, input: I, reason: Refused) {
        let index = self.add();
        self.taken
            .push_back((index, Err(FerryError::Refused { input, reason })));
    }

    /// The call's cell, to hand to a shard with its share of the inputs.
    pub fn to_shard(&self) -> ToShard<I, O, E> {
        ToShard(Arc::clone(&self.cell))
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

    /// Moves what arrived into `taken`; whether anything is there.
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
            // Registered before the second look: a delivery after the
            // first look either shows in the second or wakes the new waker.
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

    /// A shard's side of `outcomes`: its list and its share.
    fn shard(outcomes: &Of) -> (Deliveries<u32, u32, ()>, Gathering<u32, u32, ()>) {
        let deliveries = Deliveries::default();
        let gathering = deliveries.gathering(outcomes.to_shard(), 8);
        (deliveries, gathering)
    }

    #[test]
    fn each_input_comes_out_once_and_then_the_stream_ends() {
        let mut outcomes = Of::new();
        let (a, b) = (outcomes.add(), outcomes.add());
        outcomes.refuse(9, Refused::Full);
        let to = outcomes.to_shard();
        std::thread::spawn(move || {
            let deliveries = Deliveries::default();
            let gathering = deliveries.gathering(to, 2);
            gathering.reply(b).send(Ok(20));
            gathering.reply(a).send(Ok(10));
            deliveries.deliver();
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
    fn answers_wait_on_the_shard_until_delivered() {
        let mut outcomes = Of::new();
        let index = outcomes.add();
        let (deliveries, gathering) = shard(&outcomes);
        gathering.reply(index).send(Ok(5));
        assert!(!deliveries.is_empty());
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert_eq!(outcomes.poll_next_unpin(&mut cx), Poll::Pending);
        deliveries.deliver();
        assert!(deliveries.is_empty());
        assert_eq!(
            outcomes.poll_next_unpin(&mut cx),
            Poll::Ready(Some((0, Ok(5))))
        );
    }

    #[test]
    fn all_puts_them_back_in_the_order_given() {
        let mut outcomes = Of::new();
        let indices: Vec<_> = (0..5).map(|_| outcomes.add()).collect();
        let (deliveries, gathering) = shard(&outcomes);
        for index in indices.into_iter().rev() {
            gathering.reply(index).send(Ok(index as u32 * 2));
        }
        drop(deliveries); // delivers what it keeps
        let all = futures::executor::block_on(outcomes.all());
        assert_eq!(all, vec![Ok(0), Ok(2), Ok(4), Ok(6), Ok(8)]);
    }

    #[test]
    fn a_reply_dropped_unsent_answers_aborted() {
        let mut outcomes = Of::new();
        let index = outcomes.add();
        let (deliveries, gathering) = shard(&outcomes);
        drop(gathering.reply(index));
        deliveries.deliver();
        let all = futures::executor::block_on(outcomes.all());
        assert_eq!(all, vec![Err(FerryError::Aborted)]);
    }

    #[test]
    fn once_the_shards_list_is_gone_answers_go_at_once() {
        let mut outcomes = Of::new();
        let index = outcomes.add();
        let (deliveries, gathering) = shard(&outcomes);
        drop(deliveries);
        gathering.reply(index).send(Ok(3));
        let all = futures::executor::block_on(outcomes.all());
        assert_eq!(all, vec![Ok(3)]);
    }

    #[test]
    fn a_share_refused_whole_comes_back_input_by_input() {
        let mut outcomes = Of::new();
        let shared: Vec<_> = [4, 5].into_iter().map(|i| (outcomes.add(), i)).collect();
        outcomes.to_shard().answer_all(shared, |input| {
            Err(FerryError::Refused {
                input,
                reason: Refused::Closed,
            })
        });
        let all = futures::executor::block_on(outcomes.all());
        let back: Vec<_> = all
            .into_iter()
            .map(|outcome| match outcome {
                Err(FerryError::Refused { input, .. }) => input,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(back, vec![4, 5]);
    }

    #[test]
    fn a_delivery_wakes_the_waiting_caller() {
        let mut outcomes = Of::new();
        let index = outcomes.add();
        let to = outcomes.to_shard();
        let pusher = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let deliveries = Deliveries::default();
            deliveries.gathering(to, 1).reply(index).send(Ok(1));
            deliveries.deliver();
        });
        // Blocks until woken: a lost wake-up would hang here.
        let first = futures::executor::block_on(outcomes.next());
        assert_eq!(first, Some((0, Ok(1))));
        pusher.join().unwrap();
        assert_eq!(futures::executor::block_on(outcomes.next()), None);
    }

    #[test]
    fn dropping_the_outcomes_marks_every_reply_abandoned() {
        let mut outcomes = Of::new();
        let index = outcomes.add();
        let (deliveries, gathering) = shard(&outcomes);
        let reply = gathering.reply(index);
        assert!(!reply.is_abandoned());
        drop(outcomes);
        assert!(reply.is_abandoned());
        reply.send(Ok(1)); // nobody reads it; not an error
        deliveries.deliver();
    }

    #[test]
    fn len_counts_what_is_still_to_come() {
        let mut outcomes = Of::new();
        let index = outcomes.add();
        outcomes.refuse(1, Refused::Closed);
        assert_eq!((outcomes.len(), outcomes.size_hint()), (2, (2, Some(2))));
        let (deliveries, gathering) = shard(&outcomes);
        gathering.reply(index).send(Ok(3));
        deliveries.deliver();
        let _ = futures::executor::block_on(outcomes.next());
        let _ = futures::executor::block_on(outcomes.next());
        assert!(outcomes.is_empty());
    }
}
