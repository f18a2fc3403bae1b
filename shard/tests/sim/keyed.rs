//! The keyed discipline (`Lanes`) in the simulation: its scenario
//! (`scenario.rs`), its reference (`reference.rs`: plain `Vec`s per key,
//! readiness from its definition), and its own checks:
//!
//! - G1: a key is never dispatched while its previous batch is in flight,
//!   nor twice in one trip;
//! - G2: a batch is exactly the lowest (rank, admission) inputs of its key
//!   waiting at that moment, as many as fit;
//! - G3: every input of a batch is of the batch's key;
//! - G5: the shard's lanes are exactly the reference's keys with waiting
//!   inputs or a batch in flight, each in the reference's state, and none
//!   is left at the end;
//! - G7: no lane is dispatched ahead of one that was surely in line before
//!   it became ready (with `strict_fairness`, ahead of one that was due
//!   before it, even while every slot was busy);
//! - G8: a slot is never left free while a lane is ready, and the shard's
//!   next deadline is never later than a waiting lane's due time;
//! - with trips: a trip takes one slot and carries at most its bound of
//!   batches and, past its first batch, of weight, and leaves no lane ready
//!   that it could have carried.

mod take;

use std::collections::BTreeMap;

use ferry_shard::parts::{LaneState, Lanes, TripLimits, Waiter};
use ferry_shard::Offer;
use ferry_shard::{key_hash, QueueConfig, Refused};

use super::arrival::Arrival;
use super::harness::{ensure, BatchError, Counts, Discipline, Model, Output, Running, Script, Sim};
use super::reference::Reference;
use super::rng::Rng;
use super::scenario::{trip_limits, Input, Scenario};
use super::seeds::Tally;

/// How seeds are played.
#[derive(Clone, Copy, Debug)]
pub struct Mode {
    /// G7 by when lanes became ready (as docs/guarantees.md defines it),
    /// rather than by when the shard could first have seen them ready.
    pub strict_fairness: bool,
    /// Trips (`dispatch_trip`) instead of one batch per slot.
    pub trips: bool,
}

/// How the core fills a slot: with one batch (`dispatch`, then `complete`
/// or `release` and `answer`), or with a trip of up to `max_batches`
/// ready lanes' batches (`dispatch_trip`, then `release_trip` and
/// `answer_trip`).
#[derive(Clone, Copy, Debug)]
pub enum Carrying {
    Batches,
    Trips(TripLimits),
}

/// The keyed discipline's state in one run.
pub struct Keyed {
    carrying: Carrying,
    strict_fairness: bool,
    /// Highest rank sent so far, per key (to count late inputs).
    rank_sent_max: BTreeMap<u32, i64>,
}

/// What only the keyed runs count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyedTally {
    pub late_inputs: u64,
    /// Dispatches that had another ready lane to choose from (G7 at work).
    pub contended: u64,
    pub refused_key_full: u64,
    /// Of those, refused while the key had a batch in flight.
    pub key_full_beside_a_batch: u64,
    /// Lanes emptied by expiry or withdrawal while in the ready line (and
    /// so removed), and of their keys, those given an input again after.
    pub lanes_emptied_in_line: u64,
    pub lanes_refilled_in_line: u64,
    /// With trips: trips taken, and of those with more than one batch.
    pub trips: u64,
    pub trips_of_several: u64,
    /// Trips of their most batches while another lane was still ready.
    pub trips_full: u64,
    /// Trips that left a ready lane behind because its batch did not fit
    /// their weight.
    pub trips_stopped_by_weight: u64,
    /// Trips whose first batch alone weighed more than their bound.
    pub trips_heavy_first: u64,
    /// Trips that withdrew inputs of gone callers as they were taken.
    pub trips_with_withdrawals: u64,
}

impl Tally for KeyedTally {
    fn add(&mut self, other: &Self) {
        self.late_inputs += other.late_inputs;
        self.contended += other.contended;
        self.refused_key_full += other.refused_key_full;
        self.key_full_beside_a_batch += other.key_full_beside_a_batch;
        self.lanes_emptied_in_line += other.lanes_emptied_in_line;
        self.lanes_refilled_in_line += other.lanes_refilled_in_line;
        self.trips += other.trips;
        self.trips_of_several += other.trips_of_several;
        self.trips_full += other.trips_full;
        self.trips_stopped_by_weight += other.trips_stopped_by_weight;
        self.trips_heavy_first += other.trips_heavy_first;
        self.trips_with_withdrawals += other.trips_with_withdrawals;
    }
}

impl Script for Scenario {
    type Input = Input;

