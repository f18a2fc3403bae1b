//! Unkeyed batching (docs/guarantees.md#unkeyed-batching) through the
//! public API: a real [`Batcher`] on its shards, on each runtime, fed from
//! tokio tasks, plain threads and `futures::executor`.
//!
//! Batch functions here are held on channels the test controls, never on
//! timers: "every slot is busy" or "three inputs wait" is a state a test
//! sets up, not a race it hopes to win. Where a test must know what a shard
//! has seen, it waits for the shard's published stats.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ferry::{Batcher, BatcherBuilder, FerryError, Refused, Runtime, Submit};
use futures::channel::oneshot;
use futures::executor::block_on;
use futures::future::join_all;
use futures::FutureExt;

mod support;
use support::on_each_runtime;

/// How long a test waits for a step before it gives up. Only a failing test
/// waits this long.
const PATIENCE: Duration = Duration::from_secs(10);

type Builder<I, O> = BatcherBuilder<I, O, String>;
type Outcome<I, O> = Result<O, FerryError<I, String>>;

/// The tests of this file run one at a time. A thread's home shard is picked
/// on its first submit from a count of the threads that ever submitted, so a
/// test running beside another would shift the picks that the spreading
/// tests rely on.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The output the simulated store gives for `input`: distinct per input, so
/// an output handed to the wrong caller shows.
fn output_of(input: u64) -> u64 {
    input * 3 + 1
}

fn echo(inputs: Vec<u64>) -> Result<Vec<u64>, String> {
    Ok(inputs.into_iter().map(output_of).collect())
}

fn lengths(inputs: Vec<String>) -> Result<Vec<usize>, String> {
    Ok(inputs.iter().map(String::len).collect())
}

/// Polls `done` until it holds, for what only the shards' published stats
/// can tell; fails the test after `PATIENCE`, naming `what`.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < PATIENCE, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Every batch a batch function was called with, in the order it was
/// called (the order the shard sent them).
type Seen = Arc<Mutex<Vec<Vec<u64>>>>;

/// A batcher that answers at once with [`output_of`] each input, recording
/// every batch in the returned [`Seen`].
fn recording(
    runtime: Runtime,
    configure: impl FnOnce(Builder<u64, u64>) -> Builder<u64, u64>,
) -> (Batcher<u64, u64, String>, Seen) {
    let seen: Seen = Arc::default();
    let batcher = {
        let seen = seen.clone();
        configure(Batcher::builder().runtime(runtime).pin(false))
            .start(move |_shard| {
                let seen = seen.clone();
                move |inputs: Vec<u64>| {
                    seen.lock().unwrap().push(inputs.clone());
                    async move { echo(inputs) }
                }
            })
            .expect("batcher starts")
    };
    assert_eq!(batcher.runtime(), runtime, "runs on the runtime asked for");
    (batcher, seen)
}

/// A batch the gated batch function started and holds until released.
struct Held<I> {
    inputs: Vec<I>,
    release: oneshot::Sender<()>,
}

impl<I> Held<I> {
    /// Lets the batch finish.
    fn release(self) {
        let _ = self.release.send(());
    }
}

/// A batcher whose every batch, once called, reports itself to the test and
/// waits for the test to release it.
struct Gated<I, O> {
    /// Declared before `batcher`, so it is dropped first: should a test fail,
    /// held batches are released and the batcher's drop (close, join) ends.
    started: mpsc::Receiver<Held<I>>,
    batcher: Batcher<I, O, String>,
    /// The most batches the batch function had in flight at once.
    in_flight_most: Arc<AtomicUsize>,
}

impl<I, O> Gated<I, O> {
    /// The next batch the shard started.
    fn next_batch(&self) -> Held<I> {
        self.started.recv_timeout(PATIENCE).expect("a batch starts")
    }

    /// Whether no batch started that the test has not seen yet.
    fn nothing_started(&self) -> bool {
        matches!(self.started.try_recv(), Err(mpsc::TryRecvError::Empty))
    }
}

/// Counts a batch out of the batch function when it ends, however it ends.
struct Leaving(Arc<AtomicUsize>);

