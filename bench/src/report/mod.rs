//! What `ferry-load` shows: the live progress line, the final table (one
//! row per system and shard count), the ratios against ferry (or batcher,
//! unkeyed), and the `--json` file (docs/guarantees.md#ferry-loads-json-file);
//! the `--plot` picture ([`plot`], on the SVG scaffolding of [`svg`]); and
//! what a `--tune` search found, as text, JSON and a picture ([`tune`]).

pub mod plot;
pub mod svg;
pub mod tune;

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::base::cpu::CpuSplitPerInput;
use crate::scenarios::faults::FaultSeen;
use crate::scenarios::overload::{Goodput, Slowdown, Waste};
use crate::sources::load::{Load, Measured, Phase, Progress};
use crate::store::{Contents, Resolutions};

/// One measured run of one system at one shard count.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    /// `ferry`, `single-lock`, `batch-aint-one` or `unbatched`; unkeyed,
    /// `batcher`, `batch-aint-one` or `single-lock-fifo`.
    pub system: String,
    /// Ferry's shard count; `None` for systems without shards.
    pub shards: Option<usize>,
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
            throughput: measured.throughput().round(),
            mean_batch: match measured.batches {
                Some(counts) => (counts.mean() * 100.0).round() / 100.0,
                None => 1.0,
            },
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

    /// `ferry (2 shards)` or `single-lock`.
    pub fn label(&self) -> String {
        match self.shards {
            Some(1) => format!("{} (1 shard)", self.system),
            Some(shards) => format!("{} ({shards} shards)", self.system),
            None => self.system.clone(),
        }
    }
}

/// The `--json` document.
#[derive(Debug, Serialize)]
pub struct JsonReport<'a> {
    /// The command line that produced it (a store URL's password hidden).
    pub command: String,
    /// `sim`, `postgres` or `redis`.
    pub store: &'a str,
    /// One entry per system and shard count.
    pub runs: &'a [RunResult],
}

/// The final table.
///
/// ```
/// let table = ferry_bench::report::table(&[]);
/// assert!(table.starts_with("system"));
/// ```
pub fn table(runs: &[RunResult]) -> String {
    let mut out = String::new();
    // Wide enough for `single-lock-fifo`, and as before for the others.
    let name_width = runs
        .iter()
        .map(|run| run.system.chars().count())
        .fold(SYSTEM_COLUMN_WIDTH_MIN, usize::max);
    let _ = writeln!(
        out,
        "{:<name_width$} {:>6} {:>11} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7} {:>5} {:>9}",
        "system",
        "shards",
        "inputs/s",
        "batch",
        "p50 µs",
        "p90 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "conflicts",
        "refused",
        "failed",
        "lost",
        "cpu µs/in"
    );
    for run in runs {
        let _ = writeln!(
            out,
            "{:<name_width$} {:>6} {:>11} {:>6.2} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7} {:>5} {:>9.2}",
            run.system,
            run.shards.map_or("-".to_string(), |s| s.to_string()),
            thousands(run.throughput.round() as u64),
            run.mean_batch,
            micros(run.p50_us),
            micros(run.p90_us),
            micros(run.p99_us),
            micros(run.p999_us),
            micros(run.max_us),
            thousands(run.conflicts),
            thousands(run.refused),
            thousands(run.failed),
            thousands(run.lost),
            run.cpu_us_per_input,
        );
    }
    out
}

/// The system column is at least this wide, so the keyed table keeps its
/// layout.
const SYSTEM_COLUMN_WIDTH_MIN: usize = 15;

/// What each system of the table is, one line each, in the table's order,
/// so that the table can be read without the docs.
///
/// ```
/// let legend = ferry_bench::report::legend(&[]);
/// assert!(legend.is_empty());
/// ```
pub fn legend(runs: &[RunResult]) -> String {
    let mut out = String::new();
    let mut told: Vec<&str> = Vec::new();
    for run in runs {
        let system = run.system.as_str();
        if told.contains(&system) {
            continue;
        }
        told.push(system);
        if let Some(what) = about(system) {
            let _ = writeln!(out, "{system}: {what}");
        }
    }
    out
}

