//! What `Engine` and `Batcher` share: the running shards of one
//! discipline, with the caller-side measure of an input, start, close,
//! join and stats.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::thread::ThreadId;
use std::time::Duration;

use ferry_shard::parts::{Queue, Waiter};
use ferry_shard::{
    Bundle, FerryError, Offer, Order, Outcomes, QueueConfig, Refused, Runtime, Shard, ShardConfig,
    ShardId, Starting,
};

use crate::config::{Boundary, Plan, Weigh};
use crate::flush::Flush;
use crate::start_error::StartError;
use crate::stats::Stats;
use crate::submit::Submit;

/// Gives each engine a distinct identity, so a task on a shard can tell its
/// own engine's shards from another engine's.
static ENGINE_IDS: AtomicUsize = AtomicUsize::new(1);

/// An engine's shards: one lane per key on each.
pub(crate) type KeyedShards<K, I, O, E> =
    Shards<ferry_shard::parts::Lanes<K, Waiter<I, O, E>>, I, O, E>;

/// A batcher's shards: one stream on each.
pub(crate) type UnkeyedShards<I, O, E> = Shards<ferry_shard::parts::Fifo<Waiter<I, O, E>>, I, O, E>;

/// Shards as they are started, in order.
type ShardList<Q, I, O, E> = Vec<Shard<Q, I, O, E>>;

/// What starting one shard gives: its handle and its start to wait for
/// (`Shard::start` with a batch function, `Shard::start_trips` with a trip
/// function).
pub(crate) type Started<Q, I, O, E, FE> = std::io::Result<(Shard<Q, I, O, E>, Starting<FE>)>;

/// The running shards of one engine or batcher.
pub(crate) struct Shards<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
{
    pub(crate) list: Vec<Shard<Q, I, O, E>>,
    order: Order<I>,
    weigh: Option<Weigh<I>>,
    boundary: Option<Boundary<I>>,
    /// The shards' bounds, for the caller-side `TooHeavy` test.
    bounds: QueueConfig,
    /// How long `submit_blocking` looks for its outcome before it parks.
    pub(crate) spin_before_park: Duration,
    threads: Vec<ThreadId>,
    /// The runtime the shards run on (`Glommio` or `Tokio`).
    runtime: Runtime,
    /// Why `Runtime::Auto` chose tokio: what refused glommio here.
    why_not_glommio: Option<String>,
}

impl<Q, I, O, E> Shards<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>> + 'static,
    Q::Key: Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// Starts every shard on the runtime the plan asks for and waits until
    /// each runs its loop with its batch function. All or nothing: if one
    /// cannot start, those already running are closed and joined before
    /// the error is returned. With `Runtime::Auto`, a glommio that fails
    /// as its shards start (a seccomp profile refusing io_uring cannot be
    /// seen before) is given up for tokio.
    pub(crate) fn start<S, FE>(plan: Plan<I>, start_one: S) -> Result<Self, StartError<FE>>
    where
        S: Fn(ShardConfig) -> Started<Q, I, O, E, FE>,
    {
        let first = ShardId::new(0);
        let (runtime, why_not_glommio) = plan
            .shard
            .runtime
            .choose_saying_why(plan.cpus.len())
            .map_err(|reason| StartError::Runtime {
                shard: first,
                reason,
            })?;
        let (list, runtime, why_not_glommio) = match Self::start_on(&plan, runtime, &start_one) {
            Err(StartError::Runtime { reason, .. })
                if plan.shard.runtime == Runtime::Auto && runtime == Runtime::Glommio =>
            {
                (
                    Self::start_on(&plan, Runtime::Tokio, &start_one)?,
                    Runtime::Tokio,
                    Some(reason),
                )
            }
            started => (started?, runtime, why_not_glommio),
        };
        Ok(Self {
            threads: list.iter().map(Shard::thread).collect(),
            list,
            runtime,
            why_not_glommio,
            order: plan.order,
            weigh: plan.weigh,
            boundary: plan.boundary,
            bounds: plan.shard.queue.clone(),
            spin_before_park: plan.shard.spin_before_park,
        })
    }

    /// Starts every shard on `runtime`; on the first failure, stops them
    /// all (dropping the handles closes and joins) and says why.
    fn start_on<S, FE>(
        plan: &Plan<I>,
        runtime: Runtime,
        start_one: &S,
    ) -> Result<ShardList<Q, I, O, E>, StartError<FE>>
    where
        S: Fn(ShardConfig) -> Started<Q, I, O, E, FE>,
    {
        let engine = ENGINE_IDS.fetch_add(1, Relaxed);
        let mut list = Vec::with_capacity(plan.cpus.len());
        let mut starting = Vec::with_capacity(plan.cpus.len());
        let mut failure = None;
        for (index, cpu) in plan.cpus.iter().copied().enumerate() {
            let shard = ShardId::new(index);
            let config = plan.shard_config(shard, engine, cpu, runtime);
            match start_one(config) {
                Ok((started, ready)) => {
                    list.push(started);
                    starting.push(ready);
                }
                Err(source) => {
                    failure = Some(StartError::Spawn { shard, source });
                    break;
                }
            }
        }
        for (shard, ready) in list.iter().zip(starting) {
            if let Err(why) = ready.wait() {
                failure.get_or_insert(StartError::of_shard(shard.id(), why));
            }
        }
        match failure {
            Some(err) => {
                stop(&list);
                Err(err)
            }
            None => Ok(list),
        }
    }

    /// Hands many inputs over, routed by `place` (which gives each input's
    /// shard index, hash and key), with one push and at most one wake-up
    /// per shard; each input is measured, bounded and refused on its own.
    /// Their outcomes come through the one stream returned, indexed by the
    /// inputs' order.
    pub(crate) fn submit_many<T>(
        &self,
        items: impl IntoIterator<Item = T>,
        mut place: impl FnMut(T) -> (usize, u64, Q::Key, I),
    ) -> Outcomes<I, O, E> {
        let items = items.into_iter();
        let expected = items.size_hint().0;
        let mut outcomes = Outcomes::with_capacity(expected);
        // Room for a fair share and a quarter, so that a share rarely grows
        // while it is filled.
        let share = expected / self.list.len();
        let mut bundles: Vec<Bundle<Q::Key, I, O, E>> = self
            .list
            .iter()
            .map(|_| Bundle::with_capacity(share + share / 4))
            .collect();
        for item in items {
            let (index, hash, key, input) = place(item);
            match self.measure(&input) {
                Ok((rank, boundary, weight)) => {
                    bundles[index].add(
                        &mut outcomes,
                        Offer::new(hash, key, input, rank, weight).bounded(boundary),
                    );
                }
                Err(reason) => {
                    self.list[index].count_refused();
                    outcomes.refuse(input, reason);
                }
            }
        }
        for (shard, bundle) in self.list.iter().zip(bundles) {
            shard.submit_bundle(bundle);
        }
        outcomes
    }

    /// Hands `input` to shard `index`: measured here, on the caller's
    /// thread, then pushed into the shard's intake.
    pub(crate) fn submit(&self, index: usize, hash: u64, key: Q::Key, input: I) -> Submit<I, O, E> {
        let shard = &self.list[index];
        let (rank, boundary, weight) = match self.measure(&input) {
            Ok(measured) => measured,
            Err(reason) => {
                shard.count_refused();
                return Submit::refused(input, reason);
            }
        };
        match shard.submit(Offer::new(hash, key, input, rank, weight).bounded(boundary)) {
            Ok(answer) => Submit::waiting(answer),
            Err(refusal) => Submit::refused(refusal.item, refusal.reason),
        }
    }

    /// Resolves once every input admitted before the call, on every shard,
    /// is resolved.
    pub(crate) fn flush(&self) -> Flush {
        Flush::new(self.list.iter().map(Shard::flush).collect())
    }
}