impl Drop for Leaving {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

/// A [`Gated`] batcher whose released batches answer with `outputs`.
fn gated<I, O>(
    runtime: Runtime,
    configure: impl FnOnce(Builder<I, O>) -> Builder<I, O>,
    outputs: fn(Vec<I>) -> Result<Vec<O>, String>,
) -> Gated<I, O>
where
    I: Clone + Send + 'static,
    O: Send + 'static,
{
    let (started_tx, started) = mpsc::channel::<Held<I>>();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let in_flight_most = Arc::new(AtomicUsize::new(0));
    let batcher = {
        let in_flight_most = in_flight_most.clone();
        configure(Batcher::builder().runtime(runtime).pin(false))
            .start(move |_shard| {
                let (started_tx, in_flight, most) = (
                    started_tx.clone(),
                    in_flight.clone(),
                    in_flight_most.clone(),
                );
                move |inputs: Vec<I>| {
                    most.fetch_max(in_flight.fetch_add(1, SeqCst) + 1, SeqCst);
                    let leaving = Leaving(in_flight.clone());
                    let (release, released) = oneshot::channel();
                    let held = Held {
                        inputs: inputs.clone(),
                        release,
                    };
                    // Once the test is gone nobody can release: go on.
                    let watched = started_tx.send(held).is_ok();
                    async move {
                        let _leaving = leaving;
                        if watched {
                            let _ = released.await;
                        }
                        outputs(inputs)
                    }
                }
            })
            .expect("batcher starts")
    };
    assert_eq!(batcher.runtime(), runtime, "runs on the runtime asked for");
    Gated {
        started,
        batcher,
        in_flight_most,
    }
}

/// One way of calling a batcher: submits `inputs` and returns each with its
/// outcome.
type Callers = fn(&Batcher<u64, u64, String>, Vec<u64>) -> Vec<(u64, Outcome<u64, u64>)>;

fn from_tokio_tasks(
    batcher: &Batcher<u64, u64, String>,
    inputs: Vec<u64>,
) -> Vec<(u64, Outcome<u64, u64>)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let tasks: Vec<_> = inputs
            .into_iter()
            .map(|input| {
                let batcher = batcher.clone();
                tokio::spawn(async move { (input, batcher.submit(input).await) })
            })
            .collect();
        let mut outcomes = Vec::with_capacity(tasks.len());
        for task in tasks {
            outcomes.push(task.await.expect("task ends"));
        }
        outcomes
    })
}

fn from_plain_threads(
    batcher: &Batcher<u64, u64, String>,
    inputs: Vec<u64>,
) -> Vec<(u64, Outcome<u64, u64>)> {
    let share = inputs.len().div_ceil(4);
    std::thread::scope(|scope| {
        let threads: Vec<_> = inputs
            .chunks(share)
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|&input| (input, batcher.submit_blocking(input)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|thread| thread.join().expect("caller thread"))
            .collect()
    })
}

fn from_futures_executor(
    batcher: &Batcher<u64, u64, String>,
    inputs: Vec<u64>,
) -> Vec<(u64, Outcome<u64, u64>)> {
    block_on(join_all(inputs.into_iter().map(|input| {
        batcher.submit(input).map(move |outcome| (input, outcome))
    })))
}

on_each_runtime!(the_handle_is_clone_send_sync_and_submit_is_a_send_static_future);
fn the_handle_is_clone_send_sync_and_submit_is_a_send_static_future(runtime: Runtime) {
    fn assert_handle<T: Clone + Send + Sync + 'static>(_: &T) {}
    fn assert_send_static<T: Send + 'static>(_: &T) {}
    let _serial = serial();
    let (batcher, _seen) = recording(runtime, |b| b.shards(1));
    assert_handle(&batcher);
    let submit = batcher.submit(5);
    assert_send_static(&submit);
    assert_eq!(block_on(submit), Ok(output_of(5)));
    assert_eq!(batcher.shards(), 1);
}

on_each_runtime!(every_input_is_answered_once_with_its_own_output_from_any_caller);
fn every_input_is_answered_once_with_its_own_output_from_any_caller(runtime: Runtime) {
    let _serial = serial();
    let callers: [(&str, Callers); 3] = [
        ("tokio tasks", from_tokio_tasks),
        ("plain threads", from_plain_threads),
        ("futures::executor", from_futures_executor),
    ];
    for (case, (name, submit_all)) in callers.into_iter().enumerate() {
        let (batcher, seen) = recording(runtime, |b| b.shards(2).max_batch_size(16));
        let inputs: Vec<u64> = (0..2_000).map(|n| case as u64 * 1_000_000 + n).collect();

        let outcomes = submit_all(&batcher, inputs.clone());

        assert_eq!(
            outcomes.len(),
            inputs.len(),
            "{name}: one outcome per input"
        );
        for (input, outcome) in &outcomes {
            assert_eq!(outcome, &Ok(output_of(*input)), "{name}: input {input}");
        }
        let mut sent: Vec<u64> = seen.lock().unwrap().concat();
        sent.sort_unstable();
        assert_eq!(sent, inputs, "{name}: every input sent exactly once");
        batcher.close();
        batcher.join();
        let total = batcher.stats().total();
        let n = inputs.len() as u64;
        assert_eq!(
            (total.admitted, total.sent, total.answered, total.refused),
            (n, n, n, 0),
            "{name}"
        );
    }
}