    fn arrivals(&self) -> &[Arrival<Input>] {
        &self.arrivals
    }
    fn config(&self) -> &QueueConfig {
        &self.config
    }
    fn slots(&self) -> usize {
        self.slots
    }
    fn close_tick(&self) -> Option<u64> {
        self.close_tick
    }
    fn drop_percent(&self) -> u64 {
        self.drop_percent
    }
    fn latency_max(&self) -> u64 {
        self.latency_max
    }
    fn flush_ticks(&self) -> &[u64] {
        &self.overload.flush_ticks
    }
    fn notice_percent(&self) -> u64 {
        self.overload.notice_percent
    }
    fn notice_lag_max(&self) -> u64 {
        self.overload.notice_lag_max
    }
    fn is_plain(&self) -> bool {
        self.overload.is_plain()
    }
}

impl Model for Reference {
    fn counts(&self) -> Counts {
        Counts {
            lanes: self.lanes.len() as u64,
            waiting: self.waiting() as u64,
            waiting_weight: self.waiting_weight(),
            in_flight: self.in_flight as u64,
            admitted: self.admitted,
            refused: self.refused,
            batches: self.batches,
            sent: self.sent,
            answered: self.answered,
            expired: self.expired,
            withdrawn: self.withdrawn,
        }
    }
    fn waiting(&self) -> usize {
        Reference::waiting(self)
    }
    fn slots(&self) -> usize {
        self.slots
    }
    fn waiting_bounds(&self) -> (usize, u64) {
        (self.queueing_max, self.queued_weight_max)
    }
    fn next_expiry(&self) -> Option<u64> {
        Reference::next_expiry(self)
    }
    fn count_refused(&mut self) {
        self.refused += 1;
    }
    fn close(&mut self) {
        Reference::close(self);
    }
}

impl Discipline for Keyed {
    type Input = Input;
    type Key = u32;
    type Ticket = ferry_shard::parts::LaneId;
    type Queue = Lanes<u32, Waiter<Input, Output, BatchError>>;
    type Scenario = Scenario;
    type Reference = Reference;
    type Mode = Mode;
    type Tally = KeyedTally;
    const CALLERS_LOOKED_AT_WHEN_QUIET: usize = 2;
    const CALLERS_LOOKED_AT_AFTER_COMPLETION: usize = 0;

    fn new(seed: u64, mode: Mode, rng: &mut Rng, extra: &mut Rng) -> (Self, Scenario, Reference) {
        let mut scenario = Scenario::generate(rng, extra);
        // The trip bounds come from a generator of their own: a seed plays
        // the same inputs either way. With trips, one or two slots, so that
        // lanes become ready while every slot is busy, and trips gather
        // them.
        let carrying = if mode.trips {
            let mut trip_rng = Rng::new(seed ^ 0x7219_0b0a_7ed5_11a5);
            scenario.slots = 1 + trip_rng.below(2);
            Carrying::Trips(trip_limits(&mut trip_rng))
        } else {
            Carrying::Batches
        };
        let reference = Reference::new(&scenario);
        let keyed = Keyed {
            carrying,
            strict_fairness: mode.strict_fairness,
            rank_sent_max: BTreeMap::new(),
        };
        (keyed, scenario, reference)
    }

    fn describe(sim: &Sim<Self>) -> String {
        let scenario = &sim.scenario;
        format!(
            "{:?}, {:?}, delay {} ticks, {} slots, {} keys, {} inputs, close at {:?}, {:?}",
            scenario.config,
            sim.discipline.carrying,
            scenario.delay_ticks,
            scenario.slots,
            scenario.keys,
            scenario.arrivals.len(),
            sim.close_tick,
            scenario.overload
        )
    }

    fn offer(arrival: &Arrival<Input>) -> Offer<u32, Input> {
        let key = arrival.input.key;
        Offer {
            hash: key_hash(&key),
            key,
            input: arrival.input.clone(),
            rank: arrival.rank,
            weight: arrival.weight,
            boundary: 0,
        }
    }

    fn key_of(input: &Input) -> u32 {
        input.key
    }

    fn hash_of(key: &u32) -> u64 {
        key_hash(key)
    }

    fn refusal(sim: &Sim<Self>, arrival: &Arrival<Input>) -> Option<Refused> {
        sim.reference.refusal(arrival.input.key, arrival.weight)
    }

    fn refused_for_its_key(sim: &mut Sim<Self>, arrival: &Arrival<Input>) {
        // The shard found the key's lane, looking at the time on the way.
        sim.reference.look(sim.now);
        let tally = &mut sim.summary.more;
        tally.refused_key_full += 1;
        let busy = sim
            .reference
            .lanes
            .get(&arrival.input.key)
            .is_some_and(|l| l.busy);
        tally.key_full_beside_a_batch += u64::from(busy);
    }

