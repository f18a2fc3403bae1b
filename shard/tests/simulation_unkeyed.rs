//! Deterministic simulation of one unkeyed shard
//! (docs/guarantees.md#unkeyed-batching).
//!
//! The same [`ShardCore`] the shard loop drives, over the unkeyed
//! [`Fifo`], is driven here by a seed with a simulated clock and a simulated
//! batch function: callers submit inputs with weights (some too heavy for
//! any batch), batches take a seeded time and end in a seeded way (outputs,
//! an error, a panic, the wrong number of outputs, or hanging until close),
//! callers drop their answer receivers, and the shard is closed at a seeded
//! moment. Events due at the same moment happen in a seeded order.
//!
//! After every event the run is checked against an independent reference
//! (`sim/unkeyed_reference.rs`: a plain `Vec` of waiting inputs in admission
//! order, readiness from its definition):
//!
//! - G4: every input ends in exactly one outcome, the right one; a refused
//!   input comes back unchanged, at once, with the reason the reference
//!   expects;
//! - FIFO: each batch is exactly the front of what waits, as many inputs as
//!   fit the size and weight bounds; all batches one after the other are
//!   the admitted inputs in admission order;
//! - G6: the waiting count and weight are the reference's and within
//!   `max_waiting` / `max_waiting_weight`;
//! - slots: at most `max_in_flight_batches` batches are out; a slot is never
//!   left free while a batch is ready (the G8 analogue), and while a slot is
//!   free the core's next deadline is never later than the oldest waiting
//!   input's due time (with every slot busy, a completion comes first);
//! - G9: nothing is admitted after close, everything admitted is answered,
//!   and the core ends quiet;
//! - G10: a failed, panicked or miscounted batch fails its own callers only.
//!
//! Three quarters of the seeds also play the overload settings
//! (docs/guarantees.md#flush-overload-and-withdrawal), each on or off by the
//! seed; the others play exactly as before those settings existed:
//!
//! - `max_queue_time`: at each moment the reference says inputs expire,
//!   `expire` answers exactly those `Expired`, the input handed back
//!   unchanged, and the core's next deadline is never later than the next
//!   expiry, whether a slot is free or not;
//! - `withdraw_on_drop`: callers drop their answer receivers at seeded
//!   moments, some sending a withdrawal notice a little later, some none. A
//!   caller gone before its input is taken has it withdrawn, never sent (by
//!   the notice, if it is among the first inputs of the queue, or by the
//!   take that forms its batch); one gone after the take has it sent;
//! - flush requests at seeded moments: each is told exactly once every
//!   input admitted before it is resolved, not before, and not after the
//!   event that resolved the last of them;
//! - after every event: submitted = answered + refused + expired +
//!   withdrawn + open (waiting or in flight), and the core's counters say
//!   the same.
//!
//! `cargo test` plays seeds `0..1000`. More (or other) seeds:
//!
//! ```text
//! FERRY_SIM_SEEDS=1000000 cargo test -p ferry-shard --release --test simulation_unkeyed
//! FERRY_SIM_FIRST=5000000 FERRY_SIM_SEEDS=1000 cargo test -p ferry-shard --test simulation_unkeyed
//! FERRY_SIM_SEED=42 FERRY_SIM_TRACE=1 cargo test -p ferry-shard --test simulation_unkeyed -- --nocapture
//! ```
//!
//! A failing seed prints the one command that replays it.

#[path = "sim/answer.rs"]
mod answer;
#[path = "sim/flushes.rs"]
mod flushes;
#[path = "sim/rng.rs"]
mod rng;
#[path = "sim/seeds.rs"]
mod seeds;
#[path = "sim/unkeyed_reference.rs"]
mod unkeyed_reference;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use ferry_shard::parts::{answer_cell, BatchOutcome, Fifo, Offer, Reply, ShardCore, Waiter};
use ferry_shard::{FerryError, QueueConfig, Refused};

use answer::{try_answer, Caller, Dropped};
use flushes::Flushes;
use rng::Rng;
use seeds::Tally;
use unkeyed_reference::{Bounds, Reference, Take, NOTICE_SCAN};

/// Events one seed may take before the run counts as stuck.
const STEPS_MAX: usize = 200_000;

/// One caller's input. `payload` makes "handed back unchanged" mean more
/// than an equal number.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Input {
    id: u64,
    payload: String,
    /// Shared by every copy of this input: the scenario keeps one, so a
    /// count of one means no one else (the core, a batch, an answer) holds
    /// the input any more.
    copies: Arc<()>,
}

impl Input {
    /// The output the simulated store gives for this input.
    fn output(&self) -> u64 {
        self.id * 7 + 3
    }

    /// Whether some copy besides the scenario's own is still alive.
    fn is_held(&self) -> bool {
        Arc::strong_count(&self.copies) > 1
    }
}

type Output = u64;
/// A failed batch's error is the batch's number, so a caller can tell whose
/// failure it was given (G10).
type BatchError = u64;
type Core = ShardCore<Fifo<Waiter<Input, Output, BatchError>>, Input, Output, BatchError>;
type Answer = Caller<Input, Output, BatchError>;

/// Simulated time is counted in ticks of one microsecond.
fn at(tick: u64) -> Duration {
    Duration::from_micros(tick)
}

#[derive(Clone, Debug)]
struct Arrival {
    tick: u64,
    input: Input,
    weight: u64,
    /// The caller drops its answer receiver right after submitting.
    drops_at_once: bool,
    /// The caller drops its answer receiver this many ticks after
    /// submitting.
    drops_after: Option<u64>,
}

/// The overload settings and moments of one seed, drawn from a generator
/// of their own so that a seed with none of them (a *plain* seed) plays
/// exactly the run it played before they existed.
#[derive(Clone, Debug, Default)]
struct Overload {
    /// `max_queue_time`, in ticks.
    queue_time: Option<u64>,
    withdraw_on_drop: bool,
    /// Percent chance that a caller who drops its receiver sends a
    /// withdrawal notice, which reaches the shard `0..=notice_lag_max`
    /// ticks later. The other drops are only found when their batch is
    /// formed.
    notice_percent: u64,
    notice_lag_max: u64,
    /// Percent of callers who drop their receivers some time after
    /// submitting.
    drop_percent: u64,
    /// When flushes are requested, in ascending order.
    flush_ticks: Vec<u64>,
}

impl Overload {
    fn is_plain(&self) -> bool {
        self.queue_time.is_none()
            && !self.withdraw_on_drop
            && self.notice_percent == 0
            && self.drop_percent == 0
            && self.flush_ticks.is_empty()
    }

