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

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;

use crate::base::lock;
use crate::scenarios::overload::{self, Slowdown};
use crate::sources::dist::KeySampler;
use crate::store::new_histogram;
use crate::systems::{BatchCounts, IdleCounts, System};

mod generate;

use generate::generate;

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
    /// The error the first of them was answered with.
    pub first_failure: Option<String>,
    /// Inputs answered with an error that leaves their outcome at the
    /// store unknown ([`Outcome::Unknown`](crate::systems::Outcome::Unknown); whole run): applied or not,
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
    /// The error of this generator's first failed input.
    first_failure: Mutex<Option<String>>,
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
            first_failure: Mutex::new(None),
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
        first_failure: published
            .iter()
            .find_map(|p| lock(&p.first_failure).clone()),
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
        merged
            .add(&*lock(&p.latency))
            .expect("histograms of equal bounds");
    }
    merged
}
