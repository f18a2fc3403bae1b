//! How many trips an entity engine keeps in flight per shard: a few per
//! connection by default (`DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION`), the
//! builder's `max_in_flight_batches` when it is set. Checked with a store
//! whose writes wait at a gate: every key's trip is held, and the shard's
//! `in_flight` gauge shows how many it started; once the gate opens, every
//! input is answered and applied.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry::entity::{
    Append, Connection, Entities, MemoryStore, Options, Row, Store, StoreError, Write,
    DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION,
};
use ferry::Engine;

/// A memory store whose writes wait until the gate is open.
#[derive(Clone)]
struct Gated {
    rows: MemoryStore<u32>,
    open: Arc<AtomicBool>,
}

impl Store<u32> for Gated {
    type Connection = Gated;

    async fn connect(&self) -> Result<Gated, StoreError> {
        Ok(self.clone())
    }
}

impl Connection<u32> for Gated {
    async fn read(&self, keys: &[&u32]) -> Result<Vec<Row>, StoreError> {
        self.rows.read(keys).await
    }

    async fn write(&self, writes: &[Write<'_, u32>]) -> Result<Vec<bool>, StoreError> {
        while !self.open.load(Ordering::Acquire) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        self.rows.write(writes).await
    }

    async fn append(&self, appends: &[Append<'_, u32>]) -> Result<Vec<bool>, StoreError> {
        self.rows.append(appends).await
    }
}

fn add(sum: &mut u64, amount: &u64) -> Result<u64, String> {
    *sum += amount;
    Ok(*sum)
}

/// Checks that one shard holds `expected` trips in flight once `keys`
/// keys each wait for their own trip (one batch a trip) at a closed gate,
/// with `slots` set on the builder or not, over `connections`
/// connections; then opens the gate and checks every input is applied
/// once.
fn check_trips_held(slots: Option<usize>, connections: usize, expected: u64) {
    const KEYS: u32 = 40;
    let gated = Gated {
        rows: MemoryStore::new(),
        open: Arc::new(AtomicBool::new(false)),
    };
    let mut builder = Engine::builder().shards(1).pin(false).max_trip_batches(1);
    if let Some(slots) = slots {
        builder = builder.max_in_flight_batches(slots);
    }
    let sums: Entities<u32, u64, u64, String> = builder
        .start_entities_with(
            gated.clone(),
            add,
            Options::default().connections(connections),
        )
        .expect("the engine starts");
    let answers: Vec<_> = (0..KEYS).map(|key| sums.submit(key, 1)).collect();
    // Phase 1: the shard takes what its slots allow, and nothing it took
    // completes; a slot too many would show once the first are taken.
    let in_flight = || sums.engine().stats().shards[0].in_flight;
    let deadline = Instant::now() + Duration::from_secs(30);
    while in_flight() < expected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    let held = in_flight();
    // Phase 2: the gate opens (before any check, so that a failed one
    // does not leave the engine's drop waiting on trips held forever);
    // every input is applied, once.
    gated.open.store(true, Ordering::Release);
    assert_eq!(
        held, expected,
        "slots {slots:?}, {connections} connection(s)"
    );
    for answer in futures::executor::block_on(futures::future::join_all(answers)) {
        assert_eq!(answer, Ok(1));
    }
    let keys: Vec<u32> = (0..KEYS).collect();
    let keys: Vec<&u32> = keys.iter().collect();
    let rows = futures::executor::block_on(gated.rows.read(&keys)).expect("the rows read");
    assert!(rows.iter().all(|row| row.version == 1), "{rows:?}");
}

#[test]
fn an_entity_engine_keeps_a_few_trips_in_flight_per_connection() {
    let per_connection = DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION as u64;
    check_trips_held(None, 1, per_connection);
    check_trips_held(None, 3, 3 * per_connection);
}

#[test]
fn the_builder_s_slots_are_kept_when_set() {
    check_trips_held(Some(2), 1, 2);
    check_trips_held(Some(30), 2, 30);
}
