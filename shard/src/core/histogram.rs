//! A log-bucketed histogram of `u64` values: cheap enough to record on a
//! shard's hot path (one bucket index and one increment per value), small
//! enough to publish bucket by bucket, and mergeable, so the distribution of
//! a whole engine is the exact sum of its shards'.
//!
//! Values below 16 each have their own bucket; above, every power of two is
//! split into 16 equal buckets. A value is reported as the highest value of
//! its bucket, never above the largest value recorded, so a reported
//! percentile is never below the true one and at most 1/16 (6.25%) above it.
//! Values from 2^40 up (about 18 minutes in nanoseconds) share the last
//! bucket, which reports the largest value recorded.
//!
//! Three forms:
//!
//! - [`Histogram`]: the shard's own, plain counts; remembers which buckets
//!   changed since they were last published, and counts a run of equal
//!   values of a figure that repeats (a batch's size) before it reaches
//!   the buckets.
//! - [`PublishedHistogram`]: the same counts as relaxed atomics, written by
//!   the shard (only the buckets that changed) and read by any thread.
//! - [`Distribution`]: what a reader gets, a copy of the counts with the
//!   percentiles computed from them, to merge or to subtract.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Buckets per power of two, as bits.
const SUB_BITS: u32 = 4;
/// Buckets per power of two.
const SUB: usize = 1 << SUB_BITS;
/// Values from `2^TOP_EXP` up share the last bucket.
const TOP_EXP: u32 = 40;
/// Buckets in all: the exact ones below `SUB`, then `SUB` per power of two.
pub(crate) const BUCKETS: usize = SUB + (TOP_EXP - SUB_BITS) as usize * SUB;
/// Words of the changed-bucket mask.
const MASK_WORDS: usize = BUCKETS.div_ceil(64);

/// The bucket of `value`, without a branch: with `shift` the bits below a
/// value's top `SUB_BITS + 1` (none below `2 * SUB`), `value >> shift` is
/// the value itself below `2 * SUB` and otherwise in `SUB..2 * SUB`, its
/// top bit the power of two and the rest the sub-bucket; each power of two
/// past the first adds `SUB`. Values of `2^TOP_EXP` and up land past the
/// last bucket and are clamped into it.
#[inline]
fn bucket_of(value: u64) -> usize {
    let exp = 63 - (value | 1).leading_zeros();
    let shift = exp.max(SUB_BITS) - SUB_BITS;
    let bucket = shift as usize * SUB + (value >> shift) as usize;
    bucket.min(BUCKETS - 1)
}

/// The highest value that falls in `bucket` (the last bucket has none: it
/// is open above).
fn highest_in(bucket: usize) -> u64 {
    if bucket < SUB {
        return bucket as u64;
    }
    let exp = ((bucket - SUB) / SUB) as u32 + SUB_BITS;
    let sub = ((bucket - SUB) % SUB) as u64;
    let width = 1_u64 << (exp - SUB_BITS);
    (1_u64 << exp) + sub * width + width - 1
}

/// A shard's own histogram: plain counts, the running mean and the largest
/// value. Not shared; see the module docs.
///
/// A figure that often repeats from one value to the next (a batch's size
/// or weight: 1 with many keys, the largest batch under load) is recorded
/// with [`record_repeating`](Histogram::record_repeating): equal values in
/// a row are counted as one run, which reaches the counts when a different
/// value comes or when the histogram is [settled](Histogram::settle), so
/// one more of a run costs a comparison and an increment. Invariant: every
/// reader of the counts settles first (publishing does).
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    sum: u128,
    max: u64,
    /// Buckets changed since [`PublishedHistogram::publish`] last ran.
    changed: [u64; MASK_WORDS],
    /// The value of the run being recorded, and its length: values counted
    /// but not yet in the fields above.
    run_value: u64,
    run: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: Box::new([0; BUCKETS]),
            count: 0,
            sum: 0,
            max: 0,
            changed: [0; MASK_WORDS],
            run_value: 0,
            run: 0,
        }
    }
}

impl Histogram {
    /// Counts one `value`.
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    /// Counts one `value` of a figure that often repeats: as one more of
    /// the run if it equals the run's value, otherwise by settling the run
    /// and starting a new one (see the type's docs).
    #[inline]
    pub fn record_repeating(&mut self, value: u64) {
        if value == self.run_value {
            self.run += 1;
        } else {
            self.settle();
            self.run_value = value;
            self.run = 1;
        }
    }

    /// Brings the run being recorded into the counts, for a reader.
    pub fn settle(&mut self) {
        if self.run > 0 {
            self.record_n(self.run_value, self.run);
            self.run = 0;
        }
    }

