//! Each system under a small load for about half a second: every input is
//! answered, the store applied exactly the inputs answered with success, and
//! ferry never wrote from a stale version.

use std::time::Duration;

use ferry_bench::report::{problems, RunResult};
use ferry_bench::run::compare::run;
use ferry_bench::sources::load::Mode;
use ferry_bench::store::Store;
use ferry_bench::systems::SystemKind;

mod support;

use support::{load, settings, KEYS};

fn measure(kind: SystemKind, rtt: Duration, mode: Mode) -> RunResult {
    let store = Store::sim(KEYS, rtt).unwrap();
    let result = run(kind, Some(1), 8, &settings(), store, &load(mode), |_| {}).unwrap();
    store.stop().unwrap();
    result
}

fn assert_clean(result: &RunResult) {
    assert_eq!(result.lost, 0, "{result:?}");
    assert!(result.completed > 0, "nothing was answered: {result:?}");
    assert_eq!(result.applied, result.completed, "{result:?}");
    assert_eq!(result.applied_sum, result.completed_sum, "{result:?}");
    assert_eq!(result.failed, 0, "{result:?}");
    assert!(result.throughput > 0.0 && result.p50_us > 0.0, "{result:?}");
    assert!(
        problems(std::slice::from_ref(result)).is_empty(),
        "{result:?}"
    );
}

const CLOSED: Mode = Mode::Closed { clients: 64 };
const RTT: Duration = Duration::from_micros(200);

#[test]
fn ferry_loses_nothing_and_never_conflicts() {
    let result = measure(SystemKind::Ferry, RTT, CLOSED);
    assert_clean(&result);
    assert_eq!(result.conflicts, 0);
    assert_eq!(result.shards, Some(1));
    assert!(
        result.mean_batch > 1.0,
        "64 clients on 50 zipf keys must batch: {result:?}"
    );
    // Waiting 200 µs on the store with spin zero, the shard dozes between
    // answers, and its dozes and parks are reported.
    assert!(result.dozes_per_s.is_some_and(|d| d > 0.0), "{result:?}");
    assert!(result.parks_per_s.is_some(), "{result:?}");
    // The engine's own figures: batches bigger than one input, none past
    // the bound; inputs waited while the store held their key's batch.
    let engine = result.engine.expect("ferry reports its stats()");
    let bound = settings().max_batch_size as u64;
    assert!(
        engine.batch_size_max > 1 && engine.batch_size_max <= bound,
        "{engine:?}"
    );
    assert!(engine.batch_size_p50 <= engine.batch_size_p99, "{engine:?}");
    assert!(
        engine.queue_max_us > 0.0 && engine.batch_time_p50_us > 0.0,
        "{engine:?}"
    );
}

#[test]
fn ferry_in_an_open_loop_with_instant_answers() {
    let result = measure(
        SystemKind::Ferry,
        Duration::ZERO,
        Mode::Open {
            rate: 20_000.0,
            outstanding_max: 1_000,
        },
    );
    assert_clean(&result);
    assert_eq!(result.conflicts, 0);
    // 20,000/s for 0.5 s, give or take the edges.
    assert!((8_000..=12_000).contains(&result.submitted), "{result:?}");
}

#[test]
fn single_lock_loses_nothing() {
    let result = measure(SystemKind::SingleLock, RTT, CLOSED);
    assert_clean(&result);
    assert_eq!(result.conflicts, 0, "one batch per key, like ferry");
    assert_eq!((result.dozes_per_s, result.parks_per_s), (None, None));
    assert_eq!(result.engine, None, "only the engine has stats()");
}

#[test]
fn batch_aint_one_loses_nothing() {
    let result = measure(SystemKind::BatchAintOne, RTT, CLOSED);
    assert_clean(&result);
    assert_eq!(result.conflicts, 0, "max_key_concurrency = 1");
}

#[test]
fn unbatched_loses_nothing_and_sends_one_input_per_batch() {
    let result = measure(SystemKind::Unbatched, RTT, CLOSED);
    assert_clean(&result);
    assert_eq!(result.conflicts, 0, "serialised per key");
    assert_eq!(result.mean_batch, 1.0);
}

/// Closed-loop clients handing over 40 inputs a call (`--per-call 40`):
/// ferry takes them through `submit_many`, a system without batched intake
/// one by one; either way every input is answered and applied once.
fn measure_calls(kind: SystemKind) -> RunResult {
    let store = Store::sim(KEYS, RTT).unwrap();
    let mut load = load(Mode::Closed { clients: 4 });
    load.per_call = 40;
    let result = run(kind, Some(1), 8, &settings(), store, &load, |_| {}).unwrap();
    store.stop().unwrap();
    result
}

#[test]
fn calls_of_many_inputs_lose_nothing() {
    for kind in [SystemKind::Ferry, SystemKind::SingleLock] {
        let result = measure_calls(kind);
        assert_clean(&result);
        assert_eq!(result.conflicts, 0, "{kind:?}");
        assert_eq!(
            result.submitted % 40,
            0,
            "{kind:?}: inputs are submitted a call at a time: {result:?}"
        );
    }
    let ferry = measure_calls(SystemKind::Ferry);
    assert!(
        ferry.mean_batch > 1.0,
        "160 inputs outstanding on 50 keys batch: {ferry:?}"
    );
}
