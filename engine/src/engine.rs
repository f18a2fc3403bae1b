//! The engine handle: submit from any thread, read stats, close, join.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use ferry_shard::{
    local_channel, spawn_shard, BatchFn, FerryError, Inbound, Intake, LocalReceiver, LocalShard,
    Order, Outcome, Refused, ShardConfig, ShardCore, ShardCounters, ShardId, Submission,
};
use futures::channel::oneshot;

/// Gives each engine a distinct identity, so a task on a shard can tell its
/// own engine's shards from another engine's.
static ENGINE_IDS: AtomicUsize = AtomicUsize::new(1);

use crate::config::{Builder, Plan, StartError, Weigh};
use crate::route::route;
use crate::stats::Stats;

/// A running Ferry engine: a cheap, cloneable handle (`Clone + Send + Sync`).
///
/// Dropping the last handle closes the engine and waits for its shards to
/// drain and exit (unless it is dropped on one of its own shards, which
/// cannot wait for itself).
///
/// ```
/// use ferry::{Engine, FerryError, Refused};
///
/// let engine: Engine<String, u32, u32, String> = Engine::builder()
///     .shards(2)
///     .pin(false)
///     .start(|_shard| |_key: String, inputs: Vec<u32>| async move {
///         Ok::<_, String>(inputs.iter().map(|x| x + 1).collect())
///     })
///     .unwrap();
///
/// assert_eq!(engine.submit_blocking("a".to_string(), 41), Ok(42));
///
/// engine.close();
/// match engine.submit_blocking("a".to_string(), 7) {
///     Err(FerryError::Refused { input, reason: Refused::Closed }) => assert_eq!(input, 7),
///     other => panic!("{other:?}"),
/// }
/// engine.join();
/// ```
pub struct Engine<K, I, O, E> {
    inner: Arc<Inner<K, I, O, E>>,
}

struct Shard<K, I, O, E> {
    intake: Arc<Intake<Inbound<K, I, O, E>>>,
    counters: Arc<ShardCounters>,
}

struct Inner<K, I, O, E> {
    id: usize,
    shards: Vec<Shard<K, I, O, E>>,
    order: Order<I>,
    weigh: Option<Weigh<I>>,
    max_batch_weight: u64,
    /// How long `submit_blocking` looks for its outcome before it parks.
    spin_before_park: Duration,
    threads: Vec<ThreadId>,
    joins: Mutex<Vec<glommio::ExecutorJoinHandle<()>>>,
}

impl<K, I, O, E> Clone for Engine<K, I, O, E> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K, I, O, E> std::fmt::Debug for Engine<K, I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("shards", &self.inner.shards.len())
            .field(
                "closed",
                &self
                    .inner
                    .shards
                    .iter()
                    .all(|shard| shard.intake.is_closed()),
            )
            .finish()
    }
}

