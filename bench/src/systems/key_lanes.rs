//! The queue discipline of `single-lock`, as the design Ferry grew from
//! kept it (docs/design/0001-per-key-batching-on-shards.md,
//! "Alternatives"): every key's waiting inputs in one plain structure,
//! which [`single_lock`](super::single_lock) keeps behind its one mutex.
//! Pure: no lock, no clock, no `async`; `now` is an argument, never
//! earlier than the one before, so a test drives it step by step. What
//! it keeps (the numbers are those of docs/guarantees.md):
//!
//! - A key's waiting inputs are its *lane*, oldest first, and a batch is
//!   the front of one lane, at most `max_batch_size` inputs: a key's
//!   inputs go in the order they came, which is their rank order in
//!   `ferry-load`, where every input has the same rank (G2, G3).
//! - A lane is *ready* when it is full, *due* (its oldest input has waited
//!   `max_batch_delay`) or closing; ready lanes wait in one line, first
//!   come first served (G7, G8).
//! - Taking a batch marks its lane *busy* until [`KeyLanes::complete`], so
//!   a key has at most one batch in flight (G1). A busy lane still admits;
//!   once completed, it joins the back of the line if it is ready then.
//! - At most `max_waiting` inputs wait in all lanes together; one more is
//!   refused and handed back, and so is every input after
//!   [`KeyLanes::close`] (G6). Closing makes every lane ready (G9).
//! - A lane lives while it has waiting inputs or is busy (G5).
//!
//! Deadlines: one delay for every input makes due times grow with
//! admission, so they wait in a FIFO, an entry per input admitted, popped
//! once due. A popped entry makes its lane ready if the lane is idle and
//! its oldest input is due; a busy lane is looked at again when it
//! completes. *Invariant:* while a lane waits, its oldest input's entry is
//! still in the FIFO (a close empties it, after which no lane waits). An
//! entry outlives its input by at most one delay.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// The bounds of a [`KeyLanes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Inputs per batch at most (at least 1).
    pub max_batch_size: usize,
    /// How long a partial lane waits for more before it is due (zero: a
    /// lane is ready as soon as it holds an input).
    pub max_batch_delay: Duration,
    /// Inputs waiting in all lanes together at most.
    pub max_waiting: usize,
}

/// Every key's lane, the ready line and the deadlines.
#[derive(Debug)]
pub struct KeyLanes<T> {
    limits: Limits,
    lanes: HashMap<u64, Lane<T>, ahash::RandomState>,
    /// Keys of the ready lanes, first come first served.
    ready: VecDeque<u64>,
    /// Per input admitted with a delay, its due instant and key, in
    /// admission order (so in due order).
    dues: VecDeque<(Instant, u64)>,
    /// Inputs waiting in all lanes; at most `limits.max_waiting`.
    waiting: usize,
    closed: bool,
}

/// One key's waiting inputs and where its lane stands.
#[derive(Debug)]
struct Lane<T> {
    /// Waiting inputs, oldest first, each with when it was admitted.
    inputs: VecDeque<(T, Instant)>,
    /// Its batch is in flight.
    busy: bool,
    /// Its key is in the ready line.
    in_line: bool,
}

/// One key's batch: the front of its lane.
#[derive(Debug, PartialEq, Eq)]
pub struct Batch<T> {
    /// The key of every input: hand it back to [`KeyLanes::complete`].
    pub key: u64,
    /// The inputs, oldest first; at least one.
    pub inputs: Vec<T>,
}

/// Why an input was not admitted; each hands the input back.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused<T> {
    /// `max_waiting` inputs already wait.
    Full(T),
    /// [`KeyLanes::close`] was called.
    Closed(T),
}

impl<T> Refused<T> {
    /// The input that was refused.
    pub fn into_input(self) -> T {
        match self {
            Refused::Full(input) | Refused::Closed(input) => input,
        }
    }
}

impl<T> KeyLanes<T> {
    /// No lanes yet, open.
    ///
    /// # Panics
    ///
    /// If `limits.max_batch_size` is 0.
    pub fn new(limits: Limits) -> Self {
        assert!(limits.max_batch_size >= 1, "a batch holds an input");
        Self {
            limits,
            lanes: HashMap::default(),
            ready: VecDeque::new(),
            dues: VecDeque::new(),
            waiting: 0,
            closed: false,
        }
    }

