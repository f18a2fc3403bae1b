//! A fixed workload on the steady path, for counting what an input costs in
//! instructions: `bench/callgrind.sh` runs it under
//! `valgrind --tool=callgrind`, once with inputs and once with none, and
//! divides the difference by the inputs.
//!
//! ```text
//! cargo build --release -p ferry-bench --example steady
//! target/release/examples/steady <submit|local|batcher|many|harness> <inputs> <keys> [auto|glommio|tokio] [cycle|uniform|zipf:S]
//! target/release/examples/steady <ferry|ferry-trips|single-lock|multi-key|batch-aint-one|unbatched> <inputs> <keys> [auto|glommio|tokio] [cycle|uniform|zipf:S]
//! target/release/examples/steady <entities|entities-trips> <inputs> <keys> [auto|glommio|tokio] [cycle|uniform|zipf:S]
//! ```
//!
//! Keys: `cycle` (the default) gives input `i` key `i % keys`; `uniform`
//! and `zipf:S` draw each input's key from `ferry_bench::sources::dist`, with one
//! generator of a fixed seed drawn in input order, so every run (and every
//! system) gets the same keys. The draws are made before any input is
//! submitted, in `pick_keys`, whose instructions `bench/callgrind.sh` takes
//! out of the count (as it does the clock's calibration); `submit` and the
//! systems follow them, `many` and `local` keep to `cycle`. The caller
//! threads run `caller_thread`, which nothing else runs: the script tells
//! their share of the count by it.
//!
//! Two shards, unpinned, no spin and no doze (see `steady`), an instant
//! batch function (it hands its inputs back), the defaults otherwise. The
//! runtime is `Runtime::Auto` unless named; `bench/callgrind.sh` names
//! tokio, as glommio does not run under valgrind.
//!
//! - `submit`: two caller threads call `Engine::submit`, each keeping
//!   `IN_FLIGHT_PER_CALLER` inputs in flight; thread `t` submits inputs
//!   `t, t + 2, t + 4, …`, input `i` with key `i % keys`.
//! - `local`: one task on each shard (`Engine::spawn_on`) calls
//!   `Engine::submit_local` with as many in flight, for that shard's own
//!   keys among `0..keys` only, taking them in turn; shard 0 has the first
//!   half of the inputs (rounded up), shard 1 the rest.
//! - `batcher`: two caller threads on an unkeyed `Batcher` (`keys` unused),
//!   each keeping to its own shard.
//! - `many`: as `submit`, the inputs handed over in `Engine::submit_many`
//!   calls of `PER_CALL`, each caller keeping as many in flight (two
//!   calls) and reading its calls' streams in turn.
//! - `harness`: no engine at all: the `submit` mode's two caller threads
//!   and their `FuturesUnordered`, each input a stand-in future that is
//!   pending on its first poll (waking itself) and ready on its second, as
//!   an answered submit is. What the workload itself costs an input, to
//!   read the other figures against.
//! - `ferry`, `ferry-trips`, `single-lock`, `multi-key`, `batch-aint-one`,
//!   `unbatched`: the systems
//!   `ferry-load` compares, each as it starts them there (its defaults:
//!   batches of up to 64, 256 in flight; the other systems on tokio with 2
//!   workers), on its simulated store with no round trip (`--store-rtt
//!   0`: every request answered at once, on the caller's thread), under
//!   the `submit` mode's two caller threads. So each input's figure holds
//!   the system, the store's read and conditional write, and the callers,
//!   the same for every system: the systems' costs side by side.
//!
//! - `entities`, `entities-trips`: `ferry::entity`'s write path on its
//!   `MemoryStore`, a fold adding each input to its key's `u64`, under
//!   the `submit` mode's callers: one key's batch a request (batches of
//!   up to 64, 256 in flight) or trips of up to
//!   `DEFAULT_MAX_TRIP_BATCHES` keys (4 in flight). What the library's
//!   entities cost an input beside the engine's instant batch function
//!   (`submit`), the store's own locked maps included.
//!
//! Everything but the inputs is the same with zero inputs (the threads,
//! the engine's start and close, the per-shard key lists), so a run with
//! zero inputs is the baseline to subtract. It prints the inputs done.

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use std::convert::Infallible;

use ferry::entity::{Entities, MemoryStore};
use ferry::{Batcher, Builder, Engine, FerryError, Runtime, ShardId};
use ferry_bench::run::compare::{with_system, WithSystem};
use ferry_bench::sources::dist::{KeyDist, KeySampler, Rng};
use ferry_bench::store::{Fence, Store};
use ferry_bench::systems::{Outcome, Settings, System, SystemKind, DEFAULT_RETRY_UNKNOWN};
use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;

