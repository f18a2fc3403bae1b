//! The door into a shard from other threads: a bounded lock-free queue, the
//! sleep/wake handshake, and close (SPEC G6, G9, §5).
//!
//! # Protocol
//!
//! Callers on any thread [`push`](Intake::push); the shard alone pops. The
//! shard is woken only when it may be asleep, never once per input:
//!
//! - **Caller:** register as a pusher (`state += 1`, refused if `CLOSED` is
//!   set), push into the queue, deregister (`state -= 1`), then, if
//!   `sleeping` is set, clear it and wake the shard.
//! - **Shard going to sleep:** register its waker, set `sleeping`, then look
//!   at the queue and `state` once more; if anything arrived it clears
//!   `sleeping` and does not sleep.
//!
//! Both sides write one location and then read the other's, with sequentially
//! consistent operations, so at least one of them sees the other: either the
//! caller sees `sleeping` and wakes the shard, or the shard sees the input
//! and stays up. No wake-up is lost.
//!
//! **Bell.** Not everything the shard waits for is an item: a batch it sent
//! is answered on whatever thread its store client runs. That thread
//! [`ring`](Intake::ring)s: it sets `rung`, then wakes the shard the same
//! way a caller does. The shard counts `rung` as news when it is about to
//! sleep, so a ring obeys the same handshake as a push and is never lost;
//! while the shard is awake a ring costs one store and one load.
//!
//! **Close** sets `CLOSED` and wakes the shard. A pusher that registered
//! before `CLOSED` was set is counted in `state`, so the shard waits until the
//! count drops to zero (*sealed*); from then on nothing can enter the queue,
//! and one last drain sees everything that did. A pusher that registers after
//! sees `CLOSED` and gets its input back. So an input racing with close is
//! either drained and answered or refused and handed back (G9).

use std::sync::atomic::Ordering::SeqCst;
use std::task::Waker;

use self::sync::{ArrayQueue, AtomicBool, AtomicU64, AtomicWaker};
use crate::refused::{Refusal, Refused};

/// The primitives the protocol is built from. Under `--cfg loom` they are
/// swapped for loom's, so `tests/loom_intake.rs` can check every
/// interleaving of this very code; the protocol itself does not change.
#[cfg(not(loom))]
mod sync {
    pub(super) use crossbeam_queue::ArrayQueue;
    pub(super) use futures::task::AtomicWaker;
    pub(super) use std::sync::atomic::{AtomicBool, AtomicU64};
}

#[cfg(loom)]
mod sync {
    use std::collections::VecDeque;
    use std::sync::atomic::Ordering::{self, SeqCst};
    use std::task::Waker;

    use loom::sync::atomic::fence;
    use loom::sync::Mutex;

    // Loom models a `SeqCst` load or store as if it were `AcqRel`, which
    // would let through the store-buffering interleaving (each side misses
    // the other's write) that `SeqCst` rules out and the handshake relies
    // on. It does model `fence(SeqCst)`, so each access here is paired with
    // one: a store or read-modify-write is followed by a fence, a load or
    // read-modify-write preceded by one. That restores what the handshake
    // takes from `SeqCst`: of two threads that each write one location and
    // then read the other's, at least one sees the other's write.

    /// `AtomicBool` with `SeqCst` as loom models it (see above).
    #[derive(Debug)]
    pub(super) struct AtomicBool(loom::sync::atomic::AtomicBool);

    impl AtomicBool {
        pub(super) fn new(value: bool) -> Self {
            Self(loom::sync::atomic::AtomicBool::new(value))
        }

        pub(super) fn load(&self, order: Ordering) -> bool {
            assert_eq!(order, SeqCst);
            fence(SeqCst);
            self.0.load(SeqCst)
        }

        pub(super) fn store(&self, value: bool, order: Ordering) {
            assert_eq!(order, SeqCst);
            self.0.store(value, SeqCst);
            fence(SeqCst);
        }

        /// A swap of a `bool` as one compare-exchange: loom can build an
        /// impossible history from a `swap` racing a plain store, not from
        /// a single compare-exchange. If the value is already `value`,
        /// nothing changes, as with the swap.
        pub(super) fn swap(&self, value: bool, order: Ordering) -> bool {
            assert_eq!(order, SeqCst);
            fence(SeqCst);
            let before = match self.0.compare_exchange(!value, value, SeqCst, SeqCst) {
                Ok(before) | Err(before) => before,
            };
            fence(SeqCst);
            before
        }
    }

    /// `AtomicU64` with `SeqCst` as loom models it (see above).
    #[derive(Debug)]
    pub(super) struct AtomicU64(loom::sync::atomic::AtomicU64);

    impl AtomicU64 {
        pub(super) fn new(value: u64) -> Self {
            Self(loom::sync::atomic::AtomicU64::new(value))
        }

        pub(super) fn load(&self, order: Ordering) -> u64 {
            assert_eq!(order, SeqCst);
            fence(SeqCst);
            self.0.load(SeqCst)
        }

