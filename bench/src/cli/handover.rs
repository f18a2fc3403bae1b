//! `ferry-load handover`: keys moved between owner processes on a real
//! store, and the read-back's verdict; and, hidden, one owner
//! (`--handover-worker N`), which the run starts.

use std::time::Duration;

use clap::Args;

use crate::base::duration::parse_duration;
use crate::run::handover::{self, Settings, WorkerSettings};
use crate::store::{Fence, StoreAddress};

/// The handover scenario (docs/scale-out.md), on a real --store
///
/// Owners in separate processes, each with its own engine (--shards tokio
/// shards, one connection each), producing each key's next sequence
/// numbers; --moves times a share of the keys moves to another owner.
/// Owners write through ferry::entity: a key's state holds its owner epoch
/// and its seqs, the fold refuses a stale owner's, and each write lands on
/// the condition of the version read. After the run the store is read
/// back: nothing acknowledged lost, nothing applied twice, each key's seqs
/// exactly 1..=last_seq. Exits 1 if a check fails.
///
/// Durations are a number and a unit: 500us, 2ms, 1.5s (or 0).
#[derive(Clone, Debug, Args)]
pub struct HandoverArgs {
    /// The real store the owners write to: postgres://USER@HOST:PORT/DATABASE
    /// or redis://HOST:PORT[/DB]; postgres or redis alone: a private server
    /// started for the run on 127.0.0.1 and stopped at the end
    #[arg(long, value_name = "postgres[://…]|redis[://…]")]
    pub store: Option<StoreAddress>,

    /// Owners (processes)
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub instances: usize,

    /// Shards per owner
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub shards: usize,

    /// Distinct keys, 0..K
    #[arg(long, value_name = "K", default_value_t = 32)]
    pub keys: u64,

    /// Moves during the run, spread evenly; each moves every other key of
    /// one owner to the next
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub moves: usize,

    /// The whole run
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "6s")]
    pub duration: Duration,

    /// How long after a key's new owner is assigned it the old owner is
    /// told it lost it (a zombie meanwhile, batches in flight). 0: revoke,
    /// flush, then assign (the graceful handover)
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "20ms")]
    pub handover_lag: Duration,

    /// Inputs of one key submitted and not yet answered on its owner, at
    /// most
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub handover_outstanding: usize,

    /// Inputs per batch at most
    #[arg(long, hide_short_help = true, value_name = "B", default_value_t = 64)]
    pub max_batch_size: usize,

    /// Batches in flight at once per shard
    #[arg(long, hide_short_help = true, value_name = "M", default_value_t = 256)]
    pub max_in_flight_batches: usize,

    /// Turn the fence off (the control): the owner epoch is left out of the
    /// write's condition, so a stale owner's writes land. The read-back
    /// then counts what was applied twice
    #[arg(long)]
    pub no_fence: bool,

    /// Run as owner N of a handover run, told what to do on stdin (the
    /// coordinator starts these)
    #[arg(long, value_name = "N", hide = true)]
    pub handover_worker: Option<usize>,
}

impl HandoverArgs {
    /// The run, its report, and whether it passed; or, with
    /// `--handover-worker`, one owner until told to stop.
    pub fn run(self) -> Result<bool, String> {
        self.check()?;
        if self.handover_worker.is_some() {
            return handover::serve(self.worker_settings()?).map(|()| true);
        }
        let mut settings = self.settings()?;
        // `--store postgres|redis`: a private server for every owner,
        // stopped on return.
        let _private = settings.store.start_private()?;
        eprintln!("ferry-load: {}", handover::settings::describe(&settings));
        let report = handover::run(&settings)?;
        print!("{}", crate::report::handover::text(&report));
        Ok(crate::report::handover::passed(&report))
    }

    /// A real store, two owners or more, and every limit at least 1.
    pub fn check(&self) -> Result<(), String> {
        self.real_store()?;
        if self.instances < 2 || self.handover_outstanding == 0 {
            return Err(
                "handover needs --instances of at least 2 and --handover-outstanding of at least 1"
                    .to_string(),
            );
        }
        let at_least_one = [
            ("--shards", self.shards),
            ("--keys", self.keys as usize),
            ("--max-batch-size", self.max_batch_size),
            ("--max-in-flight-batches", self.max_in_flight_batches),
        ];
        for (flag, value) in at_least_one {
            if value == 0 {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        if self.duration.is_zero() {
            return Err("--duration must be more than 0".to_string());
        }
        Ok(())
    }

    /// `--store`, which must be a real one.
    fn real_store(&self) -> Result<StoreAddress, String> {
        match &self.store {
            Some(store) if store.is_real() => Ok(store.clone()),
            _ => Err(
                "handover needs a real store: --store postgres[://…] or --store redis[://…]"
                    .to_string(),
            ),
        }
    }

    fn fence(&self) -> Fence {
        if self.no_fence {
            Fence::Off
        } else {
            Fence::On
        }
    }

    /// The run's settings from the flags.
    fn settings(&self) -> Result<Settings, String> {
        Ok(Settings {
            store: self.real_store()?,
            worker_program: std::env::current_exe()
                .map_err(|err| format!("could not find this program to start the owners: {err}"))?,
            instances: self.instances,
            keys: self.keys,
            moves: self.moves,
            duration: self.duration,
            lag: self.handover_lag,
            fence: self.fence(),
            shards: self.shards,
            max_batch_size: self.max_batch_size,
            max_in_flight_batches: self.max_in_flight_batches,
            outstanding_per_key: self.handover_outstanding,
        })
    }

    /// One owner's settings from the flags.
    fn worker_settings(&self) -> Result<WorkerSettings, String> {
        Ok(WorkerSettings {
            store: self.real_store()?,
            shards: self.shards,
            max_batch_size: self.max_batch_size,
            max_in_flight_batches: self.max_in_flight_batches,
            outstanding_per_key: self.handover_outstanding,
            fence: self.fence(),
        })
    }
}
