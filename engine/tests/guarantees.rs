//! The guarantees G1–G10 (docs/guarantees.md), each checked through the
//! public API with a real engine on each runtime (glommio shards and tokio
//! shards), callers on plain threads, tokio and `futures::executor`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry::{Engine, FerryError, Order, Refused, Runtime};
use futures::future::join_all;

mod support;
use support::{on_each_runtime, on_each_runtime_and_way, StartAs, Way};

/// Every batch a test's batch function saw: (key, inputs), in start order.
type Seen = Arc<Mutex<Vec<(u64, Vec<u64>)>>>;

/// Waits on the shard (without blocking it) until `open` is set.
async fn wait_for(open: &AtomicBool) {
    while !open.load(SeqCst) {
        support::sleep(Duration::from_micros(200)).await;
    }
}

fn echo_engine(
    runtime: Runtime,
    way: Way,
    shards: usize,
    seen: Seen,
    configure: impl FnOnce(
        ferry::Builder<u64, u64, u64, String>,
    ) -> ferry::Builder<u64, u64, u64, String>,
) -> Engine<u64, u64, u64, String> {
    let engine = configure(Engine::builder().runtime(runtime).shards(shards).pin(false))
        .start_as(way, move |_shard| {
            let seen = seen.clone();
            move |key: u64, inputs: Vec<u64>| {
                seen.lock().unwrap().push((key, inputs.clone()));
                async move { Ok::<_, String>(inputs) }
            }
        })
        .expect("engine starts");
    assert_eq!(engine.runtime(), runtime, "runs on the runtime asked for");
    engine
}

/// An engine whose batch function records each batch in `seen`, then holds
/// it until `open` is set: a key stays busy, and inputs pile up behind it.
fn gated_engine(
    runtime: Runtime,
    way: Way,
    open: &Arc<AtomicBool>,
    seen: &Seen,
    configure: impl FnOnce(Builder) -> Builder,
) -> Engine<u64, u64, u64, String> {
    let (open, seen) = (open.clone(), seen.clone());
    let engine = configure(Engine::builder().runtime(runtime).shards(1).pin(false))
        .start_as(way, move |_shard| {
            let (open, seen) = (open.clone(), seen.clone());
            move |key: u64, inputs: Vec<u64>| {
                let (open, seen) = (open.clone(), seen.clone());
                async move {
                    seen.lock().unwrap().push((key, inputs.clone()));
                    wait_for(&open).await;
                    Ok::<_, String>(inputs)
                }
            }
        })
        .expect("engine starts");
    assert_eq!(engine.runtime(), runtime, "runs on the runtime asked for");
    engine
}

type Builder = ferry::Builder<u64, u64, u64, String>;

on_each_runtime_and_way!(g1_one_batch_in_flight_per_key);
fn g1_one_batch_in_flight_per_key(runtime: Runtime, way: Way) {
    let in_flight: Arc<Mutex<HashMap<u64, usize>>> = Arc::default();
    let most_per_key = Arc::new(AtomicUsize::new(0));
    let most_overall = Arc::new(AtomicUsize::new(0));
    let engine: Engine<u64, u64, u64, String> = {
        let (in_flight, most_per_key, most_overall) = (
            in_flight.clone(),
            most_per_key.clone(),
            most_overall.clone(),
        );
        Engine::builder()
            .runtime(runtime)
            .shards(2)
            .pin(false)
            .max_batch_size(4)
            .start_as(way, move |_shard| {
                let (in_flight, most_per_key, most_overall) = (
                    in_flight.clone(),
                    most_per_key.clone(),
                    most_overall.clone(),
                );
                move |key: u64, inputs: Vec<u64>| {
                    let (in_flight, most_per_key, most_overall) = (
                        in_flight.clone(),
                        most_per_key.clone(),
                        most_overall.clone(),
                    );
                    async move {
                        {
                            let mut map = in_flight.lock().unwrap();
                            let n = map.entry(key).or_default();
                            *n += 1;
                            most_per_key.fetch_max(*n, SeqCst);
                            most_overall.fetch_max(map.values().sum(), SeqCst);
                        }
                        support::sleep(Duration::from_millis(1)).await;
                        *in_flight.lock().unwrap().get_mut(&key).unwrap() -= 1;
                        Ok::<_, String>(inputs)
                    }
                }
            })
            .unwrap()
    };
    let callers: Vec<_> = (0..4)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                futures::executor::block_on(join_all(
                    (0..400).map(|i| engine.submit(i % 5, t * 1000 + i)),
                ))
            })
        })
        .collect();
    for caller in callers {
        assert!(caller.join().unwrap().iter().all(|outcome| outcome.is_ok()));
    }
    assert_eq!(
        most_per_key.load(SeqCst),
        1,
        "two batches of one key overlapped"
    );
    assert!(
        most_overall.load(SeqCst) > 1,
        "different keys never overlapped: the test did not exercise concurrency"
    );
}

