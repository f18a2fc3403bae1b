//! The load: generator threads that submit inputs to a [`System`] and time
//! their outcomes, and the driver that runs them for one measured run.
//!
//! # Generators
//!
//! Each generator is its own thread (never a shard's or a runtime's) running
//! a small executor: its tasks sit in a `FuturesUnordered`, and the thread
//! parks when none can make progress, to be unparked by whichever thread
//! answers. Two ways to load a system:
//!
//! - **Closed loop** (`--rate 0`): `clients` tasks, spread over the
//!   generators, each submitting one input and awaiting its outcome before
//!   the next. Latency runs from the submit to the outcome.
//! - **Open loop** (`--rate R`): inputs are sent on a fixed schedule, R per
//!   second across the generators, without waiting for earlier ones. Latency
//!   runs from each input's *intended* send time, so a generator or system
//!   that falls behind shows it in the latency (no coordinated omission). At
//!   most `outstanding_max` inputs per generator are awaited at once; past
//!   that, sending waits, and the wait counts in the latency as well.
//!
//! # Timeline of a run
//!
//! Warm-up, then the measured window (`duration`), then the drain: no new
//! input is sent, and every input already submitted is awaited, for at most
//! `drain_timeout`. Throughput counts the inputs answered with success inside
//! the window; latency, the inputs sent inside it (answered whenever). The
//! counts of submitted, answered and refused inputs cover the whole run, so
//! an input that never came back is *lost* whenever it was sent.
//!
//! # Callers that give up
//!
//! With a `timeout` (the overload scenario, see [`crate::scenarios::overload`]), a
//! caller waits that long for its outcome and then drops the future and
//! goes on (a closed-loop client sends its next input). Such an input is
//! *timed out*, not lost; it carries its deadline (`overload::input_until`)
//! so the store can tell it was sent for nobody. Each generator keeps the
//! deadlines of its waiting callers in a heap and wakes them when due.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use futures::stream::{FuturesUnordered, StreamExt};
use hdrhistogram::Histogram;

use crate::scenarios::event_time;
use crate::scenarios::overload::{self, Slowdown};
use crate::sources::dist::{KeySampler, Rng};
use crate::store::new_histogram;
use crate::systems::{BatchCounts, IdleCounts, Outcome, System};

/// How often a generator publishes its latencies for the progress line.
const PUBLISH_EVERY: Duration = Duration::from_millis(100);

/// How often the progress line is printed.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The width of [`Measured::done_ticks`]' counts: how precisely the time
/// from a fault at the store to the next success is told.
pub const TICK: Duration = Duration::from_millis(10);

/// Inputs an open-loop generator sends per turn of its loop at most, so it
/// also gets around to collecting outcomes.
const OPEN_SENDS_PER_TURN_MAX: usize = 256;

/// Closed or open loop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// `clients` tasks, each with one input outstanding at a time.
    Closed {
        /// Clients over all generators.
        clients: usize,
    },
    /// A fixed schedule of `rate` inputs per second over all generators.
    Open {
        /// Inputs per second.
        rate: f64,
        /// Inputs awaited at once per generator, at most.
        outstanding_max: usize,
    },
}

