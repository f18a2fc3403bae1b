//! `--tune`'s search: on the simulated store with tiny runs and small
//! grids, every point tried is reported once, the best is the fastest
//! point that passed its checks (and met the budget), an impossible budget
//! is met by no point, and the point budget is never exceeded; with a made-up
//! measure, the rules themselves: the climb to a peak one setting at a time,
//! failed points never best, the latency budget's filter.

use std::collections::HashSet;
use std::sync::OnceLock;
use std::time::Duration;

use ferry_bench::report::tune::{self as report, Axis, Grid, Plan, Point, Tuning, Verdict};
use ferry_bench::report::RunResult;
use ferry_bench::run::tune;
use ferry_bench::sources::load::{Load, Mode};
use ferry_bench::store::Store;

mod support;

use support::{load, settings, KEYS};

const RTT: Duration = Duration::from_millis(1);

/// A short closed-loop load: 100 ms of measuring after 50 ms of warm-up.
fn short_load() -> Load {
    Load {
        warmup: Duration::from_millis(50),
        duration: Duration::from_millis(150),
        ..load(Mode::Closed { clients: 64 })
    }
}

fn point(shards: usize, slots: usize, trip_batches: usize) -> Point {
    Point {
        shards,
        slots,
        trip_batches,
    }
}

/// Two values of each setting: a full grid of 8 points.
fn small_grid() -> Grid {
    Grid {
        shards: vec![1, 2],
        slots: vec![1, 4],
        trip_batches: vec![16, 256],
    }
}

/// The search of `plan` on a simulated store of its own.
fn tune_on_sim(plan: Plan) -> Tuning {
    let store = Store::sim(KEYS, RTT).unwrap();
    let tuning = tune::tune(&settings(), &short_load(), store, plan, |_, _| {});
    store.stop().unwrap();
    tuning
}

/// What every search's report must hold: each point tried once, on the
/// grid, the start first, within the point budget; one table row and one
/// JSON entry per point.
fn assert_reported_once(tuning: &Tuning) {
    let plan = &tuning.plan;
    let points: Vec<Point> = tuning.tried.iter().map(|tried| tried.point).collect();
    let distinct: HashSet<Point> = points.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        points.len(),
        "a point ran twice: {points:?}"
    );
    assert!(points.iter().all(|&p| plan.grid.contains(p)), "{points:?}");
    assert_eq!(points[0], plan.start);
    assert!(points.len() <= plan.max_points && points.len() <= plan.grid.size());

    let table = report::table(tuning);
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), points.len(), "{table}");
    for (number, (row, point)) in (1..).zip(rows.iter().zip(&points)) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let settings_at = |at: usize| cells[at].parse::<usize>().unwrap();
        assert_eq!(cells[0], number.to_string(), "{row}");
        // `#`, pass, varied (`trip batches` is two words), then the point.
        let first = if cells[2] == "trip" { 4 } else { 3 };
        assert_eq!(
            (
                settings_at(first),
                settings_at(first + 1),
                settings_at(first + 2)
            ),
            (point.shards, point.slots, point.trip_batches),
            "{row}"
        );
    }

    let json: serde_json::Value =
        serde_json::from_str(&report::json(tuning, "ferry-load tune", "sim").unwrap()).unwrap();
    let entries = json["points"].as_array().unwrap();
    assert_eq!(entries.len(), points.len());
    for (number, (entry, point)) in (1..).zip(entries.iter().zip(&points)) {
        assert_eq!(entry["number"], number);
        assert_eq!(entry["shards"], point.shards);
        assert_eq!(entry["slots"], point.slots);
        assert_eq!(entry["trip_batches"], point.trip_batches);
    }
    assert_eq!(json["search"], report::SEARCH_NAME);
}

/// The highest throughput among the points that passed and met the
/// budget.
fn fastest_valid(tuning: &Tuning) -> Option<f64> {
    let budget = tuning.plan.p99_budget_us();
    tuning
        .tried
        .iter()
        .filter(|tried| tried.within(budget))
        .map(|tried| tried.throughput())
        .reduce(f64::max)
}

