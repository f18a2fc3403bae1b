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
//! Three quarters of the seeds also play the overload settings
//! (docs/guarantees.md#flush-overload-and-withdrawal), each on or off by the
//! seed; the others play exactly as before those settings existed:
//!
//! - `max_queue_time`: at each moment the reference says inputs expire,
//!   `expire` answers exactly those `Expired`, the input handed back
//!   unchanged; none already taken; and the shard's next deadline is never
//!   later than the next expiry, whether a slot is free or not;
//! - `withdraw_on_drop`: callers drop their futures at seeded moments, some
//!   sending a withdrawal notice a little later, some none. A caller gone
//!   before its input is taken has it withdrawn, never sent (by the notice,
//!   if it is among the first inputs of its lane, or by the take that
//!   reaches it); one gone after the take has it sent and answered;
//! - `max_waiting_per_key` with a hot key: `KeyFull` exactly when the
//!   reference says, counting waiting inputs only;
//! - flush requests at seeded moments: each is told exactly once every
//!   input admitted before it is resolved, not before, and not after the
//!   event that resolved the last of them;
//! - after every event: submitted = answered + refused + expired +
//!   withdrawn + open (waiting or in flight), and the shard's counters say
//!   the same; each key's lane state is the reference's.
//!
//! Every seed is also played with trips (the `_with_trips` tests): each
//! slot is filled by `dispatch_trip` with up to the seed's bound of ready
//! lanes' batches, and emptied by `release_trip` then `answer_trip`. The
//! same scenario (one or two slots), the same checks batch by batch, and
//! besides: a trip holds no key twice, takes one slot (trips in flight
//! never exceed the slots), carries at most its bound of batches and, past
//! its first batch, of weight, and leaves no lane ready that it could have
//! carried (a trip that stops short stops at a batch that would take it
//! past its weight, as the core weighs its takes: before the inputs of gone
//! callers are withdrawn from them). A trip returns one result per batch,
//! each as its own plan says, or panics, or returns the wrong number of
//! results (failing every batch of it), or hangs until close, which then
//! races the trips in flight; `close_while_a_trip_is_in_flight_…` plays
//! that race step by step.
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

use ferry_shard::parts::{
    answer_cell, BatchOutcome, Ended, LaneId, LaneState, Lanes, Offer, Receiver, ShardCore,
    Submission, TripLimits, TripOutcome, Waiter,
};
use ferry_shard::{key_hash, FerryError, Refused};

use sim::answer::{try_answer, Caller, Dropped};
use sim::flushes::Flushes;
use sim::reference::{Reference, NOTICE_SCAN};
use sim::rng::Rng;
use sim::scenario::{at, trip_limits, Input, Plan, Scenario, TripPlan};
use sim::seeds::{self, Tally};

/// Events one seed may take before the run counts as stuck.
const STEPS_MAX: usize = 200_000;

type Output = u64;
/// A failed batch's error is the batch's number, so a caller can tell whose
/// failure it was given (G10).
type BatchError = u64;
type Outcome = Result<Output, FerryError<Input, BatchError>>;
type Core = ShardCore<Lanes<u32, Waiter<Input, Output, BatchError>>, Input, Output, BatchError>;
type Reply = ferry_shard::parts::Reply<Input, Output, BatchError>;
type Answer = Caller<Input, Output, BatchError>;

/// How the core fills a slot: with one batch (`dispatch`, then `complete`
/// or `release` and `answer`), or with a trip of up to `max_batches`
/// ready lanes' batches (`dispatch_trip`, then `release_trip` and
/// `answer_trip`).
#[derive(Clone, Copy, Debug)]
enum Carrying {
    Batches,
    Trips(TripLimits),
}

/// One batch taken out of the core: its lane, key, inputs and replies.
struct Taken {
    lane: LaneId,
    key: u32,
    inputs: Vec<Input>,
    replies: Vec<Reply>,
}

/// One batch of a load in flight.
struct Carried {
    lane: LaneId,
    key: u32,
    /// The batch's number: a failed batch's error, so that a caller can
    /// tell whose failure it was given (G10).
    batch: u64,
    inputs: Vec<Input>,
    replies: Vec<Reply>,
}

/// What one slot holds while the simulated user function works on it: a
/// batch, or a trip of batches.
struct Running {
    batches: Vec<Carried>,
    /// The trip's number, with trips.
    trip: Option<u64>,
    plan: TripPlan,
    latency: u64,
    /// `None` while it hangs until close.
    finish: Option<u64>,
}

/// What a caller of a batch must be told, by how its load ended.
#[derive(Clone, Copy, Debug)]
enum Expect {
    Output,
    Failed(u64),
    Panicked,
    WrongCount { expected: usize, got: usize },
}

impl Running {
    /// What each caller of the `index`th batch must be told.
    fn expect(&self, index: usize) -> Expect {
        let batch = &self.batches[index];
        match &self.plan {
            TripPlan::Panic => Expect::Panicked,
            TripPlan::WrongResults(got) => Expect::WrongCount {
                expected: self.batches.len(),
                got: *got,
            },
            TripPlan::Results(plans) => match plans[index] {
                Plan::Ok | Plan::HangUntilClose => Expect::Output,
                Plan::Fail => Expect::Failed(batch.batch),
                Plan::WrongCount(got) => Expect::WrongCount {
                    expected: batch.inputs.len(),
                    got,
                },
                Plan::Panic => Expect::Panicked,
            },
        }
    }
}

/// What the user's function returns for `batch`, planned `plan`.
fn result_of(plan: Plan, batch: &Carried) -> Result<Vec<Output>, BatchError> {
    match plan {
        Plan::Ok | Plan::HangUntilClose => Ok(batch.inputs.iter().map(Input::output).collect()),
        Plan::Fail => Err(batch.batch),
        Plan::WrongCount(got) => Ok((0..got as u64).collect()),
        Plan::Panic => unreachable!("a panic is the whole load's"),
    }
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
    /// Seeds with none of the overload settings.
    plain_seeds: u64,
    refused_key_full: u64,
    /// Of those, refused while the key had a batch in flight.
    key_full_beside_a_batch: u64,
    expired: u64,
    withdrawn_by_notice: u64,
    withdrawn_at_take: u64,
    /// Takes whose whole batch was withdrawn, so nothing was sent.
    batches_withdrawn_whole: u64,
    /// Notices that left an input whose caller was gone, past the part of
    /// the lane a notice looks at.
    notices_past_their_scan: u64,
    /// Notices while `withdraw_on_drop` is off: they withdraw nothing.
    notices_ignored: u64,
    /// Inputs sent and answered although their callers dropped their
    /// futures once they were taken.
    sent_after_drop: u64,
    /// Lanes emptied by expiry or withdrawal while in the ready line (and
    /// so removed), and of their keys, those given an input again after.
    lanes_emptied_in_line: u64,
    lanes_refilled_in_line: u64,
    flushes: u64,
    flushes_told: u64,
    /// Of those, flushes that had inputs to wait for.
    flushes_told_after_waiting: u64,
    /// With trips: trips taken, and of those with more than one batch.
    trips: u64,
    trips_of_several: u64,
    /// Trips of their most batches while another lane was still ready.
    trips_full: u64,
    /// Trips that left a ready lane behind because its batch did not fit
    /// their weight.
    trips_stopped_by_weight: u64,
    /// Trips whose first batch alone weighed more than their bound.
    trips_heavy_first: u64,
    /// Trips that withdrew inputs of gone callers as they were taken.
    trips_with_withdrawals: u64,
    /// Trips that returned the wrong number of results.
    trips_wrong_results: u64,
    /// Trips that panicked, of several batches.
    trips_panicked_with_mates: u64,
    /// Trips of several batches in flight when the shard was closed.
    trips_in_flight_at_close: u64,
}

