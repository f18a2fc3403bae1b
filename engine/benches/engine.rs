//! Engine overhead with an instant batch function: what Ferry itself costs
//! per input, measured against a bare cross-thread handoff in the same run.
//!
//! `cargo bench -p ferry-engine --bench engine` (optional arguments:
//! seconds per throughput run, default 5).
//!
//! - **handoff**: the floor to approach. Caller threads push into a
//!   crossbeam `ArrayQueue` per shard; glommio shards (pinned, one per core)
//!   pop and answer each request through a futures oneshot. No lanes, no
//!   batching.
//! - **ferry**: the engine with the same shards and callers, `submit` per
//!   input, an instant batch function, on each shard runtime (glommio, then
//!   tokio).
//! - **submit_many**: the same engine (glommio), inputs passed in calls
//!   of 500 (`Engine::submit_many`: one push and one wake-up per shard per
//!   call), 4,000 inputs in flight as before, each caller reading its
//!   calls' streams of outcomes in turn.
//! - **latency**: one caller, one input at a time (light load), submit to
//!   answer; beside it, in the same run, the machine's own wake-up cost: two
//!   plain threads passing a token back and forth with `park`/`unpark`,
//!   which is what a submit costs at least when both sides park.
//! - **local**: a task spawned on a shard (`spawn_on`) submitting to that
//!   same shard (`submit_local`), one input at a time: the thread-per-core
//!   fast path, with no other thread involved.
//!
//! With the features `metrics` and `tracing` (`cargo bench -p ferry-engine
//! --bench engine --features metrics,tracing`), the same runs with what an
//! operator would install: a Prometheus recorder
//! (`metrics-exporter-prometheus`, without its HTTP listener) and a
//! `tracing` registry that keeps every `ferry` span and event at `DEBUG`
//! (`FERRY_BENCH_TRACING` sets another filter, e.g. `ferry=info` for no
//! batch spans).
//!
//! Throughput runs keep `IN_FLIGHT` requests outstanding from 2 caller
//! threads. CPU ns per input is the process's user + system CPU time divided
//! by inputs answered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;
use std::task::{Context, Poll};

use ferry::{Engine, Outcomes, Runtime};
use futures::channel::oneshot;
use futures::stream::{FuturesUnordered, StreamExt};
use hdrhistogram::Histogram;

const CALLERS: usize = 2;
const SHARDS: usize = 2;
const IN_FLIGHT: usize = 4_000;

fn main() {
    let seconds: u64 = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(5);
    let run_for = Duration::from_secs(seconds);
    let observed = observe();
    println!("engine bench: {CALLERS} caller threads, {SHARDS} shards, {IN_FLIGHT} in flight, {seconds} s per run, {observed}");
    println!(
        "{:<34} {:>14} {:>12} {:>10}",
        "run", "inputs/s", "cpu ns/in", "mean batch"
    );

    let handoff = handoff(run_for);
    print_row("handoff (queue + oneshot, no lanes)", handoff, None);
    for keys in [1_000_u64, 100_000] {
        let mut glommio = None;
        for runtime in [Runtime::Glommio, Runtime::Tokio] {
            let (run, mean_batch) = ferry(run_for, keys, runtime);
            print_row(
                &format!("ferry on {runtime}, {keys} keys"),
                run,
                Some(mean_batch),
            );
            println!(
                "  ratio ferry / handoff: {:.2}",
                run.per_second() / handoff.per_second()
            );
            match glommio {
                None => glommio = Some(run),
                Some(glommio) => println!(
                    "  ratio tokio / glommio: {:.2}",
                    run.per_second() / glommio.per_second()
                ),
            }
        }
        let (many, mean_batch) = ferry_many(run_for, keys);
        print_row(
            &format!("ferry submit_many ({MANY}), {keys} keys"),
            many,
            Some(mean_batch),
        );
        println!(
            "  ratio submit_many / handoff: {:.2}",
            many.per_second() / handoff.per_second()
        );
        if let Some(glommio) = glommio {
            println!(
                "  ratio submit_many / submit (glommio): {:.2}",
                many.per_second() / glommio.per_second()
            );
        }
    }
    wake_round_trip(Duration::from_secs(seconds.min(3)));
    for how in [LocalCall::Submit, LocalCall::Many] {
        local_latency(Duration::from_secs(seconds.min(3)), how);
    }
    // Pinned; the defaults (unpinned); pinned without spin (the shard
    // dozes at once, the caller parks); pinned with neither spin nor doze
    // (the shard parks in glommio).
    for (pin, spin_us, doze_us) in [
        (true, 50, 2_000),
        (false, 50, 2_000),
        (true, 0, 2_000),
        (true, 0, 0),
    ] {
        latency(
            Duration::from_secs(seconds.min(3)),
            pin,
            Duration::from_micros(spin_us),
            Duration::from_micros(doze_us),
        );
    }
}

