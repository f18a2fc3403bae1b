//! The events of a run that every discipline plays alike: arrivals,
//! callers leaving, loads starting and ending, expiry, notices, flushes
//! and close.

use ferry_shard::parts::{answer_cell, BatchOutcome, TripOutcome};
use ferry_shard::{FerryError, Refused};

use super::super::answer::{self, try_answer, Caller, Dropped};
use super::super::arrival::{at, Arrival, Played};
use super::super::plan::{Expect, Plan, TripPlan};
use super::{ensure, trace, Answer, BatchError, Carried, Discipline, Model, Output, Reply};
use super::{Running, Script, Sim};

/// What the user's function returns for `batch`, planned `plan`.
fn result_of<D: Discipline>(plan: Plan, batch: &Carried<D>) -> Result<Vec<Output>, BatchError> {
    match plan {
        Plan::Ok | Plan::HangUntilClose => Ok(batch.inputs.iter().map(Played::output).collect()),
        Plan::Fail => Err(batch.batch),
        Plan::WrongCount(got) => Ok((0..got as u64).collect()),
        Plan::Panic => unreachable!("a panic is the whole load's"),
    }
}

impl<D: Discipline> Sim<D> {
    /// Hands `arrival` to the core as `submit` would, or, for every fourth
    /// input, as the one input of a `submit_many` call.
    fn submit(&mut self, arrival: &Arrival<D::Input>) -> Answer<D> {
        let many = arrival.input.id() % 4 == 3;
        answer::submit(&mut self.core, D::offer(arrival), at(self.now), many)
    }