on_each_runtime!(a_shards_inputs_are_sent_in_admission_order);
fn a_shards_inputs_are_sent_in_admission_order(runtime: Runtime) {
    let _serial = serial();
    // (slots, delay): one batch at a time or several, sent at once or held.
    let cases = [
        (1, Duration::ZERO),
        (8, Duration::ZERO),
        (4, Duration::from_millis(1)),
    ];
    for (slots, delay) in cases {
        let (batcher, seen) = recording(runtime, |b| {
            b.shards(1)
                .max_batch_size(5)
                .max_in_flight_batches(slots)
                .max_batch_delay(delay)
        });
        // One caller thread submitting without waiting: its submit order is
        // the shard's admission order.
        let outcomes = block_on(join_all((0..1_000).map(|input| batcher.submit(input))));
        assert!(outcomes.iter().all(Result::is_ok), "slots {slots}");
        let sent = seen.lock().unwrap().concat();
        assert_eq!(
            sent,
            (0..1_000).collect::<Vec<u64>>(),
            "slots {slots}, delay {delay:?}: batches one after the other are the admission order"
        );
    }
}

on_each_runtime!(batches_never_pass_the_size_or_weight_bound);
fn batches_never_pass_the_size_or_weight_bound(runtime: Runtime) {
    let _serial = serial();
    let weight_of = |input: &u64| input % 4 + 1;
    // (max_batch_size, max_batch_weight)
    let cases = [(1, u64::MAX), (7, u64::MAX), (64, 9), (5, 12)];
    for (size_max, weight_max) in cases {
        // A delay lets inputs pile up, so batches are cut by the bounds.
        let (batcher, seen) = recording(runtime, |b| {
            b.shards(2)
                .max_batch_size(size_max)
                .max_batch_weight(weight_max)
                .weigh(weight_of)
                .max_batch_delay(Duration::from_millis(20))
        });
        std::thread::scope(|scope| {
            for thread in 0..2_u64 {
                let batcher = &batcher;
                scope.spawn(move || {
                    let inputs = (0..500).map(|n| thread * 1_000 + n);
                    let outcomes = block_on(join_all(inputs.map(|input| batcher.submit(input))));
                    assert!(outcomes.iter().all(Result::is_ok));
                });
            }
        });
        let seen = seen.lock().unwrap();
        let weight = |batch: &Vec<u64>| batch.iter().map(weight_of).sum::<u64>();
        for batch in seen.iter() {
            assert!(
                !batch.is_empty() && batch.len() <= size_max,
                "size bound {size_max}: {batch:?}"
            );
            assert!(
                weight(batch) <= weight_max,
                "weight bound {weight_max}: {batch:?} weighs {}",
                weight(batch)
            );
        }
        // Some batch was full (at its size bound, or with no room for one
        // more input of the heaviest kind): the bounds did the cutting.
        assert!(
            seen.iter()
                .any(|b| b.len() == size_max || weight(b) > weight_max.saturating_sub(4)),
            "no batch reached a bound ({size_max}, {weight_max})"
        );
    }
}

on_each_runtime!(with_no_delay_batches_grow_only_while_every_slot_is_busy);
fn with_no_delay_batches_grow_only_while_every_slot_is_busy(runtime: Runtime) {
    let _serial = serial();
    for slots in [1, 3] {
        let gate = gated(
            runtime,
            |b| b.shards(1).max_in_flight_batches(slots).max_batch_size(64),
            echo,
        );
        // While a slot is free, an input goes at once, alone.
        let mut held = Vec::new();
        let mut first = Vec::new();
        for input in 0..slots as u64 {
            first.push(gate.batcher.submit(input));
            let batch = gate.next_batch();
            assert_eq!(
                batch.inputs,
                [input],
                "{slots} slots: alone while a slot is free"
            );
            held.push(batch);
        }
        // Every slot busy: later inputs wait, together.
        let later: Vec<_> = (100..105).map(|input| gate.batcher.submit(input)).collect();
        wait_for("five inputs waiting", || {
            gate.batcher.stats().total().waiting == 5
        });
        assert!(
            gate.nothing_started(),
            "{slots} slots: sent with no slot free"
        );
        // A slot frees: they all go in the next batch.
        held.remove(0).release();
        let next = gate.next_batch();
        assert_eq!(next.inputs, [100, 101, 102, 103, 104], "{slots} slots");
        next.release();
        held.into_iter().for_each(Held::release);
        let outcomes = block_on(join_all(first.into_iter().chain(later)));
        let inputs = (0..slots as u64).chain(100..105);
        assert_eq!(
            outcomes,
            inputs.map(|input| Ok(output_of(input))).collect::<Vec<_>>()
        );
    }
}

