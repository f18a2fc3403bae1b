//! Trips: one call of the trip function carrying the batches of several keys
//! of one shard (`Builder::start_trips`).
//!
//! What is checked, each test on each runtime:
//!
//! - a trip carries the batches of every key ready when a slot frees, in
//!   one call and one slot, each key once with its inputs in admission
//!   order; the counters (`trips`, `batches`, `trip_batches`) agree;
//! - `max_trip_batches` bounds a trip, and keys go into trips first come,
//!   first served (by when their lanes became ready; a key whose batch
//!   completed with inputs left goes to the back of the line);
//! - `max_trip_weight` bounds a trip's weight: a batch that does not fit
//!   ends the trip and opens the next one, and a first batch heavier than
//!   the bound still goes, alone;
//! - outcomes are per batch (an error or a wrong output count fails only
//!   that batch's callers), but a wrong number of results or a panic, when
//!   called or while running, fails every batch of the trip; the shard goes
//!   on serving, and its counters agree with what the callers saw;
//! - G1 under load: a key is never in two trips in flight, and never twice
//!   in one trip; trips in flight never exceed the slots;
//! - close with trips in flight answers everything admitted (G9), and a
//!   fallible trip factory failing on one shard fails the whole start.
//!
//! Most tests hold a first trip open with a gate (the trip of key `GATE`
//! waits until the test opens it) with one slot, so that everything the
//! test submits meanwhile waits, and the trips that follow are known
//! exactly.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry::{Engine, FerryError, Outcome, Refused, Runtime, ShardId, StartError};
use futures::future::join_all;
use futures::stream::{FuturesUnordered, StreamExt};

mod support;
use support::on_each_runtime;

type Builder = ferry::Builder<u64, u64, u64, String>;
/// One call of the trip function: each key with its batch, in trip order.
type Trip = Vec<(u64, Vec<u64>)>;
/// Every trip the trip function was called with, in call order.
type Trips = Arc<Mutex<Vec<Trip>>>;
type Answer = Outcome<u64, u64, String>;

/// The key whose trip waits until the test opens the gate.
const GATE: u64 = 0;
/// Keys with a behaviour of their own (every other key is answered
/// `input + 1`):
/// its batch's result is an error;
const FAILS: u64 = 91;
/// its batch's result has one output too many;
const MISCOUNTS: u64 = 92;
/// its trip returns one result too few;
const ONE_RESULT_SHORT: u64 = 93;
/// its trip returns one result too many;
const ONE_RESULT_OVER: u64 = 94;
/// its trip panics when the trip function is called;
const PANICS_WHEN_CALLED: u64 = 95;
/// its trip panics while it runs.
const PANICS_WHILE_RUNNING: u64 = 96;

/// How long a test waits for the engine to reach a state before failing.
const PATIENCE: Duration = Duration::from_secs(10);

