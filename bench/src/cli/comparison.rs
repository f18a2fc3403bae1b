//! One comparison, `compare`'s or `unkeyed`'s: every system at each of its
//! shard counts on one store, one after another, a live progress line for
//! each, then the table and the sections after it.

use clap::Args;

use crate::base::duration::format_duration;
use crate::report::{self, RunResult, StderrProgress};
use crate::run::compare::{run_unkeyed, run_with_faults};
use crate::run::faults::Faults;
use crate::sources::load::{Load, Progress};
use crate::store::Store;
use crate::systems::{Keying, Settings, SystemKind, UnkeyedKind};

use super::engine::EngineArgs;
use super::load::LoadArgs;
use super::output::OutputArgs;
use super::scenarios::EventTimeArgs;
use super::store::StoreArgs;

/// One system to run, of either kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compared {
    /// A per-key system.
    Keyed(SystemKind),
    /// An unkeyed system.
    Unkeyed(UnkeyedKind),
}

impl Compared {
    /// Its name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Compared::Keyed(kind) => kind.name(),
            Compared::Unkeyed(kind) => kind.name(),
        }
    }

    /// Whether it has shards, and so runs once per shard count.
    pub fn has_shards(self) -> bool {
        matches!(
            self,
            Compared::Keyed(SystemKind::Ferry | SystemKind::FerryWithdraw | SystemKind::FerryTrips)
                | Compared::Unkeyed(UnkeyedKind::Batcher)
        )
    }
}

/// What one comparison runs, and how it reports.
pub struct Comparison {
    /// Per-key or unkeyed: which system the ratios are against.
    pub keying: Keying,
    /// The systems, in order.
    pub systems: Vec<Compared>,
    /// The shard counts each sharded system runs at.
    pub shard_counts: Vec<usize>,
    /// How many times the whole list runs, one system after another each
    /// time (at least 1).
    pub rounds: usize,
    /// The systems' settings.
    pub settings: Settings,
    /// The load each system gets.
    pub load: Load,
    /// The keys the load draws from.
    pub keys: u64,
    /// Faults at the store during each run.
    pub faults: Option<Faults>,
    /// The event-time scenario, if any.
    pub event_time: EventTimeArgs,
    /// What is run, as the heading says it.
    pub heading: String,
    /// Where the results also go.
    pub output: OutputArgs,
}

impl Comparison {
    /// Every system on `store`, then the report; `Ok(false)` if a run lost
    /// inputs, ferry conflicted, or a read-back did not match.
    pub fn run(&self, store: Store) -> Result<bool, String> {
        eprintln!("ferry-load: {}", self.heading);
        self.note_idle_batcher_shards();
        self.note_oversubscribed_cpus();
        self.event_time.set();
        let mut runs: Vec<RunResult> = Vec::new();
        for round in 1..=self.rounds {
            for &system in &self.systems {
                for shards in self.shard_runs(system) {
                    self.event_time.watch(self.keys);
                    let mut run = self.run_one(system, shards, self.round(round), store)?;
                    self.event_time.report(&run.system);
                    run.round = self.round(round);
                    runs.push(run);
                }
            }
        }
        self.report(&runs);
        // Both files are tried, and the problems told, whichever file fails.
        let written = self.output.write(store, &self.heading, &runs);
        let problems = report::problems(&runs);
        for problem in &problems {
            eprintln!("ferry-load: FAILED: {problem}");
        }
        written?;
        Ok(problems.is_empty())
    }

    /// How round `round` is named in the runs (`None` when there is only
    /// one).
    fn round(&self, round: usize) -> Option<usize> {
        (self.rounds > 1).then_some(round)
    }

    /// The largest shard count measured.
    fn shards_max(&self) -> usize {
        self.shard_counts.iter().copied().max().unwrap_or(1)
    }