/// What load to put on a system, and for how long.
#[derive(Clone, Debug)]
pub struct Load {
    /// Closed or open loop.
    pub mode: Mode,
    /// Generator threads (at least 1).
    pub generators: usize,
    /// Which key each input goes to.
    pub sampler: Arc<KeySampler>,
    /// Load before the measured window (not counted in latency/throughput).
    pub warmup: Duration,
    /// The measured window.
    pub duration: Duration,
    /// How long to wait for outstanding inputs after the window.
    pub drain_timeout: Duration,
    /// Seeds the key choice.
    pub seed: u64,
    /// How long a caller waits for an outcome before it gives up (`None`:
    /// for ever).
    pub timeout: Option<Duration>,
    /// A slowdown of the store during the measured window, for the
    /// overload scenario (applied by [`crate::run::compare`]).
    pub slowdown: Option<Slowdown>,
    /// Inputs a closed-loop client hands over in one call
    /// ([`System::submit_many`]), all answered before its next call; 1: one
    /// `submit` at a time. More than 1 only in a closed loop without a
    /// timeout.
    pub per_call: usize,
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Inputs handed to the system (whole run).
    pub submitted: u64,
    /// Inputs answered with success (whole run).
    pub done: u64,
    /// The sum of those inputs (wrapping), for the store's read-back.
    pub done_sum: u64,
    /// Inputs answered with an error that leaves nothing applied (whole
    /// run).
    pub failed: u64,
    /// Inputs answered with an error that leaves their outcome at the
    /// store unknown ([`Outcome::Unknown`]; whole run): applied or not,
    /// the read-back tells.
    pub unknown: u64,
    /// The sum of those inputs (wrapping), the bound of what they may
    /// have added to the store.
    pub unknown_sum: u64,
    /// Inputs refused at once (whole run).
    pub refused: u64,
    /// Inputs answered unsent after their system's queueing limit (whole
    /// run).
    pub expired: u64,
    /// Inputs whose caller gave up waiting (whole run; with a timeout).
    pub timed_out: u64,
    /// Inputs answered with success per [`overload::BUCKET`] since the
    /// run's start (warm-up included), by when they were answered.
    pub done_buckets: Vec<u64>,
    /// The same per [`TICK`], finer: when successes came back after a
    /// fault at the store.
    pub done_ticks: Vec<u64>,
    /// When the run started (its warm-up): where the buckets and ticks
    /// count from.
    pub started: Instant,
    /// Inputs answered with success inside the measured window.
    pub done_in_window: u64,
    /// The measured window's length.
    pub window: Duration,
    /// Latency of the inputs sent inside the measured window and answered
    /// with success (whenever), in nanoseconds.
    pub latency: Histogram<u64>,
    /// Batches in the measured window, if the system counts them.
    pub batches: Option<BatchCounts>,
    /// Dozes and parks of the system's shards in the measured window, if
    /// it has shards that count them.
    pub idle: Option<IdleCounts>,
    /// Whether the drain timed out with inputs still outstanding.
    pub gave_up: bool,
}

impl Measured {
    /// Inputs submitted and never answered (nor refused).
    pub fn lost(&self) -> u64 {
        self.submitted
            - self.done
            - self.failed
            - self.unknown
            - self.refused
            - self.expired
            - self.timed_out
    }

    /// Successful inputs per second over the measured window.
    pub fn throughput(&self) -> f64 {
        self.done_in_window as f64 / self.window.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// A snapshot for the live progress line.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Time since the run started.
    pub elapsed: Duration,
    /// Where the run is.
    pub phase: Phase,
    /// Inputs answered with success per second, over the last interval.
    pub inputs_per_s: f64,
    /// p99 latency of the measured window so far, in nanoseconds.
    pub p99_ns: Option<u64>,
    /// Inputs submitted and not yet answered.
    pub in_flight: u64,
}

/// The phases of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Before the measured window.
    Warmup,
    /// Inside it.
    Measuring,
    /// After it, awaiting outstanding inputs.
    Draining,
}

#[derive(Clone, Copy, Debug)]
struct Timeline {
    start: Instant,
    measure_from: Instant,
    stop_at: Instant,
    give_up_at: Instant,
}

impl Timeline {
    fn in_window(&self, at: Instant) -> bool {
        self.measure_from <= at && at < self.stop_at
    }

    fn phase(&self, now: Instant) -> Phase {
        if now < self.measure_from {
            Phase::Warmup
        } else if now < self.stop_at {
            Phase::Measuring
        } else {
            Phase::Draining
        }
    }
}