    /// A quarter of the seeds are plain; the others turn each setting on
    /// or off on their own.
    fn generate(rng: &mut Rng) -> Self {
        if rng.chance(25) {
            return Self::default();
        }
        let flush_ticks = if rng.chance(60) {
            let count = rng.range(1, 8);
            let mut ticks: Vec<u64> = (0..count).map(|_| rng.range(0, 400)).collect();
            ticks.sort_unstable();
            ticks
        } else {
            Vec::new()
        };
        Self {
            queue_time: rng.chance(50).then(|| rng.range(1, 40)),
            withdraw_on_drop: rng.chance(60),
            notice_percent: if rng.chance(80) {
                rng.range(20, 100)
            } else {
                0
            },
            notice_lag_max: rng.range(0, 10),
            drop_percent: rng.range(1, 30),
            flush_ticks,
        }
    }
}

/// What one seed plays.
#[derive(Clone, Debug)]
struct Scenario {
    config: QueueConfig,
    bounds: Bounds,
    arrivals: Vec<Arrival>,
    /// `None`: closed only once nothing else is left to happen.
    close_tick: Option<u64>,
    /// Percent chance, at each quiet moment, that one waiting caller drops
    /// its answer receiver.
    drop_percent: u64,
    /// Latest batch latency, in ticks.
    latency_max: u64,
    overload: Overload,
}

impl Scenario {
    /// The scenario of a seed: `rng` draws what plain seeds always drew, in
    /// the same order; `extra` draws the overload settings and moments.
    fn generate(rng: &mut Rng, extra: &mut Rng) -> Self {
        let overload = Overload::generate(extra);
        let batch_size_max = if rng.chance(10) {
            64
        } else {
            rng.range(1, 6) as usize
        };
        let batch_weight_max = if rng.chance(50) {
            u64::MAX
        } else {
            rng.range(2, 8)
        };
        let delay = if rng.chance(40) { 0 } else { rng.range(1, 20) };
        let queueing_max = if rng.chance(50) {
            1_000_000
        } else {
            rng.range(1, 30) as usize
        };
        let queued_weight_max = if rng.chance(70) {
            u64::MAX
        } else {
            rng.range(3, 40)
        };
        // Some seeds end with a burst and no bound to stop it, so that the
        // queue grows past what one withdrawal notice looks at, and many of
        // those callers leave.
        let deep = overload.withdraw_on_drop && extra.chance(30);
        let (queueing_max, queued_weight_max) = if deep {
            (1_000_000, u64::MAX)
        } else {
            (queueing_max, queued_weight_max)
        };
        let bounds = Bounds {
            batch_size_max,
            batch_weight_max,
            queueing_max,
            queued_weight_max,
            delay,
            slots: rng.range(1, 4) as usize,
            queue_time: overload.queue_time,
        };
        let config = QueueConfig {
            max_batch_size: batch_size_max,
            max_batch_weight: batch_weight_max,
            max_batch_delay: at(delay),
            max_waiting: queueing_max,
            max_waiting_weight: queued_weight_max,
            max_queue_time: overload.queue_time.map(at),
            withdraw_on_drop: overload.withdraw_on_drop,
            ..QueueConfig::default()
        };
        let burst_percent = rng.range(0, 70);
        let gap_max = rng.range(1, 12);
        let count_before_burst = rng.range(10, 150);
        let count = if deep {
            count_before_burst + extra.range(150, 300)
        } else {
            count_before_burst
        };
        let drop_percent = if deep { 40 } else { overload.drop_percent };
        let mut tick = 0;
        let mut arrivals = Vec::with_capacity(count as usize);
        for id in 0..count {
            if id < count_before_burst && !rng.chance(burst_percent) {
                tick += rng.range(1, gap_max);
            }
            let weight = if batch_weight_max != u64::MAX && rng.chance(4) {
                batch_weight_max + 1
            } else {
                rng.range(1, 3)
            };
            arrivals.push(Arrival {
                tick,
                input: Input {
                    id,
                    payload: format!("input {id} of weight {weight}"),
                    copies: Arc::new(()),
                },
                weight,
                drops_at_once: rng.chance(5),
                drops_after: extra.chance(drop_percent).then(|| extra.range(0, 40)),
            });
        }
        let close_tick = if rng.chance(10) {
            None
        } else {
            Some(rng.range(0, tick + 40))
        };
        Self {
            config,
            bounds,
            arrivals,
            close_tick,
            drop_percent: rng.range(0, 30),
            latency_max: rng.range(0, 30),
            overload,
        }
    }
}

/// How a batch ends, as the batch function decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    Ok,
    Fail,
    Panic,
    /// Returns this many outputs, never the right number.
    WrongCount(usize),
    /// Does not finish before the shard is closed.
    HangUntilClose,
}

impl Plan {
    /// The batch function's choice for a batch of `len` inputs.
    fn draw(rng: &mut Rng, len: usize) -> Self {
        match rng.below(100) {
            0..=69 => Plan::Ok,
            70..=77 => Plan::Fail,
            78..=85 => Plan::Panic,
            86..=92 => {
                let got = rng.range(0, len as u64 + 2) as usize;
                Plan::WrongCount(if got == len { len + 1 } else { got })
            }
            _ => Plan::HangUntilClose,
        }
    }
}

/// A batch the simulated batch function is working on.
struct Running {
    batch: u64,
    inputs: Vec<Input>,
    replies: Vec<Reply<Input, Output, BatchError>>,
    plan: Plan,
    latency: u64,
    /// `None` while it hangs until close.
    finish: Option<u64>,
}

/// What happened in one run, summed over seeds to show the simulation
/// reached every case it claims to check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Summary {
    admitted: u64,
    refused_full: u64,
    refused_too_heavy: u64,
    refused_closed: u64,
    batches: u64,
    /// Batches of more than one input.
    batches_grouped: u64,
    /// Batches cut short by the weight bound.
    batches_cut_by_weight: u64,
    /// Batches that went because their oldest input was due.
    batches_due: u64,
    /// Batches started while another was out (several slots at work).
    batches_beside_another: u64,
    /// Quiet moments with a batch ready and every slot busy.
    ready_without_a_slot: u64,
    failed: u64,
    panicked: u64,
    wrong_count: u64,
    hung_until_close: u64,
    dropped_callers: u64,
    /// Inputs still waiting or in flight when close came.
    open_at_close: u64,
    end_tick: u64,
    /// Seeds with none of the overload settings.
    plain_seeds: u64,
    expired: u64,
    withdrawn_by_notice: u64,
    withdrawn_at_take: u64,
    /// Batches formed of inputs of gone callers only: nothing sent.
    batches_withdrawn_whole: u64,
    /// Notices that left an input of a gone caller past the part of the
    /// queue a notice looks at.
    notices_past_their_scan: u64,
    /// Notices while `withdraw_on_drop` is off: they withdraw nothing.
    notices_ignored: u64,
    /// Inputs sent although their callers left once they were taken.
    sent_after_drop: u64,
    flushes: u64,
    flushes_told: u64,
    /// Of those, flushes that had inputs to wait for.
    flushes_told_after_waiting: u64,
}