    pub(super) fn admit(&mut self) -> Result<(), String> {
        let arrival = self.scenario.arrivals()[self.arrival_next].clone();
        self.arrival_next += 1;
        let id = arrival.input.id();
        self.submitted += 1;

        // After close the intake refuses on its own, before the shard sees
        // the input; some inputs still reach the core, which must refuse
        // them too.
        if self.closed && self.rng.chance(50) {
            trace!(self, "input {id} refused at the closed intake");
            self.refused.insert(id);
            self.refused_at_intake += 1;
            self.summary.refused_closed += 1;
            return Ok(());
        }
        let expected_refusal = D::refusal(self, &arrival);
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
                if caller_waits {
                    check_refusal(&arrival, &mut answer, reason)?;
                }
                trace!(self, "input {id} refused: {reason:?}");
                self.refused(&arrival, reason);
            }
            None => {
                if !admitted {
                    let said = if caller_waits {
                        format!("{:?}", try_answer(&mut answer))
                    } else {
                        "(caller gone)".to_string()
                    };
                    return Err(format!(
                        "G6: input {id} (weight {}) refused; the reference admits it ({} \
                         waiting, weight {}); the caller got {said}",
                        arrival.weight,
                        self.reference.counts().waiting,
                        self.reference.counts().waiting_weight
                    ));
                }
                if caller_waits {
                    ensure!(
                        matches!(try_answer(&mut answer), Ok(None)),
                        "G4: input {id} answered at admission"
                    );
                    self.callers.insert(id, answer);
                }
                self.admitted(&arrival, caller_waits);
            }
        }
        Ok(())
    }

    /// Records `arrival` refused, as the reference said, `reason`.
    fn refused(&mut self, arrival: &Arrival<D::Input>, reason: Refused) {
        self.reference.count_refused();
        self.refused.insert(arrival.input.id());
        match reason {
            Refused::Late => unreachable!("these scenarios hold nothing"),
            Refused::Full => self.summary.refused_full += 1,
            Refused::TooHeavy => self.summary.refused_too_heavy += 1,
            Refused::Closed => self.summary.refused_closed += 1,
            Refused::KeyFull => D::refused_for_its_key(self, arrival),
        }
    }

    /// Records `arrival` admitted, as the reference said; its caller may
    /// have left at once.
    fn admitted(&mut self, arrival: &Arrival<D::Input>, caller_waits: bool) {
        let id = arrival.input.id();
        trace!(
            self,
            "input {id} (rank {}, weight {}) admitted",
            arrival.rank,
            arrival.weight
        );
        D::admitted(self, arrival);
        self.open.insert(id);
        self.summary.admitted += 1;
        if !caller_waits {
            self.caller_gone(id, 0);
        }
        if let Some(after) = arrival.drops_after {
            self.drops.push((self.now + after, id));
        }
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
        let percent = self.scenario.notice_percent();
        if percent > 0 && self.extra.chance(percent) {
            let lag = lag_min + self.extra.range(0, self.scenario.notice_lag_max());
            let key = D::key_of(&self.arrival(id).input);
            self.notices.push((self.now + lag, key));
        }
    }

    /// A caller whose time came drops its future.
    pub(super) fn drop_due_caller(&mut self) {
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

    pub(super) fn maybe_drop_a_caller(&mut self) {
        if self.callers.is_empty() || !self.rng.chance(self.scenario.drop_percent()) {
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

    /// `ids` were withdrawn: never sent, resolved.
    pub fn resolve_withdrawn(&mut self, ids: &[u64]) {
        for &id in ids {
            let was_open = self.open.remove(&id);
            debug_assert!(was_open, "input {id} withdrawn but not open");
            self.gone.remove(&id);
            self.withdrawn.insert(id);
        }
    }

    /// Starts the load of `batches` just taken and checked (a trip of them
    /// if `trip` is its number): the user's function draws how it ends and
    /// when.
    pub fn start(&mut self, batches: Vec<Carried<D>>, trip: Option<u64>) {
        let lens: Vec<usize> = batches.iter().map(|b| b.inputs.len()).collect();
        let (plan, hangs) = match trip {
            None => TripPlan::of_batch(Plan::draw(&mut self.rng, lens[0])),
            Some(_) => TripPlan::draw(&mut self.rng, &lens),
        };
        let latency = self.rng.range(0, self.scenario.latency_max());
        let finish = if hangs && !self.closed {
            None
        } else {
            Some(self.now + latency)
        };
        let keys: Vec<&D::Key> = batches.iter().map(|b| &b.key).collect();
        trace!(
            self,
            "{} of keys {keys:?} will end {plan:?}{} at {finish:?}",
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
    }

    pub(super) fn complete(&mut self) -> Result<(), String> {
        let due: Vec<usize> = (0..self.running.len())
            .filter(|&i| self.running[i].finish.is_some_and(|f| f <= self.now))
            .collect();
        let mut running = self.running.swap_remove(due[self.rng.below(due.len())]);
        self.count_ending(&running);
        let replies: Vec<Vec<Reply<D>>> = running
            .batches
            .iter_mut()
            .map(|batch| std::mem::take(&mut batch.replies))
            .collect();
        match running.trip {
            None => self.end_batch(&running, replies),
            Some(_) => self.end_trip(&running, replies),
        }
        self.core.deliver();
        D::completed(self, &running);
        self.check_answers(&running)?;
        self.look_at_callers(D::CALLERS_LOOKED_AT_AFTER_COMPLETION)
    }

    /// Counts how `running` ends, and traces it.
    fn count_ending(&mut self, running: &Running<D>) {
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
        let keys: Vec<&D::Key> = running.batches.iter().map(|b| &b.key).collect();
        trace!(
            self,
            "{} of keys {keys:?} completes {:?}",
            running.trip.map_or_else(
                || format!("batch {}", running.batches[0].batch),
                |t| format!("trip {t}")
            ),
            running.plan
        );
    }

    /// A load of one batch ends. The runtime uses both ways: `complete`
    /// for a batch done on its first poll, `release` then `answer` for one
    /// that finished later.
    fn end_batch(&mut self, running: &Running<D>, replies: Vec<Vec<Reply<D>>>) {
        let batch = &running.batches[0];
        let outcome: BatchOutcome<Output, BatchError> = match &running.plan {
            TripPlan::Panic => BatchOutcome::Panicked,
            TripPlan::Results(plans) => BatchOutcome::Returned(result_of(plans[0], batch)),
            TripPlan::WrongResults(_) => unreachable!("a batch has one result"),
        };
        let replies = replies.into_iter().next().expect("one batch");
        let now = at(self.now);
        if self.rng.below(2) == 0 {
            self.core.complete(batch.lane, replies, outcome, now);
        } else {
            self.core.release(batch.lane, now);
            self.core.answer(replies, outcome);
        }
    }

    /// A trip ends as the shard loop ends one: every lane and the slot
    /// released, then every caller answered.
    fn end_trip(&mut self, running: &Running<D>, replies: Vec<Vec<Reply<D>>>) {
        let outcome: TripOutcome<Output, BatchError> = match &running.plan {
            TripPlan::Panic => TripOutcome::Panicked,
            // Some of each kind of result, none of them used.
            TripPlan::WrongResults(got) => TripOutcome::Returned(
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
            TripPlan::Results(plans) => TripOutcome::Returned(
                plans
                    .iter()
                    .zip(&running.batches)
                    .map(|(&plan, batch)| result_of(plan, batch))
                    .collect(),
            ),
        };
        let held: Vec<(D::Ticket, Vec<Reply<D>>)> = running
            .batches
            .iter()
            .map(|batch| batch.lane)
            .zip(replies)
            .collect();
        self.core
            .release_trip(held.iter().map(|(lane, _)| lane), at(self.now));
        self.core.answer_trip(held, outcome);
    }

    /// G4, G10: each caller of the load that ended, and only they, hear of
    /// it now, each as its own batch's outcome says.
    fn check_answers(&mut self, running: &Running<D>) -> Result<(), String> {
        let lens: Vec<usize> = running.batches.iter().map(|b| b.inputs.len()).collect();
        for (index, batch) in running.batches.iter().enumerate() {
            let expect = running.plan.expect(index, batch.batch, &lens);
            for input in &batch.inputs {
                let id = input.id();
                ensure!(self.open.remove(&id), "G4: input {id} answered twice");
                self.answered.insert(id);
                if self.gone.remove(&id) && self.scenario.config().withdraw_on_drop {
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

    /// G4, G10: `count` callers still waiting, chosen by the seed, have
    /// heard nothing.
    pub(super) fn look_at_callers(&mut self, count: usize) -> Result<(), String> {
        for _ in 0..count {
            if self.callers.is_empty() {
                break;
            }
            let nth = self.rng.below(self.callers.len());
            let (&id, answer) = self.callers.iter_mut().nth(nth).expect("in range");
            ensure!(
                matches!(try_answer(answer), Ok(None)),
                "G4/G10: input {id} answered before its batch completed"
            );
        }
        Ok(())
    }

    /// The inputs whose queue time passed are answered `Expired`, exactly
    /// those the reference names, each handed back unchanged.
    pub(super) fn expire(&mut self) -> Result<(), String> {
        let expected = D::expire(self);
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
                let original = &self.arrival(id).input;
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
                !self.arrival(id).input.is_held(),
                "max_queue_time: input {id} expired but is still held"
            );
        }
        self.summary.expired += expected.len() as u64;
        Ok(())
    }

    /// A withdrawal notice reaches the shard: with `withdraw_on_drop`, the
    /// inputs of gone callers among the first ones the notice scans are
    /// withdrawn, and no other; without, nothing.
    pub(super) fn notice(&mut self) -> Result<(), String> {
        let due = self
            .notices
            .iter()
            .position(|&(t, _)| t <= self.now)
            .expect("a notice is due");
        let (_, key) = self.notices.swap_remove(due);
        let withdraws = self.scenario.config().withdraw_on_drop;
        let gone_waiting: Vec<u64> = D::waiting_for(self, &key)
            .into_iter()
            .filter(|id| self.gone.contains(id))
            .collect();
        let expected = D::notice(self, &key, withdraws);
        let before = self.core.stats().withdrawn;
        self.core.withdraw(D::hash_of(&key));
        self.core.deliver();
        let counted = self.core.stats().withdrawn - before;
        trace!(self, "notice for key {key:?}: withdraws {expected:?}");
        ensure!(
            counted == expected.len() as u64,
            "withdraw_on_drop: a notice for key {key:?} withdrew {counted} inputs; the reference \
             expects {expected:?} (the first it scans whose callers are gone)"
        );
        for &id in &gone_waiting {
            let held = self.arrival(id).input.is_held();
            ensure!(
                held != expected.contains(&id),
                "withdraw_on_drop: after a notice for key {key:?}, input {id} is {} by the shard; \
                 the reference withdraws {expected:?}",
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
    pub(super) fn flush(&mut self) {
        let number = self.flushes.request(&mut self.core, self.now, &self.open);
        trace!(self, "flush {number} waits for {:?}", self.open);
        self.summary.flushes += 1;
    }

    /// After every event: the flushes told so far (see `sim/flushes.rs`).
    pub(super) fn settle_flushes(&mut self) -> Result<(), String> {
        let told = self.flushes.settle(&mut self.core, &self.open)?;
        self.summary.flushes_told += told.flushes;
        self.summary.flushes_told_after_waiting += told.after_waiting;
        Ok(())
    }

    pub(super) fn close(&mut self) {
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
}

/// G4: a refused input is handed back at once, unchanged, with the reason
/// the reference expects.
fn check_refusal<I: Played>(
    arrival: &Arrival<I>,
    answer: &mut Caller<I, Output, BatchError>,
    expected: Refused,
) -> Result<(), String> {
    let id = arrival.input.id();
    match try_answer(answer) {
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
