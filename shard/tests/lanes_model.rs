//! `Lanes` against a deliberately plain model, step by step.
//!
//! The model below knows nothing of places, hash tables, epochs or deadline
//! queues: it keeps every waiting input of the shard in one `Vec`, the busy
//! keys in another and the ready line in a third, and answers every question
//! by a linear scan. It is written from the guarantees (docs/guarantees.md:
//! G1–G10, terms, settings, flush, overload and withdrawal) and the
//! documented behaviour of `Lanes`, so that the two can disagree. A
//! proptest drives random sequences of admit (with a per-key bound), advance
//! time, take, complete, close, next-deadline, expire and withdraw on both,
//! and compares every observable after every step; at the end every
//! admitted input has left exactly once, by a batch, expiry or withdrawal.
//!
//! Event time is driven too: in some cases the structure holds each input
//! until its rank (an event time, in ticks) plus a lateness, refuses late
//! inputs or not, and ends batches where a boundary value changes. The
//! model says it plainly: a lane whose front input is held is not ready,
//! a batch stops before the first held input and at a change of boundary,
//! held lanes become ready in the order their front's hold ends (ties by
//! that input's admission), and closing ends every hold.
//!
//! Trips are driven as the shard's core takes them: several takes at the
//! same `now`, up to a number of batches, each looked at first with
//! `next_weight` and taken only while the trip's weight stays within a
//! bound (its first batch always goes). The model's trip is its own takes
//! in a row, so a trip must hold the same batches in the same (first come,
//! first served) order, no lane twice, and every lane of a trip stays busy
//! until it is completed, alone or with the rest of its trip.

use std::cell::RefCell;
use std::time::Duration;

use ferry_shard::parts::{LaneId, LaneState, Lanes};
use ferry_shard::{key_hash, Hold, QueueConfig, Refused};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

/// Time in the test is counted in ticks of one millisecond, the unit of an
/// event time, so that a rank and a time compare directly.
fn at(tick: u64) -> Duration {
    Duration::from_millis(tick)
}

/// A duration back in ticks.
fn ticks(span: Duration) -> u64 {
    span.as_millis() as u64
}

// ---------------------------------------------------------------------------
// The model.
// ---------------------------------------------------------------------------

/// The bounds, as plain numbers (the delay and the queue time in ticks).
#[derive(Clone, Copy, Debug)]
struct Bounds {
    batch_size_max: usize,
    batch_weight_max: u64,
    queueing_max: usize,
    queued_weight_max: u64,
    queueing_per_key_max: usize,
    delay_ticks: u64,
    queue_time_ticks: Option<u64>,
    /// Event time: inputs are held until their rank plus this many ticks.
    lateness_ticks: Option<u64>,
    /// With a hold, late inputs are refused `Late`.
    refuse_late: bool,
    /// Batches end where the boundary value changes.
    boundaries: bool,
}

impl Bounds {
    fn to_config(self) -> QueueConfig {
        QueueConfig {
            max_batch_size: self.batch_size_max,
            max_batch_weight: self.batch_weight_max,
            max_batch_delay: at(self.delay_ticks),
            max_waiting: self.queueing_max,
            max_waiting_weight: self.queued_weight_max,
            max_waiting_per_key: self.queueing_per_key_max,
            max_queue_time: self.queue_time_ticks.map(at),
            // Withdrawal is driven through `withdraw_with` here; the flag is
            // the core's business.
            withdraw_on_drop: false,
            hold: self.lateness_ticks.map(|lateness| Hold {
                refuse_late: self.refuse_late,
                ..Hold::new(at(lateness))
            }),
            boundaries: self.boundaries,
        }
    }
}

/// Which inputs a withdrawal finds gone: those whose id has its bit set in
/// `mask` (ids taken modulo 32).
fn is_gone(mask: u32, id: u64) -> bool {
    (mask >> (id % 32)) & 1 == 1
}

/// One admitted input that has not been sent yet.
#[derive(Clone, Debug)]
struct Entry {
    key: u32,
    rank: i64,
    boundary: i64,
    /// Admission order over the whole shard.
    seq: u64,
    arrival: u64,
    weight: u64,
    id: u64,
}

/// What a `take` hands out, reduced to what can be compared.
#[derive(Debug, PartialEq, Eq)]
struct Taken {
    key: u32,
    ids: Vec<u64>,
    weight: u64,
}

#[derive(Clone, Debug)]
struct Model {
    bounds: Bounds,
    now: u64,
    seq_next: u64,
    /// Every waiting input of every key, in admission order.
    waiting: Vec<Entry>,
    /// Keys whose batch is in flight.
    busy: Vec<u32>,
    /// Keys in the ready line, front first. A key whose inputs all leave by
    /// expiry or withdrawal while it is in the line leaves the line at once
    /// (its lane no longer exists, G5); a later input of the key makes a
    /// new lane, which waits its turn (the module docs of `lanes.rs`).
    ready_line: Vec<u32>,
    closed: bool,
    /// The `now` of the latest expiry, if any: every input due by then has
    /// been handed out.
    expired_until: Option<u64>,
    /// Arrival of every input ever admitted.
    arrivals: Vec<u64>,
    /// Batches cut short by a held input, and by a change of boundary.
    cut_by_hold: u64,
    cut_by_boundary: u64,
    /// Lanes in line whose front was held again when a take reached them.
    held_again: u64,
}

