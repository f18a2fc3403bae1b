//! `--tune`: a search of ferry-trips' settings under one store and load:
//! its shard count, its slots (trips in flight per shard,
//! `max_trips_in_flight`) and its keys' batches per trip
//! (`max_trip_batches`). Every point tried is one measured run
//! ([`crate::run::compare::run`]); the best is the one with the highest throughput
//! among those that lost nothing, whose read-back matched (and, ferry being
//! ferry, never conflicted) and, with a latency budget, whose p99 is within
//! it.
//!
//! # The search: coordinate search
//!
//! From a start point (the flags' settings, by default 4 slots and 256
//! batches a trip at every CPU), one setting at a time is tried at every
//! value of its grid while the other two stay at the best point so far;
//! after each setting the best point so far becomes the centre of the next.
//! A pass goes over all three settings; passes repeat until one ends at the
//! centre it began from, which no value of any one setting beat. A point is
//! never run twice (a later pass skips what an earlier one measured), and
//! the search stops at a point budget whatever it has left.
//!
//! Why this and not the full grid: each point costs a warm-up and a
//! measured window, seconds, and the full grid is the product of the
//! settings' grids (2 CPUs × 5 slots × 4 trip sizes = 40 points, 16 CPUs:
//! 320), while a pass is their sum (≤ 11 new points on 2 CPUs). The three
//! settings mostly act on their own (shards on CPU, slots on how many trips
//! wait on the store at once, trip size on how much one trip carries), so
//! the best of each around a good centre is close to the best overall; the
//! passes after the first catch what they do together (slots × trip size is
//! what a shard has in flight). What coordinate search can miss, a peak that
//! only two settings changed at once reach, costs less than the hours of a
//! full grid on a large machine; `--tune-slots` and `--tune-trip-batches`
//! narrow or widen the grids.
//!
//! The search itself is [`search`], over any way of measuring a point, so
//! that its rules can be checked without a load; [`tune`] measures each
//! point as a run of ferry-trips on a store, and [`run_cli`] is `ferry-load
//! --tune`: progress, the table of every point, the verdict, `--json` and
//! `--plot`.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::Path;
use std::time::Duration;

use plotters::backend::SVGBackend;
use plotters::chart::{ChartBuilder, ChartContext};
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::combinators::{BindKeyPoints, IntoLogRange, LogCoord, WithKeyPoints};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, DrawingAreaErrorKind, IntoDrawingArea};
use plotters::element::{Circle, Cross, EmptyElement, Text};
use plotters::series::DashedLineSeries;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{Color, FontStyle, IntoFont, RGBColor, TextStyle, BLACK, WHITE};
use serde::Serialize;

use crate::base::duration::format_duration;
use crate::report::{self, thousands, RunResult};
use crate::sources::load::{Load, Progress};
use crate::store::{Store, StoreAddress};
use crate::systems::{Settings, SystemKind};

/// The slots (`--max-trips-in-flight`) tried by default.
pub const DEFAULT_SLOTS: [usize; 5] = [1, 2, 4, 8, 16];
/// The keys' batches per trip (`--max-trip-batches`) tried by default.
pub const DEFAULT_TRIP_BATCHES: [usize; 4] = [16, 64, 256, 1024];
/// Points measured at most by default: a full grid on 2 CPUs, and three
/// or four passes on a larger machine.
pub const DEFAULT_MAX_POINTS: usize = 40;

/// The name of the search, as the header and the JSON give it.
pub const SEARCH_NAME: &str = "coordinate search";

/// One setting of ferry-trips that the search varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Axis {
    /// The shard count (`--shards`).
    Shards,
    /// Trips in flight per shard (`--max-trips-in-flight`).
    Slots,
    /// Keys' batches per trip at most (`--max-trip-batches`).
    TripBatches,
}

impl Axis {
    /// The settings in the order a pass varies them.
    pub const ALL: [Axis; 3] = [Axis::Shards, Axis::Slots, Axis::TripBatches];

    /// `shards`, `slots` or `trip batches`.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Shards => "shards",
            Axis::Slots => "slots",
            Axis::TripBatches => "trip batches",
        }
    }
}

/// One setting of all three: a point of the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Point {
    /// Shards.
    pub shards: usize,
    /// Trips in flight per shard (`max_trips_in_flight`).
    pub slots: usize,
    /// Keys' batches per trip at most (`max_trip_batches`).
    pub trip_batches: usize,
}

