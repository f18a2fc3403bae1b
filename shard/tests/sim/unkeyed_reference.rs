//! The reference an unkeyed shard is checked against, written from the spec
//! (SPEC §9, and §2 for full, due and batch) and sharing no code with `Fifo`
//! or `ShardCore`: the waiting inputs are a plain `Vec` in admission order,
//! every figure is recomputed from it on demand, and readiness comes from
//! its definition (closed, no delay, full, due), never from a cached flag.

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

    /// `ids`, the front of the queue, left in a batch.
    pub fn dispatch(&mut self, ids: &[u64]) {
        let front: Vec<u64> = self.waiting.iter().take(ids.len()).map(|w| w.id).collect();
        assert_eq!(front, ids, "the reference dispatches its own front");
        self.waiting.drain(..ids.len());
        self.in_flight += 1;
        self.batches += 1;
        self.sent += ids.len() as u64;
    }

    /// A batch of `len` inputs completed.
    pub fn complete(&mut self, len: usize) {
        self.in_flight -= 1;
        self.answered += len as u64;
    }

    pub fn close(&mut self) {
        self.closed = true;
    }
}
