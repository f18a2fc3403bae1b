//! The report's sections below the table, each shown when its runs have
//! something to say.

use std::fmt::Write as _;

use crate::report::{micros, thousands, OverloadResult, RunResult};

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
        let verdict = if run.unknown > 0 && run.timed_out == 0 {
            format!("; {}", unknown_verdict(run))
        } else if run.read_back_matches() {
            ", exactly the inputs answered with success".to_string()
        } else if run.applied_beyond() > 0 {
            format!(
                ", NOT the inputs answered with success: {} more, applied twice",
                thousands(run.applied_beyond())
            )
        } else {
            ", NOT the inputs answered with success".to_string()
        };
        let _ = writeln!(
            out,
            "read back, {}: {} inputs summing to {}{verdict}",
            run.label(),
            thousands(run.applied),
            thousands(run.applied_sum),
        );
        if let Some(error) = &run.first_failure {
            let _ = writeln!(
                out,
                "  {} inputs answered with an error, the first: {error}",
                thousands(run.failed)
            );
        }
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