impl Point {
    /// The point as `ferry-load` flags: `--shards 2 --max-trips-in-flight 4
    /// --max-trip-batches 256`.
    pub fn flags(self) -> String {
        format!(
            "--shards {} --max-trips-in-flight {} --max-trip-batches {}",
            self.shards, self.slots, self.trip_batches
        )
    }

    /// The point in short, shards/slots/trip batches: `2/4/256`.
    pub fn short(self) -> String {
        format!("{}/{}/{}", self.shards, self.slots, self.trip_batches)
    }

    /// The value of `axis`.
    pub fn get(self, axis: Axis) -> usize {
        match axis {
            Axis::Shards => self.shards,
            Axis::Slots => self.slots,
            Axis::TripBatches => self.trip_batches,
        }
    }

    /// This point with `axis` at `value`.
    pub fn with(self, axis: Axis, value: usize) -> Point {
        let mut point = self;
        match axis {
            Axis::Shards => point.shards = value,
            Axis::Slots => point.slots = value,
            Axis::TripBatches => point.trip_batches = value,
        }
        point
    }
}

/// The values each setting may take, each list ascending, without
/// repeats.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Grid {
    /// Shard counts.
    pub shards: Vec<usize>,
    /// Slots.
    pub slots: Vec<usize>,
    /// Keys' batches per trip.
    pub trip_batches: Vec<usize>,
}

impl Grid {
    /// The values of `axis`.
    pub fn values(&self, axis: Axis) -> &[usize] {
        match axis {
            Axis::Shards => &self.shards,
            Axis::Slots => &self.slots,
            Axis::TripBatches => &self.trip_batches,
        }
    }

    fn values_mut(&mut self, axis: Axis) -> &mut Vec<usize> {
        match axis {
            Axis::Shards => &mut self.shards,
            Axis::Slots => &mut self.slots,
            Axis::TripBatches => &mut self.trip_batches,
        }
    }

    /// The points of the full grid.
    pub fn size(&self) -> usize {
        Axis::ALL
            .iter()
            .map(|&axis| self.values(axis).len())
            .product()
    }

    /// Whether `point` is on the grid.
    pub fn contains(&self, point: Point) -> bool {
        Axis::ALL
            .iter()
            .all(|&axis| self.values(axis).contains(&point.get(axis)))
    }
}

/// What to search: the grid, where to start, how many points at most, and
/// the latency budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The values tried, the start's among them.
    pub grid: Grid,
    /// The first point measured, the first centre.
    pub start: Point,
    /// Points measured at most (at least 1).
    pub max_points: usize,
    /// The best must have its p99 at or below this (`None`: no budget).
    pub p99_budget: Option<Duration>,
}

impl Plan {
    /// A plan over `grid` (each list sorted and its repeats dropped, the
    /// start's value added where missing), or why not: an empty list, a
    /// value of 0, no points allowed.
    pub fn new(
        grid: Grid,
        start: Point,
        max_points: usize,
        p99_budget: Option<Duration>,
    ) -> Result<Plan, String> {
        let mut grid = grid;
        for axis in Axis::ALL {
            let values = grid.values_mut(axis);
            if values.is_empty() {
                return Err(format!("--tune: no {} to try", axis.name()));
            }
            values.push(start.get(axis));
            values.sort_unstable();
            values.dedup();
            if values[0] == 0 {
                return Err(format!("--tune: {} must be at least 1", axis.name()));
            }
        }
        if max_points == 0 {
            return Err("--tune-points must be at least 1".to_string());
        }
        Ok(Plan {
            grid,
            start,
            max_points,
            p99_budget,
        })
    }

    /// The budget in µs, as [`RunResult::p99_us`] counts.
    pub fn p99_budget_us(&self) -> Option<f64> {
        self.p99_budget.map(|budget| budget.as_secs_f64() * 1e6)
    }
}

/// One point the search measured.
#[derive(Clone, Debug)]
pub struct Tried {
    /// Its settings.
    pub point: Point,
    /// The pass that measured it, from 1.
    pub pass: usize,
    /// The setting whose values that pass was trying (`None`: the start).
    pub varied: Option<Axis>,
    /// The run, or why there was none (the system did not start, the
    /// store failed).
    pub outcome: Result<RunResult, String>,
}

impl Tried {
    /// What is wrong with the run: an error, inputs lost, a read-back that
    /// does not match, conflicts, nothing answered. Empty when it passed.
    pub fn problems(&self) -> Vec<String> {
        let run = match &self.outcome {
            Ok(run) => run,
            Err(error) => return vec![error.clone()],
        };
        let mut problems = Vec::new();
        if run.lost > 0 {
            problems.push(format!("lost {}", thousands(run.lost)));
        }
        if !run.read_back_matches() {
            problems.push("read-back does not match".to_string());
        }
        if run.conflicts > 0 {
            problems.push(format!("{} conflicts", thousands(run.conflicts)));
        }
        if run.completed == 0 {
            problems.push("nothing answered".to_string());
        }
        problems
    }