impl Tally for Summary {
    fn add(&mut self, other: &Summary) {
        self.admitted += other.admitted;
        self.refused_full += other.refused_full;
        self.refused_too_heavy += other.refused_too_heavy;
        self.refused_closed += other.refused_closed;
        self.batches += other.batches;
        self.batches_grouped += other.batches_grouped;
        self.batches_cut_by_weight += other.batches_cut_by_weight;
        self.batches_due += other.batches_due;
        self.batches_beside_another += other.batches_beside_another;
        self.ready_without_a_slot += other.ready_without_a_slot;
        self.failed += other.failed;
        self.panicked += other.panicked;
        self.wrong_count += other.wrong_count;
        self.hung_until_close += other.hung_until_close;
        self.dropped_callers += other.dropped_callers;
        self.open_at_close += other.open_at_close;
        self.end_tick += other.end_tick;
        self.plain_seeds += other.plain_seeds;
        self.expired += other.expired;
        self.withdrawn_by_notice += other.withdrawn_by_notice;
        self.withdrawn_at_take += other.withdrawn_at_take;
        self.batches_withdrawn_whole += other.batches_withdrawn_whole;
        self.notices_past_their_scan += other.notices_past_their_scan;
        self.notices_ignored += other.notices_ignored;
        self.sent_after_drop += other.sent_after_drop;
        self.flushes += other.flushes;
        self.flushes_told += other.flushes_told;
        self.flushes_told_after_waiting += other.flushes_told_after_waiting;
    }
}

#[derive(Clone, Copy, Debug)]
enum Action {
    Admit,
    Complete,
    Dispatch,
    Close,
    Expire,
    Notice,
    Drop,
    Flush,
}

struct Sim {
    scenario: Scenario,
    rng: Rng,
    core: Core,
    reference: Reference,
    now: u64,
    arrival_next: usize,
    closed: bool,
    close_tick: Option<u64>,
    running: Vec<Running>,
    batch_next: u64,
    /// Callers of admitted, unanswered inputs that still wait, by input id.
    callers: BTreeMap<u64, Answer>,
    /// Admitted inputs not resolved yet (waiting or in flight).
    open: BTreeSet<u64>,
    answered: BTreeSet<u64>,
    refused: BTreeSet<u64>,
    expired: BTreeSet<u64>,
    withdrawn: BTreeSet<u64>,
    /// Open inputs whose callers dropped their receivers.
    gone: BTreeSet<u64>,
    /// Inputs submitted so far, and of those refused by the closed intake
    /// before the core saw them.
    submitted: u64,
    refused_at_intake: u64,
    /// Draws for the overload moments during the run, so that plain seeds
    /// draw from `rng` exactly as before.
    extra: Rng,
    /// Callers who will drop their receivers: (tick, input id).
    drops: Vec<(u64, u64)>,
    /// Withdrawal notices on their way to the core, by arrival tick.
    notices: Vec<u64>,
    flushes: Flushes,
    /// Admitted inputs, in admission order, and sent inputs, in the order
    /// their batches started: FIFO says they end up equal.
    admitted_order: Vec<u64>,
    sent_order: Vec<u64>,
    summary: Summary,
    trace: bool,
}

macro_rules! trace {
    ($sim:expr, $($arg:tt)*) => {
        if $sim.trace {
            eprintln!("[t={:>4}] {}", $sim.now, format!($($arg)*));
        }
    };
}

macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

impl Sim {
    fn new(seed: u64, trace: bool) -> Self {
        let mut rng = Rng::new(seed);
        let mut extra = Rng::new(seed ^ 0x0ee1_0ad5_eed5_0f7e);
        let scenario = Scenario::generate(&mut rng, &mut extra);
        let reference = Reference::new(scenario.bounds.clone());
        let core = Core::new(scenario.config.clone(), scenario.bounds.slots);
        Self {
            close_tick: scenario.close_tick,
            scenario,
            rng,
            core,
            reference,
            now: 0,
            arrival_next: 0,
            closed: false,
            running: Vec::new(),
            batch_next: 0,
            callers: BTreeMap::new(),
            open: BTreeSet::new(),
            answered: BTreeSet::new(),
            refused: BTreeSet::new(),
            expired: BTreeSet::new(),
            withdrawn: BTreeSet::new(),
            gone: BTreeSet::new(),
            submitted: 0,
            refused_at_intake: 0,
            extra,
            drops: Vec::new(),
            notices: Vec::new(),
            flushes: Flushes::default(),
            admitted_order: Vec::new(),
            sent_order: Vec::new(),
            summary: Summary::default(),
            trace,
        }
    }

