//! `ferry-load tune`: the search of ferry-trips' settings (shards, slots,
//! trip size) on one store under one load.

use std::time::Duration;

use clap::Args;

use crate::base::duration::parse_duration;
use crate::report::tune::{Grid, Plan, Point};
use crate::run::tune;

use super::comparison::describe;
use super::engine::{EngineArgs, TripArgs};
use super::load::LoadArgs;
use super::output::OutputArgs;
use super::scenarios::OverloadArgs;
use super::store::StoreArgs;

/// The measured time per point without `--duration`.
const DURATION: Duration = Duration::from_secs(2);

/// Search ferry-trips' settings instead of comparing systems
///
/// A coordinate search: from --shards, --max-in-flight-trips and
/// --max-trip-batches (each value joins its list), one setting at a time
/// over its values (shards: 1 to the CPUs this process may use, or
/// --sweep-shards; --tune-slots; --tune-trip-batches) around the best point
/// so far, in passes until one finds nothing better, no point run twice, at
/// most --tune-points. Prints every point's throughput and p99, then the
/// best: the highest throughput with nothing lost, the read-back matching
/// and p99 within --tune-p99. --duration defaults to 2s a point. Exits 1 if
/// a point failed its checks or none met the budget.
///
/// Durations are a number and a unit: 500us, 2ms, 1.5s (or 0).
#[derive(Clone, Debug, Args)]
pub struct TuneArgs {
    /// The p99 latency budget; the best is the fastest point within it
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    pub tune_p99: Option<Duration>,

    /// Points measured at most
    #[arg(long, hide_short_help = true, value_name = "N", default_value_t = tune::DEFAULT_MAX_POINTS)]
    pub tune_points: usize,

    /// The shards tried [default: 1 to the CPUs this process may use]
    #[arg(long, value_name = "N,N,..", value_delimiter = ',')]
    pub sweep_shards: Vec<usize>,

    /// The slots (--max-in-flight-trips) tried
    #[arg(
        long,
        hide_short_help = true,
        value_name = "N,N,..",
        value_delimiter = ',',
        default_value = "1,2,4,8,16"
    )]
    pub tune_slots: Vec<usize>,

    /// The keys' batches per trip (--max-trip-batches) tried
    #[arg(
        long,
        hide_short_help = true,
        value_name = "N,N,..",
        value_delimiter = ',',
        default_value = "16,64,256,1024"
    )]
    pub tune_trip_batches: Vec<usize>,

    /// The load.
    #[command(flatten)]
    pub load: LoadArgs,

    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,

    /// The engine's settings.
    #[command(flatten)]
    pub engine: EngineArgs,

    /// The trips' limits.
    #[command(flatten)]
    pub trips: TripArgs,

    /// Where the results also go.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl TuneArgs {
    /// Runs the search on the store, then its report; `Ok(false)` if a
    /// point failed its checks or none met the budget.
    pub fn run(self) -> Result<bool, String> {
        self.check()?;
        let plan = self.plan()?;
        let sampler = self.load.sampler()?;
        let load = self
            .load
            .load(sampler, self.duration(), &OverloadArgs::default());
        let heading = self.describe();
        let settings = self.engine.settings(&self.sweep_shards, &self.trips);
        self.store.run_on(self.load.keys, |store| {
            tune::run_cli(
                &settings,
                &load,
                store,
                plan,
                &heading,
                self.output.json.as_deref(),
                self.output.plot.as_deref(),
            )
        })
    }

    /// `--duration`, or 2s.
    pub fn duration(&self) -> Duration {
        self.load.duration(DURATION)
    }

    /// Every limit, and the plan.
    pub fn check(&self) -> Result<(), String> {
        self.load.check(self.duration(), None)?;
        self.engine.check(&self.sweep_shards)?;
        self.trips.check()?;
        self.store.check(self.engine.runtime)?;
        self.plan().map(drop)
    }

    /// The plan: shards 1 to the CPUs (or --sweep-shards), the slots and
    /// trip sizes of --tune-slots and --tune-trip-batches, from the flags'
    /// settings (the CPUs, or the sweep's largest count).
    pub fn plan(&self) -> Result<Plan, String> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let shards = if self.sweep_shards.is_empty() {
            (1..=cpus).collect()
        } else {
            self.sweep_shards.clone()
        };
        let start_shards = self.engine.shards.unwrap_or(if shards.contains(&cpus) {
            cpus
        } else {
            shards.iter().copied().max().unwrap_or(cpus)
        });
        Plan::new(
            Grid {
                shards,
                slots: self.tune_slots.clone(),
                trip_batches: self.tune_trip_batches.clone(),
            },
            Point {
                shards: start_shards,
                slots: self.trips.max_in_flight_trips,
                trip_batches: self.trips.max_trip_batches,
            },
            self.tune_points,
            self.tune_p99,
        )
    }

    /// What is searched, as the heading says it.
    pub fn describe(&self) -> String {
        let keys = self.load.describe_keys();
        describe(
            &keys,
            &self.load,
            &self.store,
            &self.engine,
            self.duration(),
        )
        .replace(" per system", " per point")
    }
}