impl Model {
    fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            now: 0,
            seq_next: 0,
            waiting: Vec::new(),
            busy: Vec::new(),
            ready_line: Vec::new(),
            closed: false,
            expired_until: None,
            arrivals: Vec::new(),
            cut_by_hold: 0,
            cut_by_boundary: 0,
            held_again: 0,
        }
    }

    /// When the hold of an input of rank `rank` ends, with a hold.
    fn hold_end(&self, rank: i64) -> Option<u64> {
        let lateness = self.bounds.lateness_ticks?;
        Some((rank + lateness as i64).max(0) as u64)
    }

    /// Whether an input of rank `rank` is still held now (never once
    /// closed).
    fn is_held(&self, rank: i64) -> bool {
        !self.closed && self.hold_end(rank).is_some_and(|end| end > self.now)
    }

    /// Whether `key`'s first input in lane order is still held.
    fn front_held(&self, key: u32) -> bool {
        self.inputs_of(key)
            .first()
            .is_some_and(|e| self.is_held(e.rank))
    }

    /// Waiting keys, in the order their front's hold ends, ties by that
    /// input's admission.
    fn keys_waiting_by_hold(&self) -> Vec<u32> {
        let mut keys: Vec<(u64, u64, u32)> = self
            .keys_alive()
            .into_iter()
            .filter(|&k| self.state_of(k) == Some(LaneState::Waiting))
            .map(|k| {
                let front = self.inputs_of(k)[0].clone();
                (self.hold_end(front.rank).unwrap_or(0), front.seq, k)
            })
            .collect();
        keys.sort_unstable();
        keys.into_iter().map(|(_, _, k)| k).collect()
    }

    /// A key's waiting inputs in the order they will be sent: by rank, ties
    /// by admission.
    fn inputs_of(&self, key: u32) -> Vec<Entry> {
        let mut inputs: Vec<Entry> = self
            .waiting
            .iter()
            .filter(|e| e.key == key)
            .cloned()
            .collect();
        inputs.sort_by_key(|e| (e.rank, e.seq));
        inputs
    }

    fn holds_inputs(&self, key: u32) -> bool {
        self.waiting.iter().any(|e| e.key == key)
    }

    fn weight_of(&self, key: u32) -> u64 {
        self.waiting
            .iter()
            .filter(|e| e.key == key)
            .map(|e| e.weight)
            .sum()
    }

    /// The key's oldest waiting input by arrival, ties by admission.
    fn oldest_of(&self, key: u32) -> Option<&Entry> {
        self.waiting
            .iter()
            .filter(|e| e.key == key)
            .min_by_key(|e| (e.arrival, e.seq))
    }

    fn due_time_of(&self, key: u32) -> Option<u64> {
        self.oldest_of(key)
            .map(|e| e.arrival + self.bounds.delay_ticks)
    }

    fn is_full(&self, key: u32) -> bool {
        self.inputs_of(key).len() >= self.bounds.batch_size_max
            || self.weight_of(key) >= self.bounds.batch_weight_max
    }

    fn is_due(&self, key: u32) -> bool {
        self.due_time_of(key).is_some_and(|due| due <= self.now)
    }

    fn state_of(&self, key: u32) -> Option<LaneState> {
        if self.busy.contains(&key) {
            Some(LaneState::Busy)
        } else if self.ready_line.contains(&key) {
            Some(LaneState::Ready)
        } else if self.holds_inputs(key) {
            Some(LaneState::Waiting)
        } else {
            None
        }
    }

    /// Keys that have a lane, each once: those with waiting inputs, a batch
    /// in flight, or a place in the ready line.
    fn keys_alive(&self) -> Vec<u32> {
        let mut keys: Vec<u32> = self
            .waiting
            .iter()
            .map(|e| e.key)
            .chain(self.busy.iter().copied())
            .chain(self.ready_line.iter().copied())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Keys whose lane is waiting, oldest waiting input first.
    fn keys_waiting_oldest_first(&self) -> Vec<u32> {
        let mut keys: Vec<u32> = self
            .keys_alive()
            .into_iter()
            .filter(|&k| self.state_of(k) == Some(LaneState::Waiting))
            .collect();
        keys.sort_by_key(|&k| {
            let oldest = self.oldest_of(k).expect("a waiting lane has inputs");
            (oldest.arrival, oldest.seq)
        });
        keys
    }

    /// Keys in the ready line that a take would serve: not the emptied ones.
    fn ready_with_inputs(&self) -> usize {
        self.ready_line
            .iter()
            .filter(|&&k| self.holds_inputs(k))
            .count()
    }

    fn admit(
        &mut self,
        key: u32,
        id: u64,
        rank: i64,
        boundary: i64,
        weight: u64,
    ) -> Result<(), (u64, Refused)> {
        let count: usize = self.waiting.len();
        let weight_waiting: u64 = self.waiting.iter().map(|e| e.weight).sum();
        if self.closed {
            return Err((id, Refused::Closed));
        }
        if weight > self.bounds.batch_weight_max {
            return Err((id, Refused::TooHeavy));
        }
        let late = self.hold_end(rank).is_some_and(|end| end <= self.now);
        if late && self.bounds.refuse_late {
            return Err((id, Refused::Late));
        }
        if count + 1 > self.bounds.queueing_max
            || weight_waiting + weight > self.bounds.queued_weight_max
        {
            return Err((id, Refused::Full));
        }
        self.promote_due();
        // Only waiting inputs count towards the key's bound, not those in
        // flight (docs/guarantees.md#settings).
        let key_waiting = self.waiting.iter().filter(|e| e.key == key).count();
        if key_waiting >= self.bounds.queueing_per_key_max {
            return Err((id, Refused::KeyFull));
        }
        self.waiting.push(Entry {
            key,
            rank,
            boundary,
            seq: self.seq_next,
            arrival: self.now,
            weight,
            id,
        });
        self.seq_next += 1;
        self.arrivals.push(self.now);
        // An idle lane is ready at once without a delay, or as soon as it is
        // full; a busy lane waits for its batch to complete first. With a
        // hold, not while its front input is held.
        if self.state_of(key) == Some(LaneState::Waiting)
            && !self.front_held(key)
            && (self.bounds.delay_ticks == 0 || self.is_full(key) || self.is_due(key))
        {
            self.ready_line.push(key);
        }
        Ok(())
    }

    /// Waiting lanes that are due join the line, in the order they became
    /// due: by their oldest input's arrival, ties by its admission. Every
    /// step that can change the line does this first, so a lane that fell
    /// due is never passed by one that became ready later (G7).
    ///
    /// With a hold (the cases hold with no delay), a waiting lane whose
    /// front is no longer held joins the line, in the order the fronts'
    /// holds ended, ties by the front's admission.
    fn promote_due(&mut self) {
        if self.bounds.lateness_ticks.is_some() {
            assert_eq!(self.bounds.delay_ticks, 0, "held cases have no delay");
            for key in self.keys_waiting_by_hold() {
                if !self.front_held(key) {
                    self.ready_line.push(key);
                }
            }
            return;
        }
        for key in self.keys_waiting_oldest_first() {
            if self.is_due(key) {
                self.ready_line.push(key);
            }
        }
    }

    /// The key's next batch: its first inputs in lane order, as many as fit
    /// the batch bounds (at least one), none still held and none of another
    /// boundary than the first, and their weight; and what cut it short (a
    /// held input or a boundary), if anything did.
    fn batch_of(&self, key: u32) -> (Vec<u64>, u64, Option<&'static str>) {
        let mut ids = Vec::new();
        let mut weight = 0;
        let inputs = self.inputs_of(key);
        for input in &inputs {
            let fits = ids.is_empty() || weight + input.weight <= self.bounds.batch_weight_max;
            if ids.len() == self.bounds.batch_size_max || !fits {
                return (ids, weight, None);
            }
            if self.is_held(input.rank) {
                assert!(!ids.is_empty(), "a ready lane's front is not held");
                return (ids, weight, Some("hold"));
            }
            if self.bounds.boundaries && input.boundary != inputs[0].boundary {
                return (ids, weight, Some("boundary"));
            }
            ids.push(input.id);
            weight += input.weight;
        }
        (ids, weight, None)
    }

    /// The front of the ready line, due lanes promoted first; lanes emptied
    /// while in line leave it as a take (or a look) reaches them.
    /// A lane in line whose front is held again (its free front left by
    /// expiry or withdrawal) leaves the line and waits.
    fn front(&mut self) -> Option<u32> {
        self.promote_due();
        while let Some(&key) = self.ready_line.first() {
            if self.holds_inputs(key) && !self.front_held(key) {
                return Some(key);
            }
            if self.holds_inputs(key) {
                self.held_again += 1;
            }
            self.ready_line.remove(0);
        }
        None
    }

    /// The weight of the batch `take` would take now, taking nothing.
    fn next_weight(&mut self) -> Option<u64> {
        let key = self.front()?;
        Some(self.batch_of(key).1)
    }

    fn take(&mut self) -> Option<Taken> {
        let key = self.front()?;
        self.ready_line.remove(0);
        let (ids, weight, cut) = self.batch_of(key);
        match cut {
            Some("hold") => self.cut_by_hold += 1,
            Some(_) => self.cut_by_boundary += 1,
            None => {}
        }
        self.waiting.retain(|e| !ids.contains(&e.id));
        self.busy.push(key);
        Some(Taken { key, ids, weight })
    }

    fn complete(&mut self, key: u32) {
        self.promote_due();
        let at = self
            .busy
            .iter()
            .position(|&k| k == key)
            .expect("completing a busy key");
        self.busy.remove(at);
        if !self.holds_inputs(key) {
            return; // The lane is gone.
        }
        let free = !self.front_held(key);
        if self.closed
            || (free && (self.bounds.delay_ticks == 0 || self.is_due(key) || self.is_full(key)))
        {
            self.ready_line.push(key);
        }
    }

    fn close(&mut self) {
        if self.closed {
            return;
        }
        // Closing ends every hold: held lanes join in their hold order.
        let waiting = if self.bounds.lateness_ticks.is_some() {
            self.keys_waiting_by_hold()
        } else {
            self.keys_waiting_oldest_first()
        };
        self.closed = true;
        self.ready_line.extend(waiting);
    }

    /// Every waiting input whose queue time has passed by now, oldest first
    /// (by arrival, ties by admission). One already taken is not waiting,
    /// so it never expires.
    fn expire(&mut self) -> Vec<u64> {
        let Some(queue_time) = self.bounds.queue_time_ticks else {
            return Vec::new();
        };
        let mut expired: Vec<Entry> = self
            .waiting
            .iter()
            .filter(|e| e.arrival + queue_time <= self.now)
            .cloned()
            .collect();
        expired.sort_by_key(|e| (e.arrival, e.seq));
        let ids: Vec<u64> = expired.iter().map(|e| e.id).collect();
        self.waiting.retain(|e| !ids.contains(&e.id));
        self.expired_until = Some(self.now);
        self.leave_line_if_emptied();
        ids
    }

    /// A ready lane left without inputs no longer exists: out of the line.
    fn leave_line_if_emptied(&mut self) {
        let emptied: Vec<u32> = self
            .ready_line
            .iter()
            .copied()
            .filter(|&k| !self.holds_inputs(k))
            .collect();
        self.ready_line.retain(|k| !emptied.contains(k));
    }

    /// Among the first `scan` waiting inputs of `key`'s lane, in lane order,
    /// those the mask finds gone leave, in that order.
    fn withdraw(&mut self, key: u32, scan: usize, gone_mask: u32) -> Vec<u64> {
        let ids: Vec<u64> = self
            .inputs_of(key)
            .into_iter()
            .take(scan)
            .filter(|e| is_gone(gone_mask, e.id))
            .map(|e| e.id)
            .collect();
        self.waiting.retain(|e| !ids.contains(&e.id));
        self.leave_line_if_emptied();
        ids
    }

    /// When the oldest waiting input expires, if one waits and inputs
    /// expire.
    fn next_expiry(&self) -> Option<u64> {
        let queue_time = self.bounds.queue_time_ticks?;
        self.waiting.iter().map(|e| e.arrival + queue_time).min()
    }

    fn lanes(&self) -> usize {
        self.keys_alive().len()
    }

    fn waiting_weight(&self) -> u64 {
        self.waiting.iter().map(|e| e.weight).sum()
    }
}

