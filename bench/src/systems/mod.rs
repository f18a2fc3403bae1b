//! The systems `ferry-load` compares, behind one trait, all on the same
//! [`Store`]. Per key (`ferry-load compare`, [`SystemKind`]):
//!
//! - [`ferry`]: this engine;
//! - [`single_lock`]: the design Ferry grew from, ported: every key's lane
//!   in one [`KeyLanes`](key_lanes::KeyLanes) behind one mutex, workers
//!   shared by all keys, on tokio;
//! - [`batch_aint_one`]: the `batch-aint-one` crate, one batch per key;
//! - [`unbatched`]: one store round trip per input, serialised per key.
//!
//! Every keyed system's batch is the same
//! [`Connection::apply`](crate::store::Connection::apply): one read and one
//! conditional write for a whole batch. Ferry (and batcher) shards make one
//! connection each; the others share a [`Pool`](crate::store::Pool) of as
//! many connections as ferry has shards at its largest shard count.
//!
//! Unkeyed (`ferry-load unkeyed`, [`UnkeyedKind`]), one stream with no key,
//! many batches in flight at once:
//!
//! - [`batcher`]: this engine's [`ferry::Batcher`](::ferry::Batcher);
//! - [`batch_aint_one`] again, every input on one key, that key allowed as
//!   many batches at once as the batcher has slots;
//! - [`single_lock_fifo`]: one FIFO behind one mutex, shared workers.
//!
//! Every unkeyed system's batch is the same
//! [`Connection::apply_unkeyed`](crate::store::Connection::apply_unkeyed): a
//! read and an unconditional append, the same two round trips as a keyed
//! batch. The `key` those systems are handed by the load is ignored.

use std::fmt;
use std::future::Future;

use futures::stream::FuturesUnordered;
use futures::FutureExt;
use std::str::FromStr;
use std::time::Duration;

use crate::store::{Fence, Store};

pub mod batch_aint_one;
pub mod batcher;
pub mod ferry;
pub mod key_lanes;
mod locked;
mod lost_writes;
pub mod single_lock;
pub mod single_lock_fifo;
pub mod unbatched;

/// How one input ended, as the load generator counts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Applied by the store and answered with its output.
    Done,
    /// Answered with an error (the batch failed) that leaves nothing
    /// applied: never sent, refused by the store, or failed before its
    /// write. It holds the error as the system said it.
    Failed(String),
    /// Answered with an error that leaves its outcome at the store unknown:
    /// the connection failed after the write was sent
    /// ([`StoreError::Unknown`](crate::store::StoreError::Unknown)), or the
    /// system stopped with the batch in flight (ferry's `Aborted`). Applied
    /// or not, only reading the store back can tell; `ferry-load` never
    /// sends it again.
    Unknown,
    /// Answered unsent after waiting its system's longest queueing time
    /// (ferry's `max_queue_time`).
    Expired,
    /// Refused at once (a bound was reached, or the system is closed).
    Refused,
}

/// Batches a system started, and the inputs they carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchCounts {
    /// Batches started.
    pub batches: u64,
    /// Inputs sent in those batches.
    pub inputs: u64,
}

impl BatchCounts {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: BatchCounts) -> BatchCounts {
        BatchCounts {
            batches: self.batches - earlier.batches,
            inputs: self.inputs - earlier.inputs,
        }
    }

    /// Inputs per batch (0 when no batch ran).
    pub fn mean(self) -> f64 {
        if self.batches == 0 {
            0.0
        } else {
            self.inputs as f64 / self.batches as f64
        }
    }
}

/// How often a system's shards went to sleep, and how: the doze (a futex)
/// and the park (glommio's `io_uring` wait). Only ferry has shards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdleCounts {
    /// Dozes so far.
    pub dozes: u64,
    /// Parks so far.
    pub parks: u64,
}

impl IdleCounts {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: IdleCounts) -> IdleCounts {
        IdleCounts {
            dozes: self.dozes - earlier.dozes,
            parks: self.parks - earlier.parks,
        }
    }
}

