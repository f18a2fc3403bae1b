//! What `stats()` tells about the work done: the distributions (batch
//! size, batch weight, queue time, batch time), the outcome counters, the
//! refusals by reason and the longest lane, checked against batches whose
//! shape each test forces. Figures are published a loop round after the
//! answers, so every check waits for them to show.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry::{Batcher, Engine, FerryError, Refused, Runtime, ShardStats};
use support::{on_each_runtime, sleep};

/// Polls `check` on the engine's totals for up to a few seconds; the last
/// totals, which the caller asserts on.
fn settled(read: impl Fn() -> ShardStats, check: impl Fn(&ShardStats) -> bool) -> ShardStats {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let total = read();
        if check(&total) || Instant::now() >= deadline {
            return total;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A gate batch functions wait at until it opens.
#[derive(Clone, Default)]
struct Gate(Arc<AtomicBool>);

impl Gate {
    async fn pass(&self) {
        while !self.0.load(Ordering::Acquire) {
            sleep(Duration::from_millis(1)).await;
        }
    }

    fn open(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// One shard, batches of at most 4, every batch held at `gate`.
fn gated_engine(runtime: Runtime, gate: &Gate) -> Engine<u64, u64, u64, String> {
    let gate = gate.clone();
    Engine::builder()
        .shards(1)
        .pin(false)
        .max_batch_size(4)
        .runtime(runtime)
        .start(move |_shard| {
            let gate = gate.clone();
            move |_key: u64, inputs: Vec<u64>| {
                let gate = gate.clone();
                async move {
                    gate.pass().await;
                    Ok::<_, String>(inputs)
                }
            }
        })
        .unwrap_or_else(|err| panic!("on {runtime}: {err}"))
}

on_each_runtime!(the_distributions_follow_the_batches_sent);
fn the_distributions_follow_the_batches_sent(runtime: Runtime) {
    let gate = Gate::default();
    let engine = gated_engine(runtime, &gate);
    // Key 7's first batch (one input) is held; ten more wait behind it in
    // its lane, to go as batches of 4, 4 and 2.
    let first = engine.submit(7, 0);
    settled(|| engine.stats().total(), |t| t.in_flight == 1);
    let rest: Vec<_> = (1..=10).map(|n| engine.submit(7, n)).collect();
    let held = settled(|| engine.stats().total(), |t| t.waiting == 10);
    assert_eq!(
        (held.lanes, held.longest_lane),
        (1, 10),
        "on {runtime}: {held:?}"
    );

    gate.open();
    futures::executor::block_on(first).expect("the first input");
    for submit in rest {
        futures::executor::block_on(submit).expect("an input");
    }
    let total = settled(|| engine.stats().total(), |t| t.answered == 11);
    assert_eq!(
        (total.batches, total.answered_ok),
        (4, 11),
        "on {runtime}: {total:?}"
    );
    let sizes = total.batch_size;
    assert_eq!(
        (sizes.count, sizes.p50, sizes.max),
        (4, 2, 4),
        "on {runtime}: {sizes:?}"
    );
    assert_eq!(
        total.batch_weight, sizes,
        "on {runtime}: one weight per input"
    );
    assert_eq!(total.queue_time_ns.count, 11, "on {runtime}: one per input");
    assert_eq!(total.batch_time_ns.count, 4, "on {runtime}: one per batch");
    assert_eq!(total.longest_lane, 0, "on {runtime}: nothing waits");
    let per_shard = engine.stats().shards[0];
    assert_eq!(
        per_shard.batch_size, sizes,
        "on {runtime}: one shard, the same"
    );
    engine.close();
    engine.join();
}

on_each_runtime!(waits_and_batch_times_are_at_least_what_was_waited);
fn waits_and_batch_times_are_at_least_what_was_waited(runtime: Runtime) {
    let delay = Duration::from_millis(20);
    let store = Duration::from_millis(5);
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .shards(1)
        .pin(false)
        .max_batch_delay(delay)
        .runtime(runtime)
        .start(move |_shard| {
            move |_key: u64, inputs: Vec<u64>| async move {
                sleep(store).await;
                Ok::<_, String>(inputs)
            }
        })
        .unwrap_or_else(|err| panic!("on {runtime}: {err}"));
    // A lone input waits out the delay, then its batch the store.
    assert_eq!(engine.submit_blocking(1, 5), Ok(5));
    let total = settled(|| engine.stats().total(), |t| t.batch_time_ns.count == 1);
    let nanos = |d: Duration| d.as_nanos() as u64;
    assert!(
        total.queue_time_ns.p50 >= nanos(delay),
        "on {runtime}: {total:?}"
    );
    assert!(
        total.batch_time_ns.p50 >= nanos(store),
        "on {runtime}: {total:?}"
    );
    assert_eq!(
        total.queue_time_ns.max, total.queue_time_ns.mean,
        "on {runtime}: one input"
    );
    engine.close();
    engine.join();
}

on_each_runtime!(every_outcome_is_counted_per_input);
fn every_outcome_is_counted_per_input(runtime: Runtime) {
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .shards(2)
        .pin(false)
        .runtime(runtime)
        .start(|_shard| {
            |key: u64, inputs: Vec<u64>| async move {
                match key {
                    1 => Err("the store is down".to_string()),
                    2 => panic!("the batch function broke"),
                    3 => Ok(Vec::new()),
                    _ => Ok(inputs),
                }
            }
        })
        .unwrap_or_else(|err| panic!("on {runtime}: {err}"));
    for key in 1..=4 {
        let outcome = engine.submit_blocking(key, key);
        match (key, outcome) {
            (1, Err(FerryError::Failed(_)))
            | (2, Err(FerryError::Panicked))
            | (3, Err(FerryError::WrongOutputCount { .. }))
            | (4, Ok(4)) => {}
            (key, other) => panic!("on {runtime}: key {key} got {other:?}"),
        }
    }
    let total = settled(|| engine.stats().total(), |t| t.answered == 4);
    let outcomes = (
        total.answered_ok,
        total.failed,
        total.panicked,
        total.wrong_output_count,
    );
    assert_eq!(outcomes, (1, 1, 1, 1), "on {runtime}: {total:?}");
    assert_eq!(total.aborted, 0, "on {runtime}");
    engine.close();
    engine.join();
}

on_each_runtime!(refusals_are_counted_by_reason);
fn refusals_are_counted_by_reason(runtime: Runtime) {
    let gate = Gate::default();
    let held = gate.clone();
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .shards(1)
        .pin(false)
        .max_waiting(1)
        .max_in_flight_batches(1)
        .weigh(|input: &u64| *input)
        .max_batch_weight(10)
        .runtime(runtime)
        .start(move |_shard| {
            let gate = held.clone();
            move |_key: u64, inputs: Vec<u64>| {
                let gate = gate.clone();
                async move {
                    gate.pass().await;
                    Ok::<_, String>(inputs)
                }
            }
        })
        .unwrap_or_else(|err| panic!("on {runtime}: {err}"));
    let refused = |outcome| match outcome {
        Err(FerryError::Refused { reason, .. }) => reason,
        other => panic!("on {runtime}: expected a refusal, got {other:?}"),
    };
    assert_eq!(refused(engine.submit_blocking(1, 11)), Refused::TooHeavy);
    let in_flight = engine.submit(1, 1);
    settled(|| engine.stats().total(), |t| t.in_flight == 1);
    let waiting = engine.submit(2, 1);
    settled(|| engine.stats().total(), |t| t.waiting == 1);
    assert_eq!(refused(engine.submit_blocking(3, 1)), Refused::Full);
    gate.open();
    for submit in [in_flight, waiting] {
        assert_eq!(futures::executor::block_on(submit), Ok(1), "on {runtime}");
    }
    engine.close();
    assert_eq!(refused(engine.submit_blocking(4, 1)), Refused::Closed);
    engine.join();
    let total = engine.stats().total();
    let reasons = (
        total.refused_full,
        total.refused_too_heavy,
        total.refused_closed,
    );
    assert_eq!(
        (total.refused, reasons),
        (3, (1, 1, 1)),
        "on {runtime}: {total:?}"
    );
}

on_each_runtime!(unkeyed_batching_has_no_longest_lane_and_the_same_distributions);
fn unkeyed_batching_has_no_longest_lane_and_the_same_distributions(runtime: Runtime) {
    let batcher: Batcher<u64, u64, String> = Batcher::builder()
        .shards(1)
        .pin(false)
        .runtime(runtime)
        .start(|_shard| |inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
        .unwrap_or_else(|err| panic!("on {runtime}: {err}"));
    for n in 0..50 {
        assert_eq!(batcher.submit_blocking(n), Ok(n), "on {runtime}");
    }
    let total = settled(|| batcher.stats().total(), |t| t.answered == 50);
    assert_eq!(total.queue_time_ns.count, 50, "on {runtime}: {total:?}");
    assert_eq!(
        total.batch_size.count, total.batches,
        "on {runtime}: {total:?}"
    );
    assert_eq!(
        total.batch_time_ns.count, total.batches,
        "on {runtime}: {total:?}"
    );
    assert_eq!((total.longest_lane, total.lanes), (0, 0), "on {runtime}");
    batcher.close();
    batcher.join();
}