impl<K, I, O, E> Engine<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// A builder with the defaults of SPEC §3.
    pub fn builder() -> Builder<K, I, O, E> {
        Builder::default()
    }

    pub(crate) fn start<F, B>(plan: Plan<I>, factory: F) -> Result<Self, StartError>
    where
        F: Fn(ShardId) -> B + Send + Sync + 'static,
        B: BatchFn<K, I, O, E> + 'static,
    {
        let factory = Arc::new(factory);
        let engine_id = ENGINE_IDS.fetch_add(1, Relaxed);
        let mut shards = Vec::with_capacity(plan.cpus.len());
        let mut joins = Vec::with_capacity(plan.cpus.len());
        for (index, cpu) in plan.cpus.iter().copied().enumerate() {
            let id = ShardId::new(index);
            let shard = Shard {
                intake: Arc::new(Intake::new(plan.intake_capacity)),
                counters: Arc::new(ShardCounters::default()),
            };
            let config = ShardConfig {
                id,
                engine: engine_id,
                cpu,
                lanes: plan.lanes.clone(),
                max_in_flight_batches: plan.max_in_flight_batches,
                spin_before_park: plan.spin_before_park,
                doze_before_park: plan.doze_before_park,
            };
            let spawned = spawn_shard(
                config,
                Arc::clone(&shard.intake),
                Arc::clone(&shard.counters),
                Arc::clone(&factory),
            );
            match spawned {
                Ok(join) => joins.push(join),
                Err(source) => {
                    // Stop the shards already running before reporting.
                    for started in &shards {
                        let started: &Shard<K, I, O, E> = started;
                        started.intake.close();
                    }
                    for join in joins {
                        let _ = join.join();
                    }
                    return Err(StartError::Spawn { shard: id, source });
                }
            }
            shards.push(shard);
        }
        let threads = joins.iter().map(|join| join.thread().id()).collect();
        Ok(Self {
            inner: Arc::new(Inner {
                id: engine_id,
                shards,
                order: plan.order,
                weigh: plan.weigh,
                max_batch_weight: plan.lanes.max_batch_weight,
                spin_before_park: plan.spin_before_park,
                threads,
                joins: Mutex::new(joins),
            }),
        })
    }

    /// Submits `input` for `key` and returns a future of its own outcome.
    ///
    /// Callable from any thread; the future is `Send` and works on any
    /// executor. The key is hashed and the input ranked and weighed here, on
    /// the caller's thread. A refusal (`Full`, `TooHeavy`, `Closed`) is ready
    /// at once with the input inside. Dropping the future after admission
    /// does not withdraw the input: it is still sent, its output discarded.
    pub fn submit(&self, key: K, input: I) -> Submit<I, O, E> {
        let inner = &*self.inner;
        let (index, hash) = route(&key, inner.shards.len());
        let shard = &inner.shards[index];
        let (rank, weight) = match inner.measure(&input) {
            Ok(measured) => measured,
            Err(reason) => {
                shard.counters.count_refused_at_intake();
                return Submit::refused(input, reason);
            }
        };
        let (reply, answer) = oneshot::channel();
        let submission = Submission {
            hash,
            key,
            input,
            rank,
            weight,
            reply,
        };
        match shard.intake.push(Inbound::Submit(submission)) {
            Ok(()) => Submit {
                state: SubmitState::Waiting(answer),
            },
            Err(refusal) => {
                shard.counters.count_refused_at_intake();
                let Inbound::Submit(submission) = refusal.item else {
                    unreachable!("the intake hands back what it was given")
                };
                Submit::refused(submission.input, refusal.reason)
            }
        }
    }

    /// Like [`submit`](Self::submit), for tasks running on the engine's own
    /// shards (see [`spawn_on`](Self::spawn_on)): if `key` belongs to the
    /// shard this task runs on, the input is admitted directly — no queue,
    /// no channel, no atomic read-modify-write — and answered through a
    /// single-threaded slot. Otherwise it takes the ordinary path. The
    /// future is not `Send`: it stays on the thread that made it.
    ///
    /// ```
    /// use ferry::{Engine, ShardId};
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let (done, answer) = futures::channel::oneshot::channel();
    /// let on_shard = engine.clone();
    /// engine
    ///     .spawn_on(ShardId::new(0), move || async move {
    ///         let out = on_shard.submit_local(1, 10).await;
    ///         let _ = done.send(out);
    ///     })
    ///     .unwrap();
    /// assert_eq!(futures::executor::block_on(answer).unwrap(), Ok(10));
    /// ```
    pub fn submit_local(&self, key: K, input: I) -> LocalSubmit<I, O, E> {
        let inner = &*self.inner;
        let (index, hash) = route(&key, inner.shards.len());
        let here = LocalShard::with(|current| {
            current
                .filter(|shard| shard.engine == inner.id && shard.index == index)
                .cloned()
        });
        let Some(here) = here else {
            return LocalSubmit {
                state: LocalState::Remote(self.submit(key, input)),
            };
        };
        let Some(core) = here.core.downcast_ref::<RefCell<ShardCore<K, I, O, E>>>() else {
            unreachable!("a shard of this engine holds this engine's core type")
        };
        let Ok(mut core) = core.try_borrow_mut() else {
            // Only reachable from inside the shard loop's own call stack.
            return LocalSubmit {
                state: LocalState::Remote(self.submit(key, input)),
            };
        };
        let measured = if inner.shards[index].intake.is_closed() {
            Err(Refused::Closed)
        } else {
            inner.measure(&input)
        };
        let (rank, weight) = match measured {
            Ok(measured) => measured,
            Err(reason) => {
                inner.shards[index].counters.count_refused_at_intake();
                return LocalSubmit {
                    state: LocalState::Ready(Some(Err(FerryError::Refused { input, reason }))),
                };
            }
        };
        let (reply, answer) = local_channel();
        core.admit_local(hash, key, input, rank, weight, reply, here.origin.elapsed());
        drop(core);
        here.nudge.nudge();
        LocalSubmit {
            state: LocalState::Local(answer),
        }
    }

    /// Runs `task` on `shard`'s own thread, beside its loop, where
    /// [`submit_local`](Self::submit_local) reaches the shard directly. The
    /// closure is sent; the future it returns need not be `Send`. A panic in
    /// the task ends the task only.
    ///
    /// Refused (`Full` or `Closed`) like an input when the shard's intake
    /// cannot take it. A task still running when its shard exits (after
    /// close, once everything admitted is answered) is dropped there.
    ///
    /// # Panics
    /// If `shard` is not one of this engine's (`index() >= shards()`).
    pub fn spawn_on<F, Fut>(&self, shard: ShardId, task: F) -> Result<(), Refused>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let shards = &self.inner.shards;
        assert!(
            shard.index() < shards.len(),
            "{shard} is not a shard of this engine (it has {})",
            shards.len()
        );
        let task: ferry_shard::SpawnTask = Box::new(move || Box::pin(task()));
        shards[shard.index()]
            .intake
            .push(Inbound::Spawn(task))
            .map_err(|refusal| refusal.reason)
    }

    /// [`submit`](Self::submit) and block the calling thread until the
    /// outcome. For plain threads; do not call it on an async executor's
    /// thread (or on a shard), where blocking stalls other work.
    ///
    /// The thread first looks for the outcome for up to the engine's
    /// `spin_before_park`, yielding its CPU between looks, and only then
    /// parks: an answer that comes quickly needs no wake-up.
    pub fn submit_blocking(&self, key: K, input: I) -> Outcome<I, O, E> {
        let mut submit = self.submit(key, input);
        if !self.inner.spin_before_park.is_zero() {
            let started = Instant::now();
            let waker = futures::task::noop_waker();
            let mut cx = Context::from_waker(&waker);
            loop {
                if let Poll::Ready(outcome) = Pin::new(&mut submit).poll(&mut cx) {
                    return outcome;
                }
                if started.elapsed() >= self.inner.spin_before_park {
                    break;
                }
                std::thread::yield_now();
            }
        }
        // Polled again by `block_on` with a waker that unparks this thread.
        futures::executor::block_on(submit)
    }

    /// Gauges and counters of every shard, read without locks.
    pub fn stats(&self) -> Stats {
        Stats {
            shards: self
                .inner
                .shards
                .iter()
                .map(|shard| shard.counters.snapshot(shard.intake.len() as u64))
                .collect(),
        }
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.inner.shards.len()
    }

    /// The shard that owns `key`.
    pub fn shard_of(&self, key: &K) -> ShardId {
        ShardId::new(route(key, self.inner.shards.len()).0)
    }

    /// Closes the engine (G9): new inputs are refused with the input handed
    /// back; everything already admitted is still sent (delay ignored) and
    /// answered; then the shard threads exit. Returns at once; see
    /// [`join`](Self::join). Idempotent.
    pub fn close(&self) {
        self.inner.close();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner
            .shards
            .iter()
            .all(|shard| shard.intake.is_closed())
    }

    /// Blocks until every shard has drained and exited. Call
    /// [`close`](Self::close) first, or it waits for a close from elsewhere.
    /// Called on one of the engine's own shards, it skips that shard.
    pub fn join(&self) {
        self.inner.join();
    }
}