/// Adds `n` to a count only this generator writes: a load and a store,
/// without the locked read-modify-write a shared count would need, so the
/// load tool spends less of the CPU it shares with the systems it measures.
fn bump(count: &AtomicU64, n: u64) {
    count.store(count.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

/// One generator's published counts, read by the driver.
#[derive(Debug)]
struct Published {
    submitted: AtomicU64,
    done: AtomicU64,
    done_sum: AtomicU64,
    failed: AtomicU64,
    unknown: AtomicU64,
    unknown_sum: AtomicU64,
    refused: AtomicU64,
    expired: AtomicU64,
    timed_out: AtomicU64,
    done_buckets: Box<[AtomicU64]>,
    done_ticks: Box<[AtomicU64]>,
    done_in_window: AtomicU64,
    latency: Mutex<Histogram<u64>>,
    finished: AtomicBool,
    gave_up: AtomicBool,
}

impl Published {
    /// Counts for a run of `length` in all (warm-up, window, drain).
    fn new(length: Duration) -> Self {
        let buckets = (length.as_nanos() / overload::BUCKET.as_nanos()) as usize + 1;
        let ticks = (length.as_nanos() / TICK.as_nanos()) as usize + 1;
        Self {
            submitted: AtomicU64::new(0),
            done: AtomicU64::new(0),
            done_sum: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            unknown: AtomicU64::new(0),
            unknown_sum: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            done_buckets: (0..buckets).map(|_| AtomicU64::new(0)).collect(),
            done_ticks: (0..ticks).map(|_| AtomicU64::new(0)).collect(),
            done_in_window: AtomicU64::new(0),
            latency: Mutex::new(new_histogram()),
            finished: AtomicBool::new(false),
            gave_up: AtomicBool::new(false),
        }
    }
}

/// Puts `load` on `system` and measures it. `on_progress` is called about
/// once a second from the calling thread.
pub fn drive<S: System>(
    system: &S,
    load: &Load,
    mut on_progress: impl FnMut(&Progress),
) -> Measured {
    assert!(load.generators >= 1, "at least one generator");
    let length = load.warmup + load.duration + load.drain_timeout;
    let published: Vec<CachePadded<Published>> = (0..load.generators)
        .map(|_| CachePadded::new(Published::new(length)))
        .collect();
    let start = Instant::now();
    let measure_from = start + load.warmup;
    let stop_at = measure_from + load.duration;
    let timeline = Timeline {
        start,
        measure_from,
        stop_at,
        give_up_at: stop_at + load.drain_timeout,
    };
    let mut window = WindowCounts::default();

    std::thread::scope(|scope| {
        for (index, published) in published.iter().enumerate() {
            std::thread::Builder::new()
                .name(format!("ferry-load-gen-{index}"))
                .spawn_scoped(scope, move || {
                    let _counted = crate::base::cpu::count_at_exit();
                    generate(index, system, load, timeline, published)
                })
                .expect("could not start a generator thread");
        }

        let mut next_tick = start + PROGRESS_EVERY;
        let mut done_before = 0;
        let mut tick_before = start;
        loop {
            let now = Instant::now();
            window.look(system, &timeline, now);
            if published.iter().all(|p| p.finished.load(Ordering::Acquire)) {
                break;
            }
            if now >= next_tick {
                let (progress, done) =
                    progress(&published, &timeline, now, done_before, tick_before);
                on_progress(&progress);
                done_before = done;
                tick_before = now;
                next_tick += PROGRESS_EVERY;
            }
            let wake_at = window.next_look(&timeline, next_tick);
            // Look for finished generators often; the drain is usually short.
            let wait = wake_at
                .saturating_duration_since(now)
                .min(Duration::from_millis(10));
            std::thread::sleep(wait);
        }
    });

    let (batches, idle) = window.since(system);
    summarize(&published, load, start, batches, idle)
}

/// The system's batch and idle counts as the measured window opens and
/// closes.
#[derive(Default)]
struct WindowCounts {
    batches_from: Option<Option<BatchCounts>>,
    batches_to: Option<Option<BatchCounts>>,
    idle_from: Option<IdleCounts>,
    idle_to: Option<IdleCounts>,
}

impl WindowCounts {
    /// Takes the counts at the window's edges once `now` has reached them.
    fn look<S: System>(&mut self, system: &S, timeline: &Timeline, now: Instant) {
        if self.batches_from.is_none() && now >= timeline.measure_from {
            self.batches_from = Some(system.batch_counts());
            self.idle_from = system.idle_counts();
        }
        if self.batches_to.is_none() && now >= timeline.stop_at {
            self.batches_to = Some(system.batch_counts());
            self.idle_to = system.idle_counts();
        }
    }

    /// When to look next: the next progress tick, or an edge not yet taken.
    fn next_look(&self, timeline: &Timeline, next_tick: Instant) -> Instant {
        let mut wake_at = next_tick;
        if self.batches_from.is_none() {
            wake_at = wake_at.min(timeline.measure_from);
        }
        if self.batches_to.is_none() {
            wake_at = wake_at.min(timeline.stop_at);
        }
        wake_at
    }

    /// The counts over the window (its end taken now if the run ended
    /// before it).
    fn since<S: System>(self, system: &S) -> (Option<BatchCounts>, Option<IdleCounts>) {
        let batches_to = self.batches_to.unwrap_or_else(|| system.batch_counts());
        let batches = match (self.batches_from, batches_to) {
            (Some(Some(from)), Some(to)) => Some(to.since(from)),
            _ => None,
        };
        let idle = match (
            self.idle_from,
            self.idle_to.or_else(|| system.idle_counts()),
        ) {
            (Some(from), Some(to)) => Some(to.since(from)),
            _ => None,
        };
        (batches, idle)
    }
}

/// The progress line's figures at `now`, and the inputs done so far.
fn progress(
    published: &[CachePadded<Published>],
    timeline: &Timeline,
    now: Instant,
    done_before: u64,
    tick_before: Instant,
) -> (Progress, u64) {
    let sum = |read: fn(&Published) -> u64| -> u64 { published.iter().map(|p| read(p)).sum() };
    let done = sum(|p| p.done.load(Ordering::Relaxed));
    let answered = sum(|p| {
        p.done.load(Ordering::Relaxed)
            + p.failed.load(Ordering::Relaxed)
            + p.unknown.load(Ordering::Relaxed)
            + p.refused.load(Ordering::Relaxed)
            + p.expired.load(Ordering::Relaxed)
            + p.timed_out.load(Ordering::Relaxed)
    });
    let submitted = sum(|p| p.submitted.load(Ordering::Relaxed));
    let latency = merge(published);
    let progress = Progress {
        elapsed: now - timeline.start,
        phase: timeline.phase(now),
        inputs_per_s: (done - done_before) as f64 / (now - tick_before).as_secs_f64(),
        p99_ns: (!latency.is_empty()).then(|| latency.value_at_quantile(0.99)),
        in_flight: submitted.saturating_sub(answered),
    };
    (progress, done)
}

/// What the generators counted over the whole run, with the system's batch
/// and idle counts over the measured window.
fn summarize(
    published: &[CachePadded<Published>],
    load: &Load,
    started: Instant,
    batches: Option<BatchCounts>,
    idle: Option<IdleCounts>,
) -> Measured {
    let sum = |field: fn(&Published) -> &AtomicU64| -> u64 {
        published
            .iter()
            .map(|p| field(p).load(Ordering::Relaxed))
            .sum()
    };
    Measured {
        submitted: sum(|p| &p.submitted),
        done: sum(|p| &p.done),
        done_sum: published.iter().fold(0, |total, p| {
            total.wrapping_add(p.done_sum.load(Ordering::Relaxed))
        }),
        failed: sum(|p| &p.failed),
        unknown: sum(|p| &p.unknown),
        unknown_sum: published.iter().fold(0, |total, p| {
            total.wrapping_add(p.unknown_sum.load(Ordering::Relaxed))
        }),
        refused: sum(|p| &p.refused),
        expired: sum(|p| &p.expired),
        timed_out: sum(|p| &p.timed_out),
        done_buckets: added_up(published, |p| &p.done_buckets[..]),
        done_ticks: added_up(published, |p| &p.done_ticks[..]),
        started,
        done_in_window: sum(|p| &p.done_in_window),
        window: load.duration,
        latency: merge(published),
        batches,
        idle,
        gave_up: published.iter().any(|p| p.gave_up.load(Ordering::Relaxed)),
    }
}

/// The generators' goodput buckets (or ticks), added up.
fn added_up(
    published: &[CachePadded<Published>],
    counts: fn(&Published) -> &[AtomicU64],
) -> Vec<u64> {
    let mut buckets = vec![0; published.first().map_or(0, |p| counts(p).len())];
    for p in published {
        for (total, bucket) in buckets.iter_mut().zip(counts(p).iter()) {
            *total += bucket.load(Ordering::Relaxed);
        }
    }
    buckets
}

fn merge(published: &[CachePadded<Published>]) -> Histogram<u64> {
    let mut merged = new_histogram();
    for p in published {
        let latency = p
            .latency
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        merged.add(&*latency).expect("histograms of equal bounds");
    }
    merged
}

/// What a generator's tasks share, on its own thread.
struct Local<'a> {
    published: &'a Published,
    timeline: Timeline,
    latency: RefCell<Histogram<u64>>,
    /// The sum of the inputs answered with success so far, published with
    /// the latencies (a plain cell: no atomic per input for it).
    done_sum: Cell<u64>,
    /// The same of the inputs whose outcome is unknown.
    unknown_sum: Cell<u64>,
    /// How long a caller waits before it gives up.
    timeout: Option<Duration>,
    /// Deadlines of callers waiting with a timeout, earliest first.
    timers: RefCell<BinaryHeap<Reverse<Timer>>>,
}

/// A caller's deadline, and the waker of its task.
struct Timer {
    at: Instant,
    waker: Waker,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

impl Eq for Timer {}

impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.cmp(&other.at)
    }
}

