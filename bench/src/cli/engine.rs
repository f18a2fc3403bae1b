//! The engine's options, shared by the runs that start systems (`compare`,
//! `unkeyed`, `tune`): shards and where they run, how they idle, batch
//! limits; and the trips' limits (`compare`, `tune`).

use std::time::Duration;

use clap::Args;

use crate::base::duration::parse_duration;
use crate::store::Fence;
use crate::systems::{Settings, DEFAULT_RETRY_UNKNOWN};

/// The shards, batches and queues of ferry's engine (and the systems
/// compared with it).
#[derive(Clone, Debug, Args)]
#[command(next_help_heading = "Engine")]
pub struct EngineArgs {
    /// Ferry (or batcher) shards [default: the engine's, one per CPU this
    /// process may use]
    ///
    /// Threads, placed by the scheduler; with --pin, each pinned to one CPU
    /// of this process's affinity set (as taskset or a container's cpuset
    /// gives it) when that set has enough CPUs
    #[arg(long, value_name = "N")]
    pub shards: Option<usize>,

    /// Inputs per batch at most (every batching system)
    #[arg(long, value_name = "B", default_value_t = 64)]
    pub max_batch_size: usize,

    /// How long a partial batch waits for more inputs (ferry, single-lock;
    /// batcher, single-lock-fifo)
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "0")]
    pub max_batch_delay: Duration,

    /// Batches in flight at once per ferry (or batcher) shard
    ///
    /// Single-lock and
    /// single-lock-fifo run this many workers, and unkeyed batch-aint-one
    /// allows its key this many batches, per shard (of the largest shard
    /// count measured)
    #[arg(long, value_name = "M", default_value_t = 256)]
    pub max_in_flight_batches: usize,

    /// Waiting inputs at most: per shard for ferry and batcher, in total for
    /// single-lock and single-lock-fifo, per key for batch-aint-one (in total
    /// when unkeyed)
    #[arg(
        long,
        hide_short_help = true,
        value_name = "Q",
        default_value_t = 1_000_000
    )]
    pub max_waiting: usize,

    /// The runtime of ferry's (or batcher's) shards: auto, glommio or tokio
    ///
    /// auto: glommio where it can start, else tokio (a container without
    /// io_uring, a low locked-memory limit), the report saying why. With a
    /// real --store, tokio, so that its client's I/O stays on the shard's
    /// own thread
    #[arg(long, value_name = "auto|glommio|tokio", default_value = "auto", value_parser = parse_runtime)]
    pub runtime: ferry::Runtime,

    /// Leave ferry's (or batcher's) shards unpinned (the engine's default)
    #[arg(long, hide_short_help = true, conflicts_with = "pin")]
    pub no_pin: bool,

    /// Pin ferry's (or batcher's) shards, one to each of the first CPUs of
    /// this process's affinity set, whatever their number (up to the CPUs)
    #[arg(long, hide_short_help = true)]
    pub pin: bool,

    /// How long a ferry (or batcher) shard that ran out of work keeps looking
    /// for more (yielding its CPU between looks) before it dozes: no wake-up
    /// needed for what arrives meanwhile, for CPU time nobody else wanted
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "50us")]
    pub spin_before_park: Duration,

    /// How long a ferry (or batcher) shard then dozes (blocked on a futex,
    /// woken by input or a store answer with one system call) before it parks
    /// in glommio, whose sleep and wake-up cost far more
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "2ms")]
    pub doze_before_park: Duration,

    /// The time slice each ferry (or batcher) shard's thread asks Linux for
    /// while its rounds answer many inputs (6.12 or later; 100us to 100ms, or
    /// 0 for the kernel's own): short, so that a generator woken by an answer
    /// on a shared core waits for the shard's round to end instead of
    /// preempting it
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "100us")]
    pub sched_slice: Duration,

    /// Worker threads of the tokio runtime used by single-lock,
    /// single-lock-fifo and batch-aint-one
    #[arg(long, hide_short_help = true, value_name = "T", default_value_t = 2)]
    pub tokio_workers: usize,
}

