//! Every system against real servers (feature `real-stores`): a private
//! PostgreSQL and a private Redis, started by the test (see `servers.rs`),
//! each system under a short contended load on each.
//!
//! What is checked, per server:
//!
//! - the store notices overlapping batches of one key: eight batches of one
//!   key sent at once conflict, and retrying still applies each exactly
//!   once, so a zero conflict count below means something;
//! - each keyed system, under a load where a key's batches would overlap if
//!   they could (200 clients on 50 zipf keys), never conflicts: a key's
//!   batches never overlap, seen from the store (G1);
//! - every input is answered (0 lost, 0 failed), and the store read back
//!   holds exactly the inputs answered with success: as many, same sum;
//! - the unkeyed systems alike (their appends cannot conflict);
//! - `ferry-load --store …` runs the four systems, passes its read-backs,
//!   exits 0, and leaves nothing behind on the server; and against a server
//!   that is not there it fails at once with a message;
//! - the handover of `docs/scale-out.md` (`handover.rs`): keys moving
//!   between two owner processes, fenced by an owner epoch, nothing lost or
//!   applied twice; and without the fence, the read-back sees the double
//!   application;
//! - faults at the store during a run (`faults.rs`): a restart in place, a
//!   kill of every connection and a stall, each for ferry, ferry-trips and
//!   single-lock: nothing lost, every success applied, nothing applied
//!   twice, serving again after each; and `ferry-load --fault` with all
//!   three in one run;
//! - a batch function written for tokio (`tokio_in_batch.rs`): a
//!   tokio-postgres client and `tokio::time::sleep`, on an engine of the
//!   default builder (glommio where it can start).

mod entity_postgres;
mod entity_redis;
mod faults;
mod handover;
mod http_accounts;
mod servers;
mod tokio_in_batch;

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry_bench::report::{problems, RunResult};
use ferry_bench::run::compare::{run, run_unkeyed};
use ferry_bench::sources::dist::{KeyDist, KeySampler};
use ferry_bench::sources::load::{Load, Mode};
use ferry_bench::store::{
    Contents, Pool, Store, StoreAddress, Write, POSTGRES_ENTITY_TABLE, REDIS_ENTITY_PREFIX,
};
use ferry_bench::systems::{Settings, SystemKind, UnkeyedKind};

use servers::Private;

const KEYS: u64 = 50;
const CLIENTS: usize = 200;
/// Ferry's (and batcher's) shards; the others share as many connections.
const SHARDS: usize = 2;
/// Batches in flight per shard.
const SLOTS: usize = 8;

/// One server's load at a time: the machine has few cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn a_tokio_postgres_batch_function_on_the_default_runtime() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let server = servers::postgres();
    tokio_in_batch::a_tokio_postgres_batch_function_runs_with_the_default_builder(&server);
}

#[test]
fn every_system_on_a_private_postgres() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let server = servers::postgres();
    every_system_on(&server);
    the_command_line_runs_and_leaves_nothing(&server, postgres_table_exists);
}

#[test]
fn every_system_on_a_private_redis() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let server = servers::redis();
    every_system_on(&server);
    the_command_line_runs_and_leaves_nothing(&server, redis_keys_exist);
}

#[test]
fn handover_on_a_private_postgres() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let server = servers::postgres();
    handover::fenced_handover_holds(&server);
    handover::the_unfenced_control_shows_the_double_application(&server);
    handover::the_command_line_passes_and_leaves_nothing(&server, handover::postgres_rows_left);
}

#[test]
fn handover_on_a_private_redis() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let server = servers::redis();
    handover::fenced_handover_holds(&server);
    handover::the_unfenced_control_shows_the_double_application(&server);
    handover::the_command_line_passes_and_leaves_nothing(&server, handover::redis_rows_left);
}

#[test]
fn faults_on_a_private_postgres() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let server = servers::postgres_restartable();
    faults::each_fault_on_each_system(&server);
    faults::lost_replies_are_resolved_by_the_fence(&server);
    faults::the_command_line_injects_every_fault(&server, postgres_table_exists);
}

#[test]
fn faults_on_a_private_redis() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let server = servers::redis_durable();
    faults::each_fault_on_each_system(&server);
    faults::lost_replies_are_resolved_by_the_fence(&server);
    faults::the_command_line_injects_every_fault(&server, redis_keys_exist);
}

#[test]
fn a_store_that_is_not_there_fails_at_once_and_says_so() {
    // Port 1 on loopback: nothing listens there, the connection is refused.
    for url in [
        "postgres://ferry@127.0.0.1:1/postgres",
        "redis://127.0.0.1:1",
    ] {
        let started = Instant::now();
        let output = Command::new(env!("CARGO_BIN_EXE_ferry-load"))
            .args(["--store", url, "--duration", "1s"])
            .output()
            .expect("ferry-load runs");
        let said = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{url}: {said}");
        assert!(said.contains("could not connect to"), "{url}: {said}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{url}: took {:?}",
            started.elapsed()
        );
    }
}

