//! `submit_blocking` and `spin_before_park`: a caller on a plain thread gets
//! its own outcome whether the answer comes while it is still looking (no
//! park), after it has parked, or with looking turned off; and shards that
//! linger after work still honour delays and close. Each test runs on each
//! runtime.

use std::time::{Duration, Instant};

use ferry::{Engine, FerryError, Refused, Runtime};

mod support;
use support::on_each_runtime;

/// An engine whose batches take `hold` on the shard (a timer of the shard's
/// runtime, so the shard itself is free meanwhile) and answer each input
/// doubled.
fn slow_doubler(runtime: Runtime, hold: Duration, spin: Duration) -> Engine<u64, u64, u64, String> {
    let engine = Engine::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .spin_before_park(spin)
        .start(move |_shard| {
            move |_key: u64, inputs: Vec<u64>| async move {
                if !hold.is_zero() {
                    support::sleep(hold).await;
                }
                Ok::<_, String>(inputs.iter().map(|x| x * 2).collect())
            }
        })
        .expect("engine starts");
    assert_eq!(engine.runtime(), runtime, "runs on the runtime asked for");
    engine
}

on_each_runtime!(an_answer_within_the_spin_is_taken_without_parking);
fn an_answer_within_the_spin_is_taken_without_parking(runtime: Runtime) {
    let engine = slow_doubler(runtime, Duration::ZERO, Duration::from_millis(50));
    for i in 0..1_000 {
        assert_eq!(engine.submit_blocking(i % 7, i), Ok(2 * i));
    }
    assert_eq!(engine.stats().total().answered, 1_000);
}

on_each_runtime!(an_answer_after_the_spin_wakes_the_parked_caller);
fn an_answer_after_the_spin_wakes_the_parked_caller(runtime: Runtime) {
    // The batch outlasts the spin many times over: the caller must have
    // parked, and the answer must unpark it.
    let hold = Duration::from_millis(20);
    let engine = slow_doubler(runtime, hold, Duration::from_micros(50));
    let started = Instant::now();
    assert_eq!(engine.submit_blocking(1, 21), Ok(42));
    assert!(started.elapsed() >= hold, "answered before the batch ended");
}

on_each_runtime!(with_no_spin_callers_park_at_once_and_still_get_their_outcome);
fn with_no_spin_callers_park_at_once_and_still_get_their_outcome(runtime: Runtime) {
    let engine = slow_doubler(runtime, Duration::from_millis(2), Duration::ZERO);
    let callers: Vec<_> = (0..4_u64)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                (0..50_u64)
                    .map(|i| engine.submit_blocking(t * 100 + i % 3, i))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for caller in callers {
        let outcomes = caller.join().unwrap();
        let expected: Vec<_> = (0..50_u64).map(|i| Ok(2 * i)).collect();
        assert_eq!(outcomes, expected);
    }
    engine.close();
    match engine.submit_blocking(1, 9) {
        Err(FerryError::Refused {
            input,
            reason: Refused::Closed,
        }) => assert_eq!(input, 9),
        other => panic!("expected a refusal after close, got {other:?}"),
    }
    engine.join();
}

on_each_runtime!(a_lingering_shard_still_sends_a_partial_batch_at_its_delay);
fn a_lingering_shard_still_sends_a_partial_batch_at_its_delay(runtime: Runtime) {
    // The shard spins far longer than the delay: the deadline must be met by
    // the linger loop itself, not only by a parked shard's timer.
    let delay = Duration::from_millis(30);
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .runtime(runtime)
        .shards(1)
        .pin(false)
        .max_batch_size(100)
        .max_batch_delay(delay)
        .spin_before_park(Duration::from_secs(1))
        .start(|_shard| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
        .expect("engine starts");
    // A first batch puts the shard to work, so it lingers (for a second)
    // when the next input arrives.
    assert_eq!(engine.submit_blocking(2, 7), Ok(7));
    let started = Instant::now();
    assert_eq!(engine.submit_blocking(1, 5), Ok(5));
    let waited = started.elapsed();
    assert!(waited >= delay, "sent after {waited:?}, before its delay");
    assert!(
        waited < delay + Duration::from_secs(5),
        "a partial batch waited {waited:?}"
    );
    engine.close();
    engine.join();
}