/// A system under load. Its `submit` is called from the generator threads;
/// the returned future is polled there and must work on any executor.
pub trait System: Send + Sync + 'static {
    /// The future of one input's outcome.
    type Submit: Future<Output = Outcome> + Unpin + 'static;

    /// Submits `input` for `key`.
    fn submit(&self, key: u64, input: u64) -> Self::Submit;

    /// Hands `items` (key, input) over in one call, their outcomes as a
    /// stream of `(index in items, outcome)`. A system without batched
    /// intake submits each input on its own (the default).
    fn submit_many(&self, items: Vec<(u64, u64)>) -> Call<'_> {
        let each: FuturesUnordered<_> = items
            .into_iter()
            .enumerate()
            .map(|(index, (key, input))| self.submit(key, input).map(move |o| (index, o)))
            .collect();
        Box::pin(each)
    }

    /// Batches started so far and the inputs they carried; `None` when every
    /// batch is one input by construction. Read from
    /// [`engine_stats`](Self::engine_stats) unless a system counts its own.
    fn batch_counts(&self) -> Option<BatchCounts> {
        self.engine_stats().map(|total| BatchCounts {
            batches: total.batches,
            inputs: total.sent,
        })
    }

    /// Dozes and parks of the system's shards so far; `None` without
    /// shards of that kind. Read from [`engine_stats`](Self::engine_stats).
    fn idle_counts(&self) -> Option<IdleCounts> {
        self.engine_stats().map(|total| IdleCounts {
            dozes: total.dozes,
            parks: total.parks,
        })
    }

    /// The runtime of the system's shards; `None` without shards of that
    /// kind.
    fn runtime(&self) -> Option<::ferry::Runtime> {
        None
    }

    /// Why the shards run on tokio though `--runtime auto` was asked for,
    /// in the command line's words; `None` otherwise.
    fn runtime_reason(&self) -> Option<String> {
        None
    }

    /// The engine's own figures, `stats().total()`; `None` for a system
    /// that is not this engine.
    fn engine_stats(&self) -> Option<::ferry::ShardStats> {
        None
    }

    /// What a system of `ferry::entity` did at its store (its conflicts
    /// and lost writes, which the store's own counters do not see);
    /// `None` for every other system.
    fn entity_stats(&self) -> Option<::ferry::entity::StoreStats> {
        None
    }

    /// Refuses new inputs, finishes what was admitted, and stops the
    /// system's threads. Called once the load has ended.
    fn close(&mut self);
}

/// The outcomes of one [`System::submit_many`] call, as they come.
pub type Call<'a> = std::pin::Pin<Box<dyn futures::Stream<Item = (usize, Outcome)> + 'a>>;

/// The settings every system takes from the command line.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Inputs per batch at most.
    pub max_batch_size: usize,
    /// How long a partial batch may wait for more (ferry, single-lock).
    pub max_batch_delay: Duration,
    /// Batches in flight at once: per shard for ferry and batcher;
    /// single-lock and single-lock-fifo run this many workers, and unkeyed
    /// batch-aint-one allows its key this many batches, per shard of the
    /// largest shard count measured.
    pub max_in_flight_batches: usize,
    /// Waiting inputs at most: per shard for ferry and batcher, in total for
    /// single-lock and single-lock-fifo, per key for batch-aint-one (in
    /// total, unkeyed).
    pub max_waiting: usize,
    /// Tokio worker threads for single-lock, single-lock-fifo and
    /// batch-aint-one.
    pub tokio_workers: usize,
    /// Pin ferry's (or batcher's) shards (`Some(true)`, to the first
    /// `shards` CPUs of the process's affinity set, when it has that many),
    /// leave them unpinned (`Some(false)`), or let the engine choose
    /// (`None`: pinned when they take every CPU).
    pub pin: Option<bool>,
    /// How long an idle ferry or batcher shard polls before it dozes.
    pub spin_before_park: Duration,
    /// How long an idle ferry or batcher shard then dozes before it parks.
    pub doze_before_park: Duration,
    /// The time slice a ferry or batcher shard's thread asks Linux for.
    pub sched_slice: Duration,
    /// The runtime of ferry's (or batcher's) shards (tokio whatever is
    /// asked, with a real store).
    pub runtime: ::ferry::Runtime,
    /// Store connections shared by the batches of a system without shards
    /// (single-lock, batch-aint-one, unbatched, single-lock-fifo): as many
    /// as ferry (or batcher) has, one per shard, at its largest shard
    /// count. The sim has one, whatever this says.
    pub pool_connections: usize,
    /// `ferry-withdraw`'s `max_queue_time` (`None`: unset).
    pub max_queue_time: Option<Duration>,
    /// Keys' batches per trip at most (`ferry-trips`); `multi-key` takes
    /// up to this many times `max_batch_size` (key, input) pairs a batch,
    /// as many inputs as one trip can carry.
    pub max_trip_batches: usize,
    /// Trips in flight at once per `ferry-trips` shard; `multi-key` runs
    /// this many workers per shard of the largest shard count measured.
    pub max_in_flight_trips: usize,
    /// How long a ferry batch whose write's outcome was lost retries it
    /// before its callers get the unknown outcome (zero: at once). Only
    /// systems that keep a key's batches one at a time can look for a lost
    /// write (see [`crate::store::resolve`]); the others answer it unknown.
    pub retry_unknown: Duration,
    /// Whether a lost write is looked for before it is sent again (and a
    /// handover's write holds the owner epoch).
    pub fence: Fence,
}

