//! Deterministic simulation of one unkeyed shard (SPEC §9).
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
//!   `max_queueing` / `max_queued_weight`;
//! - slots: at most `max_in_flight_batches` batches are out; a slot is never
//!   left free while a batch is ready (the G8 analogue), and while a slot is
//!   free the core's next deadline is never later than the oldest waiting
//!   input's due time (with every slot busy, a completion comes first);
//! - G9: nothing is admitted after close, everything admitted is answered,
//!   and the core ends quiet;
//! - G10: a failed, panicked or miscounted batch fails its own callers only.
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
#[path = "sim/rng.rs"]
mod rng;
#[path = "sim/unkeyed_reference.rs"]
mod unkeyed_reference;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use ferry_shard::parts::{BatchOutcome, Fifo, Reply, ShardCore, Submission, Waiter};
use ferry_shard::{FerryError, LanesConfig, Refused};
use tokio::sync::oneshot;

use answer::{try_answer, Dropped};
use rng::Rng;
use unkeyed_reference::{Bounds, Reference};

/// Seeds played by a plain `cargo test`.
const SEEDS_DEFAULT: u64 = 1_000;
/// Events one seed may take before the run counts as stuck.
const STEPS_MAX: usize = 200_000;

/// One caller's input. `payload` makes "handed back unchanged" mean more
/// than an equal number.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Input {
    id: u64,
    payload: String,
}

impl Input {
    /// The output the simulated store gives for this input.
    fn output(&self) -> u64 {
        self.id * 7 + 3
    }
}

type Output = u64;
/// A failed batch's error is the batch's number, so a caller can tell whose
/// failure it was given (G10).
type BatchError = u64;
type Outcome = Result<Output, FerryError<Input, BatchError>>;
type Core = ShardCore<Fifo<Waiter<Input, Output, BatchError>>, Input, Output, BatchError>;
type Answer = oneshot::Receiver<Outcome>;

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
}

/// What one seed plays.
#[derive(Clone, Debug)]
struct Scenario {
    config: LanesConfig,
    bounds: Bounds,
    arrivals: Vec<Arrival>,
    /// `None`: closed only once nothing else is left to happen.
    close_tick: Option<u64>,
    /// Percent chance, at each quiet moment, that one waiting caller drops
    /// its answer receiver.
    drop_percent: u64,
    /// Latest batch latency, in ticks.
    latency_max: u64,
}