    /// Whether the run lost nothing, its read-back matched, it never
    /// conflicted and it answered something: whether it may be best.
    pub fn passed(&self) -> bool {
        self.problems().is_empty()
    }

    /// Whether it passed and its p99 is within `budget_us` (when there is
    /// one).
    pub fn within(&self, budget_us: Option<f64>) -> bool {
        self.passed() && budget_us.is_none_or(|budget| self.p99_us() <= budget)
    }

    /// Its throughput, inputs/s (0 without a run).
    pub fn throughput(&self) -> f64 {
        self.outcome.as_ref().map_or(0.0, |run| run.throughput)
    }

    /// Its p99 latency, µs (infinite without a run).
    pub fn p99_us(&self) -> f64 {
        self.outcome
            .as_ref()
            .map_or(f64::INFINITY, |run| run.p99_us)
    }

    /// Its run, if it had one.
    pub fn run(&self) -> Option<&RunResult> {
        self.outcome.as_ref().ok()
    }
}

/// Which point won.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The point (its index among those tried) with the highest throughput
    /// of those that passed their checks and met the budget.
    Best(usize),
    /// Points passed their checks but none met the p99 budget; `closest` is
    /// the one with the lowest p99.
    OverBudget {
        /// Index of the closest point among those tried.
        closest: usize,
    },
    /// No point passed its checks.
    NoneValid,
}

/// The verdict on `tried` under a p99 budget of `budget_us` µs: the
/// highest throughput among the points that passed and met the budget (the
/// earlier on a tie), else the lowest p99 among those that passed.
pub fn verdict(tried: &[Tried], budget_us: Option<f64>) -> Verdict {
    let mut best: Option<usize> = None;
    let mut closest: Option<usize> = None;
    for (index, point) in tried.iter().enumerate() {
        if !point.passed() {
            continue;
        }
        if point.within(budget_us)
            && best.is_none_or(|b| point.throughput() > tried[b].throughput())
        {
            best = Some(index);
        }
        let nearer = |c: usize| {
            let (p99, other) = (point.p99_us(), tried[c].p99_us());
            p99 < other || (p99 == other && point.throughput() > tried[c].throughput())
        };
        if closest.is_none_or(nearer) {
            closest = Some(index);
        }
    }
    match (best, closest) {
        (Some(index), _) => Verdict::Best(index),
        (None, Some(closest)) => Verdict::OverBudget { closest },
        (None, None) => Verdict::NoneValid,
    }
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct Tuning {
    /// What it searched.
    pub plan: Plan,
    /// Every point measured, in order, each once.
    pub tried: Vec<Tried>,
    /// The winner.
    pub verdict: Verdict,
    /// Whether it stopped at `plan.max_points` with points still to try.
    pub cut_short: bool,
    /// Passes begun.
    pub passes: usize,
}

impl Tuning {
    /// The best point, if one met every condition.
    pub fn best(&self) -> Option<&Tried> {
        match self.verdict {
            Verdict::Best(index) => Some(&self.tried[index]),
            _ => None,
        }
    }

    /// The point closest to the budget, when none met it.
    pub fn closest(&self) -> Option<&Tried> {
        match self.verdict {
            Verdict::OverBudget { closest } => Some(&self.tried[closest]),
            _ => None,
        }
    }

    /// The points that failed their checks.
    pub fn failed(&self) -> impl Iterator<Item = (usize, &Tried)> {
        self.tried
            .iter()
            .enumerate()
            .filter(|(_, tried)| !tried.passed())
    }
}

/// The coordinate search (see the module's documentation) of `plan`, each
/// point measured once by `measure`.
pub fn search(plan: Plan, mut measure: impl FnMut(Point) -> Result<RunResult, String>) -> Tuning {
    let budget_us = plan.p99_budget_us();
    let mut tried: Vec<Tried> = Vec::new();
    let mut cut_short = false;
    let mut passes = 1;
    tried.push(Tried {
        point: plan.start,
        pass: 1,
        varied: None,
        outcome: measure(plan.start),
    });
    let mut centre = plan.start;
    'search: loop {
        let began_at = centre;
        for axis in Axis::ALL {
            for &value in plan.grid.values(axis) {
                let point = centre.with(axis, value);
                if tried.iter().any(|earlier| earlier.point == point) {
                    continue;
                }
                if tried.len() >= plan.max_points {
                    cut_short = true;
                    break 'search;
                }
                tried.push(Tried {
                    point,
                    pass: passes,
                    varied: Some(axis),
                    outcome: measure(point),
                });
            }
            centre = match verdict(&tried, budget_us) {
                Verdict::Best(index) | Verdict::OverBudget { closest: index } => tried[index].point,
                Verdict::NoneValid => centre,
            };
        }
        if centre == began_at {
            break;
        }
        passes += 1;
    }
    Tuning {
        verdict: verdict(&tried, budget_us),
        plan,
        tried,
        cut_short,
        passes,
    }
}

