//! The unkeyed discipline (`Fifo`) in the simulation
//! (docs/guarantees.md#unkeyed-batching): its scenario
//! (`unkeyed_scenario.rs`), its reference (`unkeyed_reference.rs`: a plain
//! `Vec` of waiting inputs in admission order, readiness from its
//! definition), and its own checks:
//!
//! - FIFO: each batch is exactly the front of what waits, as many inputs as
//!   fit the size and weight bounds, less the inputs of gone callers the
//!   take withdraws; all batches one after the other are the admitted
//!   inputs in admission order, less those expired or withdrawn;
//! - slots: a batch is taken exactly when one is ready and a slot is free,
//!   and a slot is never left free while a batch is ready (the G8
//!   analogue); while a slot is free the core's next deadline is never
//!   later than the oldest waiting input's due time.

use std::collections::BTreeSet;

use ferry_shard::parts::{Fifo, Waiter};
use ferry_shard::Offer;
use ferry_shard::{QueueConfig, Refused};

use super::arrival::{at, Arrival, Played};
use super::harness::{ensure, trace, BatchError, Carried, Counts, Discipline, Model, Output};
use super::harness::{Running, Script, Sim};
use super::rng::Rng;
use super::seeds::Tally;
use super::unkeyed_reference::{Reference, Take};
use super::unkeyed_scenario::{Input, Scenario};

/// The unkeyed discipline's state in one run: admitted inputs, in
/// admission order, and sent inputs, in the order their batches started:
/// FIFO says they end up equal.
pub struct Unkeyed {
    admitted_order: Vec<u64>,
    sent_order: Vec<u64>,
}

/// What only the unkeyed runs count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnkeyedTally {
    /// Batches of more than one input.
    pub batches_grouped: u64,
    /// Batches cut short by the weight bound.
    pub batches_cut_by_weight: u64,
    /// Batches that went because their oldest input was due.
    pub batches_due: u64,
    /// Batches started while another was out (several slots at work).
    pub batches_beside_another: u64,
    /// Quiet moments with a batch ready and every slot busy.
    pub ready_without_a_slot: u64,
}