impl Tally for Summary {
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
        self.plain_seeds += other.plain_seeds;
        self.refused_key_full += other.refused_key_full;
        self.key_full_beside_a_batch += other.key_full_beside_a_batch;
        self.expired += other.expired;
        self.withdrawn_by_notice += other.withdrawn_by_notice;
        self.withdrawn_at_take += other.withdrawn_at_take;
        self.batches_withdrawn_whole += other.batches_withdrawn_whole;
        self.notices_past_their_scan += other.notices_past_their_scan;
        self.notices_ignored += other.notices_ignored;
        self.sent_after_drop += other.sent_after_drop;
        self.lanes_emptied_in_line += other.lanes_emptied_in_line;
        self.lanes_refilled_in_line += other.lanes_refilled_in_line;
        self.flushes += other.flushes;
        self.flushes_told += other.flushes_told;
        self.flushes_told_after_waiting += other.flushes_told_after_waiting;
        self.trips += other.trips;
        self.trips_of_several += other.trips_of_several;
        self.trips_full += other.trips_full;
        self.trips_stopped_by_weight += other.trips_stopped_by_weight;
        self.trips_heavy_first += other.trips_heavy_first;
        self.trips_with_withdrawals += other.trips_with_withdrawals;
        self.trips_wrong_results += other.trips_wrong_results;
        self.trips_panicked_with_mates += other.trips_panicked_with_mates;
        self.trips_in_flight_at_close += other.trips_in_flight_at_close;
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
    carrying: Carrying,
    batch_next: u64,
    /// Trips taken so far (the next one's number).
    trip_next: u64,
    /// Callers of admitted, unanswered inputs that still wait, by input id.
    callers: BTreeMap<u64, Answer>,
    /// Admitted inputs not resolved yet (waiting or in flight).
    open: BTreeSet<u64>,
    answered: BTreeSet<u64>,
    refused: BTreeSet<u64>,
    expired: BTreeSet<u64>,
    withdrawn: BTreeSet<u64>,
    /// Open inputs whose callers dropped their futures.
    gone: BTreeSet<u64>,
    /// Inputs submitted so far, and of those refused by the closed intake
    /// before the shard saw them.
    submitted: u64,
    refused_at_intake: u64,
    /// Draws for the overload moments during the run, so that plain seeds
    /// draw from `rng` exactly as before.
    extra: Rng,
    /// Callers who will drop their futures: (tick, input id).
    drops: Vec<(u64, u64)>,
    /// Withdrawal notices on their way to the shard: (tick, key).
    notices: Vec<(u64, u32)>,
    flushes: Flushes,
    /// Highest rank sent so far, per key (to count late inputs).
    rank_sent_max: BTreeMap<u32, i64>,
    summary: Summary,
    /// G7 by when lanes became ready (as docs/guarantees.md defines it),
    /// rather than by when the shard could first have seen them ready.
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
    fn new(seed: u64, mode: Mode) -> Self {
        let Mode {
            strict_fairness,
            trace,
            trips,
        } = mode;
        let mut rng = Rng::new(seed);
        let mut extra = Rng::new(seed ^ 0x0ee1_0ad5_eed5_0f7e);
        let mut scenario = Scenario::generate(&mut rng, &mut extra);
        // The trip bounds come from a generator of their own: a seed plays
        // the same inputs either way. With trips, one or two slots, so that
        // lanes become ready while every slot is busy, and trips gather
        // them.
        let carrying = if trips {
            let mut trip_rng = Rng::new(seed ^ 0x7219_0b0a_7ed5_11a5);
            scenario.slots = 1 + trip_rng.below(2);
            Carrying::Trips(trip_limits(&mut trip_rng))
        } else {
            Carrying::Batches
        };
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
            carrying,
            batch_next: 0,
            trip_next: 0,
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
            rank_sent_max: BTreeMap::new(),
            summary: Summary::default(),
            strict_fairness,
            trace,
        }
    }

    fn run(mut self) -> Result<Summary, String> {
        if self.trace {
            eprintln!(
                "scenario: {:?}, {:?}, delay {} ticks, {} slots, {} keys, {} inputs, close at {:?}, {:?}",
                self.scenario.config,
                self.carrying,
                self.scenario.delay_ticks,
                self.scenario.slots,
                self.scenario.keys,
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
                let mut enabled = [Action::Admit; 8];
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
                // The overload events; none is ever enabled in a plain seed.
                if self.expiry_due() {
                    enable(Action::Expire);
                }
                if self.notices.iter().any(|&(t, _)| t <= self.now) {
                    enable(Action::Notice);
                }
                if self.drops.iter().any(|&(t, _)| t <= self.now) {
                    enable(Action::Drop);
                }
                if self.flush_due() {
                    enable(Action::Flush);
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
                    Action::Dispatch => dispatch_tried = !self.dispatch()?,
                    Action::Expire => self.expire()?,
                    Action::Notice => self.notice()?,
                    Action::Drop => self.drop_due_caller(),
                    Action::Flush => self.flush(),
                }
                self.reference.refresh(self.now);
                self.settle_flushes()?;
                self.check_counts()?;
                self.check_lanes()?;
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
        self.arrival_next == self.scenario.arrivals.len()
            && self.running.is_empty()
            && self.closed
            && self.drops.is_empty()
            && self.notices.is_empty()
            && !self.flush_pending()
    }

    fn expiry_due(&self) -> bool {
        self.reference.next_expiry().is_some_and(|t| t <= self.now)
    }

    fn flush_pending(&self) -> bool {
        self.flushes.requested() < self.scenario.overload.flush_ticks.len()
    }

    fn flush_due(&self) -> bool {
        self.scenario
            .overload
            .flush_ticks
            .get(self.flushes.requested())
            .is_some_and(|&t| t <= self.now)
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
        // Expiry does not wait for a slot: the shard's timer keeps the next
        // one even while every slot is busy.
        let expiry = self.reference.next_expiry();
        if let Some(expiry) = expiry {
            ensure!(
                deadline.is_some_and(|d| d <= expiry),
                "max_queue_time: an input expires at {expiry}, the shard's next deadline is {deadline:?}"
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
            self.notices.iter().map(|&(t, _)| t).min(),
            self.drops.iter().map(|&(t, _)| t).min(),
            self.scenario
                .overload
                .flush_ticks
                .get(self.flushes.requested())
                .copied(),
        ];
        Ok(candidates.into_iter().flatten().min())
    }

    /// Hands `arrival` to the core as `submit` would, or, for every fourth
    /// input, as the one input of a `submit_many` call.
    fn submit(&mut self, arrival: &sim::scenario::Arrival) -> Answer {
        let key = arrival.input.key;
        let offer = Offer {
            hash: key_hash(&key),
            key,
            input: arrival.input.clone(),
            rank: arrival.rank,
            weight: arrival.weight,
            boundary: 0,
        };
        let many = arrival.input.id % 4 == 3;
        sim::answer::submit(&mut self.core, offer, at(self.now), many)
    }

    fn admit(&mut self) -> Result<(), String> {
        let arrival = self.scenario.arrivals[self.arrival_next].clone();
        self.arrival_next += 1;
        let id = arrival.input.id;
        let key = arrival.input.key;
        self.submitted += 1;

        // After close the intake refuses on its own, before the shard sees
        // the input; some inputs still reach the core, which must refuse
        // them too.
        if self.closed && self.rng.chance(50) {
            trace!(self, "input {id} (key {key}) refused at the closed intake");
            self.refused.insert(id);
            self.refused_at_intake += 1;
            self.summary.refused_closed += 1;
            return Ok(());
        }
        let expected_refusal = self.reference.refusal(key, arrival.weight);
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
                    Refused::Late => unreachable!("these scenarios hold nothing"),
                    Refused::Full => self.summary.refused_full += 1,
                    Refused::TooHeavy => self.summary.refused_too_heavy += 1,
                    Refused::Closed => self.summary.refused_closed += 1,
                    Refused::KeyFull => {
                        // The shard found the key's lane, looking at the
                        // time on the way.
                        self.reference.look(self.now);
                        self.summary.refused_key_full += 1;
                        let busy = self.reference.lanes.get(&key).is_some_and(|l| l.busy);
                        self.summary.key_full_beside_a_batch += u64::from(busy);
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
                let emptied = self.reference.emptied_in_line().contains(&key);
                self.summary.lanes_refilled_in_line += u64::from(emptied);
                self.reference.forget_emptied(key);
                self.reference.look(self.now);
                self.reference
                    .admit(key, id, arrival.rank, arrival.weight, self.now);
                self.open.insert(id);
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

    /// The caller of open input `id` dropped its future: with
    /// `withdraw_on_drop` the input is now the shard's to withdraw, if it
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
            let key = self.scenario.arrivals[id as usize].input.key;
            self.notices.push((self.now + lag, key));
        }
    }

    /// A caller whose time came drops its future.
    fn drop_due_caller(&mut self) {
        let at = self
            .drops
            .iter()
            .position(|&(t, _)| t <= self.now)
            .expect("a drop is due");
        let (_, id) = self.drops.swap_remove(at);
        if self.callers.remove(&id).is_some() {
            trace!(self, "caller of input {id} drops its future");
            self.summary.dropped_callers += 1;
            self.caller_gone(id, 0);
        }
    }

    /// Takes the next load out of the core: a batch, or with trips a trip
    /// of batches (each as the core hands it out, in trip order).
    fn take_load(&mut self) -> Result<Option<Vec<Taken>>, String> {
        let now = at(self.now);
        match self.carrying {
            Carrying::Batches => Ok(self.core.dispatch(now).map(|dispatch| {
                vec![Taken {
                    lane: dispatch.ticket,
                    key: dispatch.key,
                    inputs: dispatch.inputs,
                    replies: dispatch.replies,
                }]
            })),
            Carrying::Trips(limits) => {
                let Some((batches, held)) = self.core.dispatch_trip(now, limits) else {
                    return Ok(None);
                };
                ensure!(
                    !batches.is_empty() && batches.len() == held.len(),
                    "a trip of {} batches with {} held",
                    batches.len(),
                    held.len()
                );
                Ok(Some(
                    batches
                        .into_iter()
                        .zip(held)
                        .map(|((key, inputs), (lane, replies))| Taken {
                            lane,
                            key,
                            inputs,
                            replies,
                        })
                        .collect(),
                ))
            }
        }
    }

    /// Asks the core for a load (a batch, or a trip of batches in one
    /// slot); `false` if it had none to give.
    fn dispatch(&mut self) -> Result<bool, String> {
        let slot_free = self.reference.in_flight < self.reference.slots;
        if slot_free {
            self.reference.look(self.now);
        }
        // What the take may withdraw (their callers are gone), and the line
        // as it stood.
        let withdrawable: Vec<u64> = if self.scenario.config.withdraw_on_drop {
            self.gone
                .iter()
                .copied()
                .filter(|&id| self.reference_waits(id))
                .collect()
        } else {
            Vec::new()
        };
        let ready_before = self.reference.ready();
        let withdrawn_before = self.core.stats().withdrawn;
        let load = self.take_load()?;

        // The inputs the shard let go of in this step are exactly the ones
        // the takes withdrew: nobody else holds them any more.
        let mut withdrawn_by_key: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
        for &id in &withdrawable {
            let input = &self.scenario.arrivals[id as usize].input;
            if !input.is_held() {
                withdrawn_by_key.entry(input.key).or_default().insert(id);
            }
        }
        let withdrawn_now: usize = withdrawn_by_key.values().map(BTreeSet::len).sum();
        let counted = self.core.stats().withdrawn - withdrawn_before;
        ensure!(
            counted == withdrawn_now as u64,
            "withdraw_on_drop: the take let go of {withdrawn_now} inputs of gone callers, \
             the shard counts {counted} withdrawn"
        );
        ensure!(
            slot_free || (load.is_none() && withdrawn_now == 0),
            "slots: the shard took from its lanes with every slot busy"
        );
        let sent_keys: Vec<u32> = load.iter().flatten().map(|taken| taken.key).collect();
        let taken: BTreeSet<u32> = withdrawn_by_key.keys().chain(&sent_keys).copied().collect();
        // What the takes weighed as the core weighs a trip's batches: each
        // before the inputs of gone callers in it are withdrawn, batches
        // withdrawn whole included.
        let mut weight_taken = 0_u64;
        for (&key, ids) in &mut withdrawn_by_key {
            weight_taken += self.withdraw_whole_batches(key, ids, &ready_before, &taken)?;
            ensure!(
                ids.is_empty() || sent_keys.contains(&key),
                "withdraw_on_drop: key {key}'s inputs {ids:?} withdrawn at a take, \
                 but they are not a batch of its lane"
            );
        }
        let Some(load) = load else {
            return Ok(false);
        };
        ensure!(
            self.reference.in_flight < self.reference.slots,
            "slots: a load started with {} of {} slots busy",
            self.reference.in_flight,
            self.reference.slots
        );
        // G1 within a trip: a key is in it once at most.
        let distinct: BTreeSet<u32> = sent_keys.iter().copied().collect();
        ensure!(
            distinct.len() == sent_keys.len(),
            "G1: a key twice in one trip: {sent_keys:?}"
        );
        let trip = match self.carrying {
            Carrying::Batches => None,
            Carrying::Trips(_) => {
                self.trip_next += 1;
                Some(self.trip_next - 1)
            }
        };
        if let Some(trip) = trip {
            trace!(self, "trip {trip}: keys {sent_keys:?}");
        }
        let mut batches = Vec::with_capacity(load.len());
        let (mut weight_sent, mut weight_first) = (0_u64, None);
        for taken in load {
            let (batch, weighed) = self.check_batch(taken, &withdrawable, &mut withdrawn_by_key)?;
            weight_taken += weighed;
            weight_first.get_or_insert(weighed);
            weight_sent += batch
                .inputs
                .iter()
                .map(|i| self.scenario.arrivals[i.id as usize].weight)
                .sum::<u64>();
            batches.push(batch);
        }
        self.reference.occupy_slot();
        if let Carrying::Trips(limits) = self.carrying {
            self.check_trip_bounds(limits, batches.len(), weight_sent, weight_taken)?;
            self.summary.trips += 1;
            self.summary.trips_of_several += u64::from(batches.len() > 1);
            self.summary.trips_heavy_first +=
                u64::from(weight_first.is_some_and(|w| w > limits.max_weight));
            self.summary.trips_with_withdrawals += u64::from(withdrawn_now > 0);
        }

        let lens: Vec<usize> = batches.iter().map(|b| b.inputs.len()).collect();
        let (plan, hangs) = match self.carrying {
            Carrying::Batches => TripPlan::of_batch(Plan::draw(&mut self.rng, lens[0])),
            Carrying::Trips(_) => TripPlan::draw(&mut self.rng, &lens),
        };
        let latency = self.rng.range(0, self.scenario.latency_max);
        let finish = if hangs && !self.closed {
            None
        } else {
            Some(self.now + latency)
        };
        trace!(
            self,
            "{} of keys {sent_keys:?} will end {plan:?}{} at {finish:?}",
            trip.map_or_else(|| "the batch".to_string(), |t| format!("trip {t}")),
            if hangs { " (hanging until close)" } else { "" }
        );
        self.summary.batches += lens.len() as u64;
        self.summary.hung_until_close += u64::from(hangs);
        self.running.push(Running {
            batches,
            trip,
            plan,
            latency,
            finish,
        });
        Ok(true)
    }

    /// Checks one batch taken out of the core (alone, or as one of a
    /// trip's) against the reference, and records it there: its lane is
    /// busy. The batch, and what it weighed when taken (with the inputs of
    /// gone callers the take withdrew).
    fn check_batch(
        &mut self,
        taken: Taken,
        withdrawable: &[u64],
        withdrawn_by_key: &mut BTreeMap<u32, BTreeSet<u64>>,
    ) -> Result<(Carried, u64), String> {
        let key = taken.key;
        let ids: Vec<u64> = taken.inputs.iter().map(|i| i.id).collect();
        trace!(self, "dispatch key {key}: {ids:?}");
        ensure!(
            !ids.is_empty() && taken.replies.len() == ids.len(),
            "a batch of {} inputs with {} replies",
            ids.len(),
            taken.replies.len()
        );
        for input in &taken.inputs {
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
        // (In a trip, the lanes taken before this one are busy by now.)
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

        // G2: exactly the lowest (rank, admission) inputs waiting, less those
        // whose callers are gone, withdrawn in the same step.
        let batch = self.reference.expected_batch(key);
        let weighed = self.reference.weight_of(key, &batch);
        let withdrawn: Vec<u64> = withdrawn_by_key
            .remove(&key)
            .unwrap_or_default()
            .into_iter()
            .collect();
        let (gone, expected): (Vec<u64>, Vec<u64>) =
            batch.iter().partition(|&&id| withdrawable.contains(&id));
        ensure!(
            ids == expected,
            "G2: key {key} sent {ids:?}; by (rank, admission) and the bounds it should be \
             {expected:?} (its batch {batch:?} less the inputs of gone callers)"
        );
        let mut gone_sorted = gone.clone();
        gone_sorted.sort_unstable();
        ensure!(
            withdrawn == gone_sorted,
            "withdraw_on_drop: key {key}'s take withdrew {withdrawn:?}; of its batch {batch:?} \
             the callers of {gone:?} are gone"
        );
        self.reference.withdraw_from_batch(key, &withdrawn);
        self.resolve_withdrawn(&withdrawn);
        self.summary.withdrawn_at_take += withdrawn.len() as u64;
        self.reference.dispatch(key, &ids);
        let rank_max = taken
            .inputs
            .iter()
            .map(|i| self.scenario.arrivals[i.id as usize].rank)
            .max()
            .expect("not empty");
        let sent_max = self.rank_sent_max.entry(key).or_insert(i64::MIN);
        *sent_max = (*sent_max).max(rank_max);

        let number = self.batch_next;
        self.batch_next += 1;
        let carried = Carried {
            lane: taken.lane,
            key,
            batch: number,
            inputs: taken.inputs,
            replies: taken.replies,
        };
        Ok((carried, weighed))
    }

    /// A trip of `batches` batches just taken, weighing `weight_sent` as
    /// sent and `weight_taken` as the core weighed its takes: within its
    /// bounds (a first batch always goes, whatever it weighs), and as full
    /// as they allow. A trip of fewer than its most batches that left a
    /// lane ready did so because the batch at the front of the line would
    /// have taken it past its weight: some lane that may be at the front
    /// (none surely in line before it) does not fit.
    fn check_trip_bounds(
        &mut self,
        limits: TripLimits,
        batches: usize,
        weight_sent: u64,
        weight_taken: u64,
    ) -> Result<(), String> {
        ensure!(
            batches <= limits.max_batches,
            "a trip of {batches} batches, past its bound {}",
            limits.max_batches
        );
        ensure!(
            batches == 1 || weight_sent <= limits.max_weight,
            "a trip of {batches} batches weighs {weight_sent}, past its bound {}",
            limits.max_weight
        );
        let in_line: Vec<(u32, u64, u64)> = self
            .reference
            .ready()
            .into_iter()
            .filter(|&(_, _, seen)| seen != u64::MAX)
            .collect();
        if in_line.is_empty() {
            return Ok(());
        }
        if batches == limits.max_batches {
            self.summary.trips_full += u64::from(batches > 1);
            return Ok(());
        }
        let may_be_first = |&(key, since, _): &(u32, u64, u64)| {
            in_line.iter().all(|&(other, other_since, other_seen)| {
                let ahead = if self.strict_fairness {
                    other_since < since
                } else {
                    other_seen < since
                };
                other == key || !ahead
            })
        };
        let fits = |key: u32| {
            let weight = self
                .reference
                .weight_of(key, &self.reference.expected_batch(key));
            weight_taken.saturating_add(weight) <= limits.max_weight
        };
        let fronts: Vec<u32> = in_line
            .iter()
            .filter(|lane| may_be_first(lane))
            .map(|&(key, _, _)| key)
            .collect();
        ensure!(
            fronts.iter().any(|&key| !fits(key)),
            "a trip of {batches} batches (at most {}), weighing {weight_taken} as taken (at most \
             {}), left lanes ready whose batches fit: {fronts:?} may be at the front, in line: \
             {in_line:?}",
            limits.max_batches,
            limits.max_weight
        );
        self.summary.trips_stopped_by_weight += 1;
        Ok(())
    }

    /// Whether input `id` waits in the reference's lanes (not taken yet).
    fn reference_waits(&self, id: u64) -> bool {
        let key = self.scenario.arrivals[id as usize].input.key;
        self.reference
            .lanes
            .get(&key)
            .is_some_and(|lane| lane.waiting.iter().any(|w| w.id == id))
    }

    /// The take withdrew `ids` of `key`. Those making up whole batches at
    /// the front of its lane (every caller gone) were taken one after the
    /// other and found empty, each releasing the lane at once; they leave
    /// `ids`. What is left is the withdrawn part of the batch then sent, if
    /// `key` was sent. What the batches withdrawn whole weighed.
    fn withdraw_whole_batches(
        &mut self,
        key: u32,
        ids: &mut BTreeSet<u64>,
        ready_before: &[(u32, u64, u64)],
        taken: &BTreeSet<u32>,
    ) -> Result<u64, String> {
        let mut first = true;
        let mut weighed = 0;
        loop {
            let batch = self.reference.expected_batch(key);
            if batch.is_empty() || !batch.iter().all(|id| ids.contains(id)) {
                return Ok(weighed);
            }
            weighed += self.reference.weight_of(key, &batch);
            // G7, G8 as for a batch that is sent: the lane was ready, and
            // no lane in line before it was passed over. A lane taken again
            // in the same step went to the back of the line in between.
            let since = if first {
                let found = ready_before.iter().find(|&&(k, _, _)| k == key);
                let Some(&(_, since, _)) = found else {
                    return Err(format!(
                        "G8: key {key}'s batch {batch:?} was taken, and withdrawn, before the lane was ready"
                    ));
                };
                since
            } else {
                let ready = self.reference.lanes[&key].ready_since.is_some();
                ensure!(
                    ready,
                    "G8: key {key} taken again at once, and its batch {batch:?} withdrawn, but it is not ready"
                );
                self.now
            };
            for &(other, other_since, other_seen) in ready_before {
                let overtaken = if self.strict_fairness {
                    other_since < since
                } else {
                    other_seen < since
                };
                ensure!(
                    taken.contains(&other) || !overtaken,
                    "G7: key {key} (ready since {since}) was taken, its batch withdrawn, before key \
                     {other} (ready since {other_since}, in line since {other_seen})"
                );
            }
            trace!(
                self,
                "take of key {key} finds its batch {batch:?} withdrawn: every caller is gone"
            );
            for id in &batch {
                ids.remove(id);
            }
            self.reference.skip_batch(key, &batch, self.now);
            self.reference.refresh(self.now);
            self.resolve_withdrawn(&batch);
            self.summary.withdrawn_at_take += batch.len() as u64;
            self.summary.batches_withdrawn_whole += 1;
            first = false;
        }
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
        let emptied_before = self.reference.emptied_in_line().len();
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
        for &(key, id) in &expected {
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
                        "max_queue_time: input {id} (key {key}) expired; its caller got {other:?}"
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
        let emptied = self
            .reference
            .emptied_in_line()
            .len()
            .saturating_sub(emptied_before);
        self.summary.lanes_emptied_in_line += emptied as u64;
        Ok(())
    }

    /// A withdrawal notice reaches the shard: with `withdraw_on_drop`, the
    /// inputs of gone callers among the first ones of the key's lane are
    /// withdrawn, and no other; without, nothing.
    fn notice(&mut self) -> Result<(), String> {
        let due = self
            .notices
            .iter()
            .position(|&(t, _)| t <= self.now)
            .expect("a notice is due");
        let (_, key) = self.notices.swap_remove(due);
        let withdraws = self.scenario.config.withdraw_on_drop;
        let expected = if withdraws {
            self.reference.noticed(key, &self.gone)
        } else {
            Vec::new()
        };
        let gone_waiting: Vec<u64> = self
            .reference
            .lane_order(key)
            .into_iter()
            .map(|w| w.id)
            .filter(|id| self.gone.contains(id))
            .collect();
        let emptied_before = self.reference.emptied_in_line().len();
        let before = self.core.stats().withdrawn;
        self.core.withdraw(key_hash(&key));
        self.core.deliver();
        let counted = self.core.stats().withdrawn - before;
        trace!(self, "notice for key {key}: withdraws {expected:?}");
        ensure!(
            counted == expected.len() as u64,
            "withdraw_on_drop: a notice for key {key} withdrew {counted} inputs; the reference \
             expects {expected:?} (the first {NOTICE_SCAN} of its lane whose callers are gone)"
        );
        for &id in &gone_waiting {
            let held = self.scenario.arrivals[id as usize].input.is_held();
            ensure!(
                held != expected.contains(&id),
                "withdraw_on_drop: after a notice for key {key}, input {id} is {} by the shard; \
                 the reference withdraws {expected:?}",
                if held { "still held" } else { "let go" }
            );
        }
        self.reference.withdraw(key, &expected);
        self.resolve_withdrawn(&expected);
        self.summary.withdrawn_by_notice += expected.len() as u64;
        self.summary.notices_ignored += u64::from(!withdraws);
        self.summary.notices_past_their_scan +=
            u64::from(withdraws && gone_waiting.len() > expected.len());
        let emptied = self
            .reference
            .emptied_in_line()
            .len()
            .saturating_sub(emptied_before);
        self.summary.lanes_emptied_in_line += emptied as u64;
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

    /// After every event: each key's lane is in the state the reference
    /// says: busy while its batch is in flight, ready exactly while the
    /// shard has it in its ready line (emptied or not), waiting otherwise,
    /// and none once it has nothing waiting and nothing in flight (G1, G5).
    fn check_lanes(&self) -> Result<(), String> {
        for key in 0..self.scenario.keys {
            let lane = self.reference.lanes.get(&key);
            let want = lane.map(|lane| {
                if lane.busy {
                    LaneState::Busy
                } else if lane.waiting.is_empty() || lane.seen_since.is_some() {
                    LaneState::Ready
                } else {
                    LaneState::Waiting
                }
            });
            let got = self.core.queue().lane_state(&key);
            ensure!(
                got == want,
                "key {key}'s lane is {got:?}, the reference says {want:?}: {lane:?}"
            );
        }
        Ok(())
    }

    fn complete(&mut self) -> Result<(), String> {
        let due: Vec<usize> = (0..self.running.len())
            .filter(|&i| self.running[i].finish.is_some_and(|f| f <= self.now))
            .collect();
        let mut running = self.running.swap_remove(due[self.rng.below(due.len())]);
        match &running.plan {
            TripPlan::Panic => {
                self.summary.panicked += 1;
                self.summary.trips_panicked_with_mates += u64::from(running.batches.len() > 1);
            }
            TripPlan::WrongResults(_) => self.summary.trips_wrong_results += 1,
            TripPlan::Results(plans) => {
                for plan in plans {
                    match plan {
                        Plan::Fail => self.summary.failed += 1,
                        Plan::WrongCount(_) => self.summary.wrong_count += 1,
                        _ => {}
                    }
                }
            }
        }
        let keys: Vec<u32> = running.batches.iter().map(|b| b.key).collect();
        trace!(
            self,
            "{} of keys {keys:?} completes {:?}",
            running.trip.map_or_else(
                || format!("batch {}", running.batches[0].batch),
                |t| format!("trip {t}")
            ),
            running.plan
        );
        let now = at(self.now);
        let replies: Vec<Vec<Reply>> = running
            .batches
            .iter_mut()
            .map(|batch| std::mem::take(&mut batch.replies))
            .collect();
        match self.carrying {
            Carrying::Batches => {
                let batch = &running.batches[0];
                let outcome: BatchOutcome<Output, BatchError> = match &running.plan {
                    TripPlan::Panic => Ended::Panicked,
                    TripPlan::Results(plans) => Ended::Returned(result_of(plans[0], batch)),
                    TripPlan::WrongResults(_) => unreachable!("a batch has one result"),
                };
                let replies = replies.into_iter().next().expect("one batch");
                // The runtime uses both ways: `complete` for a batch done on
                // its first poll, `release` then `answer` for one that
                // finished later.
                if self.rng.below(2) == 0 {
                    self.core.complete(batch.lane, replies, outcome, now);
                } else {
                    self.core.release(batch.lane, now);
                    self.core.answer(replies, outcome);
                }
            }
            Carrying::Trips(_) => {
                let outcome: TripOutcome<Output, BatchError> = match &running.plan {
                    TripPlan::Panic => Ended::Panicked,
                    // Some of each kind of result, none of them used.
                    TripPlan::WrongResults(got) => Ended::Returned(
                        (0..*got)
                            .map(|i| {
                                if i % 2 == 0 {
                                    Ok(Vec::new())
                                } else {
                                    Err(u64::MAX)
                                }
                            })
                            .collect(),
                    ),
                    TripPlan::Results(plans) => Ended::Returned(
                        plans
                            .iter()
                            .zip(&running.batches)
                            .map(|(&plan, batch)| result_of(plan, batch))
                            .collect(),
                    ),
                };
                let held: Vec<(LaneId, Vec<Reply>)> = running
                    .batches
                    .iter()
                    .map(|batch| batch.lane)
                    .zip(replies)
                    .collect();
                // As the shard loop does: every lane and the slot released,
                // then every caller answered.
                self.core
                    .release_trip(held.iter().map(|(lane, _)| lane), now);
                self.core.answer_trip(held, outcome);
            }
        }
        self.core.deliver();
        // Completing, the shard looks at the time.
        self.reference.look(self.now);
        for batch in &running.batches {
            self.reference
                .complete(batch.key, batch.inputs.len(), self.now);
        }
        self.reference.free_slot();

        // G4, G10: each caller of this load, and only they, hear of it now,
        // each as its own batch's outcome says.
        for (index, batch) in running.batches.iter().enumerate() {
            let expect = running.expect(index);
            for input in &batch.inputs {
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
                            batch.batch
                        ))
                    }
                    Err(Dropped) => {
                        return Err(format!(
                        "G4: input {id}'s reply dropped without an answer (batch {} ended {:?})",
                        batch.batch, running.plan
                    ))
                    }
                };
                let right = match (expect, &got) {
                    (Expect::Output, Ok(output)) => *output == input.output(),
                    (Expect::Failed(number), Err(FerryError::Failed(batch))) => *batch == number,
                    (Expect::Panicked, Err(FerryError::Panicked)) => true,
                    (
                        Expect::WrongCount { expected, got },
                        Err(FerryError::WrongOutputCount {
                            expected: said_expected,
                            got: said_got,
                        }),
                    ) => (*said_expected, *said_got) == (expected, got),
                    _ => false,
                };
                ensure!(
                    right,
                    "G4/G10: input {id} of batch {} (its load ended {:?}, so {expect:?}) got {got:?}",
                    batch.batch,
                    running.plan
                );
            }
        }
        Ok(())
    }

    fn close(&mut self) {
        trace!(self, "close");
        self.closed = true;
        self.summary.open_at_close = self.open.len() as u64;
        self.summary.trips_in_flight_at_close += self
            .running
            .iter()
            .filter(|r| r.trip.is_some() && r.batches.len() > 1)
            .count() as u64;
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
        // This moment's events are over: the notice comes later.
        self.caller_gone(id, 1);
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
            "G5/G6: (lanes, waiting, weight, in flight, admitted, refused, batches, sent, answered, \
             expired, withdrawn) is {got:?}, the reference says {expected:?}"
        );
        self.check_accounting()?;
        ensure!(
            stats.waiting <= reference.queueing_max as u64
                && stats.waiting_weight <= reference.queued_weight_max,
            "G6: {} waiting (weight {}) past the bounds",
            stats.waiting,
            stats.waiting_weight
        );
        ensure!(
            self.core.in_flight() <= reference.slots,
            "{} loads in flight with {} slots",
            self.core.in_flight(),
            reference.slots
        );
        ensure!(
            stats.trips == self.trip_next,
            "the shard counts {} trips, {} were taken",
            stats.trips,
            self.trip_next
        );
        // Each trip holds one slot, whatever it carries.
        ensure!(
            self.running.len() == reference.in_flight,
            "{} loads running, the reference has {} slots busy",
            self.running.len(),
            reference.in_flight
        );
        Ok(())
    }

    /// After every event, the accounting of
    /// docs/guarantees.md#flush-overload-and-withdrawal: every input
    /// submitted so far is answered, refused, expired, withdrawn or still
    /// open, and the open ones are exactly those waiting and those in
    /// flight; the shard's
    /// own counters say the same.
    fn check_accounting(&self) -> Result<(), String> {
        let in_flight: usize = self
            .running
            .iter()
            .flat_map(|r| &r.batches)
            .map(|b| b.inputs.len())
            .sum();
        let waiting = self.reference.waiting();
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
            "accounting: the shard admitted {} and refused {} (and the intake {}) of {} submitted",
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
            "accounting: the shard admitted {}, answered {}, expired {}, withdrawn {}, has {} \
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

/// How seeds are played.
#[derive(Clone, Copy, Debug)]
struct Mode {
    strict_fairness: bool,
    trace: bool,
    /// Trips (`dispatch_trip`) instead of one batch per slot.
    trips: bool,
}

/// Plays one seed; a panic inside the shard counts as a failure of the seed.
fn play(seed: u64, mode: Mode) -> Result<Summary, String> {
    seeds::play(|| Sim::new(seed, mode).run())
}

/// The test that plays seeds in `mode`.
fn test_of(mode: Mode) -> &'static str {
    match (mode.strict_fairness, mode.trips) {
        (false, false) => "every_seed_keeps_g1_to_g10",
        (true, false) => "g7_strict_first_come_first_served",
        (false, true) => "every_seed_keeps_g1_to_g10_with_trips",
        (true, true) => "g7_strict_first_come_first_served_with_trips",
    }
}

fn replay_command(seed: u64, mode: Mode) -> String {
    format!(
        "FERRY_SIM_SEED={seed} cargo test -p ferry-shard --test simulation {} -- --exact",
        test_of(mode)
    )
}

/// Plays the seeds the environment asks for (see the module docs) and fails
/// with the replay command of the first seed that breaks a guarantee.
fn play_seeds(strict_fairness: bool, trips: bool) -> Option<Summary> {
    let mode = |trace| Mode {
        strict_fairness,
        trace,
        trips,
    };
    seeds::play_seeds(
        test_of(mode(false)),
        |seed, trace| play(seed, mode(trace)),
        |seed| replay_command(seed, mode(false)),
    )
}

/// The cases every way of playing must reach; otherwise a passing run
/// would prove little.
fn assert_reached(summary: &Summary, more: &[(&str, u64)]) {
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
        ("plain seeds (no overload setting)", summary.plain_seeds),
        ("refused KeyFull", summary.refused_key_full),
        (
            "KeyFull beside a batch in flight",
            summary.key_full_beside_a_batch,
        ),
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
        (
            "lanes emptied in the ready line",
            summary.lanes_emptied_in_line,
        ),
        (
            "emptied lanes given an input",
            summary.lanes_refilled_in_line,
        ),
        ("flushes told", summary.flushes_told),
        (
            "flushes told after waiting",
            summary.flushes_told_after_waiting,
        ),
    ];
    for (what, count) in reached.iter().chain(more) {
        assert!(*count > 0, "no seed reached {what}: {summary:?}");
    }
}