/// `settings` with ferry-trips at `point`'s slots and trip size.
pub fn settings_at(settings: &Settings, point: Point) -> Settings {
    Settings {
        max_trips_in_flight: point.slots,
        max_trip_batches: point.trip_batches,
        ..settings.clone()
    }
}

/// One run of ferry-trips at `point` on `store` under `load`.
pub fn measure(
    settings: &Settings,
    load: &Load,
    store: Store,
    point: Point,
    on_progress: impl FnMut(&Progress),
) -> Result<RunResult, String> {
    crate::run::compare::run(
        SystemKind::FerryTrips,
        Some(point.shards),
        1,
        &settings_at(settings, point),
        store,
        load,
        on_progress,
    )
}

/// The search of `plan` with each point a run of ferry-trips on `store`
/// under `load` ([`measure`]); `on_progress` hears each run's progress.
pub fn tune(
    settings: &Settings,
    load: &Load,
    store: Store,
    plan: Plan,
    mut on_progress: impl FnMut(Point, &Progress),
) -> Tuning {
    search(plan, |point| {
        measure(settings, load, store, point, |progress| {
            on_progress(point, progress)
        })
    })
}

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
        "grid: shards {}; slots (--max-trips-in-flight) {}; trip batches (--max-trip-batches) {}; start: {}",
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

/// Width of the picture, px.
const WIDTH_PX: u32 = 1500;
/// Width of the list of points, right of the chart, px.
const LIST_WIDTH_PX: u32 = 560;
/// Height of one line of the heading, px.
const HEADING_LINE_PX: u32 = 24;
/// Height of the chart at least, px.
const CHART_HEIGHT_MIN_PX: u32 = 680;
/// Where the list's first row is, from the panel's top, px.
const LIST_TOP_PX: i32 = 70;
/// Height of one row of the list, px.
const LIST_ROW_PX: i32 = 22;
/// Size of the list's text (as plotters takes a font size).
const LIST_FONT_PX: u32 = 16;
/// Radius of a point's dot, px.
const DOT_PX: i32 = 6;
/// Radius of the ring around the best point, px.
const BEST_RING_PX: i32 = 13;
/// Characters on one line of the heading at most.
const HEADING_LINE_CHARS: usize = 150;

/// One colour per shard count, in the grid's order (red is kept for
/// failed points and the budget).
const SHARD_COLORS: [RGBColor; 7] = [
    RGBColor(31, 100, 180),
    RGBColor(230, 120, 20),
    RGBColor(40, 150, 60),
    RGBColor(130, 80, 170),
    RGBColor(120, 85, 60),
    RGBColor(20, 160, 170),
    RGBColor(210, 90, 170),
];
/// Failed points and the budget line.
const FAILED_COLOR: RGBColor = RGBColor(200, 30, 30);

/// The error of a drawing on the SVG backend.
type DrawError = DrawingAreaErrorKind<std::io::Error>;

/// A panel of the picture.
type Panel<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The colour of `shards`' points.
fn shard_color(grid: &Grid, shards: usize) -> RGBColor {
    let place = grid.shards.iter().position(|&n| n == shards).unwrap_or(0);
    SHARD_COLORS[place % SHARD_COLORS.len()]
}

/// `text` broken at its `, ` into lines of at most `width` characters
/// (a longer part stays whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for part in text.split(", ") {
        if !line.is_empty() && line.chars().count() + 2 + part.chars().count() > width {
            lines.push(std::mem::take(&mut line) + ",");
        }
        if !line.is_empty() {
            line += ", ";
        }
        line += part;
    }
    lines.push(line);
    lines
}