/// Notes the lane id of a batch just taken for `key`: no id is handed out
/// twice while its batch is out.
fn hand_out(
    lane_ids: &mut Vec<(u32, LaneId)>,
    key: u32,
    lane: LaneId,
    step: usize,
) -> Result<(), TestCaseError> {
    prop_assert!(
        lane_ids.iter().all(|&(_, id)| id != lane),
        "step {}: a lane id handed out twice",
        step
    );
    lane_ids.push((key, lane));
    Ok(())
}

/// A batch taken by a partly consumed `take_with`: its lane and key, and
/// every id it held, seen or dropped unseen.
struct Part {
    lane: LaneId,
    key: u32,
    ids: Vec<u64>,
}

/// `take_with`, its consumer taking the first `keep` items and dropping
/// the rest: the length and weight lent, the items seen and what is left
/// of the iterator must be the model's batch.
fn take_part(
    lanes: &mut Lanes<u32, u64>,
    model: &mut Model,
    keep: usize,
    step: usize,
) -> Result<Option<Part>, TestCaseError> {
    let got = lanes.take_with(at(model.now), |mut items| {
        let (len, weight) = (items.len(), items.weight());
        let kept: Vec<u64> = items.by_ref().take(keep).collect();
        (len, weight, kept, items.len())
    });
    match (got, model.take()) {
        (None, None) => Ok(None),
        (Some((lane, key, (len, weight, kept, unseen))), Some(want)) => {
            prop_assert_eq!(key, want.key, "step {}: take_with key", step);
            prop_assert_eq!(len, want.ids.len(), "step {}: take_with len", step);
            prop_assert_eq!(weight, want.weight, "step {}: take_with weight", step);
            let kept_want = &want.ids[..keep.min(len)];
            prop_assert_eq!(&kept[..], kept_want, "step {}: take_with items", step);
            prop_assert_eq!(unseen, len - kept.len(), "step {}: exact size", step);
            Ok(Some(Part {
                lane,
                key,
                ids: want.ids,
            }))
        }
        (got, want) => {
            let got = got.map(|(_, key, (len, ..))| (key, len));
            Err(TestCaseError::fail(format!(
                "step {step}: take_with gave (key, len) {got:?}, the model {want:?}"
            )))
        }
    }
}

