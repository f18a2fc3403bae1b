//! Per-shard gauges, counters and distributions, written by the shard
//! alone and read by any thread without a lock.
//!
//! Every figure is declared once, in the `figures!` list below, which
//! generates the snapshot type [`ShardStats`], its sum, the published
//! atomics, both ends of publication and the figure's metric (feature
//! `metrics`): a new figure is one line there, and none can be forgotten on
//! the way to a reader.
//!
//! The shard keeps plain counts and publishes them with relaxed stores once
//! per loop round, so the hot path pays no atomic read-modify-write; a reader
//! sees each field as of some recent round. Two fields are finished by the
//! reader: `intake` is the intake queue's length read at that moment, and
//! `refused` (with its reasons) adds the refusals callers counted themselves
//! when the intake was full or closed or the input too heavy (the shard
//! never sees those inputs).
//!
//! Distributions (batch size and weight, queue time, batch time) are
//! [`Histogram`]s the shard records into; it publishes only the buckets
//! that changed in the round, and the reader computes the percentiles of
//! the [`Summary`] in `ShardStats` from the buckets it reads. They count
//! since the shard started.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::core::histogram::{Distribution, Histogram, PublishedHistogram, Summary};
use crate::value::refused::Refused;

/// Whether a figure is a level now or a count since start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A level at some recent moment (it goes up and down).
    Gauge,
    /// A count since the shard started (it only goes up).
    Counter,
    /// A distribution since the shard started, as a [`Summary`].
    Distribution,
}

/// How a scalar figure is exported through the `metrics` facade: its name
/// and, for a figure that is one part of a family, its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(any(feature = "metrics", test)), allow(dead_code))]
pub(crate) struct Metric {
    pub(crate) name: &'static str,
    pub(crate) label: Option<(&'static str, &'static str)>,
    pub(crate) kind: Kind,
    /// The figure's doc comment, for the metric's description.
    pub(crate) help: &'static str,
}

/// A figure's metric: `ferry_<name>` for a gauge, `ferry_<name>_total` for
/// a counter, a named family with one label, or none (a figure that is the
/// sum of a family exported by its parts).
macro_rules! metric_of {
    (Gauge, $name:ident, $help:expr,) => {
        Some(Metric {
            name: concat!("ferry_", stringify!($name)),
            label: None,
            kind: Kind::Gauge,
            help: $help,
        })
    };
    (Counter, $name:ident, $help:expr,) => {
        Some(Metric {
            name: concat!("ferry_", stringify!($name), "_total"),
            label: None,
            kind: Kind::Counter,
            help: $help,
        })
    };
    ($kind:ident, $name:ident, $help:expr, (none)) => {
        None
    };
    ($kind:ident, $name:ident, $help:expr, ($metric:literal, $label:ident = $value:literal)) => {
        Some(Metric {
            name: $metric,
            label: Some((stringify!($label), $value)),
            kind: Kind::$kind,
            help: $help,
        })
    };
}