on_each_runtime!(several_batches_are_in_flight_at_once_up_to_the_slots_never_more);
fn several_batches_are_in_flight_at_once_up_to_the_slots_never_more(runtime: Runtime) {
    let _serial = serial();
    for slots in [1, 2, 3] {
        let gate = gated(
            runtime,
            |b| b.shards(1).max_in_flight_batches(slots).max_batch_size(1),
            echo,
        );
        let pending: Vec<_> = (0..8).map(|input| gate.batcher.submit(input)).collect();
        wait_for("every input admitted", || {
            gate.batcher.stats().total().admitted == 8
        });
        let mut held: std::collections::VecDeque<_> =
            (0..slots).map(|_| gate.next_batch()).collect();
        wait_for("the rest waiting", || {
            let total = gate.batcher.stats().total();
            (total.in_flight, total.waiting) == (slots as u64, 8 - slots as u64)
        });
        assert!(gate.nothing_started(), "{slots} slots: one batch too many");
        // Each batch released lets exactly one more start, in FIFO order.
        let mut started: Vec<u64> = held.iter().flat_map(|h| h.inputs.clone()).collect();
        while let Some(oldest) = held.pop_front() {
            oldest.release();
            if started.len() < 8 {
                let next = gate.next_batch();
                started.extend(&next.inputs);
                held.push_back(next);
            }
        }
        assert_eq!(started, (0..8).collect::<Vec<u64>>(), "{slots} slots");
        let outcomes = block_on(join_all(pending));
        assert_eq!(
            outcomes,
            (0..8).map(|i| Ok(output_of(i))).collect::<Vec<_>>()
        );
        assert_eq!(
            gate.in_flight_most.load(SeqCst),
            slots,
            "most batches in flight at once"
        );
    }
}

on_each_runtime!(with_a_delay_a_lone_input_is_answered_once_its_delay_has_passed);
fn with_a_delay_a_lone_input_is_answered_once_its_delay_has_passed(runtime: Runtime) {
    let _serial = serial();
    let delay = Duration::from_millis(50);
    let (batcher, seen) = recording(runtime, |b| b.shards(1).max_batch_delay(delay));
    let started = Instant::now();
    assert_eq!(batcher.submit_blocking(7), Ok(output_of(7)));
    let waited = started.elapsed();
    // The shard's clock and this one may differ a little: most of the delay.
    assert!(waited >= delay * 9 / 10, "answered after {waited:?}");
    assert_eq!(*seen.lock().unwrap(), [vec![7]]);
}

on_each_runtime!(with_a_delay_inputs_arriving_within_it_go_together);
fn with_a_delay_inputs_arriving_within_it_go_together(runtime: Runtime) {
    let _serial = serial();
    let (batcher, seen) = recording(runtime, |b| {
        b.shards(1)
            .max_batch_size(10)
            .max_batch_delay(Duration::from_millis(300))
    });
    let outcomes = block_on(join_all((1..=3).map(|input| batcher.submit(input))));
    assert_eq!(outcomes, [Ok(4), Ok(7), Ok(10)]);
    assert_eq!(*seen.lock().unwrap(), [vec![1, 2, 3]], "one partial batch");
}

