//! The reference the shard is checked against, written from the guarantees
//! (docs/guarantees.md: G1–G10, terms, settings, flush, overload and
//! withdrawal) and sharing no code with `Lanes` or `ShardCore`: each
//! key's waiting inputs are a plain `Vec`, scanned and sorted on demand, and
//! readiness is computed from its definition (full, due, closed) with the
//! moment it began, not from any ready line.
//!
//! Inputs also leave a lane without a batch, by expiry or withdrawal. A
//! lane in the ready line stays there while it holds inputs (it was
//! ready); emptied, in line or not, it is gone at once (G5), and a later
//! input of its key makes a new lane that waits its turn. A lane the shard
//! has not yet put in line is ready only by its definition, which is
//! worked out again from what is left.

use std::collections::{BTreeMap, BTreeSet};

use ferry_shard::Refused;

use super::scenario::Scenario;

#[derive(Clone, Debug)]
pub struct Waiting {
    pub id: u64,
    pub rank: i64,
    /// Admission number in the reference's own count.
    pub seq: u64,
    pub arrival: u64,
    pub weight: u64,
}

#[derive(Debug, Default)]
pub struct Lane {
    pub waiting: Vec<Waiting>,
    pub busy: bool,
    /// Since when the lane has been idle (created, or its batch completed):
    /// a lane that completes goes to the back of the line, whatever it held.
    pub idle_since: u64,
    /// When the lane became ready by the definition
    /// (docs/guarantees.md#terms), once it is.
    pub ready_since: Option<u64>,
    /// When the shard put it in its ready line: at once if it became ready
    /// by an event (an input that filled it, its batch completing, close,
    /// no delay), but a lane that became due by time only when the shard
    /// next looked at the time (see [`Reference::look`]).
    pub seen_since: Option<u64>,
}

impl Lane {
    fn weight(&self) -> u64 {
        self.waiting.iter().map(|w| w.weight).sum()
    }

    /// Arrival of its oldest waiting input, whatever its rank.
    fn oldest_arrival(&self) -> Option<u64> {
        self.waiting.iter().map(|w| w.arrival).min()
    }
}

#[derive(Debug)]
pub struct Reference {
    /// Keys whose lane was emptied while in the ready line, not admitted
    /// since (for the summary).
    emptied: BTreeSet<u32>,
    pub batch_size_max: usize,
    pub batch_weight_max: u64,
    pub queueing_max: usize,
    pub queued_weight_max: u64,
    pub queueing_per_key_max: usize,
    pub queue_time: Option<u64>,
    pub delay: u64,
    pub slots: usize,
    pub lanes: BTreeMap<u32, Lane>,
    pub closed: bool,
    seq_next: u64,
    /// Slots in use: batches in flight, or with trips, trips (each holding
    /// one or more keys' batches).
    pub in_flight: usize,
    pub admitted: u64,
    pub refused: u64,
    pub batches: u64,
    pub sent: u64,
    pub answered: u64,
    pub expired: u64,
    pub withdrawn: u64,
}

/// How far into a key's lane a withdrawal notice looks for inputs whose
/// callers are gone (the shard's documented bound, `WITHDRAW_SCAN` in
/// `core/shard_core.rs`).
pub const NOTICE_SCAN: usize = 128;

impl Reference {
    pub fn new(scenario: &Scenario) -> Self {
        let config = &scenario.config;
        Self {
            batch_size_max: config.max_batch_size,
            batch_weight_max: config.max_batch_weight,
            queueing_max: config.max_waiting,
            queued_weight_max: config.max_waiting_weight,
            queueing_per_key_max: config.max_waiting_per_key,
            queue_time: scenario.overload.queue_time,
            delay: scenario.delay_ticks,
            slots: scenario.slots,
            lanes: BTreeMap::new(),
            emptied: BTreeSet::new(),
            closed: false,
            seq_next: 0,
            in_flight: 0,
            admitted: 0,
            refused: 0,
            batches: 0,
            sent: 0,
            answered: 0,
            expired: 0,
            withdrawn: 0,
        }
    }

