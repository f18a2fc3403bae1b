//! Event time through the shard's own core: a seeded run with a lateness
//! hold, late inputs refused or not, and boundaries, checked against what
//! the contract says plainly rather than against a second implementation.
//!
//! A seed picks a few keys, a lateness, a disorder (how far an input's
//! event time may lag its arrival: within the lateness, or up to twice it),
//! whether late inputs are refused, whether batches keep to a boundary (a
//! bucket of event time), the slots, the batch size and, for some, a batch
//! delay beside the hold. Inputs arrive over
//! simulated milliseconds (the clock's zero is the UNIX epoch, so an event
//! time and a `now` compare directly); batches take a seeded time. The
//! clock jumps from event to event: the next arrival, the next completion,
//! or the core's next deadline, so a held input that the timer forgot
//! would leave the run stuck, and fail it.
//!
//! Checked:
//! - an input is late exactly when its event time plus the lateness had
//!   passed at its arrival; with `refuse_late` it is answered `Late`, handed
//!   back, never sent, and counted in `refused_late`;
//! - no input is sent before its hold ends, until close (which ends every
//!   hold);
//! - with boundaries, no batch holds two buckets;
//! - every input sent in time is sent, per key, in event-time order across
//!   batches: nothing sent before it had a later event time;
//! - every admitted input is answered exactly once, with its own output.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use ferry_shard::parts::{
    answer_cell, BatchOutcome, Lanes, Receiver, ShardCore, Submission, Waiter,
};
use ferry_shard::Offer;
use ferry_shard::{key_hash, FerryError, Hold, QueueConfig};

use super::answer::try_answer;
use super::rng::Rng;

/// An input: its id, key and event time (ms since the epoch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    id: u64,
    key: u32,
    at_ms: i64,
}

type Outcome = Result<u64, FerryError<Event, u64>>;
type Core = ShardCore<Lanes<u32, Waiter<Event, u64, u64>>, Event, u64, u64>;
type Reply = ferry_shard::parts::Reply<Event, u64, u64>;