on_each_runtime!(past_a_queueing_bound_an_input_is_refused_full_and_handed_back);
fn past_a_queueing_bound_an_input_is_refused_full_and_handed_back(runtime: Runtime) {
    let _serial = serial();
    // Each bound lets three inputs wait behind a busy slot, not a fourth.
    type Configure = fn(Builder<String, usize>) -> Builder<String, usize>;
    let cases: [(&str, Configure); 2] = [
        ("max_waiting", |b| b.max_waiting(3)),
        ("max_waiting_weight", |b| {
            b.max_waiting_weight(6).weigh(|_: &String| 2)
        }),
    ];
    for (bound, configure) in cases {
        let gate = gated(
            runtime,
            |b| configure(b.shards(1).max_in_flight_batches(1)),
            lengths,
        );
        let busy = gate.batcher.submit("busy".to_string());
        let busy_batch = gate.next_batch();
        let mut waiting: Vec<_> = ["one", "two", "three", "four"]
            .map(|word| gate.batcher.submit(word.to_string()))
            .into();
        let fourth = waiting.pop().expect("four submitted");
        match block_on(fourth) {
            Err(FerryError::Refused {
                input,
                reason: Refused::Full,
            }) => assert_eq!(input, "four", "{bound}: handed back untouched"),
            other => panic!("{bound}: the fourth input got {other:?}"),
        }
        busy_batch.release();
        let next = gate.next_batch();
        assert_eq!(next.inputs, ["one", "two", "three"], "{bound}");
        next.release();
        assert_eq!(block_on(busy), Ok(4));
        assert_eq!(
            block_on(join_all(waiting)),
            [Ok(3), Ok(3), Ok(5)],
            "{bound}"
        );
        // Room again: the bound refused, not the state of the batcher.
        let again = gate.batcher.submit("four".to_string());
        gate.next_batch().release();
        assert_eq!(block_on(again), Ok(4), "{bound}");
    }
}

on_each_runtime!(a_full_intake_refuses_at_once_with_the_input);
fn a_full_intake_refuses_at_once_with_the_input(runtime: Runtime) {
    let _serial = serial();
    let (called_tx, called) = mpsc::channel::<Vec<u64>>();
    let (unblock, unblocked) = mpsc::channel::<()>();
    let unblocked = Arc::new(Mutex::new(unblocked));
    let batcher: Batcher<u64, u64, String> = Batcher::builder()
        .runtime(runtime)
        .shards(1)
        .pin(false)
        .intake_capacity(4)
        .start(move |_shard| {
            let (called_tx, unblocked) = (called_tx.clone(), unblocked.clone());
            move |inputs: Vec<u64>| {
                // Holds the shard's own thread inside the call: meanwhile it
                // cannot take anything from its intake.
                let _ = called_tx.send(inputs.clone());
                let _ = unblocked.lock().unwrap().recv_timeout(PATIENCE);
                async move { echo(inputs) }
            }
        })
        .expect("batcher starts");
    let first = batcher.submit(0);
    assert_eq!(called.recv_timeout(PATIENCE).expect("called"), [0]);
    let mut submits: Vec<_> = (1..=10).map(|input| batcher.submit(input)).collect();
    let past_capacity = submits.split_off(4);
    for (input, submit) in (5..=10).zip(past_capacity) {
        match submit.now_or_never() {
            Some(Err(FerryError::Refused {
                input: back,
                reason: Refused::Full,
            })) => assert_eq!(back, input),
            other => panic!("input {input} past the intake's capacity: {other:?}"),
        }
    }
    let stats = batcher.stats().total();
    assert_eq!((stats.intake, stats.refused), (4, 6), "{stats:?}");
    drop(unblock);
    assert_eq!(block_on(first), Ok(output_of(0)));
    assert_eq!(
        block_on(join_all(submits)),
        (1..=4).map(|i| Ok(output_of(i))).collect::<Vec<_>>()
    );
}

on_each_runtime!(an_input_no_batch_could_carry_is_refused_too_heavy_at_once);
fn an_input_no_batch_could_carry_is_refused_too_heavy_at_once(runtime: Runtime) {
    let _serial = serial();
    let batcher: Batcher<String, usize, String> = Batcher::builder()
        .runtime(runtime)
        .shards(1)
        .pin(false)
        .max_batch_weight(5)
        .weigh(|line: &String| line.len() as u64)
        .start(|_shard| |lines: Vec<String>| async move { lengths(lines) })
        .expect("batcher starts");
    // (input, refusal expected)
    let cases = [
        ("a", None),
        ("hello", None),
        ("hello!", Some(Refused::TooHeavy)),
        ("a much longer line", Some(Refused::TooHeavy)),
    ];
    for (line, refusal) in cases {
        let submit = batcher.submit(line.to_string());
        match refusal {
            None => assert_eq!(block_on(submit), Ok(line.len()), "{line:?}"),
            Some(reason) => match submit.now_or_never() {
                Some(Err(FerryError::Refused { input, reason: got })) => {
                    assert_eq!((input.as_str(), got), (line, reason));
                }
                other => panic!("{line:?}: {other:?}"),
            },
        }
    }
    batcher.close();
    batcher.join();
    let total = batcher.stats().total();
    assert_eq!((total.admitted, total.refused), (2, 2));
}