/// Installs what the features compiled in feed, and says what is on.
fn observe() -> String {
    #[allow(unused_mut)]
    let mut on: Vec<String> = Vec::new();
    #[cfg(feature = "metrics")]
    {
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .install_recorder()
            .expect("a Prometheus recorder");
        on.push("metrics (Prometheus recorder)".to_string());
    }
    #[cfg(feature = "tracing")]
    {
        use tracing_subscriber::layer::SubscriberExt;
        let filter = std::env::var("FERRY_BENCH_TRACING").unwrap_or_else(|_| "ferry=debug".into());
        let registry =
            tracing_subscriber::registry().with(tracing_subscriber::EnvFilter::new(&filter));
        tracing::subscriber::set_global_default(registry).expect("one subscriber");
        on.push(format!("tracing (registry, {filter})"));
    }
    if on.is_empty() {
        "no observability features".to_string()
    } else {
        on.join(" + ")
    }
}

#[derive(Clone, Copy)]
struct Run {
    inputs: u64,
    wall: Duration,
    cpu: Duration,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.inputs as f64 / self.wall.as_secs_f64()
    }
}

fn print_row(name: &str, run: Run, mean_batch: Option<f64>) {
    let cpu_ns = run.cpu.as_nanos() as f64 / run.inputs.max(1) as f64;
    let batch = mean_batch.map_or("-".to_string(), |b| format!("{b:.1}"));
    println!(
        "{name:<34} {:>14.0} {cpu_ns:>12.0} {batch:>10}",
        run.per_second()
    );
}

/// Process CPU time (user + system) from /proc/self/stat.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the full line: 11 and 12 here.
    let total = ticks(11) + ticks(12);
    Duration::from_millis(total * 10) // USER_HZ is 100 on Linux
}

/// Runs `CALLERS` threads, each keeping `IN_FLIGHT / CALLERS` requests
/// outstanding through `submit` until `run_for` passes.
fn drive<F, Fut>(run_for: Duration, submit: F) -> Run
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    let submit = Arc::new(submit);
    on_callers(run_for, move |mut next, stop| {
        let submit = Arc::clone(&submit);
        async move {
            let mut running: FuturesUnordered<Fut> =
                (0..IN_FLIGHT / CALLERS).map(|_| submit(next())).collect();
            let mut done = 0_u64;
            while let Some(ok) = running.next().await {
                assert!(ok, "a request failed");
                done += 1;
                if !stop.load(Ordering::Relaxed) {
                    running.push(submit(next()));
                }
            }
            done
        }
    })
}

/// Keeps `IN_FLIGHT` inputs outstanding from `CALLERS` threads in calls of
/// `per_call` (`submit(seed)` makes one call): a caller makes the next call
/// as soon as `per_call` of its inputs are answered, so the inputs in
/// flight stay those of `drive`. Each caller reads its calls' streams in
/// turn, every outcome it finds at each look.
fn drive_calls<F>(run_for: Duration, per_call: usize, submit: F) -> Run
where
    F: Fn(u64) -> Outcomes<u64, u64, ()> + Send + Sync + 'static,
{
    let submit = Arc::new(submit);
    on_callers(run_for, move |mut next, stop| {
        let submit = Arc::clone(&submit);
        async move {
            let mut calls: Vec<_> = (0..(IN_FLIGHT / CALLERS / per_call).max(1))
                .map(|_| submit(next()))
                .collect();
            let (mut done, mut freed) = (0_u64, 0);
            while !calls.is_empty() {
                let answered = std::future::poll_fn(|cx| read_calls(&mut calls, cx)).await;
                done += answered as u64;
                freed += answered;
                while freed >= per_call && !stop.load(Ordering::Relaxed) {
                    freed -= per_call;
                    calls.push(submit(next()));
                }
            }
            done
        }
    })
}

/// Takes every outcome ready in `calls`, dropping the calls that ended;
/// how many, once there is at least one.
fn read_calls(calls: &mut Vec<Outcomes<u64, u64, ()>>, cx: &mut Context<'_>) -> Poll<usize> {
    let mut answered = 0;
    calls.retain_mut(|call| loop {
        match call.poll_next_unpin(cx) {
            Poll::Ready(Some((_, outcome))) => {
                assert!(outcome.is_ok(), "a request failed");
                answered += 1;
            }
            Poll::Ready(None) => return false,
            Poll::Pending => return true,
        }
    });
    if answered > 0 || calls.is_empty() {
        Poll::Ready(answered)
    } else {
        Poll::Pending
    }
}

