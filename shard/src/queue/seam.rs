//! The queueing seam: what a shard's core needs from the structure that
//! holds its waiting inputs, so that one core and one loop serve both
//! disciplines:
//!
//! - per-key batching, [`Lanes`]: one lane per key, one batch per key in
//!   flight, rank order (G1–G3, G5, G7, G8);
//! - unkeyed batching, [`Fifo`]: one stream in admission order, as many
//!   batches out as there are slots (docs/guarantees.md#unkeyed-batching).
//!
//! Both are pure (no clock, no I/O, no `async`): `now` is passed in and
//! never goes backwards. The core ([`ShardCore`](crate::core::shard_core::ShardCore))
//! adds the slots, the replies and the counts; the discipline only decides
//! what waits, what is ready and what a batch holds.

use std::hash::Hash;
use std::time::Duration;

use crate::queue::fifo::{Fifo, FifoItems};
use crate::queue::lanes::{BatchItems, LaneId, Lanes};
use crate::queue::taken::Taken;
use crate::value::config::QueueConfig;
use crate::value::nanos::Nanos;
use crate::value::refused::Refused;

/// A queueing discipline for items `T` (docs/guarantees.md#inside-a-shard):
/// admit, take, complete, close, next deadline, and the gauges. Implemented
/// by [`Lanes`] and [`Fifo`]; the shard is generic over it.
///
/// ```
/// use std::time::Duration;
/// use ferry_shard::parts::{Fifo, Queue};
/// use ferry_shard::QueueConfig;
///
/// fn one_batch<Q: Queue<u32>>(queue: &mut Q, key: Q::Key) -> Vec<u32> {
///     let now = Duration::ZERO;
///     queue.admit(0, key.clone(), &mut Some(1), 0, 0, 1, now).unwrap();
///     queue.admit(0, key, &mut Some(2), 0, 0, 1, now).unwrap();
///     let (ticket, _key, items) = queue.take_with(now, |items| items.collect::<Vec<_>>()).unwrap();
///     queue.complete(ticket, now);
///     items
/// }
/// assert_eq!(one_batch(&mut Fifo::new(QueueConfig::default()), ()), vec![1, 2]);
/// ```
pub trait Queue<T> {
    /// What a batch is for: the key of per-key batching, `()` for unkeyed.
    type Key: Clone;
    /// Names a batch taken, to hand back to [`complete`](Queue::complete).
    type Ticket: Copy + std::fmt::Debug;
    /// The items of a batch as they leave the queue.
    type Items<'a>: ExactSizeIterator<Item = T> + Taken
    where
        Self: 'a,
        T: 'a;

    /// A structure with `config`'s bounds.
    fn with_config(config: QueueConfig) -> Self;

    /// Admits the item in `item` (for `key`, whose hash is `hash`, with
    /// `rank`, `boundary` value and `weight`), arriving at `now`, taking it out of `item`;
    /// refuses it past a bound or after close, leaving it in `item`. The
    /// item is taken only after the key's lane is found, so if the key's
    /// `Eq` or `Clone` panics, it is still in `item`.
    #[allow(clippy::too_many_arguments)]
    fn admit(
        &mut self,
        hash: u64,
        key: Self::Key,
        item: &mut Option<T>,
        rank: i64,
        boundary: i64,
        weight: u64,
        now: impl Into<Nanos>,
    ) -> Result<(), Refused>;