/// Waits until `reached` holds, failing after `PATIENCE`.
fn wait_until(what: &str, mut reached: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !reached() {
        assert!(Instant::now() < deadline, "waited {PATIENCE:?} for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn store_error(key: u64) -> String {
    format!("store refused key {key}")
}

/// The trip function of every gated test, as described at `GATE` and the
/// keys after it; it records each trip it is called with.
fn trip_fn(
    trips: Trips,
    open: Arc<AtomicBool>,
) -> impl Fn(Trip) -> futures::future::LocalBoxFuture<'static, Vec<Result<Vec<u64>, String>>> {
    use futures::FutureExt;
    move |trip: Trip| {
        trips.lock().unwrap().push(trip.clone());
        let keys: Vec<u64> = trip.iter().map(|(key, _)| *key).collect();
        assert!(
            !keys.contains(&PANICS_WHEN_CALLED),
            "the trip function panicked when called"
        );
        let open = open.clone();
        async move {
            if keys.contains(&GATE) {
                while !open.load(SeqCst) {
                    support::sleep(Duration::from_micros(200)).await;
                }
            }
            if keys.contains(&PANICS_WHILE_RUNNING) {
                support::yield_now().await;
                panic!("the trip panicked while running");
            }
            let mut results: Vec<Result<Vec<u64>, String>> = trip
                .into_iter()
                .map(|(key, inputs)| match key {
                    FAILS => Err(store_error(key)),
                    MISCOUNTS => Ok(inputs.iter().chain(inputs.first()).map(|x| x + 1).collect()),
                    _ => Ok(inputs.iter().map(|x| x + 1).collect()),
                })
                .collect();
            if keys.contains(&ONE_RESULT_SHORT) {
                results.pop();
            }
            if keys.contains(&ONE_RESULT_OVER) {
                results.push(Ok(Vec::new()));
            }
            results
        }
        .boxed_local()
    }
}

/// An engine of one shard whose first trip can be held open.
struct Rig {
    engine: Engine<u64, u64, u64, String>,
    trips: Trips,
    open: Arc<AtomicBool>,
}

impl Rig {
    fn new(runtime: Runtime, configure: impl FnOnce(Builder) -> Builder) -> Self {
        let trips: Trips = Arc::default();
        let open = Arc::new(AtomicBool::new(false));
        let engine = {
            let (trips, open) = (trips.clone(), open.clone());
            configure(
                Engine::builder()
                    .runtime(runtime)
                    .shards(1)
                    .pin(false)
                    .max_in_flight_batches(1),
            )
            .start_trips(move |_shard| trip_fn(trips.clone(), open.clone()))
            .expect("engine starts")
        };
        assert_eq!(engine.runtime(), runtime);
        Self {
            engine,
            trips,
            open,
        }
    }

    fn trips(&self) -> Vec<Trip> {
        self.trips.lock().unwrap().clone()
    }

    /// Submits `inputs` (key, input) while the gate's trip holds the only
    /// slot, waits until the shard has them all waiting, then opens the
    /// gate; the callers' outcomes, in the order given.
    fn behind_the_gate(&self, inputs: &[(u64, u64)]) -> Vec<Answer> {
        let gate = self.engine.submit(GATE, 1);
        wait_until("the gate's trip", || !self.trips().is_empty());
        assert_eq!(self.trips(), vec![vec![(GATE, vec![1])]], "the first trip");
        let submits: Vec<_> = inputs
            .iter()
            .map(|&(key, input)| self.engine.submit(key, input))
            .collect();
        wait_until("every input waiting behind the gate", || {
            self.engine.stats().total().waiting == inputs.len() as u64
        });
        let stats = self.engine.stats().total();
        assert_eq!(
            (stats.in_flight, stats.trips, self.trips().len()),
            (1, 1, 1),
            "the gate's trip holds the only slot; nothing else went"
        );
        self.open.store(true, SeqCst);
        assert_eq!(futures::executor::block_on(gate), Ok(2), "the gate's input");
        futures::executor::block_on(join_all(submits))
    }

    /// The trips after the gate's, as the keys they carried.
    fn keys_of_trips_after_the_gate(&self) -> Vec<Vec<u64>> {
        self.trips()[1..]
            .iter()
            .map(|trip| trip.iter().map(|(key, _)| *key).collect())
            .collect()
    }

    /// Closes and joins the engine; its final figures.
    fn finish(&self) -> ferry::ShardStats {
        self.engine.close();
        self.engine.join();
        self.engine.stats().total()
    }
}

/// Checks what every trip must be: no key twice, at most `max_batches`
/// batches, each batch at most `max_batch_size` inputs and not empty.
fn assert_well_formed(trips: &[Trip], max_batches: usize, max_batch_size: usize) {
    for trip in trips {
        let keys: HashSet<u64> = trip.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys.len(), trip.len(), "a key twice in the trip {trip:?}");
        assert!(
            !trip.is_empty() && trip.len() <= max_batches,
            "a trip of {} batches: {trip:?}",
            trip.len()
        );
        for (key, inputs) in trip {
            assert!(
                !inputs.is_empty() && inputs.len() <= max_batch_size,
                "key {key}'s batch of {} inputs",
                inputs.len()
            );
        }
    }
}

