//! `ferry-load unkeyed`: the unkeyed systems one after another under the
//! same load on one store.

use std::time::Duration;

use clap::Args;

use crate::systems::{Keying, Settings, UnkeyedKind};

use super::comparison::{describe, Compared, Comparison, ListArgs};
use super::engine::{EngineArgs, TripArgs};
use super::load::LoadArgs;
use super::output::OutputArgs;
use super::scenarios::{EventTimeArgs, OverloadArgs};
use super::store::StoreArgs;

/// The measured time per system without `--duration`.
const DURATION: Duration = Duration::from_secs(4);

/// Compare unkeyed batching: ferry's Batcher, batch-aint-one on one key and
/// a single-lock FIFO
///
/// One stream with no key, up to --max-in-flight-batches batches in flight
/// per shard, each as full as waiting inputs allow: batcher
/// (ferry::Batcher), batch-aint-one (every input on one key, which may run
/// as many batches at once as batcher has slots), single-lock-fifo (one
/// FIFO behind one mutex, --max-in-flight-batches workers per shard each
/// taking up to --max-batch-size inputs). Unkeyed systems ignore the key
/// each input draws. An unkeyed batch is a read and an unconditional
/// append on the store, the same two round trips as a keyed batch, and
/// never conflicts. Exits non-zero if any input was lost or a read-back
/// found other inputs than those answered with success.
///
/// Durations are a number and a unit: 500us, 2ms, 1.5s (or 0).
#[derive(Clone, Debug, Args)]
pub struct UnkeyedArgs {
    /// Systems to run, in order [default:
    /// batcher,batch-aint-one,single-lock-fifo]
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

    /// The overload scenario.
    #[command(flatten)]
    pub overload: OverloadArgs,

    /// Where the results also go.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl UnkeyedArgs {
    /// Runs the comparison: `Ok(false)` if a run lost inputs or a
    /// read-back did not match.
    pub fn run(self) -> Result<bool, String> {
        self.check()?;
        let systems = self.systems()?;
        let sampler = self.load.sampler()?;
        let load = self.load.load(sampler, self.duration(), &self.overload);
        self.store.run_on(self.load.keys, |store| {
            Comparison {
                keying: Keying::Unkeyed,
                systems,
                shard_counts: self.engine.shard_counts(&self.list.sweep_shards),
                rounds: self.list.rounds,
                settings: self.settings(),
                load,
                keys: self.load.keys,
                faults: None,
                event_time: EventTimeArgs::default(),
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

    /// Every limit, and the overload scenario's flags.
    pub fn check(&self) -> Result<(), String> {
        self.load.check(self.duration(), self.overload.timeout)?;
        self.list.check(&self.engine)?;
        self.overload.check(&self.store)?;
        self.store.check(self.engine.runtime)?;
        self.systems().map(drop)
    }

    /// The systems `--compare` names, or all three.
    pub fn systems(&self) -> Result<Vec<Compared>, String> {
        let mut systems: Vec<Compared> = if self.compare.is_empty() {
            UnkeyedKind::ALL.map(Compared::Unkeyed).to_vec()
        } else {
            self.compare
                .iter()
                .map(|name| name.parse().map(Compared::Unkeyed))
                .collect::<Result<_, String>>()
                .map_err(|problem| format!("--compare of `ferry-load unkeyed`: {problem}"))?
        };
        systems.dedup();
        Ok(systems)
    }

    /// The systems' settings from the flags (no trips among them).
    fn settings(&self) -> Settings {
        self.engine
            .settings(&self.list.sweep_shards, &TripArgs::default())
    }

    /// What is run, as the heading says it.
    pub fn describe(&self) -> String {
        let duration = self.duration();
        let described = describe("unkeyed", &self.load, &self.store, &self.engine, duration);
        described + &self.overload.describe()
    }
}
