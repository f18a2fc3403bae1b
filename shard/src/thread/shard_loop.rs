//! The shard loop: one task on the shard's thread that drives a
//! [`ShardCore`], round after round. [`ShardLoop::run`] reads as the round
//! in `docs/architecture.md`:
//!
//! 1. **begin**: read the clock, take the local nudge, look at close;
//! 2. **step**: poll the batches that were woken, release the lane and slot
//!    of each that finished, and start the batches of ready lanes while
//!    slots are free (the lanes just released go first, so a busy key's
//!    next round trip is not held up);
//! 3. **answer** the callers of the batches finished in step 2;
//! 4. **admit** what arrived in the intake (a bounded number per round),
//!    and register the flush requests that came (after admitting what
//!    arrived before them); then **expire** the inputs that waited
//!    `max_queue_time`;
//! 5. **close the queue** once the engine is closing and the sealed intake
//!    is drained;
//! 6. **start** the batches that admission made ready;
//! 7. **publish**: hand over the answers kept for `submit_many` callers,
//!    then the stats; choose the thread's time slice by how many inputs
//!    the recent rounds answered (see `slice.rs`); stop once closed,
//!    drained and quiet;
//! 8. **wait** for a batch to complete, new input (or close), or the
//!    earliest deadline: spinning, dozing or parked, by how long the shard
//!    has been idle (see `idle.rs`);
//! 9. **yield** to the runtime so the thread's other tasks run.
//!
//! Steps 3 and 4 may be long (a hot key's batch has many callers, and
//! waking each may hand this CPU to the caller's thread for a while), so
//! between batches answered, and every `REACT_EVERY` inputs admitted, the
//! loop *reacts*: if a batch was woken meanwhile, it does step 2 first.
//!
//! Batch futures are polled with the intake's *bell* as their waker: a
//! batch answered on another thread rings it, which costs a store and a
//! load while the shard runs and wakes it when it dozes or parks. Whether
//! anything was woken is then a single flag, cheap to look at between
//! steps.
//!
//! The loop is one task: batch futures run inside it, in a
//! `FuturesUnordered`, so "take and mark busy" and "check open and admit"
//! are single steps by construction, and no lock is taken on the shard's
//! path. A panic in a batch function is caught and answered `Panicked`
//! (G10). Tasks spawned on the shard run beside the loop on the same
//! thread; they reach the core directly (see `local.rs`), and the loop only
//! borrows the core between awaits, never across one.
//!
//! Everything the loop needs from its thread's executor goes through
//! [`Executor`] (`executor.rs`).

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;

use crate::core::batch_run::{self, BatchRun, Cells, FirstPoll};
use crate::core::carry::Carry;
use crate::core::ended::Ended;
use crate::core::shard_core::{FlushReply, ShardCore, Waiter};
use crate::core::stats::ShardCounters;
use crate::core::trace::{self, Attached, BatchSpan};
use crate::queue::seam::Queue;
use crate::runtime::executor::{self, Executor};
use crate::runtime::slice::SliceChoice;
use crate::thread::clock::Clock;
use crate::thread::flush_door::FlushDoor;
use crate::thread::idle::{
    self, Awaiting, BatchTime, IdlePolicy, Looks, SpinOdds, Stage, RUNTIME_WAKE_MEMORY,
};
use crate::thread::inbound::{Inbound, SharedIntake};
use crate::thread::local::Nudge;
use crate::value::nanos::Nanos;

/// Inputs admitted per round at most, so completions and timers are looked
/// at regularly even under a flood of input.
const INTAKE_DRAIN_MAX: usize = 4096;

/// While answering or admitting, the loop reacts to woken batches after
/// this many inputs admitted (and after each batch answered).
const REACT_EVERY: usize = 64;

/// While busy, the loop hands the runtime the thread at least this often.
const YIELD_EVERY: Duration = Duration::from_micros(50);

/// The shard's core as tasks on its thread reach it.
pub(crate) type SharedCore<Q, I, O, E> = Rc<RefCell<ShardCore<Q, I, O, E>>>;

/// Where the shard stands in closing (G9), in the order it passes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Closing {
    /// Not closed.
    Open,
    /// Close was seen; pushers that registered before it may still push.
    Draining,
    /// Nothing can enter the intake any more; once it is empty the queue
    /// closes.
    Sealed,
    /// The queue is closed: what waits is ready, nothing is admitted.
    QueueClosed,
}