    fn admitted(sim: &mut Sim<Self>, arrival: &Arrival<Input>) {
        let (id, key) = (arrival.input.id, arrival.input.key);
        let rank_sent = sim.discipline.rank_sent_max.get(&key);
        if rank_sent.is_some_and(|&r| r > arrival.rank) {
            sim.summary.more.late_inputs += 1;
        }
        let emptied = sim.reference.emptied_in_line().contains(&key);
        sim.summary.more.lanes_refilled_in_line += u64::from(emptied);
        sim.reference.forget_emptied(key);
        sim.reference.look(sim.now);
        sim.reference
            .admit(key, id, arrival.rank, arrival.weight, sim.now);
    }

    fn dispatch(sim: &mut Sim<Self>) -> Result<bool, String> {
        take::dispatch(sim)
    }

    fn completed(sim: &mut Sim<Self>, running: &Running<Self>) {
        // Completing, the shard looks at the time.
        sim.reference.look(sim.now);
        for batch in &running.batches {
            sim.reference
                .complete(batch.key, batch.inputs.len(), sim.now);
        }
        sim.reference.free_slot();
    }

    fn expire(sim: &mut Sim<Self>) -> Vec<u64> {
        let emptied_before = sim.reference.emptied_in_line().len();
        let expired = sim.reference.expire(sim.now);
        count_emptied(sim, emptied_before);
        expired.into_iter().map(|(_, id)| id).collect()
    }

    fn waiting_for(sim: &Sim<Self>, key: &u32) -> Vec<u64> {
        let order = sim.reference.lane_order(*key);
        order.into_iter().map(|w| w.id).collect()
    }

    fn notice(sim: &mut Sim<Self>, key: &u32, withdraws: bool) -> Vec<u64> {
        let expected = if withdraws {
            sim.reference.noticed(*key, &sim.gone)
        } else {
            Vec::new()
        };
        let emptied_before = sim.reference.emptied_in_line().len();
        sim.reference.withdraw(*key, &expected);
        count_emptied(sim, emptied_before);
        expected
    }

    fn refresh(sim: &mut Sim<Self>) {
        sim.reference.refresh(sim.now);
    }

    /// G8: while a slot is free, the shard's next deadline is never later
    /// than a waiting lane's due time. With every slot busy the shard waits
    /// for a completion instead, and then looks for due lanes.
    fn check_deadline(sim: &Sim<Self>, deadline: Option<u64>) -> Result<(), String> {
        let reference = &sim.reference;
        let slot_free = reference.in_flight < reference.slots;
        if let Some((key, due)) = reference.next_due().filter(|_| slot_free) {
            ensure!(
                deadline.is_some_and(|d| d <= due),
                "G8: key {key} is due at {due}, a slot is free, the shard's next deadline is {deadline:?}"
            );
        }
        Ok(())
    }

    /// After every event: each key's lane is in the state the reference
    /// says: busy while its batch is in flight, ready exactly while the
    /// shard has it in its ready line (emptied or not), waiting otherwise,
    /// and none once it has nothing waiting and nothing in flight (G1, G5).
    fn check_event(sim: &Sim<Self>) -> Result<(), String> {
        for key in 0..sim.scenario.keys {
            let lane = sim.reference.lanes.get(&key);
            let want = lane.map(|lane| {
                if lane.busy {
                    LaneState::Busy
                } else if lane.waiting.is_empty() || lane.seen_since.is_some() {
                    LaneState::Ready
                } else {
                    LaneState::Waiting
                }
            });
            let got = sim.core.queue().lane_state(&key);
            ensure!(
                got == want,
                "key {key}'s lane is {got:?}, the reference says {want:?}: {lane:?}"
            );
        }
        Ok(())
    }

    /// G8: no slot is left free while a lane is ready.
    fn check_quiet(sim: &mut Sim<Self>) -> Result<(), String> {
        if sim.reference.in_flight < sim.reference.slots {
            if let Some(&(key, since, _)) = sim.reference.ready().first() {
                return Err(format!(
                    "G8: key {key} ready since {since}, a slot is free, and nothing was dispatched"
                ));
            }
        }
        Ok(())
    }

    /// G5: no lane is left at the end.
    fn check_end(sim: &Sim<Self>) -> Result<(), String> {
        ensure!(
            sim.core.queue().lanes() == 0,
            "G5: {} lanes left at the end",
            sim.core.queue().lanes()
        );
        Ok(())
    }
}

/// Counts the lanes the reference emptied in its ready line since it had
/// `emptied_before` of them.
fn count_emptied(sim: &mut Sim<Keyed>, emptied_before: usize) {
    let emptied = sim.reference.emptied_in_line().len();
    sim.summary.more.lanes_emptied_in_line += emptied.saturating_sub(emptied_before) as u64;
}