/// The trips' limits: how many keys' batches one trip carries, and how
/// many trips a shard has in flight.
#[derive(Clone, Debug, Args)]
#[command(next_help_heading = "Trips")]
pub struct TripArgs {
    /// Keys' batches per trip at most (ferry-trips); multi-key's batches
    /// hold up to this many times --max-batch-size inputs
    #[arg(long, hide_short_help = true, value_name = "N", default_value_t = ferry::DEFAULT_MAX_TRIP_BATCHES)]
    pub max_trip_batches: usize,

    /// Trips in flight at once per ferry-trips shard; multi-key runs this
    /// many workers per shard (of the largest shard count measured)
    #[arg(long, hide_short_help = true, value_name = "M", default_value_t = 4)]
    pub max_in_flight_trips: usize,
}

/// `--runtime`'s value.
fn parse_runtime(name: &str) -> Result<ferry::Runtime, String> {
    match name {
        "auto" => Ok(ferry::Runtime::Auto),
        "glommio" => Ok(ferry::Runtime::Glommio),
        "tokio" => Ok(ferry::Runtime::Tokio),
        other => Err(format!(
            "`{other}` is not a runtime: auto, glommio or tokio"
        )),
    }
}

impl EngineArgs {
    /// The limits that must be at least 1, and every shard count of
    /// `sweep` with `--shards`.
    pub fn check(&self, sweep: &[usize]) -> Result<(), String> {
        let at_least_one = [
            ("--max-batch-size", self.max_batch_size),
            ("--max-in-flight-batches", self.max_in_flight_batches),
            ("--max-waiting", self.max_waiting),
            ("--tokio-workers", self.tokio_workers),
        ];
        for (flag, value) in at_least_one {
            if value == 0 {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        if self.shards == Some(0) || sweep.contains(&0) {
            return Err("a shard count must be at least 1".to_string());
        }
        Ok(())
    }

    /// The shard counts a sharded system runs at: `sweep`, else
    /// `--shards`, else the engine's default.
    pub fn shard_counts(&self, sweep: &[usize]) -> Vec<usize> {
        if !sweep.is_empty() {
            return sweep.to_vec();
        }
        vec![self.shards.unwrap_or_else(ferry::default_shards)]
    }

    /// `--pin` or `--no-pin`, or neither (the engine's default).
    fn pin(&self) -> Option<bool> {
        match (self.pin, self.no_pin) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        }
    }

    /// The systems' settings, with as many store connections for the
    /// systems without shards as the largest of the shard counts of
    /// `sweep` ([`EngineArgs::shard_counts`]), the trips' limits of
    /// `trips`, and the fence on (what is left is for the caller to set).
    pub fn settings(&self, sweep: &[usize], trips: &TripArgs) -> Settings {
        let pool_connections = self.shard_counts(sweep).into_iter().max().unwrap_or(1);
        Settings {
            max_batch_size: self.max_batch_size,
            max_batch_delay: self.max_batch_delay,
            max_in_flight_batches: self.max_in_flight_batches,
            max_waiting: self.max_waiting,
            tokio_workers: self.tokio_workers,
            pin: self.pin(),
            spin_before_park: self.spin_before_park,
            doze_before_park: self.doze_before_park,
            sched_slice: self.sched_slice,
            runtime: self.runtime,
            pool_connections,
            max_queue_time: None,
            max_trip_batches: trips.max_trip_batches,
            max_in_flight_trips: trips.max_in_flight_trips,
            retry_unknown: DEFAULT_RETRY_UNKNOWN,
            fence: Fence::On,
        }
    }
}

impl TripArgs {
    /// Both limits are at least 1.
    pub fn check(&self) -> Result<(), String> {
        if self.max_trip_batches == 0 {
            return Err("--max-trip-batches must be at least 1".to_string());
        }
        if self.max_in_flight_trips == 0 {
            return Err("--max-in-flight-trips must be at least 1".to_string());
        }
        Ok(())
    }
}

impl Default for TripArgs {
    /// The engine's trip size and the tool's slots, for the runs without
    /// trips.
    fn default() -> TripArgs {
        TripArgs {
            max_trip_batches: ferry::DEFAULT_MAX_TRIP_BATCHES,
            max_in_flight_trips: 4,
        }
    }
}