    fn run(mut self) -> Result<Summary, String> {
        if self.trace {
            eprintln!(
                "scenario: {:?}, {} inputs, close at {:?}, {:?}",
                self.scenario.bounds,
                self.scenario.arrivals.len(),
                self.close_tick,
                self.scenario.overload
            );
        }
        self.summary.plain_seeds = u64::from(self.scenario.overload.is_plain());
        let mut steps = 0;
        loop {
            // Everything due now, in a seeded order; dispatch is tried until
            // it has nothing more to give.
            let mut dispatch_tried = false;
            loop {
                steps += 1;
                ensure!(steps <= STEPS_MAX, "no end after {STEPS_MAX} events");
                let mut enabled = Vec::with_capacity(4);
                if self.arrival_due() {
                    enabled.push(Action::Admit);
                }
                if self
                    .running
                    .iter()
                    .any(|r| r.finish.is_some_and(|f| f <= self.now))
                {
                    enabled.push(Action::Complete);
                }
                if !self.closed && self.close_tick.is_some_and(|c| c <= self.now) {
                    enabled.push(Action::Close);
                }
                if !dispatch_tried {
                    enabled.push(Action::Dispatch);
                }
                // The overload events; none is ever enabled in a plain seed.
                if self.reference.next_expiry().is_some_and(|t| t <= self.now) {
                    enabled.push(Action::Expire);
                }
                if self.notices.iter().any(|&t| t <= self.now) {
                    enabled.push(Action::Notice);
                }
                if self.drops.iter().any(|&(t, _)| t <= self.now) {
                    enabled.push(Action::Drop);
                }
                if self.flush_due() {
                    enabled.push(Action::Flush);
                }
                if enabled.is_empty() {
                    break;
                }
                let action = enabled[self.rng.below(enabled.len())];
                dispatch_tried = false;
                match action {
                    Action::Admit => self.admit()?,
                    Action::Complete => self.complete()?,
                    Action::Close => self.close(),
                    Action::Dispatch => dispatch_tried = !self.dispatch()?,
                    Action::Expire => self.expire()?,
                    Action::Notice => self.notice()?,
                    Action::Drop => self.drop_due_caller(),
                    Action::Flush => self.flush(),
                }
                self.settle_flushes()?;
                self.check_counts()?;
            }
            self.check_quiet_moment()?;
            self.maybe_drop_a_caller();

            match self.next_tick()? {
                Some(tick) => {
                    debug_assert!(tick > self.now);
                    self.now = tick;
                }
                None if self.all_done() => break,
                None if !self.closed => {
                    // Nothing else will happen: close now.
                    self.close_tick = Some(self.now);
                }
                None => {
                    return Err(format!(
                        "G9: stuck after close: {} in flight, {} waiting, nothing scheduled",
                        self.core.in_flight(),
                        self.core.queue().waiting()
                    ))
                }
            }
        }
        self.check_end()?;
        self.summary.end_tick = self.now;
        Ok(self.summary)
    }

    fn arrival_due(&self) -> bool {
        self.scenario
            .arrivals
            .get(self.arrival_next)
            .is_some_and(|a| a.tick <= self.now)
    }

    fn all_done(&self) -> bool {
        self.arrival_next == self.scenario.arrivals.len()
            && self.running.is_empty()
            && self.closed
            && self.drops.is_empty()
            && self.notices.is_empty()
            && self.flushes.requested() == self.scenario.overload.flush_ticks.len()
    }

    fn flush_due(&self) -> bool {
        self.scenario
            .overload
            .flush_ticks
            .get(self.flushes.requested())
            .is_some_and(|&t| t <= self.now)
    }

    /// The next moment something happens, checking on the way that, while a
    /// slot is free, the core's next deadline is never later than the
    /// oldest waiting input's due time. With every slot busy the core waits
    /// for a completion instead, and then looks at the time.
    fn next_tick(&mut self) -> Result<Option<u64>, String> {
        let deadline = self.core.next_deadline().map(|d| d.as_micros() as u64);
        let reference = &self.reference;
        let slot_free = reference.in_flight < reference.bounds.slots;
        let timed = !reference.closed && reference.bounds.delay > 0;
        if let Some(due) = reference.oldest_due().filter(|_| slot_free && timed) {
            ensure!(
                deadline.is_some_and(|d| d <= due),
                "latency: the oldest input is due at {due}, a slot is free, \
                 the core's next deadline is {deadline:?}"
            );
        }
        // Expiry does not wait for a slot.
        let expiry = reference.next_expiry();
        if let Some(expiry) = expiry {
            ensure!(
                deadline.is_some_and(|d| d <= expiry),
                "max_queue_time: an input expires at {expiry}, the core's next deadline is {deadline:?}"
            );
        }
        let candidates = [
            self.scenario
                .arrivals
                .get(self.arrival_next)
                .map(|a| a.tick),
            self.running.iter().filter_map(|r| r.finish).min(),
            self.close_tick.filter(|_| !self.closed),
            deadline.filter(|&d| d > self.now),
            expiry,
            self.notices.iter().copied().min(),
            self.drops.iter().map(|&(t, _)| t).min(),
            self.scenario
                .overload
                .flush_ticks
                .get(self.flushes.requested())
                .copied(),
        ];
        Ok(candidates.into_iter().flatten().min())
    }

    fn admit(&mut self) -> Result<(), String> {
        let arrival = self.scenario.arrivals[self.arrival_next].clone();
        self.arrival_next += 1;
        let id = arrival.input.id;
        self.submitted += 1;

        // After close the intake refuses on its own, before the core sees
        // the input; some inputs still reach the core, which must refuse
        // them too.
        if self.closed && self.rng.chance(50) {
            trace!(self, "input {id} refused at the closed intake");
            self.refused.insert(id);
            self.refused_at_intake += 1;
            self.summary.refused_closed += 1;
            return Ok(());
        }
        let expected_refusal = self.reference.refusal(arrival.weight);
        let admitted_before = self.core.stats().admitted;
        let mut answer = self.submit(&arrival);
        let mut caller_waits = true;
        if arrival.drops_at_once {
            drop(answer);
            answer = Caller::One(answer_cell().1);
            caller_waits = false;
            self.summary.dropped_callers += 1;
        }
        // A `submit_many` caller's answers wait for the round's delivery.
        self.core.deliver();
        let admitted = self.core.stats().admitted == admitted_before + 1;
        match expected_refusal {
            Some(reason) => {
                ensure!(
                    !admitted,
                    "G6/G9: input {id} (weight {}) admitted; the reference refuses it: {reason:?}",
                    arrival.weight
                );
                self.check_refusal(&arrival, answer, caller_waits, reason)?;
                self.reference.refused += 1;
                self.refused.insert(id);
                match reason {
                    Refused::Full => self.summary.refused_full += 1,
                    Refused::TooHeavy => self.summary.refused_too_heavy += 1,
                    Refused::Closed => self.summary.refused_closed += 1,
                    Refused::KeyFull | Refused::Late => {
                        unreachable!("the reference refuses no key and holds nothing")
                    }
                }
                trace!(
                    self,
                    "input {id} (weight {}) refused: {reason:?}",
                    arrival.weight
                );
            }
            None => {
                ensure!(
                    admitted,
                    "G6: input {id} (weight {}) refused; the reference admits it \
                     ({} waiting, weight {})",
                    arrival.weight,
                    self.reference.waiting.len(),
                    self.reference.waiting_weight()
                );
                if caller_waits {
                    ensure!(
                        matches!(try_answer(&mut answer), Ok(None)),
                        "G4: input {id} answered at admission"
                    );
                    self.callers.insert(id, answer);
                }
                trace!(self, "input {id} (weight {}) admitted", arrival.weight);
                self.reference.admit(id, arrival.weight, self.now);
                self.open.insert(id);
                self.admitted_order.push(id);
                self.summary.admitted += 1;
                if !caller_waits {
                    self.caller_gone(id, 0);
                }
                if let Some(after) = arrival.drops_after {
                    self.drops.push((self.now + after, id));
                }
            }
        }
        Ok(())
    }