/// The picture of the search as SVG text: throughput against p99, a dot
/// per point tried (coloured by its shard count, hollow when over the
/// budget, a red cross when it failed), numbered as in the table, the best
/// ringed; right of it, the list of the points and their settings.
/// `heading` says what load it was.
pub fn render_svg(heading: &str, tuning: &Tuning) -> Result<String, String> {
    let mut heading_lines = wrap(
        &format!(
            "ferry-load --tune: ferry-trips by {SEARCH_NAME}, {} points",
            tuning.tried.len()
        ),
        HEADING_LINE_CHARS,
    );
    heading_lines.extend(wrap(heading, HEADING_LINE_CHARS));
    let heading_px = HEADING_LINE_PX * heading_lines.len() as u32 + 12;
    let list_px = LIST_TOP_PX as u32 + LIST_ROW_PX as u32 * (tuning.tried.len() as u32 + 3) + 20;
    let height = heading_px + CHART_HEIGHT_MIN_PX.max(list_px);
    let mut svg = String::new();
    draw(
        &mut svg,
        (WIDTH_PX, height),
        &heading_lines,
        heading_px,
        tuning,
    )
    .map_err(|err| format!("could not draw the plot: {err}"))?;
    Ok(svg)
}

/// Writes the picture of the search (see [`render_svg`]) to `path`.
pub fn write_svg(path: &Path, heading: &str, tuning: &Tuning) -> Result<(), String> {
    let svg = render_svg(heading, tuning)?;
    std::fs::write(path, svg).map_err(|err| format!("could not write {}: {err}", path.display()))
}

fn draw(
    svg: &mut String,
    size: (u32, u32),
    heading: &[String],
    heading_px: u32,
    tuning: &Tuning,
) -> Result<(), DrawError> {
    let root = SVGBackend::with_string(svg, size).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, panel) = root.split_vertically(heading_px);
    let font = TextStyle::from(("sans-serif", 18).into_font()).pos(Pos::new(HPos::Left, VPos::Top));
    for (row, line) in (0i32..).zip(heading) {
        top.draw(&Text::new(
            line.as_str(),
            (16, 8 + row * HEADING_LINE_PX as i32),
            font.clone(),
        ))?;
    }
    let (width_px, _) = panel.dim_in_pixel();
    let (chart_area, list_area) = panel.split_horizontally(width_px - LIST_WIDTH_PX);
    draw_chart(&chart_area, tuning)?;
    draw_list(&list_area, tuning)?;
    root.present()
}

/// The values of `1, 2, 5` (or `steps`) times a power of ten inside
/// `low..high`.
fn log_ticks(low: f64, high: f64, steps: &[f64]) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = 10f64.powf(low.log10().floor());
    while decade <= high {
        ticks.extend(
            steps
                .iter()
                .map(|step| step * decade)
                .filter(|&value| low <= value && value <= high),
        );
        decade *= 10.0;
    }
    ticks
}

/// A millisecond tick: `0.5`, `2`, `1,000`.
fn ms_label(ms: f64) -> String {
    if ms >= 1.0 {
        return thousands(ms.round() as u64);
    }
    let digits = format!("{ms:.3}");
    digits
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// A point drawn on the chart: its number, what was tried, and where
/// (p99 ms, inputs/s).
type Drawn<'a> = (usize, &'a Tried, (f64, f64));

/// The chart's plotting area, in its coordinates.
type Plot<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<WithKeyPoints<LogCoord<f64>>, RangedCoordf64>>;

/// Throughput against p99, a dot per point that has a run.
fn draw_chart(area: &Panel<'_>, tuning: &Tuning) -> Result<(), DrawError> {
    let budget_ms = tuning.plan.p99_budget_us().map(|us| us / 1_000.0);
    let drawn: Vec<Drawn<'_>> = tuning
        .tried
        .iter()
        .enumerate()
        .filter_map(|(index, tried)| {
            let run = tried.run()?;
            (run.p99_us > 0.0).then_some((index, tried, (run.p99_us / 1_000.0, run.throughput)))
        })
        .collect();
    let ((ms_low, ms_high), (per_s_low, per_s_top)) = chart_ranges(&drawn, budget_ms);
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Throughput against p99, a point per setting tried: #number shards/slots/trip batches",
            ("sans-serif", 22),
        )
        .margin_left(16)
        .margin_right(40)
        .margin_bottom(10)
        .x_label_area_size(50)
        .y_label_area_size(100)
        .build_cartesian_2d(
            (ms_low..ms_high)
                .log_scale()
                .with_key_points(log_ticks(ms_low, ms_high, &[1.0, 2.0, 5.0]))
                .with_light_points(log_ticks(
                    ms_low,
                    ms_high,
                    &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
                )),
            per_s_low..per_s_top,
        )?;
    chart
        .configure_mesh()
        .x_desc("p99 latency, ms (log scale)")
        .y_desc("inputs/s")
        .x_label_formatter(&|ms| ms_label(*ms))
        .y_label_formatter(&|per_s| thousands(per_s.max(0.0).round() as u64))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 17))
        .draw()?;
    draw_budget(&mut chart, tuning, budget_ms, (per_s_low, per_s_top))?;
    draw_points(&mut chart, tuning, &drawn)?;
    draw_chosen(&mut chart, tuning, &drawn)
}