/// `take` on both: the same batch (key, inputs in order, weight), or none
/// on both. The batch's lane id, and the batch.
fn take_both(
    lanes: &mut Lanes<u32, u64>,
    model: &mut Model,
    step: usize,
) -> Result<Option<(LaneId, Taken)>, TestCaseError> {
    let got = lanes.take(at(model.now));
    let want = model.take();
    match (got, want) {
        (None, None) => Ok(None),
        (Some(batch), Some(want)) => {
            let got = Taken {
                key: batch.key,
                ids: batch.items,
                weight: batch.weight,
            };
            prop_assert_eq!(&got, &want, "step {}: take", step);
            Ok(Some((batch.lane, got)))
        }
        (got, want) => {
            let got = got.map(|b| (b.key, b.items));
            Err(TestCaseError::fail(format!(
                "step {step}: take gave {got:?}, the model {want:?}"
            )))
        }
    }
}

/// A trip as the shard's core takes one: at one `now`, while fewer than
/// `max_batches` batches are taken, the next batch's weight is looked at
/// with `next_weight` (which must be the model's), and the batch is taken
/// unless, past the first, it would take the trip's weight past
/// `max_weight`. Every take must be the model's next take, so the trip
/// holds the model's batches in first come, first served order; no key is
/// in it twice. The trip's keys, in order.
fn take_trip(
    lanes: &mut Lanes<u32, u64>,
    model: &mut Model,
    (max_batches, max_weight): (usize, u64),
    step: usize,
    lane_ids: &mut Vec<(u32, LaneId)>,
    left: &mut Vec<u64>,
    reached: &mut Reached,
) -> Result<Vec<u32>, TestCaseError> {
    let now = at(model.now);
    let mut keys: Vec<u32> = Vec::new();
    let mut weight = 0_u64;
    let mut stopped_by_weight = false;
    while keys.len() < max_batches {
        let got = lanes.next_weight(now);
        prop_assert_eq!(
            got,
            model.next_weight(),
            "step {}: next_weight in a trip",
            step
        );
        let Some(next) = got else {
            break;
        };
        if !keys.is_empty() && weight.saturating_add(next) > max_weight {
            stopped_by_weight = true;
            break;
        }
        if keys.is_empty() && next > max_weight {
            reached.trip_heavy_first += 1;
        }
        weight = weight.saturating_add(next);
        let Some((lane, batch)) = take_both(lanes, model, step)? else {
            return Err(TestCaseError::fail(format!(
                "step {step}: next_weight saw a batch of weight {next}, take none"
            )));
        };
        prop_assert_eq!(
            batch.weight,
            next,
            "step {}: the batch taken weighs what next_weight said",
            step
        );
        prop_assert!(
            !keys.contains(&batch.key),
            "step {}: key {} twice in one trip {:?}",
            step,
            batch.key,
            keys
        );
        hand_out(lane_ids, batch.key, lane, step)?;
        left.extend(batch.ids);
        keys.push(batch.key);
    }
    prop_assert!(keys.len() <= max_batches);
    prop_assert!(
        keys.len() <= 1 || weight <= max_weight,
        "step {}: a trip of {} batches weighs {} past {}",
        step,
        keys.len(),
        weight,
        max_weight
    );
    if keys.len() > 1 {
        reached.trips_of_several += 1;
    }
    if stopped_by_weight {
        reached.trips_stopped_by_weight += 1;
        // The batch that did not fit is still at the front: the next take
        // (a trip's first) gets it, checked against the model then.
        prop_assert!(
            lanes.has_ready(),
            "step {}: the batch left behind is gone",
            step
        );
    }
    if keys.len() == max_batches && max_batches > 1 && lanes.has_ready() {
        reached.trips_stopped_by_count += 1;
    }
    Ok(keys)
}