/// The figures every finished run must show: quiet, each trip counted once
/// and each of its batches once.
fn assert_books(stats: &ferry::ShardStats, trips: &[Trip]) {
    let batches: usize = trips.iter().map(Vec::len).sum();
    let inputs: usize = trips
        .iter()
        .flat_map(|trip| trip.iter().map(|(_, inputs)| inputs.len()))
        .sum();
    assert_eq!(
        (stats.trips, stats.batches, stats.sent),
        (trips.len() as u64, batches as u64, inputs as u64),
        "(trips, batches, sent) against the calls of the trip function"
    );
    assert_eq!(
        stats.trip_batches.count,
        trips.len() as u64,
        "trip_batches counts every trip: {:?}",
        stats.trip_batches
    );
    let largest = trips.iter().map(Vec::len).max().unwrap_or(0);
    assert_eq!(
        stats.trip_batches.max, largest as u64,
        "trip_batches' largest trip"
    );
    assert_eq!(
        stats.batch_size.count, batches as u64,
        "batch_size counts every batch of every trip"
    );
    assert_eq!(
        (
            stats.admitted,
            stats.answered,
            stats.lanes,
            stats.waiting,
            stats.in_flight
        ),
        (stats.sent, stats.sent, 0, 0, 0),
        "quiet once joined"
    );
}

on_each_runtime!(a_trip_carries_many_keys_batches_in_one_call_and_one_slot);
fn a_trip_carries_many_keys_batches_in_one_call_and_one_slot(runtime: Runtime) {
    let rig = Rig::new(runtime, |b| b.max_batch_size(8));
    // Three rounds over twelve keys, from one thread: each key's inputs are
    // admitted in this order, and each lane became ready with its first.
    let keys: Vec<u64> = (1..=12).collect();
    let inputs: Vec<(u64, u64)> = (0..3)
        .flat_map(|round| keys.iter().map(move |&key| (key, key * 100 + round)))
        .collect();
    let outcomes = rig.behind_the_gate(&inputs);
    for (&(key, input), outcome) in inputs.iter().zip(&outcomes) {
        assert_eq!(*outcome, Ok(input + 1), "key {key}, input {input}");
    }
    let trips = rig.trips();
    let expected: Trip = keys
        .iter()
        .map(|&key| (key, (0..3).map(|round| key * 100 + round).collect()))
        .collect();
    assert_eq!(
        trips[1..],
        [expected],
        "one call carries every key that waited behind the gate, once, in the \
         order the keys became ready, each with its inputs in admission order"
    );
    assert_well_formed(&trips, 12, 8);
    let stats = rig.finish();
    assert_books(&stats, &trips);
    assert_eq!((stats.trips, stats.batches, stats.answered_ok), (2, 13, 37));
    assert_eq!(
        (stats.trip_batches.count, stats.trip_batches.max),
        (2, 12),
        "two trips: the gate's of one batch, then one of twelve"
    );
}

on_each_runtime!(max_trip_batches_bounds_a_trip_and_keys_go_first_come_first_served);
fn max_trip_batches_bounds_a_trip_and_keys_go_first_come_first_served(runtime: Runtime) {
    let rig = Rig::new(runtime, |b| b.max_batch_size(1).max_trip_batches(4));
    // One input per key, in an order that is not the keys' order; then a
    // second input for keys 7 and 3, which go with their keys' next batch
    // (a batch holds one input): those lanes are ready again when their
    // first batches complete, and go to the back of the line then.
    let order = [7, 3, 11, 5, 2, 9, 1, 8, 10, 4];
    let mut inputs: Vec<(u64, u64)> = order.iter().map(|&key| (key, key * 100)).collect();
    inputs.extend([(7, 701), (3, 301)]);
    let outcomes = rig.behind_the_gate(&inputs);
    for (&(_, input), outcome) in inputs.iter().zip(&outcomes) {
        assert_eq!(*outcome, Ok(input + 1));
    }
    let trips = rig.trips();
    assert_eq!(
        rig.keys_of_trips_after_the_gate(),
        vec![vec![7, 3, 11, 5], vec![2, 9, 1, 8], vec![10, 4, 7, 3]],
        "trips of at most 4 batches, keys first come first served: {trips:?}"
    );
    assert_eq!(
        (&trips[1][0], &trips[1][1], &trips[3][2], &trips[3][3]),
        (
            &(7, vec![700]),
            &(3, vec![300]),
            &(7, vec![701]),
            &(3, vec![301])
        ),
        "each key's inputs in admission order, one per batch"
    );
    assert_well_formed(&trips, 4, 1);
    let stats = rig.finish();
    assert_books(&stats, &trips);
    assert_eq!(
        (stats.trips, stats.batches, stats.trip_batches.max),
        (4, 13, 4)
    );
}

