//! One simulation of one shard, whatever its queueing discipline.
//!
//! A seed drives the shard's own [`ShardCore`] with a simulated clock and a
//! simulated batch function: callers submit, loads take a seeded time and
//! end in a seeded way (outputs, an error, a panic, the wrong number of
//! outputs, or hanging until close), callers drop their futures and send
//! withdrawal notices, flushes are requested, inputs expire, and the shard
//! is closed at a seeded moment. Events due at the same moment happen in a
//! seeded order.
//!
//! [`Sim`] holds what every discipline shares: the event loop and its
//! clock, the callers and their answers, faults, flushes, close, and the
//! checks that hold whatever the queue (every input ends in exactly one
//! outcome, the right one; the core's counters and the accounting agree
//! with the reference; the core ends quiet). A [`Discipline`] supplies what
//! differs: the queue and its scenario, the reference model, how a load is
//! taken and checked, and its own invariants.

mod checks;
mod events;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::panic::UnwindSafe;

use ferry_shard::parts::{Queue, ShardCore, Waiter};
use ferry_shard::Offer;
use ferry_shard::{QueueConfig, Refused};

use super::answer::Caller;
use super::arrival::{Arrival, Played};
use super::flushes::Flushes;
use super::plan::TripPlan;
use super::rng::Rng;
use super::seeds::{self, Tally};
use super::summary::Summary;

/// Events one seed may take before the run counts as stuck.
pub const STEPS_MAX: usize = 200_000;

pub type Output = u64;
/// A failed batch's error is the batch's number, so a caller can tell whose
/// failure it was given (G10).
pub type BatchError = u64;
pub type Core<D> =
    ShardCore<<D as Discipline>::Queue, <D as Discipline>::Input, Output, BatchError>;
pub type Answer<D> = Caller<<D as Discipline>::Input, Output, BatchError>;
pub type Reply<D> = ferry_shard::parts::Reply<<D as Discipline>::Input, Output, BatchError>;

/// Returns the error `format!($($arg)*)` unless `$cond` holds.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}
pub(crate) use ensure;

/// Prints an event of `$sim`'s run, with its moment, when it is traced.
macro_rules! trace {
    ($sim:expr, $($arg:tt)*) => {
        if $sim.trace {
            eprintln!("[t={:>4}] {}", $sim.now, format!($($arg)*));
        }
    };
}
pub(crate) use trace;

/// A seed's scenario as the event loop reads it.
pub trait Script {
    type Input: Played;
    fn arrivals(&self) -> &[Arrival<Self::Input>];
    fn config(&self) -> &QueueConfig;
    fn slots(&self) -> usize;
    /// `None`: closed only once nothing else is left to happen.
    fn close_tick(&self) -> Option<u64>;
    /// Percent chance, at each quiet moment, that one waiting caller drops
    /// its future.
    fn drop_percent(&self) -> u64;
    /// Latest load latency, in ticks.
    fn latency_max(&self) -> u64;
    /// When flushes are requested, in ascending order.
    fn flush_ticks(&self) -> &[u64];
    /// Percent chance that a caller who leaves sends a withdrawal notice,
    /// arriving `0..=notice_lag_max` ticks later.
    fn notice_percent(&self) -> u64;
    fn notice_lag_max(&self) -> u64;
    /// None of the overload settings: the seed plays as before they existed.
    fn is_plain(&self) -> bool;
}

/// The figures every reference model keeps, as the core's stats name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub lanes: u64,
    pub waiting: u64,
    pub waiting_weight: u64,
    pub in_flight: u64,
    pub admitted: u64,
    pub refused: u64,
    pub batches: u64,
    pub sent: u64,
    pub answered: u64,
    pub expired: u64,
    pub withdrawn: u64,
}

