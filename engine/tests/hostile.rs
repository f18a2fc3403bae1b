//! Hostile user code: a key whose `Hash` panics, an order whose rank panics,
//! a weigher that panics. Ferry calls all three on the submitting caller's
//! side, before the input reaches a shard, so the caller gets the panic and
//! the shard never sees the input: it keeps serving everyone else, and its
//! counters stay consistent (nothing admitted, nothing refused for them).
//! A key's `Eq` is different: it runs on the shard, and a panic there takes
//! the shard down; the last test checks that no caller is left waiting.
//! Each test runs on each runtime. The two cases where the user's function
//! is part of the hostility (the error it returns, a batch in flight when
//! the shard goes down) run with trips too (`start_trips`, each batch of a
//! trip run by the same batch function); the others fail on the caller's
//! side before an input reaches a shard, whichever way batches are carried.

use std::hash::{Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};

use ferry::{Engine, FerryError, Order, Runtime, ShardId};
use futures::future::join_all;

mod support;
use support::{on_each_runtime, on_each_runtime_and_way, StartAs, Way};

/// Caller threads, and submits per thread.
const THREADS: u64 = 4;
const SUBMITS: u64 = 500;

/// A key whose hash panics for every value ending in 3.
#[derive(Clone, Debug, PartialEq, Eq)]
struct TouchyKey(u64);

impl Hash for TouchyKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        assert!(self.0 % 10 != 3, "hashing key {} panicked", self.0);
        self.0.hash(state);
    }
}

async fn echo_plus_one<K>(_key: K, inputs: Vec<u64>) -> Result<Vec<u64>, String> {
    Ok(inputs.iter().map(|x| x + 1).collect())
}

/// Several threads submit `key_of(i)` / input `t * 10_000 + i`; a submit
/// for which `poisoned(i, input)` holds must panic on the caller, every
/// other one must be answered `input + 1`. Returns how many panicked and
/// how many were answered.
fn hammer<K>(
    engine: &Engine<K, u64, u64, String>,
    key_of: fn(u64) -> K,
    poisoned: fn(u64, u64) -> bool,
) -> (u64, u64)
where
    K: Hash + Eq + Clone + Send + 'static,
{
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let mut panicked = 0;
                let mut waiting = Vec::new();
                for i in 0..SUBMITS {
                    let input = t * 10_000 + i;
                    let submitted =
                        catch_unwind(AssertUnwindSafe(|| engine.submit(key_of(i), input)));
                    match (poisoned(i, input), submitted) {
                        (true, Err(_)) => panicked += 1,
                        (false, Ok(submit)) => waiting.push((input, submit)),
                        (true, Ok(_)) => panic!("input {input}: the hostile call did not panic"),
                        (false, Err(_)) => panic!("input {input}: a harmless submit panicked"),
                    }
                }
                let (inputs, submits): (Vec<u64>, Vec<_>) = waiting.into_iter().unzip();
                let outcomes = futures::executor::block_on(join_all(submits));
                for (input, outcome) in inputs.iter().zip(&outcomes) {
                    assert_eq!(*outcome, Ok(input + 1), "input {input}");
                }
                (panicked, outcomes.len() as u64)
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|thread| thread.join().expect("caller thread"))
        .fold((0, 0), |(p, a), (tp, ta)| (p + tp, a + ta))
}

/// After the run: nothing of the hostile submits reached a shard, the rest
/// was admitted, sent and answered, and the shards are quiet.
fn assert_books_balance<K, I, O, E>(engine: &Engine<K, I, O, E>, answered: u64)
where
    K: Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    engine.close();
    engine.join();
    let stats = engine.stats().total();
    assert_eq!(
        (
            stats.admitted,
            stats.sent,
            stats.answered,
            stats.refused,
            stats.lanes
        ),
        (answered, answered, answered, 0, 0),
        "{stats:?}"
    );
}