on_each_runtime!(max_trip_weight_bounds_a_trip_and_a_heavier_first_batch_still_goes);
fn max_trip_weight_bounds_a_trip_and_a_heavier_first_batch_still_goes(runtime: Runtime) {
    // An input weighs its last two digits.
    let weight = |input: u64| input % 100;
    let rig = Rig::new(runtime, |b| {
        b.max_batch_size(8)
            .weigh(move |input: &u64| weight(*input))
            .max_trip_weight(10)
    });
    // (key, weights of its inputs), in the order the keys become ready.
    let plan: [(u64, &[u64]); 8] = [
        (1, &[4]),
        (2, &[5]),
        // 4 + 5 + 2 = 11 > 10: key 3 opens the next trip.
        (3, &[2]),
        // 2 + 12 > 10, and 12 alone is past the bound: a trip of its own.
        (4, &[12]),
        // 6 + 3 + 1 = 10: exactly the bound, all three go together...
        (5, &[3, 3]),
        (6, &[3]),
        (7, &[1]),
        // ...and key 8 (weight 1) would pass it: it waits for the next.
        (8, &[1]),
    ];
    let inputs: Vec<(u64, u64)> = plan
        .iter()
        .flat_map(|&(key, weights)| {
            weights
                .iter()
                .enumerate()
                .map(move |(n, w)| (key, key * 1_000 + n as u64 * 100 + w))
        })
        .collect();
    let outcomes = rig.behind_the_gate(&inputs);
    for (&(_, input), outcome) in inputs.iter().zip(&outcomes) {
        assert_eq!(*outcome, Ok(input + 1));
    }
    let trips = rig.trips();
    assert_eq!(
        rig.keys_of_trips_after_the_gate(),
        vec![vec![1, 2], vec![3], vec![4], vec![5, 6, 7], vec![8]],
        "a batch that does not fit ends its trip and opens the next one: {trips:?}"
    );
    for trip in &trips {
        let total: u64 = trip
            .iter()
            .flat_map(|(_, inputs)| inputs.iter().map(|&input| weight(input)))
            .sum();
        assert!(
            total <= 10 || trip.len() == 1,
            "a trip of several batches weighs {total}: {trip:?}"
        );
    }
    assert_eq!(
        trips[3],
        vec![(4, vec![4_012])],
        "heavier than the bound, alone"
    );
    assert_eq!(trips[4][0], (5, vec![5_003, 5_103]), "key 5's batch, whole");
    assert_well_formed(&trips, usize::MAX, 8);
    let stats = rig.finish();
    assert_books(&stats, &trips);
    assert_eq!((stats.trips, stats.batches), (6, 9));
}