/// How long a ferry batch retries a lost write by default
/// (`--retry-unknown`): longer than a store's restart takes.
pub const DEFAULT_RETRY_UNKNOWN: Duration = Duration::from_secs(10);

/// A message of the engine's in the command line's words: the engine names
/// its runtimes as the library's `Runtime` values, the command line as
/// `--runtime` flags.
///
/// ```
/// use ferry_bench::systems::in_flags;
///
/// assert_eq!(
///     in_flags("or use Runtime::Tokio (Runtime::Auto does so by itself)"),
///     "or use `--runtime tokio` (`--runtime auto` does so by itself)"
/// );
/// ```
pub fn in_flags(message: &str) -> String {
    message
        .replace("Runtime::Tokio", "`--runtime tokio`")
        .replace("Runtime::Glommio", "`--runtime glommio`")
        .replace("Runtime::Auto", "`--runtime auto`")
}

/// What a comparison runs: per-key batching (`ferry-load compare`) or one
/// unkeyed stream (`ferry-load unkeyed`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Keying {
    /// Per-key systems ([`SystemKind`]), batches of one key each.
    #[default]
    Keyed,
    /// Unkeyed systems ([`UnkeyedKind`]), batches of whatever waits.
    Unkeyed,
}

impl Keying {
    /// Its name: `keyed` or `unkeyed`.
    pub fn name(self) -> &'static str {
        match self {
            Keying::Keyed => "keyed",
            Keying::Unkeyed => "unkeyed",
        }
    }
}

impl fmt::Display for Keying {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Keying {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        [Keying::Keyed, Keying::Unkeyed]
            .into_iter()
            .find(|keying| keying.name() == text)
            .ok_or_else(|| format!("`{text}`: unknown mode (keyed, unkeyed)"))
    }
}

/// The systems by name, as `--compare` spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SystemKind {
    /// This engine.
    Ferry,
    /// This engine, shedding what nobody waits for: `withdraw_on_drop` and
    /// `max_queue_time` (for the overload scenario).
    FerryWithdraw,
    /// This engine with a trip function: many keys' batches in one request.
    FerryTrips,
    /// Every key's lane behind one mutex, shared workers.
    SingleLock,
    /// The `batch-aint-one` crate.
    BatchAintOne,
    /// One round trip per input.
    Unbatched,
    /// The DataLoader way: unkeyed batches of (key, input) pairs, each one
    /// request for all its keys, several in flight, the same key possibly
    /// in two at once (its conflicts retried).
    MultiKey,
}

impl SystemKind {
    /// Every system, in the order they are run by default.
    pub const ALL: [SystemKind; 6] = [
        SystemKind::Ferry,
        SystemKind::FerryTrips,
        SystemKind::SingleLock,
        SystemKind::BatchAintOne,
        SystemKind::MultiKey,
        SystemKind::Unbatched,
    ];

