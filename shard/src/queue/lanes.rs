//! The lane structure of one shard: pure, no clock, no I/O, no `async`.
//!
//! A *lane* holds one key's waiting inputs in (rank, admission) order. It is
//! *waiting* (partial and not yet due), *ready* (full, due, or the shard is
//! closing) or *busy* (its batch is in flight). Time is passed in as `now`,
//! [`Nanos`] (or a `Duration`) since any origin the caller keeps fixed,
//! never going backwards from one call to the next (debug builds assert
//! it), so every method is a plain step that a test can drive one at a time
//! against a model.
//!
//! What this structure guarantees (the numbers are those of
//! docs/guarantees.md):
//! - G1: [`Lanes::take`] marks the lane busy in the same call, and a busy lane
//!   is never taken again before [`Lanes::complete`].
//! - G2: inputs are kept in ascending rank, ties in admission order, and a
//!   batch is a prefix of its lane; a late input goes in the next batch at its
//!   rank among what is waiting then.
//! - G3: a batch holds the inputs of one lane, and a lane holds one key.
//! - G5: a lane exists only while it has waiting inputs or is busy; its place
//!   (its index in storage) is reused afterwards.
//! - G6: the shard's waiting count and weight never pass their bounds.
//! - G7: ready lanes are served first come, first served; a lane completed
//!   with inputs left joins the back of the ready line.
//! - G8: a partial lane is due `max_batch_delay` after its oldest input *by
//!   arrival*, whatever that input's rank.
//!
//! Deadlines live in a FIFO, not a heap: with one `max_batch_delay`, the due
//! time of each input (`arrival + delay`) grows with admission order. An entry
//! is pushed per admitted input (only when the delay is positive) and names
//! that input by its admission number. It is checked lazily and fires its lane
//! only if the lane is waiting and the entry's input is the lane's oldest
//! waiting input. So lanes become ready in the order their oldest inputs were
//! admitted, whatever inputs of theirs were already sent (G7, G8).
//!
//! Invariant: while a lane waits, the entry of its oldest waiting input is
//! still queued (with a hold, unless it fell due while the lane was held:
//! the lane is then due, and its hold entry makes it ready). An entry leaves the queue only when it is due (and then its
//! lane is made ready if it waits, or is found due when its batch completes)
//! or when its input can no longer be waiting. So no lane misses its deadline.
//! Entries live at most one delay past the last [`Lanes::take`].
//!
//! Two ways out besides a batch, both proportional to what leaves:
//! - *Expiry* (`max_queue_time`): every admitted input also gets an entry in
//!   a second FIFO, due at `arrival + max_queue_time` (monotone for the same
//!   reason). [`Lanes::expire_with`] pops the due entries and hands out each
//!   entry's input that still waits; one already taken is simply skipped.
//!   In an arrival-ordered lane the expiring input is the lane's front.
//! - *Withdrawal* ([`Lanes::withdraw_with`]): the inputs a predicate marks
//!   (their callers are gone) are removed from the front part of their key's
//!   lane, where the oldest, first to be given up on, wait.
//!
//! Holds (an event-time order, `QueueConfig::hold`): an input's rank is its
//! event time, and the input is held until that time plus the lateness
//! (`Hold::ends_ns`, monotone in the rank). A lane is not ready while its
//! front input is held, and a batch ends before the first input still held;
//! closing ends every hold. Hold ends do not grow with admission order (the
//! inputs come out of order), so they live in a heap with one entry per
//! held lane, named by its front when it was pushed, not per input: a lane's
//! front changes only when an earlier input goes in front of it (a new
//! entry), when a batch leaves (a new entry at `complete`) or when expiry
//! or withdrawal removes it (the old entry ends earlier, and is renewed
//! when it fires). An input whose hold already ended when it arrives is
//! late: refused `Late` with `refuse_late`, otherwise not held. Without a
//! hold the heap stays empty, and the default path looks at its top only.
//!
//! Boundaries (`QueueConfig::boundaries`): each input carries a boundary
//! value, and a batch ends where the next input's value differs from its
//! front's, so no batch mixes two of them.
//!
//! A lane left empty that way is removed at once (G5). If it was in the
//! ready line, its entry stays there, stale: the line names lanes by
//! [`LaneId`], so `take` knows the entry of a lane that is gone and skips
//! it (finding it in the line to take it out would cost a scan), and
//! `has_ready` does not count it. A new input of that key makes a new lane,
//! which waits its turn like any other.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use crate::queue::items::{Entry, Items};
use crate::queue::lane_index::{Found, LaneIndex};
use crate::queue::longest::Longest;
use crate::value::config::QueueConfig;
use crate::value::hold::Hold;
use crate::value::key_hash::key_hash;
use crate::value::nanos::{Latest, Nanos};
use crate::value::refused::{Refusal, Refused};

/// Names one lifetime of one lane: the handle [`Lanes::complete`] takes.
///
/// A lane lives at a *place*, its index in the structure's storage, from
/// its creation to its removal. A place is reused once its lane is removed;
/// the epoch tells the lifetimes apart, so a stale id can never complete
/// somebody else's batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaneId {
    place: u32,
    epoch: u32,
}

/// Where a lane stands (docs/guarantees.md#terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneState {
    /// Partial and not yet due: it waits for more inputs or its deadline.
    Waiting,
    /// Full, due, or the shard is closing: in the ready line for a slot.
    Ready,
    /// Its batch is in flight. New inputs still join it; it is not taken
    /// again until that batch completes.
    Busy,
}

/// One key's batch, taken from the front of its lane.
#[derive(Debug)]
pub struct Batch<K, T> {
    /// The lane it came from: hand it back to [`Lanes::complete`].
    pub lane: LaneId,
    /// The key every input of the batch belongs to (G3).
    pub key: K,
    /// At least one input, at most `max_batch_size`, in (rank, admission)
    /// order.
    pub items: Vec<T>,
    /// The batch's total weight: at most `max_batch_weight` unless it is a
    /// single input.
    pub weight: u64,
}

/// The items of a batch as [`Lanes::take_with`] hands them out, in (rank,
/// admission) order.
pub type BatchItems<'a, T> = Items<'a, Waiting<T>, T>;

/// An admitted input waiting in its lane.
#[derive(Debug)]
pub struct Waiting<T> {
    rank: i64,
    /// The boundary value given at admission: with `boundaries`, a batch
    /// never holds two of them.
    boundary: i64,
    /// Admission number, unique in the structure: names the input in its
    /// deadline entry.
    seq: u64,
    arrival_ns: u64,
    weight: u64,
    item: T,
}

impl<T> Entry<T> for Waiting<T> {
    fn arrival_ns(&self) -> u64 {
        self.arrival_ns
    }

    fn into_item(self) -> T {
        self.item
    }
}

#[derive(Debug)]
struct Lane<K, T> {
    /// `None` while the place is free.
    key: Option<K>,
    /// The key's hash, as given at admission (the index re-hashes by it).
    hash: u64,
    epoch: u32,
    state: LaneState,
    inputs: VecDeque<Waiting<T>>,
    /// Total weight of `inputs`.
    waiting_weight: u64,
    /// Arrival and admission number of the oldest waiting input (by arrival,
    /// ties by admission; since arrivals grow with admission, that is the
    /// smallest admission number); meaningless while `inputs` is empty.
    oldest_arrival_ns: u64,
    oldest_seq: u64,
    /// Every input was appended at the back, so `inputs` is also in arrival
    /// order and the oldest is the front. Always true with `Order::arrival`.
    arrival_sorted: bool,
}