on_each_runtime!(after_close_an_input_is_refused_closed_and_handed_back);
fn after_close_an_input_is_refused_closed_and_handed_back(runtime: Runtime) {
    let _serial = serial();
    let (batcher, seen) = recording(runtime, |b| b.shards(2));
    assert_eq!(batcher.submit_blocking(1), Ok(output_of(1)));
    assert!(!batcher.is_closed());
    batcher.close();
    batcher.close();
    assert!(batcher.is_closed());
    match batcher.submit(7).now_or_never() {
        Some(Err(FerryError::Refused {
            input: 7,
            reason: Refused::Closed,
        })) => {}
        other => panic!("submit after close: {other:?}"),
    }
    match batcher.submit_blocking(8) {
        Err(FerryError::Refused {
            input: 8,
            reason: Refused::Closed,
        }) => {}
        other => panic!("submit_blocking after close: {other:?}"),
    }
    batcher.join();
    assert_eq!(*seen.lock().unwrap(), [vec![1]]);
    let total = batcher.stats().total();
    assert_eq!((total.admitted, total.answered, total.refused), (1, 1, 2));
}

/// What the batch function does with a batch, by its first input's tens
/// (G10 tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Healthy,
    Fails,
    PanicsWhileRunning,
    MiscountsOutputs,
    PanicsWhenCalled,
}

impl Fault {
    fn of(input: u64) -> Self {
        match input / 10 {
            1 => Fault::Fails,
            2 => Fault::PanicsWhileRunning,
            3 => Fault::MiscountsOutputs,
            4 => Fault::PanicsWhenCalled,
            _ => Fault::Healthy,
        }
    }

    /// What the batch function returns for `inputs`, if it returns.
    fn outputs(inputs: Vec<u64>) -> Result<Vec<u64>, String> {
        let first = inputs[0];
        match Fault::of(first) {
            Fault::Fails => Err(format!("store refused the batch of {first}")),
            Fault::PanicsWhileRunning => panic!("batch of {first} panics on purpose"),
            Fault::MiscountsOutputs => Ok(vec![0; inputs.len() + 1]),
            Fault::Healthy | Fault::PanicsWhenCalled => echo(inputs),
        }
    }
}

on_each_runtime!(a_faulty_batch_fails_only_its_own_callers);
fn a_faulty_batch_fails_only_its_own_callers(runtime: Runtime) {
    let _serial = serial();
    let gate = gated(
        runtime,
        |b| b.shards(1).max_in_flight_batches(1).max_batch_size(3),
        Fault::outputs,
    );
    let busy = gate.batcher.submit(0);
    let busy_batch = gate.next_batch();
    // Behind the busy slot, four batches' worth wait: fine, failing,
    // panicking, miscounting, three inputs each.
    let groups = [[1, 2, 3], [11, 12, 13], [21, 22, 23], [31, 32, 33]];
    let pending: Vec<Vec<_>> = groups
        .iter()
        .map(|group| {
            group
                .iter()
                .map(|&input| gate.batcher.submit(input))
                .collect()
        })
        .collect();
    wait_for("twelve inputs waiting", || {
        gate.batcher.stats().total().waiting == 12
    });
    busy_batch.release();
    for group in &groups {
        let batch = gate.next_batch();
        assert_eq!(batch.inputs, group, "FIFO, three at a time");
        batch.release();
    }
    assert_eq!(block_on(busy), Ok(output_of(0)));
    for (group, submits) in groups.iter().zip(pending) {
        let outcomes = block_on(join_all(submits));
        let expected: Vec<Outcome<u64, u64>> = match Fault::of(group[0]) {
            Fault::Healthy => group.iter().map(|&i| Ok(output_of(i))).collect(),
            Fault::Fails => vec![
                Err(FerryError::Failed(format!(
                    "store refused the batch of {}",
                    group[0]
                )));
                3
            ],
            Fault::PanicsWhileRunning => vec![Err(FerryError::Panicked); 3],
            Fault::MiscountsOutputs => vec![
                Err(FerryError::WrongOutputCount {
                    expected: 3,
                    got: 4
                });
                3
            ],
            Fault::PanicsWhenCalled => unreachable!("not in these groups"),
        };
        assert_eq!(outcomes, expected, "batch {group:?}");
    }
    // The batcher goes on serving.
    let after = gate.batcher.submit(5);
    gate.next_batch().release();
    assert_eq!(block_on(after), Ok(output_of(5)));
}