    /// The caller of open input `id` dropped its receiver: with
    /// `withdraw_on_drop` the input is now the core's to withdraw, if it
    /// still waits, and a notice may be on its way, arriving at least
    /// `lag_min` ticks later.
    fn caller_gone(&mut self, id: u64, lag_min: u64) {
        if !self.open.contains(&id) {
            return;
        }
        self.gone.insert(id);
        let overload = &self.scenario.overload;
        if overload.notice_percent > 0 && self.extra.chance(overload.notice_percent) {
            let lag = lag_min + self.extra.range(0, overload.notice_lag_max);
            self.notices.push(self.now + lag);
        }
    }

    /// A caller whose time came drops its receiver.
    fn drop_due_caller(&mut self) {
        let at_ = self
            .drops
            .iter()
            .position(|&(t, _)| t <= self.now)
            .expect("a drop is due");
        let (_, id) = self.drops.swap_remove(at_);
        if self.callers.remove(&id).is_some() {
            trace!(self, "caller of input {id} drops its answer receiver");
            self.summary.dropped_callers += 1;
            self.caller_gone(id, 0);
        }
    }

    /// G4: a refused input is handed back at once, unchanged, with the
    /// reason the reference expects.
    /// Hands `arrival` to the core as `submit` would, or, for every fourth
    /// input, as the one input of a `submit_many` call.
    fn submit(&mut self, arrival: &Arrival) -> Answer {
        let offer = Offer {
            hash: 0,
            key: (),
            input: arrival.input.clone(),
            rank: 0,
            weight: arrival.weight,
            boundary: 0,
        };
        let many = arrival.input.id % 4 == 3;
        answer::submit(&mut self.core, offer, at(self.now), many)
    }

    fn check_refusal(
        &self,
        arrival: &Arrival,
        mut answer: Answer,
        caller_waits: bool,
        expected: Refused,
    ) -> Result<(), String> {
        let id = arrival.input.id;
        if !caller_waits {
            return Ok(());
        }
        match try_answer(&mut answer) {
            Ok(Some(Err(FerryError::Refused { input, reason }))) => {
                ensure!(
                    input == arrival.input,
                    "G4: input {id} handed back changed: {input:?}"
                );
                ensure!(
                    reason == expected,
                    "G6: input {id} refused as {reason:?}, the reference says {expected:?}"
                );
                Ok(())
            }
            other => Err(format!(
                "G4: refused input {id} not handed back at once: {other:?}"
            )),
        }
    }

    /// Asks the core for a batch; `false` if it had none to give, which must
    /// be exactly when the reference has none ready or no slot free.
    fn dispatch(&mut self) -> Result<bool, String> {
        let must = self.reference.must_dispatch(self.now);
        let ready_before = self.reference.is_ready(self.now);
        let only_due = self.reference.only_due(self.now);
        let (_, cut_by_weight) = self.reference.expected_batch();
        let (waiting_before, in_flight_before) =
            (self.reference.waiting.len(), self.reference.in_flight);
        let slot_free = in_flight_before < self.reference.bounds.slots;
        let beside_another = in_flight_before > 0;
        // What the take may withdraw: waiting inputs of gone callers.
        let withdrawable: BTreeSet<u64> = if self.scenario.config.withdraw_on_drop {
            let waiting: BTreeSet<u64> = self.reference.waiting.iter().map(|w| w.id).collect();
            self.gone.intersection(&waiting).copied().collect()
        } else {
            BTreeSet::new()
        };
        let withdrawn_before = self.core.stats().withdrawn;
        let dispatch = self.core.dispatch(at(self.now));
        // With a slot free the core takes while a batch is ready; with
        // none it does not look.
        let want = if slot_free {
            self.reference.take(self.now, &withdrawable)
        } else {
            Take::default()
        };
        self.check_withdrawn_at_take(&want, &withdrawable, withdrawn_before)?;
        let Some(dispatch) = dispatch else {
            ensure!(
                want.sent.is_none(),
                "slots: a batch is ready ({waiting_before} waiting) and {in_flight_before} of {} \
                 slots are busy, but the core dispatched nothing; the reference sends {:?}",
                self.reference.bounds.slots,
                want.sent
            );
            return Ok(false);
        };
        let ids: Vec<u64> = dispatch.inputs.iter().map(|i| i.id).collect();
        trace!(self, "dispatch {ids:?}");
        ensure!(
            must,
            "slots/latency: dispatched {ids:?} with {in_flight_before} of {} slots busy, \
             ready: {ready_before}",
            self.reference.bounds.slots
        );
        ensure!(
            dispatch.replies.len() == ids.len(),
            "a batch of {} inputs with {} replies",
            ids.len(),
            dispatch.replies.len()
        );
        for input in &dispatch.inputs {
            let original = &self.scenario.arrivals[input.id as usize].input;
            ensure!(
                input == original,
                "input {} changed on its way: {input:?}",
                input.id
            );
            ensure!(
                self.open.contains(&input.id),
                "G4: input {} sent but not open (sent twice, or never admitted)",
                input.id
            );
        }
        let expected = want.sent.clone().unwrap_or_default();
        ensure!(
            ids == expected,
            "FIFO: sent {ids:?}; the front of the queue, as much as fits, less the inputs of \
             gone callers, is {expected:?} (the take withdraws {:?})",
            want.withdrawn
        );
        if beside_another {
            self.summary.batches_beside_another += 1;
        }
        self.sent_order.extend(&ids);
        self.summary.batches += 1;
        self.summary.batches_grouped += u64::from(ids.len() > 1);
        // Whether the batch was cut short, or went only because it was due,
        // is known of the first batch the take formed.
        if want.withdrawn.is_empty() {
            self.summary.batches_cut_by_weight += u64::from(cut_by_weight);
            self.summary.batches_due += u64::from(only_due);
        }

        let batch = self.batch_next;
        self.batch_next += 1;
        let plan = Plan::draw(&mut self.rng, ids.len());
        let latency = self.rng.range(0, self.scenario.latency_max);
        let finish = match plan {
            Plan::HangUntilClose if !self.closed => None,
            _ => Some(self.now + latency),
        };
        trace!(self, "batch {batch} will end {plan:?} at {finish:?}");
        self.running.push(Running {
            batch,
            inputs: dispatch.inputs,
            replies: dispatch.replies,
            plan,
            latency,
            finish,
        });
        Ok(true)
    }