#[test]
fn every_seed_keeps_g1_to_g10() {
    let Some(summary) = play_seeds(false, false) else {
        return;
    };
    assert_reached(&summary, &[]);
    assert_eq!(summary.trips, 0, "no trip without trips");
}

/// The same seeds, each slot filled with a trip (`dispatch_trip`,
/// `release_trip`, `answer_trip`) within the seed's trip bounds: every
/// guarantee above holds batch by batch, and besides, a trip holds no key
/// twice, takes one slot (trips in flight never exceed the slots), carries
/// at most its bound of batches and, past its first, of weight, and leaves
/// no lane ready that it could have carried. A trip ends as a whole
/// (results, one per batch; a panic; the wrong number of results) or hangs
/// until close, which then races the trips in flight.
#[test]
fn every_seed_keeps_g1_to_g10_with_trips() {
    let Some(summary) = play_seeds(false, true) else {
        return;
    };
    assert_reached(
        &summary,
        &[
            ("trips", summary.trips),
            ("trips of several batches", summary.trips_of_several),
            ("trips of their most batches", summary.trips_full),
            (
                "trips ended by their weight",
                summary.trips_stopped_by_weight,
            ),
            (
                "trips whose first batch is past their weight",
                summary.trips_heavy_first,
            ),
            ("trips that withdrew inputs", summary.trips_with_withdrawals),
            (
                "trips with the wrong number of results",
                summary.trips_wrong_results,
            ),
            (
                "trips of several batches that panicked",
                summary.trips_panicked_with_mates,
            ),
            (
                "trips of several batches in flight at close",
                summary.trips_in_flight_at_close,
            ),
        ],
    );
}

