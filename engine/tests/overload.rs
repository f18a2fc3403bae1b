//! Overload without waste (docs/guarantees.md#flush-overload-and-withdrawal):
//! `flush`, `max_queue_time`, `withdraw_on_drop`, `max_waiting_per_key`,
//! and the accounting that ties them together — submitted = answered +
//! refused + expired + withdrawn. Every test runs on both shard runtimes.

mod support;

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry::{Batcher, Engine, FerryError, Refused, Runtime, Stats};
use futures::executor::block_on;
use futures::FutureExt;
use support::{on_each_runtime, sleep};

type Seen = Arc<Mutex<Vec<u64>>>;

/// An engine whose batch function records every input it is sent and takes
/// `work` per batch; the inputs of key 0 take `hold` more, to keep its lane
/// busy while others queue behind it.
fn engine(
    runtime: Runtime,
    seen: &Seen,
    hold: Duration,
    tune: Tune,
) -> Engine<u64, u64, u64, String> {
    let seen = Arc::clone(seen);
    tune(Engine::builder().runtime(runtime).shards(2).pin(false))
        .start(move |_| {
            let seen = Arc::clone(&seen);
            move |key: u64, inputs: Vec<u64>| {
                seen.lock().unwrap().extend(&inputs);
                async move {
                    if key == 0 {
                        sleep(hold).await;
                    }
                    Ok::<_, String>(inputs)
                }
            }
        })
        .unwrap()
}

type Tune = fn(ferry::Builder<u64, u64, u64, String>) -> ferry::Builder<u64, u64, u64, String>;