on_each_runtime!(each_fault_is_answered_as_such_and_the_batcher_goes_on);
fn each_fault_is_answered_as_such_and_the_batcher_goes_on(runtime: Runtime) {
    let _serial = serial();
    let batcher: Batcher<u64, u64, String> = Batcher::builder()
        .runtime(runtime)
        .shards(1)
        .pin(false)
        .max_batch_size(1)
        .start(|_shard| {
            |inputs: Vec<u64>| {
                if Fault::of(inputs[0]) == Fault::PanicsWhenCalled {
                    panic!("batch of {} panics when called, on purpose", inputs[0]);
                }
                async move { Fault::outputs(inputs) }
            }
        })
        .expect("batcher starts");
    let cases: [(u64, Outcome<u64, u64>); 6] = [
        (1, Ok(output_of(1))),
        (
            10,
            Err(FerryError::Failed("store refused the batch of 10".into())),
        ),
        (20, Err(FerryError::Panicked)),
        (
            30,
            Err(FerryError::WrongOutputCount {
                expected: 1,
                got: 2,
            }),
        ),
        (40, Err(FerryError::Panicked)),
        (2, Ok(output_of(2))),
    ];
    for (input, expected) in cases {
        assert_eq!(
            batcher.submit_blocking(input),
            expected,
            "input {input} ({:?})",
            Fault::of(input)
        );
    }
    let failed = batcher.submit_blocking(11).unwrap_err();
    assert_eq!(
        failed.to_string(),
        "the batch function failed: store refused the batch of 11"
    );
    batcher.close();
    batcher.join();
    let total = batcher.stats().total();
    assert_eq!((total.admitted, total.sent, total.answered), (7, 7, 7));
}

on_each_runtime!(close_sends_waiting_inputs_at_once_answers_them_then_join_returns);
fn close_sends_waiting_inputs_at_once_answers_them_then_join_returns(runtime: Runtime) {
    let _serial = serial();
    let (batcher, seen) = recording(runtime, |b| {
        b.shards(2)
            .max_batch_size(64)
            .max_batch_delay(Duration::from_secs(3_600))
    });
    // Two caller threads, so that both shards hold waiting inputs.
    let pending: Vec<(u64, Submit<u64, u64, String>)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..2_u64)
            .map(|thread| {
                let batcher = &batcher;
                scope.spawn(move || {
                    (0..5)
                        .map(|n| thread * 10 + n)
                        .map(|input| (input, batcher.submit(input)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|thread| thread.join().expect("caller thread"))
            .collect()
    });
    wait_for("ten inputs waiting", || {
        batcher.stats().total().waiting == 10
    });
    assert!(
        seen.lock().unwrap().is_empty(),
        "an hour's delay holds them"
    );
    let per_shard: Vec<u64> = batcher.stats().shards.iter().map(|s| s.waiting).collect();
    assert_eq!(per_shard, [5, 5]);

    batcher.close();
    for (input, submit) in pending {
        assert_eq!(block_on(submit), Ok(output_of(input)), "input {input}");
    }
    batcher.join();

    let mut batches = seen.lock().unwrap().clone();
    batches.sort();
    assert_eq!(
        batches,
        [vec![0, 1, 2, 3, 4], vec![10, 11, 12, 13, 14]],
        "each shard sent what waited, in one batch"
    );
    let total = batcher.stats().total();
    assert_eq!(
        (
            total.admitted,
            total.sent,
            total.answered,
            total.waiting,
            total.in_flight
        ),
        (10, 10, 10, 0, 0)
    );
}

on_each_runtime!(once_quiet_the_stats_balance);
fn once_quiet_the_stats_balance(runtime: Runtime) {
    let _serial = serial();
    let (batcher, _seen) = recording(runtime, |b| {
        b.shards(2)
            .max_batch_size(8)
            .max_waiting(4)
            .max_batch_weight(10)
            .weigh(|input: &u64| input % 12 + 1)
    });
    let submit_share = |thread: u64| {
        let inputs = (0..500).map(move |n| thread * 1_000 + n);
        block_on(join_all(inputs.map(|input| {
            batcher.submit(input).map(move |outcome| (input, outcome))
        })))
    };
    let mut outcomes: Vec<(u64, Outcome<u64, u64>)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..2)
            .map(|t| scope.spawn(move || submit_share(t)))
            .collect();
        threads
            .into_iter()
            .flat_map(|thread| thread.join().expect("caller thread"))
            .collect()
    });
    wait_for("quiet", || batcher.stats().is_quiet());
    let quiet = batcher.stats().total();
    assert_eq!(
        (quiet.sent, quiet.answered, quiet.lanes),
        (quiet.admitted, quiet.admitted, 0),
        "quiet: admitted == sent == answered, no lanes"
    );

    batcher.close();
    outcomes.extend((2_000..2_010).map(|input| (input, batcher.submit_blocking(input))));
    batcher.join();

    let mut tally: BTreeMap<&str, u64> = BTreeMap::new();
    for (input, outcome) in &outcomes {
        let kind = match outcome {
            Ok(output) => {
                assert_eq!(*output, output_of(*input));
                "answered"
            }
            Err(FerryError::Refused {
                input: back,
                reason,
            }) => {
                assert_eq!(back, input, "handed back untouched");
                match reason {
                    Refused::Full => "refused full",
                    Refused::TooHeavy => "refused too heavy",
                    Refused::Closed => "refused closed",
                    Refused::KeyFull => panic!("input {input}: a batcher has no keys to be full"),
                    Refused::Late => panic!("input {input}: a batcher holds nothing back"),
                }
            }
            Err(other) => panic!("input {input}: {other:?}"),
        };
        *tally.entry(kind).or_default() += 1;
    }
    let count = |kind| tally.get(kind).copied().unwrap_or(0);
    let answered = count("answered");
    let refused = count("refused full") + count("refused too heavy") + count("refused closed");
    assert!(
        count("refused too heavy") > 0 && count("refused closed") > 0,
        "{tally:?}"
    );
    let total = batcher.stats().total();
    assert_eq!(
        outcomes.len() as u64,
        answered + refused,
        "submitted = answered + refused"
    );
    assert_eq!(
        (total.admitted, total.sent, total.answered, total.refused),
        (answered, answered, answered, refused),
        "the batcher's books agree with the callers' ({tally:?})"
    );
    assert_eq!((total.lanes, total.waiting, total.in_flight), (0, 0, 0));
}