impl<'a> Local<'a> {
    /// A generator's share of the run, publishing into `published`.
    fn new(published: &'a Published, timeline: Timeline, timeout: Option<Duration>) -> Self {
        Local {
            published,
            timeline,
            latency: RefCell::new(new_histogram()),
            done_sum: Cell::new(0),
            unknown_sum: Cell::new(0),
            timeout,
            timers: RefCell::new(BinaryHeap::new()),
        }
    }
}

impl Local<'_> {
    /// Counts one outcome of `input`, sent (or meant to be sent) at `sent`.
    fn count(&self, outcome: Outcome, input: u64, sent: Instant) -> Option<Instant> {
        let published = self.published;
        match outcome {
            Outcome::Done => {
                let answered = Instant::now();
                bump(&published.done, 1);
                let since = (answered - self.timeline.start).as_nanos();
                let bucket = since / overload::BUCKET.as_nanos();
                if let Some(bucket) = published.done_buckets.get(bucket as usize) {
                    bump(bucket, 1);
                }
                if let Some(tick) = published.done_ticks.get((since / TICK.as_nanos()) as usize) {
                    bump(tick, 1);
                }
                self.done_sum.set(self.done_sum.get().wrapping_add(input));
                if self.timeline.in_window(answered) {
                    bump(&published.done_in_window, 1);
                }
                if self.timeline.in_window(sent) {
                    let took = u64::try_from((answered - sent).as_nanos()).unwrap_or(u64::MAX);
                    self.latency.borrow_mut().saturating_record(took.max(1));
                }
                Some(answered)
            }
            Outcome::Failed => {
                bump(&published.failed, 1);
                None
            }
            Outcome::Unknown => {
                bump(&published.unknown, 1);
                self.unknown_sum
                    .set(self.unknown_sum.get().wrapping_add(input));
                None
            }
            Outcome::Refused => {
                bump(&published.refused, 1);
                None
            }
            Outcome::Expired => {
                bump(&published.expired, 1);
                None
            }
        }
    }

    /// A caller gave up on its input.
    fn count_timed_out(&self) {
        bump(&self.published.timed_out, 1);
    }

    /// Wakes the callers whose deadline has come; returns the next one.
    fn wake_due(&self, now: Instant) -> Option<Instant> {
        let mut timers = self.timers.borrow_mut();
        while let Some(Reverse(timer)) = timers.peek() {
            if timer.at > now {
                return Some(timer.at);
            }
            if let Some(Reverse(timer)) = timers.pop() {
                timer.waker.wake();
            }
        }
        None
    }

    fn publish(&self) {
        self.published
            .done_sum
            .store(self.done_sum.get(), Ordering::Relaxed);
        self.published
            .unknown_sum
            .store(self.unknown_sum.get(), Ordering::Relaxed);
        let mut local = self.latency.borrow_mut();
        if local.is_empty() {
            return;
        }
        let mut shared = self
            .published
            .latency
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        shared.add(&*local).expect("histograms of equal bounds");
        local.reset();
    }
}