/// Completes `key`'s busy lane on both, with the lane id `take` gave it.
fn complete_key(
    lanes: &mut Lanes<u32, u64>,
    model: &mut Model,
    lane_ids: &mut Vec<(u32, LaneId)>,
    key: u32,
) {
    let at_index = lane_ids
        .iter()
        .position(|&(k, _)| k == key)
        .expect("busy key has a lane id");
    let (_, lane) = lane_ids.remove(at_index);
    lanes.complete(lane, at(model.now));
    model.complete(key);
}

// ---------------------------------------------------------------------------
// The operations and the harness.
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    /// With a hold, the input's event time is `now + 1 - rank`: up to
    /// `ranks - 1` ticks behind.
    Admit {
        key: u32,
        rank: i64,
        boundary: i64,
        weight: u64,
    },
    Advance(u64),
    Take,
    /// `take_with`, taking at most this many items and dropping the rest.
    TakePart(usize),
    /// Completes the busy lane at this index (modulo their number), if any.
    Complete(usize),
    /// A trip: takes at the same `now` while fewer than `max_batches` are
    /// taken and, past the first, the next batch (by `next_weight`) keeps
    /// the trip's weight within `max_weight`.
    Trip {
        max_batches: usize,
        max_weight: u64,
    },
    /// Completes every lane still busy of the trip at this index (modulo
    /// the open trips), in trip order, at the same `now`, as a trip's
    /// release does.
    CompleteTrip(usize),
    /// `next_weight` alone: it takes nothing.
    NextWeight,
    Close,
    NextDeadline,
    /// `expire_with` at the current time.
    Expire,
    /// `withdraw_with` over the first `scan` waiting inputs of `key`, the
    /// inputs `is_gone(gone_mask, id)` marks being the gone ones.
    Withdraw {
        key: u32,
        scan: usize,
        gone_mask: u32,
    },
}

#[derive(Clone, Debug)]
struct Case {
    bounds: Bounds,
    keys: u32,
    /// Ranks are drawn from `0..ranks`: with one rank every lane is in
    /// arrival order, and the next expiry is known exactly.
    ranks: i64,
    /// Ask for the next deadline after every step too. It drops stale
    /// entries, so half of the cases leave them for `take` to meet.
    probe_deadline_every_step: bool,
    ops: Vec<Op>,
}

fn bounds() -> impl Strategy<Value = Bounds> {
    (
        (
            1..=4_usize,
            prop_oneof![Just(u64::MAX), 1..=5_u64],
            1..=12_usize,
            prop_oneof![Just(u64::MAX), 1..=20_u64],
        ),
        (
            prop_oneof![Just(usize::MAX), 1..=4_usize],
            prop_oneof![1 => Just(0_u64), 3 => 1..=4_u64],
            prop_oneof![Just(None), (1..=8_u64).prop_map(Some)],
        ),
        (
            prop_oneof![2 => Just(None), 1 => (0..=4_u64).prop_map(Some)],
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (batch_size_max, batch_weight_max, queueing_max, queued_weight_max),
                (queueing_per_key_max, delay_ticks, queue_time_ticks),
                (lateness_ticks, refuse_late, boundaries),
            )| {
                Bounds {
                    batch_size_max,
                    batch_weight_max,
                    queueing_max,
                    queued_weight_max,
                    queueing_per_key_max,
                    // A hold is the wait of its cases: they have no delay.
                    delay_ticks: if lateness_ticks.is_some() {
                        0
                    } else {
                        delay_ticks
                    },
                    queue_time_ticks,
                    lateness_ticks,
                    refuse_late,
                    boundaries,
                }
            },
        )
}

fn op(keys: u32, ranks: i64) -> impl Strategy<Value = Op> {
    prop_oneof![
        200 => (0..keys, 0..ranks, 0..2_i64, 1..=3_u64).prop_map(|(key, rank, boundary, weight)| {
            Op::Admit {
                key,
                rank,
                boundary,
                weight,
            }
        }),
        100 => (0..=3_u64).prop_map(Op::Advance),
        120 => Just(Op::Take),
        40 => (0..3_usize).prop_map(Op::TakePart),
        100 => (0..4_usize).prop_map(Op::Complete),
        50 => (1..=4_usize, prop_oneof![Just(u64::MAX), 1..=6_u64])
            .prop_map(|(max_batches, max_weight)| Op::Trip { max_batches, max_weight }),
        30 => (0..3_usize).prop_map(Op::CompleteTrip),
        15 => Just(Op::NextWeight),
        20 => Just(Op::NextDeadline),
        40 => Just(Op::Expire),
        40 => (
            0..keys,
            0..=5_usize,
            prop_oneof![Just(u32::MAX), any::<u32>()],
        )
            .prop_map(|(key, scan, gone_mask)| Op::Withdraw {
                key,
                scan,
                gone_mask,
            }),
        // Rare, so that most sequences run open (every one is closed and
        // drained at its end anyway).
        2 => Just(Op::Close),
    ]
}

/// Operations per generated sequence: long enough to fill, drain and refill
/// a few lanes, short enough for 10,000 cases in a debug build.
const OPS_PER_CASE_MAX: usize = 80;

fn case() -> impl Strategy<Value = Case> {
    (
        bounds(),
        2..=4_u32,
        prop_oneof![Just(1_i64), Just(3_i64), Just(6_i64)],
        any::<bool>(),
    )
        .prop_flat_map(|(bounds, keys, ranks, probe)| {
            prop::collection::vec(op(keys, ranks), 1..=OPS_PER_CASE_MAX).prop_map(move |ops| Case {
                bounds,
                keys,
                ranks,
                probe_deadline_every_step: probe,
                ops,
            })
        })
}