impl<Q, I, O, E> Shards<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
{
    /// The input's rank, boundary value (0 without a boundary) and weight,
    /// computed on the caller's thread; refused `TooHeavy` if no batch could
    /// ever carry it.
    pub(crate) fn measure(&self, input: &I) -> Result<(i64, i64, u64), Refused> {
        let rank = self.order.rank(input);
        let boundary = self.boundary.as_ref().map_or(0, |boundary| boundary(input));
        let weight = self.weigh.as_ref().map_or(1, |weigh| weigh(input));
        if self.bounds.is_too_heavy(weight) {
            Err(Refused::TooHeavy)
        } else {
            Ok((rank, boundary, weight))
        }
    }

    /// Refuses new input on every shard; each drains and exits (G9).
    pub(crate) fn close(&self) {
        for shard in &self.list {
            shard.close();
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.list.iter().all(Shard::is_closed)
    }

    /// The runtime the shards run on.
    pub(crate) fn runtime(&self) -> Runtime {
        self.runtime
    }

    /// Why `Runtime::Auto` chose tokio, if it did.
    pub(crate) fn runtime_reason(&self) -> Option<&str> {
        self.why_not_glommio.as_deref()
    }

    /// Waits for every shard's thread but the caller's own.
    pub(crate) fn join(&self) {
        for shard in &self.list {
            shard.join();
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let (shards, distributions) = self
            .list
            .iter()
            .map(Shard::stats_with_distributions)
            .unzip();
        Stats {
            shards,
            distributions,
        }
    }
}

impl<Q, I, O, E> Drop for Shards<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
{
    /// The last handle closes and joins (unless it is dropped on one of the
    /// shards, which cannot wait for itself).
    fn drop(&mut self) {
        self.close();
        if !self.threads.contains(&std::thread::current().id()) {
            self.join();
        }
    }
}

/// Closes and joins shards that started, before an error is returned.
fn stop<Q, I, O, E>(list: &[Shard<Q, I, O, E>])
where
    Q: Queue<Waiter<I, O, E>>,
{
    for shard in list {
        shard.close();
    }
    for shard in list {
        shard.join();
    }
}

/// Blocks the calling thread until `submit` resolves: first looking for the
/// outcome for up to `spin`, yielding the CPU between looks, then parked.
pub(crate) fn block_on_submit<I, O, E>(
    mut submit: Submit<I, O, E>,
    spin: Duration,
) -> Result<O, FerryError<I, E>> {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    if !spin.is_zero() {
        let started = std::time::Instant::now();
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(outcome) = Pin::new(&mut submit).poll(&mut cx) {
                return outcome;
            }
            if started.elapsed() >= spin {
                break;
            }
            std::thread::yield_now();
        }
    }
    // Polled again by `block_on` with a waker that unparks this thread.
    futures::executor::block_on(submit)
}

/// A shard's config from the plan.
impl<I> Plan<I> {
    pub(crate) fn shard_config(
        &self,
        id: ShardId,
        engine: usize,
        cpu: Option<usize>,
        runtime: Runtime,
    ) -> ShardConfig {
        ShardConfig {
            id,
            engine,
            cpu,
            runtime,
            ..self.shard.clone()
        }
    }
}
