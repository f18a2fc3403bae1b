//! `ferry-load compare`, the default: the per-key systems one after another
//! under the same load on one store.

use std::time::Duration;

use clap::Args;

use crate::base::duration::parse_duration;
use crate::systems::{Keying, Settings, SystemKind, UnkeyedKind};

use super::comparison::{describe, Compared, Comparison, ListArgs};
use super::engine::{EngineArgs, TripArgs};
use super::load::LoadArgs;
use super::output::OutputArgs;
use super::scenarios::{EventTimeArgs, FaultArgs, OverloadArgs};
use super::store::StoreArgs;

/// The measured time per system without `--duration`.
const DURATION: Duration = Duration::from_secs(4);

/// Compare Ferry with a single-lock design, batch-aint-one and no batching
/// (the default)
///
/// Every system talks to the same store (--store: simulated, PostgreSQL or
/// Redis): per key a version and a value; per batch one read and one
/// conditional write, each one round trip (of --store-rtt, on the sim). A
/// write from a stale version is a conflict, counted and retried. Systems
/// run one after another under the same load; after each, the store is read
/// back. The table shows each one's throughput, mean batch size, latency
/// percentiles and counts. Exits non-zero if any input was lost, ferry saw a
/// conflict, or a read-back found other inputs than those answered with
/// success.
///
/// Durations are a number and a unit: 500us, 2ms, 1.5s (or 0).
#[derive(Clone, Debug, Args)]
pub struct CompareArgs {
    /// Systems to run, in order [default:
    /// ferry,ferry-trips,single-lock,batch-aint-one,multi-key,unbatched]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub compare: Vec<String>,

    /// The shard counts and rounds.
    #[command(flatten)]
    pub list: ListArgs,

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

    /// The overload scenario.
    #[command(flatten)]
    pub overload: OverloadArgs,

    /// ferry-withdraw's max_queue_time: an input waiting this long unsent is
    /// handed back expired [default: nine tenths of --timeout, so that it
    /// goes before its caller does]
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, help_heading = "Overload")]
    pub max_queue_time: Option<Duration>,

    /// The event-time scenario.
    #[command(flatten)]
    pub event_time: EventTimeArgs,

    /// Faults at a real store.
    #[command(flatten)]
    pub faults: FaultArgs,

    /// Where the results also go.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl CompareArgs {
    /// Runs the comparison: `Ok(false)` if a run lost inputs, ferry
    /// conflicted, or a read-back did not match.
    pub fn run(self) -> Result<bool, String> {
        self.check()?;
        let systems = self.systems()?;
        let sampler = self.load.sampler()?;
        let load = self.load.load(sampler, self.duration(), &self.overload);
        self.store.run_on(self.load.keys, |store| {
            Comparison {
                keying: Keying::Keyed,
                systems,
                shard_counts: self.engine.shard_counts(&self.list.sweep_shards),
                rounds: self.list.rounds,
                settings: self.settings(),
                load,
                keys: self.load.keys,
                faults: self.faults.prepare(store)?,
                event_time: self.event_time.clone(),
                heading: self.describe(),
                output: self.output.clone(),
            }
            .run(store)
        })
    }

    /// `--duration`, or 4s.
    pub fn duration(&self) -> Duration {
        self.load.duration(DURATION)
    }

    /// Every limit, and the scenarios' flags together.
    pub fn check(&self) -> Result<(), String> {
        let timeout = self.overload.timeout;
        self.load.check(self.duration(), timeout)?;
        self.list.check(&self.engine)?;
        self.trips.check()?;
        self.event_time
            .check(timeout.is_some() || self.load.per_call > 1)?;
        self.overload.check(&self.store)?;
        if self.max_queue_time.is_some_and(|t| t.is_zero()) {
            return Err("--timeout and --max-queue-time must be more than 0".to_string());
        }
        self.store.check(self.engine.runtime)?;
        self.faults.check(&self.store, self.duration())?;
        self.systems().map(drop)
    }

    /// The systems `--compare` names, or the default ones (with
    /// ferry-withdraw under `--timeout`).
    pub fn systems(&self) -> Result<Vec<Compared>, String> {
        let mut systems = if self.compare.is_empty() && self.overload.timeout.is_some() {
            SystemKind::KNOWN.map(Compared::Keyed).to_vec()
        } else if self.compare.is_empty() {
            SystemKind::ALL.map(Compared::Keyed).to_vec()
        } else {
            self.compare
                .iter()
                .map(|name| keyed(name))
                .collect::<Result<_, String>>()?
        };
        systems.dedup();
        Ok(systems)
    }

    /// The systems' settings from the flags.
    fn settings(&self) -> Settings {
        Settings {
            max_queue_time: self
                .max_queue_time
                .or(self.overload.timeout.map(|timeout| timeout.mul_f64(0.9))),
            retry_unknown: self.faults.retry_unknown,
            fence: self.faults.fence(),
            ..self.engine.settings(&self.list.sweep_shards, &self.trips)
        }
    }

    /// What is run, as the heading says it.
    pub fn describe(&self) -> String {
        let keys = self.load.describe_keys();
        let duration = self.duration();
        let described = describe(&keys, &self.load, &self.store, &self.engine, duration);
        described + &self.overload.describe() + &self.faults.describe()
    }
}

/// The per-key system of `name`; an unkeyed one's name is refused naming
/// the subcommand that runs it.
fn keyed(name: &str) -> Result<Compared, String> {
    name.parse()
        .map(Compared::Keyed)
        .map_err(|problem| match name.parse::<UnkeyedKind>() {
            Ok(_) => format!("{problem}; `{name}` is compared by `ferry-load unkeyed`"),
            Err(_) => problem,
        })
}