/// One line on what `system` is.
fn about(system: &str) -> Option<&'static str> {
    Some(match system {
        "ferry" => "this engine: per-key batches, at most one in flight per key, on shards of its own",
        "ferry-withdraw" => "ferry, withdrawing inputs whose callers gave up and expiring those past --max-queue-time",
        "ferry-trips" => "ferry with a trip function: the batches of many keys in one request",
        "single-lock" => "the design Ferry grew from: every key's lane behind one mutex, workers shared by all keys, on tokio",
        "batch-aint-one" => "the batching crate batch-aint-one (0.16, from crates.io), on tokio: per key, one batch in flight at a time (unkeyed: every input on one key)",
        "multi-key" => "the DataLoader way: batches of (key, input) pairs, one request each, a key possibly in two at once",
        "unbatched" => "no batching: one store round trip per input, serialised per key",
        "batcher" => "this engine unkeyed (ferry::Batcher): one stream, many batches in flight per shard",
        "single-lock-fifo" => "one FIFO behind one mutex, workers shared by all inputs, on tokio",
        _ => return None,
    })
}

/// The throughput of `reference` (`ferry`, or `batcher` unkeyed) over each
/// other system's, from the run of `reference` with the highest throughput.
pub fn ratios(runs: &[RunResult], reference: &str) -> String {
    let mut out = String::new();
    let best = runs
        .iter()
        .filter(|run| run.system == reference)
        .max_by(|a, b| a.throughput.total_cmp(&b.throughput));
    let Some(best) = best else { return out };
    for other in runs.iter().filter(|run| run.system != reference) {
        if other.throughput > 0.0 {
            let _ = writeln!(
                out,
                "{} / {}: {:.2}x throughput",
                best.label(),
                other.label(),
                best.throughput / other.throughput
            );
        }
    }
    out
}

/// What each run's shards ran on, with what time slice, and how often
/// they slept, and how (ferry's and batcher's runs only): many parks a
/// second mean the shards' doze is shorter than their idle gaps.
pub fn idle_stages(runs: &[RunResult]) -> String {
    let mut out = String::new();
    let mut slice_told = false;
    for run in runs {
        if let Some(runtime) = &run.runtime {
            let why = run
                .runtime_reason
                .as_ref()
                .map_or(String::new(), |why| format!(" (auto chose it: {why})"));
            let _ = writeln!(out, "shards' runtime, {}: {runtime}{why}", run.label());
        }
        if let Some(slice) = &run.sched_slice {
            if !std::mem::replace(&mut slice_told, true) {
                let _ = writeln!(out, "{SLICE_LEGEND}");
            }
            let _ = writeln!(out, "shards' time slice, {}: {slice}", run.label());
        }
        if let (Some(dozes), Some(parks)) = (run.dozes_per_s, run.parks_per_s) {
            let _ = writeln!(
                out,
                "shards out of work, {}: {} dozes/s, {} parks/s",
                run.label(),
                rate(dozes),
                rate(parks)
            );
        }
    }
    out
}

fn rate(per_second: f64) -> String {
    if per_second >= 100.0 {
        thousands(per_second.round() as u64)
    } else {
        format!("{per_second:.1}")
    }
}

