//! `ferry-load`: puts load on Ferry and the systems it is compared with, all
//! against one store (simulated, or a PostgreSQL or Redis server with
//! `--store`), and reports throughput, batch sizes and latency. With no
//! flags: the contended comparison (1,000 keys, zipf:1.0, 1 ms round trips,
//! 2,000 closed-loop clients), all four systems, in under 30 seconds. With
//! `--mode unkeyed`: `ferry::Batcher` against two unkeyed alternatives
//! instead, under the same load.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;

use ferry_bench::dist::{KeyDist, KeySampler};
use ferry_bench::duration::{format_duration, parse_duration};
use ferry_bench::event_time;
use ferry_bench::faults::{Fault, FaultKind, Faults};
use ferry_bench::handover;
use ferry_bench::load::{Load, Mode};
use ferry_bench::overload::Slowdown;
use ferry_bench::report::{self, JsonReport, RunResult};
use ferry_bench::store::{Fence, Store, StoreAddress};
use ferry_bench::systems::{Keying, Settings, SystemKind, UnkeyedKind};

/// Load-test Ferry against a store and compare it with a single-lock design,
/// batch-aint-one (a batching crate from crates.io, version 0.16, at most one
/// batch of a key in flight, on tokio), and no batching at all.
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
/// --mode unkeyed compares unkeyed batching instead (one stream, no key, many
/// batches in flight at once): ferry's Batcher against batch-aint-one on one
/// key and a single-lock FIFO. An unkeyed batch is a read and an
/// unconditional append on the store, the same two round trips as a keyed
/// batch, and never conflicts.
///
/// --source kafka (built with the feature `kafka`) is another mode with a
/// command line of its own: a Kafka topic consumed into PostgreSQL by a
/// consumer group, one member killed mid-run (`ferry-load --source kafka
/// --help`).
///
/// Durations are a number and a unit: 500us, 2ms, 1.5s (or 0).
#[derive(Debug, Parser)]
#[command(name = "ferry-load", version, max_term_width = 100)]
struct Args {
    /// What is compared: per-key batching (keyed) or one unkeyed stream
    ///
    /// keyed: per-key batching, at most one batch in flight
    /// per key: ferry, single-lock, batch-aint-one, unbatched. unkeyed: one
    /// stream with no key, up to --max-in-flight-batches batches in flight per shard,
    /// each as full as waiting inputs allow: batcher (ferry::Batcher),
    /// batch-aint-one (every input on one key, which may run as many batches
    /// at once as batcher has slots), single-lock-fifo (one FIFO behind one
    /// mutex, --max-in-flight-batches workers per shard each taking up to
    /// --max-batch-size inputs). Unkeyed systems ignore the key each input
    /// draws
    #[arg(long, value_name = "keyed|unkeyed", default_value = "keyed")]
    mode: Keying,

    /// Ferry (or batcher) shards [default: the engine's, one per CPU this
    /// process may use; with --handover, 2 per owner]
    ///
    /// Threads, placed by the scheduler; with --pin, each pinned to one CPU
    /// of this process's affinity set (as taskset or a container's cpuset
    /// gives it) when that set has enough CPUs
    #[arg(long, value_name = "N")]
    shards: Option<usize>,

    /// Run ferry (or batcher) once per shard count in this list, e.g. 1,2,4;
    /// the other systems run once. Overrides --shards
    #[arg(long, value_name = "N,N,..", value_delimiter = ',')]
    sweep_shards: Vec<usize>,

    /// Distinct keys, 0..K [default: 1000; with --handover, 32]
    #[arg(long, value_name = "K")]
    keys: Option<u64>,

    /// How inputs pick their key: uniform, or zipf:S (key k has weight 1/(k+1)^S)
    #[arg(long, value_name = "uniform|zipf:S", default_value = "zipf:1.0")]
    dist: KeyDist,

    /// Open loop: inputs per second over all generators, latency counted from
    /// each input's intended send time. 0 = closed loop with --clients
    #[arg(long, value_name = "INPUTS/S", default_value_t = 0.0)]
    rate: f64,

    /// Closed loop: clients, each with one input outstanding at a time
    #[arg(long, value_name = "C", default_value_t = 2_000)]
    clients: usize,

    /// Closed loop: inputs each client hands over in one call
    ///
    /// Each client waits for all of them before its next call (ferry and batcher: submit_many; the
    /// other systems submit each input on its own), like a stream
    /// consumer's poll. 1: one input at a time
    #[arg(long, value_name = "N", default_value_t = 1)]
    per_call: usize,

    /// Measured time per system (after the warm-up) [default: 4s; with
    /// --handover, the whole run: 6s; with --tune, per point: 2s]
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    duration: Option<Duration>,

