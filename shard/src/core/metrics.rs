//! The shard's figures through the `metrics` facade (feature `metrics`):
//! every figure of `stats.rs` under its `ferry_*` name, labelled
//! `shard="N"` (and `outcome` or `reason` for the families), never by key.
//!
//! The shard exports from its publish phase, at most once per
//! [`EXPORT_EVERY`] while it works, and at once when a round did nothing,
//! before it parks, and on its last round, so a quiet shard's metrics are
//! up to date. Counters and gauges go as increments (a gauge by its change),
//! so two engines in one process add up.
//!
//! A distribution goes out as a Prometheus histogram written as its series:
//! a counter `<name>_bucket` per upper bound `le` (cumulative, `+Inf` last),
//! `<name>_count` and `<name>_sum`, computed at export from the shard's own
//! buckets. Nothing is passed on per input: the `metrics` facade's own
//! histograms would take every value, and a recorder such as
//! `metrics-exporter-prometheus` keeps each one until it is scraped, which
//! costs the shard per input and the process memory per input (measured in
//! docs/benchmarks.md). A value counts under a bound when the reported value
//! of its bucket (see `histogram.rs`) is at most the bound.
//!
//! Handles are registered when the shard starts: install the recorder
//! (e.g. `metrics-exporter-prometheus`) before starting the engine.

use std::time::Duration;

use metrics::{Counter, Gauge, Label, Unit};

use crate::core::histogram::Histogram;
use crate::core::stats::{
    Histograms, Kind, ShardStats, DISTRIBUTION_METRICS, SCALARS, SCALAR_METRICS,
};
use crate::value::shard_id::ShardId;

/// While the shard works, it exports at most this often.
pub(crate) const EXPORT_EVERY: Duration = Duration::from_millis(1);

/// One registered scalar figure.
enum Handle {
    Counter(Counter),
    Gauge(Gauge),
}

/// A shard's handles into the recorder, and what it exported last.
pub(crate) struct Exporter {
    scalars: Vec<(usize, Handle)>,
    exported: [u64; SCALARS],
    histograms: Vec<Exported>,
    next_at: Duration,
}

/// Upper bounds of the exported buckets of a time, in seconds: 1, 2.5 and
/// 5 per power of ten, from a microsecond to ten seconds.
const SECONDS_BOUNDS: [f64; 22] = [
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
    5e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Upper bounds of the exported buckets of a size or a weight: powers of
/// two up to 65,536.
const COUNT_BOUNDS: [f64; 17] = [
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0,
    16384.0, 32768.0, 65536.0,
];

/// One distribution's series, and what they were last given.
struct Exported {
    scale: f64,
    bounds: &'static [f64],
    /// One per bound, then `+Inf`.
    buckets: Vec<Counter>,
    count: Counter,
    sum: Gauge,
    /// Cumulative counts under each bound (then `+Inf`) last exported.
    exported: Vec<u64>,
    exported_sum: u128,
    /// Counts per bound, recomputed at each export (kept to not allocate).
    scratch: Vec<u64>,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exporter")
    }
}

/// The labels of `shard`'s series, with a family's own label.
fn labels(shard: ShardId, family: Option<(&'static str, &'static str)>) -> Vec<Label> {
    let mut labels = vec![Label::new("shard", shard.index().to_string())];
    if let Some((key, value)) = family {
        labels.push(Label::new(key, value));
    }
    labels
}

impl Exporter {
    /// Registers `shard`'s series with the installed recorder.
    pub(crate) fn new(shard: ShardId) -> Self {
        let mut scalars = Vec::new();
        for (figure, metric) in SCALAR_METRICS.iter().enumerate() {
            let Some(metric) = metric else { continue };
            let labels = labels(shard, metric.label);
            let handle = match metric.kind {
                Kind::Counter => {
                    metrics::describe_counter!(metric.name, Unit::Count, metric.help.trim());
                    Handle::Counter(metrics::counter!(metric.name, labels))
                }
                Kind::Gauge | Kind::Distribution => {
                    metrics::describe_gauge!(metric.name, Unit::Count, metric.help.trim());
                    Handle::Gauge(metrics::gauge!(metric.name, labels))
                }
            };
            scalars.push((figure, handle));
        }
        let histograms = DISTRIBUTION_METRICS
            .iter()
            .map(|&(name, scale, help)| Exported::new(shard, name, scale, help.trim()))
            .collect();
        Self {
            scalars,
            exported: [0; SCALARS],
            histograms,
            next_at: Duration::ZERO,
        }
    }