/// G7 read literally: a lane is ready from the moment it is due, even if no
/// slot is free then, and must not be overtaken by a lane that became ready
/// (filled up, or completed with inputs left) later while it waited.
#[test]
fn g7_strict_first_come_first_served() {
    play_seeds(true, false);
}

/// G7 read literally, with trips: the batches of a trip, one after the
/// other, as if each were taken alone.
#[test]
fn g7_strict_first_come_first_served_with_trips() {
    play_seeds(true, true);
}

#[test]
fn a_seed_replays_the_same_run() {
    for trips in [false, true] {
        let mode = Mode {
            strict_fairness: false,
            trace: false,
            trips,
        };
        for seed in [0, 7, 1_234_567] {
            assert_eq!(play(seed, mode), play(seed, mode), "seed {seed}, {mode:?}");
        }
    }
}

/// Event time (see `sim/event_time.rs`): seeds `0..1000` with a lateness
/// hold, late inputs refused or not, and boundaries, through the core.
#[test]
fn every_seed_keeps_event_time_order_holds_and_boundaries() {
    let mut met = sim::event_time::Met::default();
    for seed in 0..1_000 {
        if let Err(broke) = sim::event_time::play(seed, &mut met) {
            panic!("event-time seed {seed}: {broke}");
        }
    }
    eprintln!("event time: {met:?}");
    assert!(met.late_refused > 0, "no late input refused: {met:?}");
    assert!(met.late_sent > 0, "no late input sent: {met:?}");
    assert!(met.held > 0, "no input held: {met:?}");
    assert!(
        met.batches_in_buckets > 0,
        "no batch kept to a bucket: {met:?}"
    );
    assert!(met.with_delay > 0, "no run with a batch delay: {met:?}");
}

