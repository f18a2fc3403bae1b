//! A snapshot of every shard's gauges and counters, read without a lock.

pub use ferry_shard::ShardStats;

/// Per-shard stats, in shard order. Each shard's fields are as of some recent
/// round of that shard; shards are not read at one instant.
///
/// ```
/// use ferry::{ShardStats, Stats};
///
/// let stats = Stats {
///     shards: vec![
///         ShardStats { admitted: 3, sent: 3, answered: 3, ..ShardStats::default() },
///         ShardStats { admitted: 2, sent: 1, answered: 1, waiting: 1, lanes: 1, ..ShardStats::default() },
///     ],
/// };
/// let total = stats.total();
/// assert_eq!((total.admitted, total.answered, total.lanes), (5, 4, 1));
/// assert!(!stats.is_quiet());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// One entry per shard, indexed by [`ShardId::index`](crate::ShardId::index).
    pub shards: Vec<ShardStats>,
}

impl Stats {
    /// The sum over all shards.
    ///
    /// ```
    /// use ferry::{ShardStats, Stats};
    ///
    /// let one = ShardStats { admitted: 2, batches: 1, ..ShardStats::default() };
    /// let stats = Stats { shards: vec![one, one] };
    /// assert_eq!((stats.total().admitted, stats.total().batches), (4, 2));
    /// ```
    pub fn total(&self) -> ShardStats {
        self.shards
            .iter()
            .fold(ShardStats::default(), |sum, shard| sum.add(shard))
    }

    /// Nothing waits, nothing is in flight, and every admitted input was
    /// sent and answered.
    ///
    /// ```
    /// use ferry::{ShardStats, Stats};
    ///
    /// let done = ShardStats { admitted: 5, sent: 5, answered: 5, ..ShardStats::default() };
    /// assert!(Stats { shards: vec![done] }.is_quiet());
    /// let busy = ShardStats { in_flight: 1, ..done };
    /// assert!(!Stats { shards: vec![done, busy] }.is_quiet());
    /// ```
    pub fn is_quiet(&self) -> bool {
        self.shards.iter().all(|s| {
            s.lanes == 0
                && s.waiting == 0
                && s.in_flight == 0
                && s.intake == 0
                && s.admitted == s.sent
                && s.sent == s.answered
        })
    }
}