    /// Counts `value` `n` times.
    #[inline]
    pub fn record_n(&mut self, value: u64, n: u64) {
        let bucket = bucket_of(value);
        self.counts[bucket] += n;
        self.changed[bucket / 64] |= 1 << (bucket % 64);
        self.count += n;
        self.sum += u128::from(value) * u128::from(n);
        self.max = self.max.max(value);
    }

    /// Values counted, the run being recorded included.
    #[cfg_attr(not(any(feature = "metrics", test)), allow(dead_code))]
    pub fn count(&self) -> u64 {
        self.count + self.run
    }

    /// The counts, for an exporter that copies them elsewhere.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn counts(&self) -> &[u64] {
        self.assert_settled();
        &self.counts[..]
    }

    /// The value that stands for `bucket` when its counts are handed on.
    #[cfg_attr(not(any(feature = "metrics", test)), allow(dead_code))]
    pub(crate) fn value_of(&self, bucket: usize) -> u64 {
        self.assert_settled();
        represent(bucket, self.max)
    }

    fn mean(&self) -> u64 {
        self.assert_settled();
        mean_of(self.sum, self.count)
    }

    /// The sum of the values counted.
    #[cfg_attr(not(any(feature = "metrics", test)), allow(dead_code))]
    pub(crate) fn sum(&self) -> u128 {
        self.assert_settled();
        self.sum
    }

    /// The invariant of the type's docs: read only once settled.
    fn assert_settled(&self) {
        debug_assert_eq!(self.run, 0, "a histogram read before it was settled");
    }
}

/// What `bucket` is reported as, given the largest value recorded.
fn represent(bucket: usize, max: u64) -> u64 {
    if bucket == BUCKETS - 1 {
        max
    } else {
        highest_in(bucket).min(max)
    }
}

fn mean_of(sum: u128, count: u64) -> u64 {
    if count == 0 {
        0
    } else {
        u64::try_from(sum / u128::from(count)).unwrap_or(u64::MAX)
    }
}

/// A shard's histogram as any thread reads it. Written only by its shard.
#[derive(Debug)]
pub(crate) struct PublishedHistogram {
    counts: Box<[AtomicU64]>,
    mean: AtomicU64,
    max: AtomicU64,
}

impl Default for PublishedHistogram {
    fn default() -> Self {
        Self {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            mean: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }
}

impl PublishedHistogram {
    /// Shard side: stores the buckets of `histogram` that changed since
    /// the last call, so a round costs what it recorded, not the
    /// histogram's size.
    pub(crate) fn publish(&self, histogram: &mut Histogram) {
        histogram.settle();
        let mut any = false;
        for (word, bits) in histogram.changed.iter_mut().enumerate() {
            while *bits != 0 {
                let bucket = word * 64 + bits.trailing_zeros() as usize;
                *bits &= *bits - 1;
                self.counts[bucket].store(histogram.counts[bucket], Relaxed);
                any = true;
            }
        }
        if any {
            self.mean.store(histogram.mean(), Relaxed);
            self.max.store(histogram.max, Relaxed);
        }
    }

    /// Reader side: a copy as of some recent round.
    pub(crate) fn read(&self) -> Distribution {
        let counts: Vec<u64> = self.counts.iter().map(|c| c.load(Relaxed)).collect();
        let count: u64 = counts.iter().sum();
        Distribution {
            counts,
            count,
            sum: u128::from(self.mean.load(Relaxed)) * u128::from(count),
            max: self.max.load(Relaxed),
        }
    }
}

/// The distribution of one figure, as read from a shard (or merged over
/// shards): bucketed counts, the mean and the largest value, with the
/// percentiles computed from them (see the module docs for their
/// precision). Counts are since the shard started; [`since`](Self::since)
/// gives the distribution between two readings.
///
/// ```
/// use ferry_shard::Distribution;
///
/// let mut one = Distribution::default();
/// for size in [1, 1, 2, 64] {
///     one.record(size);
/// }
/// let mut both = one.clone();
/// both.merge(&one);
/// assert_eq!((both.count(), both.max(), both.quantile(0.5)), (8, 64, 1));
/// assert_eq!(both.since(&one), one);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Distribution {
    /// One count per bucket; empty while nothing was counted.
    counts: Vec<u64>,
    count: u64,
    /// Exact when recorded here; from the published mean when read from a
    /// shard.
    sum: u128,
    max: u64,
}