/// Admits input `id` of `key` (rank 0, weight 1) into `core` at `now`, as
/// `submit` would; its caller's answer.
fn submit(core: &mut Core, key: u32, id: u64, now: u64) -> Receiver<Outcome> {
    let (reply, answer) = answer_cell();
    let input = Input {
        id,
        key,
        payload: format!("input {id} of key {key}"),
        copies: std::sync::Arc::new(()),
    };
    core.admit(
        Submission {
            offer: Offer::new(key_hash(&key), key, input, 0, 1),
            reply,
        },
        at(now),
    );
    answer
}

/// The lane case of `lanes_guarantees.rs` reached through the shard's own
/// core, by withdrawal: with the only slot busy, key 2 is full and in line;
/// its callers leave and a notice withdraws both inputs. Key 3 fills up
/// behind it. A lone input then comes for key 2. When the slot frees, key
/// 3, ready since before that input existed, must go first (G7), and key
/// 2's input wait for its delay (docs/guarantees.md#terms).
#[test]
fn g7_a_key_given_an_input_after_its_ready_lane_was_withdrawn_waits_its_turn() {
    let config = ferry_shard::QueueConfig {
        max_batch_size: 2,
        max_batch_delay: at(100),
        withdraw_on_drop: true,
        ..ferry_shard::QueueConfig::default()
    };
    let mut core = Core::new(config, 1);
    let _one = [submit(&mut core, 1, 0, 0), submit(&mut core, 1, 1, 0)];
    let busy = core.dispatch(at(0)).expect("key 1 is full");
    let gone = [submit(&mut core, 2, 2, 1), submit(&mut core, 2, 3, 1)];
    drop(gone);
    core.withdraw(key_hash(&2));
    assert_eq!(core.stats().withdrawn, 2, "both inputs of key 2 withdrawn");
    let _three = [submit(&mut core, 3, 4, 2), submit(&mut core, 3, 5, 2)];
    let _two = submit(&mut core, 2, 6, 3);

    core.complete(
        busy.ticket,
        busy.replies,
        BatchOutcome::Returned(Ok(vec![0, 0])),
        at(4),
    );
    let next = core.dispatch(at(4)).expect("key 3 is ready");
    let ids: Vec<u64> = next.inputs.iter().map(|i| i.id).collect();
    assert_eq!(
        (next.key, ids),
        (3, vec![4, 5]),
        "key 3 was full since 2; key 2's lone input came at 3 and is due at 103"
    );
}