        fn update(&self, f: impl FnOnce(&loom::sync::atomic::AtomicU64) -> u64) -> u64 {
            fence(SeqCst);
            let before = f(&self.0);
            fence(SeqCst);
            before
        }

        pub(super) fn fetch_add(&self, value: u64, order: Ordering) -> u64 {
            assert_eq!(order, SeqCst);
            self.update(|atomic| atomic.fetch_add(value, SeqCst))
        }

        pub(super) fn fetch_sub(&self, value: u64, order: Ordering) -> u64 {
            assert_eq!(order, SeqCst);
            self.update(|atomic| atomic.fetch_sub(value, SeqCst))
        }

        pub(super) fn fetch_or(&self, value: u64, order: Ordering) -> u64 {
            assert_eq!(order, SeqCst);
            self.update(|atomic| atomic.fetch_or(value, SeqCst))
        }
    }

    /// A bounded queue with the part of crossbeam's `ArrayQueue` API the
    /// intake uses; each operation is one atomic step, as it is there.
    #[derive(Debug)]
    pub(super) struct ArrayQueue<T> {
        items: Mutex<VecDeque<T>>,
        capacity: usize,
    }

    impl<T> ArrayQueue<T> {
        pub(super) fn new(capacity: usize) -> Self {
            assert!(capacity > 0, "capacity must be non-zero");
            Self {
                items: Mutex::new(VecDeque::with_capacity(capacity)),
                capacity,
            }
        }

        pub(super) fn push(&self, item: T) -> Result<(), T> {
            let mut items = self.items.lock().unwrap();
            if items.len() == self.capacity {
                return Err(item);
            }
            items.push_back(item);
            Ok(())
        }

        pub(super) fn pop(&self) -> Option<T> {
            self.items.lock().unwrap().pop_front()
        }

        pub(super) fn len(&self) -> usize {
            self.items.lock().unwrap().len()
        }

        pub(super) fn is_empty(&self) -> bool {
            self.items.lock().unwrap().is_empty()
        }

        pub(super) fn capacity(&self) -> usize {
            self.capacity
        }
    }

    /// The last registered waker, taken and woken by `wake`, as
    /// `futures::task::AtomicWaker` does.
    #[derive(Debug, Default)]
    pub(super) struct AtomicWaker {
        waker: Mutex<Option<Waker>>,
    }

    impl AtomicWaker {
        pub(super) fn new() -> Self {
            Self::default()
        }

        pub(super) fn register(&self, waker: &Waker) {
            *self.waker.lock().unwrap() = Some(waker.clone());
        }

        pub(super) fn wake(&self) {
            if let Some(waker) = self.waker.lock().unwrap().take() {
                waker.wake();
            }
        }
    }
}

const CLOSED: u64 = 1 << 63;

/// A shard's bounded intake queue with its wake-up and close protocol.
///
/// ```
/// use ferry_shard::parts::Intake;
/// use ferry_shard::Refused;
///
/// let intake = Intake::new(2);
/// intake.push(1).unwrap();
/// intake.push(2).unwrap();
/// assert_eq!(intake.push(3).unwrap_err().reason, Refused::Full);
///
/// intake.close();
/// assert_eq!(intake.push(4).unwrap_err().item, 4);
/// assert!(intake.is_sealed());
/// assert_eq!((intake.pop(), intake.pop(), intake.pop()), (Some(1), Some(2), None));
/// ```
#[derive(Debug)]
pub struct Intake<T> {
    queue: ArrayQueue<T>,
    /// `CLOSED` bit, plus the number of pushers between register and
    /// deregister.
    state: AtomicU64,
    sleeping: AtomicBool,
    waker: AtomicWaker,
    /// Rung since the shard last took it (see [`Intake::ring`]).
    rung: AtomicBool,
    /// Inputs that bundles in the queue carry beyond one each (see
    /// [`Intake::push_bundle`]): with the queue's length, the inputs waiting
    /// here, which the capacity bounds.
    bundled: AtomicU64,
}

