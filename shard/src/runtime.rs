//! A shard on its own thread: a glommio `LocalExecutor`, pinned to its CPU,
//! driving a [`ShardCore`].
//!
//! The loop, round after round:
//! 1. poll the batches that were woken; release the lane and slot of each
//!    that finished;
//! 2. start the batches of ready lanes while slots are free (the lanes just
//!    released go first, so a busy key's next round trip is not held up);
//! 3. answer the callers of the batches finished in step 1;
//! 4. admit what arrived in the intake (a bounded number per round); after
//!    close, once the intake is sealed and drained, close the lanes;
//! 5. start the batches that admission made ready;
//! 6. publish the stats, and stop once closed, sealed, drained and quiet;
//! 7. wait for a batch to complete, new input (or close), or the earliest
//!    deadline: spinning, dozing or parked, by how long the shard has been
//!    idle (see `idle.rs`).
//!
//! Steps 3 and 4 may be long (a hot key's batch has many callers, and
//! waking each may hand this CPU to the caller's thread for a while), so
//! between batches answered, and every `REACT_EVERY` inputs admitted, the
//! loop looks whether a batch was woken meanwhile and lets it go on first.
//!
//! Batch futures are polled with the intake's *bell* as their waker: a
//! batch answered on another thread rings it, which costs a store and a
//! load while the shard runs and wakes it when it dozes or parks. Whether
//! anything was woken is then a single flag, cheap to look at between
//! steps.
//!
//! The loop hands the thread to glommio at once after a round that made
//! another task of the thread ready (one spawned here, or a local caller
//! answered), after every look while idle, and otherwise once per
//! `YIELD_EVERY` while busy, not every round: a glommio turn costs system
//! calls, and batch completions need none.
//!
//! The shard loop is one task: batch futures run inside it, in a
//! `FuturesUnordered`, so "take and mark busy" and "check open and admit" are
//! single steps by construction, and no lock is taken on the shard's path.
//! A panic in a batch function is caught and answered `Panicked` (G10).
//!
//! Tasks spawned on the shard through the engine run beside the loop on the
//! same thread; they reach the core directly (see `local.rs`), and the loop
//! only borrows the core between awaits, never across one.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;
use glommio::{LocalExecutorBuilder, Placement};

use crate::batch_fn::BatchFn;
use crate::config::LanesConfig;
use crate::core::{BatchOutcome, Reply, ShardCore, Submission};
use crate::idle::{self, Alarm, BatchTime, Bell, IdlePolicy, Stage, GLOMMIO_MEMORY};
use crate::intake::Intake;
use crate::lanes::LaneId;
use crate::local::{LocalShard, Nudge};
use crate::shard_id::ShardId;
use crate::stats::{ShardCounters, ShardStats};

/// Inputs admitted per round at most, so completions and timers are looked
/// at regularly even under a flood of input.
const INTAKE_DRAIN_MAX: usize = 4096;

/// While answering or admitting, the loop looks for woken batches after
/// this many inputs admitted (and after each batch answered).
const REACT_EVERY: usize = 64;

/// While busy, the loop hands glommio the thread at least this often.
const YIELD_EVERY: Duration = Duration::from_micros(50);

/// Memory glommio sets aside for registered I/O buffers. Ferry does no
/// glommio file I/O of its own, and the default (10 MiB) would not fit a
/// low `RLIMIT_MEMLOCK` on hosts with several shards.
const IO_MEMORY: usize = 256 << 10;

/// How one shard is placed and bounded.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    /// Which shard.
    pub id: ShardId,
    /// Identifies the engine, so a task on this thread can tell whether a
    /// local submit is for this very shard.
    pub engine: usize,
    /// The CPU to pin its thread to, or `None` to leave it unbound.
    pub cpu: Option<usize>,
    /// Bounds of its lanes.
    pub lanes: LanesConfig,
    /// Batches in flight at once (slots).
    pub max_in_flight_batches: usize,
    /// After its last work, an idle shard first keeps looking for more this
    /// long, calling `sched_yield` between looks so that other threads of
    /// its core run first. Zero skips this stage.
    pub spin_before_park: Duration,
    /// Then it dozes this long: blocked on a futex, so using no CPU, and
    /// woken by input or a batch answer with one system call; it looks
    /// again at least every 50 µs. Only then does it park in glommio, whose
    /// sleep and wake-up cost far more. Zero skips this stage. (The three
    /// stages are described in `idle.rs`.)
    pub doze_before_park: Duration,
}