on_each_runtime_and_way!(g2_a_keys_inputs_are_sent_in_admission_order_by_default);
fn g2_a_keys_inputs_are_sent_in_admission_order_by_default(runtime: Runtime, way: Way) {
    let seen: Seen = Arc::default();
    let engine = echo_engine(runtime, way, 2, seen.clone(), |b| b.max_batch_size(3));
    // Submitted from one thread without waiting: admission order is submit
    // order, so each key's batches, concatenated, are that order.
    let outcomes =
        futures::executor::block_on(join_all((0..600_u64).map(|i| engine.submit(i % 4, i))));
    assert!(outcomes.iter().all(|o| o.is_ok()));
    let seen = seen.lock().unwrap();
    for key in 0..4 {
        let sent: Vec<u64> = seen
            .iter()
            .filter(|(k, _)| *k == key)
            .flat_map(|(_, inputs)| inputs.iter().copied())
            .collect();
        let submitted: Vec<u64> = (0..600).filter(|i| i % 4 == key).collect();
        assert_eq!(sent, submitted, "key {key}");
    }
}

on_each_runtime_and_way!(g2_inputs_waiting_together_are_sent_by_rank_ties_by_admission);
fn g2_inputs_waiting_together_are_sent_by_rank_ties_by_admission(runtime: Runtime, way: Way) {
    let open = Arc::new(AtomicBool::new(false));
    let seen: Seen = Arc::default();
    // Input = rank * 100 + admission number; rank = input / 100.
    let engine = gated_engine(runtime, way, &open, &seen, |b| {
        b.max_batch_size(64)
            .order(Order::by(|input: &u64| (*input / 100) as i64))
    });
    let _open_on_exit = Opener(open.clone());
    // The first input goes alone and holds the key busy; the rest wait together.
    let first = engine.submit(9, 500);
    while seen.lock().unwrap().is_empty() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let ranks = [3_u64, 1, 2, 1, 3, 0, 2, 1];
    let rest: Vec<_> = ranks
        .iter()
        .enumerate()
        .map(|(n, rank)| engine.submit(9, rank * 100 + n as u64))
        .collect();
    while engine.stats().total().waiting < ranks.len() as u64 {
        std::thread::sleep(Duration::from_millis(1));
    }
    open.store(true, SeqCst);
    futures::executor::block_on(first).unwrap();
    futures::executor::block_on(join_all(rest));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].1, vec![5, 101, 103, 107, 202, 206, 300, 304]);
}

on_each_runtime_and_way!(g2_a_late_input_goes_in_the_next_batch);
fn g2_a_late_input_goes_in_the_next_batch(runtime: Runtime, way: Way) {
    let seen: Seen = Arc::default();
    let engine = {
        let seen = seen.clone();
        Engine::<u64, u64, u64, String>::builder()
            .runtime(runtime)
            .shards(1)
            .pin(false)
            .order(Order::by(|input: &u64| *input as i64))
            .start_as(way, move |_| {
                let seen = seen.clone();
                move |key: u64, inputs: Vec<u64>| {
                    seen.lock().unwrap().push((key, inputs.clone()));
                    async move { Ok::<_, String>(inputs) }
                }
            })
            .unwrap()
    };
    assert_eq!(engine.submit_blocking(1, 50), Ok(50));
    // Ranked below what was already sent: neither held nor refused.
    assert_eq!(engine.submit_blocking(1, 10), Ok(10));
    assert_eq!(*seen.lock().unwrap(), vec![(1, vec![50]), (1, vec![10])]);
}

