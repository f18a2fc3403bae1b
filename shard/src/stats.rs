//! Per-shard gauges and counters, written by the shard alone and read by any
//! thread without a lock.
//!
//! Every figure is declared once, in the `figures!` list below, which
//! generates the snapshot type [`ShardStats`], its sum, the published
//! atomics and both ends of publication: a new figure is one line there, and
//! none can be forgotten on the way to a reader.
//!
//! The shard keeps plain counts and publishes them with relaxed stores once
//! per loop round, so the hot path pays no atomic read-modify-write; a reader
//! sees each field as of some recent round. Two fields are finished by the
//! reader: `intake` is the intake queue's length read at that moment, and
//! `refused` adds the refusals callers counted themselves when the intake
//! was full or closed (the shard never sees those inputs).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Whether a figure is a level now or a count since start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A level at some recent moment (it goes up and down).
    Gauge,
    /// A count since the shard started (it only goes up).
    Counter,
}

macro_rules! figures {
    ($( $(#[doc = $doc:literal])* $kind:ident $name:ident, )*) => {
        /// A snapshot of one shard's gauges and counters.
        ///
        /// Always `admitted + refused` = inputs submitted, and once the
        /// engine is quiet, `admitted == answered + expired + withdrawn`,
        /// `sent == answered` and `lanes == 0`.
        ///
        /// ```
        /// use ferry_shard::ShardStats;
        ///
        /// let a = ShardStats { admitted: 3, answered: 3, ..ShardStats::default() };
        /// let b = ShardStats { admitted: 2, answered: 1, ..ShardStats::default() };
        /// let sum = a.add(&b);
        /// assert_eq!((sum.admitted, sum.answered), (5, 4));
        /// ```
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct ShardStats {
            $( $(#[doc = $doc])* pub $name: u64, )*
        }

        impl ShardStats {
            /// Every figure's name and kind, in declaration order.
            pub const FIGURES: &'static [(&'static str, Kind)] =
                &[ $( (stringify!($name), Kind::$kind), )* ];

            /// The figure-by-figure sum of `self` and `other` (gauges too:
            /// the sum of levels over shards is the engine's level).
            #[must_use]
            pub fn add(&self, other: &ShardStats) -> ShardStats {
                ShardStats { $( $name: self.$name + other.$name, )* }
            }
        }

        /// The published figures of one shard.
        #[derive(Debug, Default)]
        pub(crate) struct ShardCounters {
            $( $name: AtomicU64, )*
            refused_at_intake: AtomicU64,
        }

        impl ShardCounters {
            /// Shard side: publish a fresh snapshot.
            pub(crate) fn publish(&self, stats: &ShardStats) {
                $( self.$name.store(stats.$name, Relaxed); )*
            }

            /// The latest published figures, as the shard wrote them.
            fn published(&self) -> ShardStats {
                ShardStats { $( $name: self.$name.load(Relaxed), )* }
            }
        }
    };
}

figures! {
    /// Lanes alive (waiting inputs or a batch in flight); always 0 for
    /// unkeyed batching, which has no lanes. Gauge.
    Gauge lanes,
    /// Inputs admitted and not yet sent. Gauge.
    Gauge waiting,
    /// Weight of the waiting inputs. Gauge.
    Gauge waiting_weight,
    /// Batches in flight. Gauge.
    Gauge in_flight,
    /// Inputs in the intake queue, not yet seen by the shard. Gauge.
    Gauge intake,
    /// Inputs admitted. Counter.
    Counter admitted,
    /// Of those, admitted directly from a task on the shard itself (the
    /// thread-per-core fast path). Counter.
    Counter admitted_local,
    /// Inputs refused (at the intake or by the shard), handed back. Counter.
    Counter refused,
    /// Batches started. Counter.
    Counter batches,
    /// Inputs sent in a batch. Counter.
    Counter sent,
    /// Admitted inputs whose caller was answered with their batch's
    /// outcome. Counter.
    Counter answered,
    /// Admitted inputs answered `Expired` (waited `max_queue_time`, never
    /// sent, handed back). Counter.
    Counter expired,
    /// Admitted inputs withdrawn because their caller stopped waiting before
    /// they were taken (`withdraw_on_drop`; never sent). Counter.
    Counter withdrawn,
    /// Times the shard, out of work, blocked its thread on a futex (the
    /// doze; see `doze_before_park`). Counter.
    Counter dozes,
    /// Times the shard, out of work, parked in its runtime's wait (glommio's
    /// `io_uring` wait), which is dearer to enter and to leave than a doze.
    /// Many parks a second under load say that `doze_before_park` is shorter
    /// than the gaps between the shard's events. Counter.
    Counter parks,
    /// 1 once the shard's thread has ended: after close and drain, or
    /// because it died (user code panicked on it outside a batch, or its
    /// runtime failed). A stopped shard refuses its keys' inputs `Closed`.
    /// Gauge.
    Gauge stopped,
}

impl ShardCounters {
    /// Shard side, as its thread ends: it serves no more.
    pub(crate) fn mark_stopped(&self) {
        self.stopped.store(1, Relaxed);
    }

    /// Caller side: an input was refused before reaching the shard.
    pub(crate) fn count_refused_at_intake(&self) {
        self.refused_at_intake.fetch_add(1, Relaxed);
    }

    /// The latest snapshot; `intake` is the queue length the caller read.
    pub(crate) fn snapshot(&self, intake: u64) -> ShardStats {
        let mut stats = self.published();
        stats.intake = intake;
        stats.refused += self.refused_at_intake.load(Relaxed);
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_published_figure_reaches_the_reader() {
        let counters = ShardCounters::default();
        // A distinct value per figure, so a figure read from another's
        // atomic would show.
        let mut values = (1..=ShardStats::FIGURES.len() as u64).map(|n| n * 10);
        let mut stats = ShardStats::default();
        macro_rules! fill {
            ($($name:ident)*) => { $( stats.$name = values.next().unwrap(); )* };
        }
        fill!(lanes waiting waiting_weight in_flight intake admitted admitted_local
              refused batches sent answered expired withdrawn dozes parks stopped);
        assert_eq!(values.next(), None, "every figure filled");
        counters.publish(&stats);
        counters.count_refused_at_intake();
        let read = counters.snapshot(7);
        assert_eq!(
            read,
            ShardStats {
                intake: 7,
                refused: stats.refused + 1,
                ..stats
            }
        );
    }

    #[test]
    fn figures_are_listed_with_their_kind() {
        let kind = |name| {
            ShardStats::FIGURES
                .iter()
                .find(|(figure, _)| *figure == name)
                .map(|(_, kind)| *kind)
        };
        assert_eq!(kind("waiting"), Some(Kind::Gauge));
        assert_eq!(kind("answered"), Some(Kind::Counter));
        assert_eq!(kind("nonsense"), None);
    }
}
