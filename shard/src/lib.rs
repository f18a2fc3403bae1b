//! `ferry-shard`: the shard layer of Ferry.
//!
//! The crate `ferry` builds the engine on it, through one boundary:
//!
//! - [`Shard`]: the handle of one running shard (start with a batch
//!   function or, [`Shard::start_trips`], a trip function; submit, submit a
//!   [`Bundle`], submit from the shard itself, spawn, stats, close, join),
//!   with [`ShardConfig`], [`Starting`] and [`StartFailure`], the futures
//!   [`Answer`] and [`LocalAnswer`], and the stream [`Outcomes`] of a
//!   bundle's inputs;
//! - the value types the public API shows: [`BatchFn`], [`TripFn`],
//!   [`ConfigError`], [`FerryError`], [`QueueConfig`], [`Order`], [`Rank`],
//!   [`Refused`], [`Runtime`], [`ShardId`], [`ShardStats`], [`key_hash`]
//!   (the one hash of a key) and [`usable_cpus`] (the process's affinity
//!   set).
//!
//! Inside, the crate is six layers, each a folder that names only its own
//! and those below it (`tests/layers.rs` checks): `value` (pure values),
//! `queue` (the pure disciplines `Lanes` and `Fifo` behind the `Queue`
//! seam), `answer` (the answer cells), `core` (`ShardCore`: slots, replies,
//! counts), `runtime` (the executor seam) and `thread` (intake, idle, the
//! loop, the handle). The hidden module `parts` lends some of those pieces
//! to tests, benchmarks and `ferry`'s shard types; it promises nothing.
//!
//! Most users want the crate `ferry` (the package `ferry-engine`), which
//! starts one shard per core, routes each key to its shard by
//! [`key_hash`], and measures each input on the caller's thread. One shard
//! by hand, as `ferry` drives it:
//!
//! ```
//! use std::sync::Arc;
//! use ferry_shard::parts::{Lanes, Waiter};
//! use ferry_shard::{key_hash, Offer, Shard, ShardConfig, ShardId};
//!
//! // Shard 0 on tokio, unpinned, with the bounds `ferry` starts its shards with.
//! let config = ShardConfig::new(ShardId::new(0));
//! // The factory runs on the shard's thread and makes its batch function.
//! let factory = Arc::new(|_shard: ShardId| async {
//!     Ok::<_, String>(|key: u64, inputs: Vec<u64>| async move {
//!         Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
//!     })
//! });
//! // Keys u64, inputs u64, outputs u64, errors String, one lane per key
//! // (the queue disciplines, `Lanes` and `Fifo`, are in the hidden `parts`).
//! type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
//! let (shard, starting) = Keyed::start(config, factory)?;
//! starting.wait().expect("the factory made its batch function");
//!
//! // Key 6's hash, rank 0, no boundary value, weight 1.
//! let answer = shard
//!     .submit(Offer::new(key_hash(&6_u64), 6, 7, 0, 1))
//!     .map_err(|refusal| refusal.reason)?;
//! assert_eq!(futures::executor::block_on(answer), Ok(42));
//!
//! shard.close(); // refuses new inputs, sends what waits, then ends
//! shard.join();
//! assert_eq!(shard.stats().answered_ok, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
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
pub use crate::core::shard_core::Offer;
pub use crate::core::stats::{Distributions, Kind, ShardStats};
pub use crate::runtime::choice::Runtime;
pub use crate::runtime::cpus::usable_cpus;
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
/// models, loom checks), its micro-benchmark and the engine's shard types.
/// Hidden from the docs and outside any promise: they change with the
/// shard's insides, and a user reaches a shard through [`Shard`]. Only
/// what one of those users names is here; the answer cell's shared-memory
/// insides (its state words and sending end) are not.
#[doc(hidden)]
pub mod parts {
    // `ferry` names these in its shards' types.
    pub use crate::core::shard_core::Waiter;
    pub use crate::queue::fifo::Fifo;
    pub use crate::queue::lanes::Lanes;
    pub use crate::queue::seam::Queue;
    // The lanes' tests hand `Lanes::complete` the lane a batch came from.
    pub use crate::queue::lanes::LaneId;
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
        pub use crate::core::shard_core::{Bundled, Reply, ShardCore, Submission, TripLimits};
        pub use crate::queue::fifo::FifoBatch;
        pub use crate::queue::lanes::LaneState;
        pub use crate::thread::intake::Intake;
        pub use crate::value::nanos::Nanos;
    }
}