/// Close races a trip in flight, through the shard's own core: with one
/// slot, a trip of keys 1 and 2 is in flight; behind it wait key 3 (full,
/// ready), key 4 (one input, its delay far off) and key 1's next input.
/// Close refuses what comes after it, takes nothing while the slot is busy,
/// and once the trip ends (one batch answered, one failed), everything
/// that waited goes in the next trip, first come first served: key 3,
/// then key 4 (ready at close), then key 1 (released last) (G9).
#[test]
fn close_while_a_trip_is_in_flight_sends_everything_waiting_in_the_next_trip() {
    let config = ferry_shard::QueueConfig {
        max_batch_size: 2,
        max_batch_delay: at(1_000),
        ..ferry_shard::QueueConfig::default()
    };
    let limits = TripLimits {
        max_batches: 8,
        max_weight: u64::MAX,
    };
    let mut core = Core::new(config, 1);
    let ids = |trip: &[(u32, Vec<Input>)]| -> Vec<(u32, Vec<u64>)> {
        trip.iter()
            .map(|(key, inputs)| (*key, inputs.iter().map(|i| i.id).collect()))
            .collect()
    };
    let mut answers: Vec<Receiver<Outcome>> = [(1, 0), (1, 1), (2, 2), (2, 3)]
        .into_iter()
        .map(|(key, id)| submit(&mut core, key, id, 0))
        .collect();
    let (first, first_held) = core
        .dispatch_trip(at(0), limits)
        .expect("keys 1, 2 are full");
    assert_eq!(ids(&first), vec![(1, vec![0, 1]), (2, vec![2, 3])]);
    assert_eq!(
        (core.in_flight(), core.stats().trips, core.stats().batches),
        (1, 1, 2)
    );
    answers.extend(
        [(3, 4, 1), (3, 5, 1), (4, 6, 2), (1, 7, 3)]
            .into_iter()
            .map(|(key, id, now)| submit(&mut core, key, id, now)),
    );
    assert!(
        core.dispatch_trip(at(3), limits).is_none(),
        "the only slot holds the trip"
    );

    core.close();
    let mut late = submit(&mut core, 5, 8, 4);
    match try_answer(&mut late) {
        Ok(Some(Err(FerryError::Refused {
            input,
            reason: Refused::Closed,
        }))) => assert_eq!(input.id, 8),
        other => panic!("an input after close: {other:?}"),
    }
    assert!(
        core.dispatch_trip(at(4), limits).is_none(),
        "the slot is still busy"
    );
    for answer in &mut answers {
        assert!(matches!(try_answer(answer), Ok(None)), "answered too soon");
    }

    let outputs = |inputs: &[Input]| inputs.iter().map(Input::output).collect::<Vec<_>>();
    let results = vec![Ok(outputs(&first[0].1)), Err(9)];
    core.release_trip(first_held.iter().map(|(lane, _)| lane), at(5));
    core.answer_trip(first_held, Ended::Returned(results));
    let (second, second_held) = core
        .dispatch_trip(at(5), limits)
        .expect("everything that waited is ready once closed");
    assert_eq!(
        ids(&second),
        vec![(3, vec![4, 5]), (4, vec![6]), (1, vec![7])],
        "first come, first served: key 3 was full before close made key 4 ready, \
         and key 1 was released after both"
    );
    let results = second
        .iter()
        .map(|(_, inputs)| Ok(outputs(inputs)))
        .collect();
    core.release_trip(second_held.iter().map(|(lane, _)| lane), at(6));
    core.answer_trip(second_held, Ended::Returned(results));
    core.deliver();

    for (id, answer) in answers.iter_mut().enumerate() {
        let got = try_answer(answer).expect("not dropped").expect("answered");
        match (id, got) {
            (2 | 3, Err(FerryError::Failed(9))) => {}
            (_, Ok(output)) => assert_eq!(output, id as u64 * 7 + [1, 1, 2, 2, 3, 3, 4, 1][id]),
            (_, other) => panic!("input {id}: {other:?}"),
        }
    }
    let stats = core.stats();
    assert!(core.is_quiet() && core.dispatch_trip(at(7), limits).is_none());
    assert_eq!(
        (
            stats.trips,
            stats.batches,
            stats.admitted,
            stats.answered,
            stats.refused,
            stats.lanes
        ),
        (2, 5, 8, 8, 1, 0)
    );
    assert_eq!((stats.answered_ok, stats.failed), (6, 2));
}