/// What each engine run's own `stats()` say (ferry's and batcher's runs
/// only): batch sizes, queue times and batch times, whole run.
pub fn engine_figures(runs: &[RunResult]) -> String {
    let mut out = String::new();
    for run in runs {
        if let Some(f) = &run.engine {
            let _ = writeln!(
                out,
                "stats(), {}: batch size p50 {} p90 {} p99 {} max {}; queue time p50 {} µs, \
                 p90 {} µs, p99 {} µs, max {} µs; batch time p50 {} µs, p99 {} µs",
                run.label(),
                f.batch_size_p50,
                f.batch_size_p90,
                f.batch_size_p99,
                f.batch_size_max,
                micros(f.queue_p50_us),
                micros(f.queue_p90_us),
                micros(f.queue_p99_us),
                micros(f.queue_max_us),
                micros(f.batch_time_p50_us),
                micros(f.batch_time_p99_us),
            );
            if f.trips > 0 {
                let _ = writeln!(
                    out,
                    "trips, {}: {} trips, batches per trip mean {} p99 {} max {}",
                    run.label(),
                    thousands(f.trips),
                    f.trip_batches_mean,
                    f.trip_batches_p99,
                    f.trip_batches_max,
                );
            }
        }
    }
    out
}

/// What the time-slice lines report, said once above them.
const SLICE_LEGEND: &str = "shards' time slice: each shard thread's slice as the kernel reported it at the end of the run (--sched-slice while the shard's rounds answer many inputs, the kernel's own at light load)";

/// What the lines of `store_timing` measure, said once above them.
const LATENESS_LEGEND: &str = "store answers past due: how long after its round trip was up the simulated store's thread delivered each answer (its own wake-up lateness on this machine, the same for every system; a part of every latency above)";

/// How precisely the store kept its round trip in each run.
pub fn store_timing(runs: &[RunResult]) -> String {
    let mut out = String::new();
    if runs.iter().any(|run| run.store_late_p50_us.is_some()) {
        let _ = writeln!(out, "{LATENESS_LEGEND}");
    }
    for run in runs {
        if let (Some(p50), Some(p99), Some(max)) = (
            run.store_late_p50_us,
            run.store_late_p99_us,
            run.store_late_max_us,
        ) {
            let _ = writeln!(
                out,
                "store answers past due, {}: p50 {} µs, p99 {} µs, max {} µs",
                run.label(),
                micros(p50),
                micros(p99),
                micros(max)
            );
        }
    }
    out
}

/// The overload scenario, one line per run: goodput around the slowdown,
/// recovery, and round trips spent on callers that had gone.
pub fn overload(runs: &[RunResult]) -> String {
    let mut out = String::new();
    let rows: Vec<(&RunResult, &OverloadResult)> = runs
        .iter()
        .filter_map(|run| run.overload.as_ref().map(|o| (run, o)))
        .collect();
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "overload: goodput (inputs/s answered in time) before / during / after the slowdown; recovery; inputs and batches sent after their callers gave up"
    );
    for (run, o) in rows {
        let recovery = o
            .recovery_ms
            .map_or("not within the window".to_string(), |ms| {
                format!("{ms:.0} ms")
            });
        let _ = writeln!(
            out,
            "  {:<24} {:>9} / {:>9} / {:>9}   recovery {:<22} sent late {} of {} inputs, wasted {} of {} batches; timed out {}, expired {}",
            run.label(),
            thousands(o.goodput_before as u64),
            thousands(o.goodput_during as u64),
            thousands(o.goodput_after as u64),
            recovery,
            thousands(o.sent_late),
            thousands(o.sent),
            thousands(o.batches_wasted),
            thousands(o.batches),
            thousands(run.timed_out),
            thousands(run.expired),
        );
    }
    out
}

/// What went wrong, one line each: lost inputs, conflicts under ferry, a
/// store that does not hold exactly the inputs answered with success.
/// Empty when the run is clean.
pub fn problems(runs: &[RunResult]) -> Vec<String> {
    let mut problems = Vec::new();
    for run in runs {
        if run.lost > 0 {
            problems.push(format!(
                "{}: {} inputs were submitted and not answered within the drain timeout \
                 (if the system was only overloaded, raise --drain-timeout or lower --rate)",
                run.label(),
                run.lost
            ));
        }
        if run.system.starts_with("ferry") && run.conflicts > 0 {
            problems.push(format!(
                "{}: {} conflicting writes: two batches of one key were in flight at once",
                run.label(),
                run.conflicts
            ));
        }
        if run.lost == 0 && !run.read_back_matches() {
            let unknown = if run.unknown > 0 {
                format!(
                    " and {} summing to {} with an unknown outcome",
                    run.unknown, run.unknown_sum
                )
            } else {
                String::new()
            };
            problems.push(format!(
                "{}: read back, the store holds {} inputs summing to {}, but {} inputs summing to {} were answered with success{unknown}",
                run.label(),
                run.applied,
                run.applied_sum,
                run.completed,
                run.completed_sum
            ));
        }
    }
    problems
}