on_each_runtime!(a_key_whose_hash_panics_panics_its_own_caller_only);
fn a_key_whose_hash_panics_panics_its_own_caller_only(runtime: Runtime) {
    let engine: Engine<TouchyKey, u64, u64, String> = Engine::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .max_batch_size(8)
        .start(|_shard| echo_plus_one::<TouchyKey>)
        .unwrap();
    let (panicked, answered) = hammer(&engine, |i| TouchyKey(i % 50), |i, _| i % 50 % 10 == 3);
    assert_eq!(panicked, THREADS * SUBMITS / 10);
    assert_eq!(answered, THREADS * SUBMITS - panicked);

    // The same key panics the same way for `submit_blocking` and for a
    // tokio task, and the engine still answers a good key right after.
    assert!(catch_unwind(AssertUnwindSafe(|| engine.submit_blocking(TouchyKey(3), 1))).is_err());
    let tokio_callers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let task = {
        let engine = engine.clone();
        tokio_callers.spawn(async move { engine.submit(TouchyKey(13), 2).await })
    };
    assert!(tokio_callers.block_on(task).unwrap_err().is_panic());
    assert_eq!(engine.submit_blocking(TouchyKey(4), 41), Ok(42));
    assert_books_balance(&engine, answered + 1);
}

on_each_runtime!(a_panicking_hash_in_a_task_on_a_shard_ends_that_task_only);
fn a_panicking_hash_in_a_task_on_a_shard_ends_that_task_only(runtime: Runtime) {
    let engine: Engine<TouchyKey, u64, u64, String> = Engine::builder()
        .runtime(runtime)
        .shards(1)
        .pin(false)
        .start(|_shard| echo_plus_one::<TouchyKey>)
        .unwrap();
    let shard = ShardId::new(0);

    let (done, ended) = futures::channel::oneshot::channel::<()>();
    let on_shard = engine.clone();
    engine
        .spawn_on(shard, move || async move {
            let _ = on_shard.submit_local(TouchyKey(23), 1).await;
            let _ = done.send(());
        })
        .unwrap();
    assert!(
        futures::executor::block_on(ended).is_err(),
        "the task ended at the panic, dropping its sender"
    );

    // The shard goes on: a task on it and a caller elsewhere are served.
    let (done, answer) = futures::channel::oneshot::channel();
    let on_shard = engine.clone();
    engine
        .spawn_on(shard, move || async move {
            let _ = done.send(on_shard.submit_local(TouchyKey(24), 9).await);
        })
        .unwrap();
    assert_eq!(futures::executor::block_on(answer).unwrap(), Ok(10));
    assert_eq!(engine.submit_blocking(TouchyKey(25), 19), Ok(20));
    assert_books_balance(&engine, 2);
}

on_each_runtime!(a_rank_that_panics_panics_its_own_caller_only);
fn a_rank_that_panics_panics_its_own_caller_only(runtime: Runtime) {
    // Inputs ending in 7 cannot be ranked.
    let order = Order::by(|input: &u64| {
        assert!(input % 10 != 7, "cannot rank input {input}");
        -(*input as i64)
    });
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .max_batch_size(8)
        .order(order)
        .start(|_shard| echo_plus_one::<u64>)
        .unwrap();
    let (panicked, answered) = hammer(&engine, |i| i % 40, |_, input| input % 10 == 7);
    assert_eq!(panicked, THREADS * SUBMITS / 10);
    assert_eq!(answered, THREADS * SUBMITS - panicked);

    // On a shard's own thread the rank is computed there, beside the loop:
    // the panic ends the task, and the shard still serves its keys.
    let key = (0..)
        .find(|k| engine.shard_of(k) == ShardId::new(0))
        .unwrap();
    let (done, ended) = futures::channel::oneshot::channel::<()>();
    let on_shard = engine.clone();
    engine
        .spawn_on(ShardId::new(0), move || async move {
            let _ = on_shard.submit_local(key, 17).await;
            let _ = done.send(());
        })
        .unwrap();
    assert!(futures::executor::block_on(ended).is_err());
    let (done, answer) = futures::channel::oneshot::channel();
    let on_shard = engine.clone();
    engine
        .spawn_on(ShardId::new(0), move || async move {
            let _ = done.send(on_shard.submit_local(key, 18).await);
        })
        .unwrap();
    assert_eq!(futures::executor::block_on(answer).unwrap(), Ok(19));
    assert_books_balance(&engine, answered + 1);
}

