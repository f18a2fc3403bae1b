//! Fault injection in the real engine (G4, G9, G10).
//!
//! Thousands of callers on several threads (plain threads driving thousands
//! of futures each, and tokio tasks) submit to keys whose batch function
//! misbehaves on purpose: it fails, panics (when called or while running),
//! hangs until the engine is closed, or returns the wrong number of outputs.
//! The engine is closed in the middle of it. Every input is then accounted
//! for: submitted = answered + refused, each refused input is the very one
//! that was sent, each answer is the one its key's behaviour calls for, and
//! the engine's own counters agree. Each test runs on each runtime, and
//! with batches carried either way: one batch per call of the batch
//! function, or trips of several keys' batches (`start_trips`).
//!
//! With trips, a key's misbehaviour reaches its trip-mates as far as the
//! trip semantics say, and no further: a panic (when the key's batch is
//! made or while it runs) fails the whole trip, so every input of a trip
//! holding a panicking key is answered `Panicked`; a hanging key holds its
//! whole trip until close, so no input of such a trip is answered before
//! close; an error or a wrong output count stays its own batch's. The trip
//! function notes which inputs shared a trip with which behaviour, and the
//! tally expects exactly that, nothing looser.

use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry::{Engine, FerryError, Refused, Runtime};
use futures::stream::{FuturesUnordered, StreamExt};

mod support;
use support::{on_each_runtime_and_way, StartAs, Way};

/// How a key's batch function behaves, by `key % 6`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Behaviour {
    Echo,
    Fail,
    PanicWhileRunning,
    HangUntilClose,
    WrongCount,
    PanicWhenCalled,
}

impl Behaviour {
    /// Whether the key's batch panics, when made or while running: in a
    /// trip, that fails the whole trip.
    fn panics(self) -> bool {
        matches!(
            self,
            Behaviour::PanicWhileRunning | Behaviour::PanicWhenCalled
        )
    }

    fn of(key: u64) -> Self {
        match key % 6 {
            0 => Behaviour::Echo,
            1 => Behaviour::Fail,
            2 => Behaviour::PanicWhileRunning,
            3 => Behaviour::HangUntilClose,
            4 => Behaviour::WrongCount,
            _ => Behaviour::PanicWhenCalled,
        }
    }
}

const KEYS: u64 = 60;
const CALLER_THREADS: u64 = 8;
const IN_FLIGHT_PER_THREAD: usize = 2_000;
const INPUTS_PER_THREAD: u64 = 6_000;
const TOKIO_TASKS: u64 = 4_000;
/// Close once this many inputs have been answered.
const ANSWERED_BEFORE_CLOSE: u64 = 8_000;
/// Keys' batches per trip at most, with trips. A hanging key holds its
/// whole trip, and every key in it, until close: with the default bound a
/// shard's first trip would take nearly all its keys and hang, and almost
/// nothing would be answered before close. Three leaves most keys free.
const TRIP_BATCHES: usize = 3;

/// With trips, what the trip function saw of each input's trip-mates
/// (both stay empty with batches).
#[derive(Debug, Default)]
struct TripMates {
    /// Inputs whose trip held a key whose batch panics: every batch of
    /// that trip fails `Panicked`.
    doomed: Mutex<HashSet<u64>>,
    /// Inputs whose trip held a hanging key and none that panics: the
    /// trip, and so each of them, ends only once close released it.
    held: Mutex<HashSet<u64>>,
    /// Of the doomed inputs, those of keys that do not panic themselves.
    doomed_by_a_mate: AtomicU64,
}

impl TripMates {
    /// The trip function is called with `trip`.
    fn note(&self, trip: &[(u64, Vec<u64>)]) {
        let has =
            |test: fn(Behaviour) -> bool| trip.iter().any(|(key, _)| test(Behaviour::of(*key)));
        let inputs = trip.iter().flat_map(|(_, inputs)| inputs.iter().copied());
        if has(Behaviour::panics) {
            let innocent = trip
                .iter()
                .filter(|(key, _)| !Behaviour::of(*key).panics())
                .map(|(_, inputs)| inputs.len() as u64)
                .sum();
            self.doomed_by_a_mate.fetch_add(innocent, SeqCst);
            self.doomed.lock().unwrap().extend(inputs);
        } else if has(|b| b == Behaviour::HangUntilClose) {
            self.held.lock().unwrap().extend(inputs);
        }
    }
}