impl<K, T> Lane<K, T> {
    fn free() -> Self {
        Self {
            key: None,
            hash: 0,
            epoch: 0,
            state: LaneState::Waiting,
            inputs: VecDeque::new(),
            waiting_weight: 0,
            oldest_arrival_ns: 0,
            oldest_seq: 0,
            arrival_sorted: true,
        }
    }

    fn id(&self, place: u32) -> LaneId {
        LaneId {
            place,
            epoch: self.epoch,
        }
    }

    fn is_full(&self, config: &QueueConfig) -> bool {
        self.inputs.len() >= config.max_batch_size || self.waiting_weight >= config.max_batch_weight
    }

    /// Puts `waiting` after every input of rank <= its own, before the
    /// back: out of arrival order. Out of line and marked cold, as inputs
    /// ranked by arrival (the default) never come here; an input that does
    /// pays for one call.
    #[cold]
    #[inline(never)]
    fn insert_by_rank(&mut self, waiting: Waiting<T>) {
        let at = self.inputs.partition_point(|w| w.rank <= waiting.rank);
        self.inputs.insert(at, waiting);
        self.arrival_sorted = false;
    }

    /// Whether the front input is still held at `now_ns` (never without a
    /// hold, and never once closing: closing ends every hold).
    #[inline]
    fn front_held(&self, hold: Option<Hold>, now_ns: u64) -> bool {
        match (hold, self.inputs.front()) {
            (Some(hold), Some(front)) => hold.ends_ns(front.rank) > now_ns,
            _ => false,
        }
    }

    /// Like `batch_extent`, and the batch also ends before the first input
    /// still held at `now_ns` (with `hold`) and where the boundary value
    /// changes (with `boundaries`). At least the front input, held or not:
    /// the caller takes only a lane whose front is free (or when closing,
    /// with no hold).
    #[cold]
    #[inline(never)]
    fn batch_extent_within(
        &self,
        config: &QueueConfig,
        hold: Option<Hold>,
        now_ns: u64,
    ) -> (usize, u64) {
        let most = config.max_batch_size.min(self.inputs.len());
        let Some(first) = self.inputs.front() else {
            return (0, 0);
        };
        let (mut count, mut weight) = (1, first.weight);
        while count < most {
            let next = &self.inputs[count];
            let crosses = config.boundaries && next.boundary != first.boundary;
            let held = hold.is_some_and(|hold| hold.ends_ns(next.rank) > now_ns);
            if crosses || held || weight + next.weight > config.max_batch_weight {
                break;
            }
            count += 1;
            weight += next.weight;
        }
        (count, weight)
    }

    /// How many inputs from the front make the next batch, and their
    /// weight: up to `max_batch_size`, and within `max_batch_weight` unless
    /// the first alone weighs more (it then goes alone).
    #[inline]
    fn batch_extent(&self, config: &QueueConfig) -> (usize, u64) {
        let most = config.max_batch_size.min(self.inputs.len());
        let Some(first) = self.inputs.front() else {
            return (0, 0);
        };
        let (mut count, mut weight) = (1, first.weight);
        while count < most {
            let next = self.inputs[count].weight;
            if weight + next > config.max_batch_weight {
                break;
            }
            count += 1;
            weight += next;
        }
        (count, weight)
    }

    fn recompute_oldest(&mut self) {
        let oldest = if self.arrival_sorted {
            self.inputs.front()
        } else {
            self.inputs.iter().min_by_key(|w| w.seq)
        };
        if let Some(oldest) = oldest {
            self.oldest_arrival_ns = oldest.arrival_ns;
            self.oldest_seq = oldest.seq;
        }
    }

    /// Whether `entry` names this lane, waiting, and its current front: the
    /// only hold entry that may make it ready. Any other is stale.
    fn is_hold_of_front(&self, entry: &HoldEntry) -> bool {
        self.epoch == entry.epoch
            && self.key.is_some()
            && self.state == LaneState::Waiting
            && self
                .inputs
                .front()
                .is_some_and(|front| front.seq == entry.seq)
    }

    /// Whether `deadline` is the entry of this lane's oldest waiting input.
    fn is_deadline_of_oldest(&self, deadline: &Deadline) -> bool {
        self.epoch == deadline.lane.epoch
            && !self.inputs.is_empty()
            && self.oldest_seq == deadline.seq
    }

    /// Whether `deadline`'s input has surely left this lane (the lane is
    /// gone, empty, or its oldest waiting input was admitted later). An entry
    /// that is not stale may still be needed, even while the lane is busy or
    /// ready: after its batch, that input may be the oldest of a waiting lane.
    fn is_stale(&self, deadline: &Deadline) -> bool {
        self.epoch != deadline.lane.epoch
            || self.inputs.is_empty()
            || self.oldest_seq > deadline.seq
    }
}

/// A held lane's entry: when its front input's hold ends, that input (by
/// admission number) and the lane (by place and epoch). Ordered by the end,
/// then the input's admission: the admission numbers are unique, so the
/// place never decides the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct HoldEntry {
    ends_ns: u64,
    seq: u64,
    place: u32,
    epoch: u32,
}

#[derive(Clone, Copy, Debug)]
struct Deadline {
    due_ns: u64,
    lane: LaneId,
    /// Admission number of the input this entry was pushed for.
    seq: u64,
}

/// A removed lane's buffer is kept with its place (for the next lane there)
/// only up to this many inputs. A key's lane lands in whatever place is free
/// each time it comes back, so keeping more would let retained memory grow
/// towards live lanes × the largest burst any key ever had, not follow the
/// inputs waiting now (G5). Measured by the soak run in docs/benchmarks.md.
const LANE_CAPACITY_KEPT_MAX: usize = 8;

/// Larger buffers of removed lanes kept for lanes that outgrow their
/// place's, at most: a hot key's lane is removed whenever its batch
/// completes with nothing behind it, and made again, small, at its next
/// input; growing it back one doubling at a time cost a reallocation and
/// a copy per doubling. A few cover the hot keys; the rest are freed.
const BUFFERS_KEPT_MAX: usize = 16;

/// The most room a kept buffer may have, in inputs: with
/// `BUFFERS_KEPT_MAX`, what the kept buffers can hold in all is bounded by
/// a constant, whatever the keys (G5).
const BUFFER_KEPT_ROOM_MAX: usize = 512;

/// Emptied lane buffers kept apart from the places (see `BUFFERS_KEPT_MAX`).
#[derive(Debug)]
struct BuffersKept<T> {
    /// Larger than a place keeps: for lanes that outgrow theirs.
    large: Vec<VecDeque<Waiting<T>>>,
    /// A place's own, left by lanes that moved into a large one: for the
    /// places whose lane leaves with its large buffer.
    small: Vec<VecDeque<Waiting<T>>>,
}