    /// Takes the next batch ready at `now`, lending its items to `consume`
    /// (which must not panic).
    fn take_with<R>(
        &mut self,
        now: impl Into<Nanos>,
        consume: impl FnOnce(Self::Items<'_>) -> R,
    ) -> Option<(Self::Ticket, Self::Key, R)>;

    /// The weight of the batch [`take_with`](Queue::take_with) would take
    /// at `now`, if one is ready; takes nothing.
    fn next_weight(&mut self, now: impl Into<Nanos>) -> Option<u64>;

    /// The batch named by `ticket` finished (whatever its outcome).
    fn complete(&mut self, ticket: Self::Ticket, now: impl Into<Nanos>);

    /// Admits nothing more; everything waiting becomes ready (G9).
    fn close(&mut self);

    /// Hands to `out` every item still waiting `max_queue_time` after its
    /// arrival, by `now`; returns how many. Never an item already taken.
    fn expire_with(&mut self, now: impl Into<Nanos>, out: impl FnMut(T)) -> usize;

    /// Hands to `out` the items `gone` marks among the first `scan` waiting
    /// for the key of `hash` (for unkeyed batching: in the queue); returns
    /// how many.
    fn withdraw_with(
        &mut self,
        hash: u64,
        scan: usize,
        gone: impl FnMut(&T) -> bool,
        out: impl FnMut(T),
    ) -> usize;

    /// Closes, and hands out everything waiting (never sent).
    fn drain_waiting(&mut self) -> Vec<T>;

    /// No later than when something waiting becomes due or expires, if
    /// anything can.
    fn next_deadline(&mut self) -> Option<Duration>;

    /// No later than when the oldest waiting item expires, if one can.
    fn next_expiry(&mut self) -> Option<Duration>;

    /// Whether a batch is ready to be taken (deadlines aside).
    fn has_ready(&self) -> bool;

    /// The bounds kept.
    fn config(&self) -> &QueueConfig;

    /// Lanes alive (0 for a discipline without lanes).
    fn lanes(&self) -> usize;

    /// Inputs admitted and not yet taken.
    fn waiting(&self) -> usize;

    /// Their total weight.
    fn waiting_weight(&self) -> u64;

    /// Nothing waits and nothing taken is outstanding in the structure
    /// itself (for `Lanes`: no lane is alive).
    fn is_drained(&self) -> bool;

    /// Waiting inputs of the longest lane, as last seen; 0 for a
    /// discipline without lanes (the `longest_lane` figure).
    fn longest_lane(&self) -> usize {
        0
    }

    /// Inputs admitted late under an event-time hold, never held; 0 for a
    /// discipline without holds (the `admitted_late` figure).
    fn admitted_late(&self) -> u64 {
        0
    }
}

impl<K, T> Queue<T> for Lanes<K, T>
where
    K: Hash + Eq + Clone,
{
    type Key = K;
    type Ticket = LaneId;
    type Items<'a>
        = BatchItems<'a, T>
    where
        Self: 'a,
        T: 'a;

    fn with_config(config: QueueConfig) -> Self {
        Lanes::new(config)
    }

    // Inlined into the core's admission, as before boundaries were passed:
    // a call of this many arguments per input shows in the count.
    #[inline]
    fn admit(
        &mut self,
        hash: u64,
        key: K,
        item: &mut Option<T>,
        rank: i64,
        boundary: i64,
        weight: u64,
        now: impl Into<Nanos>,
    ) -> Result<(), Refused> {
        self.admit_from(hash, key, item, rank, boundary, weight, now)
    }

    fn take_with<R>(
        &mut self,
        now: impl Into<Nanos>,
        consume: impl FnOnce(BatchItems<'_, T>) -> R,
    ) -> Option<(LaneId, K, R)> {
        Lanes::take_with(self, now, consume)
    }

    fn next_weight(&mut self, now: impl Into<Nanos>) -> Option<u64> {
        Lanes::next_weight(self, now)
    }

    fn complete(&mut self, lane: LaneId, now: impl Into<Nanos>) {
        Lanes::complete(self, lane, now);
    }

    fn close(&mut self) {
        Lanes::close(self);
    }

    fn expire_with(&mut self, now: impl Into<Nanos>, out: impl FnMut(T)) -> usize {
        Lanes::expire_with(self, now, out)
    }

    fn withdraw_with(
        &mut self,
        hash: u64,
        scan: usize,
        gone: impl FnMut(&T) -> bool,
        out: impl FnMut(T),
    ) -> usize {
        Lanes::withdraw_with(self, hash, scan, gone, out)
    }

    fn drain_waiting(&mut self) -> Vec<T> {
        Lanes::drain_waiting(self)
    }

    fn next_deadline(&mut self) -> Option<Duration> {
        Lanes::next_deadline(self)
    }

    fn next_expiry(&mut self) -> Option<Duration> {
        Lanes::next_expiry(self)
    }

    fn has_ready(&self) -> bool {
        Lanes::has_ready(self)
    }

    fn config(&self) -> &QueueConfig {
        Lanes::config(self)
    }

    fn lanes(&self) -> usize {
        Lanes::lanes(self)
    }

    fn waiting(&self) -> usize {
        Lanes::waiting(self)
    }

    fn waiting_weight(&self) -> u64 {
        Lanes::waiting_weight(self)
    }

    fn is_drained(&self) -> bool {
        Lanes::lanes(self) == 0
    }

    fn longest_lane(&self) -> usize {
        Lanes::longest_lane(self)
    }

    fn admitted_late(&self) -> u64 {
        Lanes::admitted_late(self)
    }
}

/// A batch of unkeyed batching needs no ticket: nothing is busy.
impl<T> Queue<T> for Fifo<T> {
    type Key = ();
    type Ticket = ();
    type Items<'a>
        = FifoItems<'a, T>
    where
        Self: 'a,
        T: 'a;

    fn with_config(config: QueueConfig) -> Self {
        Fifo::new(config)
    }

    fn admit(
        &mut self,
        _hash: u64,
        _key: (),
        item: &mut Option<T>,
        _rank: i64,
        _boundary: i64,
        weight: u64,
        now: impl Into<Nanos>,
    ) -> Result<(), Refused> {
        let taken = item.take().expect("an item to admit");
        Fifo::admit(self, taken, weight, now).map_err(|refusal| {
            *item = Some(refusal.item);
            refusal.reason
        })
    }

    fn take_with<R>(
        &mut self,
        now: impl Into<Nanos>,
        consume: impl FnOnce(FifoItems<'_, T>) -> R,
    ) -> Option<((), (), R)> {
        Fifo::take_with(self, now, consume).map(|taken| ((), (), taken))
    }

    fn next_weight(&mut self, now: impl Into<Nanos>) -> Option<u64> {
        Fifo::next_weight(self, now)
    }

    fn complete(&mut self, _ticket: (), _now: impl Into<Nanos>) {}

    fn close(&mut self) {
        Fifo::close(self);
    }

    fn expire_with(&mut self, now: impl Into<Nanos>, out: impl FnMut(T)) -> usize {
        Fifo::expire_with(self, now, out)
    }

    fn withdraw_with(
        &mut self,
        _hash: u64,
        scan: usize,
        gone: impl FnMut(&T) -> bool,
        out: impl FnMut(T),
    ) -> usize {
        Fifo::withdraw_with(self, scan, gone, out)
    }

    fn drain_waiting(&mut self) -> Vec<T> {
        Fifo::drain_waiting(self)
    }

    fn next_deadline(&mut self) -> Option<Duration> {
        Fifo::next_deadline(self)
    }

    fn next_expiry(&mut self) -> Option<Duration> {
        Fifo::next_expiry(self)
    }

    fn has_ready(&self) -> bool {
        Fifo::has_ready(self)
    }

    fn config(&self) -> &QueueConfig {
        Fifo::config(self)
    }

    fn lanes(&self) -> usize {
        0
    }

    fn waiting(&self) -> usize {
        Fifo::waiting(self)
    }

    fn waiting_weight(&self) -> u64 {
        Fifo::waiting_weight(self)
    }

    fn is_drained(&self) -> bool {
        Fifo::waiting(self) == 0
    }
}