    /// Load before measuring, per system
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "1s")]
    warmup: Duration,

    /// The store every system uses: the simulated one, or a PostgreSQL or
    /// Redis server
    ///
    /// sim: simulated in this process.
    /// postgres://USER@HOST:PORT/DATABASE: a PostgreSQL server, where
    /// ferry-load creates a table ferry_load_keys (key bigint primary key,
    /// version bigint, value bigint; rows 0..K-1 for the keys, -1 for the
    /// unkeyed stream), dropping one of that name first, and drops it at
    /// the end. redis://HOST:PORT[/DB]: a Redis server, where it writes hashes
    /// ferry-load:{k} (fields version, value) for k in 0..K and
    /// ferry-load:stream, and deletes them at the end. A real store is reset
    /// to zeros before each system's run and read back after it. On one,
    /// ferry's (and batcher's) shards run on tokio with one connection each;
    /// every other system shares a pool of as many connections as ferry has
    /// at its largest shard count. postgres or redis alone: a private server
    /// started for the run on 127.0.0.1 and stopped at the end
    #[arg(
        long,
        value_name = "sim|postgres[://…]|redis[://…]",
        default_value = "sim"
    )]
    store: StoreAddress,

    /// Round trip time of one request to the simulated store
    ///
    /// A batch makes two: read, write. 0 answers at once, measuring the systems' own
    /// overhead. A real store's round trip is its own
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "1ms")]
    store_rtt: Duration,

    /// What each request to the simulated store costs beyond its round
    /// trip, per key it touches: a batch's read and write pay it once, a
    /// trip's once per key (no cost without a round trip)
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "5us")]
    store_key_cost: Duration,

    /// Leave ferry's (or batcher's) shards unpinned (the engine's default)
    #[arg(long, hide_short_help = true, conflicts_with = "pin")]
    no_pin: bool,

    /// Pin ferry's (or batcher's) shards, one to each of the first CPUs of
    /// this process's affinity set, whatever their number (up to the CPUs)
    #[arg(long, hide_short_help = true)]
    pin: bool,

    /// How long a ferry (or batcher) shard that ran out of work keeps looking
    /// for more (yielding its CPU between looks) before it dozes: no wake-up
    /// needed for what arrives meanwhile, for CPU time nobody else wanted
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "50us")]
    spin_before_park: Duration,

    /// How long a ferry (or batcher) shard then dozes (blocked on a futex,
    /// woken by input or a store answer with one system call) before it parks
    /// in glommio, whose sleep and wake-up cost far more
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "2ms")]
    doze_before_park: Duration,

    /// The time slice each ferry (or batcher) shard's thread asks Linux for
    /// while its rounds answer many inputs (6.12 or later; 100us to 100ms, or
    /// 0 for the kernel's own): short, so that a generator woken by an answer
    /// on a shared core waits for the shard's round to end instead of
    /// preempting it
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "100us")]
    sched_slice: Duration,

    /// The runtime of ferry's (or batcher's) shards: auto, glommio or tokio
    ///
    /// auto: glommio where it can start, else tokio (a container without
    /// io_uring, a low locked-memory limit), the report saying why. With a
    /// real --store, tokio, so that its client's I/O stays on the shard's
    /// own thread
    #[arg(long, value_name = "auto|glommio|tokio", default_value = "auto", value_parser = parse_runtime)]
    runtime: ferry::Runtime,

    /// Inputs per batch at most (every batching system)
    #[arg(long, value_name = "B", default_value_t = 64)]
    max_batch_size: usize,

    /// How long a partial batch waits for more inputs (ferry, single-lock;
    /// batcher, single-lock-fifo)
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "0")]
    max_batch_delay: Duration,

    /// Batches in flight at once per ferry (or batcher) shard
    ///
    /// Single-lock and
    /// single-lock-fifo run this many workers, and unkeyed batch-aint-one
    /// allows its key this many batches, per shard (of the largest shard
    /// count measured)
    #[arg(long, value_name = "M", default_value_t = 256)]
    max_in_flight_batches: usize,

    /// Waiting inputs at most: per shard for ferry and batcher, in total for
    /// single-lock and single-lock-fifo, per key for batch-aint-one (in total
    /// when unkeyed)
    #[arg(
        long,
        hide_short_help = true,
        value_name = "Q",
        default_value_t = 1_000_000
    )]
    max_waiting: usize,

    /// Keys' batches per trip at most (ferry-trips); multi-key's batches
    /// hold up to this many times --max-batch-size inputs
    #[arg(long, hide_short_help = true, value_name = "N", default_value_t = ferry::DEFAULT_MAX_TRIP_BATCHES)]
    max_trip_batches: usize,

    /// Trips in flight at once per ferry-trips shard; multi-key runs this
    /// many workers per shard (of the largest shard count measured)
    #[arg(long, hide_short_help = true, value_name = "M", default_value_t = 4)]
    max_trips_in_flight: usize,

    /// Systems to run, in order, of those --mode names [default:
    /// ferry,ferry-trips,single-lock,batch-aint-one,multi-key,unbatched; unkeyed:
    /// batcher,batch-aint-one,single-lock-fifo]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    compare: Vec<String>,

    /// Also write the results as JSON to this file
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,

    /// Also draw the results as one SVG picture at this path
    ///
    /// Latency by percentile, a curve per system and shard count; with --sweep-shards
    /// of two or more counts, throughput by shards below it
    #[arg(long, value_name = "PATH.svg")]
    plot: Option<PathBuf>,

    /// Load generator threads (separate from shards and runtimes)
    #[arg(long, hide_short_help = true, value_name = "G", default_value_t = 2)]
    generators: usize,

    /// Worker threads of the tokio runtime used by single-lock,
    /// single-lock-fifo and batch-aint-one
    #[arg(long, hide_short_help = true, value_name = "T", default_value_t = 2)]
    tokio_workers: usize,

    /// After the measured time, how long to wait for outstanding inputs
    /// before counting them lost
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "10s")]
    drain_timeout: Duration,

    /// Open loop: inputs awaited at once per generator at most; past it,
    /// sending waits (and the wait counts in the latency)
    #[arg(
        long,
        hide_short_help = true,
        value_name = "N",
        default_value_t = 100_000
    )]
    outstanding_max: usize,

    /// Seed for key choice
    #[arg(long, hide_short_help = true, value_name = "SEED", default_value_t = 1)]
    seed: u64,

    /// The overload scenario: callers give up on an input not answered
    /// within D
    ///
    /// They drop its future; a closed-loop client sends its next
    /// one). Such inputs count as timed out, not lost. Adds ferry-withdraw
    /// to the default systems, and an overload section to the report
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    timeout: Option<Duration>,

    /// The event-time scenario: each input carries an event time up to D
    /// older than its sending (keyed systems, closed loop or --rate)
    ///
    /// Ferry ranks a key's inputs by it; the others keep arrival order.
    /// Reports, per system, the inputs that reached the store after one of
    /// the same key with a later event time
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    disorder: Option<Duration>,

    /// With --disorder: ferry holds each input until its event time plus
    /// LATENESS (Order::event_time), so that inputs out of order by less
    /// than that reach the store in order, at LATENESS of latency
    #[arg(long, value_name = "LATENESS", value_parser = parse_duration, allow_hyphen_values = true)]
    event_time: Option<Duration>,

    /// With --event-time: ferry refuses an input whose hold had already
    /// ended when it arrived (FerryError::Late, counted as refused) instead
    /// of sending it
    #[arg(long)]
    refuse_late: bool,

    /// The overload scenario: the simulated store's round trips take FACTOR
    /// times as long from AFTER into the measured window, for LENGTH (e.g.
    /// 10x@2s+2s)
    ///
    /// Reports goodput before, during and after, and recovery
    #[arg(long, value_name = "FACTORx@AFTER+LENGTH", value_parser = parse_slowdown)]
    store_slowdown: Option<Slowdown>,

    /// ferry-withdraw's max_queue_time: an input waiting this long unsent is
    /// handed back expired [default: nine tenths of --timeout, so that it
    /// goes before its caller does]
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    max_queue_time: Option<Duration>,

    /// A fault at the real --store during each system's run, AT after its
    /// measured window starts; repeatable
    ///
    /// restart@AT: the server stopped
    /// hard and started again by --restart-command, then waited for.
    /// kill-connections@AT: every client connection ended by the server
    /// (pg_terminate_backend, CLIENT KILL). stall:D@AT: the systems'
    /// traffic held for D (with any fault, their connections go through a
    /// loopback proxy of ferry-load's own). Reports, per system, the faults,
    /// the inputs answered with success, an error or an unknown outcome,
    /// the time from each fault to the first success after it, and the
    /// read-back verdict (every success applied, nothing applied twice)
    #[arg(long, value_name = "KIND@AT")]
    fault: Vec<Fault>,

    /// --fault restart@…: the command that stops the store's server hard
    /// and starts it again (run through sh -c; ferry-load then waits until
    /// the server answers again)
    #[arg(long, hide_short_help = true, value_name = "CMD")]
    restart_command: Option<String>,

    /// The handover scenario (docs/scale-out.md), on a real --store
    ///
    /// Owners in separate processes, each with its own engine (--shards tokio
    /// shards, one connection each), producing each key's next sequence
    /// numbers; --moves times a share of the keys moves to another owner.
    /// Owners write through ferry::entity: a key's state holds its owner
    /// epoch and its seqs, the fold refuses a stale owner's, and each write
    /// lands on the condition of the version read. After the run the store is
    /// read back: nothing acknowledged lost, nothing applied twice, each
    /// key's seqs exactly 1..=last_seq. Exits 1 if a check fails
    #[arg(long)]
    handover: bool,

    /// --handover: owners (processes)
    #[arg(long, hide_short_help = true, value_name = "N", default_value_t = 2)]
    instances: usize,

    /// --handover: moves during the run, spread evenly; each moves every
    /// other key of one owner to the next
    #[arg(long, hide_short_help = true, value_name = "N", default_value_t = 4)]
    moves: usize,

    /// --handover: how long after a key's new owner is assigned it the old
    /// owner is told it lost it (a zombie meanwhile, batches in flight). 0:
    /// revoke, flush, then assign (the graceful handover)
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "20ms")]
    handover_lag: Duration,

    /// Turn the fence off (the control): --handover leaves the owner epoch
    /// out of the write's condition, so a stale owner's writes land; with
    /// --fault, a ferry batch whose write's outcome was lost sends it again
    /// without looking whether it landed. The read-back then counts what
    /// was applied twice
    #[arg(long, hide_short_help = true)]
    no_fence: bool,

    /// How long a ferry batch whose write's outcome was lost (the
    /// connection broke after it was sent) retries it, fenced, before its
    /// callers get an unknown outcome; 0 answers unknown at once
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, default_value = "10s")]
    retry_unknown: Duration,

    /// --handover: inputs of one key submitted and not yet answered on its
    /// owner, at most
    #[arg(long, hide_short_help = true, value_name = "N", default_value_t = 4)]
    handover_outstanding: usize,

    /// Search ferry-trips' settings instead of comparing systems
    ///
    /// A coordinate search: from --shards, --max-trips-in-flight and
    /// --max-trip-batches (each value joins its list), one setting at a time
    /// over its values (shards: 1
    /// to the CPUs this process may use, or --sweep-shards; --tune-slots;
    /// --tune-trip-batches) around the best point so far, in passes until
    /// one finds nothing better, no point run twice, at most --tune-points.
    /// Prints every point's throughput and p99, then the best: the highest
    /// throughput with nothing lost, the read-back matching and p99 within
    /// --tune-p99. --duration defaults to 2s a point. Exits 1 if a point
    /// failed its checks or none met the budget
    #[arg(long)]
    tune: bool,

    /// --tune: the p99 latency budget; the best is the fastest point within it
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    tune_p99: Option<Duration>,

    /// --tune: points measured at most
    #[arg(long, hide_short_help = true, value_name = "N", default_value_t = ferry_bench::tune::DEFAULT_MAX_POINTS)]
    tune_points: usize,

    /// --tune: the slots (--max-trips-in-flight) tried
    #[arg(
        long,
        hide_short_help = true,
        value_name = "N,N,..",
        value_delimiter = ',',
        default_value = "1,2,4,8,16"
    )]
    tune_slots: Vec<usize>,

    /// --tune: the keys' batches per trip (--max-trip-batches) tried
    #[arg(
        long,
        hide_short_help = true,
        value_name = "N,N,..",
        value_delimiter = ',',
        default_value = "16,64,256,1024"
    )]
    tune_trip_batches: Vec<usize>,

    /// Run as owner N of a --handover run, told what to do on stdin (the
    /// coordinator starts these)
    #[arg(long, value_name = "N", hide = true)]
    handover_worker: Option<usize>,
}