fn every_system_on(server: &Private) {
    let address: StoreAddress = server.url.parse().expect("the server's URL parses");
    let store = Store::open(&address, KEYS, Duration::ZERO)
        .unwrap_or_else(|problem| panic!("{problem}\n{}", server.log()));
    overlapping_batches_of_a_key_conflict(store);
    trips_sharing_a_key_each_land_once(store);

    for kind in SystemKind::ALL {
        let result = run(
            kind,
            Some(SHARDS),
            SLOTS * SHARDS,
            &settings(),
            store,
            &load(),
            |_| {},
        )
        .unwrap_or_else(|problem| panic!("{kind} on {}: {problem}", store.kind()));
        assert_clean(store, &result);
        // multi-key keeps no key to one batch in flight: its conflicts are
        // counted and retried, and its read-back is still exact.
        if kind != SystemKind::MultiKey {
            assert_eq!(
                result.conflicts,
                0,
                "{kind} on {}: two batches of one key overlapped: {result:?}",
                store.kind()
            );
        }
        if matches!(kind, SystemKind::Ferry | SystemKind::FerryTrips) {
            assert_eq!(result.runtime.as_deref(), Some("tokio"), "{result:?}");
        }
        if kind == SystemKind::FerryTrips {
            let engine = result.engine.as_ref().expect("ferry-trips has an engine");
            assert!(
                engine.trips > 0 && engine.trip_batches_max > 1,
                "{CLIENTS} clients on {KEYS} keys must fill trips of several keys: {result:?}"
            );
        }
        if kind != SystemKind::Unbatched {
            assert!(
                result.mean_batch > 1.0,
                "{kind} on {}: {CLIENTS} clients on {KEYS} keys must batch: {result:?}",
                store.kind()
            );
        }
    }
    for kind in UnkeyedKind::ALL {
        let result = run_unkeyed(
            kind,
            Some(SHARDS),
            SLOTS * SHARDS,
            &settings(),
            store,
            &load(),
            |_| {},
        )
        .unwrap_or_else(|problem| panic!("{kind} (unkeyed) on {}: {problem}", store.kind()));
        assert_clean(store, &result);
        assert_eq!(result.conflicts, 0, "{result:?}");
    }
    store.stop().expect("the store cleans up");
}

/// Eight batches of key 0 at once over two connections: most read the
/// same version, so their writes conflict; each retries until it lands.
fn overlapping_batches_of_a_key_conflict(store: Store) {
    store.reset().expect("reset");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio starts");
    let pool = Pool::open(store, 2, Some(&runtime)).expect("connections");
    let conflicts_before = store.conflicts();
    let starts = runtime.block_on(async {
        let batches = (0..8).map(|_| pool.get().apply(0, 2, 3));
        futures::future::join_all(batches).await
    });
    let mut starts: Vec<u64> = starts
        .into_iter()
        .map(|start| start.expect("every batch lands"))
        .collect();
    starts.sort_unstable();
    assert_eq!(starts, vec![0, 2, 4, 6, 8, 10, 12, 14], "{}", store.kind());
    assert!(
        store.conflicts() > conflicts_before,
        "{}: eight overlapping batches of one key and no conflict",
        store.kind()
    );
    assert_eq!(
        store.contents().expect("read back"),
        Contents {
            inputs: 16,
            sum: 24
        }
    );
    drop(pool);
    runtime.shutdown_background();
}

/// Six trips at once over two connections, sharing key 0 and each with
/// keys of its own: key 0's writes may conflict, and are then retried alone
/// of their trips' other keys; every write lands once, and the store holds
/// exactly what was written.
fn trips_sharing_a_key_each_land_once(store: Store) {
    store.reset().expect("reset");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio starts");
    let pool = Pool::open(store, 2, Some(&runtime)).expect("connections");
    let write = |key, count, sum| Write { key, count, sum };
    let results = runtime.block_on(async {
        let trips = (0..6_u64).map(|trip| {
            let own = 1 + trip * 3;
            pool.get().apply_many(vec![
                write(0, 1, 1),
                write(own, 2, 5),
                write(own + 1, 1, 7),
                write(own + 2, 3, 9),
            ])
        });
        futures::future::join_all(trips).await
    });
    let mut starts_of_key_0 = Vec::new();
    for results in results {
        assert_eq!(results.len(), 4, "one result per write");
        for (at, result) in results.into_iter().enumerate() {
            let started = result.expect("every write lands");
            if at == 0 {
                starts_of_key_0.push(started);
            } else {
                assert_eq!(started, 0, "a key of one trip alone starts at 0");
            }
        }
    }
    starts_of_key_0.sort_unstable();
    assert_eq!(starts_of_key_0, vec![0, 1, 2, 3, 4, 5], "{}", store.kind());
    assert_eq!(
        store.contents().expect("read back"),
        Contents {
            inputs: 6 + 6 * 6,
            sum: 6 + 6 * 21
        }
    );
    drop(pool);
    runtime.shutdown_background();
}

