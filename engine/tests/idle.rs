//! The idle stages of a shard (spin, doze, park; `spin_before_park` and
//! `doze_before_park`): whichever stage a shard is in when an answer or an
//! input arrives, every caller gets its own outcome, delays are honoured
//! and close completes. Batches are answered three ways: at once, from
//! another thread (as a store client on its own runtime would), and by a
//! timer of the shard's runtime (which only runs while that runtime does).
//! Both runtimes, glommio and tokio, go through the same stages.
//!
//! Timing is not asserted (the machines are shared); these are the paths
//! that would hang or lose an answer if a wake-up were missed for good. A
//! hang fails the test after `HANG` instead of stalling the suite (with the
//! bell made silent, both tests hang while a shard parks).

use std::sync::mpsc;
use std::time::Duration;

use ferry::{Engine, FerryError, Refused, Runtime};
use futures::channel::oneshot;
use futures::executor::block_on;
use futures::future::join_all;

mod support;
use support::on_each_runtime;

/// Far beyond what either test takes (about a second): reaching it means a
/// shard slept through an answer.
const HANG: Duration = Duration::from_secs(120);

/// Runs `test` on its own thread; fails if it has not finished within
/// [`HANG`].
fn without_hanging(test: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let runner = std::thread::spawn(move || {
        test();
        let _ = done.send(());
    });
    match finished.recv_timeout(HANG) {
        Ok(()) => runner.join().expect("the test's thread"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The test panicked: report its own message.
            if let Err(panic) = runner.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("still running after {HANG:?}: a shard slept through a wake-up")
        }
    }
}