/// What each run's read-back found: the store holding exactly the inputs
/// answered with success, or not (then [`problems`] says so too). A run
/// with unknown outcomes gets the verdict of [`RunResult::read_back_matches`]
/// in words: every success applied, how many unknown outcomes were, and
/// nothing applied twice.
pub fn read_backs(runs: &[RunResult]) -> String {
    let mut out = String::new();
    for run in runs {
        if run.unknown > 0 && run.timed_out == 0 {
            let _ = writeln!(
                out,
                "read back, {}: {} inputs summing to {}; {}",
                run.label(),
                thousands(run.applied),
                thousands(run.applied_sum),
                unknown_verdict(run),
            );
            continue;
        }
        let verdict = if run.read_back_matches() {
            "exactly the inputs answered with success".to_string()
        } else if run.applied_beyond() > 0 {
            format!(
                "NOT the inputs answered with success: {} more, applied twice",
                thousands(run.applied_beyond())
            )
        } else {
            "NOT the inputs answered with success".to_string()
        };
        let _ = writeln!(
            out,
            "read back, {}: {} inputs summing to {}, {verdict}",
            run.label(),
            thousands(run.applied),
            thousands(run.applied_sum),
        );
    }
    out
}

/// The read-back of a run with unknown outcomes, in words.
fn unknown_verdict(run: &RunResult) -> String {
    let successes = if run.applied >= run.completed
        && run.applied_sum.wrapping_sub(run.completed_sum) <= run.unknown_sum
    {
        "every success applied".to_string()
    } else if run.applied < run.completed {
        format!(
            "NOT every success applied: {} fewer inputs than the successes",
            thousands(run.completed - run.applied)
        )
    } else {
        "NOT the successes: the sums do not add up".to_string()
    };
    let extra = run.unknown_applied();
    let twice = if extra <= run.unknown {
        format!(
            "{} of {} unknown outcomes applied, nothing applied twice",
            thousands(extra),
            thousands(run.unknown)
        )
    } else {
        format!(
            "{} inputs applied beyond the successes, more than the {} unknown outcomes: applied twice, or applied though answered as failed",
            thousands(extra),
            thousands(run.unknown)
        )
    };
    format!("{successes}, {twice}")
}

/// The faults injected into each run (`--fault`): how many, how the inputs
/// were answered, and per fault when the store was back and when the first
/// success came after it.
pub fn faults(runs: &[RunResult]) -> String {
    let mut out = String::new();
    for run in runs.iter().filter(|run| !run.faults.is_empty()) {
        let _ = writeln!(
            out,
            "faults, {}: {} injected; inputs answered with success {}, with an error {}, with an unknown outcome {}",
            run.label(),
            run.faults.len(),
            thousands(run.completed),
            thousands(run.failed),
            thousands(run.unknown),
        );
        let resolved = run.resolutions;
        if resolved.total() > 0 {
            let _ = writeln!(
                out,
                "  writes whose outcome was lost, retried: {} found applied, {} found absent and sent again, {} sent again without looking (--no-fence)",
                thousands(resolved.landed),
                thousands(resolved.sent),
                thousands(resolved.resent_blind),
            );
        }
        for seen in &run.faults {
            let _ = writeln!(out, "  {}", seen.describe());
        }
    }
    out
}