impl Distribution {
    /// Counts one `value` (for tests and examples; a shard records into
    /// its own histogram).
    pub fn record(&mut self, value: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        self.counts[bucket_of(value)] += 1;
        self.count += 1;
        self.sum += u128::from(value);
        self.max = self.max.max(value);
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their mean, rounded down (0 when none).
    pub fn mean(&self) -> u64 {
        mean_of(self.sum, self.count)
    }

    /// The largest value counted (0 when none).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The smallest reported value at or below which at least the fraction
    /// `q` (0 to 1) of the values lie; 0 when none was counted.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (bucket, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return represent(bucket, self.max);
            }
        }
        self.max
    }

    /// Adds `other`'s counts to these: the distribution of both together.
    pub fn merge(&mut self, other: &Distribution) {
        if other.counts.is_empty() {
            return;
        }
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }

    /// What was counted after `earlier`, a reading of the same shard (or
    /// the same shards merged) taken before this one. Its largest value is
    /// reported from the buckets (the exact one is known only since start).
    pub fn since(&self, earlier: &Distribution) -> Distribution {
        if earlier.counts.is_empty() {
            return self.clone();
        }
        let counts: Vec<u64> = self
            .counts
            .iter()
            .zip(&earlier.counts)
            .map(|(now, then)| now.saturating_sub(*then))
            .collect();
        let count: u64 = counts.iter().sum();
        let max = counts
            .iter()
            .rposition(|&n| n > 0)
            .map_or(0, |bucket| represent(bucket, self.max));
        Distribution {
            counts,
            count,
            sum: self.sum.saturating_sub(earlier.sum),
            max,
        }
    }

    /// Its summary: count, mean, median, 90th and 99th percentiles, largest.
    pub fn summary(&self) -> Summary {
        Summary {
            count: self.count,
            mean: self.mean(),
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            max: self.max,
        }
    }
}

/// A distribution in six numbers, as [`ShardStats`](crate::ShardStats)
/// carries it. Times are in nanoseconds.
///
/// ```
/// use ferry_shard::{Distribution, Summary};
///
/// let mut sizes = Distribution::default();
/// (1..=100).for_each(|size| sizes.record(size));
/// let Summary { count, p50, p99, max, .. } = sizes.summary();
/// assert_eq!((count, max), (100, 100));
/// assert!((50..=53).contains(&p50) && (99..=100).contains(&p99));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Values counted.
    pub count: u64,
    /// Their mean.
    pub mean: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// The largest.
    pub max: u64,
}

