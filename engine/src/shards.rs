//! What `Engine` and `Batcher` share: the running shards of one
//! discipline, with the caller-side measure of an input, start, close,
//! join and stats.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

use ferry_shard::parts::{Queue, Waiter};
use ferry_shard::{BatchFn, FerryError, Order, Refused, Shard, ShardConfig, ShardId};

use crate::config::{Plan, StartError, Weigh};
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

/// The running shards of one engine or batcher.
pub(crate) struct Shards<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
{
    pub(crate) list: Vec<Shard<Q, I, O, E>>,
    order: Order<I>,
    weigh: Option<Weigh<I>>,
    max_batch_weight: u64,
    /// How long `submit_blocking` looks for its outcome before it parks.
    pub(crate) spin_before_park: Duration,
    threads: Vec<ThreadId>,
}

impl<Q, I, O, E> Shards<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>> + 'static,
    Q::Key: Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// Starts every shard and waits until each runs its loop. All or
    /// nothing: if one cannot start, those already running are closed and
    /// joined before the error is returned.
    pub(crate) fn start<F, B>(plan: Plan<I>, factory: F) -> Result<Self, StartError>
    where
        F: Fn(ShardId) -> B + Send + Sync + 'static,
        B: BatchFn<Q::Key, I, O, E> + 'static,
    {
        let factory = Arc::new(factory);
        let engine = ENGINE_IDS.fetch_add(1, Relaxed);
        let mut list = Vec::with_capacity(plan.cpus.len());
        let mut starting = Vec::with_capacity(plan.cpus.len());
        let mut failure = None;
        for (index, cpu) in plan.cpus.iter().copied().enumerate() {
            let config = plan.shard_config(ShardId::new(index), engine, cpu);
            match Shard::start(config, Arc::clone(&factory)) {
                Ok((shard, started)) => {
                    list.push(shard);
                    starting.push(started);
                }
                Err(source) => {
                    let shard = ShardId::new(index);
                    failure = Some(StartError::Spawn { shard, source });
                    break;
                }
            }
        }
        for (shard, started) in list.iter().zip(starting) {
            if let Err(reason) = started.wait() {
                failure.get_or_insert(StartError::Runtime {
                    shard: shard.id(),
                    reason,
                });
            }
        }
        let shards = Self {
            threads: list.iter().map(Shard::thread).collect(),
            list,
            order: plan.order,
            weigh: plan.weigh,
            max_batch_weight: plan.lanes.max_batch_weight,
            spin_before_park: plan.spin_before_park,
        };
        match failure {
            // Dropping closes and joins whatever did start.
            Some(err) => Err(err),
            None => Ok(shards),
        }
    }

    /// Hands `input` to shard `index`: measured here, on the caller's
    /// thread, then pushed into the shard's intake.
    pub(crate) fn submit(&self, index: usize, hash: u64, key: Q::Key, input: I) -> Submit<I, O, E> {
        let shard = &self.list[index];
        let (rank, weight) = match self.measure(&input) {
            Ok(measured) => measured,
            Err(reason) => {
                shard.count_refused();
                return Submit::refused(input, reason);
            }
        };
        match shard.submit(hash, key, input, rank, weight) {
            Ok(answer) => Submit::waiting(answer),
            Err(refusal) => Submit::refused(refusal.item, refusal.reason),
        }
    }
}

impl<Q, I, O, E> Shards<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
{
    /// The input's rank and weight, computed on the caller's thread; refused
    /// `TooHeavy` if no batch could ever carry it.
    pub(crate) fn measure(&self, input: &I) -> Result<(i64, u64), Refused> {
        let rank = self.order.rank(input);
        let weight = self.weigh.as_ref().map_or(1, |weigh| weigh(input));
        if weight > self.max_batch_weight {
            Err(Refused::TooHeavy)
        } else {
            Ok((rank, weight))
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

    /// Waits for every shard's thread but the caller's own.
    pub(crate) fn join(&self) {
        for shard in &self.list {
            shard.join();
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        Stats {
            shards: self.list.iter().map(Shard::stats).collect(),
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
    ) -> ShardConfig {
        ShardConfig {
            id,
            engine,
            cpu,
            lanes: self.lanes.clone(),
            max_in_flight_batches: self.max_in_flight_batches,
            intake_capacity: self.intake_capacity,
            spin_before_park: self.spin_before_park,
            doze_before_park: self.doze_before_park,
        }
    }
}