on_each_runtime_and_way!(g3_a_batch_carries_one_keys_inputs_and_that_key);
fn g3_a_batch_carries_one_keys_inputs_and_that_key(runtime: Runtime, way: Way) {
    let seen: Seen = Arc::default();
    let engine = echo_engine(runtime, way, 2, seen.clone(), |b| b.max_batch_size(16));
    // Input = key * 1_000_000 + n, so each input names its key.
    let callers: Vec<_> = (0..3)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                futures::executor::block_on(join_all((0..500_u64).map(|n| {
                    let key = (n + t) % 7;
                    engine.submit(key, key * 1_000_000 + n)
                })))
            })
        })
        .collect();
    for caller in callers {
        assert!(caller.join().unwrap().iter().all(|o| o.is_ok()));
    }
    let seen = seen.lock().unwrap();
    assert!(
        seen.iter().any(|(_, inputs)| inputs.len() > 1),
        "nothing was batched"
    );
    for (key, inputs) in seen.iter() {
        assert!(
            inputs.iter().all(|input| input / 1_000_000 == *key),
            "{key}: {inputs:?}"
        );
    }
}

on_each_runtime_and_way!(g4_every_submit_ends_in_exactly_one_outcome_on_any_executor);
fn g4_every_submit_ends_in_exactly_one_outcome_on_any_executor(runtime: Runtime, way: Way) {
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .max_batch_size(8)
        .start_as(way, |_| {
            |key: u64, inputs: Vec<u64>| async move {
                if key.is_multiple_of(5) {
                    Err(format!("key {key} is read-only"))
                } else {
                    Ok(inputs)
                }
            }
        })
        .unwrap();
    let n = 2_000_u64;
    let check = |outcomes: Vec<Result<u64, FerryError<u64, String>>>, offset: u64| {
        for (i, outcome) in outcomes.into_iter().enumerate() {
            let input = offset + i as u64;
            match outcome {
                Ok(out) => assert_eq!(out, input),
                Err(FerryError::Failed(msg)) => assert!(msg.contains("read-only")),
                Err(other) => panic!("unexpected {other}"),
            }
        }
    };
    // tokio tasks
    let tokio_callers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let outcomes = tokio_callers.block_on(async {
        let tasks: Vec<_> = (0..n)
            .map(|i| {
                let engine = engine.clone();
                tokio::spawn(async move { engine.submit(i % 13, i).await })
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.unwrap());
        }
        outcomes
    });
    check(outcomes, 0);
    // futures::executor
    let outcomes =
        futures::executor::block_on(join_all((n..2 * n).map(|i| engine.submit(i % 13, i))));
    check(outcomes, n);
    // plain threads
    let outcomes: Vec<_> = (2 * n..2 * n + 200)
        .map(|i| engine.submit_blocking(i % 13, i))
        .collect();
    check(outcomes, 2 * n);

    engine.close();
    engine.join();
    let total = engine.stats().total();
    assert_eq!(total.admitted, 2 * n + 200);
    assert_eq!(
        (total.sent, total.answered, total.lanes),
        (total.admitted, total.admitted, 0)
    );
}

on_each_runtime_and_way!(g4_a_dropped_submit_is_still_sent);
fn g4_a_dropped_submit_is_still_sent(runtime: Runtime, way: Way) {
    let seen: Seen = Arc::default();
    let engine = echo_engine(runtime, way, 1, seen.clone(), |b| b);
    drop(engine.submit(3, 33));
    engine.close();
    engine.join();
    assert_eq!(*seen.lock().unwrap(), vec![(3, vec![33])]);
    assert_eq!(engine.stats().total().answered, 1);
}

