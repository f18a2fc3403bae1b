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
//! When keys are many and each has few inputs at a time, a key's batch
//! holds one input and batching one key saves nothing; a trip function
//! ([`Builder::start_trips`], [`TripFn`]) then carries many keys' batches
//! in one round trip, each key still in order and at most once in flight.
//! A shard's client that can break (a store restarting, a connection
//! dropped) is held by a [`Reconnect`], which makes it again.
//!
//! For one undifferentiated stream with no per-key guarantee, [`Batcher`]
//! batches on the same kind of shards: inputs in admission order, several
//! batches in flight per shard.
//!
//! The guarantees (one in flight per key, order, bounded memory, exactly one
//! outcome per input, clean close, local faults) are listed in
//! `docs/architecture.md` with the code that keeps each.
//!
//! # The value types
//!
//! Besides the handles ([`Engine`], [`Batcher`]), their builders and
//! futures, `ferry` re-exports the value types its API shows. What a submit
//! resolves to, [`Outcome`], is the output or a [`FerryError`]; a refusal
//! says why with [`Refused`] and hands the input back:
//!
//! ```
//! use ferry::{FerryError, Outcome, Refused};
//!
//! let refused: Outcome<&str, u32, String> =
//!     Err(FerryError::Refused { input: "x", reason: Refused::Full });
//! match refused {
//!     Err(FerryError::Refused { input, reason: Refused::Full }) => assert_eq!(input, "x"),
//!     other => panic!("{other:?}"),
//! }
//! let failed: FerryError<(), String> = FerryError::Failed("store unavailable".into());
//! assert_eq!(failed.to_string(), "the batch function failed: store unavailable");
//! ```
//!
//! An [`Order`] ranks a key's inputs, from a closure or from an
//! implementation of [`Rank`]:
//!
//! ```
//! use ferry::{Order, Rank};
//!
//! struct ByDay;
//! impl Rank<(i64, &'static str)> for ByDay {
//!     fn rank(&self, event: &(i64, &'static str)) -> i64 {
//!         event.0
//!     }
//! }
//! assert_eq!(Order::new(ByDay).rank(&(19_000, "deposit")), 19_000);
//! assert_eq!(Order::by(|day: &i64| *day).rank(&7), 7);
//! assert_eq!(Order::<u8>::arrival().rank(&7), 0);
//! ```
//!
//! The batch function implements [`BatchFn`]; a shard is named by a
//! [`ShardId`] and its figures are a [`ShardStats`] (listed, each with its
//! [`Kind`], in `ShardStats::FIGURES`; its distributions as a
//! [`Summary`] each, computed from a [`Distribution`] of
//! [`Distributions`]; see [`Stats`]); a setting that breaks
//! its rule is a [`ConfigError`]; [`QueueConfig`] holds a shard's bounds as
//! one value:
//!
//! ```
//! use ferry::{BatchFn, ConfigError, Kind, QueueConfig, ShardId, ShardStats};
//!
//! fn is_batch_fn<B: BatchFn<u64, u32, u32, String>>(_: &B) {}
//! let echo = |_key: u64, inputs: Vec<u32>| async move { Ok::<_, String>(inputs) };
//! is_batch_fn(&echo);
//!
//! let shard = ShardId::new(1);
//! assert_eq!((shard.index(), shard.to_string()), (1, "shard-1".to_string()));
//! let figures = ShardStats { admitted: 1, ..ShardStats::default() };
//! assert_eq!(figures.add(&figures).admitted, 2);
//! assert!(ShardStats::FIGURES.contains(&("admitted", Kind::Counter)));
//!
//! let bounds = QueueConfig { max_batch_size: 0, ..QueueConfig::default() };
//! let err: ConfigError = bounds.validate().unwrap_err();
//! assert_eq!(err.field, "max_batch_size");
//! ```
//!
//! # Observability
//!
//! [`Engine::stats`] (and [`Batcher::stats`]) reads every shard's gauges,
//! counters and distributions without a lock: batch size and weight, queue
//! time and batch time as a [`Summary`] each, merged over shards by
//! [`Stats::total`]. Two Cargo features, off by default and compiled out
//! when off:
//!
//! - `metrics`: the same figures through the `metrics` facade, as `ferry_*`
//!   series labelled by shard;
//! - `tracing`: a span per batch, and events for refusals and faults.
//!
//! `docs/operating.md` lists them and says what to watch.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod batcher;
mod config;
mod default_shards;
mod engine;
pub mod entity;
mod flush;
#[cfg(feature = "kafka")]
pub mod kafka;
mod outcomes;
mod reconnect;
mod route;
mod shards;
mod start;
mod start_error;
mod stats;
mod submit;

pub use batcher::Batcher;
pub use config::{
    BatcherBuilder, Builder, PerKey, Unkeyed, DEFAULT_DOZE_BEFORE_PARK, DEFAULT_INTAKE_CAPACITY,
    DEFAULT_MAX_IN_FLIGHT_BATCHES, DEFAULT_MAX_TRIP_BATCHES, DEFAULT_SCHED_SLICE,
    DEFAULT_SPIN_BEFORE_PARK, MAX_SCHED_SLICE, MIN_SCHED_SLICE,
};
pub use default_shards::default_shards;
pub use engine::Engine;
pub use flush::Flush;
pub use outcomes::Outcomes;
pub use reconnect::{Reconnect, Unreachable, DEFAULT_RECONNECT_FIRST, DEFAULT_RECONNECT_MAX};
pub use route::route;
pub use start_error::StartError;
pub use stats::{Distribution, Distributions, Stats, Summary};
pub use submit::{LocalSubmit, Submit};

pub use ferry_shard::{
    BatchFn, ConfigError, FerryError, Hold, Kind, Order, Outcome, QueueConfig, Rank, Refused,
    Runtime, ShardId, ShardStats, TripFn,
};

/// The README's example, compiled and run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