/// Whether the search ended where it should: unless cut short, every
/// point one setting away from the winner (along the grid) was tried.
fn assert_no_neighbour_left(tuning: &Tuning, winner: Point) {
    if tuning.cut_short {
        return;
    }
    for axis in Axis::ALL {
        for &value in tuning.plan.grid.values(axis) {
            let neighbour = winner.with(axis, value);
            assert!(
                tuning.tried.iter().any(|tried| tried.point == neighbour),
                "{neighbour:?} next to the winner {winner:?} was never tried"
            );
        }
    }
}

#[test]
fn a_search_on_the_sim_reports_every_point_once_and_the_fastest_as_best() {
    let plan = Plan::new(small_grid(), point(1, 4, 256), 8, None).unwrap();
    let tuning = tune_on_sim(plan);
    assert_reported_once(&tuning);
    for tried in &tuning.tried {
        let run = tried.run().expect("every point ran");
        assert_eq!(run.system, "ferry-trips");
        assert_eq!(run.shards, Some(tried.point.shards));
        assert_eq!(run.lost, 0, "{run:?}");
        assert!(run.read_back_matches(), "{run:?}");
        assert!(tried.passed(), "{:?}", tried.problems());
        let engine = run.engine.expect("ferry-trips reports its stats()");
        assert!(
            engine.trip_batches_max as usize <= tried.point.trip_batches,
            "{engine:?} at {:?}",
            tried.point
        );
    }
    let best = tuning
        .best()
        .expect("with no budget, a clean point is best");
    assert_eq!(Some(best.throughput()), fastest_valid(&tuning));
    assert_no_neighbour_left(&tuning, best.point);
    let conclusion = report::conclusion(&tuning);
    assert!(
        conclusion.contains(&format!("best: {}: ", best.point.flags())),
        "{conclusion}"
    );
    let svg = report::render_svg("a small search", &tuning).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    // Each point labelled with its number and settings, once; the best
    // marked in the chart and in the list.
    // (The SVG backend puts each element's text on a line of its own.)
    let texts = |text: &str| svg.lines().filter(|line| line.trim() == text).count();
    for (number, tried) in (1..).zip(&tuning.tried) {
        let label = format!("#{number} {}", tried.point.short());
        assert_eq!(texts(&label), 1, "{label}");
    }
    assert_eq!((texts("best"), texts("BEST")), (1, 1));
}

#[test]
fn an_impossible_latency_budget_is_met_by_no_point_and_the_closest_is_shown() {
    // A batch makes two 1 ms round trips: no p99 is within a microsecond.
    let budget = Duration::from_micros(1);
    let plan = Plan::new(small_grid(), point(2, 4, 16), 4, Some(budget)).unwrap();
    let tuning = tune_on_sim(plan);
    assert_reported_once(&tuning);
    assert!(tuning.tried.iter().all(|tried| tried.passed()));
    assert!(tuning.best().is_none());
    let Verdict::OverBudget { closest } = tuning.verdict else {
        panic!("{:?}", tuning.verdict);
    };
    let lowest_p99 = tuning
        .tried
        .iter()
        .map(|tried| tried.p99_us())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(tuning.tried[closest].p99_us(), lowest_p99);
    let conclusion = report::conclusion(&tuning);
    assert!(
        conclusion.contains("best: none: no point met the p99 budget of 1us; closest: "),
        "{conclusion}"
    );
    let table = report::table(&tuning);
    assert_eq!(table.matches("over p99 budget").count(), tuning.tried.len());
    let json: serde_json::Value =
        serde_json::from_str(&report::json(&tuning, "ferry-load tune", "sim").unwrap()).unwrap();
    assert!(json["best"].is_null());
    assert_eq!(json["closest"], closest + 1);
    assert_eq!(json["p99_budget_us"], 1.0);
}

#[test]
fn the_search_on_the_sim_stops_at_its_point_budget() {
    let plan = Plan::new(small_grid(), point(1, 1, 16), 3, None).unwrap();
    let tuning = tune_on_sim(plan);
    assert_reported_once(&tuning);
    assert_eq!(tuning.tried.len(), 3);
    assert!(tuning.cut_short);
    assert!(report::conclusion(&tuning).contains("stopped at its limit of 3 points"));
    assert_eq!(
        Some(tuning.best().unwrap().throughput()),
        fastest_valid(&tuning)
    );
}