impl Scenario {
    fn generate(rng: &mut Rng) -> Self {
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
        let bounds = Bounds {
            batch_size_max,
            batch_weight_max,
            queueing_max,
            queued_weight_max,
            delay,
            slots: rng.range(1, 4) as usize,
        };
        let config = LanesConfig {
            max_batch_size: batch_size_max,
            max_batch_weight: batch_weight_max,
            max_batch_delay: at(delay),
            max_queueing: queueing_max,
            max_queued_weight: queued_weight_max,
            ..LanesConfig::default()
        };
        let burst_percent = rng.range(0, 70);
        let gap_max = rng.range(1, 12);
        let count = rng.range(10, 150);
        let mut tick = 0;
        let mut arrivals = Vec::with_capacity(count as usize);
        for id in 0..count {
            if !rng.chance(burst_percent) {
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
                },
                weight,
                drops_at_once: rng.chance(5),
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
}

impl Summary {
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
    }
}

#[derive(Clone, Copy, Debug)]
enum Action {
    Admit,
    Complete,
    Dispatch,
    Close,
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
    /// Admitted inputs not answered yet.
    open: BTreeSet<u64>,
    answered: BTreeSet<u64>,
    refused: BTreeSet<u64>,
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
        let scenario = Scenario::generate(&mut rng);
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
            admitted_order: Vec::new(),
            sent_order: Vec::new(),
            summary: Summary::default(),
            trace,
        }
    }

    fn run(mut self) -> Result<Summary, String> {
        if self.trace {
            eprintln!(
                "scenario: {:?}, {} inputs, close at {:?}",
                self.scenario.bounds,
                self.scenario.arrivals.len(),
                self.close_tick
            );
        }
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
                if enabled.is_empty() {
                    break;
                }
                let action = enabled[self.rng.below(enabled.len())];
                dispatch_tried = false;
                match action {
                    Action::Admit => self.admit()?,
                    Action::Complete => self.complete()?,
                    Action::Close => self.close(),
                    Action::Dispatch => {
                        if !self.dispatch()? {
                            dispatch_tried = true;
                            continue;
                        }
                    }
                }
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
        self.arrival_next == self.scenario.arrivals.len() && self.running.is_empty() && self.closed
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
        let candidates = [
            self.scenario
                .arrivals
                .get(self.arrival_next)
                .map(|a| a.tick),
            self.running.iter().filter_map(|r| r.finish).min(),
            self.close_tick.filter(|_| !self.closed),
            deadline.filter(|&d| d > self.now),
        ];
        Ok(candidates.into_iter().flatten().min())
    }

    fn admit(&mut self) -> Result<(), String> {
        let arrival = self.scenario.arrivals[self.arrival_next].clone();
        self.arrival_next += 1;
        let id = arrival.input.id;

        // After close the intake refuses on its own, before the core sees
        // the input; some inputs still reach the core, which must refuse
        // them too.
        if self.closed && self.rng.chance(50) {
            trace!(self, "input {id} refused at the closed intake");
            self.refused.insert(id);
            self.summary.refused_closed += 1;
            return Ok(());
        }
        let (reply, mut answer) = oneshot::channel();
        let mut caller_waits = true;
        if arrival.drops_at_once {
            drop(answer);
            answer = oneshot::channel().1;
            caller_waits = false;
            self.summary.dropped_callers += 1;
        }
        let expected_refusal = self.reference.refusal(arrival.weight);
        let admitted_before = self.core.stats().admitted;
        self.core.admit(
            Submission {
                hash: 0,
                key: (),
                input: arrival.input.clone(),
                rank: 0,
                weight: arrival.weight,
                reply,
            },
            at(self.now),
        );
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
                    Refused::KeyFull => unreachable!("the reference refuses no key"),
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
            }
        }
        Ok(())
    }

    /// G4: a refused input is handed back at once, unchanged, with the
    /// reason the reference expects.
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
        let only_due = self.reference.only_due(self.now);
        let Some(dispatch) = self.core.dispatch(at(self.now)) else {
            ensure!(
                !must,
                "slots: a batch is ready ({} waiting) and {} of {} slots are busy, \
                 but the core dispatched nothing",
                self.reference.waiting.len(),
                self.reference.in_flight,
                self.reference.bounds.slots
            );
            return Ok(false);
        };
        let ids: Vec<u64> = dispatch.inputs.iter().map(|i| i.id).collect();
        trace!(self, "dispatch {ids:?}");
        ensure!(
            must,
            "slots/latency: dispatched {ids:?} with {} of {} slots busy, ready: {}",
            self.reference.in_flight,
            self.reference.bounds.slots,
            self.reference.is_ready(self.now)
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
        let (expected, cut_by_weight) = self.reference.expected_batch();
        ensure!(
            ids == expected,
            "FIFO: sent {ids:?}; the front of the queue, as much as fits, is {expected:?}"
        );
        if self.reference.in_flight > 0 {
            self.summary.batches_beside_another += 1;
        }
        self.reference.dispatch(&ids);
        self.sent_order.extend(&ids);
        self.summary.batches += 1;
        self.summary.batches_grouped += u64::from(ids.len() > 1);
        self.summary.batches_cut_by_weight += u64::from(cut_by_weight);
        self.summary.batches_due += u64::from(only_due);

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
        self.reference.complete(len);

        // G4, G10: each caller of this batch, and only they, hear of it now.
        for input in &running.inputs {
            let id = input.id;
            ensure!(self.open.remove(&id), "G4: input {id} answered twice");
            self.answered.insert(id);
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
        );
        ensure!(
            got == expected,
            "G6: (lanes, waiting, weight, in flight, admitted, refused, batches, sent, answered) \
             is {got:?}, the reference says {expected:?}"
        );
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
        ensure!(
            self.answered.len() + self.refused.len() == total
                && self.answered.is_disjoint(&self.refused),
            "G4: {} answered + {} refused for {total} inputs",
            self.answered.len(),
            self.refused.len()
        );
        ensure!(
            self.sent_order == self.admitted_order,
            "FIFO: sent {:?}, admitted {:?}",
            self.sent_order,
            self.admitted_order
        );
        let stats = self.core.stats();
        ensure!(
            stats.admitted == stats.sent && stats.sent == stats.answered,
            "quiet, but admitted {}, sent {}, answered {}",
            stats.admitted,
            stats.sent,
            stats.answered
        );
        Ok(())
    }
}

