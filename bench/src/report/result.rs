//! The figures of one run of one system, as the report and the JSON file
//! carry them.

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::base::cpu::CpuSplitPerInput;
use crate::report::faults::FaultSeen;
use crate::scenarios::overload::{Goodput, Slowdown, Waste};
use crate::sources::load::{Load, Measured};
use crate::store::{Contents, Resolutions};

/// One measured run of one system at one shard count.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    /// `ferry`, `single-lock`, `batch-aint-one` or `unbatched`; unkeyed,
    /// `batcher`, `batch-aint-one` or `single-lock-fifo`.
    pub system: String,
    /// Ferry's shard count; `None` for systems without shards.
    pub shards: Option<usize>,
    /// Which round of `--rounds` this run was, from 1 (`None`, and not in
    /// the JSON, for a comparison of one round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<usize>,
    /// Inputs answered with success per second, measured window.
    pub throughput: f64,
    /// Inputs per batch in the measured window (1 for unbatched).
    pub mean_batch: f64,
    /// Latency percentiles of successful inputs, microseconds.
    pub p50_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Largest, µs.
    pub max_us: f64,
    /// Conditional writes refused by the store (whole run).
    pub conflicts: u64,
    /// Inputs refused at once (whole run).
    pub refused: u64,
    /// Inputs submitted and never answered (whole run); must be 0.
    pub lost: u64,
    /// Inputs submitted (whole run).
    pub submitted: u64,
    /// Inputs answered with success (whole run).
    pub completed: u64,
    /// Inputs answered with an error (whole run) that leaves nothing
    /// applied.
    pub failed: u64,
    /// The error the first of them was answered with (not in the JSON
    /// when none failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// Inputs answered with an error that leaves their outcome at the
    /// store unknown (whole run): the connection failed after the write
    /// was sent. The read-back tells how many were applied.
    pub unknown: u64,
    /// The sum of those inputs (wrapping).
    pub unknown_sum: u64,
    /// Inputs the store applied (whole run), as read back from it after
    /// the run; equals `completed` when no input was lost and no outcome
    /// is unknown.
    pub applied: u64,
    /// The sum of the inputs answered with success (wrapping).
    pub completed_sum: u64,
    /// The sum of the inputs the store holds, as read back (wrapping);
    /// equals `completed_sum` when no input was lost.
    pub applied_sum: u64,
    /// How late the store delivered answers, median, µs (`None` with a
    /// zero round trip, where answers are immediate).
    pub store_late_p50_us: Option<f64>,
    /// How late, 99th percentile, µs.
    pub store_late_p99_us: Option<f64>,
    /// How late at most, µs.
    pub store_late_max_us: Option<f64>,
    /// CPU time of the whole process (every thread: system, generators,
    /// store) per input completed, over the whole run, µs.
    pub cpu_us_per_input: f64,
    /// The same, split by whose threads used it: the system's own, the
    /// load's generators, the simulated store's (µs per input; read before
    /// the system is closed, so its threads' exit is not in it).
    pub cpu_split: CpuSplitPerInput,
    /// CPU time of a real store's server processes per input completed,
    /// over the same time, µs (`None` for the sim, or a server whose CPU
    /// time cannot be read from here).
    pub server_cpu_us_per_input: Option<f64>,
    /// Length of the measured window, seconds.
    pub seconds: f64,
    /// Times per second, in the measured window, that the system's shards
    /// dozed when out of work (ferry and batcher only).
    pub dozes_per_s: Option<f64>,
    /// Times per second that they parked in their runtime (ferry and
    /// batcher only).
    pub parks_per_s: Option<f64>,
    /// The runtime the shards ran on, `glommio` or `tokio` (ferry and
    /// batcher only).
    pub runtime: Option<String>,
    /// Why `--runtime auto` chose tokio, when it did: what refused glommio
    /// here, or the real store.
    pub runtime_reason: Option<String>,
    /// The time slice the shards' threads ran with, as the kernel reported
    /// it before they closed (ferry and batcher only).
    pub sched_slice: Option<String>,
    /// Inputs answered unsent past the system's queueing limit (whole run).
    pub expired: u64,
    /// Inputs whose caller gave up waiting (whole run; `--timeout`).
    pub timed_out: u64,
    /// The overload scenario's figures (with `--store-slowdown`).
    pub overload: Option<OverloadResult>,
    /// The faults injected at the store during the run (`--fault`), each
    /// with the time to the first success after it; not in the JSON
    /// without faults.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultSeen>,
    /// How the run's ferry batches resolved writes whose outcome was lost
    /// (see [`crate::store::resolve`]).
    pub resolutions: Resolutions,
    /// The latency histogram the percentiles above come from, ns: every
    /// percentile, for `--plot`'s curves. Not in the JSON.
    #[serde(skip)]
    pub latency: Histogram<u64>,
    /// What the engine's own `stats()` say of the whole run (ferry and
    /// batcher only): in the JSON, its fields sit beside the others.
    #[serde(flatten)]
    pub engine: Option<EngineFigures>,
}