/// A clean run of ferry-trips on the sim, the mould of the made-up ones.
fn template() -> RunResult {
    static TEMPLATE: OnceLock<RunResult> = OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            let store = Store::sim(KEYS, Duration::ZERO).unwrap();
            let load = Load {
                warmup: Duration::from_millis(20),
                duration: Duration::from_millis(50),
                ..short_load()
            };
            let run = tune::measure(&settings(), &load, store, point(1, 4, 256), |_| {}).unwrap();
            store.stop().unwrap();
            assert!(run.lost == 0 && run.read_back_matches() && run.completed > 0);
            run
        })
        .clone()
}

/// A made-up clean run at `throughput` with p99 `p99_us`.
fn made_up(throughput: f64, p99_us: f64) -> RunResult {
    RunResult {
        throughput,
        p99_us,
        ..template()
    }
}

fn default_grid() -> Grid {
    Grid {
        shards: vec![1, 2, 3, 4],
        slots: tune::DEFAULT_SLOTS.to_vec(),
        trip_batches: tune::DEFAULT_TRIP_BATCHES.to_vec(),
    }
}

/// Throughput peaking at 3 shards, 8 slots, 64 batches a trip, each
/// setting on its own.
fn peaked(point: Point) -> f64 {
    let off = |value: usize, peak: usize| (value as f64 / peak as f64).log2().abs();
    100_000.0
        - 10_000.0 * off(point.shards, 3)
        - 7_000.0 * off(point.slots, 8)
        - 5_000.0 * off(point.trip_batches, 64)
}

#[test]
fn the_search_climbs_one_setting_at_a_time_to_the_peak_running_no_point_twice() {
    let plan = Plan::new(default_grid(), point(4, 4, 256), 80, None).unwrap();
    let mut measured = Vec::new();
    let tuning = tune::search(plan, |point| {
        measured.push(point);
        Ok(made_up(peaked(point), 1_000.0))
    });
    assert_reported_once(&tuning);
    assert_eq!(
        measured,
        tuning.tried.iter().map(|t| t.point).collect::<Vec<_>>()
    );
    assert_eq!(tuning.best().unwrap().point, point(3, 8, 64));
    assert_eq!(
        Some(tuning.best().unwrap().throughput()),
        fastest_valid(&tuning)
    );
    assert!(!tuning.cut_short);
    // One pass to the peak, a second that finds nothing better: far fewer
    // points than the grid's 80.
    assert_eq!(tuning.passes, 2);
    assert!(tuning.tried.len() < 20, "{}", tuning.tried.len());
    assert_no_neighbour_left(&tuning, point(3, 8, 64));
    // Each point after the start varied one setting of the centre of its
    // time, so it shares the other two with an earlier point.
    for (index, tried) in tuning.tried.iter().enumerate().skip(1) {
        let axis = tried.varied.expect("only the start varied nothing");
        let shares = |earlier: &Point| {
            Axis::ALL
                .iter()
                .filter(|&&other| other != axis)
                .all(|&other| earlier.get(other) == tried.point.get(other))
        };
        assert!(
            tuning.tried[..index].iter().any(|t| shares(&t.point)),
            "{tried:?}"
        );
    }
}

