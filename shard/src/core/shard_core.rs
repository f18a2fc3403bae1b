//! The decisions of one shard, driven by events and free of any runtime.
//!
//! [`ShardCore`] owns the shard's queue — per-key [`Lanes`](crate::queue::lanes::Lanes)
//! or the unkeyed [`Fifo`](crate::queue::fifo::Fifo), through the [`Queue`] seam —
//! and its slots, and answers callers. It reacts to three events — an input
//! arrived ([`admit`](ShardCore::admit)), a batch finished
//! ([`complete`](ShardCore::complete)), time passed (the `now` given to
//! [`dispatch`](ShardCore::dispatch)) — plus [`close`](ShardCore::close). The
//! loop in `shard_loop.rs` is a thin driver around it, and a test can drive
//! the very same logic with a simulated clock and batch function.
//!
//! Invariant: every admitted input's reply is used exactly once — by
//! `complete` (or `answer`) for the batch that carried it — and every
//! refused input's reply carries the input back at once (G4).
//! Invariant: `in_flight <= max_in_flight_batches` (slots).

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::answer::answer_cell;
use crate::answer::gather::{Deliveries, GatherReply, Gathering, ToShard};
use crate::core::ended::{BatchOutcome, Ended, TripOutcome};
use crate::core::observe::Observer;
use crate::core::stats::ShardStats;
use crate::queue::seam::Queue;
use crate::queue::taken::Taken;
use crate::value::config::QueueConfig;
use crate::value::error::FerryError;
use crate::value::error::Outcome;
use crate::value::flush::Generations;
use crate::value::nanos::Nanos;
use crate::value::refused::Refused;

/// Where an input's outcome goes — to a caller on another thread through
/// its own answer cell or its call's shared cell (`submit_many`), or to a task
/// on the shard's own thread through a local answer cell (the fast path, no
/// atomics) — and the flush generation it was admitted in.
pub struct Reply<I, O, E> {
    to: ReplyTo<I, O, E>,
    generation: u64,
}

enum ReplyTo<I, O, E> {
    /// A caller on any thread.
    Remote(answer_cell::Sender<Outcome<I, O, E>>),
    /// One input of a caller's `submit_many` call, on any thread.
    Gathered(GatherReply<I, O, E>),
    /// A task on this shard.
    Local(answer_cell::Sender<Outcome<I, O, E>, answer_cell::Local>),
}

impl<I, O, E> Reply<I, O, E> {
    /// Whether the caller is a task on the shard's own thread.
    pub fn is_local(&self) -> bool {
        matches!(self.to, ReplyTo::Local(_))
    }

    /// Whether the caller stopped waiting (dropped its future).
    pub fn is_abandoned(&self) -> bool {
        match &self.to {
            ReplyTo::Remote(reply) => reply.is_closed(),
            ReplyTo::Gathered(reply) => reply.is_abandoned(),
            ReplyTo::Local(reply) => reply.is_closed(),
        }
    }

    /// Delivers `outcome`. A caller that stopped waiting has nothing to be
    /// told, so a closed cell is not an error.
    #[inline]
    pub fn send(self, outcome: Outcome<I, O, E>) {
        match self.to {
            ReplyTo::Remote(reply) => reply.send(outcome),
            ReplyTo::Gathered(reply) => reply.send(outcome),
            ReplyTo::Local(reply) => reply.send(outcome),
        }
    }
}

impl<I, O, E> std::fmt::Debug for Reply<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.to {
            ReplyTo::Remote(_) => "Reply::Remote",
            ReplyTo::Gathered(_) => "Reply::Gathered",
            ReplyTo::Local(_) => "Reply::Local",
        })
    }
}

/// An input on its way into a shard, with everything about it computed on
/// the caller's thread; how it is answered travels beside it.
#[derive(Debug)]
pub struct Offer<K, I> {
    /// `key_hash(&key)`.
    pub hash: u64,
    /// The input's key.
    pub key: K,
    /// The input.
    pub input: I,
    /// Its rank under the configured order.
    pub rank: i64,
    /// Its weight under the configured weigher.
    pub weight: u64,
    /// Its boundary value (0 unless a boundary is configured): a batch
    /// never holds two of them.
    pub boundary: i64,
}