    /// Whether to export at `now`: when `force`d, or once `EXPORT_EVERY`
    /// has passed since the last export.
    pub(crate) fn is_due(&self, now: Duration, force: bool) -> bool {
        force || now >= self.next_at
    }

    /// Passes on what changed since the last export: `stats` (with the
    /// intake's length, `intake`) and `histograms`.
    pub(crate) fn export(
        &mut self,
        now: Duration,
        stats: &ShardStats,
        intake: usize,
        histograms: &mut Histograms,
    ) {
        self.next_at = now + EXPORT_EVERY;
        let values = ShardStats {
            intake: intake as u64,
            ..*stats
        }
        .scalars();
        for (figure, handle) in &self.scalars {
            let (value, before) = (values[*figure], self.exported[*figure]);
            if value == before {
                continue;
            }
            match handle {
                Handle::Counter(counter) => counter.increment(value.saturating_sub(before)),
                Handle::Gauge(gauge) => gauge.increment(value as f64 - before as f64),
            }
            self.exported[*figure] = value;
        }
        for (exported, histogram) in self.histograms.iter_mut().zip(histograms.each_settled()) {
            exported.export(histogram);
        }
    }
}

impl Exported {
    /// Registers the series of the distribution `name` of `shard`.
    fn new(shard: ShardId, name: &'static str, scale: f64, help: &'static str) -> Self {
        let (bounds, unit, help) = if scale == 1.0 {
            (&COUNT_BOUNDS[..], Unit::Count, help.to_string())
        } else {
            (
                &SECONDS_BOUNDS[..],
                Unit::Seconds,
                format!("{help} Exported in seconds."),
            )
        };
        let series = |suffix: &str| format!("{name}_{suffix}");
        metrics::describe_counter!(series("bucket"), unit, help.clone());
        metrics::describe_counter!(series("count"), Unit::Count, help.clone());
        metrics::describe_gauge!(series("sum"), unit, help);
        let le = bounds
            .iter()
            .map(|b| b.to_string())
            .chain(["+Inf".to_string()]);
        let buckets = le
            .map(|le| {
                let mut labels = labels(shard, None);
                labels.push(Label::new("le", le));
                metrics::counter!(series("bucket"), labels)
            })
            .collect();
        Self {
            scale,
            bounds,
            buckets,
            count: metrics::counter!(series("count"), labels(shard, None)),
            sum: metrics::gauge!(series("sum"), labels(shard, None)),
            exported: vec![0; bounds.len() + 1],
            exported_sum: 0,
            scratch: vec![0; bounds.len() + 1],
        }
    }

    /// Passes on what `histogram` counted since the last export.
    fn export(&mut self, histogram: &Histogram) {
        let (total, before) = (histogram.count(), self.exported[self.bounds.len()]);
        if total == before {
            return;
        }
        self.scratch.fill(0);
        let mut under = 0;
        for (bucket, &n) in histogram
            .counts()
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
        {
            let value = histogram.value_of(bucket) as f64 * self.scale;
            while under < self.bounds.len() && value > self.bounds[under] {
                under += 1;
            }
            self.scratch[under] += n;
        }
        let mut cumulative = 0;
        for (le, counter) in self.buckets.iter().enumerate() {
            cumulative += self.scratch[le];
            if cumulative > self.exported[le] {
                counter.increment(cumulative - self.exported[le]);
                self.exported[le] = cumulative;
            }
        }
        debug_assert_eq!(cumulative, total, "+Inf holds every value");
        self.count.increment(total - before);
        let sum = histogram.sum();
        self.sum
            .increment((sum - self.exported_sum) as f64 * self.scale);
        self.exported_sum = sum;
    }
}

/// `shard`'s thread ended (`died`: without a close, or unwinding), with
/// `aborted` inputs sent and never answered: the figures the loop, gone by
/// then, cannot export.
pub(crate) fn farewell(shard: ShardId, aborted: u64, died: bool) {
    metrics::gauge!("ferry_stopped", labels(shard, None)).increment(1.0);
    if died {
        metrics::gauge!("ferry_died", labels(shard, None)).increment(1.0);
    }
    if aborted > 0 {
        metrics::counter!("ferry_aborted_total", labels(shard, None)).increment(aborted);
    }
}
