//! What one slot carries to the user's function in one call: one key's
//! batch ([`PerBatch`], over a [`BatchFn`]), or a trip of several keys'
//! batches ([`PerTrip`], over a [`TripFn`]).
//!
//! The shard loop is generic over [`Carry`]: it takes a load out of the
//! core, calls the user's function with it outside any borrow of the core
//! (the function may submit to its own shard), runs the future, and when
//! it ends releases what the load held, then answers its callers. Each way
//! compiles to a loop of its own, so a batch function pays nothing for
//! trips.
//!
//! Invariant: a load takes one slot, from `take` to `release`; each of its
//! lanes is busy for that whole time (G1), and each of its inputs is
//! answered exactly once, by `answer` (G4).

use std::future::Future;

use crate::core::ended::{BatchOutcome, Ended, TripOutcome};
use crate::core::shard_core::{Reply, ShardCore, TripHeld, TripLimits, Waiter};
use crate::core::trace;
use crate::queue::seam::Queue;
use crate::value::batch_fn::BatchFn;
use crate::value::nanos::Nanos;
use crate::value::trip_fn::TripFn;

/// How a shard's slot is filled and emptied: one batch per call, or one
/// trip. See the module docs.
pub(crate) trait Carry<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
{
    /// What the user's function is called with.
    type Load;
    /// What the loop keeps of a load in flight: its tickets and replies.
    type Held;
    /// What the user's function's future gives.
    type Output;
    /// The user's function's future.
    type Future: Future<Output = Self::Output>;

    /// Takes the next load at `now` into a free slot, if one is free and a
    /// lane is ready.
    fn take(
        &self,
        core: &mut ShardCore<Q, I, O, E>,
        now: Nanos,
    ) -> Option<(Self::Load, Self::Held)>;

    /// Calls the user's function with `load`.
    fn call(&self, load: Self::Load) -> Self::Future;

    /// The load started at `started` ended at `now`: its lanes and slot are
    /// free again, and its time is recorded.
    fn release(core: &mut ShardCore<Q, I, O, E>, held: &Self::Held, started: Nanos, now: Nanos);

    /// Answers every caller of the load, once, with how it ended.
    fn answer(core: &mut ShardCore<Q, I, O, E>, held: Self::Held, ended: Ended<Self::Output>);

    /// [`release`](Carry::release) and [`answer`](Carry::answer) at once,
    /// for a load that ended as it started.
    fn complete(
        core: &mut ShardCore<Q, I, O, E>,
        held: Self::Held,
        ended: Ended<Self::Output>,
        started: Nanos,
        now: Nanos,
    ) {
        Self::release(core, &held, started, now);
        Self::answer(core, held, ended);
    }

    /// The fault events of a load that ended as `ended` (feature
    /// `tracing`; called inside its span).
    fn fault(held: &Self::Held, ended: &Ended<Self::Output>);

    /// The batches and inputs of a load, for its trip's span (`None` for a
    /// batch, whose span the core describes).
    fn trip_size(held: &Self::Held) -> Option<(usize, usize)>;
}

/// One batch per call of a [`BatchFn`].
#[derive(Debug)]
pub(crate) struct PerBatch<B>(pub(crate) B);

/// One trip per call of a [`TripFn`], within its limits.
#[derive(Debug)]
pub(crate) struct PerTrip<T> {
    /// The trip function.
    pub(crate) trip_fn: T,
    /// How many batches, and how much weight, one trip carries at most.
    pub(crate) limits: TripLimits,
}

impl<Q, I, O, E, B> Carry<Q, I, O, E> for PerBatch<B>
where
    Q: Queue<Waiter<I, O, E>>,
    E: Clone,
    B: BatchFn<Q::Key, I, O, E>,
{
    type Load = (Q::Key, Vec<I>);
    type Held = (Q::Ticket, Vec<Reply<I, O, E>>);
    type Output = Result<Vec<O>, E>;
    type Future = B::Future;

    #[inline(always)]
    fn take(
        &self,
        core: &mut ShardCore<Q, I, O, E>,
        now: Nanos,
    ) -> Option<(Self::Load, Self::Held)> {
        let dispatch = core.dispatch(now)?;
        Some((
            (dispatch.key, dispatch.inputs),
            (dispatch.ticket, dispatch.replies),
        ))
    }

    #[inline(always)]
    fn call(&self, (key, inputs): Self::Load) -> B::Future {
        self.0.call(key, inputs)
    }

    #[inline(always)]
    fn release(
        core: &mut ShardCore<Q, I, O, E>,
        (ticket, _): &Self::Held,
        started: Nanos,
        now: Nanos,
    ) {
        core.observer_mut().batch_done(started, now);
        core.release(*ticket, now);
    }

    #[inline(always)]
    fn answer(
        core: &mut ShardCore<Q, I, O, E>,
        (_, replies): Self::Held,
        ended: BatchOutcome<O, E>,
    ) {
        core.answer(replies, ended);
    }

    #[inline(always)]
    fn complete(
        core: &mut ShardCore<Q, I, O, E>,
        (ticket, replies): Self::Held,
        ended: BatchOutcome<O, E>,
        started: Nanos,
        now: Nanos,
    ) {
        core.observer_mut().batch_done(started, now);
        core.complete(ticket, replies, ended, now);
    }

    #[inline(always)]
    fn fault((_, replies): &Self::Held, ended: &BatchOutcome<O, E>) {
        trace::fault(ended, replies.len());
    }

    #[inline(always)]
    fn trip_size(_: &Self::Held) -> Option<(usize, usize)> {
        None
    }
}

impl<Q, I, O, E, T> Carry<Q, I, O, E> for PerTrip<T>
where
    Q: Queue<Waiter<I, O, E>>,
    E: Clone,
    T: TripFn<Q::Key, I, O, E>,
{
    type Load = Vec<(Q::Key, Vec<I>)>;
    type Held = TripHeld<Q::Ticket, I, O, E>;
    type Output = Vec<Result<Vec<O>, E>>;
    type Future = T::Future;

    fn take(
        &self,
        core: &mut ShardCore<Q, I, O, E>,
        now: Nanos,
    ) -> Option<(Self::Load, Self::Held)> {
        core.dispatch_trip(now, self.limits)
    }

    fn call(&self, trip: Self::Load) -> T::Future {
        self.trip_fn.call(trip)
    }

    fn release(core: &mut ShardCore<Q, I, O, E>, held: &Self::Held, started: Nanos, now: Nanos) {
        core.observer_mut().trip_done(held.len(), started, now);
        core.release_trip(held.iter().map(|(ticket, _)| ticket), now);
    }

    fn answer(core: &mut ShardCore<Q, I, O, E>, held: Self::Held, ended: TripOutcome<O, E>) {
        core.answer_trip(held, ended);
    }

    fn fault(held: &Self::Held, ended: &TripOutcome<O, E>) {
        trace::trip_fault(held.iter().map(|(_, replies)| replies.len()), ended);
    }

    fn trip_size(held: &Self::Held) -> Option<(usize, usize)> {
        let inputs = held.iter().map(|(_, replies)| replies.len()).sum();
        Some((held.len(), inputs))
    }
}
