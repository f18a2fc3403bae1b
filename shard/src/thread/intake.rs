//! The door into a shard from other threads: a bounded lock-free queue, the
//! sleep/wake handshake, and close (guarantees G6 and G9, and
//! docs/guarantees.md#inside-a-shard).
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

use crate::sync::{ArrayQueue, AtomicBool, AtomicU64, AtomicWaker};
use crate::value::refused::{Refusal, Refused};

const CLOSED: u64 = 1 << 63;

/// A shard's bounded intake queue with its wake-up and close protocol.
///
/// ```
/// # #[cfg(feature = "internals")] {
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
/// # }
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
    /// # #[cfg(feature = "internals")] {
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
    /// # }
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