/// What the callers saw, counted per kind of outcome.
#[derive(Debug, Default)]
struct Tally {
    submitted: AtomicU64,
    ok: AtomicU64,
    failed: AtomicU64,
    panicked: AtomicU64,
    wrong_count: AtomicU64,
    refused_closed: AtomicU64,
    refused_full: AtomicU64,
    /// Answers that do not fit their key's behaviour (must stay 0).
    wrong: AtomicU64,
    /// Inputs of hanging keys (with trips, of trips holding one) answered
    /// while `closing` was still unset.
    answered_before_close: AtomicU64,
    mates: TripMates,
}

impl Tally {
    fn answered(&self) -> u64 {
        self.ok.load(SeqCst)
            + self.failed.load(SeqCst)
            + self.panicked.load(SeqCst)
            + self.wrong_count.load(SeqCst)
    }

    fn refused(&self) -> u64 {
        self.refused_closed.load(SeqCst) + self.refused_full.load(SeqCst)
    }

    /// Checks `outcome` of `input` for `key` against the key's behaviour.
    fn record(
        &self,
        key: u64,
        input: u64,
        outcome: Result<u64, FerryError<u64, String>>,
        closing: &AtomicBool,
    ) {
        let behaviour = Behaviour::of(key);
        // Noted by the trip function when it was called, so before this
        // answer; never for an input that was not sent.
        let doomed = self.mates.doomed.lock().unwrap().contains(&input);
        let held = behaviour == Behaviour::HangUntilClose
            || self.mates.held.lock().unwrap().contains(&input);
        let counter = match (behaviour, &outcome) {
            (
                _,
                Err(FerryError::Refused {
                    input: back,
                    reason,
                }),
            ) => {
                if *back != input {
                    &self.wrong
                } else if *reason == Refused::Closed {
                    &self.refused_closed
                } else if *reason == Refused::Full {
                    &self.refused_full
                } else {
                    &self.wrong
                }
            }
            // A panicking trip-mate fails the whole trip.
            (_, Err(FerryError::Panicked)) if doomed => &self.panicked,
            _ if doomed => {
                eprintln!("key {key} ({behaviour:?}), input {input}: in a trip that panicked, {outcome:?}");
                &self.wrong
            }
            (Behaviour::Echo | Behaviour::HangUntilClose, Ok(output)) if *output == input * 2 => {
                &self.ok
            }
            (Behaviour::Fail, Err(FerryError::Failed(message)))
                if *message == format!("store refused key {key}") =>
            {
                &self.failed
            }
            (
                Behaviour::PanicWhileRunning | Behaviour::PanicWhenCalled,
                Err(FerryError::Panicked),
            ) => &self.panicked,
            (Behaviour::WrongCount, Err(FerryError::WrongOutputCount { expected, got }))
                if *got == expected + 1 =>
            {
                &self.wrong_count
            }
            _ => {
                eprintln!("key {key} ({behaviour:?}), input {input}: unexpected {outcome:?}");
                &self.wrong
            }
        };
        let refused = matches!(outcome, Err(FerryError::Refused { .. }));
        if held && !doomed && !refused && !closing.load(SeqCst) {
            self.answered_before_close.fetch_add(1, SeqCst);
        }
        counter.fetch_add(1, SeqCst);
    }
}

/// One batch of `key` as the faulty store runs it: panics at once, or
/// gives a future that fails, panics, hangs until `closing`, miscounts or
/// echoes, by the key's behaviour.
fn faulty_batch(
    key: u64,
    inputs: Vec<u64>,
    closing: &Arc<AtomicBool>,
) -> impl Future<Output = Result<Vec<u64>, String>> + 'static {
    let behaviour = Behaviour::of(key);
    if behaviour == Behaviour::PanicWhenCalled {
        panic!("batch function for key {key} panicked when called");
    }
    let closing = closing.clone();
    async move {
        match behaviour {
            Behaviour::Fail => return Err(format!("store refused key {key}")),
            Behaviour::PanicWhileRunning => {
                support::yield_now().await;
                panic!("batch for key {key} panicked while running");
            }
            Behaviour::HangUntilClose => {
                while !closing.load(SeqCst) {
                    support::sleep(Duration::from_micros(200)).await;
                }
            }
            Behaviour::WrongCount => {
                return Ok(inputs.iter().chain(inputs.first()).map(|x| x * 2).collect())
            }
            Behaviour::Echo | Behaviour::PanicWhenCalled => {}
        }
        Ok(inputs.iter().map(|x| x * 2).collect())
    }
}