/// The engine's totals once `answered` inputs are counted (or after
/// [`HANG`], for the caller to report).
fn settled(engine: &Engine<u64, u64, u64, String>, answered: u64) -> ferry::ShardStats {
    let deadline = std::time::Instant::now() + HANG;
    loop {
        let total = engine.stats().total();
        if total.answered >= answered || std::time::Instant::now() >= deadline {
            return total;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// How a batch is answered.
#[derive(Clone, Copy, Debug)]
enum Answer {
    AtOnce,
    FromAnotherThread,
    ByATimerOnTheShard,
}

/// Every pair of stage lengths worth telling apart: spin only, doze only,
/// park at once, and all three.
const STAGES: [(Duration, Duration); 4] = [
    (Duration::from_millis(1), Duration::ZERO),
    (Duration::ZERO, Duration::from_secs(60)),
    (Duration::ZERO, Duration::ZERO),
    (Duration::from_micros(50), Duration::from_millis(2)),
];

/// A thread that answers each request after `after`, as a far-away store
/// would; it ends when every sender is gone.
fn answerer(after: Duration) -> mpsc::Sender<(Vec<u64>, oneshot::Sender<Vec<u64>>)> {
    let (requests, inbox) = mpsc::channel::<(Vec<u64>, oneshot::Sender<Vec<u64>>)>();
    std::thread::spawn(move || {
        for (inputs, reply) in inbox {
            std::thread::sleep(after);
            let _ = reply.send(inputs.iter().map(|x| x + 1).collect());
        }
    });
    requests
}

fn engine(
    runtime: Runtime,
    answer: Answer,
    spin: Duration,
    doze: Duration,
    max_batch_delay: Duration,
) -> Engine<u64, u64, u64, String> {
    let store = answerer(Duration::from_micros(300));
    let engine = Engine::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .spin_before_park(spin)
        .doze_before_park(doze)
        .max_batch_delay(max_batch_delay)
        .start(move |_shard| {
            let store = store.clone();
            move |_key: u64, inputs: Vec<u64>| {
                let store = store.clone();
                async move {
                    match answer {
                        Answer::AtOnce => Ok(inputs.iter().map(|x| x + 1).collect()),
                        Answer::FromAnotherThread => {
                            let (reply, answered) = oneshot::channel();
                            store
                                .send((inputs, reply))
                                .map_err(|_| "store gone".to_string())?;
                            answered.await.map_err(|_| "store dropped it".to_string())
                        }
                        Answer::ByATimerOnTheShard => {
                            support::sleep(Duration::from_micros(300)).await;
                            Ok(inputs.iter().map(|x| x + 1).collect())
                        }
                    }
                }
            }
        })
        .expect("engine starts");
    assert_eq!(engine.runtime(), runtime, "runs on the runtime asked for");
    engine
}

on_each_runtime!(every_stage_delivers_every_kind_of_answer);
fn every_stage_delivers_every_kind_of_answer(runtime: Runtime) {
    without_hanging(move || every_stage_delivers_every_kind_of_answer_body(runtime));
}

fn every_stage_delivers_every_kind_of_answer_body(runtime: Runtime) {
    for answer in [
        Answer::AtOnce,
        Answer::FromAnotherThread,
        Answer::ByATimerOnTheShard,
    ] {
        for (spin, doze) in STAGES {
            let engine = engine(runtime, answer, spin, doze, Duration::ZERO);
            // One at a time, with pauses, so the shard goes idle between
            // inputs and each arrives in a later stage than the last.
            for i in 0..20_u64 {
                assert_eq!(
                    engine.submit_blocking(i, i),
                    Ok(i + 1),
                    "{answer:?}, spin {spin:?}, doze {doze:?}"
                );
                std::thread::sleep(Duration::from_micros(40 * i));
            }
            // Then a burst, which keeps the shard busy.
            let outcomes = block_on(join_all((0..500_u64).map(|i| engine.submit(i % 13, i))));
            for (i, outcome) in (0_u64..).zip(outcomes) {
                assert_eq!(
                    outcome,
                    Ok(i + 1),
                    "{answer:?}, spin {spin:?}, doze {doze:?}"
                );
            }
            // A shard publishes its counts once per round, so the last
            // answers may be counted a moment after their callers have them.
            let total = settled(&engine, 520);
            assert_eq!(total.answered, 520);
            // Which stages ran: none that is switched off, and each that is
            // the only one left.
            if doze.is_zero() {
                assert_eq!(total.dozes, 0, "{answer:?}, spin {spin:?}: dozed");
            }
            if spin.is_zero() && doze.is_zero() {
                assert!(total.parks > 0, "{answer:?}: never parked");
            }
            if doze == Duration::from_secs(60) && !matches!(answer, Answer::ByATimerOnTheShard) {
                assert!(total.dozes > 0, "{answer:?}: never dozed");
                assert_eq!(total.parks, 0, "{answer:?}: parked within the doze");
            }
            engine.close();
            engine.join();
        }
    }
}

on_each_runtime!(a_dozing_shard_keeps_its_delays_and_its_close);
fn a_dozing_shard_keeps_its_delays_and_its_close(runtime: Runtime) {
    without_hanging(move || a_dozing_shard_keeps_its_delays_and_its_close_body(runtime));
}

fn a_dozing_shard_keeps_its_delays_and_its_close_body(runtime: Runtime) {
    for (spin, doze) in STAGES {
        // A delay far longer than a doze's look: the lone input must still
        // wait for it (or for more inputs), and then go.
        let engine = engine(
            runtime,
            Answer::FromAnotherThread,
            spin,
            doze,
            Duration::from_millis(5),
        );
        let lone = engine.submit(1, 10);
        let later = engine.submit(1, 11);
        assert_eq!(block_on(lone), Ok(11));
        assert_eq!(block_on(later), Ok(12));
        // Close while batches are in flight to the other thread: they are
        // answered, and later inputs refused with the input handed back.
        let pending: Vec<_> = (0..50_u64).map(|i| engine.submit(i, i)).collect();
        engine.close();
        for (i, outcome) in (0_u64..).zip(block_on(join_all(pending))) {
            assert_eq!(outcome, Ok(i + 1), "spin {spin:?}, doze {doze:?}");
        }
        match block_on(engine.submit(3, 99)) {
            Err(FerryError::Refused {
                input: 99,
                reason: Refused::Closed,
            }) => {}
            other => panic!("expected the input back as Closed, got {other:?}"),
        }
        engine.join();
    }
}