/// Shards, and caller threads in the `submit` and `batcher` modes.
const SHARDS: usize = 2;

/// Inputs each caller (thread or shard task) keeps in flight.
const IN_FLIGHT_PER_CALLER: usize = 1_000;

/// Inputs per `submit_many` call in the `many` mode.
const PER_CALL: usize = 500;

const USAGE: &str = "usage: steady <submit|local|batcher|many|harness|ferry|ferry-trips|single-lock|multi-key|batch-aint-one|unbatched|entities|entities-trips> <inputs> <keys> [auto|glommio|tokio] [cycle|uniform|zipf:S]";

/// The seed of the key draws of `uniform` and `zipf:S`.
const KEY_SEED: u64 = 0x5EED_F3A4_0000_0041;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Submit,
    Local,
    Batcher,
    Many,
    Harness,
    /// One of `ferry-load`'s systems on its simulated store.
    System(SystemKind),
    /// `ferry::entity` on its memory store, in trips or not.
    Entities {
        trips: bool,
    },
}

struct Workload {
    mode: Mode,
    inputs: usize,
    keys: u64,
    /// Input `i`'s key, drawn before the run; empty for `cycle`.
    drawn: Vec<u64>,
    runtime: Runtime,
}

impl Workload {
    /// Input `i`'s key.
    fn key(&self, i: usize) -> u64 {
        match self.drawn.get(i) {
            Some(&key) => key,
            None => i as u64 % self.keys,
        }
    }
}

/// Each input's key in `0..keys` from `dist`, drawn in input order from
/// one generator of a fixed seed. Kept out of line: `bench/callgrind.sh`
/// takes its instructions out of the count.
#[inline(never)]
fn pick_keys(inputs: usize, keys: u64, dist: KeyDist) -> Vec<u64> {
    let sampler = KeySampler::new(dist, keys).expect("the key distribution fits");
    let mut rng = Rng::new(KEY_SEED);
    (0..inputs).map(|_| sampler.sample(&mut rng)).collect()
}