impl<K, I, O, E> Inner<K, I, O, E> {
    /// The input's rank and weight, computed on the caller's thread; refused
    /// `TooHeavy` if no batch could ever carry it.
    fn measure(&self, input: &I) -> Result<(i64, u64), Refused> {
        let rank = self.order.rank(input);
        let weight = self.weigh.as_ref().map_or(1, |weigh| weigh(input));
        if weight > self.max_batch_weight {
            Err(Refused::TooHeavy)
        } else {
            Ok((rank, weight))
        }
    }

    fn close(&self) {
        for shard in &self.shards {
            shard.intake.close();
        }
    }

    fn join(&self) {
        let current = std::thread::current().id();
        let joins = {
            let mut joins = self
                .joins
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            std::mem::take(&mut *joins)
        };
        let mut own = Vec::new();
        for join in joins {
            if join.thread().id() == current {
                own.push(join);
            } else {
                // A shard thread that panicked has already answered nothing
                // more; its callers see `Aborted`. Nothing to report here.
                let _ = join.join();
            }
        }
        if !own.is_empty() {
            let mut joins = self
                .joins
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            joins.extend(own);
        }
    }
}

impl<K, I, O, E> Drop for Inner<K, I, O, E> {
    fn drop(&mut self) {
        self.close();
        if !self.threads.contains(&std::thread::current().id()) {
            self.join();
        }
    }
}

