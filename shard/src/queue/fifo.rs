//! The queue of one shard for unkeyed batching
//! (docs/guarantees.md#unkeyed-batching): pure, no clock, no I/O, no
//! `async`.
//!
//! Unkeyed batching has one undifferentiated stream of inputs per shard and
//! no per-key guarantee: nothing is busy, and several batches of the same
//! queue may be out at once. How many is the caller's business (it counts
//! its slots, `max_in_flight_batches`); this queue only decides what goes in
//! the next batch and when one may go. Time is passed in as `now`,
//! [`Nanos`] (or a `Duration`) since any origin the caller keeps fixed,
//! never going backwards from one call to the next (debug builds assert
//! it), so every method is a plain step that a test can drive against a
//! model.
//!
//! A batch is *ready* to be taken when the queue holds an input and
//! - the queue is closed, or
//! - `max_batch_delay` is zero, or
//! - it is *full*: at least `max_batch_size` inputs wait, or their weight is
//!   at least `max_batch_weight`, or
//! - it is *due*: `now` is at least the oldest waiting input's arrival plus
//!   `max_batch_delay`.
//!
//! What this structure guarantees (the numbers are those of
//! docs/guarantees.md):
//! - Exactly once (as G4): every admitted input leaves in exactly one batch
//!   of [`Fifo::take`] (or [`Fifo::take_with`]); none is lost or repeated,
//!   and after [`Fifo::close`] takes drain everything. A refused input is
//!   handed back inside the [`Refusal`].
//! - Bounds (G6): the waiting inputs never number more than `max_waiting`
//!   nor weigh more than `max_waiting_weight`; an input that would pass
//!   either is refused with `Full`. A batch holds at least one and at most
//!   `max_batch_size` inputs and weighs at most `max_batch_weight` (an input
//!   heavier than that is refused with `TooHeavy`, so one always fits).
//! - FIFO order (docs/guarantees.md#unkeyed-batching): a batch is the front of the queue in admission
//!   order, so the batches, one after the other, are the admitted inputs in
//!   admission order.
//! - Latency (as G8): with a zero delay, whatever waits is ready at once;
//!   with a delay, an input admitted at `t` is in a ready queue from
//!   `t + max_batch_delay` on, because the oldest input waiting then arrived
//!   no later than it. So it waits at most the delay plus however long the
//!   caller takes to take the batches ahead of it.
//!
//! Invariant: the inputs are kept in admission order, and since `now` never
//! goes backwards that is also arrival order: the front is the oldest.
//! Invariant: `waiting_weight` is the sum of the waiting inputs' weights;
//! there are at most `max_waiting` of them and that sum is at most
//! `max_waiting_weight`.
//! Invariant: every waiting input weighs at most `max_batch_weight`.
//!
//! Besides a batch, an input leaves by *expiry* (`max_queue_time`): the
//! oldest inputs are at the front, so [`Fifo::expire_with`] pops the front
//! while it is due, at a cost of what expires; or by *withdrawal*
//! ([`Fifo::withdraw_with`]): the inputs a predicate marks are removed from
//! the front part of the queue, where the first given up on wait.

use std::collections::VecDeque;
use std::time::Duration;

use crate::queue::items::{Entry, Items};
use crate::value::config::QueueConfig;
use crate::value::nanos::{Latest, Nanos};
use crate::value::refused::{Refusal, Refused};

/// One batch taken from the front of a [`Fifo`].
///
/// ```
/// # #[cfg(feature = "internals")] {
/// use ferry_shard::parts::{Fifo, FifoBatch};
/// use ferry_shard::QueueConfig;
/// use std::time::Duration;
///
/// let mut fifo = Fifo::new(QueueConfig::default());
/// fifo.admit('x', 2, Duration::ZERO).unwrap();
/// let batch: FifoBatch<char> = fifo.take(Duration::ZERO).unwrap();
/// assert_eq!(batch, FifoBatch { items: vec!['x'], weight: 2 });
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FifoBatch<T> {
    /// At least one input, at most `max_batch_size`, in admission order.
    pub items: Vec<T>,
    /// The batch's total weight, at most `max_batch_weight`.
    pub weight: u64,
}