fn at(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// What one seed plays.
#[derive(Debug)]
struct Setup {
    keys: u32,
    lateness_ms: u64,
    disorder_ms: u64,
    refuse_late: bool,
    /// Event-time bucket of the boundary, in ms, if batches keep to one.
    bucket_ms: Option<i64>,
    slots: usize,
    batch_size_max: usize,
    /// `max_batch_delay` beside the hold, in ms (0 for none).
    delay_ms: u64,
    inputs: u64,
}

impl Setup {
    fn of(rng: &mut Rng) -> Self {
        let lateness_ms = rng.range(1, 30);
        let disorder_ms = if rng.chance(50) {
            rng.range(0, lateness_ms - 1)
        } else {
            rng.range(0, 2 * lateness_ms)
        };
        Self {
            keys: rng.range(1, 4) as u32,
            lateness_ms,
            disorder_ms,
            refuse_late: rng.chance(50),
            bucket_ms: rng.chance(50).then(|| rng.range(2, 20) as i64),
            slots: rng.range(1, 3) as usize,
            batch_size_max: rng.range(1, 8) as usize,
            delay_ms: if rng.chance(30) { rng.range(1, 10) } else { 0 },
            inputs: rng.range(50, 300),
        }
    }

    fn config(&self) -> QueueConfig {
        QueueConfig {
            max_batch_size: self.batch_size_max,
            max_batch_delay: at(self.delay_ms),
            hold: Some(Hold {
                refuse_late: self.refuse_late,
                ..Hold::new(at(self.lateness_ms))
            }),
            boundaries: self.bucket_ms.is_some(),
            ..QueueConfig::default()
        }
    }

    fn bucket_of(&self, at_ms: i64) -> i64 {
        self.bucket_ms.map_or(0, |bucket| at_ms.div_euclid(bucket))
    }

    fn hold_end(&self, event: &Event) -> u64 {
        (event.at_ms + self.lateness_ms as i64).max(0) as u64
    }
}

/// An input on its way: when it arrives, and the input.
struct Arrival {
    ms: u64,
    event: Event,
}

fn arrivals(setup: &Setup, rng: &mut Rng) -> Vec<Arrival> {
    let mut ms = 0;
    (0..setup.inputs)
        .map(|id| {
            ms += rng.range(0, 3);
            let lag = rng.range(0, setup.disorder_ms) as i64;
            Arrival {
                ms,
                event: Event {
                    id,
                    key: rng.range(0, u64::from(setup.keys) - 1) as u32,
                    at_ms: ms as i64 - lag,
                },
            }
        })
        .collect()
}

/// A batch in flight: its ticket, callers and inputs' ids, and when it ends.
struct InFlight {
    ends_ms: u64,
    ticket: ferry_shard::parts::LaneId,
    replies: Vec<Reply>,
    ids: Vec<u64>,
}

/// What a run met, summed over seeds: the test fails if a case is never met.
#[derive(Debug, Default)]
pub struct Met {
    pub late_refused: u64,
    pub late_sent: u64,
    /// Inputs sent in time (each waited for its hold).
    pub held: u64,
    pub batches_in_buckets: u64,
    /// Runs with a batch delay beside the hold.
    pub with_delay: u64,
}

/// One run of `seed`; `Err` says what broke.
pub fn play(seed: u64, met: &mut Met) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let setup = Setup::of(&mut rng);
    met.with_delay += u64::from(setup.delay_ms > 0);
    let arrivals = arrivals(&setup, &mut rng);
    let mut run = Run {
        core: Core::new(setup.config(), setup.slots),
        callers: HashMap::new(),
        late: Vec::new(),
        late_arrivals: HashSet::new(),
        in_flight: Vec::new(),
        sent_at: HashMap::new(),
        last_sent: HashMap::new(),
        closed: false,
        setup,
    };
    let mut now = 0;
    let mut next = 0;
    loop {
        while next < arrivals.len() && arrivals[next].ms <= now {
            run.admit(&arrivals[next], now, met)?;
            next += 1;
        }
        if next == arrivals.len() && !run.closed {
            run.core.close();
            run.closed = true;
        }
        run.complete_due(now);
        run.dispatch(now, &mut rng, met)?;
        let Some(then) = run.next_event(now, arrivals.get(next).map(|a| a.ms)) else {
            break;
        };
        now = then;
    }
    run.check_end(met)
}

struct Run {
    setup: Setup,
    core: Core,
    callers: HashMap<u64, Receiver<Outcome>>,
    /// Ids answered `Late`.
    late: Vec<u64>,
    /// Ids that arrived late (refused or not).
    late_arrivals: HashSet<u64>,
    in_flight: Vec<InFlight>,
    /// When each input was sent.
    sent_at: HashMap<u64, u64>,
    /// Per key, the latest event time sent in time (not late).
    last_sent: HashMap<u32, i64>,
    closed: bool,
}

impl Run {
    fn admit(&mut self, arrival: &Arrival, now: u64, met: &mut Met) -> Result<(), String> {
        let event = arrival.event.clone();
        let late = self.setup.hold_end(&event) <= now;
        if late {
            self.late_arrivals.insert(event.id);
        }
        let (reply, mut answer) = answer_cell();
        let offer = Offer::new(
            key_hash(&event.key),
            event.key,
            event.clone(),
            event.at_ms,
            1,
        )
        .bounded(self.setup.bucket_of(event.at_ms));
        self.core.admit(Submission { offer, reply }, at(now));
        let refused = try_answer(&mut answer).map_err(|_| "an answer dropped".to_string())?;
        match (late && self.setup.refuse_late, refused) {
            (true, Some(Err(FerryError::Late { input }))) if input == event => {
                met.late_refused += 1;
                self.late.push(event.id);
            }
            (false, None) => {
                met.late_sent += u64::from(late);
                self.callers.insert(event.id, answer);
            }
            (should_refuse, got) => {
                return Err(format!(
                    "input {event:?} at {now} ms (late: {late}, refused as late: {should_refuse}) \
                     got {got:?}"
                ))
            }
        }
        Ok(())
    }

