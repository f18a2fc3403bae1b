//! The shard's figures through the `metrics` facade (feature `metrics`):
//! every figure of `stats.rs` under its `ferry_*` name, labelled
//! `shard="N"` (and `outcome` or `reason` for the families), never by key.
//!
//! The shard exports from its publish phase, at most once per
//! [`EXPORT_EVERY`] while it works, and at once when a round did nothing,
//! before it parks, and on its last round, so a quiet shard's metrics are
//! up to date. Counters and gauges go as increments (a gauge by its change),
//! so two engines in one process add up. A distribution goes to a
//! `metrics` histogram as the values of the buckets that grew since the
//! last export (each bucket's reported value, in the metric's unit:
//! seconds for times), so the recorder sees the shard's own bucketing.
//!
//! Handles are registered when the shard starts: install the recorder
//! (e.g. `metrics-exporter-prometheus`) before starting the engine.

use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Label, Unit};

use crate::shard_id::ShardId;
use crate::stats::{
    Histograms, Kind, ShardStats, DISTRIBUTIONS, DISTRIBUTION_METRICS, SCALARS, SCALAR_METRICS,
};

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
    histograms: Vec<Histogram>,
    /// Per distribution, the bucket counts already handed over.
    exported_buckets: Vec<Vec<u64>>,
    exported_counts: [u64; DISTRIBUTIONS],
    next_at: Duration,
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
            .map(|&(name, scale, help)| {
                let unit = if scale == 1.0 {
                    Unit::Count
                } else {
                    Unit::Seconds
                };
                metrics::describe_histogram!(name, unit, help.trim());
                metrics::histogram!(name, labels(shard, None))
            })
            .collect();
        Self {
            scalars,
            exported: [0; SCALARS],
            histograms,
            exported_buckets: vec![Vec::new(); DISTRIBUTIONS],
            exported_counts: [0; DISTRIBUTIONS],
            next_at: Duration::ZERO,
        }
    }

    /// Whether to export at `now`: when `force`d, or once `EXPORT_EVERY`
    /// has passed since the last export.
    pub(crate) fn is_due(&self, now: Duration, force: bool) -> bool {
        force || now >= self.next_at
    }

    /// Hands over what changed since the last export: `stats` (with the
    /// intake's length, `intake`) and `histograms`.
    pub(crate) fn export(
        &mut self,
        now: Duration,
        stats: &ShardStats,
        intake: usize,
        histograms: &Histograms,
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
        for (index, histogram) in histograms.each().into_iter().enumerate() {
            self.export_histogram(index, histogram);
        }
    }

    /// Records, in the recorder's histogram `index`, the values that
    /// `histogram` counted since the last export.
    fn export_histogram(&mut self, index: usize, histogram: &crate::histogram::Histogram) {
        if histogram.count() == self.exported_counts[index] {
            return;
        }
        self.exported_counts[index] = histogram.count();
        let scale = DISTRIBUTION_METRICS[index].1;
        let exported = &mut self.exported_buckets[index];
        exported.resize(histogram.counts().len(), 0);
        for (bucket, (&now, then)) in histogram
            .counts()
            .iter()
            .zip(exported.iter_mut())
            .enumerate()
        {
            if now > *then {
                let value = histogram.value_of(bucket) as f64 * scale;
                self.histograms[index].record_many(value, (now - *then) as usize);
                *then = now;
            }
        }
    }
}

/// `shard`'s thread ended, with `aborted` inputs sent and never answered:
/// the two figures the loop, gone by then, cannot export.
pub(crate) fn farewell(shard: ShardId, aborted: u64) {
    metrics::gauge!("ferry_stopped", labels(shard, None)).increment(1.0);
    if aborted > 0 {
        metrics::counter!("ferry_aborted_total", labels(shard, None)).increment(aborted);
    }
}