    /// Says when the shards and the generator threads are more than the
    /// CPUs this process may use: they then take turns on the CPUs, and a
    /// run measures the scheduler as much as the systems (the CPU per
    /// input, split by threads, still compares them).
    fn note_oversubscribed_cpus(&self) {
        if !self.systems.iter().any(|system| system.has_shards()) {
            return;
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let shards_max = self.shards_max();
        if shards_max + self.load.generators > cpus {
            eprintln!(
                "ferry-load: note: {shards_max} shards and {} generator threads share the {cpus} CPUs this process may use: they take turns, so throughput depends on the scheduler as much as on the systems; compare the CPU per input (printed per system), or leave CPUs to the load with --shards",
                self.load.generators
            );
        }
    }

    /// Says when batcher will have shards no caller thread reaches.
    fn note_idle_batcher_shards(&self) {
        let shards_max = self.shards_max();
        let generators = self.load.generators;
        if self
            .systems
            .contains(&Compared::Unkeyed(UnkeyedKind::Batcher))
            && generators < shards_max
        {
            eprintln!(
                "ferry-load: note: batcher gives each caller thread one shard; with {generators} generator threads, {} of its {shards_max} shards get no work",
                shards_max - generators
            );
        }
    }

    /// The shard counts `system` runs at (`None`: it has no shards).
    fn shard_runs(&self, system: Compared) -> Vec<Option<usize>> {
        if system.has_shards() {
            self.shard_counts.iter().copied().map(Some).collect()
        } else {
            vec![None]
        }
    }

    /// One measured run, with a live progress line.
    fn run_one(
        &self,
        system: Compared,
        shards: Option<usize>,
        round: Option<usize>,
        store: Store,
    ) -> Result<RunResult, String> {
        // The systems without shards get as many workers (or batches at
        // once) as the sharded one has slots at its largest shard count,
        // and as many store connections as it has shards.
        let settings = &self.settings;
        let single_lock_workers = settings.max_in_flight_batches * settings.pool_connections;
        let stderr = StderrProgress::open();
        let label = report::run_label(system.name(), shards, round);
        let on_progress = |progress: &Progress| stderr.show(&label, progress);
        let (load, faults) = (&self.load, self.faults.as_ref());
        let result = match system {
            Compared::Keyed(kind) => run_with_faults(
                kind,
                shards,
                single_lock_workers,
                settings,
                store,
                load,
                faults,
                on_progress,
            ),
            Compared::Unkeyed(kind) => run_unkeyed(
                kind,
                shards,
                single_lock_workers,
                settings,
                store,
                load,
                on_progress,
            ),
        }?;
        stderr.clear();
        eprintln!(
            "{label}: {} inputs/s, mean batch {:.2}, p99 {} µs, lost {}",
            report::thousands(result.throughput as u64),
            result.mean_batch,
            report::micros(result.p99_us),
            result.lost
        );
        Ok(result)
    }

    /// The table and every section after it.
    fn report(&self, runs: &[RunResult]) {
        println!();
        if self.rounds == 1 {
            print!("{}", report::table(runs));
        } else {
            for round in 1..=self.rounds {
                let of_round: Vec<RunResult> = runs
                    .iter()
                    .filter(|run| run.round == Some(round))
                    .cloned()
                    .collect();
                println!("round {round} of {}:", self.rounds);
                print!("{}", report::table(&of_round));
            }
        }
        print!("{}", report::legend(runs));
        println!();
        print!("{}", report::round_medians(runs));
        let reference = match self.keying {
            Keying::Keyed => SystemKind::Ferry.name(),
            Keying::Unkeyed => UnkeyedKind::Batcher.name(),
        };
        print!("{}", report::ratios(runs, reference));
        if self.keying == Keying::Keyed {
            print!("{}", report::ratios(runs, SystemKind::FerryTrips.name()));
        }
        print!("{}", report::overload(runs));
        print!("{}", report::store_timing(runs));
        print!("{}", report::idle_stages(runs));
        print!("{}", report::engine_figures(runs));
        print!("{}", report::faults(runs));
        print!("{}", report::read_backs(runs));
        print!("{}", report::cpu_split(runs));
        print!("{}", report::server_cpu(runs));
    }
}

/// How a comparison runs its list of systems: at which shard counts, and
/// how many times over (`compare`'s and `unkeyed`'s).
#[derive(Clone, Debug, Args)]
pub struct ListArgs {
    /// Run the sharded systems (ferry, ferry-trips and ferry-withdraw;
    /// unkeyed, batcher) once per shard count in this list, e.g. 1,2,4; the
    /// other systems run once. Overrides --shards
    #[arg(long, value_name = "N,N,..", value_delimiter = ',')]
    pub sweep_shards: Vec<usize>,

    /// Run the whole list this many times, one system after another each
    /// round, so that a slow spell of the machine falls on every system
    /// alike: each round has its table, and each ratio is the median of
    /// the rounds' own
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub rounds: usize,
}

impl ListArgs {
    /// The sweep against the engine's settings, and `--rounds 0` refused.
    pub fn check(&self, engine: &EngineArgs) -> Result<(), String> {
        engine.check(&self.sweep_shards)?;
        if self.rounds == 0 {
            return Err("--rounds must be at least 1".to_string());
        }
        Ok(())
    }
}

/// What a run does, as its heading says it: `keys` (or `unkeyed`), the
/// store, the load, the batch limits, the times and the generators.
pub fn describe(
    keys: &str,
    load: &LoadArgs,
    store: &StoreArgs,
    engine: &EngineArgs,
    duration: std::time::Duration,
) -> String {
    format!(
        "{keys}, {}, {}, max batch {}, delay {}, {} per system after {} warm-up, {} generator threads",
        store.describe(),
        load.describe_loop(),
        engine.max_batch_size,
        format_duration(engine.max_batch_delay),
        format_duration(duration),
        format_duration(load.warmup),
        load.generators,
    )
}