/// The chart's ranges: p99 (ms, log scale, with room either side) and
/// inputs/s (from zero unless every point is near the top).
fn chart_ranges(drawn: &[Drawn<'_>], budget_ms: Option<f64>) -> ((f64, f64), (f64, f64)) {
    let (mut ms_low, mut ms_high) = drawn
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(low, high), (_, _, (ms, _))| {
            (low.min(*ms), high.max(*ms))
        });
    if let Some(budget) = budget_ms.filter(|&ms| ms > 0.0) {
        ms_low = ms_low.min(budget);
        ms_high = ms_high.max(budget);
    }
    if !ms_low.is_finite() {
        (ms_low, ms_high) = (1.0, 10.0);
    }
    // Room either side on the log scale, and at least a factor of 4 across.
    let middle = (ms_low * ms_high).sqrt();
    let spread = (ms_high / ms_low).max(4.0).sqrt() * 1.3;
    let (ms_low, ms_high) = (middle / spread, middle * spread);
    let (per_s_low, per_s_high) = drawn.iter().fold(
        (f64::INFINITY, 0.0f64),
        |(low, high), (_, _, (_, per_s))| (low.min(*per_s), high.max(*per_s)),
    );
    let per_s_high = per_s_high.max(1.0);
    // From zero unless every point is in the top part, where zero would
    // squeeze the differences the search is about into a thin band.
    let per_s_low = if per_s_low.is_finite() && per_s_low > 0.5 * per_s_high {
        per_s_low - 0.15 * (per_s_high - per_s_low).max(0.05 * per_s_high)
    } else {
        0.0
    };
    let per_s_top = per_s_high + 0.12 * (per_s_high - per_s_low);
    ((ms_low, ms_high), (per_s_low, per_s_top))
}

/// The p99 budget as a dashed line, if there is one.
fn draw_budget(
    chart: &mut Plot<'_, '_>,
    tuning: &Tuning,
    budget_ms: Option<f64>,
    (per_s_low, per_s_top): (f64, f64),
) -> Result<(), DrawError> {
    if let (Some(budget), Some(written)) =
        (budget_ms.filter(|&ms| ms > 0.0), tuning.plan.p99_budget)
    {
        let line = [(budget, per_s_low), (budget, per_s_top)];
        chart.draw_series(DashedLineSeries::new(
            line,
            8,
            6,
            FAILED_COLOR.stroke_width(2),
        ))?;
        let font = TextStyle::from(("sans-serif", 16).into_font())
            .color(&FAILED_COLOR)
            .pos(Pos::new(HPos::Left, VPos::Top));
        chart.draw_series(std::iter::once(
            EmptyElement::at((budget, per_s_top))
                + Text::new(
                    format!("p99 budget {}", format_duration(written)),
                    (6, 4),
                    font,
                ),
        ))?;
    }
    Ok(())
}

/// A dot per point (hollow over the budget), a cross per failed one.
fn draw_points(
    chart: &mut Plot<'_, '_>,
    tuning: &Tuning,
    drawn: &[Drawn<'_>],
) -> Result<(), DrawError> {
    let budget_us = tuning.plan.p99_budget_us();
    let number_font =
        TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(HPos::Left, VPos::Bottom));
    for &(index, tried, at) in drawn {
        let number = Text::new(
            format!("#{} {}", index + 1, tried.point.short()),
            (7, -5),
            number_font.clone(),
        );
        if !tried.passed() {
            let cross = Cross::new((0, 0), DOT_PX, FAILED_COLOR.stroke_width(3));
            chart.draw_series(std::iter::once(EmptyElement::at(at) + cross + number))?;
            continue;
        }
        let color = shard_color(&tuning.plan.grid, tried.point.shards);
        let style = if tried.within(budget_us) {
            color.filled()
        } else {
            color.stroke_width(2)
        };
        let dot = Circle::new((0, 0), DOT_PX, style);
        chart.draw_series(std::iter::once(EmptyElement::at(at) + dot + number))?;
    }
    Ok(())
}