/// Runs `caller(next, stop)` on `CALLERS` threads for `run_for`: `next`
/// gives the caller's pseudo-random seeds, `stop` says when to stop
/// starting work; each returns the inputs it had answered.
fn on_callers<C, Fut>(run_for: Duration, caller: C) -> Run
where
    C: Fn(Box<dyn FnMut() -> u64 + Send>, Arc<AtomicBool>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = u64>,
{
    let caller = Arc::new(caller);
    let stop = Arc::new(AtomicBool::new(false));
    let cpu_before = cpu_time();
    let started = Instant::now();
    let callers: Vec<_> = (0..CALLERS)
        .map(|c| {
            let (caller, stop) = (caller.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15_u64 ^ c as u64;
                let next = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                futures::executor::block_on(caller(Box::new(next), stop))
            })
        })
        .collect();
    std::thread::sleep(run_for);
    stop.store(true, Ordering::Relaxed);
    let inputs = callers.into_iter().map(|c| c.join().unwrap()).sum();
    Run {
        inputs,
        wall: started.elapsed(),
        cpu: cpu_time().saturating_sub(cpu_before),
    }
}

/// Inputs per `submit_many` call in the bench.
const MANY: u64 = 500;

/// `submit_many` in calls of `MANY` inputs, random keys among `keys`.
fn ferry_many(run_for: Duration, keys: u64) -> (Run, f64) {
    let engine: Engine<u64, u64, u64, ()> = Engine::builder()
        .shards(SHARDS)
        .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok(inputs) })
        .expect("engine starts");
    let handle = engine.clone();
    let run = drive_calls(run_for, MANY as usize, move |seed| {
        handle.submit_many((0..MANY).map(|n| {
            let x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(n);
            (x % keys, x)
        }))
    });
    engine.close();
    engine.join();
    let stats = engine.stats().total();
    assert_eq!(
        stats.answered_ok, run.inputs,
        "the inputs counted are the inputs the engine answered"
    );
    (run, stats.sent as f64 / stats.batches.max(1) as f64)
}

fn handoff(run_for: Duration) -> Run {
    type Request = (u64, oneshot::Sender<u64>);
    let queues: Vec<Arc<ArrayQueue<Request>>> = (0..SHARDS)
        .map(|_| Arc::new(ArrayQueue::new(65_536)))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let shards: Vec<_> = (0..SHARDS)
        .map(|s| {
            let (queue, stop) = (queues[s].clone(), stop.clone());
            glommio::LocalExecutorBuilder::new(glommio::Placement::Fixed(s))
                .io_memory(256 << 10)
                .spawn(move || async move {
                    while !stop.load(Ordering::Relaxed) {
                        let mut any = false;
                        while let Some((x, reply)) = queue.pop() {
                            let _ = reply.send(x);
                            any = true;
                        }
                        if !any {
                            glommio::yield_if_needed().await;
                            std::hint::spin_loop();
                        }
                    }
                })
                .unwrap()
        })
        .collect();
    let run = drive(run_for, move |x| {
        let (tx, rx) = oneshot::channel();
        let mut request = (x, tx);
        while let Err(back) = queues[(x % SHARDS as u64) as usize].push(request) {
            request = back;
            std::thread::yield_now();
        }
        async move { rx.await.is_ok() }
    });
    stop.store(true, Ordering::Relaxed);
    for shard in shards {
        shard.join().unwrap();
    }
    run
}

fn ferry(run_for: Duration, keys: u64, runtime: Runtime) -> (Run, f64) {
    let engine: Engine<u64, u64, u64, ()> = Engine::builder()
        .shards(SHARDS)
        .runtime(runtime)
        .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok(inputs) })
        .expect("engine starts");
    let handle = engine.clone();
    let run = drive(run_for, move |x| {
        let answer = handle.submit(x % keys, x);
        async move { answer.await.is_ok() }
    });
    engine.close();
    engine.join();
    let stats = engine.stats().total();
    assert_eq!(
        stats.answered_ok, run.inputs,
        "the inputs counted are the inputs the engine answered"
    );
    (run, stats.sent as f64 / stats.batches.max(1) as f64)
}