impl Tally for UnkeyedTally {
    fn add(&mut self, other: &Self) {
        self.batches_grouped += other.batches_grouped;
        self.batches_cut_by_weight += other.batches_cut_by_weight;
        self.batches_due += other.batches_due;
        self.batches_beside_another += other.batches_beside_another;
        self.ready_without_a_slot += other.ready_without_a_slot;
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
        self.bounds.slots
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
            lanes: 0,
            waiting: self.waiting.len() as u64,
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
        self.waiting.len()
    }
    fn slots(&self) -> usize {
        self.bounds.slots
    }
    fn waiting_bounds(&self) -> (usize, u64) {
        (self.bounds.queueing_max, self.bounds.queued_weight_max)
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

impl Discipline for Unkeyed {
    type Input = Input;
    type Key = ();
    type Ticket = ();
    type Queue = Fifo<Waiter<Input, Output, BatchError>>;
    type Scenario = Scenario;
    type Reference = Reference;
    type Mode = ();
    type Tally = UnkeyedTally;
    const CALLERS_LOOKED_AT_WHEN_QUIET: usize = 3;
    const CALLERS_LOOKED_AT_AFTER_COMPLETION: usize = 3;

    fn new(_seed: u64, _mode: (), rng: &mut Rng, extra: &mut Rng) -> (Self, Scenario, Reference) {
        let scenario = Scenario::generate(rng, extra);
        let reference = Reference::new(scenario.bounds.clone());
        let unkeyed = Unkeyed {
            admitted_order: Vec::new(),
            sent_order: Vec::new(),
        };
        (unkeyed, scenario, reference)
    }

    fn describe(sim: &Sim<Self>) -> String {
        format!(
            "{:?}, {} inputs, close at {:?}, {:?}",
            sim.scenario.bounds,
            sim.scenario.arrivals.len(),
            sim.close_tick,
            sim.scenario.overload
        )
    }

    fn offer(arrival: &Arrival<Input>) -> Offer<(), Input> {
        Offer {
            hash: 0,
            key: (),
            input: arrival.input.clone(),
            rank: 0,
            weight: arrival.weight,
            boundary: 0,
        }
    }

    fn key_of(_input: &Input) {}

    fn hash_of(_key: &()) -> u64 {
        0
    }

    fn refusal(sim: &Sim<Self>, arrival: &Arrival<Input>) -> Option<Refused> {
        sim.reference.refusal(arrival.weight)
    }

    fn refused_for_its_key(_sim: &mut Sim<Self>, arrival: &Arrival<Input>) {
        unreachable!(
            "the unkeyed reference refuses no key, yet input {} was refused KeyFull",
            arrival.input.id
        )
    }

    fn admitted(sim: &mut Sim<Self>, arrival: &Arrival<Input>) {
        let id = arrival.input.id;
        sim.reference.admit(id, arrival.weight, sim.now);
        sim.discipline.admitted_order.push(id);
    }

    fn dispatch(sim: &mut Sim<Self>) -> Result<bool, String> {
        dispatch(sim)
    }

    fn completed(sim: &mut Sim<Self>, running: &Running<Self>) {
        sim.reference.complete(running.batches[0].inputs.len());
    }

    fn expire(sim: &mut Sim<Self>) -> Vec<u64> {
        sim.reference.expire(sim.now)
    }

    fn waiting_for(sim: &Sim<Self>, _key: &()) -> Vec<u64> {
        sim.reference.waiting.iter().map(|w| w.id).collect()
    }

    fn notice(sim: &mut Sim<Self>, _key: &(), withdraws: bool) -> Vec<u64> {
        if withdraws {
            sim.reference.notice(&sim.gone)
        } else {
            Vec::new()
        }
    }

    fn refresh(_sim: &mut Sim<Self>) {}

    /// Latency: while a slot is free, the core's next deadline is never
    /// later than the oldest waiting input's due time. With every slot busy
    /// the core waits for a completion instead, and then looks at the time.
    fn check_deadline(sim: &Sim<Self>, deadline: Option<u64>) -> Result<(), String> {
        let reference = &sim.reference;
        let slot_free = reference.in_flight < reference.bounds.slots;
        let timed = !reference.closed && reference.bounds.delay > 0;
        if let Some(due) = reference.oldest_due().filter(|_| slot_free && timed) {
            ensure!(
                deadline.is_some_and(|d| d <= due),
                "latency: the oldest input is due at {due}, a slot is free, \
                 the core's next deadline is {deadline:?}"
            );
        }
        Ok(())
    }

    fn check_event(_sim: &Sim<Self>) -> Result<(), String> {
        Ok(())
    }

    /// Slots: no slot is left free while a batch is ready.
    fn check_quiet(sim: &mut Sim<Self>) -> Result<(), String> {
        ensure!(
            !sim.reference.must_dispatch(sim.now),
            "slots: a batch is ready ({} waiting), a slot is free, and nothing was dispatched",
            sim.reference.waiting.len()
        );
        if sim.reference.is_ready(sim.now) {
            sim.summary.more.ready_without_a_slot += 1;
        }
        Ok(())
    }

    /// G9, FIFO: nothing waits at the end, and what was sent is what was
    /// admitted, in admission order, less what expired or was withdrawn.
    fn check_end(sim: &Sim<Self>) -> Result<(), String> {
        let queue = sim.core.queue();
        ensure!(
            queue.waiting() == 0 && queue.waiting_weight() == 0,
            "G9: {} inputs still waiting at the end",
            queue.waiting()
        );
        let admitted_sent: Vec<u64> = sim
            .discipline
            .admitted_order
            .iter()
            .copied()
            .filter(|id| !sim.expired.contains(id) && !sim.withdrawn.contains(id))
            .collect();
        ensure!(
            sim.discipline.sent_order == admitted_sent,
            "FIFO: sent {:?}, admitted (less expired and withdrawn) {:?}",
            sim.discipline.sent_order,
            admitted_sent
        );
        Ok(())
    }
}

/// Asks the core for a batch; `false` if it had none to give, which must
/// be exactly when the reference has none ready or no slot free.
fn dispatch(sim: &mut Sim<Unkeyed>) -> Result<bool, String> {
    let must = sim.reference.must_dispatch(sim.now);
    let ready_before = sim.reference.is_ready(sim.now);
    let only_due = sim.reference.only_due(sim.now);
    let (_, cut_by_weight) = sim.reference.expected_batch();
    let (waiting_before, in_flight_before) = (sim.reference.waiting.len(), sim.reference.in_flight);
    let slots = sim.reference.bounds.slots;
    let slot_free = in_flight_before < slots;
    // What the take may withdraw: waiting inputs of gone callers.
    let withdrawable: BTreeSet<u64> = if sim.scenario.config.withdraw_on_drop {
        let waiting: BTreeSet<u64> = sim.reference.waiting.iter().map(|w| w.id).collect();
        sim.gone.intersection(&waiting).copied().collect()
    } else {
        BTreeSet::new()
    };
    let withdrawn_before = sim.core.stats().withdrawn;
    let dispatch = sim.core.dispatch(at(sim.now));
    // With a slot free the core takes while a batch is ready; with none it
    // does not look.
    let want = if slot_free {
        sim.reference.take(sim.now, &withdrawable)
    } else {
        Take::default()
    };
    check_withdrawn_at_take(sim, &want, &withdrawable, withdrawn_before)?;
    let Some(dispatch) = dispatch else {
        ensure!(
            want.sent.is_none(),
            "slots: a batch is ready ({waiting_before} waiting) and {in_flight_before} of {slots} \
             slots are busy, but the core dispatched nothing; the reference sends {:?}",
            want.sent
        );
        return Ok(false);
    };
    let ids: Vec<u64> = dispatch.inputs.iter().map(|i| i.id).collect();
    trace!(sim, "dispatch {ids:?}");
    ensure!(
        must,
        "slots/latency: dispatched {ids:?} with {in_flight_before} of {slots} slots busy, \
         ready: {ready_before}"
    );
    ensure!(
        dispatch.replies.len() == ids.len(),
        "a batch of {} inputs with {} replies",
        ids.len(),
        dispatch.replies.len()
    );
    sim.check_sent(&dispatch.inputs)?;
    let expected = want.sent.clone().unwrap_or_default();
    ensure!(
        ids == expected,
        "FIFO: sent {ids:?}; the front of the queue, as much as fits, less the inputs of \
         gone callers, is {expected:?} (the take withdraws {:?})",
        want.withdrawn
    );
    let tally = &mut sim.summary.more;
    tally.batches_beside_another += u64::from(in_flight_before > 0);
    tally.batches_grouped += u64::from(ids.len() > 1);
    // Whether the batch was cut short, or went only because it was due, is
    // known of the first batch the take formed.
    if want.withdrawn.is_empty() {
        tally.batches_cut_by_weight += u64::from(cut_by_weight);
        tally.batches_due += u64::from(only_due);
    }
    sim.discipline.sent_order.extend(&ids);
    let batch = Carried {
        lane: (),
        key: (),
        batch: sim.batch_next,
        inputs: dispatch.inputs,
        replies: dispatch.replies,
    };
    sim.batch_next += 1;
    sim.start(vec![batch], None);
    Ok(true)
}

/// The inputs the core let go of in a take are exactly those the reference
/// withdraws, and it counts them.
fn check_withdrawn_at_take(
    sim: &mut Sim<Unkeyed>,
    want: &Take,
    withdrawable: &BTreeSet<u64>,
    withdrawn_before: u64,
) -> Result<(), String> {
    let counted = sim.core.stats().withdrawn - withdrawn_before;
    ensure!(
        counted == want.withdrawn.len() as u64,
        "withdraw_on_drop: the core counts {counted} withdrawn at a take; the reference \
         withdraws {:?}",
        want.withdrawn
    );
    for &id in withdrawable {
        let held = sim.arrival(id).input.is_held();
        ensure!(
            held != want.withdrawn.contains(&id),
            "withdraw_on_drop: after a take, input {id} of a gone caller is {} by the core; \
             the reference withdraws {:?}",
            if held { "still held" } else { "let go" },
            want.withdrawn
        );
    }
    if !want.withdrawn.is_empty() {
        trace!(sim, "the take withdraws {:?}", want.withdrawn);
    }
    sim.resolve_withdrawn(&want.withdrawn);
    sim.summary.withdrawn_at_take += want.withdrawn.len() as u64;
    sim.summary.batches_withdrawn_whole += want.batches_withdrawn_whole;
    Ok(())
}