type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// One generator thread: its tasks, its open-loop schedule, and parking.
fn generate<S: System>(
    index: usize,
    system: &S,
    load: &Load,
    timeline: Timeline,
    published: &Published,
) {
    let local = Local::new(published, timeline, load.timeout);
    let mut rng = Rng::new(load.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut schedule = open_schedule(load, index);
    let thread_waker = Arc::new(ThreadWaker {
        thread: std::thread::current(),
        woken: AtomicBool::new(false),
    });
    let waker = Waker::from(Arc::clone(&thread_waker));
    let mut tasks: FuturesUnordered<Task<'_>> = FuturesUnordered::new();

    start_closed_clients(&mut tasks, index, system, load, &local, &mut rng);

    let mut next_publish = Instant::now() + PUBLISH_EVERY;
    loop {
        thread_waker.woken.store(false, Ordering::SeqCst);
        let mut cx = Context::from_waker(&waker);
        while let Poll::Ready(Some(())) = tasks.poll_next_unpin(&mut cx) {}

        let now = Instant::now();
        let mut wake_at = next_publish.min(timeline.give_up_at);
        // Callers whose deadline came are woken (through `waker`, so the
        // thread does not park) and give up on the next turn.
        if let Some(next) = local.wake_due(now) {
            wake_at = wake_at.min(next);
        }
        if let Some(schedule) = &mut schedule {
            let sent = send_due(schedule, &mut tasks, system, load, &local, &mut rng, now);
            if let Some(next) = sent.next_due {
                wake_at = wake_at.min(next);
            }
            if sent.any {
                // Collect them (and any other outcome) on the next turn.
                thread_waker.woken.store(true, Ordering::SeqCst);
            }
        }
        if now >= next_publish {
            local.publish();
            next_publish = now + PUBLISH_EVERY;
        }
        let sending = schedule
            .as_ref()
            .is_some_and(|s| s.intended(&timeline).is_some());
        if tasks.is_empty() && !sending {
            break;
        }
        if now >= timeline.give_up_at {
            // What is still outstanding now is lost.
            published.gave_up.store(true, Ordering::Relaxed);
            break;
        }
        if !thread_waker.woken.load(Ordering::SeqCst) && wake_at > now {
            std::thread::park_timeout(wake_at - now);
        }
    }
    drop(tasks);
    local.publish();
    published.finished.store(true, Ordering::Release);
}

/// Generator `index`'s share of the closed loop's clients.
fn start_closed_clients<'a, S: System>(
    tasks: &mut FuturesUnordered<Task<'a>>,
    index: usize,
    system: &'a S,
    load: &'a Load,
    local: &'a Local<'a>,
    rng: &mut Rng,
) {
    if let Mode::Closed { clients } = load.mode {
        let mine = clients / load.generators + usize::from(index < clients % load.generators);
        for client in 0..mine {
            let rng = Rng::new(rng.next_u64() ^ client as u64);
            if load.per_call > 1 {
                tasks.push(Box::pin(closed_caller(system, load, local, rng)));
            } else {
                tasks.push(Box::pin(closed_client(system, &load.sampler, local, rng)));
            }
        }
    }
}

