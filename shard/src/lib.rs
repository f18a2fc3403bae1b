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
//!   [`FerryError`], [`QueueConfig`], [`Order`], [`Rank`], [`Refused`],
//!   [`Runtime`], [`ShardId`], [`ShardStats`], [`key_hash`] (the one hash of
//!   a key), [`usable_cpus`] (the process's affinity set) and the bounds
//!   of a shard's time slice ([`MIN_SCHED_SLICE`], [`MAX_SCHED_SLICE`]).
//!
//! Inside, the crate is six layers, each a folder that names only its own
//! and those below it (`tests/layers.rs` checks): `value` (pure values),
//! `queue` (the pure disciplines `Lanes` and `Fifo` behind the `Queue`
//! seam), `answer` (the answer cells), `core` (`ShardCore`: slots, replies,
//! counts), `runtime` (the executor seam) and `thread` (intake, idle, the
//! loop, the handle). The hidden module `parts` lends some of those pieces
//! to tests, benchmarks and `ferry`'s shard types; it promises nothing.
//!
//! Most users want the crate `ferry` (the package `ferry-engine`).
// No unsafe code but the two system calls of `runtime/slice.rs` and the answer
// cell's shared memory (`answer/answer_cell.rs`, `answer/pool.rs`), which allow it for
// themselves alone.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod answer;
mod core;
mod queue;
mod runtime;
mod sync;
mod thread;
mod value;

pub use crate::answer::gather::Outcomes;
pub use crate::core::histogram::{Distribution, Summary};
pub use crate::core::stats::{Distributions, Kind, ShardStats};
pub use crate::runtime::choice::Runtime;
pub use crate::runtime::cpus::usable_cpus;
pub use crate::runtime::slice::{MAX_SCHED_SLICE, MIN_SCHED_SLICE};
pub use crate::thread::flush_door::Flushed;
pub use crate::thread::handle::{
    Answer, Bundle, LocalAnswer, Shard, ShardConfig, StartFailure, Starting,
};
pub use crate::value::batch_fn::BatchFn;
pub use crate::value::config::{ConfigError, QueueConfig};
pub use crate::value::error::{FerryError, Outcome};
pub use crate::value::hold::Hold;
pub use crate::value::key_hash::key_hash;
pub use crate::value::order::{Order, Rank};
pub use crate::value::refused::{Refusal, Refused};
pub use crate::value::shard_id::ShardId;
pub use crate::value::trip_fn::TripFn;

/// The pieces a shard is made of, for the crate's own tests (simulations,
/// models, loom checks), its micro-benchmark, `ferry-bench`'s baselines
/// and the engine's shard types. Hidden from the docs and outside any
/// promise: they change with the shard's insides, and a user reaches a
/// shard through [`Shard`]. Only what one of those users names is here;
/// the answer cell's shared-memory insides (its state words and sending
/// end) are not.
#[doc(hidden)]
pub mod parts {
    // `ferry` names these in its shards' types and starts.
    pub use crate::core::carry::{Carry, PerBatch, PerTrip};
    pub use crate::core::shard_core::{TripLimits, Waiter};
    pub use crate::queue::fifo::Fifo;
    pub use crate::queue::lanes::Lanes;
    pub use crate::queue::seam::Queue;
    // `ferry-bench`'s single-lock baseline drives `Lanes` by hand.
    pub use crate::queue::lanes::{Batch, LaneId};
    // The step-by-step tests (simulations, models, loom checks) and the
    // engine's allocation test reach the core, the intake and the answer
    // cells: only with the `internals` feature, which only their
    // dev-dependencies turn on.
    #[cfg(feature = "internals")]
    pub use self::internals::*;

    #[cfg(feature = "internals")]
    mod internals {
        pub use crate::answer::answer_cell::{answer_cell, Receiver, Unsent};
        pub use crate::answer::gather::{Deliveries, ToShard};
        pub use crate::core::ended::{BatchOutcome, Ended, TripOutcome};
        pub use crate::core::shard_core::{Bundled, Offer, Reply, ShardCore, Submission};
        pub use crate::queue::fifo::FifoBatch;
        pub use crate::queue::lanes::LaneState;
        pub use crate::thread::intake::Intake;
        pub use crate::value::nanos::Nanos;
    }
}
