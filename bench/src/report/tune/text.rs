//! A search as text: the header, the table of every point, the conclusion.

use std::fmt::Write as _;

use super::{Axis, Plan, Tried, Tuning, Verdict, SEARCH_NAME};
use crate::base::duration::format_duration;
use crate::report::thousands;

/// `values` as `1,2,4`.
fn list(values: &[usize]) -> String {
    values
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// µs as milliseconds: two decimals below 10 ms, one below 100, whole
/// and grouped above.
pub fn millis(us: f64) -> String {
    let ms = us / 1_000.0;
    if ms < 10.0 {
        format!("{ms:.2}")
    } else if ms < 100.0 {
        format!("{ms:.1}")
    } else {
        thousands(ms.round() as u64)
    }
}

/// The header of the output: the search, its grid, its start, its
/// limits and what "best" means.
pub fn header(plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "tune ferry-trips by {SEARCH_NAME}: one setting at a time over its values around the best point so far, passes until one finds nothing better, no point run twice; at most {} points (the full grid has {})",
        plan.max_points,
        plan.grid.size()
    );
    let _ = writeln!(
        out,
        "grid: shards {}; slots (--max-in-flight-trips) {}; trip batches (--max-trip-batches) {}; start: {}",
        list(&plan.grid.shards),
        list(&plan.grid.slots),
        list(&plan.grid.trip_batches),
        plan.start.flags()
    );
    let budget = match plan.p99_budget {
        Some(budget) => format!(" and p99 at most {}", format_duration(budget)),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "best: the highest inputs/s among points with nothing lost, the read-back matching, no conflicts{budget}"
    );
    out
}

/// The verdict column of a point.
fn note(tuning: &Tuning, index: usize) -> String {
    let tried = &tuning.tried[index];
    let problems = tried.problems();
    if !problems.is_empty() {
        return format!("FAILED: {}", problems.join(", "));
    }
    let mut note = String::from("ok");
    if !tried.within(tuning.plan.p99_budget_us()) {
        note = "over p99 budget".to_string();
    }
    match tuning.verdict {
        Verdict::Best(best) if best == index => note += ", BEST",
        Verdict::OverBudget { closest } if closest == index => note += ", closest",
        _ => {}
    }
    note
}

/// Every point tried, one row each, in the order measured.
pub fn table(tuning: &Tuning) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>3} {:>4} {:<12} {:>6} {:>5} {:>12} {:>11} {:>6} {:>8} {:>8} {:>8} {:>5}  verdict",
        "#",
        "pass",
        "varied",
        "shards",
        "slots",
        "trip batches",
        "inputs/s",
        "batch",
        "b./trip",
        "p50 ms",
        "p99 ms",
        "lost"
    );
    for (index, tried) in tuning.tried.iter().enumerate() {
        let varied = tried.varied.map_or("start", Axis::name);
        let point = tried.point;
        let figures = match tried.run() {
            Some(run) => format!(
                "{:>11} {:>6.2} {:>8} {:>8} {:>8} {:>5}",
                thousands(run.throughput.round() as u64),
                run.mean_batch,
                run.engine
                    .map_or("-".to_string(), |e| format!("{:.1}", e.trip_batches_mean)),
                millis(run.p50_us),
                millis(run.p99_us),
                thousands(run.lost),
            ),
            None => format!(
                "{:>11} {:>6} {:>8} {:>8} {:>8} {:>5}",
                "-", "-", "-", "-", "-", "-"
            ),
        };
        let _ = writeln!(
            out,
            "{:>3} {:>4} {:<12} {:>6} {:>5} {:>12} {figures}  {}",
            index + 1,
            tried.pass,
            varied,
            point.shards,
            point.slots,
            point.trip_batches,
            note(tuning, index)
        );
    }
    out
}

/// `--shards 2 …: 326,134 inputs/s, p99 19.2 ms (#3)`.
fn summary(tuning: &Tuning, tried: &Tried) -> String {
    let index = tuning
        .tried
        .iter()
        .position(|other| other.point == tried.point)
        .map_or(0, |index| index + 1);
    format!(
        "{}: {} inputs/s, p99 {} ms (#{index})",
        tried.point.flags(),
        thousands(tried.throughput().round() as u64),
        millis(tried.p99_us())
    )
}

/// The last lines: the winner, or that there is none and the closest; and
/// whether the search was cut short.
pub fn conclusion(tuning: &Tuning) -> String {
    let mut out = String::new();
    if tuning.cut_short {
        let _ = writeln!(
            out,
            "the search stopped at its limit of {} points (--tune-points) with points left to try",
            tuning.plan.max_points
        );
    }
    let passes = match tuning.passes {
        1 => "1 pass".to_string(),
        n => format!("{n} passes"),
    };
    let _ = writeln!(out, "{} points tried in {passes}", tuning.tried.len());
    match tuning.verdict {
        Verdict::Best(index) => {
            let _ = writeln!(out, "best: {}", summary(tuning, &tuning.tried[index]));
        }
        Verdict::OverBudget { closest } => {
            let _ = writeln!(
                out,
                "best: none: no point met the p99 budget of {}; closest: {}",
                format_duration(tuning.plan.p99_budget.unwrap_or_default()),
                summary(tuning, &tuning.tried[closest])
            );
        }
        Verdict::NoneValid => {
            let _ = writeln!(
                out,
                "best: none: no point passed its checks (nothing lost, read-back matching, no conflicts)"
            );
        }
    }
    out
}