fn main() -> ExitCode {
    let workload = match parse(std::env::args().skip(1).collect()) {
        Ok(workload) => workload,
        Err(why) => {
            eprintln!("steady: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let (done, batches, runtime) = match workload.mode {
        Mode::Submit => run_submit(&workload),
        Mode::Local => run_local(&workload),
        Mode::Batcher => run_batcher(&workload),
        Mode::Many => run_many(&workload),
        Mode::Harness => run_harness(&workload),
        Mode::System(kind) => run_system(&workload, kind),
        Mode::Entities { trips } => run_entities(&workload, trips),
    };
    let shards = match workload.mode {
        Mode::Harness => "no shards".to_string(),
        Mode::System(kind) if !kind.name().starts_with("ferry") => "no shards".to_string(),
        _ => format!("{runtime:?} shards"),
    };
    println!(
        "steady: {:?} mode, {} keys, {shards}: {done} inputs done in {batches} batches",
        workload.mode, workload.keys
    );
    if done == workload.inputs {
        ExitCode::SUCCESS
    } else {
        eprintln!("steady: {} inputs submitted, {done} done", workload.inputs);
        ExitCode::FAILURE
    }
}

fn parse(args: Vec<String>) -> Result<Workload, String> {
    let [mode, inputs, keys, rest @ ..] = args.as_slice() else {
        return Err("three arguments are needed".to_string());
    };
    let mode = match mode.as_str() {
        "submit" => Mode::Submit,
        "local" => Mode::Local,
        "batcher" => Mode::Batcher,
        "many" => Mode::Many,
        "harness" => Mode::Harness,
        "ferry" => Mode::System(SystemKind::Ferry),
        "ferry-trips" => Mode::System(SystemKind::FerryTrips),
        "single-lock" => Mode::System(SystemKind::SingleLock),
        "multi-key" => Mode::System(SystemKind::MultiKey),
        "batch-aint-one" => Mode::System(SystemKind::BatchAintOne),
        "unbatched" => Mode::System(SystemKind::Unbatched),
        "entities" => Mode::Entities { trips: false },
        "entities-trips" => Mode::Entities { trips: true },
        other => return Err(format!("unknown mode `{other}`")),
    };
    let inputs = inputs
        .parse()
        .map_err(|_| format!("`{inputs}` is not a number of inputs"))?;
    let keys: u64 = keys
        .parse()
        .map_err(|_| format!("`{keys}` is not a number of keys"))?;
    if keys == 0 {
        return Err("keys must be at least 1".to_string());
    }
    let (mut runtime, mut dist) = (Runtime::Auto, None);
    if rest.len() > 2 {
        return Err("at most five arguments".to_string());
    }
    for arg in rest {
        match arg.as_str() {
            "auto" => runtime = Runtime::Auto,
            "glommio" => runtime = Runtime::Glommio,
            "tokio" => runtime = Runtime::Tokio,
            "cycle" => dist = None,
            other => match other.parse::<KeyDist>() {
                Ok(parsed) => dist = Some(parsed),
                Err(_) => {
                    return Err(format!(
                        "`{other}` is neither a runtime nor a key distribution"
                    ))
                }
            },
        }
    }
    let drawn = match dist {
        Some(dist) if inputs > 0 => pick_keys(inputs, keys, dist),
        _ => Vec::new(),
    };
    Ok(Workload {
        mode,
        inputs,
        keys,
        drawn,
        runtime,
    })
}

/// The shards' settings, the same for every mode.
///
/// No spin and no doze: an idle shard parks at once. Spinning and dozing
/// last a span of wall-clock time, so the number of looks a shard takes
/// while it waits, and the instructions they cost, would follow how fast
/// the machine (or valgrind) runs and what else it runs. An instruction
/// count should measure the work an input takes, not how long anyone spun.
fn steady<K, O: Send + 'static, E: Clone + Send + 'static, M>(
    builder: Builder<K, u64, O, E, M>,
    runtime: Runtime,
) -> Builder<K, u64, O, E, M> {
    builder
        .shards(SHARDS)
        .pin(false)
        .runtime(runtime)
        .spin_before_park(Duration::ZERO)
        .doze_before_park(Duration::ZERO)
}

/// Two caller threads on `Engine::submit`. Returns (done, batches, runtime).
fn run_submit(workload: &Workload) -> (usize, u64, Runtime) {
    let engine: Engine<u64, u64, u64, ()> = steady(Engine::builder(), workload.runtime)
        .start(|_shard| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, ()>(inputs) })
        .expect("the engine starts");
    let done = on_caller_threads(workload.inputs, |i| {
        engine.submit(workload.key(i), i as u64)
    });
    engine.close();
    engine.join();
    (done, engine.stats().total().batches, engine.runtime())
}

/// Two caller threads on `Entities::submit`, on a `MemoryStore`. Returns
/// (done, batches, runtime).
fn run_entities(workload: &Workload, trips: bool) -> (usize, u64, Runtime) {
    let (slots, per_trip) = if trips {
        (4, ferry::DEFAULT_MAX_TRIP_BATCHES)
    } else {
        (256, 1)
    };
    let entities: Entities<u64, u64, u64, Infallible> =
        steady(Entities::builder(), workload.runtime)
            .max_batch_size(64)
            .max_in_flight_batches(slots)
            .max_trip_batches(per_trip)
            .start_entities(MemoryStore::new(), |sum: &mut u64, input: &u64| {
                *sum += input;
                Ok(*sum)
            })
            .expect("the entities start");
    let done = on_caller_threads(workload.inputs, |i| {
        entities
            .submit(workload.key(i), i as u64)
            .map(|answer| match answer {
                Ok(sum) => Ok(sum),
                Err(err) => panic!("an entity's input was answered {err:?}"),
            })
    });
    entities.close();
    entities.join();
    let engine = entities.engine();
    (done, engine.stats().total().batches, engine.runtime())
}

/// Two caller threads on `Engine::submit_many`, in calls of `PER_CALL`.
fn run_many(workload: &Workload) -> (usize, u64, Runtime) {
    let engine: Engine<u64, u64, u64, ()> = steady(Engine::builder(), workload.runtime)
        .start(|_shard| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, ()>(inputs) })
        .expect("the engine starts");
    let keys = workload.keys;
    let done = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..SHARDS)
            .map(|caller| {
                let engine = &engine;
                scope.spawn(move || {
                    let mine = share(workload.inputs, caller);
                    let call = |first: usize, inputs: usize| {
                        engine.submit_many((first..first + inputs).map(|j| {
                            let input = (caller + j * SHARDS) as u64;
                            (input % keys, input)
                        }))
                    };
                    futures::executor::block_on(calls_in_flight(mine, call))
                })
            })
            .collect();
        callers
            .into_iter()
            .map(|caller| caller.join().expect("a caller thread panicked"))
            .sum()
    });
    engine.close();
    engine.join();
    (done, engine.stats().total().batches, engine.runtime())
}

