//! Event time through the public API, on each runtime, with batches and
//! with trips: the lateness hold of `Order::event_time`, late inputs
//! refused (`refuse_late`) or sent unheld, boundaries, and close ending
//! every hold.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ferry::{ConfigError, Engine, FerryError, Order, Runtime, StartError};
use futures::future::join_all;

mod support;
use support::{on_each_runtime_and_way, StartAs, Way};

/// Every batch the batch function saw: its key, its inputs (event times in
/// ms) and the wall clock's ms when it was called.
type Seen = Arc<Mutex<Vec<(u64, Vec<i64>, i64)>>>;

type Builder = ferry::Builder<u64, i64, i64, String>;

/// The wall clock, in ms since the UNIX epoch.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64
}

/// An engine ranking inputs by themselves (an event time in ms) that
/// records each batch in `seen` and echoes its inputs.
fn recording_engine(
    runtime: Runtime,
    way: Way,
    seen: &Seen,
    configure: impl FnOnce(Builder) -> Builder,
) -> Engine<u64, i64, i64, String> {
    let seen = seen.clone();
    let engine = configure(Engine::builder().runtime(runtime).shards(2).pin(false))
        .start_as(way, move |_shard| {
            let seen = seen.clone();
            move |key: u64, inputs: Vec<i64>| {
                seen.lock().unwrap().push((key, inputs.clone(), now_ms()));
                async move { Ok::<_, String>(inputs) }
            }
        })
        .expect("engine starts");
    assert_eq!(engine.runtime(), runtime, "runs on the runtime asked for");
    engine
}

/// The inputs of `key`'s batches, in the order the batches started.
fn sent_of(seen: &Seen, key: u64) -> Vec<i64> {
    let seen = seen.lock().unwrap();
    seen.iter()
        .filter(|(k, ..)| *k == key)
        .flat_map(|(_, inputs, _)| inputs.iter().copied())
        .collect()
}

on_each_runtime_and_way!(held_inputs_go_in_event_time_order_across_batches);
fn held_inputs_go_in_event_time_order_across_batches(runtime: Runtime, way: Way) {
    // Long enough that no input reaches its shard after its hold ended,
    // even on a busy machine (a late input would be sent unheld).
    const LATENESS_MS: i64 = 300;
    let seen: Seen = Arc::default();
    let engine = recording_engine(runtime, way, &seen, |b| {
        b.max_batch_size(3).order(Order::event_time(
            |at_ms: &i64| *at_ms,
            Duration::from_millis(LATENESS_MS as u64),
        ))
    });
    // Each key's inputs arrive out of order, by less than the lateness:
    // event times base..base+40 in a scrambled order (i * 17 mod 41).
    let base = now_ms();
    let submitted: Vec<(u64, i64)> = (0..41_i64)
        .flat_map(|i| (0..3_u64).map(move |key| (key, base + (i * 17) % 41)))
        .collect();
    let outcomes = futures::executor::block_on(join_all(
        submitted.iter().map(|&(k, at)| engine.submit(k, at)),
    ));
    for (outcome, &(_, at)) in outcomes.iter().zip(&submitted) {
        assert_eq!(outcome, &Ok(at), "every input answered with its own output");
    }
    for key in 0..3 {
        let sent = sent_of(&seen, key);
        let mut sorted = sent.clone();
        sorted.sort_unstable();
        assert_eq!(
            sent, sorted,
            "key {key}: sent in event-time order across batches"
        );
        assert_eq!(sent.len(), 41, "key {key}: each input sent once");
    }
    // No batch left before its inputs' holds ended (2 ms for the shard's
    // clock against the wall clock).
    for (key, inputs, called_ms) in seen.lock().unwrap().iter() {
        let latest = inputs.iter().max().expect("a batch has inputs");
        assert!(
            *called_ms >= latest + LATENESS_MS - 2,
            "key {key}: batch {inputs:?} sent at {called_ms}, before its holds ended"
        );
    }
    assert!(
        seen.lock().unwrap().len() > 3,
        "several batches per key, so the order held across batches"
    );
}

