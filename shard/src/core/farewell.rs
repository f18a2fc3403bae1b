//! The end of a shard's thread, as the figures see it.

use crate::core::shard_core::{ShardCore, Waiter};
use crate::core::stats::ShardCounters;
use crate::core::trace;
use crate::queue::seam::Queue;

/// The shard's thread ends: inputs sent and never answered (their batch
/// was in flight, or finished and not yet answered) are counted `aborted`,
/// and the final figures published.
pub(crate) fn farewell<Q, I, O, E>(
    core: &mut ShardCore<Q, I, O, E>,
    counters: &ShardCounters,
    died: bool,
) where
    Q: Queue<Waiter<I, O, E>>,
    E: Clone,
{
    let stats = core.stats();
    let aborted = stats.sent.saturating_sub(stats.answered + stats.aborted);
    let stats = core.stats_mut();
    stats.aborted += aborted;
    // Published below with the rest, so they must not go back to 0.
    stats.stopped = 1;
    stats.died = u64::from(died);
    let shard = core.observer_mut().shard();
    if aborted > 0 {
        trace::aborted(shard, aborted);
    }
    #[cfg(feature = "metrics")]
    crate::core::metrics::farewell(shard, aborted, died);
    let stats = core.stats();
    counters.publish(&stats, &mut core.observer_mut().histograms);
}
