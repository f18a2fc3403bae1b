//! A search as the `--json` document.

use serde::Serialize;

use super::{Axis, Grid, Point, Tuning, Verdict, SEARCH_NAME};
use crate::report::RunResult;

/// One point of the `--json` file.
#[derive(Debug, Serialize)]
struct PointJson<'a> {
    /// Its number in the table, from 1.
    number: usize,
    pass: usize,
    /// `start`, `shards`, `slots` or `trip-batches`.
    varied: &'static str,
    #[serde(flatten)]
    point: Point,
    passed: bool,
    within_budget: bool,
    problems: Vec<String>,
    throughput: Option<f64>,
    p99_us: Option<f64>,
    /// The whole run, as the comparison's JSON gives it.
    run: Option<&'a RunResult>,
}

/// The `--json` document of a search.
#[derive(Debug, Serialize)]
struct TuneJson<'a> {
    command: &'a str,
    store: &'a str,
    search: &'static str,
    grid: &'a Grid,
    start: Point,
    max_points: usize,
    p99_budget_us: Option<f64>,
    cut_short: bool,
    passes: usize,
    points: Vec<PointJson<'a>>,
    /// The winner's number, if a point met every condition.
    best: Option<usize>,
    /// The point closest to the budget, when none met it.
    closest: Option<usize>,
}

/// The search as JSON: every point (with its whole run), the best (or,
/// when none met the budget, the closest), the plan; `command` and
/// `store` as the comparison's JSON gives them.
pub fn json(tuning: &Tuning, command: &str, store: &str) -> Result<String, String> {
    let budget_us = tuning.plan.p99_budget_us();
    let points = tuning
        .tried
        .iter()
        .enumerate()
        .map(|(index, tried)| PointJson {
            number: index + 1,
            pass: tried.pass,
            varied: match tried.varied {
                None => "start",
                Some(Axis::Shards) => "shards",
                Some(Axis::Slots) => "slots",
                Some(Axis::TripBatches) => "trip-batches",
            },
            point: tried.point,
            passed: tried.passed(),
            within_budget: tried.within(budget_us),
            problems: tried.problems(),
            throughput: tried.run().map(|run| run.throughput),
            p99_us: tried.run().map(|run| run.p99_us),
            run: tried.run(),
        })
        .collect();
    let (best, closest) = match tuning.verdict {
        Verdict::Best(index) => (Some(index + 1), None),
        Verdict::OverBudget { closest } => (None, Some(closest + 1)),
        Verdict::NoneValid => (None, None),
    };
    let document = TuneJson {
        command,
        store,
        search: SEARCH_NAME,
        grid: &tuning.plan.grid,
        start: tuning.plan.start,
        max_points: tuning.plan.max_points,
        p99_budget_us: budget_us,
        cut_short: tuning.cut_short,
        passes: tuning.passes,
        points,
        best,
        closest,
    };
    serde_json::to_string_pretty(&document)
        .map(|text| text + "\n")
        .map_err(|err| format!("could not encode the search: {err}"))
}