/// A task to start on a shard, sent from any thread.
pub type SpawnTask = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// What enters a shard through its intake.
pub enum Inbound<K, I, O, E> {
    /// An input to admit.
    Submit(Submission<K, I, O, E>),
    /// A task to run on the shard's thread.
    Spawn(SpawnTask),
}

impl<K, I, O, E> std::fmt::Debug for Inbound<K, I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Inbound::Submit(_) => "Inbound::Submit",
            Inbound::Spawn(_) => "Inbound::Spawn",
        })
    }
}

/// The shard's core as tasks on its thread reach it.
pub type SharedCore<K, I, O, E> = Rc<RefCell<ShardCore<K, I, O, E>>>;

/// Starts the shard's thread. `factory` is called once, on that thread, to
/// make the batch function that serves this shard.
pub fn spawn_shard<K, I, O, E, F, B>(
    config: ShardConfig,
    intake: Arc<Intake<Inbound<K, I, O, E>>>,
    counters: Arc<ShardCounters>,
    factory: Arc<F>,
) -> std::io::Result<glommio::ExecutorJoinHandle<()>>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
    F: Fn(ShardId) -> B + Send + Sync + 'static,
    B: BatchFn<K, I, O, E> + 'static,
{
    let placement = match config.cpu {
        Some(cpu) => Placement::Fixed(cpu),
        None => Placement::Unbound,
    };
    let builder = LocalExecutorBuilder::new(placement)
        .name(&format!("ferry-{}", config.id))
        .io_memory(IO_MEMORY);
    let idle = IdlePolicy {
        spin: config.spin_before_park,
        doze: config.doze_before_park,
    };
    builder
        .spawn(move || async move {
            let _closing = CloseOnExit(&intake);
            let batch_fn = factory(config.id);
            let core: SharedCore<K, I, O, E> = Rc::new(RefCell::new(ShardCore::new(
                config.lanes,
                config.max_in_flight_batches,
            )));
            let wakers = Wakers {
                nudge: Rc::new(Nudge::default()),
                bell: Bell::waker(Arc::clone(&intake)),
                alarm: Alarm::for_this_thread(),
            };
            let origin = Instant::now();
            let _installed = LocalShard::install(LocalShard {
                engine: config.engine,
                index: config.id.index(),
                core: core.clone(),
                nudge: wakers.nudge.clone(),
                origin,
            });
            run(&core, &wakers, &intake, &counters, batch_fn, origin, idle).await;
        })
        .map_err(|err| std::io::Error::other(err.to_string()))
}

/// Closes and empties the intake when the shard's loop ends for any reason.
/// After a normal exit the intake is already sealed and empty. If user code
/// that runs on the shard (the key's `Eq` or `Clone`, a `Drop`) panics, the
/// thread unwinds through here: callers already queued get `Aborted` (their
/// reply is dropped unanswered), later ones `Refused::Closed`, and nobody
/// waits on a shard that is gone (G4).
struct CloseOnExit<'a, T>(&'a Intake<T>);

impl<T> Drop for CloseOnExit<'_, T> {
    fn drop(&mut self) {
        let intake = self.0;
        intake.close();
        loop {
            while let Some(inbound) = intake.pop() {
                drop(inbound);
            }
            if intake.is_sealed() && intake.is_empty() {
                break;
            }
            // A pusher is between registering and deregistering: nanoseconds.
            std::thread::yield_now();
        }
    }
}

/// A batch's lane, callers and outcome, and when it started.
type Finished<I, O, E> = (LaneId, Vec<Reply<I, O, E>>, BatchOutcome<O, E>, Duration);
/// A finished batch whose lane is released and whose callers wait for their
/// answers.
type Unanswered<I, O, E> = (Vec<Reply<I, O, E>>, BatchOutcome<O, E>);
type Running<'a, I, O, E> = Pin<Box<dyn Future<Output = Finished<I, O, E>> + 'a>>;