/// The open loop's schedule for generator `index`, if the load is open.
fn open_schedule(load: &Load, index: usize) -> Option<OpenSchedule> {
    match load.mode {
        Mode::Closed { .. } => None,
        Mode::Open {
            rate,
            outstanding_max,
        } => {
            crate::base::timing::lower_timer_slack();
            Some(OpenSchedule {
                next: 0,
                index,
                generators: load.generators,
                rate,
                outstanding_max: outstanding_max.max(1),
            })
        }
    }
}

/// What one turn of the open loop sent.
struct Sent {
    /// Any input was sent.
    any: bool,
    /// When the next input is due, if it is not due yet.
    next_due: Option<Instant>,
}

/// Sends the open-loop inputs due by `now`, at most
/// `OPEN_SENDS_PER_TURN_MAX` and while fewer than `outstanding_max` wait.
fn send_due<'a, S: System>(
    schedule: &mut OpenSchedule,
    tasks: &mut FuturesUnordered<Task<'a>>,
    system: &'a S,
    load: &Load,
    local: &'a Local<'a>,
    rng: &mut Rng,
    now: Instant,
) -> Sent {
    let mut sent = Sent {
        any: false,
        next_due: None,
    };
    for _ in 0..OPEN_SENDS_PER_TURN_MAX {
        if tasks.len() >= schedule.outstanding_max {
            break;
        }
        let Some(intended) = schedule.intended(&local.timeline) else {
            break;
        };
        if intended > now {
            sent.next_due = Some(intended);
            break;
        }
        schedule.next += 1;
        let key = load.sampler.sample(rng);
        tasks.push(Box::pin(open_input(
            system,
            local,
            key,
            schedule.next,
            intended,
        )));
        sent.any = true;
    }
    sent
}

