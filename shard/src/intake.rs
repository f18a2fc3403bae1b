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
//! **Close** sets `CLOSED` and wakes the shard. A pusher that registered
//! before `CLOSED` was set is counted in `state`, so the shard waits until the
//! count drops to zero (*sealed*); from then on nothing can enter the queue,
//! and one last drain sees everything that did. A pusher that registers after
//! sees `CLOSED` and gets its input back. So an input racing with close is
//! either drained and answered or refused and handed back (G9).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::task::Waker;

use crossbeam_queue::ArrayQueue;
use futures::task::AtomicWaker;

use crate::refused::{Refusal, Refused};

const CLOSED: u64 = 1 << 63;

/// A shard's bounded intake queue with its wake-up and close protocol.
///
/// ```
/// use ferry_shard::{Intake, Refused};
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
}

impl<T> Intake<T> {
    /// An open intake holding at most `capacity` inputs (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            queue: ArrayQueue::new(capacity.max(1)),
            state: AtomicU64::new(0),
            sleeping: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        }
    }

    /// Hands `item` to the shard. Refused at once, with the item handed
    /// back, if the intake is closed (`Closed`) or full (`Full`).
    pub fn push(&self, item: T) -> Result<(), Refusal<T>> {
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

    fn wake_if_sleeping(&self) {
        // The load keeps the common case (shard awake) free of a write to a
        // shared line; the swap makes sure only one caller pays for the wake.
        if self.sleeping.load(SeqCst) && self.sleeping.swap(false, SeqCst) {
            self.waker.wake();
        }
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

    /// Items pushed and not yet popped.
    pub fn len(&self) -> usize {
        self.queue.len()
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
    /// item, a close the shard has not seen yet (`close_seen == false`), or,
    /// while it waits for the seal (`await_seal`), the seal.
    pub fn prepare_sleep(&self, waker: &Waker, close_seen: bool, await_seal: bool) -> bool {
        self.waker.register(waker);
        self.sleeping.store(true, SeqCst);
        let state = self.state.load(SeqCst);
        let news = !self.queue.is_empty()
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
