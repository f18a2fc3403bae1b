//! The thread-per-core fast path (SPEC §4): a task running on a shard that
//! submits a key owned by that same shard is admitted directly into the
//! shard's lanes — no queue, no channel, no atomic operation — and is
//! answered through a single-threaded slot.
//!
//! The shard loop installs a [`LocalShard`] in a thread-local while it runs.
//! A local submit finds it, checks that it belongs to the same engine and
//! shard, borrows the shard's core for the one call to `admit`, and nudges
//! the loop with a local wake. The loop never holds that borrow across an
//! await, so the borrow cannot collide with it.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

thread_local! {
    static CURRENT: RefCell<Option<LocalShard>> = const { RefCell::new(None) };
}

/// What a shard thread exposes to the tasks running on it.
#[derive(Clone)]
pub struct LocalShard {
    /// Identifies the engine the shard belongs to.
    pub engine: usize,
    /// The shard's index.
    pub index: usize,
    /// The shard's `Rc<RefCell<ShardCore<K, I, O, E>>>`, typed away so the
    /// thread-local can hold any engine's.
    pub core: Rc<dyn Any>,
    /// Wakes the shard loop after a direct admission.
    pub nudge: Rc<Nudge>,
    /// The origin of the shard's clock (`now` is the time since it).
    pub origin: std::time::Instant,
}

impl LocalShard {
    /// Runs `f` with the shard running on this thread, if any.
    pub fn with<R>(f: impl FnOnce(Option<&LocalShard>) -> R) -> R {
        CURRENT.with(|current| f(current.borrow().as_ref()))
    }

    /// Installs `shard` as this thread's shard until the guard drops.
    pub fn install(shard: LocalShard) -> Installed {
        CURRENT.with(|current| *current.borrow_mut() = Some(shard));
        Installed(())
    }
}

/// Uninstalls the thread's shard when dropped.
pub struct Installed(());

impl Drop for Installed {
    fn drop(&mut self) {
        CURRENT.with(|current| current.borrow_mut().take());
    }
}

/// The shard loop's waker, for local tasks to wake it without atomics.
#[derive(Default)]
pub struct Nudge {
    waker: RefCell<Option<Waker>>,
    pending: Cell<bool>,
}

impl Nudge {
    /// Loop side: remember the waker to be woken by.
    pub fn register(&self, waker: &Waker) {
        let mut slot = self.waker.borrow_mut();
        if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }

    /// Task side: something was admitted; make the loop run a round.
    pub fn nudge(&self) {
        if !self.pending.replace(true) {
            if let Some(waker) = self.waker.borrow().as_ref() {
                waker.wake_by_ref();
            }
        }
    }

    /// Loop side: whether a nudge came since the last call.
    pub fn take(&self) -> bool {
        self.pending.replace(false)
    }
}

struct Slot<T> {
    outcome: RefCell<Option<T>>,
    waker: RefCell<Option<Waker>>,
    closed: Cell<bool>,
}

/// The shard's end of a local answer. Dropping it unanswered resolves the
/// caller's side with `None` (the shard stopped).
pub struct LocalSender<T> {
    slot: Rc<Slot<T>>,
}

/// The caller's end of a local answer: resolves to `Some(outcome)`, or `None`
/// if the shard dropped the sender unanswered.
pub struct LocalReceiver<T> {
    slot: Rc<Slot<T>>,
}

/// A single-threaded one-shot answer slot.
pub fn local_channel<T>() -> (LocalSender<T>, LocalReceiver<T>) {
    let slot = Rc::new(Slot {
        outcome: RefCell::new(None),
        waker: RefCell::new(None),
        closed: Cell::new(false),
    });
    (LocalSender { slot: slot.clone() }, LocalReceiver { slot })
}

impl<T> LocalSender<T> {
    /// Delivers the outcome and wakes the caller.
    pub fn send(self, outcome: T) {
        *self.slot.outcome.borrow_mut() = Some(outcome);
        // Drop runs next and wakes the caller.
    }
}

impl<T> Drop for LocalSender<T> {
    fn drop(&mut self) {
        self.slot.closed.set(true);
        if let Some(waker) = self.slot.waker.borrow_mut().take() {
            waker.wake();
        }
    }
}

impl<T> Future for LocalReceiver<T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let slot = &self.slot;
        if let Some(outcome) = slot.outcome.borrow_mut().take() {
            return Poll::Ready(Some(outcome));
        }
        if slot.closed.get() {
            return Poll::Ready(None);
        }
        let mut waker = slot.waker.borrow_mut();
        if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_answer_arrives_once_and_a_dropped_sender_resolves_none() {
        let (tx, rx) = local_channel::<u32>();
        tx.send(7);
        assert_eq!(futures::executor::block_on(rx), Some(7));

        let (tx, rx) = local_channel::<u32>();
        drop(tx);
        assert_eq!(futures::executor::block_on(rx), None);
    }
}