/// The items of a batch as [`Fifo::take_with`] lends them, in admission
/// order. Items not taken from it are dropped with it; they have left the
/// queue either way.
///
/// ```
/// use ferry_shard::parts::Fifo;
/// use ferry_shard::QueueConfig;
/// use std::time::Duration;
///
/// let mut fifo = Fifo::new(QueueConfig::default());
/// fifo.admit("a", 1, Duration::ZERO).unwrap();
/// fifo.admit("b", 3, Duration::ZERO).unwrap();
/// let (len, weight) = fifo
///     .take_with(Duration::ZERO, |items| (items.len(), items.weight()))
///     .unwrap();
/// assert_eq!((len, weight), (2, 4));
/// assert_eq!(fifo.waiting(), 0, "untaken items left the queue too");
/// ```
pub type FifoItems<'a, T> = Items<'a, Queued<T>, T>;

/// An admitted input waiting in the queue.
#[derive(Debug)]
pub struct Queued<T> {
    arrival_ns: u64,
    weight: u64,
    item: T,
}

impl<T> Entry<T> for Queued<T> {
    fn arrival_ns(&self) -> u64 {
        self.arrival_ns
    }

    fn into_item(self) -> T {
        self.item
    }
}

/// The waiting inputs of one shard for unkeyed batching, in admission order.
/// `T` is whatever the caller keeps per input (the input and its reply).
///
/// ```
/// use ferry_shard::parts::Fifo;
/// use ferry_shard::{QueueConfig, Refused};
/// use std::time::Duration;
///
/// let mut fifo = Fifo::new(QueueConfig {
///     max_batch_size: 2,
///     max_batch_delay: Duration::from_micros(100),
///     ..QueueConfig::default()
/// });
/// let t = Duration::from_micros;
/// for item in 1..=3 {
///     fifo.admit(item, 1, t(0)).unwrap();
/// }
/// // Full: a batch goes at once, from the front. Several may be out.
/// assert_eq!(fifo.take(t(0)).unwrap().items, [1, 2]);
/// // The partial rest waits for the delay from its oldest input.
/// assert!(fifo.take(t(99)).is_none());
/// assert_eq!(fifo.take(t(100)).unwrap().items, [3]);
///
/// fifo.close();
/// assert_eq!(fifo.admit(4, 1, t(100)).unwrap_err().reason, Refused::Closed);
/// ```
#[derive(Debug)]
pub struct Fifo<T> {
    config: QueueConfig,
    delay_ns: u64,
    queue_time_ns: Option<u64>,
    /// Admission order, which is arrival order: the front is the oldest.
    inputs: VecDeque<Queued<T>>,
    waiting_weight: u64,
    closed: bool,
    /// The latest `now` given to any method (debug builds check that time
    /// never goes backwards).
    now_latest: Latest,
}

impl<T> Fifo<T> {
    /// An empty, open queue with the bounds of `config`. Of its fields it
    /// uses `max_batch_size`, `max_batch_weight`, `max_batch_delay`,
    /// `max_waiting` and `max_waiting_weight`.
    ///
    /// # Panics
    /// If `config` breaks a rule of [`QueueConfig::validate`]; builders
    /// validate first and return the error instead.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    ///
    /// let fifo: Fifo<u32> = Fifo::new(QueueConfig::default());
    /// assert_eq!(fifo.waiting(), 0);
    /// assert!(!fifo.is_closed());
    /// ```
    pub fn new(config: QueueConfig) -> Self {
        if let Err(err) = config.validate() {
            panic!("{err}");
        }
        Self {
            delay_ns: config.max_batch_delay_ns(),
            queue_time_ns: config.max_queue_time_ns(),
            config,
            inputs: VecDeque::new(),
            waiting_weight: 0,
            closed: false,
            now_latest: Latest::default(),
        }
    }