fn settings() -> Settings {
    Settings {
        max_batch_size: 16,
        max_batch_delay: Duration::ZERO,
        max_in_flight_batches: SLOTS,
        max_waiting: 100_000,
        tokio_workers: 2,
        pin: Some(false),
        spin_before_park: ferry::DEFAULT_SPIN_BEFORE_PARK,
        doze_before_park: ferry::DEFAULT_DOZE_BEFORE_PARK,
        sched_slice: ferry::DEFAULT_SCHED_SLICE,
        runtime: ferry::Runtime::Auto,
        pool_connections: SHARDS,
        max_queue_time: None,
        max_trip_batches: ferry::DEFAULT_MAX_TRIP_BATCHES,
        max_in_flight_trips: 4,
        retry_unknown: ferry_bench::systems::DEFAULT_RETRY_UNKNOWN,
        fence: ferry_bench::store::Fence::On,
    }
}

fn load() -> Load {
    Load {
        mode: Mode::Closed { clients: CLIENTS },
        generators: 2,
        sampler: Arc::new(KeySampler::new(KeyDist::Zipf { exponent: 1.0 }, KEYS).unwrap()),
        warmup: Duration::from_millis(200),
        duration: Duration::from_secs(1),
        drain_timeout: Duration::from_secs(20),
        seed: 11,
        timeout: None,
        slowdown: None,
        per_call: 1,
    }
}

fn assert_clean(store: Store, result: &RunResult) {
    let on = format!("{} on {}", result.label(), store.kind());
    assert!(
        result.completed > 0,
        "{on}: nothing was answered: {result:?}"
    );
    assert_eq!(result.lost, 0, "{on}: {result:?}");
    assert_eq!(
        result.failed, 0,
        "{on}: inputs failed, the first with {:?}; {result:?}",
        result.first_failure
    );
    assert!(
        result.read_back_matches(),
        "{on}: the store holds {} inputs summing to {}, {} summing to {} were answered: {result:?}",
        result.applied,
        result.applied_sum,
        result.completed,
        result.completed_sum
    );
    assert!(
        problems(std::slice::from_ref(result)).is_empty(),
        "{on}: {result:?}"
    );
    assert!(
        result.server_cpu_us_per_input.is_some_and(|us| us > 0.0),
        "{on}: the server's CPU time was not read: {result:?}"
    );
}

/// `ferry-load --store URL` with every keyed system, two shard counts;
/// then `left_behind(url)` must be false.
fn the_command_line_runs_and_leaves_nothing(server: &Private, left_behind: fn(&str) -> bool) {
    let json = server.dir().join("runs.json");
    let output = Command::new(env!("CARGO_BIN_EXE_ferry-load"))
        .args(["--store", &server.url])
        .args([
            "--keys",
            &KEYS.to_string(),
            "--clients",
            &CLIENTS.to_string(),
        ])
        .args([
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--sweep-shards",
            "1,2",
        ])
        .args(["--max-in-flight-batches", &SLOTS.to_string()])
        .arg("--json")
        .arg(&json)
        .output()
        .expect("ferry-load runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        output.status.success(),
        "ferry-load --store {} failed ({}):\n{stdout}\n{stderr}",
        server.url,
        output.status
    );
    let read_backs: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("read back, "))
        .collect();
    assert_eq!(
        read_backs.len(),
        8,
        "ferry and ferry-trips at 1 and 2 shards and four others:\n{stdout}"
    );
    assert!(
        read_backs
            .iter()
            .all(|line| line.ends_with("exactly the inputs answered with success")),
        "{stdout}"
    );
    assert!(
        stdout.contains("store server CPU, ferry (2 shards): "),
        "{stdout}"
    );
    let written = std::fs::read_to_string(&json).expect("the JSON was written");
    let report: serde_json::Value = serde_json::from_str(&written).expect("JSON");
    assert_eq!(
        report["runs"].as_array().map(Vec::len),
        Some(8),
        "{written}"
    );
    assert!(
        !left_behind(&server.url),
        "ferry-load left its table or keys on {}",
        server.url
    );
}

fn postgres_table_exists(url: &str) -> bool {
    one_off(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(connection);
        let row = client
            .query_one("SELECT to_regclass($1)::text", &[&POSTGRES_ENTITY_TABLE])
            .await
            .expect("query");
        row.get::<_, Option<String>>(0).is_some()
    })
}

fn redis_keys_exist(url: &str) -> bool {
    one_off(async {
        let client = redis::Client::open(url).expect("URL");
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .expect("connect");
        let found: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{REDIS_ENTITY_PREFIX}*"))
            .query_async(&mut connection)
            .await
            .expect("KEYS");
        !found.is_empty()
    })
}

fn one_off<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio starts")
        .block_on(work)
}