    fn complete_due(&mut self, now: u64) {
        let mut at_index = 0;
        while at_index < self.in_flight.len() {
            if self.in_flight[at_index].ends_ms > now {
                at_index += 1;
                continue;
            }
            let batch = self.in_flight.swap_remove(at_index);
            let outputs = batch.ids.clone();
            self.core.complete(
                batch.ticket,
                batch.replies,
                BatchOutcome::Returned(Ok(outputs)),
                at(now),
            );
        }
    }

    fn dispatch(&mut self, now: u64, rng: &mut Rng, met: &mut Met) -> Result<(), String> {
        while let Some(batch) = self.core.dispatch(at(now)) {
            let ids: Vec<u64> = batch.inputs.iter().map(|e| e.id).collect();
            let buckets: Vec<i64> = batch
                .inputs
                .iter()
                .map(|e| self.setup.bucket_of(e.at_ms))
                .collect();
            if buckets.windows(2).any(|pair| pair[0] != pair[1]) {
                return Err(format!(
                    "batch {ids:?} at {now} ms mixes buckets {buckets:?}"
                ));
            }
            met.batches_in_buckets += u64::from(self.setup.bucket_ms.is_some());
            for event in &batch.inputs {
                self.check_sent(event, batch.key, now, met)?;
            }
            self.in_flight.push(InFlight {
                ends_ms: now + rng.range(0, 5),
                ticket: batch.ticket,
                replies: batch.replies,
                ids,
            });
        }
        Ok(())
    }

    /// An input leaving in a batch of `key` at `now`: of that key, not
    /// before its hold ends (until close), and, if sent in time, after no
    /// input of a later event time.
    fn check_sent(
        &mut self,
        event: &Event,
        key: u32,
        now: u64,
        met: &mut Met,
    ) -> Result<(), String> {
        if event.key != key {
            return Err(format!("input {event:?} in a batch of key {key}"));
        }
        let ends = self.setup.hold_end(event);
        if ends > now && !self.closed {
            return Err(format!(
                "input {event:?} sent at {now} ms, held until {ends}"
            ));
        }
        if self.sent_at.insert(event.id, now).is_some() {
            return Err(format!("input {event:?} sent twice"));
        }
        if self.late_arrivals.contains(&event.id) {
            return Ok(()); // Late, not held: the store places it.
        }
        let last = self.last_sent.entry(key).or_insert(i64::MIN);
        if event.at_ms < *last {
            return Err(format!(
                "input {event:?} sent at {now} ms after an input of key {key} at {last} ms"
            ));
        }
        *last = event.at_ms;
        met.held += 1;
        Ok(())
    }

    /// The next moment something happens: an arrival, a completion, or the
    /// core's deadline (a hold ending). `None` once everything is answered.
    fn next_event(&mut self, now: u64, arrival: Option<u64>) -> Option<u64> {
        let completion = self.in_flight.iter().map(|b| b.ends_ms).min();
        let deadline = self
            .core
            .next_deadline()
            .map(|d| (d.as_millis() as u64).max(now + 1));
        [arrival, completion, deadline].into_iter().flatten().min()
    }

    fn check_end(&mut self, _met: &mut Met) -> Result<(), String> {
        if !self.core.is_quiet() {
            return Err(format!(
                "stuck: {} inputs waiting and nothing due (a hold the timer missed?)",
                self.core.queue().waiting()
            ));
        }
        let stats = self.core.stats();
        if stats.refused_late != self.late.len() as u64 {
            return Err(format!(
                "refused_late is {}, {} were answered Late",
                stats.refused_late,
                self.late.len()
            ));
        }
        for (id, answer) in &mut self.callers {
            match try_answer(answer) {
                Ok(Some(Ok(output))) if output == *id => {}
                got => return Err(format!("input {id} answered {got:?}")),
            }
        }
        Ok(())
    }
}