/// Submits from `threads` caller threads, one after the other, to
/// `batcher`, and returns how many inputs each of its shards admitted.
fn admitted_per_shard(batcher: &Batcher<u64, u64, String>, threads: u64) -> Vec<u64> {
    for thread in 0..threads {
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for n in 0..20 {
                    let input = thread * 100 + n;
                    assert_eq!(batcher.submit_blocking(input), Ok(output_of(input)));
                }
            });
        });
    }
    // A shard publishes its counts after it answers: wait for all of them.
    wait_for("every input counted", || {
        batcher.stats().total().admitted == threads * 20
    });
    batcher.stats().shards.iter().map(|s| s.admitted).collect()
}

on_each_runtime!(with_as_many_caller_threads_as_shards_every_shard_gets_work);
fn with_as_many_caller_threads_as_shards_every_shard_gets_work(runtime: Runtime) {
    let _serial = serial();
    // (shards, caller threads)
    for (shards, threads) in [(2, 2), (2, 3), (3, 3), (3, 5)] {
        let (batcher, _seen) = recording(runtime, |b| b.shards(shards));
        let admitted = admitted_per_shard(&batcher, threads);
        assert!(
            admitted.iter().all(|&n| n > 0),
            "{shards} shards, {threads} threads: admitted per shard {admitted:?}"
        );
        assert_eq!(admitted.iter().sum::<u64>(), threads * 20);
    }
}

on_each_runtime!(every_shard_gets_work_whatever_other_batchers_the_process_has);
fn every_shard_gets_work_whatever_other_batchers_the_process_has(runtime: Runtime) {
    let _serial = serial();
    let (ours, _seen) = recording(runtime, |b| b.shards(2));
    let (theirs, _seen_theirs) = recording(runtime, |b| b.shards(2));
    // Two threads call ours; between them, another thread calls theirs.
    let call = |batcher: &Batcher<u64, u64, String>| {
        std::thread::scope(|scope| {
            scope.spawn(|| assert_eq!(batcher.submit_blocking(1), Ok(output_of(1))));
        });
    };
    call(&ours);
    call(&theirs);
    call(&ours);
    // A shard publishes its counts after it answers: wait for both.
    wait_for("both inputs counted", || ours.stats().total().admitted == 2);
    let admitted: Vec<u64> = ours.stats().shards.iter().map(|s| s.admitted).collect();
    assert_eq!(
        admitted,
        [1, 1],
        "two caller threads, two shards: each shard gets one thread's work"
    );
}