    /// The bounds this queue keeps.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    ///
    /// let config = QueueConfig { max_batch_size: 8, ..QueueConfig::default() };
    /// let fifo: Fifo<()> = Fifo::new(config.clone());
    /// assert_eq!(fifo.config(), &config);
    /// ```
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Admits `item` with its precomputed `weight`, arriving at `now`, at
    /// the back of the queue.
    ///
    /// Refuses, handing `item` back, for the first reason that applies:
    /// `Closed` after [`close`](Self::close); `TooHeavy` if
    /// `weight > max_batch_weight`; `Full` if admitting would pass
    /// `max_waiting` or `max_waiting_weight` (G6).
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::{QueueConfig, Refused};
    /// use std::time::Duration;
    ///
    /// let mut fifo = Fifo::new(QueueConfig {
    ///     max_batch_weight: 10,
    ///     max_waiting: 1,
    ///     ..QueueConfig::default()
    /// });
    /// let now = Duration::ZERO;
    /// let refusal = fifo.admit("heavy", 11, now).unwrap_err();
    /// assert_eq!((refusal.item, refusal.reason), ("heavy", Refused::TooHeavy));
    /// fifo.admit("a", 1, now).unwrap();
    /// assert_eq!(fifo.admit("b", 1, now).unwrap_err().reason, Refused::Full);
    /// ```
    pub fn admit(&mut self, item: T, weight: u64, now: impl Into<Nanos>) -> Result<(), Refusal<T>> {
        let now_ns = self.observe(now);
        if let Some(reason) = self.refusal(weight) {
            return Err(Refusal { item, reason });
        }
        debug_assert!(self.inputs.back().is_none_or(|b| b.arrival_ns <= now_ns));
        self.inputs.push_back(Queued {
            arrival_ns: now_ns,
            weight,
            item,
        });
        self.waiting_weight += weight;
        self.assert_invariants();
        Ok(())
    }

    /// Why an input of `weight` would be refused now, if it would.
    fn refusal(&self, weight: u64) -> Option<Refused> {
        if self.closed {
            Some(Refused::Closed)
        } else if self.config.is_too_heavy(weight) {
            Some(Refused::TooHeavy)
        } else if self.inputs.len() >= self.config.max_waiting
            || self
                .waiting_weight
                .checked_add(weight)
                .is_none_or(|w| w > self.config.max_waiting_weight)
        {
            Some(Refused::Full)
        } else {
            None
        }
    }

    /// Takes the next batch if the queue is ready at `now` (module docs):
    /// the longest front of the queue, in admission order, with at most
    /// `max_batch_size` inputs and a weight of at most `max_batch_weight`.
    /// `None` if not ready.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    /// use std::time::Duration;
    ///
    /// let mut fifo = Fifo::new(QueueConfig { max_batch_weight: 4, ..QueueConfig::default() });
    /// for (item, weight) in [('a', 2), ('b', 2), ('c', 1)] {
    ///     fifo.admit(item, weight, Duration::ZERO).unwrap();
    /// }
    /// let batch = fifo.take(Duration::ZERO).unwrap();
    /// assert_eq!((batch.items, batch.weight), (vec!['a', 'b'], 4));
    /// assert_eq!(fifo.take(Duration::ZERO).unwrap().items, ['c']);
    /// assert!(fifo.take(Duration::ZERO).is_none(), "empty");
    /// ```
    pub fn take(&mut self, now: impl Into<Nanos>) -> Option<FifoBatch<T>> {
        self.take_with(now, |items| {
            let weight = items.weight();
            FifoBatch {
                items: items.collect(),
                weight,
            }
        })
    }