    /// The inputs the core let go of in a take are exactly those the
    /// reference withdraws, and it counts them.
    fn check_withdrawn_at_take(
        &mut self,
        want: &Take,
        withdrawable: &BTreeSet<u64>,
        withdrawn_before: u64,
    ) -> Result<(), String> {
        let counted = self.core.stats().withdrawn - withdrawn_before;
        ensure!(
            counted == want.withdrawn.len() as u64,
            "withdraw_on_drop: the core counts {counted} withdrawn at a take; the reference \
             withdraws {:?}",
            want.withdrawn
        );
        for &id in withdrawable {
            let held = self.scenario.arrivals[id as usize].input.is_held();
            ensure!(
                held != want.withdrawn.contains(&id),
                "withdraw_on_drop: after a take, input {id} of a gone caller is {} by the core; \
                 the reference withdraws {:?}",
                if held { "still held" } else { "let go" },
                want.withdrawn
            );
        }
        if !want.withdrawn.is_empty() {
            trace!(self, "the take withdraws {:?}", want.withdrawn);
        }
        self.resolve_withdrawn(&want.withdrawn);
        self.summary.withdrawn_at_take += want.withdrawn.len() as u64;
        self.summary.batches_withdrawn_whole += want.batches_withdrawn_whole;
        Ok(())
    }

    /// `ids` were withdrawn: never sent, resolved.
    fn resolve_withdrawn(&mut self, ids: &[u64]) {
        for &id in ids {
            let was_open = self.open.remove(&id);
            debug_assert!(was_open, "input {id} withdrawn but not open");
            self.gone.remove(&id);
            self.withdrawn.insert(id);
        }
    }

    /// The inputs whose queue time passed are answered `Expired`, exactly
    /// those the reference names, each handed back unchanged.
    fn expire(&mut self) -> Result<(), String> {
        let expected = self.reference.expire(self.now);
        let before = self.core.stats().expired;
        self.core.expire(at(self.now));
        self.core.deliver();
        let counted = self.core.stats().expired - before;
        ensure!(
            counted == expected.len() as u64,
            "max_queue_time: {counted} inputs expired, the reference expects {expected:?}"
        );
        trace!(self, "expired: {expected:?}");
        for &id in &expected {
            ensure!(
                self.open.remove(&id),
                "G4: input {id} expired but it was not open"
            );
            self.expired.insert(id);
            self.gone.remove(&id);
            if let Some(mut answer) = self.callers.remove(&id) {
                let original = &self.scenario.arrivals[id as usize].input;
                match try_answer(&mut answer) {
                    Ok(Some(Err(FerryError::Expired { input }))) => {
                        ensure!(
                            input == *original,
                            "G4: input {id} handed back changed: {input:?}"
                        );
                    }
                    other => {
                        return Err(format!(
                            "max_queue_time: input {id} expired; its caller got {other:?}"
                        ))
                    }
                }
            }
            ensure!(
                !self.scenario.arrivals[id as usize].input.is_held(),
                "max_queue_time: input {id} expired but is still held"
            );
        }
        self.summary.expired += expected.len() as u64;
        Ok(())
    }

    /// A withdrawal notice reaches the core: with `withdraw_on_drop`, the
    /// inputs of gone callers among the first ones of the queue are
    /// withdrawn, and no other; without, nothing.
    fn notice(&mut self) -> Result<(), String> {
        let due = self
            .notices
            .iter()
            .position(|&t| t <= self.now)
            .expect("a notice is due");
        self.notices.swap_remove(due);
        let withdraws = self.scenario.config.withdraw_on_drop;
        let gone_waiting: Vec<u64> = self
            .reference
            .waiting
            .iter()
            .map(|w| w.id)
            .filter(|id| self.gone.contains(id))
            .collect();
        let expected = if withdraws {
            self.reference.notice(&self.gone)
        } else {
            Vec::new()
        };
        let before = self.core.stats().withdrawn;
        self.core.withdraw(0);
        self.core.deliver();
        let counted = self.core.stats().withdrawn - before;
        trace!(self, "notice: withdraws {expected:?}");
        ensure!(
            counted == expected.len() as u64,
            "withdraw_on_drop: a notice withdrew {counted} inputs; the reference expects \
             {expected:?} (the first {NOTICE_SCAN} waiting whose callers are gone)"
        );
        for &id in &gone_waiting {
            let held = self.scenario.arrivals[id as usize].input.is_held();
            ensure!(
                held != expected.contains(&id),
                "withdraw_on_drop: after a notice, input {id} is {} by the core; the reference \
                 withdraws {expected:?}",
                if held { "still held" } else { "let go" }
            );
        }
        self.resolve_withdrawn(&expected);
        self.summary.withdrawn_by_notice += expected.len() as u64;
        self.summary.notices_ignored += u64::from(!withdraws);
        self.summary.notices_past_their_scan +=
            u64::from(withdraws && gone_waiting.len() > expected.len());
        Ok(())
    }

    /// A flush is requested: it waits for every input open now.
    fn flush(&mut self) {
        let number = self.flushes.request(&mut self.core, self.now, &self.open);
        trace!(self, "flush {number} waits for {:?}", self.open);
        self.summary.flushes += 1;
    }

    /// After every event: the flushes told so far (see `sim/flushes.rs`).
    fn settle_flushes(&mut self) -> Result<(), String> {
        let told = self.flushes.settle(&mut self.core, &self.open)?;
        self.summary.flushes_told += told.flushes;
        self.summary.flushes_told_after_waiting += told.after_waiting;
        Ok(())
    }

