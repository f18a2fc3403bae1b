//! Deterministic simulation of one shard.
//!
//! The shard's decisions live in [`ShardCore`], which reacts to events (an
//! input arrived, a batch completed, time passed, close) and knows no
//! runtime. Here a seed drives that very core with a simulated clock and a
//! simulated batch function: callers submit to a few keys with ranks and
//! weights, batches take a seeded time and end in a seeded way (outputs,
//! an error, a panic, the wrong number of outputs, or hanging until close),
//! callers drop their futures, and the shard is closed at a seeded moment.
//! Events due at the same moment happen in a seeded order.
//!
//! After every event the run is checked against an independent reference
//! (`sim/reference.rs`, plain `Vec`s per key, readiness from its definition):
//!
//! - G1: a key is never dispatched while its previous batch is in flight;
//! - G2: a batch is exactly the lowest (rank, admission) inputs of its key
//!   waiting at that moment, as many as fit;
//! - G3: every input of a batch is of the batch's key;
//! - G4: every input ends in exactly one outcome, the right one; a refused
//!   input comes back unchanged with the reason the reference expects;
//! - G5: the shard's lanes are exactly the reference's keys with waiting
//!   inputs or a batch in flight, and none is left at the end;
//! - G6: waiting inputs and weight equal the reference's and stay in bounds;
//! - G7: no lane is dispatched ahead of one that was surely in line before
//!   it became ready; `g7_strict_first_come_first_served` checks the strict
//!   reading too: a lane is in line from the moment it is due, even while
//!   every slot is busy.
//! - G8: a slot is never left free while a lane is ready, and the shard's
//!   next deadline is never later than a waiting lane's due time;
//! - G9: nothing is admitted after close, everything admitted is answered,
//!   and the shard ends quiet;
//! - G10: a failed, panicked or miscounted batch fails its own callers only.
//!
//! `cargo test` plays seeds `0..1000`. More (or other) seeds:
//!
//! ```text
//! FERRY_SIM_SEEDS=1000000 cargo test -p ferry-shard --release --test simulation
//! FERRY_SIM_FIRST=5000000 FERRY_SIM_SEEDS=1000 cargo test -p ferry-shard --test simulation
//! FERRY_SIM_SEED=42 FERRY_SIM_TRACE=1 cargo test -p ferry-shard --test simulation -- --nocapture
//! ```
//!
//! A failing seed prints the one command that replays it.

mod sim;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use ferry_shard::parts::{BatchOutcome, LaneId, Lanes, ShardCore, Submission, Waiter};
use ferry_shard::{key_hash, FerryError};
use tokio::sync::oneshot;

use sim::answer::{try_answer, Dropped};
use sim::reference::Reference;
use sim::rng::Rng;
use sim::scenario::{at, Input, Plan, Scenario};

/// Seeds played by a plain `cargo test`.
const SEEDS_DEFAULT: u64 = 1_000;
/// Events one seed may take before the run counts as stuck.
const STEPS_MAX: usize = 200_000;

type Output = u64;
/// A failed batch's error is the batch's number, so a caller can tell whose
/// failure it was given (G10).
type BatchError = u64;
type Outcome = Result<Output, FerryError<Input, BatchError>>;
type Core = ShardCore<Lanes<u32, Waiter<Input, Output, BatchError>>, Input, Output, BatchError>;
type Reply = ferry_shard::parts::Reply<Input, Output, BatchError>;
type Answer = oneshot::Receiver<Outcome>;