impl<T> Intake<T> {
    /// An open intake holding at most `capacity` inputs (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            queue: ArrayQueue::new(capacity.max(1)),
            state: AtomicU64::new(0),
            sleeping: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            rung: AtomicBool::new(false),
            bundled: AtomicU64::new(0),
        }
    }

    /// Hands `item` to the shard. Refused at once, with the item handed
    /// back, if the intake is closed (`Closed`) or full (`Full`).
    pub fn push(&self, item: T) -> Result<(), Refusal<T>> {
        // Callers that come after close are turned away without touching the
        // pusher count, so a stream of them cannot hold off the seal.
        if self.state.load(SeqCst) & CLOSED != 0 {
            return Err(Refusal {
                item,
                reason: Refused::Closed,
            });
        }
        let before = self.state.fetch_add(1, SeqCst);
        if before & CLOSED != 0 {
            self.state.fetch_sub(1, SeqCst);
            // The shard may be waiting for the pusher count to reach zero.
            self.wake_if_sleeping();
            return Err(Refusal {
                item,
                reason: Refused::Closed,
            });
        }
        let pushed = self.queue.push(item);
        self.state.fetch_sub(1, SeqCst);
        self.wake_if_sleeping();
        pushed.map_err(|item| Refusal {
            item,
            reason: Refused::Full,
        })
    }

    /// Like [`push`](Self::push), for one item that carries `inputs`
    /// inputs (a bundle): one push and at most one wake-up for all of them,
    /// and the capacity counts each input. Refused `Full` if they do not
    /// all fit. The shard calls [`popped_bundle`](Self::popped_bundle) once
    /// it has taken the bundle out.
    ///
    /// ```
    /// use ferry_shard::parts::Intake;
    /// use ferry_shard::Refused;
    ///
    /// let intake = Intake::new(4);
    /// intake.push_bundle(vec![1, 2, 3], 3).unwrap();
    /// assert_eq!(intake.len(), 3);
    /// let refused = intake.push_bundle(vec![4, 5], 2).unwrap_err();
    /// assert_eq!((refused.item, refused.reason), (vec![4, 5], Refused::Full));
    /// let bundle = intake.pop().unwrap();
    /// intake.popped_bundle(bundle.len());
    /// assert_eq!(intake.len(), 0);
    /// ```
    pub fn push_bundle(&self, item: T, inputs: usize) -> Result<(), Refusal<T>> {
        let inputs = inputs.max(1) as u64;
        let waiting = self.queue.len() as u64 + self.bundled.load(SeqCst);
        if waiting + inputs > self.queue.capacity() as u64 {
            return Err(Refusal {
                item,
                reason: if self.is_closed() {
                    Refused::Closed
                } else {
                    Refused::Full
                },
            });
        }
        // Counted before the push, so the shard's subtraction after its pop
        // never comes first.
        self.bundled.fetch_add(inputs - 1, SeqCst);
        self.push(item).inspect_err(|_| {
            self.bundled.fetch_sub(inputs - 1, SeqCst);
        })
    }

    /// Shard side: a bundle of `inputs` inputs was popped.
    pub fn popped_bundle(&self, inputs: usize) {
        self.bundled.fetch_sub(inputs.max(1) as u64 - 1, SeqCst);
    }

    fn wake_if_sleeping(&self) {
        // The load keeps the common case (shard awake) free of a write to a
        // shared line; the swap makes sure only one caller pays for the wake.
        if self.sleeping.load(SeqCst) && self.sleeping.swap(false, SeqCst) {
            self.waker.wake();
        }
    }

    /// Any thread: tells the shard that something other than an item wants
    /// its attention (a batch future was woken), and wakes it if it sleeps.
    /// Rings between two looks of the shard count once.
    pub fn ring(&self) {
        self.rung.store(true, SeqCst);
        self.wake_if_sleeping();
    }

    /// Shard side: whether a ring came since the last call, clearing it.
    pub fn take_rung(&self) -> bool {
        // The load keeps the common case (no ring) free of a write.
        self.rung.load(SeqCst) && self.rung.swap(false, SeqCst)
    }

    /// Refuses every later push and wakes the shard. Idempotent; any thread.
    pub fn close(&self) {
        self.state.fetch_or(CLOSED, SeqCst);
        self.sleeping.store(false, SeqCst);
        self.waker.wake();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.state.load(SeqCst) & CLOSED != 0
    }

    /// Closed, and no push is in progress: nothing can enter the queue any
    /// more, so once it is drained it stays empty.
    pub fn is_sealed(&self) -> bool {
        self.state.load(SeqCst) == CLOSED
    }

    /// Shard side: the oldest pushed item.
    pub fn pop(&self) -> Option<T> {
        self.queue.pop()
    }

    /// Inputs pushed and not yet popped (a bundle counts its inputs).
    pub fn len(&self) -> usize {
        self.queue.len() + self.bundled.load(SeqCst) as usize
    }

    /// Whether nothing waits to be popped.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The most items the queue holds.
    pub fn capacity(&self) -> usize {
        self.queue.capacity()
    }

    /// Shard side, before it parks: registers `waker` and announces sleep.
    /// Returns `false` (and stays awake) if there is something to do: an
    /// item, a ring not yet taken, a close the shard has not seen yet
    /// (`close_seen == false`), or, while it waits for the seal
    /// (`await_seal`), the seal.
    pub fn prepare_sleep(&self, waker: &Waker, close_seen: bool, await_seal: bool) -> bool {
        self.waker.register(waker);
        self.sleeping.store(true, SeqCst);
        let state = self.state.load(SeqCst);
        let news = self.rung.load(SeqCst)
            || !self.queue.is_empty()
            || (state & CLOSED != 0 && !close_seen)
            || (await_seal && state == CLOSED);
        if news {
            self.sleeping.store(false, SeqCst);
        }
        !news
    }

    /// Shard side, once running again: no wake is needed any more.
    pub fn awake(&self) {
        if self.sleeping.load(SeqCst) {
            self.sleeping.store(false, SeqCst);
        }
    }
}