impl<K, I> Offer<K, I> {
    /// `input` of `key` (whose hash is `hash`), with its rank and weight.
    pub fn new(hash: u64, key: K, input: I, rank: i64, weight: u64) -> Self {
        Self {
            hash,
            key,
            input,
            rank,
            weight,
            boundary: 0,
        }
    }

    /// The same offer with the boundary value `boundary`.
    ///
    /// ```
    /// use ferry_shard::Offer;
    ///
    /// let offer = Offer::new(0, "key", 'x', 5, 1).bounded(3);
    /// assert_eq!((offer.rank, offer.boundary), (5, 3));
    /// ```
    pub fn bounded(self, boundary: i64) -> Self {
        Self { boundary, ..self }
    }
}

/// An input submitted on its own, answered through its answer cell.
#[derive(Debug)]
pub struct Submission<K, I, O, E> {
    /// The input and what the caller computed about it.
    pub offer: Offer<K, I>,
    /// Where its outcome goes.
    pub reply: answer_cell::Sender<Outcome<I, O, E>>,
}

/// An input of a `submit_many` call; it travels in a bundle with its
/// call's cell ([`ToShard`]).
#[derive(Debug)]
pub struct Bundled<K, I> {
    /// The input and what the caller computed about it.
    pub offer: Offer<K, I>,
    /// Its position in its call.
    pub index: usize,
}

/// What the queue holds per admitted input: the input and where its
/// outcome goes.
pub type Waiter<I, O, E> = (I, Reply<I, O, E>);

/// A batch ready to be handed to the batch function.
#[derive(Debug)]
pub struct Dispatch<T, K, I, O, E> {
    /// Hand back to [`ShardCore::complete`].
    pub ticket: T,
    /// The batch's key (`()` for unkeyed batching).
    pub key: K,
    /// Its inputs in rank order.
    pub inputs: Vec<I>,
    /// One reply per input, in the same order; hand back to `complete`.
    pub replies: Vec<Reply<I, O, E>>,
}

/// The bounds of one trip: how many batches, and how much weight in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TripLimits {
    /// Batches (keys) in one trip at most; at least 1.
    pub max_batches: usize,
    /// The trip's total weight at most, unless it is a single batch.
    pub max_weight: u64,
}

/// A trip taken from the queue: the keys' batches for the trip function,
/// in the order taken (first come, first served), and what the loop keeps
/// to release and answer them.
pub type TripDispatch<T, K, I, O, E> = (Vec<(K, Vec<I>)>, TripHeld<T, I, O, E>);

/// What the loop keeps of a trip in flight: each batch's ticket and its
/// callers, in the trip's order.
pub type TripHeld<T, I, O, E> = Vec<(T, Vec<Reply<I, O, E>>)>;

/// The trip a core of queue `Q` dispatches.
pub type TripDispatchOf<Q, I, O, E> = TripDispatch<
    <Q as Queue<Waiter<I, O, E>>>::Ticket,
    <Q as Queue<Waiter<I, O, E>>>::Key,
    I,
    O,
    E,
>;

/// The shard's state machine over the queue `Q`. See the module docs.
#[derive(Debug)]
pub struct ShardCore<Q: Queue<Waiter<I, O, E>>, I, O, E> {
    queue: Q,
    max_in_flight_batches: usize,
    in_flight: usize,
    /// What taking a batch out of the queue writes to, in one place so
    /// that the step lends the queue one reference to it.
    books: Books<I, O, E>,
    /// An answer went to a task on this thread (see `take_woke_local`).
    woke_local: bool,
    /// Answers kept for `submit_many` callers until the round's end.
    deliveries: Deliveries<I, O, E>,
    /// Emptied vectors of answered trips, for the next trips.
    spare_trips: Vec<TripHeld<Q::Ticket, I, O, E>>,
    /// How many batches the last trip carried.
    trip_batches_last: usize,
}

