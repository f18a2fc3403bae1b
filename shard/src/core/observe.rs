//! What a shard records about its own work as it happens, for
//! [`ShardStats`]: the distributions (batch size, batch weight, queue time
//! per input, batch time), the outcome of every answered input, and every
//! refusal by reason.
//!
//! It lives in the shard's core and is written by the shard alone: plain
//! counts, no atomics, no lock. The loop's publish phase hands the counts to
//! readers (`stats.rs`) and, with the feature `metrics`, to the `metrics`
//! facade (`metrics.rs`).

use crate::core::stats::{count_refusal, Histograms, ShardStats};
use crate::core::trace::{self, TakenBatch};
use crate::queue::taken::Taken;
use crate::value::nanos::Nanos;
use crate::value::refused::Refused;
use crate::value::shard_id::ShardId;

/// Whether batches are traced (feature `tracing`): only their spans read
/// [`TakenBatch`], so without the feature it is not kept.
const TRACED: bool = cfg!(feature = "tracing");

/// The shard's recorder. See the module docs.
#[derive(Clone, Debug)]
pub(crate) struct Observer {
    pub(crate) histograms: Histograms,
    shard: ShardId,
    last_batch: TakenBatch,
}

impl Default for Observer {
    fn default() -> Self {
        Self {
            histograms: Histograms::default(),
            shard: ShardId::new(0),
            last_batch: TakenBatch::default(),
        }
    }
}

impl Observer {
    /// The shard whose work this records (named in its events).
    pub(crate) fn set_shard(&mut self, shard: ShardId) {
        self.shard = shard;
    }

    /// A batch leaves the queue at `now`: counts its size and weight, and
    /// wraps its items so that each counts its queue time as it passes.
    pub(crate) fn watch<It: Iterator + Taken>(
        &mut self,
        now: impl Into<Nanos>,
        items: It,
    ) -> Watched<'_, It> {
        let (size, weight) = (items.size_hint().0, items.weight());
        self.histograms.batch_size.record_repeating(size as u64);
        self.histograms.batch_weight.record_repeating(weight);
        if TRACED {
            self.last_batch = TakenBatch {
                key_hash: items.key_hash(),
                size,
                weight,
                oldest_wait_ns: 0,
            };
        }
        Watched {
            items,
            observer: self,
            now_ns: now.into().as_u64(),
        }
    }

    /// A batch started at `started` completed at `now`.
    #[inline]
    pub(crate) fn batch_done(&mut self, started: Nanos, now: Nanos) {
        let took_ns = now.as_u64().saturating_sub(started.as_u64());
        self.histograms.batch_time_ns.record(took_ns);
    }

    /// A trip of `batches` batches was taken.
    pub(crate) fn trip_taken(&mut self, batches: usize) {
        self.histograms.trip_batches.record(batches as u64);
    }

    /// A trip of `batches` batches started at `started` completed at
    /// `now`: each of its batches took that long.
    pub(crate) fn trip_done(&mut self, batches: usize, started: Nanos, now: Nanos) {
        let took_ns = now.as_u64().saturating_sub(started.as_u64());
        self.histograms
            .batch_time_ns
            .record_n(took_ns, batches as u64);
    }

    /// An input was refused for `reason`.
    pub(crate) fn refused(&mut self, stats: &mut ShardStats, reason: Refused) {
        count_refusal(stats, reason, 1);
        trace::refused(self.shard, reason);
    }

    /// The batch taken last.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn last_batch(&self) -> TakenBatch {
        self.last_batch
    }

    /// The shard whose work this records.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn shard(&self) -> ShardId {
        self.shard
    }
}

/// A batch's items on their way out of the queue; see [`Observer::watch`].
pub(crate) struct Watched<'o, It> {
    items: It,
    observer: &'o mut Observer,
    now_ns: u64,
}

impl<It: Iterator + Taken> Iterator for Watched<'_, It> {
    type Item = It::Item;

    fn next(&mut self) -> Option<It::Item> {
        let item = self.items.next()?;
        let waited = self.now_ns.saturating_sub(self.items.arrival_ns());
        self.observer.histograms.queue_time_ns.record(waited);
        if TRACED {
            let batch = &mut self.observer.last_batch;
            batch.oldest_wait_ns = batch.oldest_wait_ns.max(waited);
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::fifo::Fifo;
    use crate::queue::lanes::Lanes;
    use crate::value::config::QueueConfig;
    use std::time::Duration;

    #[test]
    fn a_taken_batch_counts_its_size_weight_and_each_wait() {
        let mut lanes = Lanes::new(QueueConfig::default());
        let ms = Duration::from_millis;
        lanes.admit("k", 'a', 0, 2, ms(1)).unwrap();
        lanes.admit("k", 'b', 0, 3, ms(4)).unwrap();
        let mut observer = Observer::default();
        let (_, _, items) = lanes
            .take_with(ms(5), |items| {
                observer.watch(ms(5), items).collect::<String>()
            })
            .unwrap();
        assert_eq!(items, "ab");
        let histograms = &mut observer.histograms;
        histograms.batch_weight.settle();
        assert_eq!(histograms.batch_size.count(), 1);
        assert_eq!(histograms.batch_weight.value_of(5), 5);
        assert_eq!(histograms.queue_time_ns.count(), 2);
        let batch = observer.last_batch();
        if TRACED {
            assert_eq!((batch.size, batch.weight), (2, 5));
            assert_eq!(batch.key_hash, crate::value::key_hash::key_hash(&"k"));
            assert_eq!(batch.oldest_wait_ns, 4_000_000);
        } else {
            assert_eq!(batch, TakenBatch::default(), "kept only for spans");
        }
    }

    #[test]
    fn unkeyed_batches_count_the_same_way() {
        let mut fifo = Fifo::new(QueueConfig::default());
        fifo.admit(1, 1, Duration::from_micros(10)).unwrap();
        let mut observer = Observer::default();
        let taken = fifo.take_with(Duration::from_micros(30), |items| {
            observer.watch(Duration::from_micros(30), items).count()
        });
        assert_eq!(taken, Some(1));
        let queue_time = &observer.histograms.queue_time_ns;
        assert_eq!((queue_time.count(), queue_time.sum()), (1, 20_000));
        if TRACED {
            assert_eq!(observer.last_batch().oldest_wait_ns, 20_000);
            assert_eq!(observer.last_batch().key_hash, 0);
        }
    }
}