on_each_runtime_and_way!(refuse_late_hands_every_late_input_back_and_sends_none);
fn refuse_late_hands_every_late_input_back_and_sends_none(runtime: Runtime, way: Way) {
    let seen: Seen = Arc::default();
    let engine = recording_engine(runtime, way, &seen, |b| {
        b.order(Order::event_time(
            |at_ms: &i64| *at_ms,
            Duration::from_millis(500),
        ))
        .refuse_late(true)
    });
    let now = now_ms();
    // Even inputs are an hour old (late); odd ones are fresh.
    let inputs: Vec<i64> = (0..40)
        .map(|i| {
            if i % 2 == 0 {
                now - 3_600_000 + i
            } else {
                now + i
            }
        })
        .collect();
    let outcomes = futures::executor::block_on(join_all(
        inputs.iter().map(|&at| engine.submit(at as u64 % 5, at)),
    ));
    for (outcome, &at) in outcomes.into_iter().zip(&inputs) {
        if at < now {
            match outcome {
                Err(FerryError::Late { input }) => assert_eq!(input, at, "handed back untouched"),
                other => panic!("late input {at}: {other:?}"),
            }
        } else {
            assert_eq!(outcome, Ok(at), "a fresh input is sent once its hold ends");
        }
    }
    let sent: Vec<i64> = (0..5).flat_map(|key| sent_of(&seen, key)).collect();
    assert!(
        sent.iter().all(|&at| at >= now),
        "no late input sent: {sent:?}"
    );
    assert_eq!(sent.len(), 20, "every fresh input sent once");
    let stats = engine.stats().total();
    assert_eq!(
        (stats.refused_late, stats.refused),
        (20, 20),
        "each late input counted"
    );
}

on_each_runtime_and_way!(without_refuse_late_a_late_input_is_sent_unheld);
fn without_refuse_late_a_late_input_is_sent_unheld(runtime: Runtime, way: Way) {
    let seen: Seen = Arc::default();
    // An hour of lateness: anything held would outlast the test.
    let engine = recording_engine(runtime, way, &seen, |b| {
        b.order(Order::event_time(
            |at_ms: &i64| *at_ms,
            Duration::from_secs(3_600),
        ))
    });
    let late = now_ms() - 7_200_000;
    let started = Instant::now();
    assert_eq!(engine.submit_blocking(1, late), Ok(late));
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "a late input is not held"
    );
    assert_eq!(engine.stats().total().refused_late, 0);
}

on_each_runtime_and_way!(close_ends_every_hold);
fn close_ends_every_hold(runtime: Runtime, way: Way) {
    let seen: Seen = Arc::default();
    let engine = recording_engine(runtime, way, &seen, |b| {
        b.order(Order::event_time(
            |at_ms: &i64| *at_ms,
            Duration::from_secs(3_600),
        ))
    });
    let now = now_ms();
    let answers: Vec<_> = [now + 2, now, now + 1]
        .into_iter()
        .map(|at| engine.submit(4, at))
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    assert!(seen.lock().unwrap().is_empty(), "held for an hour");
    let started = Instant::now();
    engine.close();
    let outcomes = futures::executor::block_on(join_all(answers));
    assert_eq!(outcomes, vec![Ok(now + 2), Ok(now), Ok(now + 1)]);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "close ended the holds"
    );
    assert_eq!(
        sent_of(&seen, 4),
        vec![now, now + 1, now + 2],
        "still in event-time order"
    );
}

on_each_runtime_and_way!(a_batch_never_mixes_two_boundary_values);
fn a_batch_never_mixes_two_boundary_values(runtime: Runtime, way: Way) {
    let seen: Seen = Arc::default();
    // Buckets of 10; inputs wait together (a long delay, then close).
    let engine = recording_engine(runtime, way, &seen, |b| {
        b.max_batch_size(64)
            .max_batch_delay(Duration::from_secs(3_600))
            .order(Order::by(|input: &i64| *input))
            .boundary(|input: &i64| input / 10)
    });
    let answers: Vec<_> = (0..95_i64)
        .rev()
        .map(|i| engine.submit(i as u64 % 2, i))
        .collect();
    engine.close();
    let outcomes = futures::executor::block_on(join_all(answers));
    assert!(outcomes.iter().all(Result::is_ok));
    let seen = seen.lock().unwrap();
    for (key, inputs, _) in seen.iter() {
        let bucket = inputs[0] / 10;
        assert!(
            inputs.iter().all(|i| i / 10 == bucket),
            "key {key}: batch {inputs:?} mixes buckets"
        );
    }
    // Each key's 95 inputs span 10 buckets: at least 10 batches each,
    // though one batch could carry them all.
    assert!(
        seen.len() >= 20,
        "batches ended at each change: {}",
        seen.len()
    );
}

#[test]
fn refuse_late_without_an_event_time_order_is_a_config_error() {
    let started = Engine::<u64, i64, i64, String>::builder()
        .shards(1)
        .pin(false)
        .order(Order::by(|at: &i64| *at))
        .refuse_late(true)
        .start(|_| |_key: u64, inputs: Vec<i64>| async move { Ok::<_, String>(inputs) });
    match started {
        Err(StartError::Config(ConfigError { field, .. })) => assert_eq!(field, "refuse_late"),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("started with refuse_late and no event-time order"),
    }
}
