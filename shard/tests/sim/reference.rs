//! The reference the shard is checked against, written from the spec (SPEC
//! §1, §2) and sharing no code with `Lanes` or `ShardCore`: each key's
//! waiting inputs are a plain `Vec`, scanned and sorted on demand, and
//! readiness is computed from its definition (full, due, closed) with the
//! moment it began, not from any ready line.

use std::collections::BTreeMap;

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
    /// When the lane became ready by the spec's definition, once it is.
    pub ready_since: Option<u64>,
    /// When the shard could first have seen it ready: at once if it became
    /// ready by an event (an input that filled it, its batch completing,
    /// close, no delay), but a lane that became due while no slot was free
    /// only when a slot was next looked for.
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
    pub batch_size_max: usize,
    pub batch_weight_max: u64,
    pub queueing_max: usize,
    pub queued_weight_max: u64,
    pub delay: u64,
    pub slots: usize,
    pub lanes: BTreeMap<u32, Lane>,
    pub closed: bool,
    seq_next: u64,
    pub in_flight: usize,
    pub admitted: u64,
    pub refused: u64,
    pub batches: u64,
    pub sent: u64,
    pub answered: u64,
}

impl Reference {
    pub fn new(scenario: &Scenario) -> Self {
        let config = &scenario.config;
        Self {
            batch_size_max: config.max_batch_size,
            batch_weight_max: config.max_batch_weight,
            queueing_max: config.max_queueing,
            queued_weight_max: config.max_queued_weight,
            delay: scenario.delay_ticks,
            slots: scenario.slots,
            lanes: BTreeMap::new(),
            closed: false,
            seq_next: 0,
            in_flight: 0,
            admitted: 0,
            refused: 0,
            batches: 0,
            sent: 0,
            answered: 0,
        }
    }

    pub fn waiting(&self) -> usize {
        self.lanes.values().map(|l| l.waiting.len()).sum()
    }

    pub fn waiting_weight(&self) -> u64 {
        self.lanes.values().map(Lane::weight).sum()
    }

    /// Why the shard must refuse this input now, if it must (G6, G9).
    pub fn refusal(&self, weight: u64) -> Option<Refused> {
        if self.closed {
            Some(Refused::Closed)
        } else if weight > self.batch_weight_max {
            Some(Refused::TooHeavy)
        } else if self.waiting() + 1 > self.queueing_max
            || u128::from(self.waiting_weight()) + u128::from(weight)
                > u128::from(self.queued_weight_max)
        {
            Some(Refused::Full)
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

    /// Records that `ids` of `key` left in a batch: the lane is busy.
    pub fn dispatch(&mut self, key: u32, ids: &[u64]) {
        let lane = self
            .lanes
            .get_mut(&key)
            .expect("a dispatched key has a lane");
        lane.waiting.retain(|w| !ids.contains(&w.id));
        lane.busy = true;
        lane.ready_since = None;
        lane.seen_since = None;
        self.in_flight += 1;
        self.batches += 1;
        self.sent += ids.len() as u64;
    }

    /// Records that `key`'s batch of `len` inputs completed.
    pub fn complete(&mut self, key: u32, len: usize, now: u64) {
        let lane = self.lanes.get_mut(&key).expect("a busy key has a lane");
        lane.busy = false;
        lane.idle_since = now;
        self.in_flight -= 1;
        self.answered += len as u64;
        if lane.waiting.is_empty() {
            self.lanes.remove(&key);
        }
    }

    pub fn close(&mut self) {
        self.closed = true;
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

    /// The shard looks for a batch with a slot free: every ready lane is
    /// seen from now on.
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

    /// Ready lanes: (key, ready since, seen since or `u64::MAX`), by the
    /// time they became ready.
    pub fn ready(&self) -> Vec<(u32, u64, u64)> {
        let mut ready: Vec<(u32, u64, u64)> = self
            .lanes
            .iter()
            .filter_map(|(&key, lane)| {
                let since = lane.ready_since?;
                Some((key, since, lane.seen_since.unwrap_or(u64::MAX)))
            })
            .collect();
        ready.sort_by_key(|&(key, since, _)| (since, key));
        ready
    }
}