/// The counts, spares and records of a shard's core beside its queue.
#[derive(Debug)]
struct Books<I, O, E> {
    stats: ShardStats,
    /// Emptied reply vectors of answered batches, reused by the next
    /// dispatches so that a batch allocates no replies vector.
    spare_replies: Vec<Vec<Reply<I, O, E>>>,
    /// Emptied output vectors of answered batches, turned into inputs
    /// vectors for the next dispatches (see `spare_inputs_of`).
    spare_inputs: Vec<Vec<I>>,
    /// How many of each spare vector are kept at most: `SPARES_MAX`, or
    /// the most batches ever out at once (`replies_out`'s peak) if that is
    /// more. Batches are out from their dispatch until their callers are
    /// answered, and the loop starts the next trips before it answers the
    /// finished ones (`ShardLoop::step`), so a shard with trips in flight
    /// needs a few times the batches they carry; keeping as many as were
    /// out lets every batch reuse a vector, and never keeps more than the
    /// shard's busiest moment held.
    spares_max: usize,
    /// Replies vectors handed out by `split` and not yet given back.
    replies_out: usize,
    /// The most room a kept inputs vector may have: a batch holds at most
    /// `max_batch_size` inputs, and never more than `SPARE_INPUTS_ROOM_MAX`
    /// are kept.
    spare_inputs_room_max: usize,
    /// Inputs whose callers dropped their futures are withdrawn.
    withdraw_on_drop: bool,
    /// What each flush request waits for.
    generations: Generations<FlushReply>,
    /// The distributions, outcomes and refusals recorded (`observe.rs`).
    observer: Observer,
}

impl<I, O, E> Books<I, O, E> {
    /// Splits a batch's items, as the queue hands them out, into its
    /// inputs and their replies, each in a spare vector, recording the
    /// batch; with `withdraw_on_drop`, an input whose caller is gone is
    /// withdrawn instead (never sent).
    #[inline]
    fn split<It>(&mut self, now: Nanos, items: It) -> (Vec<I>, Vec<Reply<I, O, E>>)
    where
        It: ExactSizeIterator<Item = Waiter<I, O, E>> + Taken,
    {
        let mut inputs = self.spare_inputs.pop().unwrap_or_default();
        inputs.reserve(items.len());
        let mut replies = self.spare_replies.pop().unwrap_or_default();
        replies.reserve(items.len());
        self.replies_out += 1;
        self.spares_max = self.spares_max.max(self.replies_out);
        let withdraw = self.withdraw_on_drop;
        for (input, reply) in self.observer.watch(now, items) {
            if withdraw && reply.is_abandoned() {
                self.stats.withdrawn += 1;
                self.generations.resolved(reply.generation);
                continue;
            }
            inputs.push(input);
            replies.push(reply);
        }
        (inputs, replies)
    }
}

/// Told once every input admitted before a flush request is resolved.
pub type FlushReply = oneshot::Sender<()>;

/// How far into a lane (or the unkeyed queue) a withdrawal notice looks for
/// inputs whose callers are gone. Any it does not reach are found when
/// their batch is taken.
const WITHDRAW_SCAN: usize = 128;

/// Reply and inputs vectors kept for reuse at most, unless more batches
/// were out at once (`Books::spares_max`). A
/// reply vector holds at most `max_batch_size` slots, so this bounds what
/// the pool keeps.
const SPARES_MAX: usize = 64;

/// The most room an inputs vector may have to be kept, whatever the batch
/// size (a batch function may hand back a vector larger than it got).
const SPARE_INPUTS_ROOM_MAX: usize = 4_096;

/// Emptied trip vectors (what the loop keeps of a trip) kept for reuse at
/// most.
const SPARE_TRIPS_MAX: usize = 4;

/// The batch a core of queue `Q` dispatches.
pub type DispatchOf<Q, I, O, E> =
    Dispatch<<Q as Queue<Waiter<I, O, E>>>::Ticket, <Q as Queue<Waiter<I, O, E>>>::Key, I, O, E>;