/// A finished batch whose slot is released and whose callers wait for
/// their answers: what the loop kept of it, and how it ended.
type Unanswered<H, R> = (H, Ended<R>);

/// The phases that need the `metrics` feature's exporter reach it here.
#[cfg(feature = "metrics")]
type Exporter = crate::core::metrics::Exporter;

/// The batches out of the queue: running, or finished with their slots
/// released and their callers not yet answered; and how long batches have
/// been taking.
struct Batches<H, F: Future> {
    running: FuturesUnordered<BatchRun<H, F>>,
    /// Emptied homes of batch futures, for the next batches.
    cells: Cells<F>,
    finished: Vec<Unanswered<H, F::Output>>,
    /// The finished batches being answered (swapped with `finished`, so
    /// neither list allocates once grown).
    answering: Vec<Unanswered<H, F::Output>>,
    took: BatchTime,
}

/// How the shard's loop is woken: by tasks of its own thread (`nudge`), by
/// its batch futures from any thread (`bell`), and out of a doze (`alarm`).
pub(crate) struct Wakers {
    pub(crate) nudge: Rc<Nudge>,
    pub(crate) bell: Waker,
    pub(crate) alarm: Waker,
}

/// What the loop is given to run with.
pub(crate) struct Parts<Q, I, O, E, B>
where
    Q: Queue<Waiter<I, O, E>>,
{
    pub(crate) core: SharedCore<Q, I, O, E>,
    pub(crate) intake: SharedIntake<Q::Key, I, O, E>,
    pub(crate) flushes: Arc<FlushDoor<FlushReply>>,
    pub(crate) counters: Arc<ShardCounters>,
    /// The user's function, and how a slot is filled for it (a batch, or
    /// a trip).
    pub(crate) carry: B,
    pub(crate) clock: Rc<Clock>,
    pub(crate) wakers: Wakers,
    pub(crate) idle: IdlePolicy,
    /// The thread's time slice, short while rounds answer many inputs.
    pub(crate) slice: SliceChoice,
}

/// One shard's loop and everything it keeps from round to round.
pub(crate) struct ShardLoop<R, Q, I, O, E, B>
where
    R: Executor,
    Q: Queue<Waiter<I, O, E>>,
    B: Carry<Q, I, O, E>,
{
    parts: Parts<Q, I, O, E, B>,
    batches: Batches<B::Held, Attached<B::Future>>,
    closing: Closing,
    /// The timer armed for the earliest deadline, and that deadline.
    timer: Option<(Nanos, R::Timer)>,
    /// Anything done this round (reset when it begins).
    worked: bool,
    /// A task of the thread was made ready this round (one spawned here).
    spawned: bool,
    /// Tasks spawned on the shard and not yet ended.
    tasks: Rc<Cell<usize>>,
    yielded_at: Nanos,
    worked_at: Nanos,
    /// Whether the shard's recent gaps awaiting the runtime say a spin
    /// pays (see `idle::SpinOdds`).
    spin_odds: SpinOdds,
    /// When a batch was last woken by the runtime: rung on this thread
    /// while the loop had handed the thread to it (see `idle::Awaiting`).
    runtime_woke_at: Option<Nanos>,
    /// With a batch delay, an input's delay runs from its arrival, so it
    /// is stamped when popped: the round's start may be from before its
    /// push. So with an event-time hold, whose late inputs are told at
    /// arrival. (Without either, the stamp decides nothing and the latest
    /// reading will do.)
    stamp_on_pop: bool,
    /// `max_queue_time` is set: inputs may expire.
    expires: bool,
    /// The figures' way to the `metrics` facade.
    #[cfg(feature = "metrics")]
    exporter: Exporter,
    _runtime: PhantomData<R>,
}