on_each_runtime_and_way!(g5_lanes_go_away_when_their_work_is_done);
fn g5_lanes_go_away_when_their_work_is_done(runtime: Runtime, way: Way) {
    let seen: Seen = Arc::default();
    let engine = echo_engine(runtime, way, 2, seen, |b| b);
    let outcomes =
        futures::executor::block_on(join_all((0..20_000_u64).map(|k| engine.submit(k, k))));
    assert!(outcomes.iter().all(|o| o.is_ok()));
    // Stats are published once per shard round; give the last round time.
    // A quiet snapshot alone is not enough: a round that found the intake
    // empty for a moment, before the last pushes, was quiet too.
    let deadline = Instant::now() + Duration::from_secs(10);
    let done = |stats: &ferry::Stats| stats.is_quiet() && stats.total().answered == 20_000;
    while !done(&engine.stats()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let total = engine.stats().total();
    assert_eq!((total.lanes, total.waiting, total.answered), (0, 0, 20_000));
}

on_each_runtime_and_way!(g6_past_a_bound_submit_is_refused_at_once_with_the_input);
fn g6_past_a_bound_submit_is_refused_at_once_with_the_input(runtime: Runtime, way: Way) {
    let open = Arc::new(AtomicBool::new(false));
    let seen: Seen = Arc::default();
    let engine = gated_engine(runtime, way, &open, &seen, |b| {
        b.max_batch_size(1)
            .max_in_flight_batches(1)
            .max_waiting(10)
            .max_batch_weight(100)
            .weigh(|input: &u64| *input)
    });
    let _open_on_exit = Opener(open.clone());
    // Too heavy for any batch: refused on the caller's thread.
    match futures::executor::block_on(engine.submit(1, 101)) {
        Err(FerryError::Refused {
            input: 101,
            reason: Refused::TooHeavy,
        }) => {}
        other => panic!("{other:?}"),
    }
    // Submitted one at a time, each seen by the shard before the next:
    // one goes in flight, max_waiting (10) wait, the rest are refused Full.
    let mut pending = Vec::new();
    for i in 0..15 {
        pending.push(engine.submit(i, 1));
        let seen = |s: ferry::ShardStats| s.admitted + s.refused;
        while seen(engine.stats().total()) < i + 2 {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    let stats = engine.stats().total();
    assert_eq!(
        (stats.in_flight, stats.waiting, stats.admitted),
        (1, 10, 11),
        "{stats:?}"
    );
    open.store(true, SeqCst);
    let outcomes = futures::executor::block_on(join_all(pending));
    for (i, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Ok(1) if i < 11 => {}
            Err(FerryError::Refused {
                input: 1,
                reason: Refused::Full,
            }) if i >= 11 => {}
            other => panic!("input {i}: {other:?}"),
        }
    }
}

on_each_runtime_and_way!(g6_a_full_intake_refuses_at_once);
fn g6_a_full_intake_refuses_at_once(runtime: Runtime, way: Way) {
    let open = Arc::new(AtomicBool::new(false));
    let seen: Seen = Arc::default();
    let engine = gated_engine(runtime, way, &open, &seen, |b| {
        b.intake_capacity(4).max_waiting(4).max_in_flight_batches(1)
    });
    let _open_on_exit = Opener(open.clone());
    // At most what is in flight + 4 waiting + 4 in the intake can be held.
    // Every input has a key of its own: a batch in flight holds one input,
    // a trip in flight as many as were waiting when it left (at most 4).
    let in_flight_max = match way {
        Way::Batches => 1,
        Way::Trips => 4,
    };
    let pending: Vec<_> = (0..1_000).map(|i| engine.submit(i, i)).collect();
    open.store(true, SeqCst);
    let outcomes = futures::executor::block_on(join_all(pending));
    let mut held = 0;
    for (i, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Ok(out) => {
                assert_eq!(out, i as u64);
                held += 1;
            }
            Err(FerryError::Refused {
                input,
                reason: Refused::Full,
            }) => assert_eq!(input, i as u64),
            Err(other) => panic!("{other}"),
        }
    }
    assert!((1..=in_flight_max + 4 + 4).contains(&held), "{held} held");
}

/// Opens a gate when dropped, so a failing assertion cannot leave a batch
/// function waiting forever (and the engine's drop with it).
struct Opener(Arc<AtomicBool>);

impl Drop for Opener {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

on_each_runtime_and_way!(g6_the_queued_weight_is_bounded_too);
fn g6_the_queued_weight_is_bounded_too(runtime: Runtime, way: Way) {
    let open = Arc::new(AtomicBool::new(false));
    let seen: Seen = Arc::default();
    let engine = gated_engine(runtime, way, &open, &seen, |b| {
        b.max_in_flight_batches(1)
            .max_waiting_weight(50)
            .weigh(|input: &u64| *input)
    });
    let _open_on_exit = Opener(open.clone());
    let busy = engine.submit(0, 1);
    while engine.stats().total().in_flight == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Key 0 is busy: 20 + 20 wait (40 of 50), then 20 more would pass 50.
    let a = engine.submit(0, 20);
    let b = engine.submit(0, 20);
    let c = engine.submit(0, 20);
    match futures::executor::block_on(c) {
        Err(FerryError::Refused {
            input: 20,
            reason: Refused::Full,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(engine.stats().total().waiting_weight <= 50);
    open.store(true, SeqCst);
    let outcomes = futures::executor::block_on(join_all([busy, a, b]));
    assert_eq!(outcomes, vec![Ok(1), Ok(20), Ok(20)]);
}

on_each_runtime_and_way!(g7_a_key_that_always_has_more_cannot_starve_others);
fn g7_a_key_that_always_has_more_cannot_starve_others(runtime: Runtime, way: Way) {
    let open = Arc::new(AtomicBool::new(false));
    let seen: Seen = Arc::default();
    let engine = gated_engine(runtime, way, &open, &seen, |b| {
        b.max_batch_size(2).max_in_flight_batches(1)
    });
    let _open_on_exit = Opener(open.clone());
    // The hot key has 100 inputs waiting behind its first batch.
    let hot: Vec<_> = (0..101).map(|i| engine.submit(1, i)).collect();
    while engine.stats().total().admitted < 101 {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Wait for the cold input itself to be admitted (counting waiting
    // inputs would not tell it from the hot key's, whose first batch may
    // have held one input or two).
    let cold = engine.submit(2, 1000);
    while engine.stats().total().admitted < 102 {
        std::thread::sleep(Duration::from_millis(1));
    }
    open.store(true, SeqCst);
    assert_eq!(futures::executor::block_on(cold), Ok(1000));
    futures::executor::block_on(join_all(hot));
    let seen = seen.lock().unwrap();
    let cold_at = seen.iter().position(|(key, _)| *key == 2).unwrap();
    // The hot lane was in flight (batch 0) when the cold key became ready;
    // on completion it went to the back of the line, behind the cold key.
    assert_eq!(cold_at, 1, "{seen:?}");
}

on_each_runtime_and_way!(g8_a_partial_batch_waits_for_its_delay_then_goes);
fn g8_a_partial_batch_waits_for_its_delay_then_goes(runtime: Runtime, way: Way) {
    let seen: Seen = Arc::default();
    let delay = Duration::from_millis(30);
    let engine = echo_engine(runtime, way, 1, seen.clone(), |b| {
        b.max_batch_delay(delay).max_batch_size(10)
    });
    let started = Instant::now();
    let a = engine.submit(1, 1);
    let b = engine.submit(1, 2);
    let outcomes = futures::executor::block_on(join_all([a, b]));
    let waited = started.elapsed();
    assert_eq!(outcomes, vec![Ok(1), Ok(2)]);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(1, vec![1, 2])],
        "both inputs waited together"
    );
    assert!(waited >= delay, "sent before its delay: {waited:?}");
    // Generous: this is a liveness check, not a latency measurement.
    assert!(waited < delay + Duration::from_secs(5), "{waited:?}");

    // A full batch does not wait for the delay.
    let full = futures::executor::block_on(join_all((0..10).map(|i| engine.submit(2, i))));
    assert!(full.iter().all(|o| o.is_ok()));
    assert_eq!(seen.lock().unwrap()[1], (2, (0..10).collect()));
}

on_each_runtime_and_way!(g9_close_refuses_new_input_and_answers_everything_admitted);
fn g9_close_refuses_new_input_and_answers_everything_admitted(runtime: Runtime, way: Way) {
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .max_batch_size(4)
        .max_batch_delay(Duration::from_secs(3600))
        .start_as(way, |_| {
            |_key: u64, inputs: Vec<u64>| async move {
                support::sleep(Duration::from_micros(300)).await;
                Ok::<_, String>(inputs)
            }
        })
        .unwrap();
    let submitted = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..4_u64)
        .map(|t| {
            let engine = engine.clone();
            let submitted = submitted.clone();
            std::thread::spawn(move || {
                let mut futures = Vec::new();
                for i in 0..5_000_u64 {
                    futures.push((t * 10_000 + i, engine.submit(i % 50, t * 10_000 + i)));
                    submitted.fetch_add(1, SeqCst);
                }
                futures
                    .into_iter()
                    .map(|(input, f)| (input, futures::executor::block_on(f)))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    while submitted.load(SeqCst) < 2_000 {
        std::thread::yield_now();
    }
    // An hour-long delay would hold partial batches; close sends them anyway.
    engine.close();
    let (mut answered, mut refused) = (0, 0);
    for caller in callers {
        for (input, outcome) in caller.join().unwrap() {
            match outcome {
                Ok(out) => {
                    assert_eq!(out, input);
                    answered += 1;
                }
                Err(FerryError::Refused {
                    input: back,
                    reason: Refused::Closed,
                }) => {
                    assert_eq!(back, input);
                    refused += 1;
                }
                Err(other) => panic!("{other}"),
            }
        }
    }
    assert_eq!(answered + refused, 20_000);
    // Whether any caller lost the race with close depends on timing; what
    // may not happen is an outcome other than these two.
    assert!(answered >= 2_000, "{answered} answered, {refused} refused");
    engine.join();
    let total = engine.stats().total();
    assert_eq!(
        (total.admitted, total.answered, total.lanes),
        (answered, answered, 0)
    );
    match engine.submit_blocking(1, 5) {
        Err(FerryError::Refused {
            input: 5,
            reason: Refused::Closed,
        }) => {}
        other => panic!("{other:?}"),
    }
}

on_each_runtime_and_way!(g10_a_failing_batch_fails_only_its_own_callers);
fn g10_a_failing_batch_fails_only_its_own_callers(runtime: Runtime, way: Way) {
    #[derive(Clone, Debug, PartialEq)]
    struct StoreDown(&'static str);
    impl std::fmt::Display for StoreDown {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "store down: {}", self.0)
        }
    }
    let engine: Engine<u64, u64, u64, StoreDown> = Engine::builder()
        .runtime(runtime)
        .shards(1)
        .pin(false)
        .start_as(way, |_| {
            |key: u64, inputs: Vec<u64>| async move {
                match (key, inputs[0]) {
                    (1, 0) => panic!("the batch function panicked on purpose"),
                    (2, 0) => Err(StoreDown("replica lost")),
                    (3, 0) => Ok(vec![]),
                    _ => Ok(inputs),
                }
            }
        })
        .unwrap();
    assert_eq!(engine.submit_blocking(1, 0), Err(FerryError::Panicked));
    let failed = engine.submit_blocking(2, 0).unwrap_err();
    assert_eq!(failed, FerryError::Failed(StoreDown("replica lost")));
    assert_eq!(
        failed.to_string(),
        "the batch function failed: store down: replica lost"
    );
    assert_eq!(
        engine.submit_blocking(3, 0),
        Err(FerryError::WrongOutputCount {
            expected: 1,
            got: 0
        })
    );
    // The lanes were released and the shard goes on, for them and others.
    for key in 1..=4 {
        assert_eq!(engine.submit_blocking(key, 7), Ok(7), "key {key}");
    }
    engine.close();
    engine.join();
    let total = engine.stats().total();
    assert_eq!((total.admitted, total.answered), (7, 7));
}

on_each_runtime!(invalid_settings_are_typed_errors_naming_the_field);
fn invalid_settings_are_typed_errors_naming_the_field(runtime: Runtime) {
    type Settings = ferry::Builder<u64, u64, u64, String>;
    let cases: Vec<(&str, Settings)> = vec![
        ("shards", Engine::builder().shards(0)),
        ("shards", Engine::builder().shards(10_000).pin(true)),
        ("cpus", Engine::builder().shards(2).cpus([0])),
        ("cpus", Engine::builder().shards(1).cpus([100_000])),
        ("max_batch_size", Engine::builder().max_batch_size(0)),
        ("max_batch_weight", Engine::builder().max_batch_weight(0)),
        (
            "max_in_flight_batches",
            Engine::builder().max_in_flight_batches(0),
        ),
        ("max_waiting", Engine::builder().max_waiting(0)),
        (
            "max_waiting_weight",
            Engine::builder().max_waiting_weight(0),
        ),
        ("intake_capacity", Engine::builder().intake_capacity(0)),
    ];
    for (field, builder) in cases {
        let err = builder
            .runtime(runtime)
            .start(|_| |_: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
            .unwrap_err();
        match &err {
            ferry::StartError::Config(config) => assert_eq!(config.field, field, "{err}"),
            other => panic!("{field}: {other}"),
        }
        assert!(err.to_string().contains(field), "{err}");
    }
    // More shards than CPUs is fine without pinning (the default).
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .runtime(runtime)
        .shards(4)
        .start(|_| |_: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
        .unwrap();
    assert_eq!(engine.submit_blocking(1, 1), Ok(1));
}

on_each_runtime!(pinned_shards_serve_and_the_handle_is_send_sync_clone);
fn pinned_shards_serve_and_the_handle_is_send_sync_clone(runtime: Runtime) {
    fn assert_handle<T: Clone + Send + Sync + 'static>(_: &T) {}
    fn assert_send<T: Send>(_: &T) {}
    let engine: Engine<String, u64, u64, String> = Engine::builder()
        .runtime(runtime)
        .shards(1)
        .start(|shard| {
            move |_: String, inputs: Vec<u64>| async move {
                Ok::<_, String>(inputs.iter().map(|i| i + shard.index() as u64).collect())
            }
        })
        .unwrap();
    assert_handle(&engine);
    let submit = engine.submit("k".into(), 1);
    assert_send(&submit);
    assert_eq!(futures::executor::block_on(submit), Ok(1));
    drop(engine); // the last handle closes and joins
}