/// What an answer of `next_deadline` or `next_expiry` may be: a time in
/// `low..=high`, in ticks, where `NEVER` stands for `None`.
#[derive(Clone, Copy, Debug)]
struct Window {
    low: u64,
    high: u64,
}

const NEVER: u64 = u64::MAX;

impl Window {
    fn exactly(tick: Option<u64>) -> Self {
        let tick = tick.unwrap_or(NEVER);
        Self {
            low: tick,
            high: tick,
        }
    }

    /// The window of the earlier of two answers, one from each window.
    fn earlier(self, other: Window) -> Self {
        Self {
            low: self.low.min(other.low),
            high: self.high.min(other.high),
        }
    }

    fn check(self, got: Option<Duration>, what: &str) -> Result<(), TestCaseError> {
        let got_tick = got.map_or(NEVER, ticks);
        let show = |tick: u64| {
            if tick == NEVER {
                "none".to_string()
            } else {
                format!("{tick}")
            }
        };
        prop_assert!(
            self.low <= got_tick && got_tick <= self.high,
            "{what} is {got:?}; the model allows from {} to {} ticks",
            show(self.low),
            show(self.high)
        );
        Ok(())
    }
}

/// What the model says of the batch deadline part of `next_deadline`.
///
/// It is exact while every lane that holds inputs is waiting. A lane that is
/// busy or ready may keep its oldest input's deadline pending (it may wait
/// again after its batch), so then the answer may come earlier than the
/// earliest waiting lane's due time, but never before the earliest due time
/// of any lane that holds inputs, and never later than a waiting lane's.
fn batch_deadline_window(model: &Model) -> Window {
    let due_any = model
        .keys_alive()
        .into_iter()
        .filter_map(|k| model.due_time_of(k))
        .min();
    let due_waiting = model
        .keys_waiting_oldest_first()
        .into_iter()
        .filter_map(|k| model.due_time_of(k))
        .min();
    let all_holding_inputs_wait = model
        .keys_alive()
        .into_iter()
        .filter(|&k| model.due_time_of(k).is_some())
        .all(|k| model.state_of(k) == Some(LaneState::Waiting));
    match due_any {
        _ if model.closed || model.bounds.delay_ticks == 0 => Window::exactly(None),
        None => Window::exactly(None),
        Some(_) if all_holding_inputs_wait => Window::exactly(due_waiting),
        Some(due_any) => Window {
            low: due_any,
            high: due_waiting.unwrap_or(NEVER),
        },
    }
}

/// What the model says `next_expiry` may be. With one rank every lane is
/// in arrival order and the answer is exact. Otherwise it may be earlier
/// than the oldest waiting input's expiry (an entry whose input left a lane
/// kept in rank order is only dropped when it falls due), but it is never
/// later, never an entry the latest expiry already passed, and `None` only
/// when nothing waits.
fn expiry_window(model: &Model, ranks: i64) -> Window {
    let exact = model.next_expiry();
    match exact {
        Some(exact) if ranks > 1 => Window {
            low: model.expired_until.map_or(0, |t| t + 1),
            high: exact,
        },
        exact => Window::exactly(exact),
    }
}

fn check_next_deadline(
    lanes: &mut Lanes<u32, u64>,
    model: &Model,
    ranks: i64,
) -> Result<(), TestCaseError> {
    let expiry = expiry_window(model, ranks);
    let got_expiry = lanes.next_expiry();
    expiry.check(got_expiry, "next_expiry")?;
    if let (Some(got), Some(queue_time)) = (got_expiry, model.bounds.queue_time_ticks) {
        let got = ticks(got);
        prop_assert!(
            model.arrivals.iter().any(|&a| a + queue_time == got),
            "next_expiry {} is no admitted input's expiry",
            got
        );
    }
    let got = lanes.next_deadline();
    batch_deadline_window(model)
        .earlier(expiry)
        .earlier(hold_window(model))
        .check(got, "next_deadline")
}

/// What the model says of the hold part of `next_deadline`: exactly the
/// earliest end of a waiting lane's front hold (it may have passed: the
/// lane is made ready at the next step), none once closed.
fn hold_window(model: &Model) -> Window {
    if model.closed {
        return Window::exactly(None);
    }
    let earliest = model
        .keys_waiting_by_hold()
        .into_iter()
        .filter_map(|k| model.hold_end(model.inputs_of(k)[0].rank))
        .min();
    Window::exactly(earliest)
}

/// Compares every observable that does not change the structure.
fn check_gauges(lanes: &Lanes<u32, u64>, model: &Model, keys: u32) -> Result<(), TestCaseError> {
    prop_assert_eq!(lanes.lanes(), model.lanes(), "lanes");
    prop_assert_eq!(lanes.waiting(), model.waiting.len(), "waiting");
    prop_assert_eq!(
        lanes.waiting_weight(),
        model.waiting_weight(),
        "waiting_weight"
    );
    prop_assert_eq!(lanes.busy(), model.busy.len(), "busy");
    prop_assert_eq!(lanes.ready(), model.ready_with_inputs(), "ready");
    prop_assert_eq!(
        lanes.has_ready(),
        model.ready_with_inputs() > 0,
        "has_ready"
    );
    prop_assert_eq!(lanes.is_closed(), model.closed, "is_closed");
    for key in 0..keys {
        prop_assert_eq!(
            lanes.lane_state(&key),
            model.state_of(key),
            "lane_state of key {}",
            key
        );
    }
    Ok(())
}