    /// Every system `--compare` knows: [`ALL`](Self::ALL) and
    /// `ferry-withdraw`.
    pub const KNOWN: [SystemKind; 7] = [
        SystemKind::Ferry,
        SystemKind::FerryWithdraw,
        SystemKind::FerryTrips,
        SystemKind::SingleLock,
        SystemKind::BatchAintOne,
        SystemKind::MultiKey,
        SystemKind::Unbatched,
    ];

    /// The name used by `--compare`, the table and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            SystemKind::Ferry => "ferry",
            SystemKind::FerryWithdraw => "ferry-withdraw",
            SystemKind::FerryTrips => "ferry-trips",
            SystemKind::SingleLock => "single-lock",
            SystemKind::BatchAintOne => "batch-aint-one",
            SystemKind::Unbatched => "unbatched",
            SystemKind::MultiKey => "multi-key",
        }
    }
}

impl fmt::Display for SystemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SystemKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        SystemKind::KNOWN
            .into_iter()
            .find(|kind| kind.name() == text)
            .ok_or_else(|| {
                let known: Vec<&str> = SystemKind::KNOWN.iter().map(|kind| kind.name()).collect();
                format!("`{text}`: unknown system ({})", known.join(", "))
            })
    }
}

/// The unkeyed systems by name, as `--compare` of `ferry-load unkeyed`
/// spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnkeyedKind {
    /// This engine's [`ferry::Batcher`](::ferry::Batcher).
    Batcher,
    /// The `batch-aint-one` crate on one key.
    BatchAintOne,
    /// One FIFO behind one mutex, shared workers.
    SingleLockFifo,
}

impl UnkeyedKind {
    /// Every unkeyed system, in the order they are run by default.
    pub const ALL: [UnkeyedKind; 3] = [
        UnkeyedKind::Batcher,
        UnkeyedKind::BatchAintOne,
        UnkeyedKind::SingleLockFifo,
    ];

    /// The name used by `--compare`, the table and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            UnkeyedKind::Batcher => "batcher",
            UnkeyedKind::BatchAintOne => "batch-aint-one",
            UnkeyedKind::SingleLockFifo => "single-lock-fifo",
        }
    }
}

impl fmt::Display for UnkeyedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for UnkeyedKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        UnkeyedKind::ALL
            .into_iter()
            .find(|kind| kind.name() == text)
            .ok_or_else(|| {
                let hint = match text.parse::<SystemKind>() {
                    Ok(SystemKind::Ferry) => {
                        "; ferry batches per key, its unkeyed form is `batcher`"
                    }
                    Ok(SystemKind::SingleLock) => {
                        "; single-lock batches per key, its unkeyed form is `single-lock-fifo`"
                    }
                    Ok(_) => "; it is compared by `ferry-load compare`",
                    Err(_) => "",
                };
                format!(
                    "`{text}` is not an unkeyed system (batcher, batch-aint-one, single-lock-fifo){hint}"
                )
            })
    }
}

/// The multi-threaded tokio runtime of a system without shards: `workers`
/// threads named `name`, with timers, and with I/O when `store` is a real
/// one (its connections' reactor). On the sim there is no I/O driver, as
/// before real stores existed, so the sim's figures are unchanged.
pub(crate) fn tokio_runtime(
    name: &str,
    workers: usize,
    store: Store,
) -> Result<tokio::runtime::Runtime, String> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .worker_threads(workers)
        .thread_name(name)
        .enable_time();
    if store.is_real() {
        builder.enable_io();
    }
    builder
        .build()
        .map_err(|err| format!("{name}: tokio could not start: {err}"))
}

/// The outputs of a batch of `count` inputs that started from `version`:
/// each input gets the version its write produced.
pub fn outputs(version: u64, count: u64) -> Vec<u64> {
    (version + 1..=version + count).collect()
}

/// [`outputs`] for the batch `inputs`, written over the inputs in their own
/// vector: a batch (or trip) function that answers this way hands its
/// shard back the vector it was given, which the shard keeps for the next
/// batch's inputs, so a batch of ferry's costs no allocation and no free.
pub fn outputs_over(mut inputs: Vec<u64>, version: u64) -> Vec<u64> {
    let count = inputs.len() as u64;
    for (output, place) in inputs.iter_mut().zip(1..=count) {
        *output = version + place;
    }
    inputs
}