impl<R, Q, I, O, E, B> ShardLoop<R, Q, I, O, E, B>
where
    R: Executor,
    Q: Queue<Waiter<I, O, E>>,
    E: Clone,
    B: Carry<Q, I, O, E>,
{
    pub(crate) fn new(parts: Parts<Q, I, O, E, B>) -> Self {
        let (stamp_on_pop, expires) = {
            let core = parts.core.borrow();
            let config = core.queue().config();
            (
                !config.max_batch_delay.is_zero()
                    || config.max_queue_time.is_some()
                    || config.hold.is_some(),
                config.max_queue_time.is_some(),
            )
        };
        #[cfg(feature = "metrics")]
        let exporter = Exporter::new(parts.core.borrow_mut().observer_mut().shard());
        Self {
            parts,
            batches: Batches {
                running: FuturesUnordered::new(),
                cells: Cells::default(),
                finished: Vec::new(),
                answering: Vec::new(),
                took: BatchTime::default(),
            },
            closing: Closing::Open,
            timer: None,
            worked: false,
            spawned: false,
            tasks: Rc::new(Cell::new(0)),
            yielded_at: Nanos::ZERO,
            worked_at: Nanos::ZERO,
            spin_odds: SpinOdds::default(),
            runtime_woke_at: None,
            stamp_on_pop,
            expires,
            #[cfg(feature = "metrics")]
            exporter,
            _runtime: PhantomData,
        }
    }

    /// Runs rounds until the shard is closed, drained and quiet.
    pub(crate) async fn run(mut self) {
        loop {
            self.begin();
            self.step();
            self.answer();
            self.admit();
            self.expire();
            self.close_queue_when_drained();
            self.start_ready();
            self.publish();
            if self.is_done() {
                return;
            }
            let woke = self.wait().await;
            self.yield_to_runtime(woke).await;
        }
    }

    /// Step 1: a fresh reading of the clock, the local nudge taken (this
    /// round looks at everything it could announce), close looked at.
    fn begin(&mut self) {
        self.parts.clock.read();
        self.parts.wakers.nudge.take();
        self.worked = false;
        self.spawned = false;
        let intake = &self.parts.intake;
        if self.closing == Closing::Open && intake.is_closed() {
            self.closing = Closing::Draining;
        }
        if self.closing == Closing::Draining && intake.is_sealed() {
            // From here on nothing enters the intake; the drains below see
            // everything that did.
            self.closing = Closing::Sealed;
        }
    }

    /// Step 2: woken batches take their next step (a read answered sends
    /// its write), and the lanes released by those that finished go out,
    /// with any other ready lane, before callers are answered or new input
    /// admitted: a busy key's next round trip starts at once.
    fn step(&mut self) {
        self.parts.intake.take_rung();
        self.progress();
        self.start_ready();
    }

    /// Between long stretches of answering or admitting: if a batch was
    /// woken meanwhile, let it go on first.
    fn react(&mut self) {
        if self.parts.intake.take_rung() {
            self.parts.clock.read();
            self.progress();
            self.start_ready();
        }
    }

    /// Step 3: answers the callers of the finished batches. Answering wakes
    /// callers, and a woken caller may take this CPU before the loop goes
    /// on, so the loop reacts after each batch answered.
    fn answer(&mut self) {
        while !self.batches.finished.is_empty() {
            let mut answering = std::mem::take(&mut self.batches.answering);
            std::mem::swap(&mut self.batches.finished, &mut answering);
            for (held, ended) in answering.drain(..) {
                B::answer(&mut self.parts.core.borrow_mut(), held, ended);
                self.react();
            }
            self.batches.answering = answering;
        }
    }

    /// Step 4: admits what arrived, up to `INTAKE_DRAIN_MAX`. An input
    /// whose push succeeded is admitted even if close came after it: the
    /// queue closes only once the sealed intake is empty.
    fn admit(&mut self) {
        if !self.parts.flushes.is_empty() {
            self.register_flushes();
        }
        self.admit_up_to(INTAKE_DRAIN_MAX);
    }

    /// Takes the flush requests that came and registers them with the core,
    /// after admitting everything in the intake when they were taken: it
    /// holds every input pushed before them.
    fn register_flushes(&mut self) {
        let requests = self.parts.flushes.take();
        let before = self.parts.intake.len();
        self.admit_up_to(before);
        let mut core = self.parts.core.borrow_mut();
        for reply in requests {
            core.flush(reply);
        }
        self.worked = true;
    }

    /// Admits up to `most` entries of the intake.
    fn admit_up_to(&mut self, most: usize) {
        for popped in 1..=most {
            match self.parts.intake.pop() {
                Some(Inbound::Submit(submission)) => {
                    let arrived = self.arrival();
                    self.parts.core.borrow_mut().admit(submission, arrived);
                }
                Some(Inbound::Bundle(to, inputs)) => {
                    self.parts.intake.popped_bundle(inputs.len());
                    let gathering = self.parts.core.borrow().gathering(to, inputs.len());
                    for bundled in inputs {
                        let arrived = self.arrival();
                        let mut core = self.parts.core.borrow_mut();
                        core.admit_gathered(bundled, &gathering, arrived);
                    }
                }
                Some(Inbound::Spawn(task)) => {
                    spawn_task::<R>(task, &self.tasks);
                    self.spawned = true;
                }
                Some(Inbound::Withdraw(hash)) => self.parts.core.borrow_mut().withdraw(hash),
                None => break,
            }
            self.worked = true;
            if popped % REACT_EVERY == 0 {
                self.react();
            }
        }
    }

    /// Step 4, the end: inputs that waited `max_queue_time` unsent are
    /// answered `Expired`, handed back.
    fn expire(&mut self) {
        if self.expires {
            let now = self.parts.clock.read();
            self.parts.core.borrow_mut().expire(now);
        }
    }

    /// The arrival stamp of an input popped now.
    fn arrival(&self) -> Nanos {
        if self.stamp_on_pop {
            self.parts.clock.read()
        } else {
            self.parts.clock.latest()
        }
    }

    /// Step 5: once closing and the sealed intake is empty, the queue
    /// closes: everything waiting is ready, delay ignored (G9).
    fn close_queue_when_drained(&mut self) {
        if self.closing == Closing::Sealed && self.parts.intake.is_empty() {
            self.closing = Closing::QueueClosed;
            self.parts.core.borrow_mut().close();
        }
    }

    /// Step 7: the answers kept for `submit_many` callers (see
    /// `gather.rs`), then the stats, for readers on any thread (and, with the
    /// feature `metrics`, for the `metrics` facade); then the flushes that
    /// completed are told, so that their callers read figures that show
    /// what they waited for.
    fn publish(&mut self) {
        let mut core = self.parts.core.borrow_mut();
        core.deliver();
        let stats = core.stats();
        let histograms = &mut core.observer_mut().histograms;
        self.parts.counters.publish(&stats, histograms);
        let now = self.parts.clock.latest();
        if let Some(slice) = self.parts.slice.after_round(now.into(), stats.answered) {
            self.parts.slice.switch(slice);
        }
        // Told after the figures that show what they waited for.
        for reply in core.take_flushed() {
            let _ = reply.send(());
        }
        drop(core);
        self.export(false);
    }

    /// Hands the figures to the `metrics` facade, at most once per
    /// `EXPORT_EVERY` while working, at once when `force`d, when the round
    /// did nothing, or when the shard is done (see `metrics.rs`).
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    fn export(&mut self, force: bool) {
        #[cfg(feature = "metrics")]
        {
            let now = self.parts.clock.latest().into();
            let force = force || !self.worked || self.is_done();
            if self.exporter.is_due(now, force) {
                let mut core = self.parts.core.borrow_mut();
                let (stats, intake) = (core.stats(), self.parts.intake.len());
                let histograms = &mut core.observer_mut().histograms;
                self.exporter.export(now, &stats, intake, histograms);
            }
        }
    }

    /// Closed, drained, nothing in flight and nobody left to answer.
    fn is_done(&self) -> bool {
        let done = self.closing == Closing::QueueClosed
            && self.parts.core.borrow().is_quiet()
            && self.batches.finished.is_empty();
        debug_assert!(!done || self.batches.running.is_empty());
        done
    }

    /// Polls the batches that were woken; releases the slot (and lane) of
    /// each that finished and keeps its callers in `batches.finished`, to be
    /// answered once the released lanes have been looked at.
    fn progress(&mut self) -> bool {
        self.parts.clock.read();
        let mut cx = Context::from_waker(&self.parts.wakers.bell);
        let mut any = false;
        while let Poll::Ready(Some(finished)) = self.batches.running.poll_next_unpin(&mut cx) {
            // Not a `now` read before the poll: a batch future may have
            // admitted an input of its own shard meanwhile, stamped later.
            let now = self.parts.clock.latest();
            self.batches
                .took
                .record(now.saturating_sub(finished.started));
            let (held, ended) = (finished.held, finished.ended);
            trace::fault_in(&finished.scope, || B::fault(&held, &ended));
            self.batches.cells.keep(finished.cell);
            B::release(
                &mut self.parts.core.borrow_mut(),
                &held,
                finished.started,
                now,
            );
            self.batches.finished.push((held, ended));
            any = true;
        }
        self.worked |= any;
        any
    }

    /// Steps 2 and 6: starts a batch from every ready lane while slots are
    /// free.
    ///
    /// A batch against a fast store often finishes on its first poll: it is
    /// completed at once, skipping the bookkeeping of the running set. A
    /// pending one joins the set, which polls it again with its own waker.
    fn start_ready(&mut self) {
        loop {
            // The latest reading, taken afresh for every batch: the batch
            // function may have admitted an input of its own shard, stamped
            // later than a reading from before it ran.
            let now = self.parts.clock.latest();
            // The borrow ends with this statement, before the batch function
            // runs: it may submit to its own shard.
            let taken = self
                .parts
                .carry
                .take(&mut self.parts.core.borrow_mut(), now);
            let Some((load, held)) = taken else {
                break;
            };
            self.worked = true;
            let span = self.batch_span(&held);
            let call = std::panic::catch_unwind(AssertUnwindSafe(|| {
                span.in_scope(|| self.parts.carry.call(load))
            }));
            let scope = span.scope();
            let Ok(future) = call else {
                let ended = Ended::Panicked;
                trace::fault_in(&scope, || B::fault(&held, &ended));
                self.finish_at_once(held, ended, now);
                continue;
            };
            let cell = self.batches.cells.take();
            let mut cx = Context::from_waker(&self.parts.wakers.bell);
            match batch_run::first_poll(cell, span.attach(future), &mut cx) {
                FirstPoll::Finished(ended, cell) => {
                    self.batches.cells.keep(cell);
                    trace::fault_in(&scope, || B::fault(&held, &ended));
                    self.finish_at_once(held, ended, now);
                }
                FirstPoll::Pending(cell) => {
                    let batch = BatchRun::new(cell, held, now, scope);
                    self.batches.running.push(batch);
                }
            }
        }
    }

    /// A batch that finished as it started: completed at once, without the
    /// bookkeeping of the running set.
    fn finish_at_once(&mut self, held: B::Held, ended: Ended<B::Output>, started: Nanos) {
        self.batches.took.record(Duration::ZERO);
        let now = self.parts.clock.read();
        B::complete(&mut self.parts.core.borrow_mut(), held, ended, started, now);
    }

    /// The span of the batch (or trip) just taken (feature `tracing`).
    fn batch_span(&self, held: &B::Held) -> BatchSpan {
        let shard = || self.parts.core.borrow_mut().observer_mut().shard();
        match B::trip_size(held) {
            Some((batches, inputs)) => BatchSpan::trip(|| (shard(), batches, inputs)),
            None => BatchSpan::new(|| {
                let mut core = self.parts.core.borrow_mut();
                let observer = core.observer_mut();
                (observer.shard(), observer.last_batch())
            }),
        }
    }

    /// Step 8: waits for the next event, in the idle stage that fits.
    /// Returns whether an event came (`false`: a look found nothing).
    async fn wait(&mut self) -> bool {
        self.arm_timer();
        if self.worked || !self.batches.finished.is_empty() {
            self.worked_at = self.parts.clock.latest();
        }
        let (stage, awaiting) = self.stage();
        if stage == Stage::Park {
            // Nothing may happen for a long time: the metrics are brought
            // up to date first.
            self.export(true);
        }
        let woke = poll_fn(|cx| self.poll_wait(cx, stage)).await;
        if woke {
            let now = self.parts.clock.read();
            if awaiting.scores_gaps() {
                let gap = now.saturating_sub(self.worked_at);
                self.spin_odds.gap(gap, self.parts.idle.spin);
            }
            self.worked_at = now;
        }
        self.parts.intake.awake();
        woke
    }

    /// Keeps one timer armed no later than the earliest deadline. A timer
    /// armed for an earlier moment is kept: it only wakes the loop early,
    /// for one round that arms the next. Re-arming whenever the earliest
    /// deadline moves later would cost a timer per round while inputs
    /// expire one after another (each round's oldest expiry is a little
    /// later than the last).
    fn arm_timer(&mut self) {
        let Some(deadline) = self.parts.core.borrow_mut().next_deadline() else {
            return;
        };
        let deadline = Nanos::from(deadline);
        if self.timer.as_ref().is_some_and(|(due, _)| *due <= deadline) {
            return;
        }
        let now = self.parts.clock.read();
        self.timer = Some((deadline, R::timer(deadline.saturating_sub(now))));
    }

    /// Which idle stage this wait is in, and what the shard awaits (see
    /// `idle.rs`).
    fn stage(&self) -> (Stage, Awaiting) {
        let now = self.parts.clock.latest();
        let idle = &self.parts.idle;
        let due_in = self.timer.as_ref().map(|(due, _)| due.saturating_sub(now));
        let runtime_wakes = self
            .runtime_woke_at
            .is_some_and(|at| now.saturating_sub(at) < RUNTIME_WAKE_MEMORY);
        let in_flight = self.parts.core.borrow().in_flight();
        let typical_batch = self.batches.took.typical();
        let awaiting = idle.awaiting(in_flight, typical_batch, runtime_wakes, self.spin_odds);
        let looks = if self.tasks.get() > 0 {
            Looks::Often
        } else if in_flight > 0 {
            Looks::Growing
        } else {
            Looks::Never
        };
        let idle_for = now.saturating_sub(self.worked_at);
        (idle.stage(idle_for, due_in, awaiting, looks), awaiting)
    }

    /// One look while waiting: anything happened? If not, spin, doze or
    /// park as `stage` says.
    fn poll_wait(&mut self, cx: &mut Context<'_>, stage: Stage) -> Poll<bool> {
        if idle::enter_loop() {
            self.runtime_woke_at = Some(self.parts.clock.read());
        }
        let completed = self.progress();
        if completed || !self.batches.finished.is_empty() || self.parts.wakers.nudge.take() {
            return Poll::Ready(true);
        }
        if let Some((_, timer)) = self.timer.as_mut() {
            if Pin::new(timer).poll(cx).is_ready() {
                self.timer = None;
                return Poll::Ready(true);
            }
        }
        let close_seen = self.closing != Closing::Open;
        let await_seal = self.closing == Closing::Draining;
        let intake = &self.parts.intake;
        match stage {
            Stage::Spin => {
                std::thread::yield_now();
                Poll::Ready(false)
            }
            Stage::Doze(wait) => {
                if !wait.is_zero()
                    && intake.prepare_sleep(&self.parts.wakers.alarm, close_seen, await_seal)
                {
                    self.parts.core.borrow_mut().stats_mut().dozes += 1;
                    std::thread::park_timeout(wait);
                }
                // (`intake.awake()` follows the wait, whatever ended it.)
                Poll::Ready(false)
            }
            Stage::Park => {
                self.parts.wakers.nudge.register(cx.waker());
                if intake.prepare_sleep(cx.waker(), close_seen, await_seal) {
                    self.parts.core.borrow_mut().stats_mut().parks += 1;
                    idle::leave_loop();
                    Poll::Pending
                } else {
                    Poll::Ready(true)
                }
            }
        }
    }

    /// Step 9: lets the other tasks of this thread run: at once if this
    /// round made one ready (a task spawned here, or a local caller
    /// answered), or if the shard is idle (it has nothing better to do, and
    /// a task here may be waiting on a timer or another thread), else once
    /// per `YIELD_EVERY`: a turn of the runtime costs system calls, and
    /// batch completions need none.
    async fn yield_to_runtime(&mut self, woke: bool) {
        let others_ready = self.parts.core.borrow_mut().take_woke_local() || self.spawned;
        let due = self.parts.clock.read().saturating_sub(self.yielded_at) >= YIELD_EVERY;
        if !woke || others_ready || due {
            idle::leave_loop();
            executor::yield_now().await;
            self.yielded_at = self.parts.clock.read();
            if idle::enter_loop() {
                self.runtime_woke_at = Some(self.yielded_at);
            }
        }
    }
}

/// Runs a task sent to this shard beside the loop, counted in `tasks`
/// while it lives. Its panic stays its own: it ends the task, not the
/// shard (G10).
fn spawn_task<R: Executor>(task: crate::thread::inbound::SpawnTask, tasks: &Rc<Cell<usize>>) {
    if let Ok(future) = std::panic::catch_unwind(AssertUnwindSafe(task)) {
        let alive = Alive::new(Rc::clone(tasks));
        R::spawn_local(Box::pin(
            AssertUnwindSafe(future)
                .catch_unwind()
                .map(move |_| drop(alive)),
        ));
    }
}

/// Counts one live task: one more while it is held, one fewer once
/// dropped (with its task, however the task ends).
struct Alive(Rc<Cell<usize>>);

impl Alive {
    fn new(tasks: Rc<Cell<usize>>) -> Self {
        tasks.set(tasks.get() + 1);
        Alive(tasks)
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}