fn run(case: &Case, reached: &mut Reached) -> Result<(), TestCaseError> {
    // The trips taken whose lanes are not all completed yet: their keys
    // still busy, in trip order.
    let mut trips: Vec<Vec<u32>> = Vec::new();
    let mut lanes: Lanes<u32, u64> = Lanes::new(case.bounds.to_config());
    let mut model = Model::new(case.bounds);
    // The lane id of each busy key, as `take` handed it out.
    let mut lane_ids: Vec<(u32, LaneId)> = Vec::new();
    let mut id_next = 0_u64;
    // Every admitted input, and every input that left (by a batch, expiry
    // or withdrawal): at the end the two are the same, each once.
    let mut admitted: Vec<u64> = Vec::new();
    let mut left: Vec<u64> = Vec::new();

    // Keys whose lane was emptied in the ready line, not admitted since.

    let mut emptied = Vec::new();

    for (step, op) in case.ops.iter().enumerate() {
        let now = at(model.now);
        let before = model.clone();
        match *op {
            Op::Admit {
                key,
                rank,
                boundary,
                weight,
            } => {
                let id = id_next;
                id_next += 1;
                let rank = if case.bounds.lateness_ticks.is_some() {
                    model.now as i64 + 1 - rank
                } else {
                    rank
                };
                let got = lanes
                    .admit_bounded(key, id, rank, boundary, weight, now)
                    .map_err(|refusal| (refusal.item, refusal.reason));
                let late = model.hold_end(rank).is_some_and(|end| end <= model.now);
                let want = model.admit(key, id, rank, boundary, weight);
                match want {
                    Err((_, Refused::Late)) => reached.refused_late += 1,
                    Ok(()) if late => reached.admitted_late += 1,
                    _ => {}
                }
                prop_assert_eq!(got, want, "step {}: admit", step);
                if want.is_ok() {
                    admitted.push(id);
                }
            }
            Op::Advance(ticks) => model.now += ticks,
            Op::Take => {
                if let Some((lane, batch)) = take_both(&mut lanes, &mut model, step)? {
                    hand_out(&mut lane_ids, batch.key, lane, step)?;
                    left.extend(batch.ids);
                }
            }
            Op::Trip {
                max_batches,
                max_weight,
            } => {
                let keys = take_trip(
                    &mut lanes,
                    &mut model,
                    (max_batches, max_weight),
                    step,
                    &mut lane_ids,
                    &mut left,
                    reached,
                )?;
                if !keys.is_empty() {
                    trips.push(keys);
                }
            }
            Op::CompleteTrip(index) => {
                if !trips.is_empty() {
                    let keys = trips.remove(index % trips.len());
                    reached.trips_completed_whole += u64::from(keys.len() > 1);
                    for key in keys {
                        complete_key(&mut lanes, &mut model, &mut lane_ids, key);
                    }
                }
            }
            Op::NextWeight => {
                let got = lanes.next_weight(now);
                prop_assert_eq!(got, model.next_weight(), "step {}: next_weight", step);
            }
            Op::TakePart(keep) => {
                if let Some(part) = take_part(&mut lanes, &mut model, keep, step)? {
                    hand_out(&mut lane_ids, part.key, part.lane, step)?;
                    left.extend(part.ids);
                }
            }
            Op::Complete(index) => {
                if !model.busy.is_empty() {
                    let key = model.busy[index % model.busy.len()];
                    complete_key(&mut lanes, &mut model, &mut lane_ids, key);
                    // A lane of a trip may complete alone: the trip's other
                    // lanes stay busy.
                    for trip in &mut trips {
                        trip.retain(|&k| k != key);
                    }
                    trips.retain(|trip| !trip.is_empty());
                }
            }
            Op::Close => {
                lanes.close();
                model.close();
            }
            Op::NextDeadline => check_next_deadline(&mut lanes, &model, case.ranks)?,
            Op::Expire => {
                let mut got = Vec::new();
                let count = lanes.expire_with(now, |id| got.push(id));
                let want = model.expire();
                prop_assert_eq!(&got, &want, "step {}: expire_with at {:?}", step, now);
                prop_assert_eq!(count, got.len(), "step {}: expire_with's count", step);
                left.extend(got);
            }
            Op::Withdraw {
                key,
                scan,
                gone_mask,
            } => {
                let mut got = Vec::new();
                let count = lanes.withdraw_with(
                    key_hash(&key),
                    scan,
                    |&id| is_gone(gone_mask, id),
                    |id| got.push(id),
                );
                let want = model.withdraw(key, scan, gone_mask);
                prop_assert_eq!(
                    &got,
                    &want,
                    "step {}: withdraw_with key {} scan {}",
                    step,
                    key,
                    scan
                );
                prop_assert_eq!(count, got.len(), "step {}: withdraw_with's count", step);
                left.extend(got);
            }
        }
        tally(reached, op, &before, &model, &mut emptied);
        check_gauges(&lanes, &model, case.keys)?;
        // Every lane of a trip is busy until it is completed.
        for key in trips.iter().flatten() {
            prop_assert_eq!(
                lanes.lane_state(key),
                Some(LaneState::Busy),
                "step {}: key {} of a trip in flight",
                step,
                key
            );
        }
        if case.probe_deadline_every_step {
            check_next_deadline(&mut lanes, &model, case.ranks)?;
        }
    }

    // Closing and draining answers everything: nothing admitted is lost.
    trips.clear();
    lanes.close();
    model.close();
    loop {
        while let Some((key, lane)) = lane_ids.pop() {
            lanes.complete(lane, at(model.now));
            model.complete(key);
        }
        let (got, want) = (lanes.take(at(model.now)), model.take());
        match (got, want) {
            (None, None) => break,
            (Some(batch), Some(want)) => {
                prop_assert_eq!(batch.key, want.key, "drain: key");
                prop_assert_eq!(&batch.items, &want.ids, "drain: items");
                left.extend(&batch.items);
                lane_ids.push((batch.key, batch.lane));
            }
            (got, want) => {
                let got = got.map(|b| (b.key, b.items));
                prop_assert!(false, "drain: take gave {:?}, the model {:?}", got, want);
            }
        }
        check_gauges(&lanes, &model, case.keys)?;
    }
    prop_assert_eq!(lanes.lanes(), 0, "every lane is gone once drained");
    prop_assert_eq!(lanes.waiting(), 0);
    prop_assert_eq!(lanes.next_deadline(), None);
    prop_assert_eq!(lanes.expire_with(at(model.now + 100), |_| ()), 0);
    left.sort_unstable();
    prop_assert_eq!(left, admitted, "every admitted input left exactly once");
    reached.cut_by_hold += model.cut_by_hold;
    reached.cut_by_boundary += model.cut_by_boundary;
    reached.held_again += model.held_again;
    Ok(())
}