/// What the event loop asks of a discipline's reference model.
pub trait Model {
    fn counts(&self) -> Counts;
    fn waiting(&self) -> usize;
    fn slots(&self) -> usize;
    /// `max_waiting` and `max_waiting_weight`.
    fn waiting_bounds(&self) -> (usize, u64);
    /// When the next waiting input expires, with `max_queue_time`.
    fn next_expiry(&self) -> Option<u64>;
    /// The shard refused an input.
    fn count_refused(&mut self);
    fn close(&mut self);
}

/// What one queueing discipline brings to the simulation. Its functions
/// take the whole run, as its phase of the loop does.
pub trait Discipline: Sized {
    type Input: Played;
    type Key: Clone + Debug;
    type Ticket: Copy + Debug;
    type Queue: Queue<
        Waiter<Self::Input, Output, BatchError>,
        Key = Self::Key,
        Ticket = Self::Ticket,
    >;
    type Scenario: Script<Input = Self::Input>;
    type Reference: Model;
    /// How its seeds are played, beyond tracing.
    type Mode: Copy + Debug + UnwindSafe;
    /// What it counts besides [`Summary`].
    type Tally: Tally + Copy + Debug + PartialEq + Eq;
    /// Waiting callers looked at (that they heard nothing) at each quiet
    /// moment, and after each completion.
    const CALLERS_LOOKED_AT_WHEN_QUIET: usize;
    const CALLERS_LOOKED_AT_AFTER_COMPLETION: usize;

    /// The discipline's state, the seed's scenario and its reference.
    fn new(
        seed: u64,
        mode: Self::Mode,
        rng: &mut Rng,
        extra: &mut Rng,
    ) -> (Self, Self::Scenario, Self::Reference);
    /// The scenario in one line, for a trace.
    fn describe(sim: &Sim<Self>) -> String;
    /// `arrival` as the core is offered it.
    fn offer(arrival: &Arrival<Self::Input>) -> Offer<Self::Key, Self::Input>;
    fn key_of(input: &Self::Input) -> Self::Key;
    /// The hash a withdrawal notice for `key` carries.
    fn hash_of(key: &Self::Key) -> u64;

    /// Why the reference refuses `arrival` now, if it does.
    fn refusal(sim: &Sim<Self>, arrival: &Arrival<Self::Input>) -> Option<Refused>;
    /// `arrival` was refused `KeyFull`, as the reference said.
    fn refused_for_its_key(sim: &mut Sim<Self>, arrival: &Arrival<Self::Input>);
    /// `arrival` was admitted, as the reference said: it records it.
    fn admitted(sim: &mut Sim<Self>, arrival: &Arrival<Self::Input>);
    /// Asks the core for a load, checks it, and starts it with
    /// [`Sim::start`]; `false` if it had none to give.
    fn dispatch(sim: &mut Sim<Self>) -> Result<bool, String>;
    /// `running` was released and answered: the reference frees its lanes
    /// and its slot.
    fn completed(sim: &mut Sim<Self>, running: &Running<Self>);
    /// The reference's inputs that expire now, taken out of it.
    fn expire(sim: &mut Sim<Self>) -> Vec<u64>;
    /// The inputs waiting for `key`, in the order a notice scans them.
    fn waiting_for(sim: &Sim<Self>, key: &Self::Key) -> Vec<u64>;
    /// What a notice for `key` withdraws (nothing unless `withdraws`),
    /// taken out of the reference.
    fn notice(sim: &mut Sim<Self>, key: &Self::Key, withdraws: bool) -> Vec<u64>;
    /// Brings the reference's view of readiness up to `sim.now`.
    fn refresh(sim: &mut Sim<Self>);

    /// Whether the core's next `deadline` comes in time for what waits
    /// (expiry aside, which the harness checks).
    fn check_deadline(sim: &Sim<Self>, deadline: Option<u64>) -> Result<(), String>;
    /// After every event, the discipline's own invariants.
    fn check_event(sim: &Sim<Self>) -> Result<(), String>;
    /// When nothing more happens at this moment: no slot is left free
    /// while a load is ready.
    fn check_quiet(sim: &mut Sim<Self>) -> Result<(), String>;
    /// At the end, the discipline's own invariants.
    fn check_end(sim: &Sim<Self>) -> Result<(), String>;
}