fn parse_slowdown(text: &str) -> Result<Slowdown, String> {
    text.parse()
}

impl Args {
    /// `--keys`, or its default for the mode.
    fn keys(&self) -> u64 {
        self.keys.unwrap_or(if self.handover { 32 } else { 1_000 })
    }

    /// `--duration`, or its default for the mode.
    fn duration(&self) -> Duration {
        let default = match (self.handover, self.tune) {
            (true, _) => 6,
            (false, true) => 2,
            (false, false) => 4,
        };
        self.duration.unwrap_or(Duration::from_secs(default))
    }

    fn check(&self) -> Result<(), String> {
        let at_least_one = [
            ("--keys", self.keys() as usize),
            ("--max-batch-size", self.max_batch_size),
            ("--max-in-flight-batches", self.max_in_flight_batches),
            ("--max-waiting", self.max_waiting),
            ("--generators", self.generators),
            ("--tokio-workers", self.tokio_workers),
            ("--outstanding-max", self.outstanding_max),
            ("--max-trip-batches", self.max_trip_batches),
            ("--max-trips-in-flight", self.max_trips_in_flight),
        ];
        for (flag, value) in at_least_one {
            if value == 0 {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        if self.shards == Some(0) || self.sweep_shards.contains(&0) {
            return Err("a shard count must be at least 1".to_string());
        }
        if !(self.rate.is_finite() && self.rate >= 0.0) {
            return Err("--rate must be 0 (closed loop) or a positive number of inputs/s".into());
        }
        if self.rate == 0.0 && self.clients == 0 {
            return Err("--clients must be at least 1 in a closed loop (--rate 0)".to_string());
        }
        if self.per_call == 0 {
            return Err("--per-call must be at least 1".to_string());
        }
        if self.per_call > 1 && (self.rate > 0.0 || self.timeout.is_some()) {
            return Err("--per-call above 1 is for a closed loop without --timeout: a call's inputs are awaited together".to_string());
        }
        if self.duration().is_zero() {
            return Err("--duration must be more than 0".to_string());
        }
        self.check_event_time()?;
        if self.store_slowdown.is_some() && (self.store.is_real() || self.store_rtt.is_zero()) {
            return Err("--store-slowdown slows the simulated store's round trips: use it with --store sim and a --store-rtt above 0".to_string());
        }
        if self.timeout.is_some_and(|t| t.is_zero())
            || self.max_queue_time.is_some_and(|t| t.is_zero())
        {
            return Err("--timeout and --max-queue-time must be more than 0".to_string());
        }
        if self.store.is_real() && self.runtime == ferry::Runtime::Glommio {
            return Err(format!(
                "--store {}: a real store's client runs on tokio; use --runtime tokio (or auto)",
                self.store
            ));
        }
        self.check_faults()?;
        if self.handover || self.handover_worker.is_some() {
            return self.check_handover();
        }
        if self.tune {
            return self.check_tune();
        }
        self.systems()?;
        Ok(())
    }

    fn check_faults(&self) -> Result<(), String> {
        let restarts = self.fault.iter().any(|f| f.kind == FaultKind::Restart);
        if self.restart_command.is_some() && !restarts {
            return Err("--restart-command is for --fault restart@AT".to_string());
        }
        if self.fault.is_empty() {
            return Ok(());
        }
        if !self.store.is_real() {
            return Err("--fault injects faults at a real store: use it with --store postgres://… or --store redis://…".to_string());
        }
        if self.handover || self.tune || self.mode != Keying::Keyed {
            return Err(
                "--fault is for comparing systems in --mode keyed (not with --handover or --tune)"
                    .to_string(),
            );
        }
        if restarts
            && self
                .restart_command
                .as_deref()
                .is_none_or(|c| c.trim().is_empty())
        {
            return Err("--fault restart@…: ferry-load does not own the server; give the command that stops it hard and starts it again with --restart-command 'CMD' (run through sh -c)".to_string());
        }
        if let Some(late) = self.fault.iter().find(|f| f.at >= self.duration()) {
            return Err(format!(
                "--fault {late}: AT must fall within the measured window (--duration {})",
                format_duration(self.duration())
            ));
        }
        Ok(())
    }

    fn check_tune(&self) -> Result<(), String> {
        if self.mode != Keying::Keyed {
            return Err("--tune searches ferry-trips' settings: --mode keyed only".to_string());
        }
        if !self.compare.iter().all(|name| name == "ferry-trips") {
            return Err("--tune runs ferry-trips only: leave out --compare".to_string());
        }
        self.tune_plan().map(drop)
    }

    /// `--tune`'s plan: shards 1 to the CPUs (or --sweep-shards), the
    /// slots and trip sizes of --tune-slots and --tune-trip-batches, from
    /// the flags' settings (the CPUs, or the sweep's largest count).
    fn tune_plan(&self) -> Result<ferry_bench::tune::Plan, String> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let shards = if self.sweep_shards.is_empty() {
            (1..=cpus).collect()
        } else {
            self.sweep_shards.clone()
        };
        let start_shards = self.shards.unwrap_or(if shards.contains(&cpus) {
            cpus
        } else {
            shards.iter().copied().max().unwrap_or(cpus)
        });
        ferry_bench::tune::Plan::new(
            ferry_bench::tune::Grid {
                shards,
                slots: self.tune_slots.clone(),
                trip_batches: self.tune_trip_batches.clone(),
            },
            ferry_bench::tune::Point {
                shards: start_shards,
                slots: self.max_trips_in_flight,
                trip_batches: self.max_trip_batches,
            },
            self.tune_points,
            self.tune_p99,
        )
    }

    fn check_handover(&self) -> Result<(), String> {
        if !self.store.is_real() {
            return Err(
                "--handover needs a real store: --store postgres://… or --store redis://…"
                    .to_string(),
            );
        }
        if self.instances < 2 || self.handover_outstanding == 0 {
            return Err("--handover needs --instances of at least 2 and --handover-outstanding of at least 1".to_string());
        }
        Ok(())
    }

    /// The handover run's settings from the flags.
    fn handover_settings(&self) -> Result<handover::Settings, String> {
        Ok(handover::Settings {
            store: self.store.clone(),
            worker_program: std::env::current_exe()
                .map_err(|err| format!("could not find this program to start the owners: {err}"))?,
            instances: self.instances,
            keys: self.keys(),
            moves: self.moves,
            duration: self.duration(),
            lag: self.handover_lag,
            fence: self.fence(),
            shards: self.shards.unwrap_or(2),
            max_batch_size: self.max_batch_size,
            max_in_flight_batches: self.max_in_flight_batches,
            outstanding_per_key: self.handover_outstanding,
        })
    }

    fn fence(&self) -> Fence {
        if self.no_fence {
            Fence::Off
        } else {
            Fence::On
        }
    }

    /// The systems `--compare` names for `--mode`, or its default ones.
    fn systems(&self) -> Result<Vec<Compared>, String> {
        let mut systems = match (self.mode, self.compare.is_empty()) {
            (Keying::Keyed, true) if self.timeout.is_some() => {
                SystemKind::KNOWN.map(Compared::Keyed).to_vec()
            }
            (Keying::Keyed, true) => SystemKind::ALL.map(Compared::Keyed).to_vec(),
            (Keying::Unkeyed, true) => UnkeyedKind::ALL.map(Compared::Unkeyed).to_vec(),
            (Keying::Keyed, false) => self
                .compare
                .iter()
                .map(|name| {
                    name.parse().map(Compared::Keyed).map_err(|problem| {
                        match name.parse::<UnkeyedKind>() {
                            Ok(_) => format!("{problem}; `{name}` is compared with --mode unkeyed"),
                            Err(_) => problem,
                        }
                    })
                })
                .collect::<Result<_, String>>()?,
            (Keying::Unkeyed, false) => self
                .compare
                .iter()
                .map(|name| name.parse().map(Compared::Unkeyed))
                .collect::<Result<_, String>>()
                .map_err(|problem| format!("--compare with --mode unkeyed: {problem}"))?,
        };
        systems.dedup();
        Ok(systems)
    }

    fn shard_counts(&self) -> Vec<usize> {
        if !self.sweep_shards.is_empty() {
            return self.sweep_shards.clone();
        }
        vec![self.shards.unwrap_or_else(ferry::default_shards)]
    }

    fn describe(&self) -> String {
        let keys = match self.mode {
            Keying::Keyed => format!("{} keys {}", report::thousands(self.keys()), self.dist),
            Keying::Unkeyed => "unkeyed".to_string(),
        };
        let load = if self.rate > 0.0 {
            format!("open loop {} inputs/s", report::thousands(self.rate as u64))
        } else {
            let calls = match self.per_call {
                1 => String::new(),
                n => format!(", {n} inputs a call"),
            };
            format!(
                "closed loop {} clients{calls}",
                report::thousands(self.clients as u64)
            )
        };
        let store = match &self.store {
            StoreAddress::Sim => format!(
                "simulated store RTT {} + {} a key",
                format_duration(self.store_rtt),
                format_duration(self.store_key_cost)
            ),
            real => format!("store {real}"),
        };
        let mut described = format!(
            "{keys}, {store}, {load}, max batch {}, delay {}, {} per system after {} warm-up, {} generator threads",
            self.max_batch_size,
            format_duration(self.max_batch_delay),
            format_duration(self.duration()),
            format_duration(self.warmup),
            self.generators,
        );
        if let Some(timeout) = self.timeout {
            described += &format!(", callers give up after {}", format_duration(timeout));
        }
        if let Some(slow) = self.store_slowdown {
            described += &format!(", store slowdown {slow}");
        }
        if !self.fault.is_empty() {
            let faults: Vec<String> = self.fault.iter().map(Fault::to_string).collect();
            described += &format!(", faults {}", faults.join(", "));
        }
        described
    }
}

/// One system to run, of either mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compared {
    Keyed(SystemKind),
    Unkeyed(UnkeyedKind),
}