/// Plays one held trip of `batches` (each key with its inputs) behind the
/// gate, then a plain trip after it, which must succeed; checks that the
/// held trip carried exactly `batches` and that the shard's counters agree
/// with what every caller saw. The outcomes of the held trip's inputs, by
/// key.
fn play_one_trip(runtime: Runtime, batches: &[(u64, &[u64])]) -> HashMap<u64, Vec<Answer>> {
    let rig = Rig::new(runtime, |b| b.max_batch_size(8));
    let inputs: Vec<(u64, u64)> = batches
        .iter()
        .flat_map(|&(key, inputs)| inputs.iter().map(move |&input| (key, input)))
        .collect();
    let outcomes = rig.behind_the_gate(&inputs);
    let expected: Trip = batches
        .iter()
        .map(|&(key, inputs)| (key, inputs.to_vec()))
        .collect();
    assert_eq!(rig.trips()[1], expected, "the held trip");

    // The shard goes on: the next trip is served as usual.
    let later: Vec<_> = [(5, 55), (6, 66)]
        .iter()
        .map(|&(key, input)| rig.engine.submit(key, input))
        .collect();
    assert_eq!(
        futures::executor::block_on(join_all(later)),
        vec![Ok(56), Ok(67)],
        "a trip after the faulty one"
    );

    let mut by_key: HashMap<u64, Vec<Answer>> = HashMap::new();
    for (&(key, _), outcome) in inputs.iter().zip(outcomes) {
        by_key.entry(key).or_default().push(outcome);
    }
    // The counters agree with what the callers saw, the gate's input and
    // the later trip's two being answered outputs.
    let seen = by_key.values().flatten();
    let (mut ok, mut failed, mut panicked, mut wrong_count) = (3, 0, 0, 0);
    for outcome in seen {
        match outcome {
            Ok(_) => ok += 1,
            Err(FerryError::Failed(_)) => failed += 1,
            Err(FerryError::Panicked) => panicked += 1,
            Err(FerryError::WrongOutputCount { .. }) => wrong_count += 1,
            other => panic!("an outcome no batch ends in: {other:?}"),
        }
    }
    let trips = rig.trips();
    let stats = rig.finish();
    assert_eq!(
        (
            stats.answered_ok,
            stats.failed,
            stats.panicked,
            stats.wrong_output_count,
            stats.answered
        ),
        (
            ok,
            failed,
            panicked,
            wrong_count,
            ok + failed + panicked + wrong_count
        ),
        "(answered_ok, failed, panicked, wrong_output_count, answered) against the callers"
    );
    assert_books(&stats, &trips);
    by_key
}

on_each_runtime!(a_batchs_error_or_wrong_output_count_fails_only_its_own_callers);
fn a_batchs_error_or_wrong_output_count_fails_only_its_own_callers(runtime: Runtime) {
    let by_key = play_one_trip(
        runtime,
        &[
            (3, &[301, 302]),
            (FAILS, &[9_101, 9_102]),
            (4, &[401]),
            (MISCOUNTS, &[9_201, 9_202, 9_203]),
            (5, &[501]),
        ],
    );
    assert_eq!(by_key[&3], vec![Ok(302), Ok(303)]);
    assert_eq!(by_key[&4], vec![Ok(402)]);
    assert_eq!(by_key[&5], vec![Ok(502)]);
    assert_eq!(
        by_key[&FAILS],
        vec![Err(FerryError::Failed(store_error(FAILS))); 2],
        "the batch's error, to each of its callers"
    );
    assert_eq!(
        by_key[&MISCOUNTS],
        vec![
            Err(FerryError::WrongOutputCount {
                expected: 3,
                got: 4
            });
            3
        ],
        "the batch's own count: its inputs, and the outputs of its result"
    );
}

on_each_runtime!(a_wrong_number_of_results_fails_every_batch_of_the_trip);
fn a_wrong_number_of_results_fails_every_batch_of_the_trip(runtime: Runtime) {
    for (odd_key, got) in [(ONE_RESULT_SHORT, 2), (ONE_RESULT_OVER, 4)] {
        let by_key = play_one_trip(
            runtime,
            &[(3, &[301]), (odd_key, &[9_001, 9_002]), (4, &[401, 402])],
        );
        let every = Err(FerryError::WrongOutputCount { expected: 3, got });
        for (key, count) in [(3, 1), (odd_key, 2), (4, 2)] {
            assert_eq!(
                by_key[&key],
                vec![every.clone(); count],
                "key {key} in a trip of 3 batches given {got} results"
            );
        }
    }
}