fn faulty_engine(
    runtime: Runtime,
    way: Way,
    closing: Arc<AtomicBool>,
    tally: &Arc<Tally>,
) -> Engine<u64, u64, u64, String> {
    let builder = Engine::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .max_batch_size(16)
        .max_in_flight_batches(16);
    let engine = match way {
        Way::Batches => builder.start(move |_shard| {
            let closing = closing.clone();
            move |key: u64, inputs: Vec<u64>| faulty_batch(key, inputs, &closing)
        }),
        // Each batch of a trip as the batch function would run it, all at
        // once; the trip's inputs noted with their trip-mates first.
        Way::Trips => {
            let tally = tally.clone();
            builder
                .max_trip_batches(TRIP_BATCHES)
                .start_trips(move |_shard| {
                    let (closing, tally) = (closing.clone(), tally.clone());
                    move |trip: Vec<(u64, Vec<u64>)>| {
                        tally.mates.note(&trip);
                        let batches: Vec<_> = trip
                            .into_iter()
                            .map(|(key, inputs)| faulty_batch(key, inputs, &closing))
                            .collect();
                        futures::future::join_all(batches)
                    }
                })
        }
    }
    .expect("engine starts");
    assert_eq!(engine.runtime(), runtime, "runs on the runtime asked for");
    engine
}

/// A plain thread keeping `IN_FLIGHT_PER_THREAD` submits in flight until it
/// has submitted `INPUTS_PER_THREAD`.
fn caller_thread(
    engine: Engine<u64, u64, u64, String>,
    thread: u64,
    tally: Arc<Tally>,
    closing: Arc<AtomicBool>,
) {
    futures::executor::block_on(async {
        let mut running = FuturesUnordered::new();
        let mut sent = 0;
        loop {
            while sent < INPUTS_PER_THREAD && running.len() < IN_FLIGHT_PER_THREAD {
                let input = (thread << 32) | sent;
                let key = (sent * 7 + thread) % KEYS;
                sent += 1;
                tally.submitted.fetch_add(1, SeqCst);
                let submit = engine.submit(key, input);
                running.push(async move { (key, input, submit.await) });
            }
            let Some((key, input, outcome)) = running.next().await else {
                break;
            };
            tally.record(key, input, outcome, &closing);
        }
    });
}

on_each_runtime_and_way!(every_input_is_accounted_for_under_faults_and_a_close_midway);
fn every_input_is_accounted_for_under_faults_and_a_close_midway(runtime: Runtime, way: Way) {
    let started = Instant::now();
    let closing = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let engine = faulty_engine(runtime, way, closing.clone(), &tally);

    let threads: Vec<_> = (0..CALLER_THREADS)
        .map(|thread| {
            let (engine, tally, closing) = (engine.clone(), tally.clone(), closing.clone());
            std::thread::spawn(move || caller_thread(engine, thread, tally, closing))
        })
        .collect();
    let tokio_callers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..TOKIO_TASKS)
        .map(|i| {
            let (engine, tally, closing) = (engine.clone(), tally.clone(), closing.clone());
            tokio_callers.spawn(async move {
                // Spread over the close: some before, some racing it, some after.
                tokio::time::sleep(Duration::from_micros(i * 2)).await;
                let input = (CALLER_THREADS << 32) | i;
                let key = i % KEYS;
                tally.submitted.fetch_add(1, SeqCst);
                let outcome = engine.submit(key, input).await;
                tally.record(key, input, outcome, &closing);
            })
        })
        .collect();

    // Close in the middle: callers are still submitting, batches of the
    // hanging keys are in flight, others wait behind them.
    while engine.stats().total().answered < ANSWERED_BEFORE_CLOSE
        && started.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let stats_before_close = engine.stats().total();
    closing.store(true, SeqCst);
    engine.close();

    for thread in threads {
        thread.join().expect("caller thread");
    }
    tokio_callers.block_on(async {
        for task in tasks {
            task.await.expect("tokio task");
        }
    });
    engine.join();

    let submitted = tally.submitted.load(SeqCst);
    let answered = tally.answered();
    let refused = tally.refused();
    let stats = engine.stats().total();
    eprintln!(
        "{runtime}, {way:?}: {submitted} submitted: ok {}, failed {}, panicked {}, wrong count {}, \
         refused closed {}, refused full {}; closed after {} answered; {:?}",
        tally.ok.load(SeqCst),
        tally.failed.load(SeqCst),
        tally.panicked.load(SeqCst),
        tally.wrong_count.load(SeqCst),
        tally.refused_closed.load(SeqCst),
        tally.refused_full.load(SeqCst),
        stats_before_close.answered,
        started.elapsed()
    );

    assert_eq!(
        tally.wrong.load(SeqCst),
        0,
        "answers that do not fit their key"
    );
    assert_eq!(
        submitted,
        CALLER_THREADS * INPUTS_PER_THREAD + TOKIO_TASKS,
        "every caller submitted its share"
    );
    assert_eq!(
        submitted,
        answered + refused,
        "G4: submitted = answered + refused"
    );
    assert_eq!(
        tally.answered_before_close.load(SeqCst),
        0,
        "a hanging batch (with trips, a trip holding one) was answered before close released it"
    );
    // Faults stayed local: every kind of batch ran and was answered as such.
    for (what, count) in [
        ("ok", &tally.ok),
        ("failed", &tally.failed),
        ("panicked", &tally.panicked),
        ("wrong count", &tally.wrong_count),
        ("refused after close", &tally.refused_closed),
    ] {
        assert!(count.load(SeqCst) > 0, "no input was {what}");
    }
    // The engine's own books agree with the callers'.
    assert_eq!(
        stats.admitted, answered,
        "admitted = answered by the callers"
    );
    assert_eq!(
        stats.refused, refused,
        "refused by the engine = refused to callers"
    );
    assert_eq!(
        (
            stats.answered_ok,
            stats.failed,
            stats.panicked,
            stats.wrong_output_count
        ),
        (
            tally.ok.load(SeqCst),
            tally.failed.load(SeqCst),
            tally.panicked.load(SeqCst),
            tally.wrong_count.load(SeqCst)
        ),
        "the engine's (answered_ok, failed, panicked, wrong_output_count) = the callers'"
    );
    if way == Way::Trips {
        // The run reached what trips change: trips of several keys, and
        // inputs of well-behaved keys failed by a panicking trip-mate.
        assert!(
            stats.trip_batches.max > 1 && stats.trip_batches.max <= TRIP_BATCHES as u64,
            "{:?}",
            stats.trip_batches
        );
        assert_eq!(stats.trip_batches.count, stats.trips);
        assert!(
            tally.mates.doomed_by_a_mate.load(SeqCst) > 0,
            "no input of a key that does not panic shared a trip with one that does"
        );
    }
    assert_eq!(
        (
            stats.sent,
            stats.answered,
            stats.lanes,
            stats.waiting,
            stats.in_flight
        ),
        (stats.admitted, stats.admitted, 0, 0, 0),
        "G5, G9: quiet once joined"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
}

