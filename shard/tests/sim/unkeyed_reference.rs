//! The reference an unkeyed shard is checked against, written from the
//! guarantees (docs/guarantees.md#unkeyed-batching, and #terms for full, due
//! and batch) and sharing no code with `Fifo` or `ShardCore`: the waiting
//! inputs are a plain `Vec` in admission order,
//! every figure is recomputed from it on demand, and readiness comes from
//! its definition (closed, no delay, full, due), never from a cached flag.
//!
//! Inputs also leave without a batch
//! (docs/guarantees.md#flush-overload-and-withdrawal): by expiry, once they
//! have waited `max_queue_time`, and by withdrawal, when their callers are
//! gone:
//! a notice withdraws those among the first inputs of the queue, and a take
//! withdraws those in the batch it forms; a batch left with none goes
//! nowhere, and the take looks again.

use std::collections::BTreeSet;

use ferry_shard::Refused;

/// An admitted input not yet sent.
#[derive(Clone, Debug)]
pub struct Waiting {
    pub id: u64,
    pub arrival: u64,
    pub weight: u64,
}

/// The shard's bounds, in the simulation's ticks.
#[derive(Clone, Debug)]
pub struct Bounds {
    pub batch_size_max: usize,
    pub batch_weight_max: u64,
    pub queueing_max: usize,
    pub queued_weight_max: u64,
    pub delay: u64,
    pub slots: usize,
    /// `max_queue_time`, if set.
    pub queue_time: Option<u64>,
}

/// How far into the queue a withdrawal notice looks for inputs whose
/// callers are gone (the shard's documented bound, `WITHDRAW_SCAN` in
/// `core/shard_core.rs`).
pub const NOTICE_SCAN: usize = 128;

/// What one take does: the inputs it withdraws (every one of gone
/// callers, in the batches it forms) and the batch it sends, if any.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Take {
    pub withdrawn: Vec<u64>,
    /// Batches it formed that held only inputs of gone callers.
    pub batches_withdrawn_whole: u64,
    pub sent: Option<Vec<u64>>,
}

#[derive(Debug)]
pub struct Reference {
    pub bounds: Bounds,
    /// Admission order: the front is the oldest.
    pub waiting: Vec<Waiting>,
    pub closed: bool,
    pub in_flight: usize,
    pub admitted: u64,
    pub refused: u64,
    pub batches: u64,
    pub sent: u64,
    pub answered: u64,
    pub expired: u64,
    pub withdrawn: u64,
}

impl Reference {
    pub fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            waiting: Vec::new(),
            closed: false,
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

    pub fn waiting_weight(&self) -> u64 {
        self.waiting.iter().map(|w| w.weight).sum()
    }

    /// Why the shard must refuse an input of `weight` now, if it must: the
    /// first that applies of closed (G9), heavier than any batch may be,
    /// and past a queueing bound (G6).
    pub fn refusal(&self, weight: u64) -> Option<Refused> {
        let bounds = &self.bounds;
        if self.closed {
            Some(Refused::Closed)
        } else if weight > bounds.batch_weight_max {
            Some(Refused::TooHeavy)
        } else if self.waiting.len() + 1 > bounds.queueing_max
            || u128::from(self.waiting_weight()) + u128::from(weight)
                > u128::from(bounds.queued_weight_max)
        {
            Some(Refused::Full)
        } else {
            None
        }
    }

    pub fn admit(&mut self, id: u64, weight: u64, now: u64) {
        self.admitted += 1;
        self.waiting.push(Waiting {
            id,
            arrival: now,
            weight,
        });
    }

    /// Full: as many inputs wait as a batch may hold, or as much weight.
    pub fn is_full(&self) -> bool {
        self.waiting.len() >= self.bounds.batch_size_max
            || self.waiting_weight() >= self.bounds.batch_weight_max
    }

    /// When the oldest waiting input is due, if one waits.
    pub fn oldest_due(&self) -> Option<u64> {
        self.waiting
            .first()
            .map(|oldest| oldest.arrival + self.bounds.delay)
    }