/// A closed-loop client: one input outstanding at a time until the window
/// ends.
async fn closed_client<S: System>(
    system: &S,
    sampler: &KeySampler,
    local: &Local<'_>,
    mut rng: Rng,
) {
    let mut counter = 0_u64;
    // The moment the last input was answered is when this client sends its
    // next one (in the same turn), so it is not read twice.
    let mut answered = None;
    loop {
        let sent = answered.take().unwrap_or_else(Instant::now);
        if sent >= local.timeline.stop_at {
            return;
        }
        let key = sampler.sample(&mut rng);
        counter += 1;
        let input = input_of(counter, sent, local.timeout);
        bump(&local.published.submitted, 1);
        let submit = Watched::new(system.submit(key, input));
        let Some((outcome, waited)) = until_deadline(submit, sent, local).await else {
            continue;
        };
        answered = local.count(outcome, input, sent);
        if !waited {
            // Answered without ever waiting (a refusal, or a system with
            // nothing in between): let the other clients have a turn, and
            // read the time again after it.
            answered = None;
            YieldNow::default().await;
        }
    }
}

/// A closed-loop client that hands over `load.per_call` inputs in each
/// call and waits for all of their outcomes before the next; each input's
/// latency runs from its call. Never with a timeout (`Load::per_call`).
async fn closed_caller<S: System>(system: &S, load: &Load, local: &Local<'_>, mut rng: Rng) {
    debug_assert!(
        local.timeout.is_none(),
        "calls of many inputs have no timeout"
    );
    let mut counter = 0_u64;
    let mut inputs = Vec::with_capacity(load.per_call);
    loop {
        let sent = Instant::now();
        if sent >= local.timeline.stop_at {
            return;
        }
        inputs.clear();
        let items: Vec<(u64, u64)> = (0..load.per_call)
            .map(|_| {
                counter += 1;
                inputs.push(counter);
                (load.sampler.sample(&mut rng), counter)
            })
            .collect();
        let calls = load.per_call as u64;
        bump(&local.published.submitted, calls);
        let mut call = system.submit_many(items);
        while let Some((index, outcome)) = call.next().await {
            local.count(outcome, inputs[index], sent);
        }
        // A call answered at once (refused whole, say) must not keep the
        // other clients from their turn.
        YieldNow::default().await;
    }
}

/// An open-loop input, meant to be sent at `intended`.
async fn open_input<S: System>(
    system: &S,
    local: &Local<'_>,
    key: u64,
    input: u64,
    intended: Instant,
) {
    let input = input_of(input, intended, local.timeout);
    bump(&local.published.submitted, 1);
    if let Some(outcome) = until_deadline(system.submit(key, input), intended, local).await {
        local.count(outcome, input, intended);
    }
}

/// The input numbered `counter`, sent at `sent`: with a timeout, carrying
/// its caller's deadline.
fn input_of(counter: u64, sent: Instant, timeout: Option<Duration>) -> u64 {
    if let Some(input) = event_time::input_of(counter) {
        return input; // The event-time scenario runs without a timeout.
    }
    match timeout {
        Some(timeout) => overload::input_until(sent + timeout, counter),
        None => counter,
    }
}

/// `submit`'s outcome, or `None` (counted as timed out) if it has not come
/// by the caller's timeout after `sent`: the future is then dropped.
async fn until_deadline<F: Future + Unpin>(
    submit: F,
    sent: Instant,
    local: &Local<'_>,
) -> Option<F::Output> {
    let Some(timeout) = local.timeout else {
        return Some(submit.await);
    };
    let outcome = GiveUp {
        submit,
        deadline: sent + timeout,
        armed: false,
        local,
    }
    .await;
    if outcome.is_none() {
        local.count_timed_out();
    }
    outcome
}

/// A submit's future raced against its caller's deadline.
struct GiveUp<'a, 'b, F> {
    submit: F,
    deadline: Instant,
    armed: bool,
    local: &'a Local<'b>,
}