impl<T> BuffersKept<T> {
    fn new() -> Self {
        Self {
            large: Vec::new(),
            small: Vec::new(),
        }
    }

    /// A lane's `inputs`, full, is about to grow: it moves into the
    /// largest kept buffer, if that has more room, instead of growing where
    /// it is, and its own buffer is kept for a place. Out of line: a lane
    /// outgrows its buffer once per doubling at most.
    #[cold]
    #[inline(never)]
    fn outgrow(&mut self, inputs: &mut VecDeque<Waiting<T>>) {
        let Some((at, _)) = self
            .large
            .iter()
            .enumerate()
            .max_by_key(|(_, buffer)| buffer.capacity())
            .filter(|(_, buffer)| buffer.capacity() > inputs.len())
        else {
            return;
        };
        let mut buffer = self.large.swap_remove(at);
        debug_assert!(buffer.is_empty());
        buffer.extend(inputs.drain(..));
        let own = std::mem::replace(inputs, buffer);
        if own.capacity() <= LANE_CAPACITY_KEPT_MAX && self.small.len() < BUFFERS_KEPT_MAX {
            self.small.push(own);
        }
    }

    /// The emptied `inputs` of a removed lane, larger than a place keeps,
    /// is kept if there is room (and freed otherwise); the place gets a
    /// small buffer back if one is kept.
    #[cold]
    #[inline(never)]
    fn keep(&mut self, inputs: &mut VecDeque<Waiting<T>>) {
        debug_assert!(inputs.is_empty() && inputs.capacity() > LANE_CAPACITY_KEPT_MAX);
        let buffer = std::mem::replace(inputs, self.small.pop().unwrap_or_default());
        if self.large.len() < BUFFERS_KEPT_MAX && buffer.capacity() <= BUFFER_KEPT_ROOM_MAX {
            self.large.push(buffer);
        }
    }
}

/// All lanes of one shard. `K` is the key; `T` is whatever the caller keeps
/// per input (the engine keeps the input and its reply handle).
///
/// ```
/// use ferry_shard::parts::Lanes;
/// use ferry_shard::{QueueConfig, Refused};
/// use std::time::Duration;
///
/// let mut lanes = Lanes::new(QueueConfig { max_batch_size: 2, ..QueueConfig::default() });
/// let now = Duration::ZERO;
/// lanes.admit("a", 1, 0, 1, now).unwrap();
/// lanes.admit("a", 2, 0, 1, now).unwrap();
/// lanes.admit("a", 3, 0, 1, now).unwrap();
///
/// // One batch per key at a time, from the front of the lane.
/// let batch = lanes.take(now).unwrap();
/// assert_eq!((batch.key, batch.items.as_slice()), ("a", &[1, 2][..]));
/// assert!(lanes.take(now).is_none(), "the lane is busy");
///
/// // Completing it puts the rest back in line.
/// lanes.complete(batch.lane, now);
/// assert_eq!(lanes.take(now).unwrap().items, vec![3]);
///
/// lanes.close();
/// assert_eq!(lanes.admit("b", 4, 0, 1, now).unwrap_err().reason, Refused::Closed);
/// ```
#[derive(Debug)]
pub struct Lanes<K, T> {
    config: QueueConfig,
    delay_ns: u64,
    /// Lane storage: a lane is at one place (an index here) for its whole
    /// life; free places keep their buffers for the next lane.
    places: Vec<Lane<K, T>>,
    /// Places whose lane was removed, to be reused first.
    places_free: Vec<u32>,
    /// Emptied buffers kept for lanes that outgrow theirs (at most
    /// `BUFFERS_KEPT_MAX` large ones, each of at most `BUFFER_KEPT_ROOM_MAX`
    /// inputs, and as many small ones).
    buffers_kept: BuffersKept<T>,
    /// Place of each live lane, found by the key's hash.
    index: LaneIndex,
    /// The ready lanes, first come first served (G7): every lane in state
    /// `Ready`, plus the stale entries of lanes removed while in line.
    ready: VecDeque<LaneId>,
    /// Stale entries in the ready line (lanes emptied by expiry or
    /// withdrawal and removed), skipped when `take` reaches them.
    ready_stale: usize,
    deadlines: VecDeque<Deadline>,
    /// One entry per admitted input while `max_queue_time` is set, due when
    /// it expires (module docs).
    expiries: VecDeque<Deadline>,
    queue_time_ns: Option<u64>,
    /// The lateness hold of an event-time order, if one is set.
    hold: Option<Hold>,
    /// With a hold: an entry per lane whose front input is held, due when
    /// that hold ends, earliest first (module docs, "Holds").
    holds: BinaryHeap<Reverse<HoldEntry>>,
    /// With a hold: inputs admitted after their hold had ended (late, not
    /// refused), so never held.
    admitted_late: u64,
    /// Neither a hold nor boundaries: a batch is bounded by size and weight
    /// alone (one test on the take's path).
    extent_plain: bool,
    /// Admission number of the next admitted input.
    seq_next: u64,
    lanes_live: usize,
    lanes_busy: usize,
    waiting: usize,
    waiting_weight: u64,
    closed: bool,
    /// The latest `now` given to any method (debug builds check that time
    /// never goes backwards).
    now_latest: Latest,
    /// The `longest_lane` gauge (see `longest.rs`).
    longest: Longest,
}