on_each_runtime!(a_panic_when_called_or_while_running_fails_every_batch_of_the_trip);
fn a_panic_when_called_or_while_running_fails_every_batch_of_the_trip(runtime: Runtime) {
    for panicking in [PANICS_WHEN_CALLED, PANICS_WHILE_RUNNING] {
        let by_key = play_one_trip(
            runtime,
            &[
                (3, &[301, 302]),
                (panicking, &[9_001]),
                (FAILS, &[9_101]),
                (4, &[401]),
            ],
        );
        for (key, count) in [(3, 2), (panicking, 1), (FAILS, 1), (4, 1)] {
            assert_eq!(
                by_key[&key],
                vec![Err(FerryError::Panicked); count],
                "key {key} in a trip with key {panicking}"
            );
        }
    }
}

on_each_runtime!(g1_under_load_a_key_is_in_one_trip_at_a_time_and_once_in_it);
fn g1_under_load_a_key_is_in_one_trip_at_a_time_and_once_in_it(runtime: Runtime) {
    const SHARDS: usize = 2;
    const SLOTS: usize = 3;
    const MAX_BATCH_SIZE: usize = 4;
    const MAX_TRIP_BATCHES: usize = 5;
    const KEYS: u64 = 16;
    const THREADS: u64 = 4;
    const INPUTS_PER_THREAD: u64 = 3_000;
    const IN_FLIGHT_PER_THREAD: usize = 400;

    #[derive(Default)]
    struct Watch {
        /// Keys in a trip in flight.
        in_trip: HashSet<u64>,
        /// Trips in flight, and the most at once, per shard.
        trips_now: [usize; SHARDS],
        trips_most: [usize; SHARDS],
        /// The last input number seen per (key, caller thread).
        last: HashMap<(u64, u64), u64>,
        broken: Vec<String>,
    }
    let watch: Arc<Mutex<Watch>> = Arc::default();
    let engine: Engine<u64, u64, u64, String> = {
        let watch = watch.clone();
        Engine::builder()
            .runtime(runtime)
            .shards(SHARDS)
            .pin(false)
            .max_in_flight_batches(SLOTS)
            .max_batch_size(MAX_BATCH_SIZE)
            .max_trip_batches(MAX_TRIP_BATCHES)
            .start_trips(move |shard: ShardId| {
                let watch = watch.clone();
                move |trip: Trip| {
                    let shard = shard.index();
                    let keys: Vec<u64> = trip.iter().map(|(key, _)| *key).collect();
                    {
                        let mut guard = watch.lock().unwrap();
                        let w = &mut *guard;
                        let distinct: HashSet<u64> = keys.iter().copied().collect();
                        if distinct.len() != keys.len() {
                            w.broken.push(format!("a key twice in one trip: {keys:?}"));
                        }
                        if keys.len() > MAX_TRIP_BATCHES {
                            w.broken.push(format!("a trip of {} batches", keys.len()));
                        }
                        for (key, inputs) in &trip {
                            if !w.in_trip.insert(*key) {
                                w.broken
                                    .push(format!("G1: key {key} in two trips in flight"));
                            }
                            if inputs.is_empty() || inputs.len() > MAX_BATCH_SIZE {
                                w.broken.push(format!("key {key}: {} inputs", inputs.len()));
                            }
                            // G2: one thread's inputs of a key, in its order.
                            for &input in inputs {
                                let (thread, n) = (input >> 32, input & 0xffff_ffff);
                                let last = w.last.insert((*key, thread), n);
                                if last.is_some_and(|last| last >= n) {
                                    w.broken.push(format!(
                                        "G2: key {key}, thread {thread}: {n} after {last:?}"
                                    ));
                                }
                            }
                        }
                        w.trips_now[shard] += 1;
                        w.trips_most[shard] = w.trips_most[shard].max(w.trips_now[shard]);
                        if w.trips_now[shard] > SLOTS {
                            w.broken.push(format!(
                                "{} trips in flight on shard {shard} with {SLOTS} slots",
                                w.trips_now[shard]
                            ));
                        }
                    }
                    let watch = watch.clone();
                    async move {
                        support::sleep(Duration::from_micros(100)).await;
                        let mut w = watch.lock().unwrap();
                        for key in &keys {
                            w.in_trip.remove(key);
                        }
                        w.trips_now[shard] -= 1;
                        drop(w);
                        trip.into_iter()
                            .map(|(_, inputs)| Ok(inputs.iter().map(|x| x + 1).collect()))
                            .collect::<Vec<_>>()
                    }
                }
            })
            .expect("engine starts")
    };

    let callers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                futures::executor::block_on(async {
                    let mut running = FuturesUnordered::new();
                    let (mut sent, mut wrong) = (0, 0);
                    loop {
                        while sent < INPUTS_PER_THREAD && running.len() < IN_FLIGHT_PER_THREAD {
                            let input = (thread << 32) | sent;
                            let key = (sent * 5 + thread) % KEYS;
                            sent += 1;
                            let submit = engine.submit(key, input);
                            running.push(async move { (input, submit.await) });
                        }
                        let Some((input, outcome)) = running.next().await else {
                            break;
                        };
                        if outcome != Ok(input + 1) {
                            eprintln!("input {input}: {outcome:?}");
                            wrong += 1;
                        }
                    }
                    wrong
                })
            })
        })
        .collect();
    let wrong: u64 = callers.into_iter().map(|c| c.join().unwrap()).sum();
    engine.close();
    engine.join();

    let watch = watch.lock().unwrap();
    assert_eq!(watch.broken, Vec::<String>::new());
    assert_eq!(wrong, 0, "inputs not answered their output");
    let stats = engine.stats().total();
    let submitted = THREADS * INPUTS_PER_THREAD;
    assert_eq!(
        (
            stats.admitted,
            stats.sent,
            stats.answered_ok,
            stats.in_flight,
            stats.lanes
        ),
        (submitted, submitted, submitted, 0, 0)
    );
    assert_eq!(stats.trip_batches.count, stats.trips);
    // The run reached what it is about: trips of several keys, several of
    // them in flight at once on a shard.
    assert!(
        stats.trip_batches.max > 1 && stats.batches > stats.trips,
        "no trip carried more than one batch: {stats:?}"
    );
    assert!(
        watch.trips_most.iter().any(|&most| most > 1),
        "never two trips in flight at once on a shard: {:?}",
        watch.trips_most
    );
    assert!(watch.trips_most.iter().all(|&most| most <= SLOTS));
}