impl Compared {
    fn name(self) -> &'static str {
        match self {
            Compared::Keyed(kind) => kind.name(),
            Compared::Unkeyed(kind) => kind.name(),
        }
    }

    /// Whether it has shards, and so runs once per shard count.
    fn has_shards(self) -> bool {
        matches!(
            self,
            Compared::Keyed(SystemKind::Ferry | SystemKind::FerryWithdraw | SystemKind::FerryTrips)
                | Compared::Unkeyed(UnkeyedKind::Batcher)
        )
    }
}

fn main() -> ExitCode {
    if kafka_asked() {
        return kafka_main();
    }
    let mut args = Args::parse();
    if let Err(problem) = args.check() {
        eprintln!("ferry-load: {problem}");
        return ExitCode::from(2);
    }
    // `--store postgres|redis`: a private server, stopped when main returns.
    let _private = match args.store.start_private() {
        Ok(private) => private,
        Err(problem) => {
            eprintln!("ferry-load: {problem}");
            return ExitCode::from(2);
        }
    };
    let ran = match args.handover_worker {
        Some(_) => handover_worker(&args).map(|()| true),
        None if args.handover => run_handover(&args),
        None if args.tune => run_tune(&args),
        None => run(&args),
    };
    match ran {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(problem) => {
            eprintln!("ferry-load: {problem}");
            ExitCode::from(2)
        }
    }
}