/// One batch of a load in flight.
pub struct Carried<D: Discipline> {
    pub lane: D::Ticket,
    pub key: D::Key,
    /// The batch's number: a failed batch's error, so that a caller can
    /// tell whose failure it was given (G10).
    pub batch: u64,
    pub inputs: Vec<D::Input>,
    pub replies: Vec<Reply<D>>,
}

/// What one slot holds while the simulated user function works on it: a
/// batch, or a trip of batches.
pub struct Running<D: Discipline> {
    pub batches: Vec<Carried<D>>,
    /// The trip's number, with trips.
    pub trip: Option<u64>,
    pub plan: TripPlan,
    pub latency: u64,
    /// `None` while it hangs until close.
    pub finish: Option<u64>,
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

/// One seed's run.
pub struct Sim<D: Discipline> {
    pub discipline: D,
    pub scenario: D::Scenario,
    pub rng: Rng,
    pub core: Core<D>,
    pub reference: D::Reference,
    pub now: u64,
    pub arrival_next: usize,
    pub closed: bool,
    pub close_tick: Option<u64>,
    pub running: Vec<Running<D>>,
    pub batch_next: u64,
    /// Trips taken so far (the next one's number).
    pub trip_next: u64,
    /// Callers of admitted, unanswered inputs that still wait, by input id.
    pub callers: BTreeMap<u64, Answer<D>>,
    /// Admitted inputs not resolved yet (waiting or in flight).
    pub open: BTreeSet<u64>,
    pub answered: BTreeSet<u64>,
    pub refused: BTreeSet<u64>,
    pub expired: BTreeSet<u64>,
    pub withdrawn: BTreeSet<u64>,
    /// Open inputs whose callers dropped their futures.
    pub gone: BTreeSet<u64>,
    /// Inputs submitted so far, and of those refused by the closed intake
    /// before the shard saw them.
    pub submitted: u64,
    pub refused_at_intake: u64,
    /// Draws for the overload moments during the run, so that plain seeds
    /// draw from `rng` exactly as before.
    pub extra: Rng,
    /// Callers who will drop their futures: (tick, input id).
    pub drops: Vec<(u64, u64)>,
    /// Withdrawal notices on their way to the shard: (tick, key).
    pub notices: Vec<(u64, D::Key)>,
    pub flushes: Flushes,
    pub summary: Summary<D::Tally>,
    pub trace: bool,
}

/// Plays one seed; a panic inside the shard counts as a failure of the seed.
pub fn play<D: Discipline>(
    seed: u64,
    mode: D::Mode,
    trace: bool,
) -> Result<Summary<D::Tally>, String> {
    seeds::play(move || Sim::<D>::new(seed, mode, trace).run())
}

impl<D: Discipline> Sim<D> {
    pub fn new(seed: u64, mode: D::Mode, trace: bool) -> Self {
        let mut rng = Rng::new(seed);
        let mut extra = Rng::new(seed ^ 0x0ee1_0ad5_eed5_0f7e);
        let (discipline, scenario, reference) = D::new(seed, mode, &mut rng, &mut extra);
        let core = Core::<D>::new(scenario.config().clone(), scenario.slots());
        Self {
            discipline,
            close_tick: scenario.close_tick(),
            scenario,
            rng,
            core,
            reference,
            now: 0,
            arrival_next: 0,
            closed: false,
            running: Vec::new(),
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
            summary: Summary::default(),
            trace,
        }
    }

