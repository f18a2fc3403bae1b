//! `ferry-bench`: the `ferry-load` tool, which puts load on Ferry and on the
//! alternatives it is compared with, all talking to one store: simulated, or
//! a real PostgreSQL or Redis server.
//!
//! The crate is in layers, one folder each, lowest first; a layer names
//! only its own and those below it (`tests/layers.rs` checks it):
//!
//! - [`base`]: durations, CPU time, thread timing, child processes' lines;
//! - [`servers`]: private PostgreSQL, Redis and Kafka servers on loopback,
//!   started from the installed programs and stopped when dropped;
//! - [`scenarios`]: what a run does beyond load and the systems report to:
//!   store faults and the proxy that makes them, overload (a store that
//!   slows down, callers that give up), event time;
//! - [`store`]: the store (per key a version and a value, a read and a
//!   conditional write per batch), its connections and pools, the
//!   simulated one ([`store::sim`]) and the real ones;
//! - [`systems`]: ferry, single-lock, batch-aint-one and unbatched behind
//!   one trait, and the unkeyed batcher, batch-aint-one on one key and
//!   single-lock-fifo;
//! - [`sources`]: which key each input goes to, the load's callers, closed
//!   or open loop, and (feature `kafka`) a keyed Kafka topic consumed by a
//!   group of member processes;
//! - [`report`]: results, the progress line, the table and the JSON, the
//!   SVG pictures ([`report::svg`]: what they share; [`report::plot`]: the
//!   `--plot` picture), and what a search of settings found ([`report::tune`]);
//! - [`run`]: one system at one shard count from start to figures, the
//!   handover of keys between owners in separate processes, and the
//!   search of ferry-trips' settings ([`run::tune`]);
//! - [`cli`]: `ferry-load`'s command line, a subcommand each, and what each
//!   runs.
//!
//! ```no_run
//! use ferry_bench::run::compare as run;
//! use ferry_bench::sources::{dist, load};
//! use ferry_bench::{store, systems};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let store = store::Store::sim(1_000, Duration::from_millis(1)).unwrap();
//! let load = load::Load {
//!     mode: load::Mode::Closed { clients: 100 },
//!     generators: 1,
//!     sampler: Arc::new(dist::KeySampler::new(dist::KeyDist::Zipf { exponent: 1.0 }, 1_000).unwrap()),
//!     warmup: Duration::from_millis(200),
//!     duration: Duration::from_secs(1),
//!     drain_timeout: Duration::from_secs(5),
//!     seed: 1,
//!     timeout: None,
//!     slowdown: None,
//!     per_call: 1,
//! };
//! let settings = systems::Settings {
//!     max_batch_size: 64,
//!     max_batch_delay: Duration::ZERO,
//!     max_in_flight_batches: 64,
//!     max_waiting: 100_000,
//!     tokio_workers: 2,
//!     pin: Some(false),
//!     spin_before_park: Duration::ZERO,
//!     doze_before_park: Duration::ZERO,
//!     sched_slice: ferry::DEFAULT_SCHED_SLICE,
//!     runtime: ferry::Runtime::Auto,
//!     pool_connections: 2,
//!     max_queue_time: None,
//!     max_trip_batches: ferry::DEFAULT_MAX_TRIP_BATCHES,
//!     max_in_flight_trips: 4,
//!     retry_unknown: systems::DEFAULT_RETRY_UNKNOWN,
//!     fence: store::Fence::On,
//! };
//! let result = run::run(systems::SystemKind::Ferry, Some(2), 128, &settings, store, &load, |_| {}).unwrap();
//! assert_eq!(result.lost, 0);
//! assert!(result.read_back_matches());
//! ```
#![warn(missing_docs)]

// The layers, in their order above (`tests/layers.rs` checks that imports
// run downward only).
pub mod base;
pub mod report;
pub mod run;
pub mod scenarios;
pub mod servers;
pub mod sources;
pub mod store;
pub mod systems;
// The top layer: it may name every module above, and none names it.
pub mod cli;