/// What the overload scenario measured for one run (see
/// [`crate::scenarios::overload`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverloadResult {
    /// Goodput (inputs answered with success per second) before the
    /// slowdown, in the measured window.
    pub goodput_before: f64,
    /// During the slowdown.
    pub goodput_during: f64,
    /// After it, to the window's end.
    pub goodput_after: f64,
    /// From the store's speeding up to goodput back at nine tenths of
    /// `goodput_before`, ms (`None`: not within the window).
    pub recovery_ms: Option<f64>,
    /// Inputs sent to the store (whole run).
    pub sent: u64,
    /// Of those, sent after their caller had given up.
    pub sent_late: u64,
    /// Batches sent (whole run).
    pub batches: u64,
    /// Batches all of whose inputs were sent after their callers gave up.
    pub batches_wasted: u64,
}

impl OverloadResult {
    /// From the run's counts, its load and slowdown, and the waste the
    /// batch functions counted.
    pub fn new(measured: &Measured, load: &Load, slow: Slowdown, waste: Waste) -> Self {
        let goodput = Goodput::of(&measured.done_buckets, load.warmup, load.duration, slow);
        let round = |x: f64| x.round();
        Self {
            goodput_before: round(goodput.before),
            goodput_during: round(goodput.during),
            goodput_after: round(goodput.after),
            recovery_ms: goodput.recovery.map(|d| d.as_secs_f64() * 1e3),
            sent: waste.sent,
            sent_late: waste.sent_late,
            batches: waste.batches,
            batches_wasted: waste.batches_wasted,
        }
    }
}

/// The distributions an engine (ferry or batcher) reports in `stats()`,
/// totalled over its shards, for the whole run (warm-up included): batch
/// size, queue time (admission to batch), batch time (start to completion).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct EngineFigures {
    /// Inputs per batch, median.
    pub batch_size_p50: u64,
    /// 90th percentile.
    pub batch_size_p90: u64,
    /// 99th percentile.
    pub batch_size_p99: u64,
    /// Largest.
    pub batch_size_max: u64,
    /// Queue time per input, median, µs.
    pub queue_p50_us: f64,
    /// 90th percentile, µs.
    pub queue_p90_us: f64,
    /// 99th percentile, µs.
    pub queue_p99_us: f64,
    /// Longest, µs.
    pub queue_max_us: f64,
    /// Batch time, median, µs.
    pub batch_time_p50_us: f64,
    /// 99th percentile, µs.
    pub batch_time_p99_us: f64,
    /// Trips started (0 without a trip function).
    pub trips: u64,
    /// Batches per trip, mean.
    pub trip_batches_mean: f64,
    /// Batches per trip, 99th percentile.
    pub trip_batches_p99: u64,
    /// Batches per trip, largest.
    pub trip_batches_max: u64,
}

