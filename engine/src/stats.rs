//! A snapshot of every shard's gauges, counters and distributions, read
//! without a lock.
//!
//! Distributions (batch size, batch weight, queue time, batch time) count
//! since each shard started. Each shard's [`ShardStats`] carries their
//! [`Summary`] (count, mean, p50, p90, p99, max); [`Stats::total`] merges
//! the shards' buckets, so its percentiles are those of every input of the
//! engine together, not a combination of percentiles. Two snapshots give
//! the distributions in between ([`Distributions::since`]).

pub use ferry_shard::{Distribution, Distributions, ShardStats, Summary};

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
///     ..Stats::default()
/// };
/// let total = stats.total();
/// assert_eq!((total.admitted, total.answered, total.lanes), (5, 4, 1));
/// assert!(!stats.is_quiet());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// One entry per shard, indexed by [`ShardId::index`](crate::ShardId::index).
    pub shards: Vec<ShardStats>,
    /// Per shard, in the same order, the distributions its summaries were
    /// computed from, bucket by bucket. Empty in a `Stats` made by hand.
    pub distributions: Vec<Distributions>,
}

impl Stats {
    /// The sum over all shards; distributions are merged bucket by bucket
    /// (the largest value is the largest of any shard). Without
    /// `distributions` (a `Stats` made by hand), their summaries combine as
    /// [`Summary::combine`] says, each percentile an upper bound.
    ///
    /// ```
    /// use ferry::{Distributions, ShardStats, Stats};
    ///
    /// let one = ShardStats { admitted: 2, batches: 1, ..ShardStats::default() };
    /// let (mut fast, mut slow) = (Distributions::default(), Distributions::default());
    /// (0..99).for_each(|_| fast.queue_time_ns.record(1_000));
    /// slow.queue_time_ns.record(9_000_000);
    /// let stats = Stats { shards: vec![one, one], distributions: vec![fast, slow] };
    /// let total = stats.total();
    /// assert_eq!((total.admitted, total.batches), (4, 2));
    /// // 99 of the 100 inputs waited a microsecond: so did the 99th
    /// // percentile (to its bucket's precision, 1/16); the largest is exact.
    /// assert!((1_000..1_063).contains(&total.queue_time_ns.p99));
    /// assert_eq!(total.queue_time_ns.max, 9_000_000);
    /// ```
    pub fn total(&self) -> ShardStats {
        let mut total = self
            .shards
            .iter()
            .fold(ShardStats::default(), |sum, shard| sum.add(shard));
        if !self.distributions.is_empty() && self.distributions.len() == self.shards.len() {
            self.distributions_total().summarize(&mut total);
        }
        total
    }

    /// Every shard's distributions merged.
    ///
    /// ```
    /// use ferry::{Distributions, Stats};
    ///
    /// let mut shard = Distributions::default();
    /// shard.batch_size.record(8);
    /// let stats = Stats { distributions: vec![shard.clone(), shard], ..Stats::default() };
    /// assert_eq!(stats.distributions_total().batch_size.count(), 2);
    /// ```
    pub fn distributions_total(&self) -> Distributions {
        self.distributions
            .iter()
            .fold(Distributions::default(), |mut all, shard| {
                all.merge(shard);
                all
            })
    }

    /// Nothing waits, nothing is in flight, and every admitted input was
    /// sent and answered.
    ///
    /// ```
    /// use ferry::{ShardStats, Stats};
    ///
    /// let done = ShardStats { admitted: 5, sent: 5, answered: 5, ..ShardStats::default() };
    /// assert!(Stats { shards: vec![done], ..Stats::default() }.is_quiet());
    /// let busy = ShardStats { in_flight: 1, ..done };
    /// assert!(!Stats { shards: vec![done, busy], ..Stats::default() }.is_quiet());
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
