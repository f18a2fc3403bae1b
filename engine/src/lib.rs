//! Ferry: per-key batching on a sharded, thread-per-core engine.
//!
//! A service calls [`Engine::submit`]`(key, input)` from any thread and awaits
//! that input's own outcome. Ferry groups each key's inputs into batches,
//! keeps **at most one batch in flight per key**, sends a key's waiting inputs
//! in **rank order**, and routes keys by `hash(key) % shards` to independent
//! single-threaded shards, each pinned to its own core (glommio) and owning
//! its lanes outright: no lock, no shared mutable state between shards.
//!
//! It suits entities limited by round trips rather than work — a stream, a
//! document, an account updated by a conditional read-modify-write — where
//! one round trip applies one update or twenty for about the same cost.
//!
//! ```
//! use ferry::{Engine, FerryError};
//!
//! // The batch function: one key, its inputs in order, one output per input.
//! // Typically one round trip to a store. It runs on a shard's own thread.
//! let engine: Engine<u64, i64, i64, String> = Engine::builder()
//!     .shards(2)
//!     .pin(false)
//!     .max_batch_size(64)
//!     .start(|_shard| |_account: u64, deltas: Vec<i64>| async move {
//!         let mut balance = 0;
//!         Ok::<_, String>(deltas.iter().map(|d| { balance += d; balance }).collect())
//!     })
//!     .unwrap();
//!
//! let balance = engine.submit_blocking(7, 100).unwrap();
//! assert_eq!(balance, 100);
//!
//! engine.close();
//! engine.join();
//! ```
//!
//! The guarantees (one in flight per key, order, bounded memory, exactly one
//! outcome per input, clean close, local faults) are listed in
//! `docs/architecture.md` with the code that keeps each.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod batcher;
mod config;
mod engine;
mod route;
mod shards;
mod stats;
mod submit;

pub use batcher::Batcher;
pub use config::{
    BatcherBuilder, Builder, PerKey, StartError, Unkeyed, DEFAULT_DOZE_BEFORE_PARK,
    DEFAULT_INTAKE_CAPACITY, DEFAULT_MAX_IN_FLIGHT_BATCHES, DEFAULT_SPIN_BEFORE_PARK,
};
pub use engine::Engine;
pub use route::route;
pub use stats::Stats;
pub use submit::{LocalSubmit, Submit};

pub use ferry_shard::{
    BatchFn, ConfigError, FerryError, LanesConfig, Order, Outcome, Rank, Refused, ShardId,
    ShardStats,
};

/// The README's example, compiled and run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExample;