on_each_runtime!(a_weigher_that_panics_panics_its_own_caller_only);
fn a_weigher_that_panics_panics_its_own_caller_only(runtime: Runtime) {
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .max_batch_size(8)
        .max_batch_weight(1_000)
        .weigh(|input: &u64| {
            assert!(input % 10 != 9, "cannot weigh input {input}");
            input % 5 + 1
        })
        .start(|_shard| echo_plus_one::<u64>)
        .unwrap();
    let (panicked, answered) = hammer(&engine, |i| i % 40, |_, input| input % 10 == 9);
    assert_eq!(panicked, THREADS * SUBMITS / 10);
    assert_eq!(answered, THREADS * SUBMITS - panicked);
    assert_books_balance(&engine, answered);
}

on_each_runtime_and_way!(an_error_whose_display_panics_is_still_delivered);
/// The batch function's error type may be anything `Clone`; a hostile
/// `Display` is never called by the engine on its own (only when a caller
/// formats the error), so it cannot take a shard down. With trips, each
/// batch's error is cloned to each of its callers the same way.
fn an_error_whose_display_panics_is_still_delivered(runtime: Runtime, way: Way) {
    #[derive(Clone, Debug, PartialEq)]
    struct Sulky;
    impl std::fmt::Display for Sulky {
        fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            panic!("Display of the batch error panicked")
        }
    }
    let engine: Engine<u64, u64, u64, Sulky> = Engine::builder()
        .runtime(runtime)
        .shards(1)
        .pin(false)
        .start_as(way, |_shard| {
            |_key: u64, _inputs: Vec<u64>| async move { Err::<Vec<u64>, _>(Sulky) }
        })
        .unwrap();
    let outcomes: Vec<_> = (0..100).map(|i| engine.submit(i % 7, i)).collect();
    for outcome in futures::executor::block_on(join_all(outcomes)) {
        assert!(matches!(outcome, Err(FerryError::Failed(Sulky))));
    }
    assert_books_balance(&engine, 100);
    assert_eq!(engine.stats().total().failed, 100);
}

/// A key whose equality panics when compared with key 13.
#[derive(Clone, Debug)]
struct ExplosiveEq(u64);