/// The best point (or the closest to the budget) ringed and named.
fn draw_chosen(
    chart: &mut Plot<'_, '_>,
    tuning: &Tuning,
    drawn: &[Drawn<'_>],
) -> Result<(), DrawError> {
    let chosen = match tuning.verdict {
        Verdict::Best(index) => Some((index, "best")),
        Verdict::OverBudget { closest } => Some((closest, "closest")),
        Verdict::NoneValid => None,
    };
    if let Some((index, word)) = chosen {
        if let Some(&(_, _, at)) = drawn.iter().find(|(i, _, _)| *i == index) {
            let font = TextStyle::from(("sans-serif", 18).into_font().style(FontStyle::Bold))
                .pos(Pos::new(HPos::Left, VPos::Top));
            let ring = Circle::new((0, 0), BEST_RING_PX, BLACK.stroke_width(3));
            let label = Text::new(word, (10, 10), font);
            chart.draw_series(std::iter::once(EmptyElement::at(at) + ring + label))?;
        }
    }
    Ok(())
}

/// The list right of the chart: a row per point, its dot, number,
/// settings, throughput and p99, and what it came to.
fn draw_list(area: &Panel<'_>, tuning: &Tuning) -> Result<(), DrawError> {
    let left = TextStyle::from(("sans-serif", LIST_FONT_PX).into_font())
        .pos(Pos::new(HPos::Left, VPos::Center));
    let right = left.pos(Pos::new(HPos::Right, VPos::Center));
    let bold = TextStyle::from(
        ("sans-serif", LIST_FONT_PX)
            .into_font()
            .style(FontStyle::Bold),
    )
    .pos(Pos::new(HPos::Left, VPos::Center));
    // Right edges of the number columns (the note starts past the last).
    let columns: [(i32, &str); 6] = [
        (62, "#"),
        (120, "shards"),
        (170, "slots"),
        (270, "trip batches"),
        (375, "inputs/s"),
        (445, "p99 ms"),
    ];
    let header_y = LIST_TOP_PX - LIST_ROW_PX;
    for (x, name) in columns {
        area.draw(&Text::new(name, (x, header_y), right.clone()))?;
    }
    for (row, (index, tried)) in (0i32..).zip(tuning.tried.iter().enumerate()) {
        draw_list_row(area, tuning, (row, index, tried), &columns, (&left, &bold))?;
    }
    draw_key(area, tuning, &left)
}

/// One row of the list: the point's dot, its cells under `columns`, and
/// what it came to.
fn draw_list_row(
    area: &Panel<'_>,
    tuning: &Tuning,
    (row, index, tried): (i32, usize, &Tried),
    columns: &[(i32, &str); 6],
    (left, bold): (&TextStyle<'_>, &TextStyle<'_>),
) -> Result<(), DrawError> {
    let right = left.pos(Pos::new(HPos::Right, VPos::Center));
    let note_x = 455;
    let budget_us = tuning.plan.p99_budget_us();
    let y = LIST_TOP_PX + row * LIST_ROW_PX;
    let color = shard_color(&tuning.plan.grid, tried.point.shards);
    if !tried.passed() {
        area.draw(&Cross::new((16, y), 5, FAILED_COLOR.stroke_width(3)))?;
    } else if tried.within(budget_us) {
        area.draw(&Circle::new((16, y), 5, color.filled()))?;
    } else {
        area.draw(&Circle::new((16, y), 5, color.stroke_width(2)))?;
    }
    let (per_s, p99) = match tried.run() {
        Some(run) => (thousands(run.throughput.round() as u64), millis(run.p99_us)),
        None => ("-".to_string(), "-".to_string()),
    };
    let cells = [
        format!("#{}", index + 1),
        tried.point.shards.to_string(),
        tried.point.slots.to_string(),
        tried.point.trip_batches.to_string(),
        per_s,
        p99,
    ];
    let chosen = matches!(tuning.verdict, Verdict::Best(i) | Verdict::OverBudget { closest: i } if i == index);
    for ((x, _), cell) in columns.iter().zip(cells) {
        area.draw(&Text::new(cell, (*x, y), right.clone()))?;
    }
    let note = if !tried.passed() {
        "FAILED"
    } else if chosen && tried.within(budget_us) {
        "BEST"
    } else if chosen {
        "closest"
    } else if !tried.within(budget_us) {
        "over budget"
    } else {
        ""
    };
    let style = match note {
        "FAILED" => left.color(&FAILED_COLOR),
        "BEST" | "closest" => bold.clone(),
        _ => left.clone(),
    };
    area.draw(&Text::new(note, (note_x, y), style))?;
    Ok(())
}

/// Under the list: what the colours and marks mean.
fn draw_key(area: &Panel<'_>, tuning: &Tuning, left: &TextStyle<'_>) -> Result<(), DrawError> {
    let budget_us = tuning.plan.p99_budget_us();
    let key_y = LIST_TOP_PX + (tuning.tried.len() as i32 + 1) * LIST_ROW_PX;
    let shards: Vec<String> = tuning
        .plan
        .grid
        .shards
        .iter()
        .map(|n| n.to_string())
        .collect();
    let mut x = 10;
    area.draw(&Text::new("colour: shards", (x, key_y), left.clone()))?;
    x += 120;
    for (n, name) in tuning.plan.grid.shards.iter().zip(shards) {
        area.draw(&Circle::new(
            (x + 6, key_y),
            5,
            shard_color(&tuning.plan.grid, *n).filled(),
        ))?;
        area.draw(&Text::new(name, (x + 16, key_y), left.clone()))?;
        x += 46;
    }
    let legend = if budget_us.is_some() {
        "hollow: over the p99 budget;  red cross: failed its checks"
    } else {
        "red cross: failed its checks (lost inputs, read-back)"
    };
    area.draw(&Text::new(legend, (10, key_y + LIST_ROW_PX), left.clone()))?;
    Ok(())
}

/// The command line, a store URL's password hidden, for the JSON.
fn command_line() -> String {
    std::env::args()
        .map(|arg| match arg.parse::<StoreAddress>() {
            Ok(address) => address.to_string(),
            Err(_) => arg,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `ferry-load --tune`: the search of `plan` on `store` under `load`, with
/// live progress on stderr; then the header, the table of every point and
/// the verdict on stdout, and the `json` and `plot` files if asked for.
/// `heading` says what load it is. `Ok(false)` when a point failed its
/// checks or no point met every condition.
pub fn run_cli(
    settings: &Settings,
    load: &Load,
    store: Store,
    plan: Plan,
    heading: &str,
    json_path: Option<&Path>,
    plot_path: Option<&Path>,
) -> Result<bool, String> {
    let live = std::io::stderr().is_terminal();
    eprintln!("ferry-load: {heading}");
    for line in header(&plan).lines() {
        eprintln!("ferry-load: {line}");
    }
    let mut number = 0;
    let tuning = search(plan, |point| {
        number += 1;
        let label = format!("#{number} {}", point.short());
        let ran = measure(settings, load, store, point, |progress| {
            let line = report::progress_line(&label, progress);
            if live {
                eprint!("\r{line}\x1b[K");
                let _ = std::io::stderr().flush();
            } else {
                eprintln!("{line}");
            }
        });
        if live {
            eprint!("\r\x1b[K");
        }
        match &ran {
            Ok(run) => eprintln!(
                "#{number} {}: {} inputs/s, p99 {} ms, lost {}",
                point.flags(),
                thousands(run.throughput.round() as u64),
                millis(run.p99_us),
                run.lost
            ),
            Err(problem) => eprintln!("#{number} {}: {problem}", point.flags()),
        }
        ran
    });
    println!();
    print!("{}", header(&tuning.plan));
    println!("load: {heading}");
    println!();
    print!("{}", table(&tuning));
    println!();
    print!("{}", conclusion(&tuning));
    let written = write_files(&tuning, store, heading, json_path, plot_path);
    let mut clean = tuning.best().is_some();
    for (index, tried) in tuning.failed() {
        clean = false;
        eprintln!(
            "ferry-load: FAILED: #{} {}: {}",
            index + 1,
            tried.point.flags(),
            tried.problems().join(", ")
        );
    }
    written?;
    Ok(clean)
}

/// `--json` and `--plot` of a search, each where asked.
fn write_files(
    tuning: &Tuning,
    store: Store,
    heading: &str,
    json_path: Option<&Path>,
    plot_path: Option<&Path>,
) -> Result<(), String> {
    if let Some(path) = json_path {
        let text = json(tuning, &command_line(), store.kind())?;
        std::fs::write(path, text)
            .map_err(|err| format!("could not write {}: {err}", path.display()))?;
        eprintln!("ferry-load: wrote {}", path.display());
    }
    if let Some(path) = plot_path {
        write_svg(path, heading, tuning)?;
        eprintln!("ferry-load: wrote {}", path.display());
    }
    Ok(())
}