    /// Admits `input` at the back of `key`'s lane, or refuses it and hands
    /// it back.
    pub fn admit(&mut self, key: u64, input: T, now: Instant) -> Result<(), Refused<T>> {
        if self.closed {
            return Err(Refused::Closed(input));
        }
        if self.waiting >= self.limits.max_waiting {
            return Err(Refused::Full(input));
        }
        let lane = self.lanes.entry(key).or_insert_with(|| Lane {
            inputs: VecDeque::new(),
            busy: false,
            in_line: false,
        });
        lane.inputs.push_back((input, now));
        self.waiting += 1;
        if !self.limits.max_batch_delay.is_zero() {
            self.dues
                .push_back((now + self.limits.max_batch_delay, key));
        }
        self.join_line_if_ready(key, now);
        debug_assert!(self.waiting <= self.limits.max_waiting);
        Ok(())
    }

    /// Takes the batch of the first ready lane and marks the lane busy;
    /// `None` when no lane is ready (maybe until [`next_due`](Self::next_due)).
    pub fn take(&mut self, now: Instant) -> Option<Batch<T>> {
        self.ready_the_due(now);
        let key = self.ready.pop_front()?;
        let lane = self
            .lanes
            .get_mut(&key)
            .expect("a key in the ready line has a lane");
        debug_assert!(lane.in_line && !lane.busy && !lane.inputs.is_empty());
        let count = lane.inputs.len().min(self.limits.max_batch_size);
        let inputs: Vec<T> = lane.inputs.drain(..count).map(|(input, _)| input).collect();
        lane.in_line = false;
        lane.busy = true;
        self.waiting -= count;
        debug_assert!(!inputs.is_empty() && inputs.len() <= self.limits.max_batch_size);
        Some(Batch { key, inputs })
    }

    /// Ends `key`'s batch in flight: the lane is idle again, gone if
    /// nothing waits in it, at the back of the line if it is ready.
    ///
    /// # Panics
    ///
    /// If `key` has no batch in flight.
    pub fn complete(&mut self, key: u64, now: Instant) {
        let lane = self
            .lanes
            .get_mut(&key)
            .expect("a completed key has a lane");
        assert!(lane.busy, "a completed key has a batch in flight");
        lane.busy = false;
        if lane.inputs.is_empty() {
            self.lanes.remove(&key);
        } else {
            self.join_line_if_ready(key, now);
        }
        debug_assert!(self.lanes.get(&key).is_none_or(|lane| !lane.busy));
    }

    /// Admits nothing more; every lane is ready from now on, so what waits
    /// still goes.
    pub fn close(&mut self) {
        self.closed = true;
        // A waiting lane's oldest input still has its entry, and the
        // entries are in admission order: the lanes join the line in the
        // order their oldest inputs came (G7).
        while let Some((_, key)) = self.dues.pop_front() {
            self.join_line(key);
        }
        debug_assert!(self.lanes.values().all(|lane| lane.busy || lane.in_line));
    }

    /// Whether a lane is in the ready line.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// When the earliest waiting lane may be due (or an entry of an input
    /// gone, which makes nothing ready); `None` with nothing to wait for.
    pub fn next_due(&self) -> Option<Instant> {
        self.dues.front().map(|&(due, _)| due)
    }

    /// Inputs waiting in all lanes (not those in flight).
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Whether `close` was called and every lane is gone: nothing waits
    /// and nothing is in flight.
    pub fn is_drained(&self) -> bool {
        self.closed && self.lanes.is_empty()
    }

    /// Moves every lane whose oldest input is due into the ready line.
    fn ready_the_due(&mut self, now: Instant) {
        while let Some(&(due, key)) = self.dues.front() {
            if due > now {
                break;
            }
            self.dues.pop_front();
            self.join_line_if_ready(key, now);
        }
    }

    /// Puts `key`'s lane at the back of the ready line if it is full, due
    /// or closing (and idle, with inputs, out of the line).
    fn join_line_if_ready(&mut self, key: u64, now: Instant) {
        let Some(lane) = self.lanes.get(&key) else {
            return;
        };
        let Some(&(_, oldest)) = lane.inputs.front() else {
            return;
        };
        if self.closed
            || lane.inputs.len() >= self.limits.max_batch_size
            || oldest + self.limits.max_batch_delay <= now
        {
            self.join_line(key);
        }
    }

    /// Puts `key`'s lane at the back of the ready line if it is idle, has
    /// inputs and is not in the line yet.
    fn join_line(&mut self, key: u64) {
        let Some(lane) = self.lanes.get_mut(&key) else {
            return;
        };
        if !lane.busy && !lane.in_line && !lane.inputs.is_empty() {
            lane.in_line = true;
            self.ready.push_back(key);
        }
    }
}