/// The batches out of their lanes: running, or finished with their lanes
/// released and their callers not yet answered; and how long batches have
/// been taking.
struct Batches<'a, I, O, E> {
    running: FuturesUnordered<Running<'a, I, O, E>>,
    finished: Vec<Unanswered<I, O, E>>,
    took: BatchTime,
}

/// How the shard's loop is woken: by tasks of its own thread (`nudge`), by
/// its batch futures from any thread (`bell`), and out of a doze (`alarm`).
struct Wakers {
    nudge: Rc<Nudge>,
    bell: Waker,
    alarm: Waker,
}

async fn run<K, I, O, E, B>(
    core: &RefCell<ShardCore<K, I, O, E>>,
    wakers: &Wakers,
    intake: &Intake<Inbound<K, I, O, E>>,
    counters: &ShardCounters,
    batch_fn: B,
    origin: Instant,
    idle: IdlePolicy,
) where
    K: std::hash::Hash + Eq + Clone,
    E: Clone,
    B: BatchFn<K, I, O, E>,
{
    let nudge = &wakers.nudge;
    // Batch futures are polled with the bell, never with glommio's waker:
    // an answer from another thread then reaches the shard in whatever
    // stage it is (running, dozing or parked) through the intake.
    let mut batch_cx = Context::from_waker(&wakers.bell);
    let mut batches = Batches {
        running: FuturesUnordered::new(),
        finished: Vec::new(),
        took: BatchTime::default(),
    };
    let mut close_seen = false;
    let mut sealed = false;
    let mut lanes_closed = false;
    let mut timer: Option<(Duration, glommio::timer::Timer)> = None;
    let mut yielded_at = Duration::ZERO;
    let mut worked_at = Duration::ZERO;
    // When a batch was last woken by glommio: rung on this thread while the
    // loop had handed the thread to glommio (see `idle::Awaiting`).
    let mut glommio_woke_at: Option<Duration> = None;
    // The finished batches being answered (swapped with
    // `batches.finished`, so neither list allocates once grown).
    let mut answering: Vec<Unanswered<I, O, E>> = Vec::new();
    // With a batch delay, an input's delay runs from its arrival, so it is
    // stamped when popped: the round's `now` may be from before the push.
    // (Without one, the stamp decides nothing and the round's will do.)
    let stamp_on_pop = !core.borrow().lanes().config().max_batch_delay.is_zero();
    // Times the shard dozed and parked (see `ShardStats`).
    let mut dozes = 0_u64;
    let mut parks = 0_u64;

    loop {
        let now = origin.elapsed();
        nudge.take();
        if !close_seen && intake.is_closed() {
            close_seen = true;
        }
        if close_seen && !sealed && intake.is_sealed() {
            // From here on nothing enters the intake; the drains below see
            // everything that did.
            sealed = true;
        }
        // Batches woken since the last look take their next step (a read
        // answered sends its write), and lanes released by the batches that
        // finished go out, before callers are answered or new input is
        // admitted: a busy key's next round trip starts at once.
        intake.take_rung();
        let mut worked = step(core, &batch_fn, &mut batches, now, &mut batch_cx);
        // Answering wakes callers, and a woken caller may take this CPU
        // before the loop goes on; so between batches answered (and every
        // `REACT_EVERY` inputs admitted below) the loop looks whether a
        // batch was woken meanwhile, and if so lets it go on first.
        while !batches.finished.is_empty() {
            std::mem::swap(&mut batches.finished, &mut answering);
            for (replies, outcome) in answering.drain(..) {
                core.borrow_mut().answer(replies, outcome);
                if intake.take_rung() {
                    step(
                        core,
                        &batch_fn,
                        &mut batches,
                        origin.elapsed(),
                        &mut batch_cx,
                    );
                }
            }
        }
        // An input whose push succeeded is admitted even if close came
        // after it: the lanes close only once the sealed intake is empty.
        let mut spawned = false;
        for popped in 1..=INTAKE_DRAIN_MAX {
            match intake.pop() {
                Some(Inbound::Submit(submission)) => {
                    let arrived = if stamp_on_pop { origin.elapsed() } else { now };
                    core.borrow_mut().admit(submission, arrived)
                }
                Some(Inbound::Spawn(task)) => {
                    spawn_task(task);
                    spawned = true;
                }
                None => break,
            }
            worked = true;
            if popped % REACT_EVERY == 0 && intake.take_rung() {
                step(
                    core,
                    &batch_fn,
                    &mut batches,
                    origin.elapsed(),
                    &mut batch_cx,
                );
            }
        }
        if sealed && !lanes_closed && intake.is_empty() {
            lanes_closed = true;
            core.borrow_mut().close();
        }
        worked |= start_ready(core, &batch_fn, &mut batches, now, &mut batch_cx);
        counters.publish(&ShardStats {
            dozes,
            parks,
            ..core.borrow().stats()
        });
        if lanes_closed && core.borrow().is_quiet() && batches.finished.is_empty() {
            debug_assert!(batches.running.is_empty());
            return;
        }

        let deadline = core.borrow_mut().next_deadline();
        if timer.as_ref().map(|(due, _)| Some(*due)) != Some(deadline) {
            timer = deadline.map(|due| {
                let wait = due.saturating_sub(origin.elapsed());
                (due, glommio::timer::Timer::new(wait))
            });
        }
        if worked || !batches.finished.is_empty() {
            worked_at = now;
        }
        let due_in = timer.as_ref().map(|(due, _)| due.saturating_sub(now));
        let glommio_wakes =
            glommio_woke_at.is_some_and(|at| now.saturating_sub(at) < GLOMMIO_MEMORY);
        let awaiting = idle.awaiting(
            core.borrow().in_flight(),
            batches.took.typical(),
            glommio_wakes,
        );
        let stage = idle.stage(now.saturating_sub(worked_at), due_in, awaiting);
        let woke = poll_fn(|cx| {
            if idle::enter_loop() {
                glommio_woke_at = Some(origin.elapsed());
            }
            let completed = progress(core, &mut batches, origin.elapsed(), &mut batch_cx);
            if completed || !batches.finished.is_empty() || nudge.take() {
                return Poll::Ready(true);
            }
            if let Some((_, sleep)) = timer.as_mut() {
                if Pin::new(sleep).poll(cx).is_ready() {
                    timer = None;
                    return Poll::Ready(true);
                }
            }
            let await_seal = close_seen && !sealed;
            match stage {
                Stage::Spin => {
                    std::thread::yield_now();
                    Poll::Ready(false)
                }
                Stage::Doze(wait) => {
                    if !wait.is_zero()
                        && intake.prepare_sleep(&wakers.alarm, close_seen, await_seal)
                    {
                        dozes += 1;
                        std::thread::park_timeout(wait);
                    }
                    // (`intake.awake()` follows the wait, whatever ended it.)
                    Poll::Ready(false)
                }
                Stage::Park => {
                    nudge.register(cx.waker());
                    if intake.prepare_sleep(cx.waker(), close_seen, await_seal) {
                        parks += 1;
                        idle::leave_loop();
                        Poll::Pending
                    } else {
                        Poll::Ready(true)
                    }
                }
            }
        })
        .await;
        if woke {
            worked_at = origin.elapsed();
        }
        intake.awake();
        // Let the other tasks of this thread run: at once if this round made
        // one ready (a task spawned here, or a local caller answered), or if
        // the shard is idle (it has nothing better to do, and a task here
        // may be waiting on a timer or another thread), else once per
        // budget.
        let idled = !woke;
        let others_ready = core.borrow_mut().take_woke_local() || spawned;
        if idled || others_ready || origin.elapsed().saturating_sub(yielded_at) >= YIELD_EVERY {
            idle::leave_loop();
            yield_now().await;
            yielded_at = origin.elapsed();
            if idle::enter_loop() {
                glommio_woke_at = Some(yielded_at);
            }
        }
    }
}