    /// Ready at `now`: something waits, and the shard is closed, or has no
    /// delay, or is full, or its oldest input is due.
    pub fn is_ready(&self, now: u64) -> bool {
        !self.waiting.is_empty()
            && (self.closed
                || self.bounds.delay == 0
                || self.is_full()
                || self.oldest_due().is_some_and(|due| due <= now))
    }

    /// Ready at `now` and a slot is free: the shard must start a batch.
    pub fn must_dispatch(&self, now: u64) -> bool {
        self.in_flight < self.bounds.slots && self.is_ready(now)
    }

    /// Ready at `now` only because the oldest input is due.
    pub fn only_due(&self, now: u64) -> bool {
        self.is_ready(now) && !self.closed && self.bounds.delay > 0 && !self.is_full()
    }

    /// What the next batch must hold, by its definition: the front of the
    /// waiting inputs, as many as fit both bounds, at least one. Also
    /// whether the weight bound (rather than the size bound or the end of
    /// the queue) cut it short.
    pub fn expected_batch(&self) -> (Vec<u64>, bool) {
        let mut batch = Vec::new();
        let mut weight = 0_u64;
        for waiting in &self.waiting {
            if batch.len() == self.bounds.batch_size_max {
                return (batch, false);
            }
            if !batch.is_empty() && weight + waiting.weight > self.bounds.batch_weight_max {
                return (batch, true);
            }
            weight += waiting.weight;
            batch.push(waiting.id);
        }
        (batch, false)
    }

    /// A batch of `len` inputs completed.
    pub fn complete(&mut self, len: usize) {
        self.in_flight -= 1;
        self.answered += len as u64;
    }

    pub fn close(&mut self) {
        self.closed = true;
    }

    /// The waiting inputs that have waited `max_queue_time` by `now`,
    /// oldest first; they leave.
    pub fn expire(&mut self, now: u64) -> Vec<u64> {
        let Some(queue_time) = self.bounds.queue_time else {
            return Vec::new();
        };
        let mut due: Vec<(u64, usize, u64)> = self
            .waiting
            .iter()
            .enumerate()
            .filter(|(_, w)| w.arrival + queue_time <= now)
            .map(|(admission, w)| (w.arrival, admission, w.id))
            .collect();
        due.sort_unstable();
        let ids: Vec<u64> = due.into_iter().map(|(_, _, id)| id).collect();
        self.waiting.retain(|w| !ids.contains(&w.id));
        self.expired += ids.len() as u64;
        ids
    }

    /// When the next waiting input expires, if one can.
    pub fn next_expiry(&self) -> Option<u64> {
        let queue_time = self.bounds.queue_time?;
        self.waiting.iter().map(|w| w.arrival + queue_time).min()
    }

    /// What a withdrawal notice removes: the inputs among the first
    /// `NOTICE_SCAN` waiting whose callers are gone. They leave.
    pub fn notice(&mut self, gone: &BTreeSet<u64>) -> Vec<u64> {
        let ids: Vec<u64> = self
            .waiting
            .iter()
            .take(NOTICE_SCAN)
            .map(|w| w.id)
            .filter(|id| gone.contains(id))
            .collect();
        self.waiting.retain(|w| !ids.contains(&w.id));
        self.withdrawn += ids.len() as u64;
        ids
    }

    /// A take at `now` with a slot free, the callers of `gone` having left
    /// (empty unless inputs are withdrawn on drop): while the queue is
    /// ready, it forms the front batch; the inputs of gone callers in it
    /// are withdrawn; if none is left the take looks again, otherwise the
    /// rest is sent.
    pub fn take(&mut self, now: u64, gone: &BTreeSet<u64>) -> Take {
        let mut take = Take::default();
        while self.is_ready(now) {
            let (batch, _) = self.expected_batch();
            let (withdrawn, sent): (Vec<u64>, Vec<u64>) =
                batch.iter().partition(|id| gone.contains(id));
            self.waiting.drain(..batch.len());
            self.withdrawn += withdrawn.len() as u64;
            take.withdrawn.extend(withdrawn);
            if !sent.is_empty() {
                self.in_flight += 1;
                self.batches += 1;
                self.sent += sent.len() as u64;
                take.sent = Some(sent);
                break;
            }
            take.batches_withdrawn_whole += 1;
        }
        take
    }
}