on_each_runtime!(close_with_trips_in_flight_answers_everything_admitted);
/// Close while every slot holds a trip that hangs until close, and more
/// waits behind them, partly in lanes not yet full (a long batch delay):
/// the trips finish, everything waiting goes in later trips (G9), and only
/// inputs submitted after close are refused.
fn close_with_trips_in_flight_answers_everything_admitted(runtime: Runtime) {
    const SHARDS: u64 = 2;
    const SLOTS: u64 = 2;
    let closing = Arc::new(AtomicBool::new(false));
    let engine: Engine<u64, u64, u64, String> = {
        let closing = closing.clone();
        Engine::builder()
            .runtime(runtime)
            .shards(SHARDS as usize)
            .pin(false)
            .max_batch_size(4)
            .max_batch_delay(Duration::from_secs(3600))
            .max_in_flight_batches(SLOTS as usize)
            .max_trip_batches(3)
            .start_trips(move |_shard| {
                let closing = closing.clone();
                move |trip: Trip| {
                    let closing = closing.clone();
                    async move {
                        while !closing.load(SeqCst) {
                            support::sleep(Duration::from_micros(200)).await;
                        }
                        trip.into_iter()
                            .map(|(_, inputs)| Ok::<_, String>(inputs))
                            .collect::<Vec<_>>()
                    }
                }
            })
            .expect("engine starts")
    };
    // 40 keys, 1,001 inputs: most lanes fill (4 inputs) and are ready; the
    // last input of each key may wait, partial, for close.
    let before: Vec<_> = (0..1_001_u64)
        .map(|i| (i, engine.submit(i % 40, i)))
        .collect();
    wait_until("every slot holding a trip", || {
        engine.stats().total().in_flight == SHARDS * SLOTS
    });
    let held = engine.stats().total();
    assert!(
        held.waiting > 0 && held.trips == SHARDS * SLOTS,
        "trips in flight and inputs waiting behind them: {held:?}"
    );
    closing.store(true, SeqCst);
    engine.close();
    let after: Vec<_> = (2_000..2_100_u64)
        .map(|i| (i, engine.submit(i % 40, i)))
        .collect();
    for (input, submit) in before {
        assert_eq!(
            futures::executor::block_on(submit),
            Ok(input),
            "admitted before close"
        );
    }
    for (input, submit) in after {
        match futures::executor::block_on(submit) {
            Err(FerryError::Refused {
                input: back,
                reason: Refused::Closed,
            }) => assert_eq!(back, input),
            other => panic!("input {input} submitted after close: {other:?}"),
        }
    }
    engine.join();
    let stats = engine.stats().total();
    assert_eq!(
        (
            stats.admitted,
            stats.sent,
            stats.answered_ok,
            stats.refused,
            stats.lanes,
            stats.in_flight
        ),
        (1_001, 1_001, 1_001, 100, 0, 0)
    );
    assert!(stats.trip_batches.max <= 3, "{:?}", stats.trip_batches);
    assert_eq!(stats.trip_batches.count, stats.trips);
    assert!(
        stats.trips > SHARDS * SLOTS,
        "the waiting inputs went in trips after close"
    );
}