/// One step for the batches: those woken take their next step (a read
/// answered sends its write), and the lanes released by those that
/// finished go out, with any other ready lane. Returns whether anything
/// finished or started.
fn step<'a, K, I, O, E, B>(
    core: &RefCell<ShardCore<K, I, O, E>>,
    batch_fn: &B,
    batches: &mut Batches<'a, I, O, E>,
    now: Duration,
    cx: &mut Context<'_>,
) -> bool
where
    K: std::hash::Hash + Eq + Clone,
    E: Clone,
    B: BatchFn<K, I, O, E>,
    B::Future: 'a,
    I: 'a,
    O: 'a,
    E: 'a,
{
    let progressed = progress(core, batches, now, cx);
    start_ready(core, batch_fn, batches, now, cx) | progressed
}

/// Polls the batches that were woken; releases the lane and slot of each
/// that finished and keeps its callers in `batches.finished`, to be
/// answered once the released lanes have been looked at. Returns whether
/// any finished.
fn progress<K, I, O, E>(
    core: &RefCell<ShardCore<K, I, O, E>>,
    batches: &mut Batches<'_, I, O, E>,
    now: Duration,
    cx: &mut Context<'_>,
) -> bool
where
    K: std::hash::Hash + Eq + Clone,
    E: Clone,
{
    let mut any = false;
    while let Poll::Ready(Some((lane, replies, outcome, started))) =
        batches.running.poll_next_unpin(cx)
    {
        batches.took.record(now.saturating_sub(started));
        core.borrow_mut().release(lane, now);
        batches.finished.push((replies, outcome));
        any = true;
    }
    any
}