/// Submits `inputs` inputs in calls of `PER_CALL` (`call(first, n)` makes
/// the call of inputs `first..first + n`), keeping at most
/// `IN_FLIGHT_PER_CALLER` inputs in flight, and counts those answered with
/// their output.
async fn calls_in_flight<C>(inputs: usize, mut call: C) -> usize
where
    C: FnMut(usize, usize) -> ferry::Outcomes<u64, u64, ()>,
{
    let mut calls = Vec::new();
    let (mut next, mut done) = (0, 0);
    loop {
        while next < inputs && calls.len() * PER_CALL < IN_FLIGHT_PER_CALLER {
            let size = PER_CALL.min(inputs - next);
            calls.push(call(next, size));
            next += size;
        }
        if calls.is_empty() {
            return done;
        }
        done += std::future::poll_fn(|cx| read_calls(&mut calls, cx)).await;
    }
}

/// Takes every outcome ready in `calls`, dropping the calls that ended;
/// how many were answered, once one was or a call ended.
fn read_calls(
    calls: &mut Vec<ferry::Outcomes<u64, u64, ()>>,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<usize> {
    use std::task::Poll;
    let (before, mut answered) = (calls.len(), 0);
    calls.retain_mut(|call| loop {
        match call.poll_next_unpin(cx) {
            Poll::Ready(Some((_, Ok(_)))) => answered += 1,
            Poll::Ready(Some((_, Err(err)))) => panic!("an input was refused or failed: {err:?}"),
            Poll::Ready(None) => return false,
            Poll::Pending => return true,
        }
    });
    if answered > 0 || calls.len() < before {
        Poll::Ready(answered)
    } else {
        Poll::Pending
    }
}

/// One task per shard on `Engine::submit_local`, each for its own keys.
fn run_local(workload: &Workload) -> (usize, u64, Runtime) {
    let engine: Engine<u64, u64, u64, ()> = steady(Engine::builder(), workload.runtime)
        .start(|_shard| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, ()>(inputs) })
        .expect("the engine starts");
    let mut answers = Vec::with_capacity(SHARDS);
    for shard in 0..SHARDS {
        let shard = ShardId::new(shard);
        let own: Vec<u64> = (0..workload.keys)
            .filter(|key| engine.shard_of(key) == shard)
            .collect();
        assert!(!own.is_empty(), "{shard} owns none of the keys");
        let inputs = share(workload.inputs, shard.index());
        let (tell, answer) = futures::channel::oneshot::channel();
        let on_shard = engine.clone();
        engine
            .spawn_on(shard, move || async move {
                let done = in_flight(inputs, |j| {
                    let key = own[j % own.len()];
                    on_shard.submit_local(key, j as u64)
                })
                .await;
                let _ = tell.send(done);
            })
            .expect("the shard takes the task");
        answers.push(answer);
    }
    let done = answers
        .into_iter()
        .map(|answer| futures::executor::block_on(answer).expect("the task ran to the end"))
        .sum();
    engine.close();
    engine.join();
    (done, engine.stats().total().batches, engine.runtime())
}

/// Two caller threads on an unkeyed `Batcher`.
fn run_batcher(workload: &Workload) -> (usize, u64, Runtime) {
    let batcher: Batcher<u64, u64, ()> = steady(Batcher::builder(), workload.runtime)
        .start(|_shard| |inputs: Vec<u64>| async move { Ok::<_, ()>(inputs) })
        .expect("the batcher starts");
    let done = on_caller_threads(workload.inputs, |i| batcher.submit(i as u64));
    batcher.close();
    batcher.join();
    (done, batcher.stats().total().batches, batcher.runtime())
}

/// The `submit` mode's callers with no engine: each input a `StandIn`.
/// Returns (done, batches: none, the runtime asked for, unused).
fn run_harness(workload: &Workload) -> (usize, u64, Runtime) {
    let done = on_caller_threads(workload.inputs, |i| StandIn {
        polled: false,
        output: i as u64,
    });
    (done, 0, workload.runtime)
}