    pub fn waiting(&self) -> usize {
        self.lanes.values().map(|l| l.waiting.len()).sum()
    }

    pub fn waiting_weight(&self) -> u64 {
        self.lanes.values().map(Lane::weight).sum()
    }

    /// Why the shard must refuse this input of `key` now, if it must (G6,
    /// G9, docs/guarantees.md#settings): the first that applies of closed,
    /// too heavy, the shard's bounds, and the key's own bound, which counts
    /// its waiting inputs only (not those in flight).
    pub fn refusal(&self, key: u32, weight: u64) -> Option<Refused> {
        let key_waiting = self.lanes.get(&key).map_or(0, |lane| lane.waiting.len());
        if self.closed {
            Some(Refused::Closed)
        } else if weight > self.batch_weight_max {
            Some(Refused::TooHeavy)
        } else if self.waiting() + 1 > self.queueing_max
            || u128::from(self.waiting_weight()) + u128::from(weight)
                > u128::from(self.queued_weight_max)
        {
            Some(Refused::Full)
        } else if key_waiting >= self.queueing_per_key_max {
            Some(Refused::KeyFull)
        } else {
            None
        }
    }

    pub fn admit(&mut self, key: u32, id: u64, rank: i64, weight: u64, now: u64) {
        let seq = self.seq_next;
        self.seq_next += 1;
        self.admitted += 1;
        let lane = self.lanes.entry(key).or_insert_with(|| Lane {
            idle_since: now,
            ..Lane::default()
        });
        lane.waiting.push(Waiting {
            id,
            rank,
            seq,
            arrival: now,
            weight,
        });
    }

    /// `key`'s waiting inputs in lane order: by rank, ties by admission.
    pub fn lane_order(&self, key: u32) -> Vec<Waiting> {
        let mut sorted = self
            .lanes
            .get(&key)
            .map_or_else(Vec::new, |lane| lane.waiting.clone());
        sorted.sort_by_key(|w| (w.rank, w.seq));
        sorted
    }

    /// What the next batch of `key` must hold, by its definition: the
    /// lowest (rank, admission) inputs waiting, as many as fit (G2, G6).
    pub fn expected_batch(&self, key: u32) -> Vec<u64> {
        let Some(lane) = self.lanes.get(&key) else {
            return Vec::new();
        };
        let mut sorted = lane.waiting.clone();
        sorted.sort_by_key(|w| (w.rank, w.seq));
        let mut batch = Vec::new();
        let mut weight = 0_u64;
        for w in sorted {
            let fits = batch.is_empty() || weight + w.weight <= self.batch_weight_max;
            if batch.len() == self.batch_size_max || !fits {
                break;
            }
            weight += w.weight;
            batch.push(w.id);
        }
        batch
    }

    /// The weight of `key`'s waiting inputs among `ids`.
    pub fn weight_of(&self, key: u32, ids: &[u64]) -> u64 {
        self.lanes.get(&key).map_or(0, |lane| {
            lane.waiting
                .iter()
                .filter(|w| ids.contains(&w.id))
                .map(|w| w.weight)
                .sum()
        })
    }

    /// Records that `ids` of `key` left in a batch: the lane is busy. The
    /// slot it goes in is taken by [`occupy_slot`](Self::occupy_slot): one
    /// per batch, or one per trip of batches.
    pub fn dispatch(&mut self, key: u32, ids: &[u64]) {
        let lane = self
            .lanes
            .get_mut(&key)
            .expect("a dispatched key has a lane");
        lane.waiting.retain(|w| !ids.contains(&w.id));
        lane.busy = true;
        lane.ready_since = None;
        lane.seen_since = None;
        self.batches += 1;
        self.sent += ids.len() as u64;
    }

    /// A batch, or a trip, takes a slot.
    pub fn occupy_slot(&mut self) {
        self.in_flight += 1;
    }

    /// A batch, or a trip, ended: its slot is free.
    pub fn free_slot(&mut self) {
        self.in_flight -= 1;
    }