/// Two plain threads pass a token back and forth, each parking until it
/// has it: one round trip is two cross-thread wake-ups of a parked thread.
fn wake_round_trip(run_for: Duration) {
    let turn = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let main = std::thread::current();
    let echo = {
        let turn = turn.clone();
        std::thread::spawn(move || loop {
            let seen = turn.load(Ordering::SeqCst);
            if seen == u64::MAX {
                return;
            }
            if seen % 2 == 1 {
                turn.store(seen + 1, Ordering::SeqCst);
                main.unpark();
            } else {
                std::thread::park();
            }
        })
    };
    let mut histogram = Histogram::<u64>::new(3).unwrap();
    let started = Instant::now();
    let mut n = 0_u64;
    while started.elapsed() < run_for {
        let sent = Instant::now();
        turn.store(2 * n + 1, Ordering::SeqCst);
        echo.thread().unpark();
        while turn.load(Ordering::SeqCst) != 2 * n + 2 {
            std::thread::park();
        }
        histogram.record(sent.elapsed().as_nanos() as u64).unwrap();
        n += 1;
    }
    turn.store(u64::MAX, Ordering::SeqCst);
    echo.thread().unpark();
    echo.join().unwrap();
    print_latency("park/unpark round trip, 2 plain threads", n, &histogram);
}

fn print_latency(name: &str, n: u64, histogram: &Histogram<u64>) {
    let us = |q: f64| histogram.value_at_quantile(q) as f64 / 1_000.0;
    println!(
        "{name}: {n} round trips, p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us",
        us(0.5),
        us(0.99),
        us(0.999),
        histogram.max() as f64 / 1_000.0
    );
}

/// One task on shard 0 submits to its own shard, one input at a time, and
/// times each submit to its answer.
/// How a task on a shard hands an input to its own shard.
#[derive(Clone, Copy)]
enum LocalCall {
    /// `submit_local`: the fast path, no intake.
    Submit,
    /// A `submit_many` call of one input, through the intake and a call's
    /// answer cell.
    Many,
}

fn local_latency(run_for: Duration, how: LocalCall) {
    let engine: Engine<u64, u64, u64, ()> = Engine::builder()
        .shards(SHARDS)
        .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok(inputs) })
        .expect("engine starts");
    let shard = ferry::ShardId::new(0);
    // Keys of shard 0 only, so every submit takes the local path.
    let keys: Vec<u64> = (0..)
        .filter(|key| engine.shard_of(key) == shard)
        .take(1_000)
        .collect();
    let (done, result) = std::sync::mpsc::channel();
    let handle = engine.clone();
    engine
        .spawn_on(shard, move || async move {
            let mut histogram = Histogram::<u64>::new(3).unwrap();
            let started = Instant::now();
            let mut n = 0_u64;
            while started.elapsed() < run_for {
                let sent = Instant::now();
                let key = keys[n as usize % keys.len()];
                match how {
                    LocalCall::Submit => {
                        handle.submit_local(key, n).await.unwrap();
                    }
                    LocalCall::Many => {
                        let outcomes = handle.submit_many([(key, n)]).all().await;
                        assert!(outcomes[0].is_ok());
                    }
                }
                histogram.record(sent.elapsed().as_nanos() as u64).unwrap();
                n += 1;
            }
            done.send((n, histogram)).unwrap();
        })
        .expect("the shard takes the task");
    let (n, histogram) = result.recv().expect("the task reports");
    let label = match how {
        LocalCall::Submit => "local: a task on the shard submitting to it, 1 in flight",
        LocalCall::Many => "local submit_many: the same, in calls of 1 input",
    };
    print_latency(label, n, &histogram);
    engine.close();
    engine.join();
}

fn latency(run_for: Duration, pin: bool, spin: Duration, doze: Duration) {
    let engine: Engine<u64, u64, u64, ()> = Engine::builder()
        .shards(SHARDS)
        .pin(pin)
        .spin_before_park(spin)
        .doze_before_park(doze)
        .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok(inputs) })
        .expect("engine starts");
    let mut histogram = Histogram::<u64>::new(3).unwrap();
    let started = Instant::now();
    let mut n = 0_u64;
    while started.elapsed() < run_for {
        let sent = Instant::now();
        engine.submit_blocking(n % 1_000, n).unwrap();
        histogram.record(sent.elapsed().as_nanos() as u64).unwrap();
        n += 1;
    }
    print_latency(
        &format!("latency (pin {pin}, spin {spin:?}, doze {doze:?}), 1 caller, 1 in flight"),
        n,
        &histogram,
    );
    engine.close();
    engine.join();
}
