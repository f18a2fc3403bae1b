//! Fault injection in the real engine (G4, G9, G10).
//!
//! Thousands of callers on several threads (plain threads driving thousands
//! of futures each, and tokio tasks) submit to keys whose batch function
//! misbehaves on purpose: it fails, panics (when called or while running),
//! hangs until the engine is closed, or returns the wrong number of outputs.
//! The engine is closed in the middle of it. Every input is then accounted
//! for: submitted = answered + refused, each refused input is the very one
//! that was sent, each answer is the one its key's behaviour calls for, and
//! the engine's own counters agree. Each test runs on each runtime.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry::{Engine, FerryError, Refused, Runtime};
use futures::stream::{FuturesUnordered, StreamExt};

mod support;
use support::on_each_runtime;

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
    /// Inputs of hanging keys answered while `closing` was still unset.
    answered_before_close: AtomicU64,
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
            (Behaviour::Echo | Behaviour::HangUntilClose, Ok(output)) if *output == input * 2 => {
                if behaviour == Behaviour::HangUntilClose && !closing.load(SeqCst) {
                    self.answered_before_close.fetch_add(1, SeqCst);
                }
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
        counter.fetch_add(1, SeqCst);
    }
}

fn faulty_engine(runtime: Runtime, closing: Arc<AtomicBool>) -> Engine<u64, u64, u64, String> {
    let engine = Engine::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .max_batch_size(16)
        .max_in_flight_batches(16)
        .start(move |_shard| {
            let closing = closing.clone();
            move |key: u64, inputs: Vec<u64>| {
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
        })
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

on_each_runtime!(every_input_is_accounted_for_under_faults_and_a_close_midway);
fn every_input_is_accounted_for_under_faults_and_a_close_midway(runtime: Runtime) {
    let started = Instant::now();
    let closing = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let engine = faulty_engine(runtime, closing.clone());

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
        "{runtime}: {submitted} submitted: ok {}, failed {}, panicked {}, wrong count {}, \
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
        "a hanging batch was answered before close released it"
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

on_each_runtime!(close_while_every_batch_hangs_answers_everything_admitted);
/// Close while every key's batch hangs: the batches in flight finish once
/// released, everything waiting behind them is still sent and answered
/// (G9), and only inputs submitted after close are refused.
fn close_while_every_batch_hangs_answers_everything_admitted(runtime: Runtime) {
    let closing = Arc::new(AtomicBool::new(false));
    let engine: Engine<u64, u64, u64, String> = {
        let closing = closing.clone();
        Engine::builder()
            .runtime(runtime)
            .shards(2)
            .pin(false)
            .max_batch_size(4)
            .max_in_flight_batches(2)
            .start(move |_shard| {
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
    // Wait until the shards have taken what they can: slots full, the rest waiting.
    let deadline = Instant::now() + Duration::from_secs(5);
    while engine.stats().total().in_flight < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
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