/// One of `ferry-load`'s systems on its simulated store, with no round
/// trip, under two caller threads. Returns (done, batches, runtime).
fn run_system(workload: &Workload, kind: SystemKind) -> (usize, u64, Runtime) {
    let store = Store::sim(workload.keys, Duration::ZERO).expect("the simulated store starts");
    let settings = Settings {
        max_batch_size: 64,
        max_batch_delay: Duration::ZERO,
        max_in_flight_batches: 256,
        max_waiting: 1_000_000,
        tokio_workers: 2,
        pin: Some(false),
        // As `steady`: no look costs a span of wall-clock time.
        spin_before_park: Duration::ZERO,
        doze_before_park: Duration::ZERO,
        sched_slice: ferry::DEFAULT_SCHED_SLICE,
        runtime: workload.runtime,
        pool_connections: SHARDS,
        max_queue_time: None,
        max_trip_batches: ferry::DEFAULT_MAX_TRIP_BATCHES,
        max_in_flight_trips: 4,
        retry_unknown: DEFAULT_RETRY_UNKNOWN,
        fence: Fence::On,
    };
    let workers = settings.max_in_flight_batches * settings.pool_connections;
    let driven = with_system(
        kind,
        Some(SHARDS),
        workers,
        &settings,
        store,
        Callers { workload },
    )
    .expect("the system starts");
    store.stop().expect("the simulated store stops");
    driven
}

/// The `submit` mode's two caller threads on a system.
struct Callers<'a> {
    workload: &'a Workload,
}

impl WithSystem for Callers<'_> {
    type Output = (usize, u64, Runtime);

    fn with<S: System>(self, _name: &str, _shards: Option<usize>, mut system: S) -> Self::Output {
        let workload = self.workload;
        let done = on_caller_threads(workload.inputs, |i| {
            let input = i as u64;
            system
                .submit(workload.key(i), input)
                .map(move |outcome| match outcome {
                    Outcome::Done => Ok(input),
                    other => panic!("input {input} was answered {other:?}"),
                })
        });
        let batches = system
            .batch_counts()
            .map_or(done as u64, |counts| counts.batches);
        let runtime = system.runtime().unwrap_or(self.workload.runtime);
        system.close();
        (done, batches, runtime)
    }
}

/// Pending on its first poll, waking its task at once, and ready with its
/// output on the second: what an answered submit looks like to its caller.
struct StandIn {
    polled: bool,
    output: u64,
}

impl Future for StandIn {
    type Output = Result<u64, FerryError<u64, ()>>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        if self.polled {
            return std::task::Poll::Ready(Ok(self.output));
        }
        self.polled = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// Caller `index`'s share of `inputs` split `SHARDS` ways, the first
/// callers taking one more when it does not divide.
fn share(inputs: usize, index: usize) -> usize {
    inputs / SHARDS + usize::from(index < inputs % SHARDS)
}

/// Runs `SHARDS` caller threads; thread `t` submits inputs `t, t + SHARDS,
/// …` below `inputs`. Returns the inputs answered with their output.
fn on_caller_threads<S, F>(inputs: usize, submit: S) -> usize
where
    S: Fn(usize) -> F + Sync,
    F: Future<Output = Result<u64, FerryError<u64, ()>>>,
{
    std::thread::scope(|scope| {
        let callers: Vec<_> = (0..SHARDS)
            .map(|caller| {
                let submit = &submit;
                scope.spawn(move || caller_thread(inputs, caller, submit))
            })
            .collect();
        callers
            .into_iter()
            .map(|caller| caller.join().expect("a caller thread panicked"))
            .sum()
    })
}

/// Caller thread `caller`'s whole work: its share of `inputs`. Kept out of
/// line, and run by the caller threads only: `bench/callgrind.sh` tells
/// their files by it.
#[inline(never)]
fn caller_thread<S, F>(inputs: usize, caller: usize, submit: &S) -> usize
where
    S: Fn(usize) -> F + Sync,
    F: Future<Output = Result<u64, FerryError<u64, ()>>>,
{
    let mine = share(inputs, caller);
    futures::executor::block_on(in_flight(mine, |j| submit(caller + j * SHARDS)))
}

/// Submits `inputs` inputs (`submit(0)`, `submit(1)`, …), keeping at most
/// `IN_FLIGHT_PER_CALLER` in flight, and counts those answered with
/// their output.
async fn in_flight<S, F>(inputs: usize, mut submit: S) -> usize
where
    S: FnMut(usize) -> F,
    F: Future<Output = Result<u64, FerryError<u64, ()>>>,
{
    let mut running = FuturesUnordered::new();
    let (mut next, mut done) = (0, 0);
    loop {
        while next < inputs && running.len() < IN_FLIGHT_PER_CALLER {
            running.push(submit(next));
            next += 1;
        }
        match running.next().await {
            Some(Ok(_)) => done += 1,
            Some(Err(err)) => panic!("an input was refused or failed: {err:?}"),
            None => return done,
        }
    }
}