/// Plays one seed; a panic inside the core counts as a failure of the seed.
fn play(seed: u64, trace: bool) -> Result<Summary, String> {
    match std::panic::catch_unwind(|| Sim::new(seed, trace).run()) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".to_string());
            Err(format!("panicked: {message}"))
        }
    }
}

fn replay_command(seed: u64) -> String {
    format!("FERRY_SIM_SEED={seed} cargo test -p ferry-shard --test simulation_unkeyed")
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.replace('_', "").parse() {
        Ok(number) => Some(number),
        Err(_) => panic!("{name}={value} is not a number"),
    }
}

/// Plays `count` seeds from `first` (on all cores when there are more than
/// the default); the lowest failing seed and its message, if any, and the
/// summed summary.
fn play_many(first: u64, count: u64) -> (Option<(u64, String)>, Summary) {
    let threads = if count > SEEDS_DEFAULT {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    };
    let next = AtomicU64::new(first);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<(u64, String)>> = Mutex::new(None);
    let total: Mutex<Summary> = Mutex::new(Summary::default());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut sum = Summary::default();
                while !stop.load(Ordering::Relaxed) {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= first + count {
                        break;
                    }
                    match play(seed, false) {
                        Ok(summary) => sum.add(&summary),
                        Err(message) => {
                            stop.store(true, Ordering::Relaxed);
                            let mut failure = failure.lock().unwrap();
                            if failure.as_ref().is_none_or(|(s, _)| seed < *s) {
                                *failure = Some((seed, message));
                            }
                        }
                    }
                }
                total.lock().unwrap().add(&sum);
            });
        }
    });
    (failure.into_inner().unwrap(), total.into_inner().unwrap())
}

#[test]
fn every_seed_keeps_fifo_slots_and_g4_g6_g9_g10() {
    if let Some(seed) = env_u64("FERRY_SIM_SEED") {
        let trace = std::env::var_os("FERRY_SIM_TRACE").is_some();
        if let Err(message) = play(seed, trace) {
            panic!(
                "seed {seed} failed: {message}\nreplay: {}",
                replay_command(seed)
            );
        }
        eprintln!("seed {seed} passed");
        return;
    }
    let first = env_u64("FERRY_SIM_FIRST").unwrap_or(0);
    let count = env_u64("FERRY_SIM_SEEDS").unwrap_or(SEEDS_DEFAULT);
    let (failure, summary) = play_many(first, count);
    if let Some((seed, message)) = failure {
        panic!(
            "seed {seed} failed: {message}\nreplay: {}\n\
             (add FERRY_SIM_TRACE=1 and `-- --nocapture` to see every event)",
            replay_command(seed)
        );
    }
    eprintln!("unkeyed simulation: {count} seeds from {first} passed: {summary:?}");
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
