//! `ferry-bench`: the `ferry-load` tool, which puts load on Ferry and on the
//! alternatives it is compared with, all talking to one store: simulated, or
//! a real PostgreSQL or Redis server.
//!
//! - [`store`]: the store (per key a version and a value, a read and a
//!   conditional write per batch), its connections and pools, the
//!   simulated one ([`store::sim`], round trips timed by its own thread)
//!   and the real ones;
//! - [`dist`]: which key each input goes to;
//! - [`cpu`]: CPU time used by the process, for a cost per input;
//! - [`load`]: the generator threads, closed or open loop, and one run;
//! - [`systems`]: ferry, single-lock, batch-aint-one and unbatched behind
//!   one trait, and for `--mode unkeyed` batcher, batch-aint-one on one key
//!   and single-lock-fifo;
//! - [`handover`]: keys moving between owners in separate processes
//!   against a real store, fenced by an owner epoch, and the read-back that
//!   checks nothing was lost or applied twice;
//! - `kafka` (feature `kafka`): `--source kafka`, a keyed topic consumed
//!   into PostgreSQL by a consumer group of member processes, ferry's and
//!   a partition-serial one, a member killed mid-run, the rows read back;
//! - [`child_lines`]: the lines child processes report on;
//! - [`faults`]: `--fault`, a real store restarted, its connections ended
//!   or its traffic stalled during each run, through a loopback proxy of
//!   the tool's own;
//! - [`overload`]: the overload scenario (a store that slows down, callers
//!   that give up): goodput, waste and recovery;
//! - [`servers`]: private PostgreSQL, Redis and Kafka servers started on
//!   demand (`--store postgres`, `--store redis`, `--source kafka`
//!   without a broker) and by the tests against real stores;
//! - [`run`]: one system at one shard count, from start to figures;
//! - [`report`]: the progress line, the table and the JSON;
//! - [`plot`]: the `--plot` picture, latency curves by percentile and a
//!   sweep's throughput by shards;
//! - [`duration`]: durations as the command line writes them;
//! - [`timing`]: how precisely the store thread wakes;
//! - [`tune`]: `--tune`, a search of ferry-trips' shards, slots and trip
//!   size for the highest throughput within a latency budget.
//!
//! ```no_run
//! use ferry_bench::{dist, load, run, store, systems};
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
//!     max_trips_in_flight: 4,
//!     retry_unknown: systems::DEFAULT_RETRY_UNKNOWN,
//!     fence: store::Fence::On,
//! };
//! let result = run::run(systems::SystemKind::Ferry, Some(2), 128, &settings, store, &load, |_| {}).unwrap();
//! assert_eq!(result.lost, 0);
//! assert!(result.read_back_matches());
//! ```
#![warn(missing_docs)]

pub mod child_lines;
pub mod cpu;
pub mod dist;
pub mod duration;
pub mod event_time;
pub mod faults;
pub mod handover;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod load;
pub mod overload;
pub mod plot;
pub mod report;
pub mod run;
pub mod sched;
pub mod servers;
pub mod store;
pub mod systems;
pub mod timing;
pub mod tune;