on_each_runtime!(try_start_trips_fails_whole_when_one_shards_factory_fails);
/// The factory of shard 1 fails once shard 0's trip function is made: the
/// start fails naming shard 1, and shard 0, which had come up, is stopped
/// (its trip function dropped) before the error is returned.
fn try_start_trips_fails_whole_when_one_shards_factory_fails(runtime: Runtime) {
    /// Counts itself out when the trip function holding it is dropped.
    struct Alive(Arc<AtomicUsize>);
    impl Drop for Alive {
        fn drop(&mut self) {
            self.0.fetch_sub(1, SeqCst);
        }
    }

    let made = Arc::new(AtomicUsize::new(0));
    let alive = Arc::new(AtomicUsize::new(0));
    let started = {
        let (made, alive) = (made.clone(), alive.clone());
        Engine::<u64, u64, u64, String>::builder()
            .runtime(runtime)
            .shards(2)
            .pin(false)
            .try_start_trips(move |shard: ShardId| {
                let (made, alive) = (made.clone(), alive.clone());
                async move {
                    if shard.index() == 1 {
                        let deadline = Instant::now() + PATIENCE;
                        while made.load(SeqCst) == 0 && Instant::now() < deadline {
                            support::sleep(Duration::from_millis(1)).await;
                        }
                        return Err(format!("no store for {shard}"));
                    }
                    alive.fetch_add(1, SeqCst);
                    made.fetch_add(1, SeqCst);
                    let guard = Alive(alive);
                    Ok(move |trip: Trip| {
                        let _alive = &guard;
                        std::future::ready(
                            trip.into_iter()
                                .map(|(_, inputs)| Ok::<_, String>(inputs))
                                .collect::<Vec<_>>(),
                        )
                    })
                }
            })
    };
    let err = match started {
        Ok(_) => panic!("started though shard 1's factory failed"),
        Err(err) => err,
    };
    match &err {
        StartError::Factory { shard, error } => {
            assert_eq!(*shard, ShardId::new(1));
            assert_eq!(error, "no store for shard-1");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("shard-1"), "{err}");
    assert_eq!(made.load(SeqCst), 1, "shard 0's trip function was made");
    assert_eq!(
        alive.load(SeqCst),
        0,
        "shard 0 was stopped, its trip function dropped, before start returned"
    );
}