impl EngineFigures {
    /// From an engine's `stats().total()`.
    pub fn from_total(total: &ferry::ShardStats) -> Self {
        let us = |ns: u64| (ns as f64 / 100.0).round() / 10.0;
        let (sizes, queue, batch) = (total.batch_size, total.queue_time_ns, total.batch_time_ns);
        EngineFigures {
            batch_size_p50: sizes.p50,
            batch_size_p90: sizes.p90,
            batch_size_p99: sizes.p99,
            batch_size_max: sizes.max,
            queue_p50_us: us(queue.p50),
            queue_p90_us: us(queue.p90),
            queue_p99_us: us(queue.p99),
            queue_max_us: us(queue.max),
            batch_time_p50_us: us(batch.p50),
            batch_time_p99_us: us(batch.p99),
            trips: total.trips,
            trip_batches_mean: if total.trips == 0 {
                0.0
            } else {
                (total.batches as f64 / total.trips as f64 * 10.0).round() / 10.0
            },
            trip_batches_p99: total.trip_batches.p99,
            trip_batches_max: total.trip_batches.max,
        }
    }
}

impl RunResult {
    /// Builds a row from what the load measured and what the store saw
    /// (`held`: what the run added to it, read back).
    pub fn new(
        system: &str,
        shards: Option<usize>,
        measured: &Measured,
        conflicts: u64,
        held: Contents,
        store_lateness: &Histogram<u64>,
    ) -> Self {
        let latency = &measured.latency;
        let us = |ns: u64| (ns as f64 / 1_000.0 * 10.0).round() / 10.0;
        let at = |q: f64| {
            if latency.is_empty() {
                0.0
            } else {
                us(latency.value_at_quantile(q))
            }
        };
        let late = |ns: u64| (!store_lateness.is_empty()).then(|| us(ns));
        let window = measured.window.as_secs_f64().max(f64::MIN_POSITIVE);
        let per_second = |count: u64| (count as f64 / window * 10.0).round() / 10.0;
        RunResult {
            system: system.to_string(),
            shards,
            round: None,
            throughput: measured.throughput().round(),
            mean_batch: measured
                .batches
                .map_or(1.0, |counts| (counts.mean() * 100.0).round() / 100.0),
            p50_us: at(0.50),
            p90_us: at(0.90),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: if latency.is_empty() {
                0.0
            } else {
                us(latency.max())
            },
            conflicts,
            refused: measured.refused,
            lost: measured.lost(),
            submitted: measured.submitted,
            completed: measured.done,
            failed: measured.failed,
            first_failure: measured.first_failure.clone(),
            unknown: measured.unknown,
            unknown_sum: measured.unknown_sum,
            applied: held.inputs,
            completed_sum: measured.done_sum,
            applied_sum: held.sum,
            store_late_p50_us: late(store_lateness.value_at_quantile(0.50)),
            store_late_p99_us: late(store_lateness.value_at_quantile(0.99)),
            store_late_max_us: late(store_lateness.max()),
            cpu_us_per_input: 0.0,
            cpu_split: CpuSplitPerInput::default(),
            server_cpu_us_per_input: None,
            seconds: measured.window.as_secs_f64(),
            dozes_per_s: measured.idle.map(|idle| per_second(idle.dozes)),
            parks_per_s: measured.idle.map(|idle| per_second(idle.parks)),
            runtime: None,
            runtime_reason: None,
            sched_slice: None,
            expired: measured.expired,
            timed_out: measured.timed_out,
            overload: None,
            faults: Vec::new(),
            resolutions: Resolutions::default(),
            latency: latency.clone(),
            engine: None,
        }
    }