    pub fn run(mut self) -> Result<Summary<D::Tally>, String> {
        if self.trace {
            eprintln!("scenario: {}", D::describe(&self));
        }
        self.summary.plain_seeds = u64::from(self.scenario.is_plain());
        let mut steps = 0;
        loop {
            self.play_moment(&mut steps)?;
            self.check_quiet_moment()?;
            self.maybe_drop_a_caller();
            match self.next_tick()? {
                Some(tick) => {
                    debug_assert!(tick > self.now);
                    self.now = tick;
                    D::refresh(&mut self);
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

    /// Everything due now, in a seeded order, each event checked after it;
    /// dispatch is tried until it has nothing more to give.
    fn play_moment(&mut self, steps: &mut usize) -> Result<(), String> {
        let mut dispatch_tried = false;
        loop {
            *steps += 1;
            ensure!(*steps <= STEPS_MAX, "no end after {STEPS_MAX} events");
            let enabled = self.enabled(dispatch_tried);
            if enabled.is_empty() {
                return Ok(());
            }
            let action = enabled[self.rng.below(enabled.len())];
            dispatch_tried = false;
            match action {
                Action::Admit => self.admit()?,
                Action::Complete => self.complete()?,
                Action::Close => self.close(),
                Action::Dispatch => dispatch_tried = !D::dispatch(self)?,
                Action::Expire => self.expire()?,
                Action::Notice => self.notice()?,
                Action::Drop => self.drop_due_caller(),
                Action::Flush => self.flush(),
            }
            D::refresh(self);
            self.settle_flushes()?;
            self.check_counts()?;
            D::check_event(self)?;
        }
    }

    /// The events that may happen now, in a fixed order.
    fn enabled(&self, dispatch_tried: bool) -> Vec<Action> {
        let now = self.now;
        let due = |tick: Option<u64>| tick.is_some_and(|t| t <= now);
        let mut enabled = Vec::with_capacity(8);
        let arrival = self.scenario.arrivals().get(self.arrival_next);
        let candidates = [
            (due(arrival.map(|a| a.tick)), Action::Admit),
            (
                due(self.running.iter().filter_map(|r| r.finish).min()),
                Action::Complete,
            ),
            (!self.closed && due(self.close_tick), Action::Close),
            (!dispatch_tried, Action::Dispatch),
            // The overload events; none is ever enabled in a plain seed.
            (due(self.reference.next_expiry()), Action::Expire),
            (
                due(self.notices.iter().map(|&(t, _)| t).min()),
                Action::Notice,
            ),
            (due(self.drops.iter().map(|&(t, _)| t).min()), Action::Drop),
            (due(self.flush_next()), Action::Flush),
        ];
        for (on, action) in candidates {
            if on {
                enabled.push(action);
            }
        }
        enabled
    }

    fn flush_next(&self) -> Option<u64> {
        self.scenario
            .flush_ticks()
            .get(self.flushes.requested())
            .copied()
    }

    fn all_done(&self) -> bool {
        self.arrival_next == self.scenario.arrivals().len()
            && self.running.is_empty()
            && self.closed
            && self.drops.is_empty()
            && self.notices.is_empty()
            && self.flushes.requested() == self.scenario.flush_ticks().len()
    }

    /// The next moment something happens, checking on the way that the
    /// shard's next deadline comes in time for what waits (G8 and its
    /// unkeyed analogue, by the discipline) and for the next expiry.
    fn next_tick(&mut self) -> Result<Option<u64>, String> {
        let deadline = self.core.next_deadline().map(|d| d.as_micros() as u64);
        D::check_deadline(self, deadline)?;
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
                .arrivals()
                .get(self.arrival_next)
                .map(|a| a.tick),
            self.running.iter().filter_map(|r| r.finish).min(),
            self.close_tick.filter(|_| !self.closed),
            deadline.filter(|&d| d > self.now),
            expiry,
            self.notices.iter().map(|&(t, _)| t).min(),
            self.drops.iter().map(|&(t, _)| t).min(),
            self.flush_next(),
        ];
        Ok(candidates.into_iter().flatten().min())
    }

    /// The scenario's arrival of input `id`.
    pub fn arrival(&self, id: u64) -> &Arrival<D::Input> {
        &self.scenario.arrivals()[id as usize]
    }
}