macro_rules! figures {
    (
        $( $(#[doc = $doc:literal])* $kind:ident $name:ident $(=> $metric:tt)?, )*
        ;
        $( $(#[doc = $ddoc:literal])* Distribution $dist:ident => ($dmetric:literal, $scale:literal), )*
    ) => {
        /// A snapshot of one shard's gauges, counters and distributions.
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
            $( $(#[doc = $ddoc])* pub $dist: Summary, )*
        }

        impl ShardStats {
            /// Every figure's name and kind, in declaration order.
            pub const FIGURES: &'static [(&'static str, Kind)] = &[
                $( (stringify!($name), Kind::$kind), )*
                $( (stringify!($dist), Kind::Distribution), )*
            ];

            /// The figure-by-figure sum of `self` and `other` (gauges too:
            /// the sum of levels over shards is the engine's level). The
            /// summaries of distributions combine as [`Summary::combine`]
            /// says: each percentile is a bound, not the exact merge that
            /// `Stats::total` makes from the buckets.
            #[must_use]
            pub fn add(&self, other: &ShardStats) -> ShardStats {
                ShardStats {
                    $( $name: self.$name + other.$name, )*
                    $( $dist: self.$dist.combine(&other.$dist), )*
                }
            }

            /// The scalar figures (not the distributions), in declaration
            /// order, as `SCALAR_METRICS` names them.
            #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
            pub(crate) fn scalars(&self) -> [u64; SCALARS] {
                [ $( self.$name, )* ]
            }

            /// A snapshot whose every scalar figure has its own value.
            #[cfg(test)]
            fn numbered() -> ShardStats {
                let mut next = 0;
                let mut value = || { next += 10; next };
                ShardStats { $( $name: value(), )* ..ShardStats::default() }
            }
        }

        /// How many scalar figures there are.
        pub(crate) const SCALARS: usize = [ $( stringify!($name), )* ].len();

        /// The metric of each scalar figure, in declaration order.
        #[cfg_attr(not(any(feature = "metrics", test)), allow(dead_code))]
        pub(crate) const SCALAR_METRICS: [Option<Metric>; SCALARS] =
            [ $( metric_of!($kind, $name, concat!($($doc),*), $($metric)?), )* ];

        /// How many distribution figures there are.
        pub(crate) const DISTRIBUTIONS: usize = [ $( stringify!($dist), )* ].len();

        /// The metric of each distribution, what turns its recorded unit
        /// into the metric's (nanoseconds into seconds), and its doc.
        #[cfg_attr(not(any(feature = "metrics", test)), allow(dead_code))]
        pub(crate) const DISTRIBUTION_METRICS: [(&str, f64, &str); DISTRIBUTIONS] =
            [ $( ($dmetric, $scale, concat!($($ddoc),*)), )* ];

        /// The histograms a shard records into, one per distribution.
        #[derive(Clone, Debug, Default)]
        pub(crate) struct Histograms {
            $( pub(crate) $dist: Histogram, )*
        }

        impl Histograms {
            /// Each histogram, in declaration order, settled for reading.
            #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
            pub(crate) fn each_settled(&mut self) -> [&Histogram; DISTRIBUTIONS] {
                $( self.$dist.settle(); )*
                [ $( &self.$dist, )* ]
            }
        }

        /// Every distribution of one shard (or of several, merged), bucket
        /// by bucket: what the [`Summary`] fields of [`ShardStats`] are
        /// computed from, kept so that shards merge exactly and two
        /// readings can be subtracted ([`Distribution::since`]).
        ///
        /// ```
        /// use ferry_shard::{Distributions, ShardStats};
        ///
        /// let mut shard = Distributions::default();
        /// shard.batch_size.record(64);
        /// let mut both = shard.clone();
        /// both.merge(&shard);
        /// let mut stats = ShardStats::default();
        /// both.summarize(&mut stats);
        /// assert_eq!((stats.batch_size.count, stats.batch_size.p99), (2, 64));
        /// ```
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct Distributions {
            $( $(#[doc = $ddoc])* pub $dist: Distribution, )*
        }

        impl Distributions {
            /// Adds `other`'s counts to these, distribution by distribution.
            pub fn merge(&mut self, other: &Distributions) {
                $( self.$dist.merge(&other.$dist); )*
            }

            /// What was counted after `earlier`, an earlier reading of the
            /// same shards.
            #[must_use]
            pub fn since(&self, earlier: &Distributions) -> Distributions {
                Distributions { $( $dist: self.$dist.since(&earlier.$dist), )* }
            }

            /// Writes each distribution's summary into its field of `stats`.
            pub fn summarize(&self, stats: &mut ShardStats) {
                $( stats.$dist = self.$dist.summary(); )*
            }
        }

        /// The published figures of one shard.
        #[derive(Debug, Default)]
        pub(crate) struct ShardCounters {
            $( $name: AtomicU64, )*
            $( $dist: PublishedHistogram, )*
            refused_at_intake: [AtomicU64; INTAKE_REASONS],
        }

        impl ShardCounters {
            /// Shard side: publish a fresh snapshot, and the buckets of
            /// `histograms` that changed since the last time.
            pub(crate) fn publish(&self, stats: &ShardStats, histograms: &mut Histograms) {
                $( self.$name.store(stats.$name, Relaxed); )*
                $( self.$dist.publish(&mut histograms.$dist); )*
            }

            /// The latest published scalar figures, as the shard wrote them.
            fn published(&self) -> ShardStats {
                ShardStats { $( $name: self.$name.load(Relaxed), )* ..ShardStats::default() }
            }

            /// The latest published distributions.
            fn distributions(&self) -> Distributions {
                Distributions { $( $dist: self.$dist.read(), )* }
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
    /// Slots in use: batches in flight, or with a trip function, trips.
    /// Gauge.
    Gauge in_flight,
    /// Inputs in the intake queue, not yet seen by the shard. Gauge.
    Gauge intake,
    /// Inputs admitted. Counter.
    Counter admitted,
    /// Of those, admitted directly from a task on the shard itself (the
    /// thread-per-core fast path). Counter.
    Counter admitted_local,
    /// Of those, with an event-time order, admitted after their event time
    /// plus the lateness had passed (late, and `refuse_late` off): never
    /// held, sent in their key's next batch, so they may reach the store
    /// after inputs of later event times. Counter.
    Counter admitted_late,
    /// Inputs refused (at the intake or by the shard), handed back; the sum
    /// of the `refused_*` figures, exported through them. Counter.
    Counter refused => (none),
    /// Batches started (with trips, the keys' batches in them). Counter.
    Counter batches,
    /// Trips started: calls of a trip function, each carrying one or more
    /// keys' batches; always 0 for a batch function (`start`). Counter.
    Counter trips,
    /// Inputs sent in a batch. Counter.
    Counter sent,
    /// Admitted inputs whose caller was answered; the sum of `answered_ok`,
    /// `failed`, `panicked` and `wrong_output_count`, exported through
    /// them. Counter.
    Counter answered => (none),
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
    /// 1 once the shard's thread has ended, for any reason: after a normal
    /// close and drain (every shard of a closed engine ends so), or because
    /// it died (see `died`). A stopped shard refuses its keys' inputs
    /// `Closed`. Gauge.
    Gauge stopped,
    /// 1 if the shard's thread died: it ended without a close, or
    /// unwinding (user code panicked on it outside a batch, or its runtime
    /// failed). Never 1 after a normal close: the figure to alert on. Its
    /// keys are refused from then on. Gauge.
    Gauge died,
    /// Waiting inputs of the longest lane, as last seen: never more than
    /// some lane holds, and exact whenever the longest lane was the last to
    /// grow or be taken from (see `Lanes::longest_lane`). No key is named.
    /// Always 0 for unkeyed batching, which has no lanes (its queue's
    /// length is `waiting`). Gauge.
    Gauge longest_lane,
    /// Inputs answered with their output. Counter.
    Counter answered_ok => ("ferry_answered_total", outcome = "ok"),
    /// Inputs answered `Failed`: their batch function returned an error.
    /// Counter.
    Counter failed => ("ferry_answered_total", outcome = "failed"),
    /// Inputs answered `Panicked`: their batch function panicked. Counter.
    Counter panicked => ("ferry_answered_total", outcome = "panicked"),
    /// Inputs answered `WrongOutputCount`: their batch function returned
    /// the wrong number of outputs. Counter.
    Counter wrong_output_count => ("ferry_answered_total", outcome = "wrong_output_count"),
    /// Inputs sent whose callers learn `Aborted`: their batch was in flight
    /// when the shard's thread died. Counted as the thread ends. Counter.
    Counter aborted,
    /// Inputs refused `Full`: the shard's queue (count or weight) or its
    /// intake was at its bound. Counter.
    Counter refused_full => ("ferry_refused_total", reason = "full"),
    /// Inputs refused `KeyFull`: their key already had
    /// `max_waiting_per_key` inputs waiting. Counter.
    Counter refused_key_full => ("ferry_refused_total", reason = "key_full"),
    /// Inputs refused `TooHeavy`, heavier than `max_batch_weight`. Counter.
    Counter refused_too_heavy => ("ferry_refused_total", reason = "too_heavy"),
    /// Inputs refused `Closed`: the engine was closed, or the shard had
    /// stopped. Counter.
    Counter refused_closed => ("ferry_refused_total", reason = "closed"),
    /// Inputs refused `Late` (answered `FerryError::Late`): with an
    /// event-time order and `refuse_late(true)`, they arrived after their
    /// event time plus the lateness. Counter.
    Counter refused_late => ("ferry_refused_total", reason = "late"),
    ;
    /// Inputs per batch.
    Distribution batch_size => ("ferry_batch_size", 1.0),
    /// Weight per batch.
    Distribution batch_weight => ("ferry_batch_weight", 1.0),
    /// Per input, nanoseconds from admission until it was taken into a
    /// batch.
    Distribution queue_time_ns => ("ferry_queue_time_seconds", 1e-9),
    /// Per batch, nanoseconds from its start (the batch function called)
    /// until it completed.
    Distribution batch_time_ns => ("ferry_batch_time_seconds", 1e-9),
    /// Batches per trip (empty with a batch function).
    Distribution trip_batches => ("ferry_trip_batches", 1.0),
}

/// Reasons a caller may be refused before the shard sees the input
/// (`KeyFull` and `Late` are only the shard's to say, but have a slot so
/// that every reason has one).
const INTAKE_REASONS: usize = 5;

/// Where a refusal at the intake is counted.
fn intake_slot(reason: Refused) -> usize {
    match reason {
        Refused::Full => 0,
        Refused::TooHeavy => 1,
        Refused::Closed => 2,
        Refused::KeyFull => 3,
        Refused::Late => 4,
    }
}

/// The reason counted at each intake slot.
const INTAKE_SLOTS: [Refused; INTAKE_REASONS] = [
    Refused::Full,
    Refused::TooHeavy,
    Refused::Closed,
    Refused::KeyFull,
    Refused::Late,
];

/// Counts `n` refusals for `reason`: in `refused` and in its reason's figure.
pub(crate) fn count_refusal(stats: &mut ShardStats, reason: Refused, n: u64) {
    stats.refused += n;
    *match reason {
        Refused::Full => &mut stats.refused_full,
        Refused::TooHeavy => &mut stats.refused_too_heavy,
        Refused::Closed => &mut stats.refused_closed,
        Refused::KeyFull => &mut stats.refused_key_full,
        Refused::Late => &mut stats.refused_late,
    } += n;
}

impl ShardCounters {
    /// Shard side, as its thread ends: it serves no more; `died` if it
    /// ended without a close, or unwinding. Marked died first, so that no
    /// reader sees a dying shard as one that stopped normally.
    pub(crate) fn mark_stopped(&self, died: bool) {
        if died {
            self.died.store(1, Relaxed);
        }
        self.stopped.store(1, Relaxed);
    }

    /// Caller side: an input was refused before reaching the shard.
    pub(crate) fn count_refused_at_intake(&self, reason: Refused) {
        self.refused_at_intake[intake_slot(reason)].fetch_add(1, Relaxed);
    }

    /// The latest snapshot of the scalar figures and the distributions'
    /// summaries; `intake` is the queue length the caller read.
    pub(crate) fn snapshot(&self, intake: u64) -> ShardStats {
        self.snapshot_with_distributions(intake).0
    }

    /// The latest snapshot, and the distributions its summaries come from.
    pub(crate) fn snapshot_with_distributions(&self, intake: u64) -> (ShardStats, Distributions) {
        let mut stats = self.published();
        stats.intake = intake;
        for (slot, reason) in INTAKE_SLOTS.into_iter().enumerate() {
            count_refusal(
                &mut stats,
                reason,
                self.refused_at_intake[slot].load(Relaxed),
            );
        }
        let distributions = self.distributions();
        distributions.summarize(&mut stats);
        (stats, distributions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_published_figure_reaches_the_reader() {
        let counters = ShardCounters::default();
        let stats = ShardStats::numbered();
        let mut histograms = Histograms::default();
        histograms.queue_time_ns.record(1_500);
        histograms.batch_size.record_n(7, 2);
        counters.publish(&stats, &mut histograms);
        counters.count_refused_at_intake(Refused::Full);
        counters.count_refused_at_intake(Refused::TooHeavy);
        let (read, distributions) = counters.snapshot_with_distributions(7);
        let mut expected = ShardStats {
            intake: 7,
            refused: stats.refused + 2,
            refused_full: stats.refused_full + 1,
            refused_too_heavy: stats.refused_too_heavy + 1,
            ..stats
        };
        distributions.summarize(&mut expected);
        assert_eq!(read, expected);
        assert_eq!(read.queue_time_ns.count, 1);
        assert!((1_500..1_600).contains(&read.queue_time_ns.p50));
        assert_eq!((read.batch_size.count, read.batch_size.max), (2, 7));
        assert_eq!(read.batch_time_ns, Summary::default());
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
        assert_eq!(kind("queue_time_ns"), Some(Kind::Distribution));
        assert_eq!(kind("nonsense"), None);
        assert_eq!(ShardStats::FIGURES.len(), SCALARS + DISTRIBUTIONS);
    }

    #[test]
    fn refusals_count_in_the_total_and_by_reason() {
        let mut stats = ShardStats::default();
        count_refusal(&mut stats, Refused::Closed, 2);
        count_refusal(&mut stats, Refused::Full, 1);
        assert_eq!(
            (stats.refused, stats.refused_closed, stats.refused_full),
            (3, 2, 1)
        );
        for reason in INTAKE_SLOTS {
            assert_eq!(INTAKE_SLOTS[intake_slot(reason)], reason);
        }
    }

    #[test]
    fn metric_names_are_prometheus_style_and_never_collide() {
        let mut series = Vec::new();
        for metric in SCALAR_METRICS.iter().flatten() {
            assert!(metric.name.starts_with("ferry_"), "{}", metric.name);
            let counter = metric.kind == Kind::Counter;
            assert_eq!(metric.name.ends_with("_total"), counter, "{}", metric.name);
            series.push((metric.name, metric.label));
        }
        for (name, _, _) in DISTRIBUTION_METRICS {
            series.push((name, None));
        }
        let count = series.len();
        series.sort();
        series.dedup();
        assert_eq!(series.len(), count, "one series per figure");
    }

    #[test]
    fn the_operating_guide_lists_every_metric_and_label() {
        // `shard/docs/` links to the repository's docs, so that a packaged
        // copy of the crate, which holds their contents, checks them too.
        let guide = include_str!("../../docs/operating.md");
        let row = |name: &str| {
            guide
                .lines()
                .find(|line| line.starts_with(&format!("| `{name}` |")))
                .unwrap_or_else(|| panic!("docs/operating.md has no row for {name}"))
        };
        for metric in SCALAR_METRICS.iter().flatten() {
            let row = row(metric.name);
            let kind = if metric.kind == Kind::Counter {
                "counter"
            } else {
                "gauge"
            };
            assert!(row.contains(&format!("| {kind} |")), "{row}");
            if let Some((label, value)) = metric.label {
                assert!(row.contains(&format!("`{label}`")), "{row} names {label}");
                assert!(row.contains(&format!("`{value}`")), "{row} names {value}");
            }
        }
        for (name, _, _) in DISTRIBUTION_METRICS {
            assert!(row(name).contains("| histogram |"));
        }
        for (figure, _) in ShardStats::FIGURES {
            assert!(
                guide.contains(&format!("`{figure}`")),
                "the guide explains {figure}"
            );
        }
    }
}