/// Whether the command line asks for `--source kafka` (or is one of its
/// members), which has a command line of its own.
fn kafka_asked() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    args.iter()
        .any(|arg| arg == "--source=kafka" || arg.starts_with("--kafka-member"))
        || args
            .windows(2)
            .any(|pair| pair[0] == "--source" && pair[1] == "kafka")
}

/// `--source kafka`: exit 1 if ferry's fenced verdict failed.
#[cfg(feature = "kafka")]
fn kafka_main() -> ExitCode {
    use ferry_bench::kafka::cli::{self, KafkaArgs};
    match cli::main(&KafkaArgs::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(problem) => {
            eprintln!("ferry-load: {problem}");
            ExitCode::from(2)
        }
    }
}

#[cfg(not(feature = "kafka"))]
fn kafka_main() -> ExitCode {
    eprintln!("ferry-load: --source kafka needs the `kafka` feature: cargo build -p ferry-bench --release --features kafka");
    ExitCode::from(2)
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

/// `--handover`: the run, its report, and whether it passed.
fn run_handover(args: &Args) -> Result<bool, String> {
    let settings = args.handover_settings()?;
    eprintln!("ferry-load: {}", handover::report::describe(&settings));
    let report = handover::run(&settings)?;
    print!("{}", handover::report::text(&report));
    Ok(handover::report::passed(&report))
}

/// `--tune`: the search of ferry-trips' settings on the store, then its
/// report; `Ok(false)` if a point failed its checks or none met the budget.
fn run_tune(args: &Args) -> Result<bool, String> {
    let plan = args.tune_plan()?;
    let sampler = KeySampler::new(args.dist, args.keys())?;
    let store = Store::open(&args.store, args.keys(), args.store_rtt)?;
    if let Some(sim) = store.as_sim() {
        sim.set_key_cost(args.store_key_cost);
    }
    let heading = args.describe().replace(" per system", " per point");
    let ran = ferry_bench::tune::run_cli(
        &settings(args),
        &load(args, sampler),
        store,
        plan,
        &heading,
        args.json.as_deref(),
        args.plot.as_deref(),
    );
    let stopped = store.stop();
    let clean = ran?;
    stopped.map_err(|problem| format!("cleaning up: {problem}"))?;
    Ok(clean)
}

/// `--handover-worker N`: one owner of a handover run.
fn handover_worker(args: &Args) -> Result<(), String> {
    handover::serve(handover::WorkerSettings {
        store: args.store.clone(),
        shards: args.shards.unwrap_or(2),
        max_batch_size: args.max_batch_size,
        max_in_flight_batches: args.max_in_flight_batches,
        outstanding_per_key: args.handover_outstanding,
        fence: args.fence(),
    })
}

/// Opens the store, runs every system on it, and ends it (a real store's
/// table or keys removed) whatever the runs did; `Ok(false)` if a run lost
/// inputs, ferry conflicted, or a read-back did not match.
fn run(args: &Args) -> Result<bool, String> {
    let sampler = KeySampler::new(args.dist, args.keys())?;
    let store = Store::open(&args.store, args.keys(), args.store_rtt)?;
    if let Some(sim) = store.as_sim() {
        sim.set_key_cost(args.store_key_cost);
    }
    let ran = run_on(args, sampler, store);
    let stopped = store.stop();
    let clean = ran?;
    stopped.map_err(|problem| format!("cleaning up: {problem}"))?;
    Ok(clean)
}

impl Args {
    /// `--disorder`, `--event-time` and `--refuse-late` go together, in
    /// order, and with no other scenario whose inputs carry their own value.
    fn check_event_time(&self) -> Result<(), String> {
        if self.event_time.is_some() && self.disorder.is_none() {
            return Err(
                "--event-time holds inputs that carry an event time: add --disorder".to_string(),
            );
        }
        if self.refuse_late && self.event_time.is_none() {
            return Err(
                "--refuse-late refuses inputs past their hold: add --event-time".to_string(),
            );
        }
        let other = self.timeout.is_some()
            || self.per_call > 1
            || self.mode == Keying::Unkeyed
            || self.handover
            || self.tune;
        if self.disorder.is_some() && other {
            return Err("--disorder is for keyed systems without --timeout, --per-call, --handover or --tune".to_string());
        }
        Ok(())
    }
}

/// With `--disorder`: what `system`'s run applied out of order per key.
fn report_disorder(args: &Args, label: &str) {
    let Some(disorder) = args.disorder else {
        return;
    };
    let seen = event_time::disorder();
    if seen.applied == 0 {
        eprintln!("{label}: event time: not watched (its writes do not report their inputs)");
        return;
    }
    let hold = args.event_time.map_or("no hold".to_string(), |lateness| {
        format!("hold {}", format_duration(lateness))
    });
    let late = seen.late.filter(|_| args.event_time.is_some());
    let late = late.map_or(String::new(), |(admitted, refused)| {
        format!(
            "; arrived after their hold had ended: {} sent unheld, {} refused Late",
            report::thousands(admitted),
            report::thousands(refused)
        )
    });
    eprintln!(
        "{label}: event time (disorder up to {}, ferry: {hold}{}): {} of {} inputs applied out of order per key{late}",
        format_duration(disorder),
        if args.refuse_late { ", late refused" } else { "" },
        report::thousands(seen.out_of_order),
        report::thousands(seen.applied),
    );
}

/// Every system on `store`, then the report.
fn run_on(args: &Args, sampler: KeySampler, store: Store) -> Result<bool, String> {
    let settings = settings(args);
    let load = load(args, sampler);
    let systems = args.systems()?;
    let faults = Faults::prepare(args.fault.clone(), args.restart_command.clone(), store)?;
    eprintln!("ferry-load: {}", args.describe());
    note_idle_batcher_shards(args, &systems);
    note_oversubscribed_cpus(args, &systems);
    event_time::set_scenario(args.disorder, args.event_time, args.refuse_late);
    let mut runs: Vec<RunResult> = Vec::new();
    for system in systems {
        for shards in shard_runs(args, system) {
            event_time::watch(args.disorder.is_some(), args.keys());
            let run = run_one(system, shards, &settings, store, &load, faults.as_ref())?;
            report_disorder(args, &run.system);
            runs.push(run);
        }
    }
    report_runs(args, &runs);
    // Both files are tried, and the problems told, whichever file fails.
    let json = write_json(args, store, &runs);
    let plot = write_plot(args, &runs);
    let problems = report::problems(&runs);
    for problem in &problems {
        eprintln!("ferry-load: FAILED: {problem}");
    }
    json?;
    plot?;
    Ok(problems.is_empty())
}

/// The systems' settings from the flags.
fn settings(args: &Args) -> Settings {
    Settings {
        max_batch_size: args.max_batch_size,
        max_batch_delay: args.max_batch_delay,
        max_in_flight_batches: args.max_in_flight_batches,
        max_waiting: args.max_waiting,
        tokio_workers: args.tokio_workers,
        pin: match (args.pin, args.no_pin) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        spin_before_park: args.spin_before_park,
        doze_before_park: args.doze_before_park,
        sched_slice: args.sched_slice,
        runtime: args.runtime,
        pool_connections: args.shard_counts().iter().copied().max().unwrap_or(1),
        max_queue_time: args
            .max_queue_time
            .or(args.timeout.map(|timeout| timeout.mul_f64(0.9))),
        max_trip_batches: args.max_trip_batches,
        max_trips_in_flight: args.max_trips_in_flight,
        retry_unknown: args.retry_unknown,
        fence: args.fence(),
    }
}

/// The load from the flags.
fn load(args: &Args, sampler: KeySampler) -> Load {
    Load {
        mode: if args.rate > 0.0 {
            Mode::Open {
                rate: args.rate,
                outstanding_max: args.outstanding_max,
            }
        } else {
            Mode::Closed {
                clients: args.clients,
            }
        },
        generators: args.generators,
        sampler: Arc::new(sampler),
        warmup: args.warmup,
        duration: args.duration(),
        drain_timeout: args.drain_timeout,
        seed: args.seed,
        timeout: args.timeout,
        slowdown: args.store_slowdown,
        per_call: args.per_call,
    }
}

/// Says when the shards and the generator threads are more than the CPUs
/// this process may use: they then take turns on the CPUs, and a run
/// measures the scheduler as much as the systems (the CPU per input, split
/// by threads, still compares them).
fn note_oversubscribed_cpus(args: &Args, systems: &[Compared]) {
    if !systems.iter().any(|system| system.has_shards()) {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let shards_max = args.shard_counts().iter().copied().max().unwrap_or(1);
    if shards_max + args.generators > cpus {
        eprintln!(
            "ferry-load: note: {shards_max} shards and {} generator threads share the {cpus} CPUs this process may use: they take turns, so throughput depends on the scheduler as much as on the systems; compare the CPU per input (printed per system), or leave CPUs to the load with --shards",
            args.generators
        );
    }
}

/// Says when batcher will have shards no caller thread reaches.
fn note_idle_batcher_shards(args: &Args, systems: &[Compared]) {
    let shards_max = args.shard_counts().iter().copied().max().unwrap_or(1);
    if systems.contains(&Compared::Unkeyed(UnkeyedKind::Batcher)) && args.generators < shards_max {
        eprintln!(
            "ferry-load: note: batcher gives each caller thread one shard; with {} generator threads, {} of its {shards_max} shards get no work",
            args.generators,
            shards_max - args.generators
        );
    }
}

/// The shard counts `system` runs at (`None`: it has no shards).
fn shard_runs(args: &Args, system: Compared) -> Vec<Option<usize>> {
    if system.has_shards() {
        args.shard_counts().into_iter().map(Some).collect()
    } else {
        vec![None]
    }
}

/// One measured run, with a live progress line.
fn run_one(
    system: Compared,
    shards: Option<usize>,
    settings: &Settings,
    store: Store,
    load: &Load,
    faults: Option<&Faults>,
) -> Result<RunResult, String> {
    // The systems without shards get as many workers (or batches at once)
    // as the sharded one has slots at its largest shard count, and as many
    // store connections as it has shards.
    let single_lock_workers = settings.max_in_flight_batches * settings.pool_connections;
    let live = std::io::stderr().is_terminal();
    let name = system.name();
    let label = match shards {
        Some(1) => format!("{name} (1 shard)"),
        Some(n) => format!("{name} ({n} shards)"),
        None => name.to_string(),
    };
    let on_progress = |progress: &ferry_bench::load::Progress| {
        let line = report::progress_line(&label, progress);
        if live {
            eprint!("\r{line}\x1b[K");
            let _ = std::io::stderr().flush();
        } else {
            eprintln!("{line}");
        }
    };
    let result = match system {
        Compared::Keyed(kind) => ferry_bench::run::run_with_faults(
            kind,
            shards,
            single_lock_workers,
            settings,
            store,
            load,
            faults,
            on_progress,
        ),
        Compared::Unkeyed(kind) => ferry_bench::run::run_unkeyed(
            kind,
            shards,
            single_lock_workers,
            settings,
            store,
            load,
            on_progress,
        ),
    }?;
    if live {
        eprint!("\r\x1b[K");
    }
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
fn report_runs(args: &Args, runs: &[RunResult]) {
    println!();
    print!("{}", report::table(runs));
    print!("{}", report::legend(runs));
    println!();
    let reference = match args.mode {
        Keying::Keyed => SystemKind::Ferry.name(),
        Keying::Unkeyed => UnkeyedKind::Batcher.name(),
    };
    print!("{}", report::ratios(runs, reference));
    if args.mode == Keying::Keyed {
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

/// `--json`: the same results as a file.
fn write_json(args: &Args, store: Store, runs: &[RunResult]) -> Result<(), String> {
    let Some(path) = &args.json else {
        return Ok(());
    };
    let command = std::env::args()
        .map(|arg| match arg.parse::<StoreAddress>() {
            Ok(address) => address.to_string(),
            Err(_) => arg,
        })
        .collect::<Vec<_>>()
        .join(" ");
    let json = serde_json::to_string_pretty(&JsonReport {
        command,
        store: store.kind(),
        runs,
    })
    .map_err(|err| format!("could not encode the results: {err}"))?;
    std::fs::write(path, json + "\n")
        .map_err(|err| format!("could not write {}: {err}", path.display()))?;
    eprintln!("ferry-load: wrote {}", path.display());
    Ok(())
}

/// `--plot`: the results as an SVG picture, headed by what was run.
fn write_plot(args: &Args, runs: &[RunResult]) -> Result<(), String> {
    let Some(path) = &args.plot else {
        return Ok(());
    };
    ferry_bench::plot::write_svg(path, &args.describe(), runs)?;
    eprintln!("ferry-load: wrote {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The idle-stage and batch-size flags default to the engine's own
    /// defaults, so a run with no flags measures those as shipped (the
    /// in-flight and queue bounds are the tool's own; see
    /// docs/benchmarks.md).
    #[test]
    fn ferry_flags_default_to_the_engine_defaults() {
        let args = Args::try_parse_from(["ferry-load"]).expect("no flags parse");
        assert_eq!(args.spin_before_park, ferry::DEFAULT_SPIN_BEFORE_PARK);
        assert_eq!(args.doze_before_park, ferry::DEFAULT_DOZE_BEFORE_PARK);
        assert_eq!(args.sched_slice, ferry::DEFAULT_SCHED_SLICE);
        assert_eq!(
            args.max_batch_size,
            ferry::QueueConfig::DEFAULT_MAX_BATCH_SIZE
        );
    }

    #[test]
    fn calls_of_many_inputs_are_for_a_closed_loop_without_timeout() {
        let check = |argv: &[&str]| {
            let args = Args::try_parse_from(argv).expect("the flags parse");
            args.check()
        };
        assert_eq!(check(&["ferry-load", "--per-call", "500"]), Ok(()));
        for refused in [
            &["ferry-load", "--per-call", "0"][..],
            &["ferry-load", "--per-call", "2", "--rate", "1000"],
            &["ferry-load", "--per-call", "2", "--timeout", "50ms"],
        ] {
            let why = check(refused).expect_err("refused");
            assert!(why.contains("--per-call"), "{refused:?}: {why}");
        }
    }

    #[test]
    fn faults_need_a_real_store_a_restart_command_and_a_time_in_the_window() {
        let check = |argv: &[&str]| {
            let mut full = vec!["ferry-load", "--duration", "4s"];
            full.extend_from_slice(argv);
            Args::try_parse_from(full).expect("the flags parse").check()
        };
        let pg = ["--store", "postgres://ferry@127.0.0.1:5432/postgres"];
        let with = |more: &[&'static str]| [&pg[..], more].concat();
        assert_eq!(check(&with(&["--fault", "kill-connections@1s"])), Ok(()));
        assert_eq!(
            check(&with(&[
                "--fault",
                "restart@1s",
                "--fault",
                "stall:500ms@2s",
                "--restart-command",
                "systemctl restart postgresql"
            ])),
            Ok(())
        );
        for (argv, said) in [
            (vec!["--fault", "restart@1s"], "real store"),
            (with(&["--fault", "restart@1s"]), "--restart-command"),
            (with(&["--fault", "stall:100ms@4s"]), "measured window"),
            (with(&["--restart-command", "true"]), "--fault restart@AT"),
            (
                with(&["--fault", "kill-connections@1s", "--mode", "unkeyed"]),
                "--mode keyed",
            ),
        ] {
            let refused = check(&argv).expect_err("refused");
            assert!(refused.contains(said), "{argv:?}: {refused}");
        }
        assert!(Args::try_parse_from(["ferry-load", "--fault", "reboot@1s"]).is_err());
    }

    fn systems_of(argv: &[&str]) -> Result<Vec<&'static str>, String> {
        let args = Args::try_parse_from(argv).expect("the flags parse");
        args.check()?;
        Ok(args.systems()?.into_iter().map(Compared::name).collect())
    }

    #[test]
    fn each_mode_has_its_own_systems_and_refuses_the_other_modes() {
        assert_eq!(
            systems_of(&["ferry-load"]),
            Ok(vec![
                "ferry",
                "ferry-trips",
                "single-lock",
                "batch-aint-one",
                "multi-key",
                "unbatched"
            ])
        );
        assert_eq!(
            systems_of(&["ferry-load", "--mode", "unkeyed"]),
            Ok(vec!["batcher", "batch-aint-one", "single-lock-fifo"])
        );
        assert_eq!(
            systems_of(&[
                "ferry-load",
                "--mode",
                "unkeyed",
                "--compare",
                "single-lock-fifo,batcher"
            ]),
            Ok(vec!["single-lock-fifo", "batcher"])
        );
        let ferry = systems_of(&["ferry-load", "--mode", "unkeyed", "--compare", "ferry"]);
        assert!(
            ferry.as_ref().is_err_and(|p| p.contains("`batcher`")),
            "{ferry:?}"
        );
        let batcher = systems_of(&["ferry-load", "--compare", "batcher"]);
        assert!(
            batcher
                .as_ref()
                .is_err_and(|p| p.contains("--mode unkeyed")),
            "{batcher:?}"
        );
        assert!(Args::try_parse_from(["ferry-load", "--mode", "sideways"]).is_err());
    }
}