impl<F: Future + Unpin> Future for GiveUp<'_, '_, F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(outcome) = Pin::new(&mut self.submit).poll(cx) {
            return Poll::Ready(Some(outcome));
        }
        if Instant::now() >= self.deadline {
            return Poll::Ready(None);
        }
        if !self.armed {
            self.armed = true;
            let timer = Timer {
                at: self.deadline,
                waker: cx.waker().clone(),
            };
            self.local.timers.borrow_mut().push(Reverse(timer));
        }
        Poll::Pending
    }
}

/// An open-loop generator's share of the schedule: inputs
/// `index, index + generators, ...` of the global sequence, input `n` of
/// which is due `n / rate` seconds after the start.
struct OpenSchedule {
    /// How many of this generator's inputs were sent.
    next: u64,
    index: usize,
    generators: usize,
    rate: f64,
    outstanding_max: usize,
}

impl OpenSchedule {
    /// When the next input is due, or `None` once the window is over.
    fn intended(&self, timeline: &Timeline) -> Option<Instant> {
        let global = self.next * self.generators as u64 + self.index as u64;
        let at = timeline.start + Duration::from_secs_f64(global as f64 / self.rate);
        (at < timeline.stop_at).then_some(at)
    }
}

/// Unparks the generator thread; remembers the wake until it looks.
struct ThreadWaker {
    thread: Thread,
    woken: AtomicBool,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.woken.swap(true, Ordering::SeqCst) {
            self.thread.unpark();
        }
    }
}

/// A future's output, and whether it ever had to wait.
struct Watched<F> {
    inner: F,
    waited: bool,
}

impl<F> Watched<F> {
    fn new(inner: F) -> Self {
        Self {
            inner,
            waited: false,
        }
    }
}

impl<F: Future + Unpin> Future for Watched<F> {
    type Output = (F::Output, bool);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.inner).poll(cx) {
            Poll::Ready(output) => Poll::Ready((output, self.waited)),
            Poll::Pending => {
                self.waited = true;
                Poll::Pending
            }
        }
    }
}

/// Gives the executor one turn.
#[derive(Default)]
struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            Poll::Ready(())
        } else {
            self.yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::dist::KeyDist;
    use crate::systems::{BatchCounts, Outcome, System};

    /// Answers inputs of even keys at once and never answers the others.
    struct HalfDeaf;

    impl System for HalfDeaf {
        type Submit = Pin<Box<dyn Future<Output = Outcome> + Send>>;

        fn submit(&self, key: u64, _input: u64) -> Self::Submit {
            if key.is_multiple_of(2) {
                Box::pin(futures::future::ready(Outcome::Done))
            } else {
                Box::pin(futures::future::pending())
            }
        }

        fn batch_counts(&self) -> Option<BatchCounts> {
            None
        }

        fn close(&mut self) {}
    }

    fn load(timeout: Option<Duration>, mode: Mode) -> Load {
        Load {
            per_call: 1,
            mode,
            generators: 2,
            sampler: Arc::new(KeySampler::new(KeyDist::Uniform, 10).unwrap()),
            warmup: Duration::from_millis(20),
            duration: Duration::from_millis(200),
            drain_timeout: Duration::from_millis(300),
            seed: 3,
            timeout,
            slowdown: None,
        }
    }

    #[test]
    fn callers_give_up_at_their_timeout_and_nothing_is_lost() {
        for mode in [
            Mode::Closed { clients: 8 },
            Mode::Open {
                rate: 2_000.0,
                outstanding_max: 1_000,
            },
        ] {
            let measured = drive(
                &HalfDeaf,
                &load(Some(Duration::from_millis(10)), mode),
                |_| {},
            );
            assert!(
                measured.timed_out > 0 && measured.done > 0,
                "{mode:?}: {measured:?}"
            );
            assert_eq!(
                measured.lost(),
                0,
                "{mode:?}: every input done or timed out"
            );
            assert!(
                !measured.gave_up,
                "{mode:?}: the drain found nothing outstanding"
            );
            let bucketed: u64 = measured.done_buckets.iter().sum();
            assert_eq!(
                bucketed, measured.done,
                "{mode:?}: every answer is in a bucket"
            );
        }
    }

    #[test]
    fn without_a_timeout_an_unanswered_input_is_lost() {
        let measured = drive(&HalfDeaf, &load(None, Mode::Closed { clients: 8 }), |_| {});
        assert_eq!(measured.timed_out, 0);
        assert!(measured.lost() > 0 && measured.gave_up, "{measured:?}");
    }
}