    /// Records that `key`'s batch of `len` inputs completed (its slot is
    /// freed by [`free_slot`](Self::free_slot)).
    pub fn complete(&mut self, key: u32, len: usize, now: u64) {
        let lane = self.lanes.get_mut(&key).expect("a busy key has a lane");
        lane.busy = false;
        lane.idle_since = now;
        self.answered += len as u64;
        if lane.waiting.is_empty() {
            self.lanes.remove(&key);
        }
    }

    pub fn close(&mut self) {
        self.closed = true;
    }

    /// The waiting inputs whose queue time has passed by `now`, oldest
    /// first (by arrival, ties by admission), as (key, id); they leave.
    pub fn expire(&mut self, now: u64) -> Vec<(u32, u64)> {
        let Some(queue_time) = self.queue_time else {
            return Vec::new();
        };
        let mut due: Vec<(u64, u64, u32, u64)> = self
            .lanes
            .iter()
            .flat_map(|(&key, lane)| lane.waiting.iter().map(move |w| (key, w)))
            .filter(|(_, w)| w.arrival + queue_time <= now)
            .map(|(key, w)| (w.arrival, w.seq, key, w.id))
            .collect();
        due.sort_unstable();
        let expired: Vec<(u32, u64)> = due.into_iter().map(|(_, _, k, id)| (k, id)).collect();
        for &(key, id) in &expired {
            self.remove_waiting(key, &[id]);
        }
        self.expired += expired.len() as u64;
        expired
    }

    /// When the next waiting input expires, if one can.
    pub fn next_expiry(&self) -> Option<u64> {
        let queue_time = self.queue_time?;
        self.lanes
            .values()
            .flat_map(|lane| lane.waiting.iter())
            .map(|w| w.arrival + queue_time)
            .min()
    }

    /// What a withdrawal notice for `key` removes: the inputs among the
    /// first `NOTICE_SCAN` of its lane whose callers are gone.
    pub fn noticed(&self, key: u32, gone: &BTreeSet<u64>) -> Vec<u64> {
        self.lane_order(key)
            .into_iter()
            .take(NOTICE_SCAN)
            .filter(|w| gone.contains(&w.id))
            .map(|w| w.id)
            .collect()
    }

    /// Records that `ids` of `key` were withdrawn while waiting.
    pub fn withdraw(&mut self, key: u32, ids: &[u64]) {
        self.remove_waiting(key, ids);
        self.withdrawn += ids.len() as u64;
    }

    /// `ids` left `key`'s lane without a batch. A lane in the ready line
    /// stays there as it is; one the shard has not put in line is ready
    /// again only by what is left, and if nothing is, it is gone.
    fn remove_waiting(&mut self, key: u32, ids: &[u64]) {
        if ids.is_empty() {
            return;
        }
        let lane = self.lanes.get_mut(&key).expect("a key with waiting inputs");
        let before = lane.waiting.len();
        lane.waiting.retain(|w| !ids.contains(&w.id));
        assert_eq!(
            lane.waiting.len() + ids.len(),
            before,
            "each id waited once"
        );
        if lane.waiting.is_empty() && !lane.busy {
            if lane.seen_since.is_some() {
                self.emptied.insert(key);
            }
            self.lanes.remove(&key);
        } else if lane.seen_since.is_none() {
            lane.ready_since = None;
        }
    }

    /// The take that formed a batch of `key` found every input of it
    /// withdrawn (`ids`): nothing is sent, and the lane is released at
    /// once, like a batch that completed now.
    pub fn skip_batch(&mut self, key: u32, ids: &[u64], now: u64) {
        let lane = self.lanes.get_mut(&key).expect("a taken key has a lane");
        lane.waiting.retain(|w| !ids.contains(&w.id));
        lane.ready_since = None;
        lane.seen_since = None;
        lane.idle_since = now;
        self.withdrawn += ids.len() as u64;
        if lane.waiting.is_empty() {
            self.lanes.remove(&key);
        }
    }

    /// The withdrawn inputs of a batch that still sends others.
    pub fn withdraw_from_batch(&mut self, key: u32, ids: &[u64]) {
        let lane = self.lanes.get_mut(&key).expect("a taken key has a lane");
        lane.waiting.retain(|w| !ids.contains(&w.id));
        self.withdrawn += ids.len() as u64;
    }