/// Starts the batch of every ready lane while slots are free; returns
/// whether any started.
///
/// A batch against a fast store often finishes on its first poll: it is
/// completed at once, skipping the bookkeeping of the running set. A pending
/// one joins the set, which polls it again with its own waker.
fn start_ready<'a, K, I, O, E, B>(
    core: &RefCell<ShardCore<K, I, O, E>>,
    batch_fn: &B,
    batches: &mut Batches<'a, I, O, E>,
    now: Duration,
    cx: &mut Context<'_>,
) -> bool
where
    K: std::hash::Hash + Eq + Clone,
    E: Clone,
    B: BatchFn<K, I, O, E>,
    B::Future: 'a,
    I: 'a,
    O: 'a,
    E: 'a,
{
    let mut started_any = false;
    loop {
        // The borrow ends with this statement, before the batch function
        // runs: it may submit to its own shard. (A `while let` would hold it
        // for the whole body.)
        let Some(dispatch) = core.borrow_mut().dispatch(now) else {
            break;
        };
        started_any = true;
        let replies = dispatch.replies;
        let lane = dispatch.lane;
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            batch_fn.call(dispatch.key, dispatch.inputs)
        }));
        let mut batch: Running<'a, I, O, E> = Box::pin(async move {
            let outcome = match started {
                Ok(future) => match AssertUnwindSafe(future).catch_unwind().await {
                    Ok(result) => BatchOutcome::Returned(result),
                    Err(_) => BatchOutcome::Panicked,
                },
                Err(_) => BatchOutcome::Panicked,
            };
            (lane, replies, outcome, now)
        });
        match batch.as_mut().poll(cx) {
            Poll::Ready((lane, replies, outcome, _)) => {
                batches.took.record(Duration::ZERO);
                core.borrow_mut().complete(lane, replies, outcome, now)
            }
            Poll::Pending => batches.running.push(batch),
        }
    }
    started_any
}

/// Runs a task sent to this shard beside the loop. Its panic stays its own:
/// it ends the task, not the shard (G10).
fn spawn_task(task: SpawnTask) {
    if let Ok(future) = std::panic::catch_unwind(AssertUnwindSafe(task)) {
        glommio::spawn_local(AssertUnwindSafe(future).catch_unwind().map(|_| ())).detach();
    }
}

/// Gives the other tasks of this thread a turn, once.
async fn yield_now() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}
