//! `ferry-shard`: the shard layer of Ferry.
//!
//! The crate `ferry` builds the engine on it, through one boundary:
//!
//! - [`Shard`]: the handle of one running shard (start, submit, submit a
//!   [`Bundle`], submit from the shard itself, spawn, stats, close, join),
//!   with [`ShardConfig`], [`Starting`] and [`StartFailure`], the futures
//!   [`Answer`] and [`LocalAnswer`], and the stream [`Outcomes`] of a
//!   bundle's inputs;
//! - the value types the public API shows: [`BatchFn`], [`ConfigError`],
//!   [`FerryError`], [`LanesConfig`], [`Order`], [`Rank`], [`Refused`],
//!   [`Runtime`], [`ShardId`], [`ShardStats`], [`key_hash`] (the one hash of
//!   a key), [`usable_cpus`] (the process's affinity set) and the bounds
//!   of a shard's time slice ([`MIN_SCHED_SLICE`], [`MAX_SCHED_SLICE`]).
//!
//! [`parts`] holds the pieces a shard is made of — the pure queues
//! ([`Lanes`](parts::Lanes) per key, [`Fifo`](parts::Fifo) unkeyed) behind
//! the [`Queue`](parts::Queue) seam, the runtime-free
//! [`ShardCore`](parts::ShardCore), the [`Intake`](parts::Intake) — public
//! so that they can be tested step by step and measured on their own;
//! `ferry` uses none of them but the two queue types and their `Queue` and
//! `Waiter` bounds, to name its shards.
//!
//! Most users want the crate `ferry` (the package `ferry-engine`).
// No unsafe code but the two system calls of `slice.rs` and the answer
// cell's shared memory (`answer_cell.rs`, `pool.rs`), which allow it for
// themselves alone.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod answer_cell;
mod batch_fn;
mod batch_run;
mod carry;
mod clock;
mod config;
mod core;
mod cpus;
mod error;
mod executor;
mod fifo;
mod flush;
mod flush_door;
mod gather;
mod handle;
mod histogram;
mod hold;
mod idle;
mod intake;
mod key_hash;
mod lane_index;
mod lanes;
mod local;
mod longest;
#[cfg(feature = "metrics")]
mod metrics;
mod nanos;
mod observe;
mod on_glommio;
mod on_tokio;
mod order;
mod pool;
mod queue;
mod refused;
mod runtime;
mod shard_id;
mod shard_loop;
mod slice;
mod stats;
mod sync;
mod tokio_context;
mod trace;
mod trip_fn;

pub use crate::core::Outcome;
pub use batch_fn::BatchFn;
pub use config::{ConfigError, LanesConfig};
pub use cpus::usable_cpus;
pub use error::FerryError;
pub use flush_door::Flushed;
pub use gather::Outcomes;
pub use handle::{
    Answer, Bundle, LocalAnswer, Shard, ShardConfig, SpawnTask, StartFailure, Starting,
};
pub use histogram::{Distribution, Summary};
pub use hold::Hold;
pub use idle::DOZE_LOOK_EVERY;
pub use key_hash::key_hash;
pub use order::{Order, Rank};
pub use refused::{Refusal, Refused};
pub use runtime::Runtime;
pub use shard_id::ShardId;
pub use slice::{MAX_SCHED_SLICE, MIN_SCHED_SLICE};
pub use stats::{Distributions, Kind, ShardStats};
pub use trip_fn::TripFn;

/// A shard of per-key batching: one lane per key.
pub type KeyedShard<K, I, O, E> = Shard<parts::Lanes<K, parts::Waiter<I, O, E>>, I, O, E>;

/// A shard of unkeyed batching: one stream in admission order.
pub type UnkeyedShard<I, O, E> = Shard<parts::Fifo<parts::Waiter<I, O, E>>, I, O, E>;

/// The pieces a shard is made of, for step-by-step tests, simulations and
/// micro-benchmarks. The engine reaches a shard only through [`Shard`].
pub mod parts {
    pub use crate::answer_cell::{
        answer_cell, local_answer_cell, Local, Receiver, Sender, Shared, Unsent, Word,
    };
    pub use crate::carry::{Carry, PerBatch, PerTrip};
    pub use crate::core::{
        BatchOutcome, Bundled, Dispatch, DispatchOf, Ended, FlushReply, Offer, Reply, ShardCore,
        Submission, TripDispatch, TripDispatchOf, TripHeld, TripLimits, TripOutcome, Waiter,
    };
    pub use crate::fifo::{Fifo, FifoBatch, FifoItems};
    pub use crate::flush::Generations;
    pub use crate::gather::{Deliveries, GatherReply, Gathering, ToShard};
    pub use crate::intake::Intake;
    pub use crate::lanes::{Batch, BatchItems, LaneId, LaneState, Lanes};
    pub use crate::nanos::Nanos;
    pub use crate::queue::{Queue, Taken};
}
