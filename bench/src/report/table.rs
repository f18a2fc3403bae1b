//! The final table (one row per system and shard count), its legend, and
//! the ratios against a reference system.

use std::fmt::Write as _;

use crate::report::{micros, thousands, RunResult};

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
