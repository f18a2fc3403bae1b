//! `ferry-load tune`: a search of ferry-trips' settings under one store and load:
//! its shard count, its slots (trips in flight per shard,
//! `max_in_flight_trips`) and its keys' batches per trip
//! (`max_trip_batches`). Every point tried is one measured run
//! ([`crate::run::compare::run`]); the best is the one with the highest
//! throughput among those that lost nothing, whose read-back matched (and,
//! ferry being ferry, never conflicted) and, with a latency budget, whose
//! p99 is within it ([`crate::report::tune::verdict`]).
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
//! tune`: progress, then what [`crate::report::tune`] shows: the table of
//! every point, the verdict, `--json` and `--plot`.

use std::path::Path;

use crate::report::tune::{
    conclusion, header, json, millis, table, verdict, write_svg, Axis, Plan, Point, Tried, Tuning,
    Verdict,
};
use crate::report::{thousands, RunResult, StderrProgress};
use crate::sources::load::{Load, Progress};
use crate::store::{Store, StoreAddress};
use crate::systems::{Settings, SystemKind};

/// The slots (`--max-in-flight-trips`) tried by default.
pub const DEFAULT_SLOTS: [usize; 5] = [1, 2, 4, 8, 16];
/// The keys' batches per trip (`--max-trip-batches`) tried by default.
pub const DEFAULT_TRIP_BATCHES: [usize; 4] = [16, 64, 256, 1024];
/// Points measured at most by default: a full grid on 2 CPUs, and three
/// or four passes on a larger machine.
pub const DEFAULT_MAX_POINTS: usize = 40;

/// The coordinate search (see the module's documentation) of `plan`, each
/// point measured once by `measure`.
pub fn search(plan: Plan, mut measure: impl FnMut(Point) -> Result<RunResult, String>) -> Tuning {
    let mut tried = vec![Tried {
        point: plan.start,
        pass: 1,
        varied: None,
        outcome: measure(plan.start),
    }];
    let mut centre = plan.start;
    let mut passes = 1;
    let cut_short = loop {
        match pass(&plan, (passes, centre), &mut tried, &mut measure) {
            Pass::CutShort => break true,
            Pass::Ended(next) if next == centre => break false,
            Pass::Ended(next) => {
                centre = next;
                passes += 1;
            }
        }
    };
    Tuning {
        verdict: verdict(&tried, plan.p99_budget_us()),
        plan,
        tried,
        cut_short,
        passes,
    }
}

/// How a pass of the search ended.
enum Pass {
    /// Over every setting, at this centre.
    Ended(Point),
    /// At the point budget, with points left to try.
    CutShort,
}

/// Pass `number` from `centre`: each setting at each of its values with the
/// other two at the best point so far, measuring what `tried` lacks.
fn pass(
    plan: &Plan,
    (number, mut centre): (usize, Point),
    tried: &mut Vec<Tried>,
    measure: &mut impl FnMut(Point) -> Result<RunResult, String>,
) -> Pass {
    for axis in Axis::ALL {
        for &value in plan.grid.values(axis) {
            let point = centre.with(axis, value);
            if tried.iter().any(|earlier| earlier.point == point) {
                continue;
            }
            if tried.len() >= plan.max_points {
                return Pass::CutShort;
            }
            tried.push(Tried {
                point,
                pass: number,
                varied: Some(axis),
                outcome: measure(point),
            });
        }
        centre = match verdict(tried, plan.p99_budget_us()) {
            Verdict::Best(index) | Verdict::OverBudget { closest: index } => tried[index].point,
            Verdict::NoneValid => centre,
        };
    }
    Pass::Ended(centre)
}

/// `settings` with ferry-trips at `point`'s slots and trip size.
pub fn settings_at(settings: &Settings, point: Point) -> Settings {
    Settings {
        max_in_flight_trips: point.slots,
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

/// `ferry-load tune`: the search of `plan` on `store` under `load`, with
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
    eprintln!("ferry-load: {heading}");
    for line in header(&plan).lines() {
        eprintln!("ferry-load: {line}");
    }
    let tuning = search_aloud(settings, load, store, plan);
    print_report(&tuning, heading);
    let written = write_files(&tuning, store, heading, json_path, plot_path);
    let clean = tell_failures(&tuning);
    written?;
    Ok(clean)
}

/// [`tune`] with each run's progress on stderr (on one line rewritten in
/// place on a terminal) and each point's figures once it ran.
fn search_aloud(settings: &Settings, load: &Load, store: Store, plan: Plan) -> Tuning {
    let stderr = StderrProgress::open();
    let mut number = 0;
    search(plan, |point| {
        number += 1;
        let label = format!("#{number} {}", point.short());
        let ran = measure(settings, load, store, point, |progress| {
            stderr.show(&label, progress)
        });
        stderr.clear();
        tell_point(number, point, &ran);
        ran
    })
}

/// One point's figures, or why it has none, on stderr.
fn tell_point(number: usize, point: Point, ran: &Result<RunResult, String>) {
    match ran {
        Ok(run) => eprintln!(
            "#{number} {}: {} inputs/s, p99 {} ms, lost {}",
            point.flags(),
            thousands(run.throughput.round() as u64),
            millis(run.p99_us),
            run.lost
        ),
        Err(problem) => eprintln!("#{number} {}: {problem}", point.flags()),
    }
}

/// The header, the load, the table and the conclusion on stdout.
fn print_report(tuning: &Tuning, heading: &str) {
    println!();
    print!("{}", header(&tuning.plan));
    println!("load: {heading}");
    println!();
    print!("{}", table(tuning));
    println!();
    print!("{}", conclusion(tuning));
}

/// Each point that failed its checks on stderr; whether the search is
/// clean: no point failed and one met every condition.
fn tell_failures(tuning: &Tuning) -> bool {
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
    clean
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
        let text = json(tuning, &StoreAddress::shown_command_line(), store.kind())?;
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