/// A batch the simulated batch function is working on.
struct Running {
    lane: LaneId,
    key: u32,
    batch: u64,
    inputs: Vec<Input>,
    replies: Vec<Reply>,
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
    failed: u64,
    panicked: u64,
    wrong_count: u64,
    hung_until_close: u64,
    dropped_callers: u64,
    late_inputs: u64,
    /// Dispatches that had another ready lane to choose from (G7 at work).
    contended: u64,
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
        self.failed += other.failed;
        self.panicked += other.panicked;
        self.wrong_count += other.wrong_count;
        self.hung_until_close += other.hung_until_close;
        self.dropped_callers += other.dropped_callers;
        self.late_inputs += other.late_inputs;
        self.contended += other.contended;
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
    /// Highest rank sent so far, per key (to count late inputs).
    rank_sent_max: BTreeMap<u32, i64>,
    summary: Summary,
    /// G7 by when lanes became ready (the spec's definition), rather than
    /// by when the shard could first have seen them ready.
    strict_fairness: bool,
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
    fn new(seed: u64, strict_fairness: bool, trace: bool) -> Self {
        let mut rng = Rng::new(seed);
        let scenario = Scenario::generate(&mut rng);
        let reference = Reference::new(&scenario);
        let core = Core::new(scenario.config.clone(), scenario.slots);
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
            rank_sent_max: BTreeMap::new(),
            summary: Summary::default(),
            strict_fairness,
            trace,
        }
    }

    fn run(mut self) -> Result<Summary, String> {
        if self.trace {
            eprintln!(
                "scenario: {:?}, delay {} ticks, {} slots, {} keys, {} inputs, close at {:?}",
                self.scenario.config,
                self.scenario.delay_ticks,
                self.scenario.slots,
                self.scenario.keys,
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
                let mut enabled = [Action::Admit; 4];
                let mut count = 0;
                let mut enable = |action| {
                    enabled[count] = action;
                    count += 1;
                };
                if self.arrival_due() {
                    enable(Action::Admit);
                }
                if self
                    .running
                    .iter()
                    .any(|r| r.finish.is_some_and(|f| f <= self.now))
                {
                    enable(Action::Complete);
                }
                if !self.closed && self.close_tick.is_some_and(|c| c <= self.now) {
                    enable(Action::Close);
                }
                if !dispatch_tried {
                    enable(Action::Dispatch);
                }
                if count == 0 {
                    break;
                }
                let action = enabled[self.rng.below(count)];
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
                self.reference.refresh(self.now);
                self.check_counts()?;
            }
            self.check_quiet_moment()?;
            self.maybe_drop_a_caller();

            match self.next_tick()? {
                Some(tick) => {
                    debug_assert!(tick > self.now);
                    self.now = tick;
                    self.reference.refresh(self.now);
                }
                None if self.all_done() => break,
                None if !self.closed => {
                    // Nothing else will happen: close now.
                    self.close_tick = Some(self.now);
                }
                None => {
                    return Err(format!(
                        "stuck after close: {} lanes, {} in flight, {} waiting, nothing scheduled",
                        self.core.queue().lanes(),
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
    /// slot is free, the shard's next deadline is never later than a waiting
    /// lane's due time (G8). With every slot busy the shard waits for a
    /// completion instead, and then looks for due lanes.
    fn next_tick(&mut self) -> Result<Option<u64>, String> {
        let deadline = self.core.next_deadline().map(|d| d.as_micros() as u64);
        let slot_free = self.reference.in_flight < self.reference.slots;
        if let Some((key, due)) = self.reference.next_due().filter(|_| slot_free) {
            ensure!(
                deadline.is_some_and(|d| d <= due),
                "G8: key {key} is due at {due}, a slot is free, the shard's next deadline is {deadline:?}"
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
        let key = arrival.input.key;

        // After close the intake refuses on its own, before the shard sees
        // the input; some inputs still reach the core, which must refuse
        // them too.
        if self.closed && self.rng.chance(50) {
            trace!(self, "input {id} (key {key}) refused at the closed intake");
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
                hash: key_hash(&key),
                key,
                input: arrival.input.clone(),
                rank: arrival.rank,
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
                    "G6/G9: input {id} (key {key}, weight {}) admitted; the reference refuses it: {reason:?}",
                    arrival.weight
                );
                if caller_waits {
                    match try_answer(&mut answer) {
                        Ok(Some(Err(FerryError::Refused { input, reason: got }))) => {
                            ensure!(
                                input == arrival.input,
                                "G4: input {id} handed back changed: {input:?}"
                            );
                            ensure!(
                                got == reason,
                                "G6: input {id} refused as {got:?}, the reference says {reason:?}"
                            );
                        }
                        other => {
                            return Err(format!(
                                "G4: refused input {id} not handed back at once: {other:?}"
                            ))
                        }
                    }
                }
                trace!(self, "input {id} (key {key}) refused: {reason:?}");
                self.reference.refused += 1;
                self.refused.insert(id);
                match reason {
                    ferry_shard::Refused::Full => self.summary.refused_full += 1,
                    ferry_shard::Refused::TooHeavy => self.summary.refused_too_heavy += 1,
                    ferry_shard::Refused::Closed => self.summary.refused_closed += 1,
                    ferry_shard::Refused::KeyFull => {
                        unreachable!("the reference has no per-key bound")
                    }
                }
            }
            None => {
                if !admitted {
                    let said = if caller_waits {
                        format!("{:?}", try_answer(&mut answer))
                    } else {
                        "(caller gone)".to_string()
                    };
                    return Err(format!(
                        "G6: input {id} (key {key}, weight {}) refused; the reference admits it ({} waiting, weight {}); the caller got {said}",
                        arrival.weight,
                        self.reference.waiting(),
                        self.reference.waiting_weight()
                    ));
                }
                if caller_waits {
                    ensure!(
                        matches!(try_answer(&mut answer), Ok(None)),
                        "G4: input {id} answered at admission"
                    );
                    self.callers.insert(id, answer);
                }
                if self
                    .rank_sent_max
                    .get(&key)
                    .is_some_and(|&r| r > arrival.rank)
                {
                    self.summary.late_inputs += 1;
                }
                trace!(
                    self,
                    "input {id} (key {key}, rank {}, weight {}) admitted",
                    arrival.rank,
                    arrival.weight
                );
                self.reference
                    .admit(key, id, arrival.rank, arrival.weight, self.now);
                self.open.insert(id);
                self.summary.admitted += 1;
            }
        }
        Ok(())
    }

    /// Asks the core for a batch; `false` if it had none to give.
    fn dispatch(&mut self) -> Result<bool, String> {
        if self.reference.in_flight < self.reference.slots {
            self.reference.look(self.now);
        }
        let Some(dispatch) = self.core.dispatch(at(self.now)) else {
            return Ok(false);
        };
        let key = dispatch.key;
        let ids: Vec<u64> = dispatch.inputs.iter().map(|i| i.id).collect();
        trace!(self, "dispatch key {key}: {ids:?}");
        ensure!(
            !ids.is_empty() && dispatch.replies.len() == ids.len(),
            "a batch of {} inputs with {} replies",
            ids.len(),
            dispatch.replies.len()
        );
        for input in &dispatch.inputs {
            ensure!(
                input.key == key,
                "G3: input {} of key {} in a batch of key {key}",
                input.id,
                input.key
            );
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
        ensure!(
            self.reference.in_flight < self.reference.slots,
            "slots: a batch started with {} of {} slots busy",
            self.reference.in_flight,
            self.reference.slots
        );
        let lane = self
            .reference
            .lanes
            .get(&key)
            .ok_or_else(|| format!("key {key} dispatched but it has no waiting input"))?;
        ensure!(
            !lane.busy,
            "G1: key {key} dispatched while its batch is in flight"
        );

        // G7, G8: the lane is ready, and none has been ready longer.
        ensure!(
            lane.ready_since.is_some(),
            "G8: key {key} dispatched before it is ready (partial and not due)"
        );
        // Strictly, no other lane may have become ready before this one. A
        // lane that became due while every slot was busy may join the line
        // any time until a slot is next looked for, so otherwise only a lane
        // surely in line before this one became ready must not be overtaken.
        let ready = self.reference.ready();
        let &(_, since, _) = ready
            .iter()
            .find(|(k, _, _)| *k == key)
            .expect("checked ready above");
        for &(other, other_since, other_seen) in &ready {
            let overtaken = if self.strict_fairness {
                other_since < since
            } else {
                other_seen < since
            };
            ensure!(
                !overtaken,
                "G7: key {key} (ready since {since}) dispatched before key {other} \
                 (ready since {other_since}, in line since {other_seen})"
            );
        }
        if ready.len() > 1 {
            self.summary.contended += 1;
        }

        // G2: exactly the lowest (rank, admission) inputs waiting.
        let expected = self.reference.expected_batch(key);
        ensure!(
            ids == expected,
            "G2: key {key} sent {ids:?}; by (rank, admission) and the bounds it should be {expected:?}"
        );
        self.reference.dispatch(key, &ids);
        let rank_max = dispatch
            .inputs
            .iter()
            .map(|i| self.scenario.arrivals[i.id as usize].rank)
            .max()
            .expect("not empty");
        let sent_max = self.rank_sent_max.entry(key).or_insert(i64::MIN);
        *sent_max = (*sent_max).max(rank_max);

        let batch = self.batch_next;
        self.batch_next += 1;
        let plan = Plan::draw(&mut self.rng, ids.len());
        let latency = self.rng.range(0, self.scenario.latency_max);
        let finish = match plan {
            Plan::HangUntilClose if !self.closed => None,
            _ => Some(self.now + latency),
        };
        trace!(
            self,
            "batch {batch} of key {key} will end {plan:?} at {finish:?}"
        );
        self.running.push(Running {
            lane: dispatch.ticket,
            key,
            batch,
            inputs: dispatch.inputs,
            replies: dispatch.replies,
            plan,
            latency,
            finish,
        });
        self.summary.batches += 1;
        Ok(true)
    }

    fn complete(&mut self) -> Result<(), String> {
        let due: Vec<usize> = (0..self.running.len())
            .filter(|&i| self.running[i].finish.is_some_and(|f| f <= self.now))
            .collect();
        let running = self.running.swap_remove(due[self.rng.below(due.len())]);
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
        trace!(
            self,
            "batch {} of key {} completes {:?}",
            running.batch,
            running.key,
            running.plan
        );
        // The runtime uses both ways: `complete` for a batch done on its
        // first poll, `release` then `answer` for one that finished later.
        if self.rng.below(2) == 0 {
            self.core
                .complete(running.lane, running.replies, outcome, at(self.now));
        } else {
            self.core.release(running.lane, at(self.now));
            self.core.answer(running.replies, outcome);
        }
        self.reference.complete(running.key, len, self.now);

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
        trace!(self, "caller of input {id} drops its future");
        self.callers.remove(&id);
        self.summary.dropped_callers += 1;
    }

    /// After every event: the shard's gauges and counters are the
    /// reference's (G5, G6).
    fn check_counts(&self) -> Result<(), String> {
        let stats = self.core.stats();
        let reference = &self.reference;
        let expected = (
            reference.lanes.len() as u64,
            reference.waiting() as u64,
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
            "G5/G6: (lanes, waiting, weight, in flight, admitted, refused, batches, sent, answered) \
             is {got:?}, the reference says {expected:?}"
        );
        ensure!(
            stats.waiting <= reference.queueing_max as u64
                && stats.waiting_weight <= reference.queued_weight_max,
            "G6: {} waiting (weight {}) past the bounds",
            stats.waiting,
            stats.waiting_weight
        );
        ensure!(
            self.core.in_flight() <= reference.slots,
            "{} batches in flight with {} slots",
            self.core.in_flight(),
            reference.slots
        );
        Ok(())
    }

    /// When nothing more happens at this moment: no slot is left free while
    /// a lane is ready (G8), and callers still waiting have heard nothing.
    fn check_quiet_moment(&mut self) -> Result<(), String> {
        ensure!(
            !self.core.can_dispatch(),
            "the core says it can dispatch, but dispatch gave nothing"
        );
        if self.reference.in_flight < self.reference.slots {
            if let Some(&(key, since, _)) = self.reference.ready().first() {
                return Err(format!(
                    "G8: key {key} ready since {since}, a slot is free, and nothing was dispatched"
                ));
            }
        }
        for _ in 0..2 {
            if self.callers.is_empty() {
                break;
            }
            let nth = self.rng.below(self.callers.len());
            let (&id, answer) = self.callers.iter_mut().nth(nth).expect("in range");
            let answer: &mut Answer = answer;
            ensure!(
                matches!(try_answer(answer), Ok(None)),
                "G4: input {id} answered before its batch completed"
            );
        }
        Ok(())
    }

    /// G4, G5, G9 at the end: every input accounted for exactly once, the
    /// shard quiet and empty.
    fn check_end(&self) -> Result<(), String> {
        ensure!(
            self.core.is_quiet(),
            "G9: the shard is not quiet at the end"
        );
        ensure!(
            self.core.queue().lanes() == 0,
            "G5: {} lanes left at the end",
            self.core.queue().lanes()
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

/// How seeds are played.
#[derive(Clone, Copy, Debug)]
struct Mode {
    strict_fairness: bool,
    trace: bool,
}

/// Plays one seed; a panic inside the shard counts as a failure of the seed.
fn play(seed: u64, mode: Mode) -> Result<Summary, String> {
    let run = || Sim::new(seed, mode.strict_fairness, mode.trace).run();
    match std::panic::catch_unwind(run) {
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

fn replay_command(seed: u64, mode: Mode) -> String {
    if mode.strict_fairness {
        format!("FERRY_SIM_SEED={seed} cargo test -p ferry-shard --test simulation g7_strict")
    } else {
        format!("FERRY_SIM_SEED={seed} cargo test -p ferry-shard --test simulation")
    }
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
fn play_many(first: u64, count: u64, mode: Mode) -> (Option<(u64, String)>, Summary) {
    let threads = if count > SEEDS_DEFAULT {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    };
    let next = AtomicU64::new(first);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<(u64, String)>> = Mutex::new(None);
    let total: Mutex<Summary> = Mutex::new(Summary::default());
    let progress_every = (count / 20).max(1_000_000);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut sum = Summary::default();
                while !stop.load(Ordering::Relaxed) {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= first + count {
                        break;
                    }
                    if (seed - first) % progress_every == 0 && seed > first {
                        eprintln!("simulation: {} seeds played", seed - first);
                    }
                    match play(seed, mode) {
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

/// Plays the seeds the environment asks for (see the module docs) and fails
/// with the replay command of the first seed that breaks a guarantee.
fn play_seeds(strict_fairness: bool) -> Option<Summary> {
    let mode = Mode {
        strict_fairness,
        trace: std::env::var_os("FERRY_SIM_TRACE").is_some(),
    };
    if let Some(seed) = env_u64("FERRY_SIM_SEED") {
        if let Err(message) = play(seed, mode) {
            panic!(
                "seed {seed} failed: {message}\nreplay: {}",
                replay_command(seed, mode)
            );
        }
        eprintln!("seed {seed} passed");
        return None;
    }
    let first = env_u64("FERRY_SIM_FIRST").unwrap_or(0);
    let count = env_u64("FERRY_SIM_SEEDS").unwrap_or(SEEDS_DEFAULT);
    let (failure, summary) = play_many(
        first,
        count,
        Mode {
            trace: false,
            ..mode
        },
    );
    if let Some((seed, message)) = failure {
        panic!(
            "seed {seed} failed: {message}\nreplay: {}\n(add FERRY_SIM_TRACE=1 and `-- --nocapture` to see every event)",
            replay_command(seed, mode)
        );
    }
    eprintln!("simulation: {count} seeds from {first} passed: {summary:?}");
    Some(summary)
}

#[test]
fn every_seed_keeps_g1_to_g10() {
    let Some(summary) = play_seeds(false) else {
        return;
    };
    // The seeds reach every case the checks are about; otherwise a passing
    // run would prove little.
    let reached = [
        ("admitted", summary.admitted),
        ("refused Full", summary.refused_full),
        ("refused TooHeavy", summary.refused_too_heavy),
        ("refused Closed", summary.refused_closed),
        ("failed batches", summary.failed),
        ("panicked batches", summary.panicked),
        ("miscounted batches", summary.wrong_count),
        ("batches hung until close", summary.hung_until_close),
        ("dropped callers", summary.dropped_callers),
        ("late inputs", summary.late_inputs),
        ("contended dispatches", summary.contended),
        ("inputs open at close", summary.open_at_close),
    ];
    for (what, count) in reached {
        assert!(count > 0, "no seed reached {what}: {summary:?}");
    }
}

/// G7 read literally: a lane is ready from the moment it is due, even if no
/// slot is free then, and must not be overtaken by a lane that became ready
/// (filled up, or completed with inputs left) later while it waited.
#[test]
fn g7_strict_first_come_first_served() {
    play_seeds(true);
}

#[test]
fn a_seed_replays_the_same_run() {
    let mode = Mode {
        strict_fairness: false,
        trace: false,
    };
    for seed in [0, 7, 1_234_567] {
        assert_eq!(play(seed, mode), play(seed, mode), "seed {seed}");
    }
}