/// Waits (a bounded time) until the published stats satisfy `ready`:
/// publication follows the answers by a loop round.
fn stats_when(
    engine_stats: impl Fn() -> Stats,
    ready: impl Fn(&ferry::ShardStats) -> bool,
) -> ferry::ShardStats {
    let started = Instant::now();
    loop {
        let total = engine_stats().total();
        if ready(&total) || started.elapsed() > Duration::from_secs(10) {
            return total;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits (a bounded time) until `seen` holds `input`.
fn wait_sent(seen: &Seen, input: u64) {
    let started = Instant::now();
    while !seen.lock().unwrap().contains(&input) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "input {input} never sent"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

on_each_runtime!(flush_waits_for_every_input_admitted_before_it);
fn flush_waits_for_every_input_admitted_before_it(runtime: Runtime) {
    let seen = Seen::default();
    let engine = engine(runtime, &seen, Duration::from_millis(30), |b| {
        b.max_batch_delay(Duration::from_millis(20))
    });
    let before: Vec<_> = (0..40).map(|i| engine.submit(i % 5, i)).collect();
    block_on(engine.flush());
    for (i, submit) in before.into_iter().enumerate() {
        let outcome = submit.now_or_never();
        assert_eq!(
            outcome,
            Some(Ok(i as u64)),
            "input {i} answered before flush resolved"
        );
    }
    assert!(!engine.is_closed(), "flush leaves the engine open");
    assert_eq!(engine.submit_blocking(7, 70), Ok(70));
}

on_each_runtime!(flush_with_nothing_outstanding_resolves_at_once);
fn flush_with_nothing_outstanding_resolves_at_once(runtime: Runtime) {
    let engine = engine(runtime, &Seen::default(), Duration::ZERO, |b| b);
    block_on(engine.flush());
    assert_eq!(engine.submit_blocking(1, 1), Ok(1));
    block_on(engine.flush());
}

on_each_runtime!(flush_after_close_waits_for_the_drain_and_after_join_returns);
fn flush_after_close_waits_for_the_drain_and_after_join_returns(runtime: Runtime) {
    let engine = engine(runtime, &Seen::default(), Duration::from_millis(20), |b| {
        b.max_batch_delay(Duration::from_secs(60))
    });
    let waiting = engine.submit(0, 5);
    engine.close();
    block_on(engine.flush());
    assert_eq!(waiting.now_or_never(), Some(Ok(5)));
    engine.join();
    block_on(engine.flush()); // every shard has stopped: nothing to wait for
}

on_each_runtime!(an_input_waiting_past_max_queue_time_expires_with_its_input);
fn an_input_waiting_past_max_queue_time_expires_with_its_input(runtime: Runtime) {
    let seen = Seen::default();
    let engine = engine(runtime, &seen, Duration::ZERO, |b| {
        b.max_batch_delay(Duration::from_secs(60))
            .max_queue_time(Duration::from_millis(10))
    });
    match engine.submit_blocking(3, 30) {
        Err(FerryError::Expired { input }) => assert_eq!(input, 30),
        other => panic!("{other:?}"),
    }
    let total = stats_when(|| engine.stats(), |s| s.expired == 1);
    assert_eq!((total.admitted, total.expired, total.sent), (1, 1, 0));
    assert!(
        seen.lock().unwrap().is_empty(),
        "an expired input is never sent"
    );
}

on_each_runtime!(an_input_in_a_batch_is_never_expired);
fn an_input_in_a_batch_is_never_expired(runtime: Runtime) {
    let seen = Seen::default();
    // Key 0's batch takes 60 ms, six times the queue time.
    let engine = engine(runtime, &seen, Duration::from_millis(60), |b| {
        b.max_queue_time(Duration::from_millis(10))
    });
    let in_batch = engine.submit(0, 1);
    wait_sent(&seen, 1);
    // Waits behind the busy lane, longer than its queue time.
    let behind = engine.submit(0, 2);
    assert_eq!(block_on(in_batch), Ok(1));
    match block_on(behind) {
        Err(FerryError::Expired { input: 2 }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(*seen.lock().unwrap(), vec![1]);
}

on_each_runtime!(a_caller_that_drops_before_take_withdraws_its_input);
fn a_caller_that_drops_before_take_withdraws_its_input(runtime: Runtime) {
    let seen = Seen::default();
    let engine = engine(runtime, &seen, Duration::from_millis(50), |b| {
        b.withdraw_on_drop(true)
    });
    let busy = engine.submit(0, 1);
    wait_sent(&seen, 1);
    drop(engine.submit(0, 2)); // behind the busy lane: never taken
    let kept = engine.submit(0, 3);
    block_on(engine.flush());
    assert_eq!(block_on(busy), Ok(1));
    assert_eq!(block_on(kept), Ok(3));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![1, 3],
        "the withdrawn input is never sent"
    );
    let total = stats_when(|| engine.stats(), |s| s.answered == 2);
    assert_eq!((total.admitted, total.withdrawn, total.answered), (3, 1, 2));
    assert_eq!((total.waiting, total.lanes), (0, 0));
}

on_each_runtime!(without_withdrawal_a_dropped_input_is_still_sent);
fn without_withdrawal_a_dropped_input_is_still_sent(runtime: Runtime) {
    let seen = Seen::default();
    let engine = engine(runtime, &seen, Duration::from_millis(30), |b| b);
    let busy = engine.submit(0, 1);
    wait_sent(&seen, 1);
    drop(engine.submit(0, 2));
    block_on(engine.flush());
    assert_eq!(block_on(busy), Ok(1));
    assert_eq!(*seen.lock().unwrap(), vec![1, 2]);
    assert_eq!(engine.stats().total().withdrawn, 0);
}

on_each_runtime!(a_caller_that_drops_after_take_still_has_its_input_sent);
fn a_caller_that_drops_after_take_still_has_its_input_sent(runtime: Runtime) {
    let seen = Seen::default();
    let engine = engine(runtime, &seen, Duration::from_millis(30), |b| {
        b.withdraw_on_drop(true)
    });
    let taken = engine.submit(0, 1);
    wait_sent(&seen, 1);
    drop(taken); // in its batch already
    block_on(engine.flush());
    let total = stats_when(|| engine.stats(), |s| s.answered == 1);
    assert_eq!((total.sent, total.answered, total.withdrawn), (1, 1, 0));
}

on_each_runtime!(a_full_key_is_refused_while_other_keys_are_admitted);
fn a_full_key_is_refused_while_other_keys_are_admitted(runtime: Runtime) {
    let seen = Seen::default();
    let engine = engine(runtime, &seen, Duration::from_millis(300), |b| {
        b.max_waiting_per_key(2)
    });
    let busy = engine.submit(0, 1);
    wait_sent(&seen, 1);
    // Two may wait behind the busy lane (the one in flight is not waiting).
    // Pushed before the next one, so admitted before it.
    let waiting = [engine.submit(0, 2), engine.submit(0, 3)];
    match engine.submit_blocking(0, 4) {
        Err(FerryError::Refused {
            input,
            reason: Refused::KeyFull,
        }) => assert_eq!(input, 4),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        engine.submit_blocking(1, 10),
        Ok(10),
        "another key is admitted"
    );
    assert_eq!(block_on(busy), Ok(1));
    for (submit, input) in waiting.into_iter().zip([2, 3]) {
        assert_eq!(block_on(submit), Ok(input));
    }
}

on_each_runtime!(every_submitted_input_is_accounted_for);
fn every_submitted_input_is_accounted_for(runtime: Runtime) {
    let seen = Seen::default();
    let engine = engine(runtime, &seen, Duration::from_millis(5), |b| {
        b.max_queue_time(Duration::from_millis(3))
            .withdraw_on_drop(true)
            .max_waiting_per_key(20)
            .max_waiting(200)
            .max_batch_size(4)
    });
    let mut kept = Vec::new();
    for round in 0..20_u64 {
        for i in 0..30_u64 {
            let input = round * 100 + i;
            let submit = engine.submit(i % 3, input);
            if i % 4 == 0 {
                drop(submit);
            } else {
                kept.push(submit);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let outcomes = block_on(futures::future::join_all(kept));
    block_on(engine.flush());
    let refused = outcomes
        .iter()
        .filter(|o| matches!(o, Err(FerryError::Refused { .. })))
        .count();
    let expired = outcomes
        .iter()
        .filter(|o| matches!(o, Err(FerryError::Expired { .. })))
        .count();
    assert!(
        outcomes.iter().all(|o| matches!(
            o,
            Ok(_) | Err(FerryError::Refused { .. } | FerryError::Expired { .. })
        )),
        "only outputs, refusals and expiries"
    );
    let total = stats_when(
        || engine.stats(),
        |s| s.admitted + s.refused == 600 && s.waiting == 0 && s.in_flight == 0 && s.lanes == 0,
    );
    assert_eq!(total.lanes, 0, "no lane outlives its inputs (G5)");
    // Key 0's batches take longer than the queue time: inputs behind them
    // expire, and those whose callers left are withdrawn.
    assert!(
        total.expired > 0 && total.withdrawn > 0 && total.answered > 0,
        "the load reached every exit: {total:?}"
    );
    assert_eq!(
        total.admitted + total.refused,
        600,
        "every input submitted is counted"
    );
    assert_eq!(
        total.admitted,
        total.answered + total.expired + total.withdrawn,
        "admitted = answered + expired + withdrawn: {total:?}"
    );
    assert!(total.refused >= refused as u64 && total.expired >= expired as u64);
    assert_eq!(total.sent, total.answered);
    assert_eq!(seen.lock().unwrap().len() as u64, total.sent);
}

on_each_runtime!(a_batcher_flushes_expires_and_withdraws);
fn a_batcher_flushes_expires_and_withdraws(runtime: Runtime) {
    let seen = Seen::default();
    let release = Arc::new(AtomicBool::new(false));
    let batcher: Batcher<u64, u64, String> = {
        let (seen, release) = (Arc::clone(&seen), Arc::clone(&release));
        Batcher::builder()
            .runtime(runtime)
            .shards(1)
            .pin(false)
            .max_in_flight_batches(1)
            .max_queue_time(Duration::from_millis(40))
            .withdraw_on_drop(true)
            .start(move |_| {
                let (seen, release) = (Arc::clone(&seen), Arc::clone(&release));
                move |inputs: Vec<u64>| {
                    seen.lock().unwrap().extend(&inputs);
                    let release = Arc::clone(&release);
                    async move {
                        while !release.load(SeqCst) {
                            sleep(Duration::from_millis(1)).await;
                        }
                        Ok::<_, String>(inputs)
                    }
                }
            })
            .unwrap()
    };
    let first = batcher.submit(1); // takes the one slot, held
    wait_sent(&seen, 1);
    drop(batcher.submit(2)); // withdrawn: waits for the slot, caller gone
    let expires = batcher.submit(3); // waits past its queue time
    match block_on(expires) {
        Err(FerryError::Expired { input: 3 }) => {}
        other => panic!("{other:?}"),
    }
    release.store(true, SeqCst);
    block_on(batcher.flush());
    assert_eq!(block_on(first), Ok(1));
    assert_eq!(*seen.lock().unwrap(), vec![1]);
    let total = stats_when(|| batcher.stats(), |s| s.answered == 1);
    assert_eq!(
        (
            total.admitted,
            total.answered,
            total.expired,
            total.withdrawn
        ),
        (3, 1, 1, 1)
    );
}

on_each_runtime!(a_dropped_submit_many_call_withdraws_what_was_not_taken);
fn a_dropped_submit_many_call_withdraws_what_was_not_taken(runtime: Runtime) {
    let seen = Seen::default();
    let engine = engine(runtime, &seen, Duration::from_millis(50), |b| {
        b.withdraw_on_drop(true)
    });
    let busy = engine.submit(0, 1);
    wait_sent(&seen, 1);
    // Behind the busy lane of key 0, never taken before the drop.
    drop(engine.submit_many([(0, 2), (0, 3)]));
    let kept = engine.submit(0, 4);
    block_on(engine.flush());
    assert_eq!(block_on(busy), Ok(1));
    assert_eq!(block_on(kept), Ok(4));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![1, 4],
        "withdrawn inputs are never sent"
    );
    let total = stats_when(|| engine.stats(), |s| s.answered == 2);
    assert_eq!((total.admitted, total.withdrawn, total.answered), (4, 2, 2));
}
