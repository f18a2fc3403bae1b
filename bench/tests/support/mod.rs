//! What the short end-to-end runs share: the store's keys, the systems'
//! settings and the load, each test changing what it is about.

use std::sync::Arc;
use std::time::Duration;

use ferry_bench::sources::dist::{KeyDist, KeySampler};
use ferry_bench::sources::load::{Load, Mode};
use ferry_bench::systems::Settings;

pub const KEYS: u64 = 50;

pub fn settings() -> Settings {
    Settings {
        max_batch_size: 16,
        max_batch_delay: Duration::ZERO,
        max_in_flight_batches: 8,
        max_waiting: 10_000,
        tokio_workers: 2,
        pin: Some(false),
        spin_before_park: Duration::ZERO,
        // Straight from work into the doze: the stage most runs use between
        // store answers.
        doze_before_park: Duration::from_millis(2),
        sched_slice: ferry::DEFAULT_SCHED_SLICE,
        runtime: ferry::Runtime::Auto,
        pool_connections: 1,
        max_queue_time: None,
        max_trip_batches: ferry::DEFAULT_MAX_TRIP_BATCHES,
        max_in_flight_trips: 4,
        retry_unknown: ferry_bench::systems::DEFAULT_RETRY_UNKNOWN,
        fence: ferry_bench::store::Fence::On,
    }
}

pub fn load(mode: Mode) -> Load {
    Load {
        mode,
        generators: 2,
        sampler: Arc::new(KeySampler::new(KeyDist::Zipf { exponent: 1.0 }, KEYS).unwrap()),
        warmup: Duration::from_millis(100),
        duration: Duration::from_millis(400),
        drain_timeout: Duration::from_secs(10),
        seed: 7,
        timeout: None,
        slowdown: None,
        per_call: 1,
    }
}