/// The future of one input's outcome, returned by [`Engine::submit`].
/// `Send`, `Unpin`, and independent of the executor polling it.
#[must_use = "the outcome of the input is in this future (dropping it does not withdraw the input)"]
pub struct Submit<I, O, E> {
    state: SubmitState<I, O, E>,
}

enum SubmitState<I, O, E> {
    Ready(Option<Outcome<I, O, E>>),
    Waiting(oneshot::Receiver<Outcome<I, O, E>>),
}

impl<I, O, E> Submit<I, O, E> {
    fn refused(input: I, reason: Refused) -> Self {
        Self {
            state: SubmitState::Ready(Some(Err(FerryError::Refused { input, reason }))),
        }
    }
}

// Nothing in a `Submit` is pinned structurally: the outcome is moved out
// whole and the receiver is itself `Unpin`.
impl<I, O, E> Unpin for Submit<I, O, E> {}

impl<I, O, E> Future for Submit<I, O, E> {
    type Output = Outcome<I, O, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            SubmitState::Ready(outcome) => {
                Poll::Ready(outcome.take().expect("Submit polled after it completed"))
            }
            SubmitState::Waiting(answer) => match Pin::new(answer).poll(cx) {
                Poll::Ready(Ok(outcome)) => Poll::Ready(outcome),
                // The shard dropped the reply without answering: it stopped
                // (its thread died) with the input admitted.
                Poll::Ready(Err(oneshot::Canceled)) => Poll::Ready(Err(FerryError::Aborted)),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl<I, O, E> std::fmt::Debug for Submit<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            SubmitState::Ready(_) => "ready",
            SubmitState::Waiting(_) => "waiting",
        };
        f.debug_struct("Submit").field("state", &state).finish()
    }
}

/// The future of a [`Engine::submit_local`]: answered directly by the shard
/// it runs on, or through the ordinary path. Not `Send`.
#[must_use = "the outcome of the input is in this future (dropping it does not withdraw the input)"]
pub struct LocalSubmit<I, O, E> {
    state: LocalState<I, O, E>,
}

enum LocalState<I, O, E> {
    Ready(Option<Outcome<I, O, E>>),
    Local(LocalReceiver<Outcome<I, O, E>>),
    Remote(Submit<I, O, E>),
}

// As for `Submit`: nothing inside is pinned structurally.
impl<I, O, E> Unpin for LocalSubmit<I, O, E> {}

impl<I, O, E> Future for LocalSubmit<I, O, E> {
    type Output = Outcome<I, O, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            LocalState::Ready(outcome) => Poll::Ready(
                outcome
                    .take()
                    .expect("LocalSubmit polled after it completed"),
            ),
            LocalState::Local(answer) => match Pin::new(answer).poll(cx) {
                Poll::Ready(Some(outcome)) => Poll::Ready(outcome),
                Poll::Ready(None) => Poll::Ready(Err(FerryError::Aborted)),
                Poll::Pending => Poll::Pending,
            },
            LocalState::Remote(submit) => Pin::new(submit).poll(cx),
        }
    }
}

impl<I, O, E> std::fmt::Debug for LocalSubmit<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            LocalState::Ready(_) => "ready",
            LocalState::Local(_) => "local",
            LocalState::Remote(_) => "remote",
        };
        f.debug_struct("LocalSubmit")
            .field("state", &state)
            .finish()
    }
}
