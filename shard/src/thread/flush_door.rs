//! How a flush request reaches a shard from any thread, and how a request
//! made as the shard stops is never left waiting.
//!
//! Requests go through a queue of their own rather than the intake: the
//! intake is bounded and refuses once closed, and a flush must neither be
//! refused under load nor after close (it then waits for the drain). The
//! shard, on seeing a request, first admits everything that was in its
//! intake, so every input pushed before the request is waited for.
//!
//! The shard *shuts* the door as its thread ends, then drops the requests
//! left; a requester pushes, then looks whether the door is shut. With a
//! full fence between each side's two steps, at least one of them sees the
//! other: either the shard drops the request (which resolves its waiter)
//! or the requester sees the door shut and does not wait.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{fence, AtomicBool, Ordering::SeqCst};
use std::task::{Context, Poll};

use crossbeam_queue::SegQueue;
use tokio::sync::oneshot;

/// The flush requests of one shard, `R` being how a request is told.
#[derive(Debug)]
pub(crate) struct FlushDoor<R> {
    requests: SegQueue<R>,
    shut: AtomicBool,
}

impl<R> Default for FlushDoor<R> {
    fn default() -> Self {
        Self {
            requests: SegQueue::new(),
            shut: AtomicBool::new(false),
        }
    }
}

impl<R> FlushDoor<R> {
    /// Any thread: hands in a request. Returns `false` if the shard has
    /// stopped, in which case nobody will tell `reply` anything but its
    /// drop, and there is nothing left to wait for.
    pub(crate) fn request(&self, reply: R) -> bool {
        self.requests.push(reply);
        fence(SeqCst);
        !self.shut.load(SeqCst)
    }

    /// Shard side: the requests handed in so far, in order.
    pub(crate) fn take(&self) -> Vec<R> {
        let mut taken = Vec::new();
        while let Some(reply) = self.requests.pop() {
            taken.push(reply);
        }
        taken
    }

    /// Shard side: whether a request waits (a cheap look, every round).
    pub(crate) fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Shard side, as its thread ends: shuts the door and hands out the
    /// requests left, to be dropped.
    pub(crate) fn shut(&self) -> Vec<R> {
        self.shut.store(true, SeqCst);
        fence(SeqCst);
        self.take()
    }
}

/// The future of a shard's flush: resolves once every input admitted before
/// it is resolved, or the shard has stopped (when nothing is left to wait
/// for either). `Send` and `Unpin`.
///
/// ```
/// # use std::sync::Arc;
/// # use ferry_shard::parts::{Lanes, Waiter};
/// # use ferry_shard::{key_hash, Offer, Shard, ShardConfig, ShardId};
/// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
/// # let times = |key: u64, inputs: Vec<u64>| async move {
/// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
/// # };
/// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
/// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
/// # starting.wait().expect("started");
/// let _answers: Vec<_> = (1..=3_u64)
///     .map(|key| shard.submit(Offer::new(key_hash(&key), key, 2, 0, 1)))
///     .collect::<Result<_, _>>()
///     .map_err(|r| r.reason)?;
/// futures::executor::block_on(shard.flush());
/// assert_eq!(shard.stats().answered_ok, 3);
///
/// shard.close();
/// shard.join();
/// // A stopped shard's flush resolves at once.
/// futures::executor::block_on(shard.flush());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Flushed(oneshot::Receiver<()>);

impl Flushed {
    pub(crate) fn new(flushed: oneshot::Receiver<()>) -> Self {
        Self(flushed)
    }

    /// A flush with nothing to wait for.
    pub(crate) fn done() -> Self {
        let (reply, flushed) = oneshot::channel();
        let _ = reply.send(());
        Self(flushed)
    }
}

impl Future for Flushed {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Told, or dropped by a shard that stopped: either way, done.
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_after_shut_is_not_waited_for() {
        let door = FlushDoor::default();
        assert!(door.request(1));
        assert_eq!(door.shut(), vec![1]);
        assert!(!door.request(2), "the shard is gone");
    }

    #[test]
    fn a_dropped_request_resolves_its_flush() {
        let (reply, flushed) = oneshot::channel::<()>();
        drop(reply);
        futures::executor::block_on(Flushed::new(flushed));
    }
}