    /// After every event, the accounting of
    /// docs/guarantees.md#flush-overload-and-withdrawal: every input
    /// submitted so far is answered, refused, expired, withdrawn or still
    /// open, and the open ones are exactly those waiting and those in
    /// flight; the core's
    /// own counters say the same.
    fn check_accounting(&self) -> Result<(), String> {
        let in_flight: usize = self.running.iter().map(|r| r.inputs.len()).sum();
        let waiting = self.reference.waiting.len();
        ensure!(
            self.open.len() == waiting + in_flight,
            "accounting: {} inputs open, but {waiting} wait and {in_flight} are in flight",
            self.open.len()
        );
        let (answered, refused, expired, withdrawn, open) = (
            self.answered.len(),
            self.refused.len(),
            self.expired.len(),
            self.withdrawn.len(),
            self.open.len(),
        );
        ensure!(
            self.submitted as usize == answered + refused + expired + withdrawn + open,
            "accounting: {} submitted, but {answered} answered + {refused} refused + {expired} \
             expired + {withdrawn} withdrawn + {open} open",
            self.submitted
        );
        let stats = self.core.stats();
        ensure!(
            stats.admitted + stats.refused + self.refused_at_intake == self.submitted,
            "accounting: the core admitted {} and refused {} (and the intake {}) of {} submitted",
            stats.admitted,
            stats.refused,
            self.refused_at_intake,
            self.submitted
        );
        ensure!(
            stats.admitted
                == stats.answered
                    + stats.expired
                    + stats.withdrawn
                    + stats.waiting
                    + (stats.sent - stats.answered)
                && stats.sent - stats.answered == in_flight as u64,
            "accounting: the core admitted {}, answered {}, expired {}, withdrawn {}, has {} \
             waiting and {} sent but unanswered ({in_flight} in flight)",
            stats.admitted,
            stats.answered,
            stats.expired,
            stats.withdrawn,
            stats.waiting,
            stats.sent - stats.answered
        );
        Ok(())
    }

    fn complete(&mut self) -> Result<(), String> {
        let finished: Vec<usize> = (0..self.running.len())
            .filter(|&i| self.running[i].finish.is_some_and(|f| f <= self.now))
            .collect();
        let running = self
            .running
            .swap_remove(finished[self.rng.below(finished.len())]);
        let len = running.inputs.len();
        let outcome = match running.plan {
            Plan::Ok | Plan::HangUntilClose => {
                BatchOutcome::Returned(Ok(running.inputs.iter().map(Input::output).collect()))
            }
            Plan::Fail => BatchOutcome::Returned(Err(running.batch)),
            Plan::Panic => BatchOutcome::Panicked,
            Plan::WrongCount(got) => BatchOutcome::Returned(Ok((0..got as u64).collect())),
        };
        match running.plan {
            Plan::Fail => self.summary.failed += 1,
            Plan::Panic => self.summary.panicked += 1,
            Plan::WrongCount(_) => self.summary.wrong_count += 1,
            Plan::HangUntilClose => self.summary.hung_until_close += 1,
            Plan::Ok => {}
        }
        trace!(self, "batch {} completes {:?}", running.batch, running.plan);
        // The shard loop uses both ways: `complete` for a batch done on its
        // first poll, `release` then `answer` for one that finished later.
        if self.rng.below(2) == 0 {
            self.core
                .complete((), running.replies, outcome, at(self.now));
        } else {
            self.core.release((), at(self.now));
            self.core.answer(running.replies, outcome);
        }
        self.core.deliver();
        self.reference.complete(len);

        // G4, G10: each caller of this batch, and only they, hear of it now.
        for input in &running.inputs {
            let id = input.id;
            ensure!(self.open.remove(&id), "G4: input {id} answered twice");
            self.answered.insert(id);
            if self.gone.remove(&id) && self.scenario.config.withdraw_on_drop {
                // Its caller left after the take: sent all the same.
                self.summary.sent_after_drop += 1;
            }
            let Some(mut answer) = self.callers.remove(&id) else {
                continue;
            };
            let got = match try_answer(&mut answer) {
                Ok(Some(got)) => got,
                Ok(None) => {
                    return Err(format!(
                        "G4: input {id} not answered when its batch {} completed",
                        running.batch
                    ))
                }
                Err(Dropped) => {
                    return Err(format!(
                        "G4: input {id}'s reply dropped without an answer (batch {} ended {:?})",
                        running.batch, running.plan
                    ))
                }
            };
            let right = match (running.plan, &got) {
                (Plan::Ok | Plan::HangUntilClose, Ok(output)) => *output == input.output(),
                (Plan::Fail, Err(FerryError::Failed(batch))) => *batch == running.batch,
                (Plan::Panic, Err(FerryError::Panicked)) => true,
                (Plan::WrongCount(n), Err(FerryError::WrongOutputCount { expected, got })) => {
                    *expected == len && *got == n
                }
                _ => false,
            };
            ensure!(
                right,
                "G4/G10: input {id} of batch {} (ended {:?}) got {got:?}",
                running.batch,
                running.plan
            );
        }
        self.check_others_unanswered()
    }

    /// G10: callers of other batches, and callers still waiting, have heard
    /// nothing (a few, chosen by the seed, are looked at each time).
    fn check_others_unanswered(&mut self) -> Result<(), String> {
        for _ in 0..3 {
            if self.callers.is_empty() {
                break;
            }
            let nth = self.rng.below(self.callers.len());
            let (&id, answer) = self.callers.iter_mut().nth(nth).expect("in range");
            let answer: &mut Answer = answer;
            ensure!(
                matches!(try_answer(answer), Ok(None)),
                "G4/G10: input {id} answered before its batch completed"
            );
        }
        Ok(())
    }

    fn close(&mut self) {
        trace!(self, "close");
        self.closed = true;
        self.summary.open_at_close = self.open.len() as u64;
        self.core.close();
        self.reference.close();
        for running in &mut self.running {
            if running.finish.is_none() {
                running.finish = Some(self.now + running.latency);
            }
        }
    }

    fn maybe_drop_a_caller(&mut self) {
        if self.callers.is_empty() || !self.rng.chance(self.scenario.drop_percent) {
            return;
        }
        let nth = self.rng.below(self.callers.len());
        let id = *self.callers.keys().nth(nth).expect("in range");
        trace!(self, "caller of input {id} drops its answer receiver");
        self.callers.remove(&id);
        self.summary.dropped_callers += 1;
        // This moment's events are over: the notice comes later.
        self.caller_gone(id, 1);
    }