impl<Q, I, O, E> ShardCore<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
    E: Clone,
{
    /// A core with `lanes` bounds and `max_in_flight_batches` slots (at least 1).
    pub fn new(lanes: QueueConfig, max_in_flight_batches: usize) -> Self {
        assert!(
            max_in_flight_batches >= 1,
            "max_in_flight_batches must be at least 1"
        );
        Self {
            books: Books {
                stats: ShardStats::default(),
                spare_replies: Vec::new(),
                spare_inputs: Vec::new(),
                spares_max: SPARES_MAX,
                replies_out: 0,
                spare_inputs_room_max: lanes.max_batch_size.min(SPARE_INPUTS_ROOM_MAX),
                withdraw_on_drop: lanes.withdraw_on_drop,
                generations: Generations::default(),
                observer: Observer::default(),
            },
            queue: Q::with_config(lanes),
            max_in_flight_batches,
            in_flight: 0,
            woke_local: false,
            deliveries: Deliveries::default(),
            spare_trips: Vec::new(),
            trip_batches_last: 1,
        }
    }

    /// An input arrived: admit it into its lane, or answer its caller at
    /// once with the input handed back.
    pub fn admit(&mut self, submission: Submission<Q::Key, I, O, E>, now: impl Into<Nanos>) {
        let Submission { offer, reply } = submission;
        self.admit_with(offer, ReplyTo::Remote(reply), now.into());
    }

    /// Like [`admit`](Self::admit) for a caller on the shard's own thread
    /// (the fast path): the same admission, answered through a local
    /// answer cell.
    pub fn admit_local(
        &mut self,
        offer: Offer<Q::Key, I>,
        reply: answer_cell::Sender<Outcome<I, O, E>, answer_cell::Local>,
        now: impl Into<Nanos>,
    ) {
        if self.admit_with(offer, ReplyTo::Local(reply), now.into()) {
            self.books.stats.admitted_local += 1;
        }
    }

    /// Like [`admit`](Self::admit) for an input of a `submit_many` call,
    /// answered through its call's share on this shard (see
    /// [`gathering`](Self::gathering)).
    pub fn admit_gathered(
        &mut self,
        bundled: Bundled<Q::Key, I>,
        gathering: &Gathering<I, O, E>,
        now: impl Into<Nanos>,
    ) {
        let Bundled { offer, index } = bundled;
        self.admit_with(offer, ReplyTo::Gathered(gathering.reply(index)), now.into());
    }

    /// A share of `inputs` inputs of a `submit_many` call arrived: their
    /// answers are kept on this shard and delivered by
    /// [`deliver`](Self::deliver).
    pub fn gathering(&self, to: ToShard<I, O, E>, inputs: usize) -> Gathering<I, O, E> {
        self.deliveries.gathering(to, inputs)
    }

    /// Hands the answers kept for `submit_many` callers over to them: the
    /// driver calls it once a round, before it tells flushes (a flush's
    /// inputs are all answered when it resolves).
    pub fn deliver(&mut self) {
        self.deliveries.deliver();
    }

    fn admit_with(&mut self, offer: Offer<Q::Key, I>, to: ReplyTo<I, O, E>, now: Nanos) -> bool {
        let Offer {
            hash,
            key,
            input,
            rank,
            weight,
            boundary,
        } = offer;
        let generation = self.books.generations.current();
        let mut waiter = Some((input, Reply { to, generation }));
        // The key's `Eq` or `Clone` is user code and may panic while its
        // lane is looked up; the input is then still in `waiter`, and goes
        // back to its caller before the shard goes down (G4).
        let admitted = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.queue
                .admit(hash, key, &mut waiter, rank, boundary, weight, now)
        }));
        match admitted {
            Ok(Ok(())) => {
                self.books.stats.admitted += 1;
                self.books.generations.admitted();
                true
            }
            Ok(Err(reason)) => {
                self.refuse(waiter, reason);
                false
            }
            Err(panic) => {
                self.refuse(waiter, Refused::Closed);
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// Answers the caller of a refused input, handing it back.
    fn refuse(&mut self, waiter: Option<Waiter<I, O, E>>, reason: Refused) {
        let Some((input, reply)) = waiter else {
            return;
        };
        self.books.observer.refused(&mut self.books.stats, reason);
        reply.send(Err(FerryError::refusal(input, reason)));
    }

    /// The next batch to start, if a slot is free and a batch is ready at
    /// `now`. Its slot (and, per key, its lane) is busy until
    /// [`complete`](Self::complete).
    ///
    /// With `withdraw_on_drop`, an input whose caller is gone when its
    /// batch is taken is withdrawn in the same step, never sent; a batch
    /// left with no input is released at once and the next one looked at.
    #[inline(always)]
    pub fn dispatch(&mut self, now: impl Into<Nanos>) -> Option<DispatchOf<Q, I, O, E>> {
        let now = now.into();
        if self.in_flight >= self.max_in_flight_batches {
            return None;
        }
        loop {
            let (ticket, key, (inputs, replies)) = self.take_batch(now)?;
            if inputs.is_empty() {
                self.keep_spare_replies(replies);
                self.queue.complete(ticket, now);
                continue;
            }
            return Some(self.start(ticket, key, inputs, replies));
        }
    }

    /// Takes the next ready batch, split into inputs and replies, less any
    /// withdrawn.
    #[allow(clippy::type_complexity)]
    #[inline]
    fn take_batch(
        &mut self,
        now: Nanos,
    ) -> Option<(Q::Ticket, Q::Key, (Vec<I>, Vec<Reply<I, O, E>>))> {
        let books = &mut self.books;
        self.queue.take_with(now, |items| books.split(now, items))
    }

    /// The next trip to start, if a slot is free and a lane is ready at
    /// `now`: up to `limits.max_batches` ready lanes, first come first
    /// served, each lane's batch as [`dispatch`](Self::dispatch) would take
    /// it, all in one slot. Every lane taken is busy until
    /// [`release_trip`](Self::release_trip); no key is in a trip twice,
    /// since a lane taken is busy and out of the ready line (G1).
    ///
    /// A batch that would push the trip's weight past `limits.max_weight`
    /// stays at the front of the ready line for the next trip (a trip's
    /// first batch always goes). A batch is weighed as it is taken, before
    /// `withdraw_on_drop` removes the inputs of callers already gone, so
    /// the bound holds for what is sent with room to spare.
    pub fn dispatch_trip(
        &mut self,
        now: impl Into<Nanos>,
        limits: TripLimits,
    ) -> Option<TripDispatchOf<Q, I, O, E>> {
        let now = now.into();
        if self.in_flight >= self.max_in_flight_batches {
            return None;
        }
        // A trip carries as many batches as the one before it, most often:
        // room for as many, and the vector the loop keeps from a spare.
        let mut batches = Vec::with_capacity(self.trip_batches_last.min(limits.max_batches));
        let mut held = self.spare_trips.pop().unwrap_or_default();
        let mut weight = 0_u64;
        while batches.len() < limits.max_batches {
            if limits.max_weight != u64::MAX {
                let Some(next) = self.queue.next_weight(now) else {
                    break;
                };
                if !batches.is_empty() && weight.saturating_add(next) > limits.max_weight {
                    break;
                }
                weight = weight.saturating_add(next);
            }
            let Some((ticket, key, (inputs, replies))) = self.take_batch(now) else {
                break;
            };
            if inputs.is_empty() {
                self.keep_spare_replies(replies);
                self.queue.complete(ticket, now);
                continue;
            }
            self.books.stats.batches += 1;
            self.books.stats.sent += inputs.len() as u64;
            batches.push((key, inputs));
            held.push((ticket, replies));
        }
        if batches.is_empty() {
            self.keep_spare_trip(held);
            return None;
        }
        self.trip_batches_last = batches.len();
        self.in_flight += 1;
        self.books.stats.trips += 1;
        self.books.observer.trip_taken(batches.len());
        debug_assert!(self.in_flight <= self.max_in_flight_batches);
        debug_assert!(batches.len() <= limits.max_batches);
        Some((batches, held))
    }

    /// A trip finished: its lanes and its one slot are free again. The
    /// driver must then [`answer_trip`](Self::answer_trip) its callers in
    /// the same turn (see [`release`](Self::release)).
    pub fn release_trip<'h>(
        &mut self,
        tickets: impl IntoIterator<Item = &'h Q::Ticket>,
        now: impl Into<Nanos>,
    ) where
        Q::Ticket: 'h,
    {
        debug_assert!(self.in_flight > 0, "release without a trip in flight");
        let now = now.into();
        for ticket in tickets {
            self.queue.complete(*ticket, now);
        }
        self.in_flight -= 1;
    }

    /// The second half of a trip's end: each batch's callers get that
    /// batch's result, exactly once (G4). A trip function that returned
    /// the wrong number of results fails every batch of the trip with
    /// `WrongOutputCount { expected: batches, got: results }`; one that
    /// panicked fails every batch `Panicked`. A batch whose own result has
    /// the wrong number of outputs fails alone (G10).
    pub fn answer_trip(
        &mut self,
        mut held: TripHeld<Q::Ticket, I, O, E>,
        outcome: TripOutcome<O, E>,
    ) {
        match outcome {
            Ended::Returned(results) if results.len() == held.len() => {
                for ((_, replies), result) in held.drain(..).zip(results) {
                    self.answer(replies, Ended::Returned(result));
                }
            }
            Ended::Returned(results) => {
                let (expected, got) = (held.len(), results.len());
                for (_, mut replies) in held.drain(..) {
                    let stats = &mut self.books.stats;
                    stats.answered += replies.len() as u64;
                    stats.wrong_output_count += replies.len() as u64;
                    self.answer_all(&mut replies, || FerryError::WrongOutputCount {
                        expected,
                        got,
                    });
                    self.keep_spare_replies(replies);
                }
            }
            Ended::Panicked => {
                for (_, replies) in held.drain(..) {
                    self.answer(replies, Ended::Panicked);
                }
            }
        }
        self.keep_spare_trip(held);
    }

    /// Keeps an emptied trip vector for a later trip (up to a few).
    fn keep_spare_trip(&mut self, held: TripHeld<Q::Ticket, I, O, E>) {
        debug_assert!(held.is_empty(), "every batch of a trip is answered (G4)");
        if self.spare_trips.len() < SPARE_TRIPS_MAX {
            self.spare_trips.push(held);
        }
    }

    /// Counts a batch out and puts it in a slot.
    #[inline]
    fn start(
        &mut self,
        ticket: Q::Ticket,
        key: Q::Key,
        inputs: Vec<I>,
        replies: Vec<Reply<I, O, E>>,
    ) -> DispatchOf<Q, I, O, E> {
        self.in_flight += 1;
        self.books.stats.batches += 1;
        self.books.stats.sent += inputs.len() as u64;
        debug_assert!(self.in_flight <= self.max_in_flight_batches);
        Dispatch {
            ticket,
            key,
            inputs,
            replies,
        }
    }

    /// An input of `generation` is resolved: the flushes it completes are
    /// kept, to be told.
    #[inline]
    fn resolved(&mut self, generation: u64) {
        self.books.generations.resolved(generation);
    }

    /// The flush requests completed since the last call. The driver tells
    /// them after publishing the stats, so that a caller whose flush
    /// resolved reads figures that include everything it waited for.
    pub fn take_flushed(&mut self) -> Vec<FlushReply> {
        self.books.generations.take_completed()
    }

    /// Answers `Expired` every input still waiting `max_queue_time` after
    /// its arrival, handing it back (never sent).
    pub fn expire(&mut self, now: impl Into<Nanos>) {
        let mut expired = Vec::new();
        self.queue.expire_with(now, |waiter| expired.push(waiter));
        for (input, reply) in expired {
            self.books.stats.expired += 1;
            self.woke_local |= reply.is_local();
            let generation = reply.generation;
            reply.send(Err(FerryError::Expired { input }));
            self.resolved(generation);
        }
    }

    /// A caller of the key of `hash` dropped its future: its input, if it
    /// is still waiting near the front of its lane, is withdrawn (never
    /// sent, out of the bounds). Does nothing unless `withdraw_on_drop`.
    pub fn withdraw(&mut self, hash: u64) {
        if !self.books.withdraw_on_drop {
            return;
        }
        let mut gone = Vec::new();
        self.queue.withdraw_with(
            hash,
            WITHDRAW_SCAN,
            |(_, reply)| reply.is_abandoned(),
            |(_, reply)| gone.push(reply.generation),
        );
        for generation in gone {
            self.books.stats.withdrawn += 1;
            self.resolved(generation);
        }
    }

    /// A flush: `reply` is to be told once every input admitted so far is
    /// resolved (at once if none is outstanding): see `take_flushed`.
    pub fn flush(&mut self, reply: FlushReply) {
        self.books.generations.request(reply);
    }

    /// A batch finished: answer each of its callers exactly once and release
    /// its lane and slot (G4, G10). The same as [`answer`](Self::answer)
    /// then [`release`](Self::release).
    #[inline(always)]
    pub fn complete(
        &mut self,
        ticket: Q::Ticket,
        replies: Vec<Reply<I, O, E>>,
        outcome: BatchOutcome<O, E>,
        now: impl Into<Nanos>,
    ) {
        self.answer(replies, outcome);
        self.release(ticket, now);
    }

    /// The first half of [`complete`](Self::complete): a batch finished, so
    /// its lane and slot are free again and the key's next batch may start.
    /// The driver must then [`answer`](Self::answer) its callers, in the
    /// same turn, before it next looks whether the shard is quiet.
    ///
    /// Releasing first lets a busy key's next round trip start before its
    /// previous callers are told, which is what bounds a hot key.
    pub fn release(&mut self, ticket: Q::Ticket, now: impl Into<Nanos>) {
        debug_assert!(self.in_flight > 0, "release without a batch in flight");
        self.queue.complete(ticket, now);
        self.in_flight -= 1;
    }

    /// The second half of [`complete`](Self::complete): answers each caller
    /// of a finished batch exactly once, with its output or with the
    /// batch's error (G4, G10).
    #[inline(always)]
    pub fn answer(&mut self, mut replies: Vec<Reply<I, O, E>>, outcome: BatchOutcome<O, E>) {
        let expected = replies.len();
        // Each way of ending counts its callers in its own figure.
        let stats = &mut self.books.stats;
        stats.answered += expected as u64;
        match outcome {
            Ended::Returned(Ok(mut outputs)) if outputs.len() == expected => {
                stats.answered_ok += expected as u64;
                if expected == 1 {
                    // A batch of one (every batch when keys outnumber the
                    // inputs in flight): no drains to set up and close.
                    let Some(output) = outputs.pop() else {
                        unreachable!("one output")
                    };
                    let Some(reply) = replies.pop() else {
                        unreachable!("one reply")
                    };
                    self.resolve(&reply);
                    reply.send(Ok(output));
                } else {
                    for (reply, output) in replies.drain(..).zip(outputs.drain(..)) {
                        self.resolve(&reply);
                        reply.send(Ok(output));
                    }
                }
                self.keep_spare_inputs(outputs);
            }
            Ended::Returned(Ok(outputs)) => {
                stats.wrong_output_count += expected as u64;
                let got = outputs.len();
                self.answer_all(&mut replies, || FerryError::WrongOutputCount {
                    expected,
                    got,
                });
            }
            Ended::Returned(Err(err)) => {
                stats.failed += expected as u64;
                self.answer_all(&mut replies, || FerryError::Failed(err.clone()));
            }
            Ended::Panicked => {
                stats.panicked += expected as u64;
                self.answer_all(&mut replies, || FerryError::Panicked);
            }
        }
        debug_assert!(replies.is_empty(), "every reply is used (G4)");
        self.keep_spare_replies(replies);
    }

    /// Keeps an emptied replies vector for a later batch (up to a few).
    #[inline(always)]
    fn keep_spare_replies(&mut self, replies: Vec<Reply<I, O, E>>) {
        debug_assert!(replies.is_empty(), "every reply is used (G4)");
        self.books.replies_out = self.books.replies_out.saturating_sub(1);
        if self.books.spare_replies.len() < self.books.spares_max {
            self.books.spare_replies.push(replies);
        }
    }

    /// `reply` is being answered: its flush generation is resolved (the
    /// flushes it completes are told later in the round, see
    /// `take_flushed`), and a task of this thread waking up is noted.
    #[inline]
    fn resolve(&mut self, reply: &Reply<I, O, E>) {
        self.woke_local |= reply.is_local();
        self.resolved(reply.generation);
    }

    /// Answers every caller in `replies` with an error made by `error`.
    fn answer_all(
        &mut self,
        replies: &mut Vec<Reply<I, O, E>>,
        mut error: impl FnMut() -> FerryError<I, E>,
    ) {
        for reply in replies.drain(..) {
            self.resolve(&reply);
            reply.send(Err(error()));
        }
    }

    /// Keeps the emptied `outputs` of a batch as the next batch's inputs
    /// vector, if it can serve as one (see `spare_inputs_of`) and room is
    /// left among the spares.
    fn keep_spare_inputs(&mut self, outputs: Vec<O>) {
        if self.books.spare_inputs.len() >= self.books.spares_max
            || outputs.capacity() > self.books.spare_inputs_room_max
        {
            return;
        }
        let inputs = spare_inputs_of::<O, I>(outputs);
        if inputs.capacity() > 0 {
            self.books.spare_inputs.push(inputs);
        }
    }

    /// The shard stops for good (its thread is dying): every input still
    /// waiting is refused `Closed`, handed back to its caller, never sent.
    /// Batches in flight are not touched; their callers learn `Aborted`
    /// when the batches are dropped.
    pub fn refuse_waiting(&mut self) {
        for (input, reply) in self.queue.drain_waiting() {
            self.books
                .observer
                .refused(&mut self.books.stats, Refused::Closed);
            self.books.stats.admitted -= 1;
            self.resolved(reply.generation);
            reply.send(Err(FerryError::Refused {
                input,
                reason: Refused::Closed,
            }));
        }
    }

    /// Admits nothing more; everything waiting becomes ready (G9).
    pub fn close(&mut self) {
        self.queue.close();
    }

    /// A time no later than when the next waiting lane becomes due, if a
    /// lane waits and a slot is free to send it, or when the next waiting
    /// input expires. With every slot busy, the next completion comes first
    /// and is the thing to wait for, unless an input expires before.
    pub fn next_deadline(&mut self) -> Option<Duration> {
        if self.in_flight >= self.max_in_flight_batches {
            return self.queue.next_expiry();
        }
        self.queue.next_deadline()
    }

    /// Whether a slot is free and a lane is ready (deadlines aside). Only
    /// the simulations' checks ask; the loop takes what `dispatch` gives.
    #[cfg(feature = "internals")]
    pub fn can_dispatch(&self) -> bool {
        self.in_flight < self.max_in_flight_batches && self.queue.has_ready()
    }

    /// Nothing waits and no batch is in flight.
    pub fn is_quiet(&self) -> bool {
        self.queue.is_drained() && self.in_flight == 0
    }

    /// Batches in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// The queue (read only), for gauges and tests.
    pub fn queue(&self) -> &Q {
        &self.queue
    }

    /// The counts the driver keeps itself (times it dozed and parked).
    pub fn stats_mut(&mut self) -> &mut ShardStats {
        &mut self.books.stats
    }

    /// The shard's recorder (distributions, outcomes, refusals).
    pub(crate) fn observer_mut(&mut self) -> &mut Observer {
        &mut self.books.observer
    }

    /// Whether an answer went to a task on this shard's thread since the
    /// last call: that task is now ready to run, and the driver should give
    /// the thread to the executor soon rather than keep it.
    pub fn take_woke_local(&mut self) -> bool {
        std::mem::take(&mut self.woke_local)
    }

    /// Current gauges and counters (`intake` left at 0).
    pub fn stats(&self) -> ShardStats {
        ShardStats {
            lanes: self.queue.lanes() as u64,
            admitted_late: self.queue.admitted_late(),
            waiting: self.queue.waiting() as u64,
            waiting_weight: self.queue.waiting_weight(),
            in_flight: self.in_flight as u64,
            longest_lane: self.queue.longest_lane() as u64,
            ..self.books.stats
        }
    }
}

