//! The future of [`Engine::flush`](crate::Engine::flush) and
//! [`Batcher::flush`](crate::Batcher::flush).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use ferry_shard::Flushed;

/// Resolves once every input admitted before the flush was called is
/// answered (with its output or an error), expired or withdrawn, on every
/// shard. The engine stays open meanwhile and goes on admitting; inputs
/// admitted after the call are not waited for. `Send`, `Unpin`, and
/// independent of the executor polling it.
///
/// ```
/// use ferry::{Batcher, Flush};
///
/// let batcher: Batcher<u32, u32, String> = Batcher::builder()
///     .shards(2)
///     .pin(false)
///     .start(|_| |inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
///     .unwrap();
/// let pending: Vec<_> = (0..10).map(|n| batcher.submit(n)).collect();
/// let flush: Flush = batcher.flush();
/// futures::executor::block_on(flush);
/// assert_eq!(batcher.stats().total().admitted, 10);
/// # drop(pending);
/// ```
#[must_use = "a flush does nothing unless awaited"]
#[derive(Debug)]
pub struct Flush {
    /// The shards not yet flushed.
    shards: Vec<Flushed>,
}

impl Flush {
    pub(crate) fn new(shards: Vec<Flushed>) -> Self {
        Self { shards }
    }
}

impl Future for Flush {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.shards
            .retain_mut(|shard| Pin::new(shard).poll(cx).is_pending());
        if self.shards.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}
