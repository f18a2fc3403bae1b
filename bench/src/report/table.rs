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
/// other system's, from the run of `reference` with the highest
/// throughput. With rounds (`--rounds`), each round's ratio is taken within
/// the round, from its best run of `reference`, and the median of them is
/// given with every round's.
///
/// ```
/// use ferry_bench::report::{ratios, RunResult};
///
/// let run = |system, round, throughput| RunResult {
///     round: Some(round),
///     ..RunResult::sample(system, None, throughput)
/// };
/// let runs = [run("ferry", 1, 300.0), run("unbatched", 1, 100.0),
///             run("ferry", 2, 200.0), run("unbatched", 2, 100.0),
///             run("ferry", 3, 100.0), run("unbatched", 3, 25.0)];
/// assert_eq!(
///     ratios(&runs, "ferry"),
///     "ferry / unbatched: 3.00x throughput, the median of 3 rounds (3.00, 2.00, 4.00)\n"
/// );
/// ```
pub fn ratios(runs: &[RunResult], reference: &str) -> String {
    let mut out = String::new();
    let rounds = rounds_of(runs);
    // Per pair of labels (the reference's, the other's), each round's ratio.
    let mut pairs: Vec<(String, String, Vec<f64>)> = Vec::new();
    for &round in &rounds {
        let in_round: Vec<&RunResult> = runs.iter().filter(|run| run.round == round).collect();
        let best = in_round
            .iter()
            .filter(|run| run.system == reference)
            .max_by(|a, b| a.throughput.total_cmp(&b.throughput));
        let Some(best) = best else { continue };
        for other in in_round.iter().filter(|run| run.system != reference) {
            if other.throughput > 0.0 {
                let pair = (best.system_label(), other.system_label());
                let ratio = best.throughput / other.throughput;
                match pairs
                    .iter_mut()
                    .find(|(a, b, _)| (a, b) == (&pair.0, &pair.1))
                {
                    Some((_, _, ratios)) => ratios.push(ratio),
                    None => pairs.push((pair.0, pair.1, vec![ratio])),
                }
            }
        }
    }
    for (best, other, each) in pairs {
        let _ = write!(out, "{best} / {other}: {:.2}x throughput", median(&each));
        if rounds.len() > 1 {
            let each: Vec<String> = each.iter().map(|ratio| format!("{ratio:.2}")).collect();
            let _ = write!(
                out,
                ", the median of {} rounds ({})",
                each.len(),
                each.join(", ")
            );
        }
        out.push('\n');
    }
    out
}

/// With rounds, each system's throughput over them: the median, with the
/// lowest and the highest; nothing for one round.
///
/// ```
/// use ferry_bench::report::{round_medians, RunResult};
///
/// let run = |round, throughput| RunResult {
///     round: Some(round),
///     ..RunResult::sample("multi-key", None, throughput)
/// };
/// assert_eq!(
///     round_medians(&[run(1, 2_000.0), run(2, 1_000.0), run(3, 1_500.0)]),
///     "inputs/s over 3 rounds, the median (lowest–highest):\n  multi-key: 1,500 (1,000–2,000)\n"
/// );
/// ```
pub fn round_medians(runs: &[RunResult]) -> String {
    let mut out = String::new();
    let rounds = rounds_of(runs);
    if rounds.len() <= 1 {
        return out;
    }
    let mut labels: Vec<String> = Vec::new();
    for run in runs {
        if !labels.contains(&run.system_label()) {
            labels.push(run.system_label());
        }
    }
    let _ = writeln!(
        out,
        "inputs/s over {} rounds, the median (lowest–highest):",
        rounds.len()
    );
    for label in labels {
        let each: Vec<f64> = runs
            .iter()
            .filter(|run| run.system_label() == label)
            .map(|run| run.throughput)
            .collect();
        let (low, high) = each.iter().fold((f64::MAX, f64::MIN), |(low, high), &t| {
            (low.min(t), high.max(t))
        });
        let _ = writeln!(
            out,
            "  {label}: {} ({}–{})",
            thousands(median(&each).round() as u64),
            thousands(low.round() as u64),
            thousands(high.round() as u64)
        );
    }
    out
}

/// The rounds the runs were measured in, in order (`[None]` for a
/// comparison of one round).
fn rounds_of(runs: &[RunResult]) -> Vec<Option<usize>> {
    let mut rounds: Vec<Option<usize>> = Vec::new();
    for run in runs {
        if !rounds.contains(&run.round) {
            rounds.push(run.round);
        }
    }
    rounds
}

/// The median of `values` (the mean of the middle two for an even count);
/// 0 for none.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}