impl Summary {
    /// A summary of both `self` and `other` without their buckets: counts
    /// add, means are weighted, and each percentile is the larger of the
    /// two, which bounds the merged percentile from above (at most the
    /// fraction `1 - q` of either side lies above its own, so of both).
    /// `Stats::total` (crate `ferry`) merges the buckets instead
    /// ([`Distribution::merge`]), which is exact.
    ///
    /// ```
    /// use ferry_shard::Summary;
    ///
    /// let fast = Summary { count: 3, mean: 10, p50: 10, p90: 12, p99: 12, max: 12 };
    /// let slow = Summary { count: 1, mean: 50, p50: 50, p90: 50, p99: 50, max: 50 };
    /// let both = fast.combine(&slow);
    /// assert_eq!((both.count, both.mean, both.p50, both.max), (4, 20, 50, 50));
    /// ```
    #[must_use]
    pub fn combine(&self, other: &Summary) -> Summary {
        let sum = u128::from(self.mean) * u128::from(self.count)
            + u128::from(other.mean) * u128::from(other.count);
        let count = self.count + other.count;
        Summary {
            count,
            mean: mean_of(sum, count),
            p50: self.p50.max(other.p50),
            p90: self.p90.max(other.p90),
            p99: self.p99.max(other.p99),
            max: self.max.max(other.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact_and_larger_ones_within_a_sixteenth() {
        for value in (0..5_000).chain([1 << 20, (1 << 39) + 12_345, u64::from(u32::MAX)]) {
            let bucket = bucket_of(value);
            let high = highest_in(bucket);
            assert!(high >= value, "{value} reported as {high}");
            assert!(high - value <= value / 16, "{value} reported as {high}");
            if value < 32 {
                assert_eq!(high, value);
            }
            if bucket > 0 {
                assert!(highest_in(bucket - 1) < value, "buckets do not overlap");
            }
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_of(1 << TOP_EXP), BUCKETS - 1);
    }

    #[test]
    fn the_bucket_index_matches_its_definition_by_cases() {
        // The definition, one case at a time: exact below `SUB`, then `SUB`
        // buckets per power of two, everything from `2^TOP_EXP` in the last.
        let by_cases = |value: u64| -> usize {
            if value < SUB as u64 {
                return value as usize;
            }
            let exp = 63 - value.leading_zeros();
            if exp >= TOP_EXP {
                return BUCKETS - 1;
            }
            let sub = (value >> (exp - SUB_BITS)) as usize & (SUB - 1);
            SUB + (exp - SUB_BITS) as usize * SUB + sub
        };
        let around_each_power = (0..64).flat_map(|exp| {
            let power = 1_u64 << exp;
            [
                power - 1,
                power,
                power + 1,
                power | (power >> 1),
                power.wrapping_mul(3) / 2,
            ]
        });
        for value in (0..10_000)
            .chain(around_each_power)
            .chain([u64::MAX - 1, u64::MAX])
        {
            assert_eq!(bucket_of(value), by_cases(value), "value {value}");
        }
    }

    #[test]
    fn quantiles_follow_a_model_of_sorted_values() {
        // An independent model: sort the values, pick the rank.
        let values: Vec<u64> = (0..1_000_u64).map(|n| (n * 7_919) % 100_000).collect();
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let mut distribution = Distribution::default();
        values.iter().for_each(|&v| distribution.record(v));
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
            let rank = ((q * 1_000.0_f64).ceil() as usize).max(1);
            let truth = sorted[rank - 1];
            let reported = distribution.quantile(q);
            assert!(reported >= truth && reported - truth <= truth / 16, "q {q}");
        }
        assert_eq!(distribution.max(), *sorted.last().unwrap());
        let mean = values.iter().sum::<u64>() / 1_000;
        assert_eq!(distribution.mean(), mean);
    }

    #[test]
    fn publishing_hands_over_what_changed_only() {
        let mut histogram = Histogram::default();
        let published = PublishedHistogram::default();
        histogram.record(3);
        histogram.record_n(1_000, 4);
        published.publish(&mut histogram);
        assert_eq!(histogram.changed, [0; MASK_WORDS]);
        let read = published.read();
        assert_eq!((read.count(), read.max(), read.mean()), (5, 1_000, 800));
        assert_eq!(read.quantile(0.2), 3);
        // A bucket changed behind the mask's back is not published.
        histogram.counts[0] = 9;
        published.publish(&mut histogram);
        assert_eq!(published.read().count(), 5);
        histogram.record(0);
        published.publish(&mut histogram);
        assert_eq!(published.read().count(), 15);
    }

    #[test]
    fn runs_of_equal_values_count_as_each_value_would() {
        // A model without runs: every value straight into the counts.
        let values = [1, 1, 1, 0, 0, 7, 1, 1, 900, 900, 900, 3];
        let (mut runs, mut model) = (Histogram::default(), Histogram::default());
        for (at, &value) in values.iter().enumerate() {
            runs.record_repeating(value);
            model.record_n(value, 1);
            assert_eq!(runs.count(), at as u64 + 1, "the run is counted");
        }
        runs.settle();
        assert_eq!(runs.counts(), model.counts());
        assert_eq!(
            (runs.sum(), runs.max, runs.mean()),
            (model.sum(), model.max, model.mean())
        );
        assert_eq!(runs.changed, model.changed);
        // Settling twice adds nothing.
        runs.settle();
        assert_eq!(runs.count(), values.len() as u64);
    }

    #[test]
    fn merged_shards_equal_one_shard_that_saw_everything() {
        let (mut a, mut b, mut all) = Default::default();
        let record = |d: &mut Distribution, all: &mut Distribution, v| {
            d.record(v);
            all.record(v);
        };
        for v in 0..300 {
            record(&mut a, &mut all, v * 3);
            record(&mut b, &mut all, 10_000 + v);
        }
        let mut merged = Distribution::default();
        merged.merge(&a);
        merged.merge(&b);
        assert_eq!(merged.counts, all.counts);
        assert_eq!((merged.count(), merged.max()), (all.count(), all.max()));
        assert_eq!(merged.quantile(0.75), all.quantile(0.75));
    }

    #[test]
    fn since_is_the_window_between_two_readings() {
        let mut early = Distribution::default();
        (0..10).for_each(|_| early.record(5));
        let mut late = early.clone();
        (0..10).for_each(|_| late.record(900));
        let window = late.since(&early);
        assert_eq!((window.count(), window.quantile(0.0)), (10, 900));
        assert_eq!(window.mean(), 900);
        assert_eq!(window.max(), 900);
        assert_eq!(late.since(&late).count(), 0);
        assert_eq!(late.since(&Distribution::default()), late);
    }

    #[test]
    fn the_top_bucket_reports_the_largest_value() {
        let mut distribution = Distribution::default();
        distribution.record(u64::MAX - 1);
        assert_eq!(distribution.quantile(0.5), u64::MAX - 1);
        assert_eq!(Distribution::default().quantile(0.5), 0);
    }
}