/// Each run's CPU time per input, split by whose threads used it: what
/// the system costs beside what the load and the simulated store cost
/// (they share the machine, so a system's total depends on theirs).
pub fn cpu_split(runs: &[RunResult]) -> String {
    let mut out = String::new();
    for run in runs {
        let split = run.cpu_split;
        let _ = writeln!(
            out,
            "cpu per input, {}: {:.2} µs the system's threads, {:.2} µs the load's, {:.2} µs the store's",
            run.label(),
            split.system_us,
            split.load_us,
            split.store_us,
        );
    }
    out
}

/// Each run's server CPU time per input, for runs on a real store whose
/// server's CPU time could be read.
pub fn server_cpu(runs: &[RunResult]) -> String {
    let mut out = String::new();
    for run in runs {
        if let Some(us) = run.server_cpu_us_per_input {
            let _ = writeln!(
                out,
                "store server CPU, {}: {us:.2} µs per input ({:.2} s in all)",
                run.label(),
                us * run.completed as f64 / 1e6
            );
        }
    }
    out
}

/// The live progress line of one run.
pub fn progress_line(label: &str, progress: &Progress) -> String {
    let phase = match progress.phase {
        Phase::Warmup => "warm-up",
        Phase::Measuring => "measuring",
        Phase::Draining => "draining",
    };
    let p99 = progress
        .p99_ns
        .map_or("-".to_string(), |ns| micros(ns as f64 / 1_000.0));
    format!(
        "{label:<24} {:>3}s {phase:<9} {:>11} inputs/s   p99 {p99:>9} µs   in flight {:>7}",
        progress.elapsed.as_secs(),
        thousands(progress.inputs_per_s.round() as u64),
        thousands(progress.in_flight),
    )
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Microseconds: one decimal below 100, whole and grouped above.
pub fn micros(us: f64) -> String {
    if us < 100.0 {
        format!("{us:.1}")
    } else {
        thousands(us.round() as u64)
    }
}

#[cfg(test)]
impl RunResult {
    /// A plain result for tests: 10 inputs, all answered and applied.
    pub(crate) fn sample(system: &str, shards: Option<usize>, throughput: f64) -> RunResult {
        RunResult {
            system: system.to_string(),
            shards,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(system: &str, shards: Option<usize>, throughput: f64) -> RunResult {
        RunResult::sample(system, shards, throughput)
    }

    #[test]
    fn engine_figures_are_told_and_carried_in_the_json() {
        let mut total = ferry::ShardStats::default();
        total.batch_size = ferry::Summary {
            count: 3,
            mean: 20,
            p50: 16,
            p90: 40,
            p99: 64,
            max: 64,
        };
        total.queue_time_ns = ferry::Summary {
            p50: 1_500,
            p99: 250_000,
            max: 900_000,
            ..total.batch_size
        };
        let with = RunResult {
            engine: Some(EngineFigures::from_total(&total)),
            ..run("ferry", Some(2), 1.0)
        };
        let told = engine_figures(&[with.clone(), run("unbatched", None, 1.0)]);
        assert!(
            told.starts_with("stats(), ferry (2 shards): batch size p50 16 p90 40 p99 64 max 64; ")
        );
        assert!(told.contains("queue time p50 1.5 µs"), "{told}");
        assert_eq!(told.lines().count(), 1, "only the engine's run");
        let json = serde_json::to_value(JsonReport {
            command: String::new(),
            store: "sim",
            runs: &[with],
        })
        .unwrap();
        assert_eq!(json["runs"][0]["batch_size_p99"], 64);
        assert_eq!(json["runs"][0]["queue_p99_us"], 250.0);
        assert_eq!(json["runs"][0]["system"], "ferry", "beside the others");
    }

    #[test]
    fn idle_stages_are_told_for_runs_that_count_them() {
        let mut ferry = run("ferry", Some(2), 1.0);
        ferry.dozes_per_s = Some(45_210.4);
        ferry.parks_per_s = Some(0.5);
        let text = idle_stages(&[ferry, run("single-lock", None, 1.0)]);
        assert_eq!(
            text,
            "shards out of work, ferry (2 shards): 45,210 dozes/s, 0.5 parks/s\n"
        );
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(micros(12.34), "12.3");
        assert_eq!(micros(12_345.6), "12,346");
    }

    #[test]
    fn the_legend_says_once_what_each_system_is() {
        let legend = legend(&[
            run("ferry", Some(1), 1.0),
            run("ferry", Some(2), 1.0),
            run("batch-aint-one", None, 1.0),
        ]);
        let lines: Vec<&str> = legend.lines().collect();
        assert_eq!(lines.len(), 2, "{legend}");
        assert!(lines[1].starts_with("batch-aint-one: the batching crate"));
        assert!(lines[1].contains("crates.io"), "{legend}");
    }

    #[test]
    fn the_slice_and_lateness_figures_come_with_what_they_mean() {
        let mut ferry = run("ferry", Some(2), 1.0);
        ferry.sched_slice = Some("shard 0 1400 µs, shard 1 100 µs".to_string());
        ferry.runtime = Some("tokio".to_string());
        ferry.runtime_reason = Some("io_uring is turned off".to_string());
        ferry.store_late_p50_us = Some(20.0);
        ferry.store_late_p99_us = Some(100.0);
        ferry.store_late_max_us = Some(900.0);
        let stages = idle_stages(std::slice::from_ref(&ferry));
        assert!(stages.contains("as the kernel reported it"), "{stages}");
        assert!(stages.contains("shard 0 1400 µs"), "{stages}");
        assert!(
            stages.contains("tokio (auto chose it: io_uring is turned off)"),
            "{stages}"
        );
        let timing = store_timing(&[ferry]);
        assert!(
            timing.starts_with("store answers past due: how long"),
            "{timing}"
        );
        assert!(timing.contains("the same for every system"), "{timing}");
    }

    #[test]
    fn every_column_of_the_table_has_a_heading() {
        let table = table(&[run("ferry", Some(2), 1_000.0)]);
        let mut lines = table.lines();
        let (heading, row) = (lines.next().unwrap(), lines.next().unwrap());
        // Right-aligned columns: each heading ends where its values end.
        assert_eq!(heading.chars().count(), row.chars().count(), "{table}");
        assert!(heading.ends_with("cpu µs/in"), "{heading}");
    }

    #[test]
    fn a_longer_system_name_widens_its_column_for_every_row() {
        let table = table(&[
            run("batcher", Some(2), 1_000.0),
            run("single-lock-fifo", None, 1_000.0),
        ]);
        let widths: Vec<usize> = table.lines().map(|line| line.chars().count()).collect();
        assert_eq!(widths.len(), 3, "{table}");
        assert!(widths.iter().all(|&w| w == widths[0]), "{table}");
        assert!(table.contains("single-lock-fifo "), "{table}");
    }

    #[test]
    fn ratios_use_the_best_run_of_the_reference_system() {
        let runs = [
            run("ferry", Some(1), 100.0),
            run("ferry", Some(2), 300.0),
            run("unbatched", None, 10.0),
        ];
        assert_eq!(
            ratios(&runs, "ferry"),
            "ferry (2 shards) / unbatched: 30.00x throughput\n"
        );
        let unkeyed = [
            run("batcher", Some(2), 200.0),
            run("single-lock-fifo", None, 100.0),
        ];
        assert_eq!(
            ratios(&unkeyed, "batcher"),
            "batcher (2 shards) / single-lock-fifo: 2.00x throughput\n"
        );
    }

    #[test]
    fn problems_name_lost_inputs_and_ferry_conflicts_only() {
        let mut lost = run("unbatched", None, 1.0);
        lost.lost = 3;
        let mut conflicted = run("ferry", Some(2), 1.0);
        conflicted.conflicts = 2;
        let mut other_conflicts = run("single-lock", None, 1.0);
        other_conflicts.conflicts = 5;
        let problems = problems(&[
            lost,
            conflicted,
            other_conflicts,
            run("ferry", Some(1), 1.0),
        ]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("not answered"));
        assert!(problems[1].contains("conflicting writes"));
    }

    #[test]
    fn a_read_back_off_by_a_count_or_a_sum_is_a_problem() {
        let clean = run("batch-aint-one", None, 1.0);
        let mut short = run("single-lock", None, 1.0);
        short.applied = 9;
        let mut swapped = run("ferry", Some(2), 1.0);
        // As many inputs, but not the ones answered (one applied twice, one
        // never).
        swapped.applied_sum = 54;
        let runs = [clean, short, swapped];
        let problems = problems(&runs);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems.iter().all(|p| p.contains("read back")),
            "{problems:?}"
        );
        let told = read_backs(&runs);
        assert_eq!(told.lines().count(), 3, "{told}");
        assert!(told
            .lines()
            .next()
            .unwrap()
            .ends_with("exactly the inputs answered with success"));
        assert!(
            told.contains("ferry (2 shards): 10 inputs summing to 54, NOT"),
            "{told}"
        );
        let mut on_server = run("ferry", Some(1), 1.0);
        on_server.server_cpu_us_per_input = Some(12.5);
        assert_eq!(
            server_cpu(&[on_server, run("unbatched", None, 1.0)]),
            "store server CPU, ferry (1 shard): 12.50 µs per input (0.00 s in all)\n"
        );
    }

    #[test]
    fn unknown_outcomes_bound_what_the_read_back_may_hold_beyond_the_successes() {
        // 10 successes summing to 55, and 4 unknown outcomes summing to 40.
        let mut two_landed = run("ferry", Some(2), 1.0);
        two_landed.unknown = 4;
        two_landed.unknown_sum = 40;
        two_landed.applied = 12;
        two_landed.applied_sum = 55 + 21;
        assert!(two_landed.read_back_matches());
        let told = read_backs(std::slice::from_ref(&two_landed));
        assert_eq!(
            told,
            "read back, ferry (2 shards): 12 inputs summing to 76; every success applied, \
             2 of 4 unknown outcomes applied, nothing applied twice\n"
        );
        let twice = RunResult {
            applied: 15,
            applied_sum: 55 + 40,
            ..two_landed.clone()
        };
        let missing = RunResult {
            applied: 9,
            applied_sum: 50,
            ..two_landed.clone()
        };
        let sums_off = RunResult {
            applied_sum: 55 + 41,
            ..two_landed.clone()
        };
        for wrong in [&twice, &missing, &sums_off] {
            assert!(!wrong.read_back_matches(), "{wrong:?}");
            assert_eq!(problems(std::slice::from_ref(wrong)).len(), 1);
        }
        assert!(
            read_backs(&[twice]).contains("applied twice, or applied though answered as failed")
        );
        assert!(read_backs(&[missing]).contains("NOT every success applied: 1 fewer"));
        let json = serde_json::to_value(JsonReport {
            command: String::new(),
            store: "postgres",
            runs: &[two_landed],
        })
        .unwrap();
        assert_eq!(json["runs"][0]["unknown"], 4);
        assert!(
            json["runs"][0].get("faults").is_none(),
            "no faults, no field"
        );
    }

    #[test]
    fn json_has_the_spec_fields() {
        let runs = [run("ferry", Some(2), 1.0)];
        let json = serde_json::to_value(JsonReport {
            command: "ferry-load".to_string(),
            store: "sim",
            runs: &runs,
        })
        .unwrap();
        let entry = &json["runs"][0];
        for field in [
            "system",
            "shards",
            "throughput",
            "mean_batch",
            "p50_us",
            "p90_us",
            "p99_us",
            "p999_us",
            "max_us",
            "conflicts",
            "refused",
            "lost",
            "submitted",
            "completed",
        ] {
            assert!(!entry[field].is_null(), "missing {field}");
        }
        // The histogram is for `--plot` only.
        assert!(entry.get("latency").is_none(), "{entry}");
    }
}