/// How often a run met each case the new operations are about, summed over
/// cases: the test fails if one is never met, since passing would then
/// prove nothing about it.
#[derive(Debug, Default)]
struct Reached {
    refused_key_full: u64,
    expired: u64,
    withdrawn: u64,
    /// Steps that emptied a lane in the ready line (it leaves the line).
    emptied_in_line: u64,
    /// Admissions for a key whose lane had been emptied in the ready line
    /// since its last take: the new lane must wait its turn.
    refilled_after_emptied: u64,
    /// A key refused `KeyFull` while it had a batch in flight.
    key_full_while_busy: u64,
    /// A key admitted up to its bound while it had a batch in flight: its
    /// inputs in flight do not count.
    filled_to_bound_while_busy: u64,
    /// Trips of more than one batch.
    trips_of_several: u64,
    /// Trips ended by a batch that did not fit their weight (left at the
    /// front of the line).
    trips_stopped_by_weight: u64,
    /// Trips of their most batches with a lane still ready.
    trips_stopped_by_count: u64,
    /// Trips whose first batch alone weighed more than their bound.
    trip_heavy_first: u64,
    /// Trips of several lanes completed together.
    trips_completed_whole: u64,
    /// Inputs refused `Late`.
    refused_late: u64,
    /// Late inputs admitted (no `refuse_late`): not held.
    admitted_late: u64,
    /// Batches that ended before an input still held.
    cut_by_hold: u64,
    /// Batches that ended at a change of boundary.
    cut_by_boundary: u64,
    /// Lanes in line whose front was held again when a take reached them.
    held_again: u64,
}

/// Keys that left the ready line without being taken (emptied).
fn emptied_from_line(before: &Model, after: &Model) -> Vec<u32> {
    before
        .ready_line
        .iter()
        .copied()
        .filter(|k| !after.ready_line.contains(k) && !after.busy.contains(k))
        .collect()
}

/// Tallies what `op` met, from the model before and after it.
fn tally(reached: &mut Reached, op: &Op, before: &Model, after: &Model, emptied: &mut Vec<u32>) {
    if matches!(op, Op::Expire | Op::Withdraw { .. }) {
        let left = emptied_from_line(before, after);
        reached.emptied_in_line += left.len() as u64;
        emptied.extend(left);
    }
    match *op {
        Op::Admit { key, .. } => {
            if emptied.contains(&key) && after.seq_next > before.seq_next {
                reached.refilled_after_emptied += 1;
                emptied.retain(|&k| k != key);
            }
            let refused_key_full = after.seq_next == before.seq_next
                && before.waiting.iter().filter(|e| e.key == key).count()
                    >= before.bounds.queueing_per_key_max;
            if refused_key_full {
                reached.refused_key_full += 1;
                if before.busy.contains(&key) {
                    reached.key_full_while_busy += 1;
                }
            }
            let admitted = after.seq_next > before.seq_next;
            let key_waiting_after = after.waiting.iter().filter(|e| e.key == key).count();
            if admitted
                && before.busy.contains(&key)
                && key_waiting_after == before.bounds.queueing_per_key_max
            {
                reached.filled_to_bound_while_busy += 1;
            }
        }
        Op::Expire => reached.expired += (before.waiting.len() - after.waiting.len()) as u64,
        Op::Withdraw { .. } => {
            reached.withdrawn += (before.waiting.len() - after.waiting.len()) as u64;
        }
        _ => {}
    }
}

#[test]
fn lanes_match_the_model_step_by_step() {
    let config = ProptestConfig {
        cases: 10_000,
        // A failure prints its shrunk case; nothing is written to the tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let reached = RefCell::new(Reached::default());
    let mut runner = TestRunner::new(config);
    if let Err(failure) = runner.run(&case(), |case| run(&case, &mut reached.borrow_mut())) {
        panic!("{failure}");
    }
    let reached = reached.into_inner();
    eprintln!("lanes model: {reached:?}");
    let counts = [
        ("refused KeyFull", reached.refused_key_full),
        (
            "KeyFull while a batch is in flight",
            reached.key_full_while_busy,
        ),
        (
            "a key filled to its bound beside a batch in flight",
            reached.filled_to_bound_while_busy,
        ),
        ("expired inputs", reached.expired),
        ("withdrawn inputs", reached.withdrawn),
        ("lanes emptied in the ready line", reached.emptied_in_line),
        (
            "keys admitted again after their lane was emptied in line",
            reached.refilled_after_emptied,
        ),
        ("trips of several batches", reached.trips_of_several),
        (
            "trips ended by their weight",
            reached.trips_stopped_by_weight,
        ),
        ("trips ended by their count", reached.trips_stopped_by_count),
        (
            "trips with a first batch past their weight",
            reached.trip_heavy_first,
        ),
        ("trips completed whole", reached.trips_completed_whole),
        ("inputs refused Late", reached.refused_late),
        ("late inputs admitted, not held", reached.admitted_late),
        ("batches ended before a held input", reached.cut_by_hold),
        ("batches ended at a boundary", reached.cut_by_boundary),
        ("lanes in line held again", reached.held_again),
    ];
    for (what, count) in counts {
        assert!(count > 0, "no case reached {what}: {reached:?}");
    }
}