impl Hash for ExplosiveEq {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialEq for ExplosiveEq {
    fn eq(&self, other: &Self) -> bool {
        assert!(self.0 != 13, "comparing key 13 panicked");
        self.0 == other.0
    }
}
impl Eq for ExplosiveEq {}

on_each_runtime_and_way!(a_key_whose_eq_panics_on_the_shard_leaves_no_caller_waiting);
/// `Eq` runs on the shard (to find a key's lane), so a panic there takes the
/// shard down. What must still hold: every caller gets an outcome — answered,
/// `Aborted` if its batch (or the trip carrying it) was in flight, or
/// refused with its own input — and nobody waits forever.
fn a_key_whose_eq_panics_on_the_shard_leaves_no_caller_waiting(runtime: Runtime, way: Way) {
    let engine: Engine<ExplosiveEq, u64, u64, String> = Engine::builder()
        .runtime(runtime)
        .shards(1)
        .pin(false)
        .max_in_flight_batches(1)
        .start_as(way, |_| {
            |_key: ExplosiveEq, inputs: Vec<u64>| async move {
                support::sleep(std::time::Duration::from_millis(5)).await;
                Ok::<_, String>(inputs)
            }
        })
        .unwrap();
    // Key 13's lane exists while its first batch runs; the second input of
    // key 13 is compared with it, and the comparison panics on the shard.
    let inputs: Vec<u64> = (0..3).chain(10..200).collect();
    let pending: Vec<_> = inputs
        .iter()
        .map(|&i| engine.submit(ExplosiveEq(if i < 3 { 13 } else { i }), i))
        .collect();
    let outcomes = futures::executor::block_on(join_all(pending));
    // An input never sent comes back with itself; `Aborted` is only for a
    // batch that was in flight.
    for (outcome, input) in outcomes.iter().zip(&inputs) {
        match outcome {
            Ok(_) | Err(FerryError::Aborted) => {}
            Err(FerryError::Refused { input: back, .. }) => assert_eq!(back, input),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        engine.stats().shards[0].stopped,
        1,
        "the shard should have gone down: {outcomes:?}"
    );
    // The shard is gone: new inputs are refused with the input, not lost.
    match engine.submit_blocking(ExplosiveEq(1), 77) {
        Err(FerryError::Refused { input: 77, .. }) => {}
        other => panic!("{other:?}"),
    }
    engine.close();
    engine.join();
}

on_each_runtime!(a_shard_going_down_mid_trip_aborts_every_batch_of_the_trip);
/// The same panic of `Eq` while a trip of several keys is in flight: every
/// batch of that trip is answered `Aborted` (whether the store applied it
/// is unknown), the trip before it was answered as usual, and the input
/// whose admission panicked comes back to its caller.
fn a_shard_going_down_mid_trip_aborts_every_batch_of_the_trip(runtime: Runtime) {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let open = Arc::new(AtomicBool::new(false));
    let engine: Engine<ExplosiveEq, u64, u64, String> = {
        let open = open.clone();
        Engine::builder()
            .runtime(runtime)
            .shards(1)
            .pin(false)
            .max_in_flight_batches(1)
            .start_trips(move |_| {
                let open = open.clone();
                move |trip: Vec<(ExplosiveEq, Vec<u64>)>| {
                    let open = open.clone();
                    async move {
                        // The trip of key 1 waits for the gate; any other
                        // never ends (until the shard drops it).
                        let gated = trip.iter().any(|(key, _)| key.0 == 1);
                        while !(gated && open.load(SeqCst)) {
                            support::sleep(Duration::from_micros(200)).await;
                        }
                        trip.into_iter()
                            .map(|(_, inputs)| Ok::<_, String>(inputs))
                            .collect::<Vec<_>>()
                    }
                }
            })
            .unwrap()
    };
    let wait_for = |what: &str, reached: &dyn Fn(&ferry::ShardStats) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !reached(&engine.stats().shards[0]) {
            assert!(Instant::now() < deadline, "waited for {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    let first = engine.submit(ExplosiveEq(1), 100);
    wait_for("the first trip", &|s| s.trips == 1);
    let mates: Vec<_> = [(20, 1), (21, 2), (13, 3)]
        .into_iter()
        .map(|(key, input)| engine.submit(ExplosiveEq(key), input))
        .collect();
    wait_for("three keys waiting", &|s| s.waiting == 3);
    open.store(true, SeqCst);
    assert_eq!(futures::executor::block_on(first), Ok(100));
    wait_for("the trip of keys 20, 21 and 13", &|s| {
        s.trips == 2 && s.in_flight == 1 && s.waiting == 0
    });
    // Key 13's lane is busy in that trip: this input is compared with it.
    assert_eq!(
        engine.submit_blocking(ExplosiveEq(13), 4),
        Err(FerryError::Refused {
            input: 4,
            reason: ferry::Refused::Closed
        }),
        "the input whose admission panicked, handed back"
    );
    assert_eq!(
        futures::executor::block_on(join_all(mates)),
        vec![Err(FerryError::Aborted); 3],
        "every batch of the trip in flight"
    );
    // (The shard counts itself stopped once it has unwound, which may be
    // just after its callers heard.)
    wait_for("the shard counted stopped", &|s| s.stopped == 1);
    engine.close();
    engine.join();
}