on_each_runtime_and_way!(close_while_every_batch_hangs_answers_everything_admitted);
/// Close while every key's batch hangs: the batches in flight finish once
/// released, everything waiting behind them is still sent and answered
/// (G9), and only inputs submitted after close are refused. With trips,
/// the trips in flight hang, each holding one or more keys.
fn close_while_every_batch_hangs_answers_everything_admitted(runtime: Runtime, way: Way) {
    let closing = Arc::new(AtomicBool::new(false));
    let engine: Engine<u64, u64, u64, String> = {
        let closing = closing.clone();
        Engine::builder()
            .runtime(runtime)
            .shards(2)
            .pin(false)
            .max_batch_size(4)
            .max_in_flight_batches(2)
            .start_as(way, move |_shard| {
                let closing = closing.clone();
                move |_key: u64, inputs: Vec<u64>| {
                    let closing = closing.clone();
                    async move {
                        while !closing.load(SeqCst) {
                            support::sleep(Duration::from_micros(200)).await;
                        }
                        Ok::<_, String>(inputs)
                    }
                }
            })
            .expect("engine starts")
    };
    let before: Vec<_> = (0..1_000_u64)
        .map(|i| (i, engine.submit(i % 10, i)))
        .collect();
    // Wait until the shards have taken what they can: each shard's slots
    // full, or (a trip may carry several keys) every key of the shard busy;
    // the rest waiting. Nothing completes before close, so a shard's
    // batches started are its keys busy.
    let keys_of = |shard: usize| {
        (0..10_u64)
            .filter(|key| engine.shard_of(key).index() == shard)
            .count() as u64
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let taken_all_it_can = || {
        let stats = engine.stats();
        stats
            .shards
            .iter()
            .enumerate()
            .all(|(shard, s)| s.in_flight == 2 || s.batches == keys_of(shard))
    };
    while !taken_all_it_can() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        taken_all_it_can(),
        "the shards never filled: {:?}",
        engine.stats()
    );
    closing.store(true, SeqCst);
    engine.close();
    let after: Vec<_> = (1_000..1_100_u64)
        .map(|i| (i, engine.submit(i % 10, i)))
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
        (stats.admitted, stats.answered, stats.lanes),
        (1_000, 1_000, 0)
    );
}