    /// Keys whose lane was emptied while in the ready line and that have
    /// not been admitted an input since.
    pub fn emptied_in_line(&self) -> Vec<u32> {
        self.emptied.iter().copied().collect()
    }

    /// `key` is admitted an input: a lane emptied in line is past.
    pub fn forget_emptied(&mut self, key: u32) {
        self.emptied.remove(&key);
    }

    /// When `lane`, idle, became (or becomes) ready given what it holds at
    /// `now`: full, closed or without a delay from the moment it is so; due
    /// at its oldest input's arrival plus the delay (G7, G8).
    fn ready_time(&self, lane: &Lane, now: u64) -> Option<u64> {
        if lane.busy || lane.waiting.is_empty() {
            return None;
        }
        let full =
            lane.waiting.len() >= self.batch_size_max || lane.weight() >= self.batch_weight_max;
        let due = lane.oldest_arrival().expect("not empty") + self.delay;
        let since = if due <= now {
            Some(due)
        } else if self.closed || self.delay == 0 || full {
            Some(now)
        } else {
            None
        };
        since.map(|since| since.max(lane.idle_since))
    }

    /// Whether `lane` is ready because of an event at or before `now` (as
    /// opposed to only having become due since).
    fn ready_by_event(&self, lane: &Lane) -> bool {
        let full =
            lane.waiting.len() >= self.batch_size_max || lane.weight() >= self.batch_weight_max;
        let due_when_idled =
            lane.oldest_arrival().expect("not empty") + self.delay <= lane.idle_since;
        self.closed || self.delay == 0 || full || due_when_idled
    }

    /// Brings every lane's readiness up to `now`. A lane, once ready, stays
    /// ready until its batch leaves.
    pub fn refresh(&mut self, now: u64) {
        let times: Vec<(u32, Option<u64>, Option<u64>)> = self
            .lanes
            .iter()
            .filter(|(_, lane)| !lane.busy && !lane.waiting.is_empty())
            .map(|(&key, lane)| {
                let ready = lane.ready_since.or_else(|| self.ready_time(lane, now));
                let seen = lane
                    .seen_since
                    .or_else(|| self.ready_by_event(lane).then_some(now));
                (key, ready, seen)
            })
            .collect();
        for (key, ready, seen) in times {
            let lane = self.lanes.get_mut(&key).expect("listed");
            lane.ready_since = ready;
            lane.seen_since = seen;
        }
    }

    /// The shard looks at the time: every lane ready by then is in its
    /// ready line from now on. It does so whenever it admits an input (or
    /// refuses one for its key's bound, once the lane is found), completes
    /// a batch, or looks for one with a slot free; a lane that fell due in
    /// between joins the line only then.
    pub fn look(&mut self, now: u64) {
        for lane in self.lanes.values_mut() {
            if lane.ready_since.is_some() && lane.seen_since.is_none() {
                lane.seen_since = Some(now);
            }
        }
    }

    /// The earliest moment a waiting (idle, not ready) lane becomes due.
    pub fn next_due(&self) -> Option<(u32, u64)> {
        self.lanes
            .iter()
            .filter(|(_, lane)| {
                !lane.busy && lane.ready_since.is_none() && !lane.waiting.is_empty()
            })
            .map(|(&key, lane)| (key, lane.oldest_arrival().expect("not empty") + self.delay))
            .min_by_key(|&(_, due)| due)
    }

    /// Ready lanes with inputs: (key, ready since, seen since or
    /// `u64::MAX`), by the time they became ready.
    pub fn ready(&self) -> Vec<(u32, u64, u64)> {
        let mut ready: Vec<(u32, u64, u64)> = self
            .lanes
            .iter()
            .filter(|(_, lane)| !lane.waiting.is_empty())
            .filter_map(|(&key, lane)| {
                let since = lane.ready_since?;
                Some((key, since, lane.seen_since.unwrap_or(u64::MAX)))
            })
            .collect();
        ready.sort_by_key(|&(key, since, _)| (since, key));
        ready
    }
}