impl<K, T> Lanes<K, T>
where
    K: Hash + Eq + Clone,
{
    /// An empty, open structure.
    ///
    /// # Panics
    /// If `config` breaks a rule of [`QueueConfig::validate`]; builders
    /// validate first and return the error instead.
    pub fn new(config: QueueConfig) -> Self {
        if let Err(err) = config.validate() {
            panic!("{err}");
        }
        Self {
            delay_ns: config.max_batch_delay_ns(),
            queue_time_ns: config.max_queue_time_ns(),
            hold: config.hold,
            holds: BinaryHeap::new(),
            admitted_late: 0,
            extent_plain: config.hold.is_none() && !config.boundaries,
            config,
            places: Vec::new(),
            places_free: Vec::new(),
            buffers_kept: BuffersKept::new(),
            index: LaneIndex::default(),
            ready: VecDeque::new(),
            ready_stale: 0,
            deadlines: VecDeque::new(),
            expiries: VecDeque::new(),

            seq_next: 0,
            lanes_live: 0,
            lanes_busy: 0,
            waiting: 0,
            waiting_weight: 0,
            closed: false,
            now_latest: Latest::default(),
            longest: Longest::default(),
        }
    }

    /// `now` in nanoseconds, after checking that it is not earlier than the
    /// latest `now` seen, and recording it (both in debug builds only).
    /// Every method that takes `now` calls this first: due times are
    /// computed from arrivals, and an arrival stamped later than a take's
    /// `now` would make the deadline FIFO's order (module docs) a lie.
    fn observe(&mut self, now: impl Into<Nanos>) -> u64 {
        self.now_latest.observe(now)
    }

    /// The bounds this structure keeps.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Admits `item` for `key` with its precomputed `rank` and `weight`,
    /// arriving at `now`; hashes the key with [`key_hash`].
    pub fn admit(
        &mut self,
        key: K,
        item: T,
        rank: i64,
        weight: u64,
        now: impl Into<Nanos>,
    ) -> Result<(), Refusal<T>> {
        let hash = key_hash(&key);
        self.admit_hashed(hash, key, item, rank, weight, now)
    }

    /// Like [`admit`](Self::admit), with the input's `boundary` value: with
    /// `boundaries` set, a batch ends where that value changes, so no batch
    /// holds two of them.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Lanes;
    /// use ferry_shard::QueueConfig;
    ///
    /// let mut lanes = Lanes::new(QueueConfig { boundaries: true, ..QueueConfig::default() });
    /// for (item, bucket) in [('a', 1), ('b', 1), ('c', 2)] {
    ///     lanes.admit_bounded("k", item, 0, bucket, 1, Duration::ZERO).unwrap();
    /// }
    /// let first = lanes.take(Duration::ZERO).unwrap();
    /// assert_eq!(first.items, vec!['a', 'b'], "the bucket changes after b");
    /// lanes.complete(first.lane, Duration::ZERO);
    /// assert_eq!(lanes.take(Duration::ZERO).unwrap().items, vec!['c']);
    /// ```
    pub fn admit_bounded(
        &mut self,
        key: K,
        item: T,
        rank: i64,
        boundary: i64,
        weight: u64,
        now: impl Into<Nanos>,
    ) -> Result<(), Refusal<T>> {
        let mut slot = Some(item);
        self.admit_from(key_hash(&key), key, &mut slot, rank, boundary, weight, now)
            .map_err(|reason| Refusal {
                item: slot.take().expect("a refused item is left in place"),
                reason,
            })
    }

    /// Like [`admit`](Self::admit), with the key's hash already computed
    /// (the engine hashes once, on the caller's thread). `hash` must be the
    /// same for equal keys.
    ///
    /// Refuses, handing `item` back: `Closed` after [`close`](Self::close);
    /// `TooHeavy` if `weight > max_batch_weight`; `Full` if admitting would
    /// pass `max_waiting` or `max_waiting_weight`; `KeyFull` if the key
    /// already has `max_waiting_per_key` inputs waiting.
    pub fn admit_hashed(
        &mut self,
        hash: u64,
        key: K,
        item: T,
        rank: i64,
        weight: u64,
        now: impl Into<Nanos>,
    ) -> Result<(), Refusal<T>> {
        let mut slot = Some(item);
        self.admit_from(hash, key, &mut slot, rank, 0, weight, now)
            .map_err(|reason| Refusal {
                item: slot.take().expect("a refused item is left in place"),
                reason,
            })
    }

    /// Like [`admit_hashed`](Self::admit_hashed), taking the item out of
    /// `item` only once its lane is found. Refused, the item stays in
    /// `item`; and if the key's `Eq` or `Clone` panics while its lane is
    /// looked up, the item is still there for the caller to hand back.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Lanes;
    /// use ferry_shard::{key_hash, QueueConfig, Refused};
    ///
    /// let mut lanes = Lanes::new(QueueConfig { max_waiting: 1, ..QueueConfig::default() });
    /// let mut first = Some('a');
    /// lanes.admit_from(key_hash(&7), 7, &mut first, 0, 0, 1, Duration::ZERO).unwrap();
    /// assert_eq!(first, None, "taken");
    /// let mut second = Some('b');
    /// let refused = lanes.admit_from(key_hash(&7), 7, &mut second, 0, 0, 1, Duration::ZERO);
    /// assert_eq!((refused, second), (Err(Refused::Full), Some('b')));
    /// ```
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn admit_from(
        &mut self,
        hash: u64,
        key: K,
        item: &mut Option<T>,
        rank: i64,
        boundary: i64,
        weight: u64,
        now: impl Into<Nanos>,
    ) -> Result<(), Refused> {
        let now_ns = self.observe(now);
        if let Some(reason) = self.refusal(weight, rank, now_ns) {
            return Err(reason);
        }
        // Lanes that fell due go ahead of one this input may make full (G7).
        self.promote_due(now_ns);
        let place = self.lane_for(hash, key);
        let delay_ns = self.delay_ns;
        let lane = &mut self.places[place as usize];
        // A lane just made has no input, and the bound is at least 1: a
        // refused key always has a lane with inputs, none is left empty.
        if lane.inputs.len() >= self.config.max_waiting_per_key {
            return Err(Refused::KeyFull);
        }
        let item = item.take().expect("an item to admit");
        let seq = self.seq_next;
        self.seq_next += 1;

        // G2: after every input of rank <= this one, so ties keep admission
        // order. The common case (arrival order) appends at the back.
        let waiting = Waiting {
            rank,
            boundary,
            seq,
            arrival_ns: now_ns,
            weight,
            item,
        };
        if lane.inputs.len() == lane.inputs.capacity() {
            self.buffers_kept.outgrow(&mut lane.inputs);
        }
        match lane.inputs.back() {
            Some(last) if last.rank > rank => lane.insert_by_rank(waiting),
            _ => lane.inputs.push_back(waiting),
        }
        self.longest.grew(place, lane.inputs.len());
        if lane.inputs.len() == 1 {
            lane.oldest_arrival_ns = now_ns;
            lane.oldest_seq = seq;
        }
        lane.waiting_weight += weight;
        self.waiting += 1;
        self.waiting_weight += weight;
        let id = lane.id(place);
        if self.hold.is_some() {
            self.admitted_held(place, seq, rank, now_ns);
        } else if lane.state == LaneState::Waiting && (delay_ns == 0 || lane.is_full(&self.config))
        {
            lane.state = LaneState::Ready;
            self.ready.push_back(id);
        }
        self.queue_deadlines(id, seq, now_ns);
        debug_assert!(self.waiting <= self.config.max_waiting);
        debug_assert!(self.waiting_weight <= self.config.max_waiting_weight);
        Ok(())
    }

    /// The entries of the input `seq` of lane `id`, arrived at `now_ns`, in
    /// the deadline FIFO (with a delay) and the expiry FIFO (with a queue
    /// time).
    ///
    /// Every input gets a deadline entry while there is a delay: whatever
    /// the lane's state now, this input may later be the oldest of a waiting
    /// lane (left over after a take), and that entry must exist.
    fn queue_deadlines(&mut self, lane: LaneId, seq: u64, now_ns: u64) {
        if self.delay_ns > 0 {
            self.deadlines.push_back(Deadline {
                due_ns: now_ns.saturating_add(self.delay_ns),
                lane,
                seq,
            });
        }
        if let Some(queue_time_ns) = self.queue_time_ns {
            self.expiries.push_back(Deadline {
                due_ns: now_ns.saturating_add(queue_time_ns),
                lane,
                seq,
            });
        }
    }

    fn refusal(&self, weight: u64, rank: i64, now_ns: u64) -> Option<Refused> {
        if self.closed {
            Some(Refused::Closed)
        } else if self.config.is_too_heavy(weight) {
            Some(Refused::TooHeavy)
        } else if self
            .hold
            .is_some_and(|hold| hold.refuse_late && hold.ends_ns(rank) <= now_ns)
        {
            Some(Refused::Late)
        } else if self.waiting >= self.config.max_waiting
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

    /// The place of `key`'s lane, created (waiting, empty) if it has none.
    /// One probe of the index either way.
    fn lane_for(&mut self, hash: u64, key: K) -> u32 {
        let places = &mut self.places;
        let vacant = match self
            .index
            .find(hash, |p| places[p as usize].key.as_ref() == Some(&key))
        {
            Found::Place(place) => return place,
            Found::Vacant(at) => at,
        };
        let place = match self.places_free.pop() {
            Some(place) => place,
            None => {
                let place = u32::try_from(places.len())
                    .ok()
                    .filter(|&place| place < u32::MAX)
                    .expect("fewer than 2^32 - 1 lanes");
                places.push(Lane::free());
                place
            }
        };
        let lane = &mut places[place as usize];
        debug_assert!(lane.key.is_none() && lane.inputs.is_empty());
        lane.key = Some(key);
        lane.hash = hash;
        lane.state = LaneState::Waiting;
        lane.arrival_sorted = true;
        lane.waiting_weight = 0;
        self.index.insert_at(vacant, hash, place);
        self.lanes_live += 1;
        place
    }

    /// Takes the next ready lane's batch, first come first served, and marks
    /// the lane busy in the same step (G1). Lanes whose deadline has passed
    /// by `now` become ready first. `None` if no lane is ready.
    pub fn take(&mut self, now: impl Into<Nanos>) -> Option<Batch<K, T>> {
        let mut weight = 0;
        let (lane, key, items) = self.take_with(now, |items| {
            weight = items.weight();
            items.collect()
        })?;
        Some(Batch {
            lane,
            key,
            items,
            weight,
        })
    }

    /// Like [`take`](Self::take), but lends the batch's items to `consume`
    /// as they leave the lane instead of collecting them into a `Vec`: the
    /// caller may put them wherever it wants (a shard splits them into
    /// inputs and replies) with no vector in between. Items `consume` does
    /// not take are dropped. Returns the lane, the key and what `consume`
    /// returned.
    ///
    /// `consume` must not panic: the lane's bookkeeping is finished after it
    /// returns, so a panic inside it leaves this `Lanes` unfit for further
    /// use (drop it). Moving the items somewhere, as above, cannot panic
    /// short of running out of memory, which aborts.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Lanes;
    /// use ferry_shard::QueueConfig;
    ///
    /// let mut lanes = Lanes::new(QueueConfig::default());
    /// lanes.admit("a", (1, 'x'), 0, 1, Duration::ZERO).unwrap();
    /// lanes.admit("a", (2, 'y'), 1, 1, Duration::ZERO).unwrap();
    /// let (_lane, key, (numbers, letters)) = lanes
    ///     .take_with(Duration::ZERO, |items| items.unzip::<_, _, Vec<_>, Vec<_>>())
    ///     .unwrap();
    /// assert_eq!((key, numbers, letters), ("a", vec![1, 2], vec!['x', 'y']));
    /// ```
    pub fn take_with<R>(
        &mut self,
        now: impl Into<Nanos>,
        consume: impl FnOnce(BatchItems<'_, T>) -> R,
    ) -> Option<(LaneId, K, R)> {
        let now_ns = self.observe(now);
        self.promote_due(now_ns);
        let place = self.next_ready(now_ns)?;
        let (count, weight) = self.extent_of(place, now_ns);
        let lane = &mut self.places[place as usize];

        let consumed = consume(Items::new(&mut lane.inputs, count, weight, lane.hash));
        self.longest.shrank(place, lane.inputs.len());
        lane.waiting_weight -= weight;
        if !lane.inputs.is_empty() {
            lane.recompute_oldest();
        }
        if lane.inputs.is_empty() {
            lane.arrival_sorted = true;
        }
        lane.state = LaneState::Busy;
        self.lanes_busy += 1;
        self.waiting -= count;
        self.waiting_weight -= weight;

        debug_assert!(count >= 1 && count <= self.config.max_batch_size);
        debug_assert!(count == 1 || weight <= self.config.max_batch_weight);
        Some((
            lane.id(place),
            lane.key.clone().expect("a ready lane has a key"),
            consumed,
        ))
    }

    /// The weight of the batch [`take_with`](Self::take_with) would take at
    /// `now`, if a lane is ready: what a trip weighs before it takes one
    /// more batch (`max_trip_weight`). Takes nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Lanes;
    /// use ferry_shard::QueueConfig;
    ///
    /// let mut lanes = Lanes::new(QueueConfig::default());
    /// assert_eq!(lanes.next_weight(Duration::ZERO), None);
    /// lanes.admit("a", 'x', 0, 3, Duration::ZERO).unwrap();
    /// lanes.admit("a", 'y', 0, 4, Duration::ZERO).unwrap();
    /// assert_eq!(lanes.next_weight(Duration::ZERO), Some(7));
    /// assert_eq!(lanes.take(Duration::ZERO).unwrap().items, vec!['x', 'y']);
    /// ```
    pub fn next_weight(&mut self, now: impl Into<Nanos>) -> Option<u64> {
        let now_ns = self.observe(now);
        self.promote_due(now_ns);
        let place = self.next_ready(now_ns)?;
        let (_, weight) = self.extent_of(place, now_ns);
        let lane = &self.places[place as usize];
        // Back at the front: the take that follows finds it first (G7).
        let id = lane.id(place);
        self.ready.push_front(id);
        Some(weight)
    }

    /// How many inputs from the front of the lane at `place` make its next
    /// batch at `now_ns`, and their weight.
    #[inline]
    fn extent_of(&self, place: u32, now_ns: u64) -> (usize, u64) {
        let lane = &self.places[place as usize];
        if self.extent_plain {
            return lane.batch_extent(&self.config);
        }
        let hold = if self.closed { None } else { self.hold };
        debug_assert!(
            !lane.front_held(hold, now_ns),
            "a ready lane's front is free"
        );
        lane.batch_extent_within(&self.config, hold, now_ns)
    }

    /// The front of the ready line, past the stale entries of lanes removed
    /// while in line (module docs), and past lanes whose front went back to
    /// being held (see `demote_held`).
    fn next_ready(&mut self, now_ns: u64) -> Option<u32> {
        loop {
            let id = self.ready.pop_front()?;
            let lane = &self.places[id.place as usize];
            if lane.epoch == id.epoch && lane.key.is_some() {
                assert_eq!(lane.state, LaneState::Ready, "only ready lanes are in line");
                debug_assert!(!lane.inputs.is_empty(), "a ready lane has inputs");
                if self.hold.is_some() && self.demote_held(id.place, now_ns) {
                    continue;
                }
                return Some(id.place);
            }
            self.ready_stale -= 1;
        }
    }

    /// Hands to `out` every input still waiting `max_queue_time` after its
    /// arrival, by `now`, oldest first, and returns how many. Never one
    /// already taken into a batch. The cost is the entries that fell due,
    /// plus, in a lane kept in rank order (not arrival order), a search of
    /// that lane per input expired.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Lanes;
    /// use ferry_shard::QueueConfig;
    ///
    /// let t = Duration::from_millis;
    /// let mut lanes = Lanes::new(QueueConfig {
    ///     max_queue_time: Some(t(10)),
    ///     ..QueueConfig::default()
    /// });
    /// lanes.admit("a", 1, 0, 1, t(0)).unwrap();
    /// let busy = lanes.take(t(0)).unwrap(); // 1 is in a batch: never expired
    /// lanes.admit("a", 2, 0, 1, t(5)).unwrap(); // waits behind the busy lane
    /// let mut expired = Vec::new();
    /// assert_eq!(lanes.expire_with(t(14), |item| expired.push(item)), 0);
    /// assert_eq!(lanes.expire_with(t(15), |item| expired.push(item)), 1);
    /// assert_eq!((expired, lanes.waiting()), (vec![2], 0));
    /// lanes.complete(busy.lane, t(15));
    /// assert_eq!(lanes.lanes(), 0);
    /// ```
    pub fn expire_with(&mut self, now: impl Into<Nanos>, mut out: impl FnMut(T)) -> usize {
        let now_ns = self.observe(now);
        let mut expired = 0;
        while let Some(entry) = self.expiries.front().copied() {
            if entry.due_ns > now_ns {
                break;
            }
            self.expiries.pop_front();
            let place = entry.lane.place;
            let lane = &self.places[place as usize];
            if lane.epoch != entry.lane.epoch {
                continue;
            }
            let at = if lane.arrival_sorted {
                (lane.inputs.front().map(|w| w.seq) == Some(entry.seq)).then_some(0)
            } else {
                lane.inputs.iter().position(|w| w.seq == entry.seq)
            };
            if let Some(at) = at {
                out(self.remove_waiting(place, at));
                expired += 1;
            }
        }
        expired
    }

    /// Withdraws, handing each to `out`, the inputs among the first
    /// `scan` waiting in the lanes of `hash` that `gone` marks, and returns
    /// how many. For callers that stopped waiting: the oldest inputs, at a
    /// lane's front, are the first to be given up on, so a short scan finds
    /// them; one further back is found by the same test when its lane's
    /// batch is taken.
    pub fn withdraw_with(
        &mut self,
        hash: u64,
        scan: usize,
        mut gone: impl FnMut(&T) -> bool,
        mut out: impl FnMut(T),
    ) -> usize {
        // Several keys may share the hash: each has its own lane.
        let places = self.index.places_of(hash);
        let mut withdrawn = 0;
        for place in places {
            let mut at = 0;
            let mut looked = 0;
            while looked < scan {
                let lane = &self.places[place as usize];
                let Some(waiting) = lane.inputs.get(at) else {
                    break;
                };
                looked += 1;
                if gone(&waiting.item) {
                    let emptied = lane.inputs.len() == 1;
                    out(self.remove_waiting(place, at));
                    withdrawn += 1;
                    if emptied {
                        break;
                    }
                } else {
                    at += 1;
                }
            }
        }
        withdrawn
    }

    /// Takes the waiting input at index `at` of the lane at `place` out of
    /// the structure (not into a batch), keeping every count, the lane's
    /// oldest input and the ready line right.
    fn remove_waiting(&mut self, place: u32, at: usize) -> T {
        let lane = &mut self.places[place as usize];
        let waiting = lane.inputs.remove(at).expect("a waiting input at `at`");
        lane.waiting_weight -= waiting.weight;
        self.waiting -= 1;
        self.waiting_weight -= waiting.weight;
        self.longest.shrank(place, lane.inputs.len());
        if !lane.inputs.is_empty() {
            lane.recompute_oldest();
            if at == 0 && lane.state == LaneState::Waiting && self.hold.is_some() {
                // A new front: its own entry (invariant: holds), which
                // makes the lane ready when it falls due if it is free.
                self.queue_hold(place);
            }
            return waiting.item;
        }
        lane.arrival_sorted = true;
        match lane.state {
            LaneState::Waiting => self.remove(place),
            LaneState::Ready => {
                // Its entry in the ready line goes stale (module docs).
                self.ready_stale += 1;
                self.remove(place);
            }
            LaneState::Busy => {}
        }
        waiting.item
    }

    /// Makes ready every waiting lane whose oldest input is due by `now_ns`,
    /// in the order those inputs were admitted (G7, G8). Inlined up to the
    /// look at the first deadline: most calls find none due.
    #[inline]
    fn promote_due(&mut self, now_ns: u64) {
        if self
            .deadlines
            .front()
            .is_some_and(|deadline| deadline.due_ns <= now_ns)
        {
            self.promote_due_from(now_ns);
        }
        if self
            .holds
            .peek()
            .is_some_and(|Reverse(entry)| entry.ends_ns <= now_ns)
        {
            self.promote_held_from(now_ns);
        }
    }

    /// Input `seq` of rank `rank` was just admitted into the lane at `place`
    /// under a hold: counted if late (its hold already over, so free at
    /// once), and the lane settled, with a hold entry if the input is its
    /// new front and held. No lane is ready at admission before its front's
    /// hold ends. Out of line: without a hold, admission never comes here.
    #[cold]
    #[inline(never)]
    fn admitted_held(&mut self, place: u32, seq: u64, rank: i64, now_ns: u64) {
        let late = self.hold.is_some_and(|hold| hold.ends_ns(rank) <= now_ns);
        self.admitted_late += u64::from(late);
        let front = self.places[place as usize]
            .inputs
            .front()
            .is_some_and(|w| w.seq == seq);
        self.settle_held(place, front, now_ns);
    }

    /// Settles every lane whose front's hold ended by `now_ns`, earliest hold
    /// first (ties by the front's admission): ready if it is due, full, or
    /// there is no delay (otherwise its deadline entry makes it ready).
    /// Entries of a front that is no longer the front are dropped.
    #[cold]
    #[inline(never)]
    fn promote_held_from(&mut self, now_ns: u64) {
        while let Some(&Reverse(entry)) = self.holds.peek() {
            if entry.ends_ns > now_ns {
                break;
            }
            self.holds.pop();
            if self.places[entry.place as usize].is_hold_of_front(&entry) {
                self.settle_held(entry.place, false, now_ns);
            }
        }
    }

    /// Under a hold, decides a waiting lane's state at `now_ns`: ready if
    /// its front input's hold has ended and it would be ready without a
    /// hold (no delay, due or full); otherwise it stays waiting, and if its
    /// front is held and `front_changed`, an entry is queued for that
    /// front.
    ///
    /// Invariant (holds): while a lane waits with its front held, an entry
    /// naming the lane and that front is queued. Kept here when a front
    /// comes in (`admit`, `complete`, `demote_held`) and by `remove_waiting`
    /// when one leaves.
    #[cold]
    #[inline(never)]
    fn settle_held(&mut self, place: u32, front_changed: bool, now_ns: u64) {
        let lane = &mut self.places[place as usize];
        if lane.state != LaneState::Waiting || lane.inputs.is_empty() {
            return;
        }
        if lane.front_held(self.hold, now_ns) {
            if front_changed {
                self.queue_hold(place);
            }
            return;
        }
        let due = lane.oldest_arrival_ns.saturating_add(self.delay_ns) <= now_ns;
        if self.delay_ns == 0 || due || lane.is_full(&self.config) {
            lane.state = LaneState::Ready;
            self.ready.push_back(lane.id(place));
        }
    }

    /// Queues the hold entry of the front of the lane at `place`.
    fn queue_hold(&mut self, place: u32) {
        let lane = &self.places[place as usize];
        let (Some(hold), Some(front)) = (self.hold, lane.inputs.front()) else {
            return;
        };
        self.holds.push(Reverse(HoldEntry {
            ends_ns: hold.ends_ns(front.rank),
            seq: front.seq,
            place,
            epoch: lane.epoch,
        }));
    }

    /// A ready lane about to be taken whose front is held again (its free
    /// front left by expiry or withdrawal, and closing has not ended the
    /// holds): it goes back to waiting, with a hold entry. Returns whether
    /// it did.
    #[cold]
    #[inline(never)]
    fn demote_held(&mut self, place: u32, now_ns: u64) -> bool {
        let hold = if self.closed { None } else { self.hold };
        let lane = &mut self.places[place as usize];
        if !lane.front_held(hold, now_ns) {
            return false;
        }
        lane.state = LaneState::Waiting;
        self.settle_held(place, true, now_ns);
        true
    }

    #[inline(never)]
    fn promote_due_from(&mut self, now_ns: u64) {
        while let Some(deadline) = self.deadlines.front().copied() {
            if deadline.due_ns > now_ns {
                break;
            }
            self.deadlines.pop_front();
            let lane = &mut self.places[deadline.lane.place as usize];
            // A lane fires at the entry of its oldest waiting input only, not
            // at the entry of an input already sent: otherwise a lane could
            // overtake one that was due before it when `take` comes late.
            // A lane whose front is held stays waiting: its hold entry
            // makes it ready, due by then.
            if lane.state == LaneState::Waiting
                && lane.is_deadline_of_oldest(&deadline)
                && !lane.front_held(self.hold, now_ns)
            {
                debug_assert_eq!(
                    lane.oldest_arrival_ns.saturating_add(self.delay_ns),
                    deadline.due_ns
                );
                lane.state = LaneState::Ready;
                self.ready.push_back(deadline.lane);
            }
        }
    }

    /// Releases the busy lane `lane` whose batch finished (whether it
    /// succeeded or not): it joins the back of the ready line if it is ready,
    /// waits for its deadline (from its oldest remaining input by arrival) if
    /// partial, and is removed if empty (G5, G7, G8).
    ///
    /// # Panics
    /// If `lane` is not a busy lane of this structure: completing a batch
    /// twice would break G1.
    pub fn complete(&mut self, lane: LaneId, now: impl Into<Nanos>) {
        let now_ns = self.observe(now);
        // Lanes that fell due while the slots were busy go ahead of this one.
        self.promote_due(now_ns);
        let place = lane.place;
        let delay_ns = self.delay_ns;
        let closed = self.closed;
        let entry = &mut self.places[place as usize];
        assert!(
            entry.epoch == lane.epoch && entry.state == LaneState::Busy,
            "complete() of a lane that is not busy: {lane:?}"
        );
        self.lanes_busy -= 1;
        if entry.inputs.is_empty() {
            self.remove(place);
            return;
        }
        let due = entry.oldest_arrival_ns.saturating_add(delay_ns) <= now_ns;
        let held = self.hold.is_some() && !closed && entry.front_held(self.hold, now_ns);
        if closed || (!held && (delay_ns == 0 || due || entry.is_full(&self.config))) {
            entry.state = LaneState::Ready;
            self.ready.push_back(lane);
        } else if held {
            // Its front's hold entry makes it ready (invariant: holds).
            entry.state = LaneState::Waiting;
            self.settle_held(place, true, now_ns);
        } else {
            // Its oldest input's deadline entry is still queued (see the
            // module docs), so it will fire.
            debug_assert!(delay_ns > 0);
            entry.state = LaneState::Waiting;
        }
    }

    #[inline(always)]
    fn remove(&mut self, place: u32) {
        let lane = &mut self.places[place as usize];
        debug_assert!(lane.inputs.is_empty() && lane.waiting_weight == 0);
        let hash = lane.hash;
        lane.key = None;
        lane.epoch = lane.epoch.wrapping_add(1);
        lane.state = LaneState::Waiting;
        if lane.inputs.capacity() > LANE_CAPACITY_KEPT_MAX {
            self.buffers_kept.keep(&mut lane.inputs);
        }
        self.index.remove(hash, place);
        self.places_free.push(place);
        self.lanes_live -= 1;
        if self.lanes_live == 0 {
            // Quiet: nothing can be due, so stale deadlines go at once.
            self.deadlines.clear();
            self.expiries.clear();
            self.holds.clear();
        }
    }

    /// Closes the structure and hands out every waiting input, in no
    /// particular order: for a shard that stops with inputs it never sent
    /// (they go back to their callers). Lanes without a batch in flight are
    /// removed; busy ones stay until their batch completes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Lanes;
    /// use ferry_shard::QueueConfig;
    ///
    /// let mut lanes = Lanes::new(QueueConfig::default());
    /// lanes.admit("a", 1, 0, 1, Duration::ZERO).unwrap();
    /// let busy = lanes.take(Duration::ZERO).unwrap();
    /// lanes.admit("a", 2, 0, 1, Duration::ZERO).unwrap();
    /// lanes.admit("b", 3, 0, 1, Duration::ZERO).unwrap();
    /// let mut left = lanes.drain_waiting();
    /// left.sort();
    /// assert_eq!(left, vec![2, 3]);
    /// assert_eq!((lanes.waiting(), lanes.lanes()), (0, 1), "a's batch is still out");
    /// lanes.complete(busy.lane, Duration::ZERO);
    /// assert_eq!(lanes.lanes(), 0);
    /// ```
    pub fn drain_waiting(&mut self) -> Vec<T> {
        self.close();
        let mut drained = Vec::with_capacity(self.waiting);
        for place in 0..self.places.len() {
            let lane = &mut self.places[place];
            if lane.key.is_none() {
                continue;
            }
            drained.extend(lane.inputs.drain(..).map(|waiting| waiting.item));
            lane.waiting_weight = 0;
            if lane.state != LaneState::Busy {
                self.remove(place as u32);
            }
        }
        self.ready.clear();
        self.ready_stale = 0;
        self.deadlines.clear();
        self.expiries.clear();
        self.holds.clear();
        self.waiting = 0;
        self.waiting_weight = 0;
        self.longest.clear();
        debug_assert_eq!(self.lanes_live, self.lanes_busy, "only busy lanes are left");
        drained
    }

    /// Closes the structure (guarantee G9, docs/guarantees.md): nothing new is admitted, and every
    /// waiting lane is ready at once, its delay ignored. Idempotent.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        // Waiting lanes join the ready line in the order their deadlines
        // would have fired (oldest waiting input first), as `take` would
        // promote them: every waiting lane has its oldest input's entry
        // queued. Nothing is admitted any more, so no entry is needed after.
        for deadline in self.deadlines.drain(..) {
            let lane = &mut self.places[deadline.lane.place as usize];
            if lane.state == LaneState::Waiting && lane.is_deadline_of_oldest(&deadline) {
                lane.state = LaneState::Ready;
                self.ready.push_back(deadline.lane);
            }
        }
        // Closing ends every hold: held lanes follow, earliest hold first
        // (a waiting lane with no deadline entry has a hold entry).
        while let Some(Reverse(entry)) = self.holds.pop() {
            let lane = &mut self.places[entry.place as usize];
            if lane.is_hold_of_front(&entry) {
                lane.state = LaneState::Ready;
                self.ready.push_back(lane.id(entry.place));
            }
        }
        // Every waiting lane was found above. Should one ever be missed, it
        // still goes in line here: an input left waiting after close would
        // never be answered (G9).
        let mut missed = 0;
        for (place, lane) in self.places.iter_mut().enumerate() {
            if lane.key.is_some() && lane.state == LaneState::Waiting && !lane.inputs.is_empty() {
                lane.state = LaneState::Ready;
                self.ready.push_back(lane.id(place as u32));
                missed += 1;
            }
        }
        debug_assert_eq!(missed, 0, "a waiting lane had no deadline entry");
    }

    /// When to call [`take`](Self::take) next for a deadline: never later
    /// than the earliest moment a waiting lane becomes due, `None` if no lane
    /// can become due. It is exactly that moment when the earliest pending
    /// deadline belongs to a waiting lane; it may be earlier when it belongs
    /// to a lane that is busy or ready now, because that lane may wait again
    /// after its batch, and its oldest input's deadline must then still fire.
    /// Entries whose input has surely left its lane are dropped on the way.
    pub fn next_deadline(&mut self) -> Option<Duration> {
        let batch = self.next_batch_deadline();
        let expiry = self.next_expiry();
        let hold = self.next_hold_end();
        [batch, expiry, hold].into_iter().flatten().min()
    }

    /// When the earliest hold of a waiting lane's front ends (it may have
    /// ended already: the lane is made ready at the next step); stale
    /// entries are dropped on the way (a lane that waits again gets a new
    /// entry: invariant holds).
    fn next_hold_end(&mut self) -> Option<Duration> {
        while let Some(&Reverse(entry)) = self.holds.peek() {
            if self.places[entry.place as usize].is_hold_of_front(&entry) {
                return Some(Duration::from_nanos(entry.ends_ns));
            }
            self.holds.pop();
        }
        None
    }

    /// When the oldest input still waiting expires, if one may; entries of
    /// inputs that surely left are dropped on the way.
    pub fn next_expiry(&mut self) -> Option<Duration> {
        while let Some(entry) = self.expiries.front() {
            let lane = &self.places[entry.lane.place as usize];
            let left = lane.epoch != entry.lane.epoch
                || lane.inputs.is_empty()
                || (lane.arrival_sorted && lane.inputs.front().is_some_and(|w| w.seq > entry.seq));
            if !left {
                return Some(Duration::from_nanos(entry.due_ns));
            }
            self.expiries.pop_front();
        }
        None
    }

    fn next_batch_deadline(&mut self) -> Option<Duration> {
        // Dropping an entry only because its lane is busy or ready would
        // break the invariant in the module docs: a lane completed before its
        // oldest input is due would wait for a deadline that never fires.
        while let Some(deadline) = self.deadlines.front() {
            let lane = &self.places[deadline.lane.place as usize];
            if !lane.is_stale(deadline) {
                // Under a hold, the oldest input's entry may have fallen due
                // while its lane was held: the lane is then due, and its
                // hold entry makes it ready (invariant: holds).
                debug_assert!(
                    lane.state != LaneState::Waiting
                        || lane.oldest_seq == deadline.seq
                        || self.hold.is_some(),
                    "a waiting lane's oldest input has its entry queued"
                );
                return Some(Duration::from_nanos(deadline.due_ns));
            }
            self.deadlines.pop_front();
        }
        None
    }

    /// Whether a lane is ready to be taken now (deadlines are only promoted
    /// by [`take`](Self::take), so a due lane may not count yet).
    pub fn has_ready(&self) -> bool {
        self.ready.len() > self.ready_stale
    }

    /// The state of `key`'s lane, or `None` if it has no lane.
    pub fn lane_state(&self, key: &K) -> Option<LaneState> {
        let hash = key_hash(key);
        match self
            .index
            .find(hash, |p| self.places[p as usize].key.as_ref() == Some(key))
        {
            Found::Place(place) => Some(self.places[place as usize].state),
            Found::Vacant(_) => None,
        }
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Lanes that exist (waiting inputs or a batch in flight).
    pub fn lanes(&self) -> usize {
        self.lanes_live
    }

    /// Inputs admitted and not yet taken.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Waiting inputs of the longest lane, as last seen (see the
    /// `longest_lane` figure of `ShardStats`): never more than some lane
    /// holds.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Lanes;
    /// use ferry_shard::QueueConfig;
    ///
    /// let mut lanes = Lanes::new(QueueConfig { max_batch_size: 2, ..QueueConfig::default() });
    /// for (key, n) in [("hot", 1), ("hot", 2), ("hot", 3), ("cold", 4)] {
    ///     lanes.admit(key, n, 0, 1, Duration::ZERO).unwrap();
    /// }
    /// assert_eq!(lanes.longest_lane(), 3);
    /// let batch = lanes.take(Duration::ZERO).unwrap();
    /// assert_eq!((batch.key, lanes.longest_lane()), ("hot", 1));
    /// ```
    pub fn longest_lane(&self) -> usize {
        self.longest.waiting()
    }

    /// Total weight of the waiting inputs.
    pub fn waiting_weight(&self) -> u64 {
        self.waiting_weight
    }

    /// Lanes whose batch is in flight.
    pub fn busy(&self) -> usize {
        self.lanes_busy
    }

    /// Lanes in the ready line (not counting stale entries).
    pub fn ready(&self) -> usize {
        self.ready.len() - self.ready_stale
    }

    /// Lane places allocated, live or free: the high-water mark of lanes alive
    /// at once. It does not grow with the number of keys ever seen (G5).
    pub fn places_allocated(&self) -> usize {
        self.places.len()
    }

    /// With an event-time hold, the inputs admitted late (after their event
    /// time plus the lateness) and so never held; refused ones are not
    /// counted (see `refuse_late`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::parts::Lanes;
    /// use ferry_shard::{Hold, QueueConfig};
    ///
    /// let t = Duration::from_millis;
    /// let hold = Some(Hold::new(t(10)));
    /// let mut lanes = Lanes::new(QueueConfig { hold, ..QueueConfig::default() });
    /// lanes.admit("k", 'a', 95, 1, t(100)).unwrap(); // held until 105
    /// lanes.admit("k", 'b', 80, 1, t(100)).unwrap(); // its hold ended at 90
    /// assert_eq!(lanes.admitted_late(), 1);
    /// let batch = lanes.take(t(100)).unwrap();
    /// assert_eq!(batch.items, vec!['b'], "the late input goes, the other is held");
    /// ```
    pub fn admitted_late(&self) -> u64 {
        self.admitted_late
    }

    /// Deadline entries queued (at most the inputs admitted within one
    /// `max_batch_delay`).
    pub fn deadlines_queued(&self) -> usize {
        self.deadlines.len()
    }
}