    /// Whether the store, read back, holds exactly the inputs answered
    /// with success: as many, with the same sum.
    ///
    /// An input whose caller gave up may have been applied or not, and
    /// nobody was told which: with callers that timed out, the store must
    /// hold at least the inputs answered with success and at most those
    /// and the timed out ones (the sums cannot tell more).
    ///
    /// So may an input answered with an unknown outcome: with such inputs
    /// (and no timeouts), every success must be applied (the store holds
    /// at least as many inputs as were answered with success, and at least
    /// their sum), and nothing applied twice nor applied though it failed
    /// (what it holds beyond them is at most the unknown inputs, and their
    /// sum at most the unknown inputs' sum).
    pub fn read_back_matches(&self) -> bool {
        if self.timed_out > 0 {
            return self.completed <= self.applied
                && self.applied <= self.completed + self.timed_out + self.unknown;
        }
        if self.unknown > 0 {
            return self.completed <= self.applied
                && self.applied - self.completed <= self.unknown
                && self.applied_sum.wrapping_sub(self.completed_sum) <= self.unknown_sum;
        }
        self.applied == self.completed && self.applied_sum == self.completed_sum
    }

    /// The inputs applied beyond those answered with success: the unknown
    /// outcomes that were applied, when the read-back matches.
    pub fn unknown_applied(&self) -> u64 {
        self.applied.saturating_sub(self.completed)
    }

    /// The inputs applied beyond every input that may have been: those
    /// answered with success, with an unknown outcome, or timed out. At
    /// least this many were applied twice (or applied though answered as
    /// failed); 0 in a run that keeps its promises.
    pub fn applied_beyond(&self) -> u64 {
        self.applied
            .saturating_sub(self.completed + self.unknown + self.timed_out)
    }

    /// `ferry (2 shards)` or `single-lock`; with rounds, `multi-key,
    /// round 2`.
    pub fn label(&self) -> String {
        run_label(&self.system, self.shards, self.round)
    }

    /// The system and its shards, without the round: what the rounds of
    /// one system share.
    pub fn system_label(&self) -> String {
        run_label(&self.system, self.shards, None)
    }
}

/// How a run of `system` at `shards` in `round` is named in the report and
/// its progress line: `ferry (2 shards)`, `single-lock`, `multi-key, round
/// 2`.
///
/// ```
/// use ferry_bench::report::run_label;
///
/// assert_eq!(run_label("ferry", Some(1), None), "ferry (1 shard)");
/// assert_eq!(run_label("multi-key", None, Some(2)), "multi-key, round 2");
/// ```
pub fn run_label(system: &str, shards: Option<usize>, round: Option<usize>) -> String {
    let system = match shards {
        Some(1) => format!("{system} (1 shard)"),
        Some(shards) => format!("{system} ({shards} shards)"),
        None => system.to_string(),
    };
    match round {
        Some(round) => format!("{system}, round {round}"),
        None => system,
    }
}

impl RunResult {
    /// A plain result, for examples and tests: 10 inputs, all answered and
    /// applied.
    pub fn sample(system: &str, shards: Option<usize>, throughput: f64) -> RunResult {
        RunResult {
            system: system.to_string(),
            shards,
            round: None,
            throughput,
            mean_batch: 1.0,
            p50_us: 1.0,
            p90_us: 2.0,
            p99_us: 3.0,
            p999_us: 4.0,
            max_us: 5.0,
            conflicts: 0,
            refused: 0,
            lost: 0,
            submitted: 10,
            completed: 10,
            failed: 0,
            first_failure: None,
            unknown: 0,
            unknown_sum: 0,
            applied: 10,
            completed_sum: 55,
            applied_sum: 55,
            store_late_p50_us: None,
            store_late_p99_us: None,
            store_late_max_us: None,
            cpu_us_per_input: 1.0,
            cpu_split: CpuSplitPerInput::default(),
            server_cpu_us_per_input: None,
            seconds: 1.0,
            dozes_per_s: None,
            parks_per_s: None,
            runtime: None,
            runtime_reason: None,
            sched_slice: None,
            expired: 0,
            timed_out: 0,
            overload: None,
            faults: Vec::new(),
            resolutions: Resolutions::default(),
            latency: crate::store::new_histogram(),
            engine: None,
        }
    }
}