/// An empty vector of inputs, in the memory of the empty `outputs` when an
/// input and an output have the same size and alignment (the standard
/// library's in-place collection reuses it then: nothing is allocated or
/// freed); otherwise `outputs` is freed and the vector has no room. A
/// batch function that hands back its inputs' vector, or maps it into
/// outputs of the same layout, then costs its shard no allocation a batch.
fn spare_inputs_of<O, I>(outputs: Vec<O>) -> Vec<I> {
    debug_assert!(outputs.is_empty());
    outputs.into_iter().filter_map(|_| None).collect()
}

#[cfg(test)]
mod tests {
    use super::spare_inputs_of;

    #[test]
    fn outputs_of_the_inputs_layout_become_the_next_inputs_vector_in_place() {
        let mut outputs: Vec<u64> = Vec::with_capacity(8);
        outputs.push(1);
        outputs.clear();
        let memory = outputs.as_ptr() as usize;
        let inputs: Vec<i64> = spare_inputs_of(outputs);
        assert_eq!((inputs.capacity(), inputs.as_ptr() as usize), (8, memory));
    }

    #[test]
    fn outputs_of_another_layout_are_freed_and_leave_no_room() {
        let outputs: Vec<u32> = Vec::with_capacity(8);
        assert_eq!(spare_inputs_of::<u32, u64>(outputs).capacity(), 0);
        let outputs: Vec<(u32, u32)> = Vec::with_capacity(8);
        assert_eq!(spare_inputs_of::<(u32, u32), u64>(outputs).capacity(), 0);
    }
}