    /// After every event: the core's gauges and counters are the
    /// reference's, and within their bounds (G6, slots).
    fn check_counts(&self) -> Result<(), String> {
        let stats = self.core.stats();
        let reference = &self.reference;
        let expected = (
            0,
            reference.waiting.len() as u64,
            reference.waiting_weight(),
            reference.in_flight as u64,
            reference.admitted,
            reference.refused,
            reference.batches,
            reference.sent,
            reference.answered,
            reference.expired,
            reference.withdrawn,
        );
        let got = (
            stats.lanes,
            stats.waiting,
            stats.waiting_weight,
            stats.in_flight,
            stats.admitted,
            stats.refused,
            stats.batches,
            stats.sent,
            stats.answered,
            stats.expired,
            stats.withdrawn,
        );
        ensure!(
            got == expected,
            "G6: (lanes, waiting, weight, in flight, admitted, refused, batches, sent, answered, \
             expired, withdrawn) is {got:?}, the reference says {expected:?}"
        );
        self.check_accounting()?;
        let bounds = &reference.bounds;
        ensure!(
            stats.waiting <= bounds.queueing_max as u64
                && stats.waiting_weight <= bounds.queued_weight_max,
            "G6: {} waiting (weight {}) past the bounds",
            stats.waiting,
            stats.waiting_weight
        );
        ensure!(
            self.core.in_flight() <= bounds.slots,
            "slots: {} batches in flight with {} slots",
            self.core.in_flight(),
            bounds.slots
        );
        Ok(())
    }

    /// When nothing more happens at this moment: no slot is left free while
    /// a batch is ready, and callers still waiting have heard nothing.
    fn check_quiet_moment(&mut self) -> Result<(), String> {
        ensure!(
            !self.core.can_dispatch(),
            "the core says it can dispatch, but dispatch gave nothing"
        );
        ensure!(
            !self.reference.must_dispatch(self.now),
            "slots: a batch is ready ({} waiting), a slot is free, and nothing was dispatched",
            self.reference.waiting.len()
        );
        if self.reference.is_ready(self.now) {
            self.summary.ready_without_a_slot += 1;
        }
        self.check_others_unanswered()
    }

    /// G4, G9 at the end: every input accounted for exactly once, sent in
    /// admission order, the core quiet and empty.
    fn check_end(&self) -> Result<(), String> {
        ensure!(self.core.is_quiet(), "G9: the core is not quiet at the end");
        ensure!(
            self.core.queue().waiting() == 0 && self.core.queue().waiting_weight() == 0,
            "G9: {} inputs still waiting at the end",
            self.core.queue().waiting()
        );
        ensure!(
            self.open.is_empty(),
            "G4: inputs never answered: {:?}",
            self.open
        );
        ensure!(
            self.callers.is_empty(),
            "G4: callers still waiting: {:?}",
            self.callers.keys().collect::<Vec<_>>()
        );
        let total = self.scenario.arrivals.len();
        let resolved = [
            &self.answered,
            &self.refused,
            &self.expired,
            &self.withdrawn,
        ];
        let mut all: BTreeSet<u64> = BTreeSet::new();
        for ids in resolved {
            all.extend(ids);
        }
        ensure!(
            resolved.iter().map(|ids| ids.len()).sum::<usize>() == total && all.len() == total,
            "G4: {} answered + {} refused + {} expired + {} withdrawn for {total} inputs",
            self.answered.len(),
            self.refused.len(),
            self.expired.len(),
            self.withdrawn.len()
        );
        // What was sent is what was admitted, in admission order, less what
        // expired or was withdrawn.
        let admitted_sent: Vec<u64> = self
            .admitted_order
            .iter()
            .copied()
            .filter(|id| !self.expired.contains(id) && !self.withdrawn.contains(id))
            .collect();
        ensure!(
            self.sent_order == admitted_sent,
            "FIFO: sent {:?}, admitted (less expired and withdrawn) {:?}",
            self.sent_order,
            admitted_sent
        );
        let stats = self.core.stats();
        ensure!(
            stats.admitted == stats.answered + stats.expired + stats.withdrawn
                && stats.sent == stats.answered,
            "quiet, but admitted {}, sent {}, answered {}, expired {}, withdrawn {}",
            stats.admitted,
            stats.sent,
            stats.answered,
            stats.expired,
            stats.withdrawn
        );
        ensure!(
            self.flushes.untold().is_empty(),
            "flushes never told: {:?}",
            self.flushes.untold()
        );
        ensure!(
            self.gone.is_empty(),
            "inputs of gone callers never resolved: {:?}",
            self.gone
        );
        Ok(())
    }
}

/// Plays one seed; a panic inside the core counts as a failure of the seed.
fn play(seed: u64, trace: bool) -> Result<Summary, String> {
    seeds::play(|| Sim::new(seed, trace).run())
}

fn replay_command(seed: u64) -> String {
    format!("FERRY_SIM_SEED={seed} cargo test -p ferry-shard --test simulation_unkeyed")
}

#[test]
fn every_seed_keeps_fifo_slots_and_g4_g6_g9_g10() {
    let Some(summary) = seeds::play_seeds("unkeyed simulation", play, replay_command) else {
        return;
    };
    // The seeds reach every case the checks are about; otherwise a passing
    // run would prove little.
    let reached = [
        ("admitted", summary.admitted),
        ("refused Full", summary.refused_full),
        ("refused TooHeavy", summary.refused_too_heavy),
        ("refused Closed", summary.refused_closed),
        ("batches of more than one input", summary.batches_grouped),
        (
            "batches cut by the weight bound",
            summary.batches_cut_by_weight,
        ),
        ("batches sent because due", summary.batches_due),
        (
            "batches beside another in flight",
            summary.batches_beside_another,
        ),
        (
            "ready batches waiting for a slot",
            summary.ready_without_a_slot,
        ),
        ("failed batches", summary.failed),
        ("panicked batches", summary.panicked),
        ("miscounted batches", summary.wrong_count),
        ("batches hung until close", summary.hung_until_close),
        ("dropped callers", summary.dropped_callers),
        ("inputs open at close", summary.open_at_close),
        ("plain seeds (no overload setting)", summary.plain_seeds),
        ("expired inputs", summary.expired),
        ("inputs withdrawn by a notice", summary.withdrawn_by_notice),
        ("inputs withdrawn at a take", summary.withdrawn_at_take),
        ("whole batches withdrawn", summary.batches_withdrawn_whole),
        ("notices past their scan", summary.notices_past_their_scan),
        ("notices without withdraw_on_drop", summary.notices_ignored),
        (
            "inputs sent after their callers left",
            summary.sent_after_drop,
        ),
        ("flushes told", summary.flushes_told),
        (
            "flushes told after waiting",
            summary.flushes_told_after_waiting,
        ),
    ];
    for (what, count) in reached {
        assert!(count > 0, "no seed reached {what}: {summary:?}");
    }
}

#[test]
fn a_seed_replays_the_same_run() {
    for seed in [0, 7, 1_234_567] {
        assert_eq!(play(seed, false), play(seed, false), "seed {seed}");
    }
}
