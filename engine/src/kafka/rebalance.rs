//! The Kafka client's context: where a cooperative rebalance reaches the
//! feed. librdkafka runs these callbacks on the consumer thread, inside
//! `poll`, before it changes the assignment: so a revoked partition is
//! drained and committed before it is let go, and an assigned one's hook
//! runs before its first record is fetched.

use std::sync::{Mutex, MutexGuard};

use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, ConsumerContext, Rebalance};

use super::feed::Feed;

/// The consumer's context: the feed, behind a lock only the consumer
/// thread takes (the client requires a context it could share).
pub(crate) struct FeedContext<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone,
{
    feed: Mutex<Feed<K, I, O, E>>,
}

impl<K, I, O, E> FeedContext<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone,
{
    pub(crate) fn new(feed: Feed<K, I, O, E>) -> Self {
        Self {
            feed: Mutex::new(feed),
        }
    }

    /// The feed; `None` if a panic left it poisoned (the consumer thread is
    /// then unwinding, and only leaves the group).
    pub(crate) fn feed(&self) -> Option<MutexGuard<'_, Feed<K, I, O, E>>> {
        self.feed.lock().ok()
    }
}

impl<K, I, O, E> ClientContext for FeedContext<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
}

impl<K, I, O, E> ConsumerContext for FeedContext<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let Some(mut feed) = self.feed() else {
            return;
        };
        match rebalance {
            Rebalance::Assign(list) => feed.assign(list),
            Rebalance::Revoke(list) => feed.revoke(consumer, list),
            Rebalance::Error(err) => feed.poll_error(err.clone()),
        }
    }
}