#[test]
fn a_point_that_failed_its_checks_is_shown_failed_and_never_best() {
    let lost = point(1, 4, 256);
    // On the search's way from the start: the first pass varies the shards
    // at 4 slots and 256 batches a trip, then the slots at 3 shards.
    let unmatched = point(3, 8, 256);
    let broken = point(3, 16, 256);
    let plan = Plan::new(default_grid(), point(4, 4, 256), 80, None).unwrap();
    let tuning = tune::search(plan, |p| {
        // The failed points are the fastest of all.
        if p == lost {
            return Ok(RunResult {
                lost: 5,
                ..made_up(1e9, 1_000.0)
            });
        }
        if p == unmatched {
            let run = made_up(1e9, 1_000.0);
            return Ok(RunResult {
                applied: run.completed + 1,
                ..run
            });
        }
        if p == broken {
            return Err("ferry-trips did not start: no".to_string());
        }
        Ok(made_up(peaked(p), 1_000.0))
    });
    assert_reported_once(&tuning);
    let failed: Vec<Point> = tuning.failed().map(|(_, tried)| tried.point).collect();
    assert_eq!(failed.len(), 3, "{failed:?}");
    for point in [lost, unmatched, broken] {
        assert!(failed.contains(&point), "{point:?} not failed: {failed:?}");
    }
    let best = tuning.best().unwrap();
    assert!(!failed.contains(&best.point));
    assert_eq!(Some(best.throughput()), fastest_valid(&tuning));
    let table = report::table(&tuning);
    let failed_rows: Vec<&str> = table.lines().filter(|l| l.contains("FAILED")).collect();
    assert_eq!(failed_rows.len(), 3, "{table}");
    assert!(failed_rows.iter().any(|row| row.contains("lost 5")));
    assert!(failed_rows
        .iter()
        .any(|row| row.contains("read-back does not match")));
    assert!(failed_rows.iter().any(|row| row.contains("did not start")));
    // A search where every point fails has no best and no closest.
    let plan = Plan::new(small_grid(), point(1, 1, 16), 8, None).unwrap();
    let none = tune::search(plan, |_| Err("no store".to_string()));
    assert_eq!(none.verdict, Verdict::NoneValid);
    assert!(report::conclusion(&none).contains("no point passed its checks"));
}

#[test]
fn the_latency_budget_keeps_the_fastest_point_within_it() {
    // More slots: more throughput, and a longer p99.
    let p99_of = |p: Point| 1_000.0 * p.slots as f64;
    let budget = Duration::from_millis(4);
    let plan = Plan::new(default_grid(), point(2, 4, 256), 80, Some(budget)).unwrap();
    let tuning = tune::search(plan, |p| Ok(made_up(peaked(p), p99_of(p))));
    assert_reported_once(&tuning);
    let best = tuning.best().unwrap();
    assert_eq!(
        best.point,
        point(3, 4, 64),
        "8 slots would be faster, over budget"
    );
    assert!(best.p99_us() <= 4_000.0);
    assert_eq!(Some(best.throughput()), fastest_valid(&tuning));
    let over = tuning
        .tried
        .iter()
        .filter(|t| !t.within(Some(4_000.0)))
        .count();
    assert!(over > 0, "points over the budget were tried and left out");
    assert_eq!(
        report::table(&tuning).matches("over p99 budget").count(),
        over
    );
    assert!(report::header(&tuning.plan).contains("p99 at most 4ms"));
}

#[test]
fn no_budget_of_points_is_exceeded() {
    let unbounded = tune::search(
        Plan::new(default_grid(), point(4, 4, 256), 80, None).unwrap(),
        |p| Ok(made_up(peaked(p), 1_000.0)),
    )
    .tried
    .len();
    for max_points in 1..=unbounded + 2 {
        let plan = Plan::new(default_grid(), point(4, 4, 256), max_points, None).unwrap();
        let mut calls = 0;
        let tuning = tune::search(plan, |p| {
            calls += 1;
            Ok(made_up(peaked(p), 1_000.0))
        });
        assert_eq!(calls, tuning.tried.len());
        assert_eq!(tuning.tried.len(), max_points.min(unbounded));
        assert_eq!(tuning.cut_short, max_points < unbounded, "{max_points}");
    }
    assert!(Plan::new(default_grid(), point(4, 4, 256), 0, None).is_err());
}

#[test]
fn the_plan_adds_the_start_to_its_grid_and_refuses_empty_or_zero_values() {
    let plan = Plan::new(
        Grid {
            shards: vec![2, 1, 2],
            slots: vec![8, 1],
            trip_batches: vec![64],
        },
        point(3, 4, 256),
        10,
        None,
    )
    .unwrap();
    assert_eq!(plan.grid.shards, [1, 2, 3]);
    assert_eq!(plan.grid.slots, [1, 4, 8]);
    assert_eq!(plan.grid.trip_batches, [64, 256]);
    let empty = Grid {
        slots: Vec::new(),
        ..small_grid()
    };
    assert!(Plan::new(empty, point(1, 1, 16), 10, None).is_err());
    assert!(Plan::new(small_grid(), point(1, 0, 16), 10, None).is_err());
}