    /// Like [`take`](Self::take), but lends the batch's items to `consume`
    /// as they leave the queue instead of collecting them into a `Vec`, and
    /// returns what `consume` returned. `consume` is called only if a batch
    /// is ready. Items it does not take are dropped.
    ///
    /// The queue's bookkeeping is done before `consume` runs, so should it
    /// panic, the batch's items are dropped and the queue stays consistent.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    /// use std::time::Duration;
    ///
    /// let mut fifo = Fifo::new(QueueConfig::default());
    /// fifo.admit((1, 'x'), 1, Duration::ZERO).unwrap();
    /// fifo.admit((2, 'y'), 1, Duration::ZERO).unwrap();
    /// let (numbers, letters): (Vec<_>, Vec<_>) =
    ///     fifo.take_with(Duration::ZERO, |items| items.unzip()).unwrap();
    /// assert_eq!((numbers, letters), (vec![1, 2], vec!['x', 'y']));
    /// ```
    pub fn take_with<R>(
        &mut self,
        now: impl Into<Nanos>,
        consume: impl FnOnce(FifoItems<'_, T>) -> R,
    ) -> Option<R> {
        let now_ns = self.observe(now);
        if !self.is_ready_at(now_ns) {
            return None;
        }
        let (count, weight) = self.front_batch();
        debug_assert!(count >= 1 && count <= self.config.max_batch_size);
        debug_assert!(weight <= self.config.max_batch_weight);
        self.waiting_weight -= weight;
        // Unkeyed: every batch's key hash is 0.
        let consumed = consume(Items::new(&mut self.inputs, count, weight, 0));
        self.assert_invariants();
        Some(consumed)
    }

    /// The weight of the batch [`take_with`](Self::take_with) would take at
    /// `now`, if one is ready. Takes nothing.
    pub fn next_weight(&mut self, now: impl Into<Nanos>) -> Option<u64> {
        let now_ns = self.observe(now);
        self.is_ready_at(now_ns).then(|| self.front_batch().1)
    }

    /// How many inputs from the front make the next batch, and their
    /// weight: as many as fit both bounds, and at least one.
    fn front_batch(&self) -> (usize, u64) {
        let mut count = 0;
        let mut weight = 0_u64;
        for queued in self.inputs.iter().take(self.config.max_batch_size) {
            // No overflow: the sum is at most `max_waiting_weight`.
            let weight_with = weight + queued.weight;
            if count > 0 && weight_with > self.config.max_batch_weight {
                break;
            }
            count += 1;
            weight = weight_with;
        }
        (count, weight)
    }

    /// Whether a batch is ready at `now_ns` (module docs).
    fn is_ready_at(&self, now_ns: u64) -> bool {
        self.has_ready() || self.due_ns().is_some_and(|due_ns| due_ns <= now_ns)
    }

    /// When the oldest waiting input is due, if one waits and the delay is
    /// positive.
    fn due_ns(&self) -> Option<u64> {
        if self.delay_ns == 0 {
            return None;
        }
        let oldest = self.inputs.front()?;
        Some(oldest.arrival_ns.saturating_add(self.delay_ns))
    }

    /// Closes the queue and hands out everything waiting, oldest first: for
    /// a shard that stops with inputs it never sent.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    ///
    /// let mut fifo = Fifo::new(QueueConfig::default());
    /// fifo.admit('a', 1, Duration::ZERO).unwrap();
    /// fifo.admit('b', 1, Duration::ZERO).unwrap();
    /// assert_eq!(fifo.drain_waiting(), vec!['a', 'b']);
    /// assert_eq!((fifo.waiting(), fifo.waiting_weight()), (0, 0));
    /// assert!(fifo.is_closed());
    /// ```
    pub fn drain_waiting(&mut self) -> Vec<T> {
        self.close();
        self.waiting_weight = 0;
        self.inputs.drain(..).map(|queued| queued.item).collect()
    }

    /// Closes the queue (guarantee G9, docs/guarantees.md): nothing new is admitted, and whatever
    /// waits is ready at once, its delay ignored. Idempotent.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    /// use std::time::Duration;
    ///
    /// let mut fifo = Fifo::new(QueueConfig {
    ///     max_batch_delay: Duration::from_secs(60),
    ///     ..QueueConfig::default()
    /// });
    /// fifo.admit('a', 1, Duration::ZERO).unwrap();
    /// assert!(fifo.take(Duration::ZERO).is_none(), "waits for its delay");
    /// fifo.close();
    /// fifo.close();
    /// assert_eq!(fifo.take(Duration::ZERO).unwrap().items, ['a']);
    /// ```
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    ///
    /// let mut fifo: Fifo<()> = Fifo::new(QueueConfig::default());
    /// fifo.close();
    /// assert!(fifo.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// When the oldest waiting input becomes due: its arrival plus
    /// `max_batch_delay` (saturating). `None` when no input waits, when the
    /// delay is zero, or once the queue is closed: then readiness does not
    /// wait on time.
    ///
    /// It does not look at fullness: a full queue is ready now (see
    /// [`has_ready`](Self::has_ready)), and this still answers its oldest
    /// input's due time, which may be in the past. After a take, ask again:
    /// the oldest input may have changed.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    /// use std::time::Duration;
    ///
    /// let t = Duration::from_micros;
    /// let mut fifo = Fifo::new(QueueConfig {
    ///     max_batch_delay: t(100),
    ///     ..QueueConfig::default()
    /// });
    /// assert_eq!(fifo.next_deadline(), None, "nothing waits");
    /// fifo.admit('a', 1, t(5)).unwrap();
    /// fifo.admit('b', 1, t(30)).unwrap();
    /// assert_eq!(fifo.next_deadline(), Some(t(105)), "from the oldest input");
    /// fifo.close();
    /// assert_eq!(fifo.next_deadline(), None, "closed: ready at once");
    /// ```
    pub fn next_deadline(&self) -> Option<Duration> {
        let due_ns = if self.closed { None } else { self.due_ns() };
        let expiry_ns = self.expiry_ns();
        let next_ns = match (due_ns, expiry_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        next_ns.map(Duration::from_nanos)
    }

    /// When the oldest waiting input expires, if `max_queue_time` is set.
    pub fn next_expiry(&self) -> Option<Duration> {
        self.expiry_ns().map(Duration::from_nanos)
    }

    fn expiry_ns(&self) -> Option<u64> {
        let queue_time_ns = self.queue_time_ns?;
        let oldest = self.inputs.front()?;
        Some(oldest.arrival_ns.saturating_add(queue_time_ns))
    }

    /// Hands to `out` every input still waiting `max_queue_time` after its
    /// arrival, by `now`, oldest first, and returns how many.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    ///
    /// let t = Duration::from_millis;
    /// let mut fifo = Fifo::new(QueueConfig {
    ///     max_queue_time: Some(t(10)),
    ///     max_batch_delay: t(100),
    ///     ..QueueConfig::default()
    /// });
    /// fifo.admit('a', 1, t(0)).unwrap();
    /// fifo.admit('b', 1, t(5)).unwrap();
    /// assert_eq!(fifo.next_deadline(), Some(t(10)), "a expires before it is due");
    /// let mut expired = Vec::new();
    /// assert_eq!(fifo.expire_with(t(12), |item| expired.push(item)), 1);
    /// assert_eq!((expired, fifo.waiting()), (vec!['a'], 1));
    /// ```
    pub fn expire_with(&mut self, now: impl Into<Nanos>, mut out: impl FnMut(T)) -> usize {
        let now_ns = self.observe(now);
        let mut expired = 0;
        while self
            .expiry_ns()
            .is_some_and(|expiry_ns| expiry_ns <= now_ns)
        {
            let queued = self.inputs.pop_front().expect("an input that expires");
            self.waiting_weight -= queued.weight;
            out(queued.item);
            expired += 1;
        }
        self.assert_invariants();
        expired
    }

    /// Withdraws, handing each to `out`, the inputs among the first `scan`
    /// waiting that `gone` marks, and returns how many (see the module
    /// docs).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    ///
    /// let mut fifo = Fifo::new(QueueConfig { max_batch_delay: Duration::from_secs(1), ..QueueConfig::default() });
    /// for item in 1..=4 {
    ///     fifo.admit(item, 1, Duration::ZERO).unwrap();
    /// }
    /// let mut withdrawn = Vec::new();
    /// assert_eq!(fifo.withdraw_with(3, |item| item % 2 == 1, |item| withdrawn.push(item)), 2);
    /// assert_eq!((withdrawn, fifo.waiting()), (vec![1, 3], 2));
    /// ```
    pub fn withdraw_with(
        &mut self,
        scan: usize,
        mut gone: impl FnMut(&T) -> bool,
        mut out: impl FnMut(T),
    ) -> usize {
        let mut withdrawn = 0;
        let mut at = 0;
        for _ in 0..scan {
            let Some(queued) = self.inputs.get(at) else {
                break;
            };
            if gone(&queued.item) {
                let queued = self.inputs.remove(at).expect("an input at `at`");
                self.waiting_weight -= queued.weight;
                out(queued.item);
                withdrawn += 1;
            } else {
                at += 1;
            }
        }
        self.assert_invariants();
        withdrawn
    }

    /// Whether a batch is ready ignoring deadlines: an input waits and the
    /// queue is closed, the delay is zero, or it is full. A queue that is
    /// only due answers `false`; [`take`](Self::take) at a `now` past
    /// [`next_deadline`](Self::next_deadline) takes it all the same.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    /// use std::time::Duration;
    ///
    /// let mut fifo = Fifo::new(QueueConfig {
    ///     max_batch_size: 2,
    ///     max_batch_delay: Duration::from_micros(100),
    ///     ..QueueConfig::default()
    /// });
    /// fifo.admit('a', 1, Duration::ZERO).unwrap();
    /// assert!(!fifo.has_ready(), "partial, waiting for its delay");
    /// fifo.admit('b', 1, Duration::ZERO).unwrap();
    /// assert!(fifo.has_ready(), "full");
    /// ```
    pub fn has_ready(&self) -> bool {
        !self.inputs.is_empty() && (self.closed || self.delay_ns == 0 || self.is_full())
    }

    fn is_full(&self) -> bool {
        self.inputs.len() >= self.config.max_batch_size
            || self.waiting_weight >= self.config.max_batch_weight
    }

    /// Inputs admitted and not yet taken.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    /// use std::time::Duration;
    ///
    /// let mut fifo = Fifo::new(QueueConfig::default());
    /// fifo.admit('a', 3, Duration::ZERO).unwrap();
    /// assert_eq!(fifo.waiting(), 1);
    /// ```
    pub fn waiting(&self) -> usize {
        self.inputs.len()
    }

    /// Total weight of the waiting inputs.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    /// use std::time::Duration;
    ///
    /// let mut fifo = Fifo::new(QueueConfig::default());
    /// fifo.admit('a', 3, Duration::ZERO).unwrap();
    /// fifo.admit('b', 4, Duration::ZERO).unwrap();
    /// assert_eq!(fifo.waiting_weight(), 7);
    /// ```
    pub fn waiting_weight(&self) -> u64 {
        self.waiting_weight
    }

    /// `now` in nanoseconds, after checking that it is not earlier than the
    /// latest `now` seen, and recording it (both in debug builds only): the
    /// front is the oldest input only while arrivals never go backwards.
    fn observe(&mut self, now: impl Into<Nanos>) -> u64 {
        self.now_latest.observe(now)
    }

    /// The invariants of the module docs that hold in O(1) (the weight sum
    /// is checked against the model in `tests/fifo_model.rs`).
    fn assert_invariants(&self) {
        debug_assert!(self.inputs.len() <= self.config.max_waiting);
        debug_assert!(self.waiting_weight <= self.config.max_waiting_weight);
        debug_assert!(!self.inputs.is_empty() || self.waiting_weight == 0);
        debug_assert!(match (self.inputs.front(), self.inputs.back()) {
            (Some(front), Some(back)) => front.arrival_ns <= back.arrival_ns,
            _ => true,
        });
    }
}
