//! The engine handle: submit from any thread, read stats, close, join.

use std::future::Future;
use std::sync::Arc;

use ferry_shard::{KeyedShard, Outcome, Refused, ShardId};

use crate::config::{Builder, Plan, StartError};
use crate::route::route;
use crate::shards::{block_on_submit, KeyedShards, Shards};
use crate::stats::Stats;
use crate::submit::{LocalSubmit, Submit};

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
pub struct Engine<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone,
{
    inner: Arc<KeyedShards<K, I, O, E>>,
}

impl<K, I, O, E> Clone for Engine<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone,
{
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K, I, O, E> std::fmt::Debug for Engine<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("shards", &self.inner.list.len())
            .field("closed", &self.inner.is_closed())
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
        B: ferry_shard::BatchFn<K, I, O, E> + 'static,
    {
        let inner = Shards::start(plan, factory)?;
        Ok(Self {
            inner: Arc::new(inner),
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
        let (index, hash) = route(&key, self.inner.list.len());
        self.inner.submit(index, hash, key, input)
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
        let (index, hash) = route(&key, inner.list.len());
        let shard: &KeyedShard<K, I, O, E> = &inner.list[index];
        let (rank, weight) = match inner.measure(&input) {
            Ok(measured) => measured,
            Err(reason) => {
                shard.count_refused();
                return LocalSubmit::remote(Submit::refused(input, reason));
            }
        };
        match shard.submit_local(hash, key, input, rank, weight) {
            Ok(answer) => LocalSubmit::local(answer),
            Err((key, input)) => LocalSubmit::remote(inner.submit(index, hash, key, input)),
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
        let shards = &self.inner.list;
        assert!(
            shard.index() < shards.len(),
            "{shard} is not a shard of this engine (it has {})",
            shards.len()
        );
        shards[shard.index()].spawn(Box::new(move || Box::pin(task())))
    }

    /// [`submit`](Self::submit) and block the calling thread until the
    /// outcome. For plain threads; do not call it on an async executor's
    /// thread (or on a shard), where blocking stalls other work.
    ///
    /// The thread first looks for the outcome for up to the engine's
    /// `spin_before_park`, yielding its CPU between looks, and only then
    /// parks: an answer that comes quickly needs no wake-up.
    pub fn submit_blocking(&self, key: K, input: I) -> Outcome<I, O, E> {
        block_on_submit(self.submit(key, input), self.inner.spin_before_park)
    }

    /// Gauges and counters of every shard, read without locks.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.inner.list.len()
    }

    /// The shard that owns `key`.
    pub fn shard_of(&self, key: &K) -> ShardId {
        ShardId::new(route(key, self.inner.list.len()).0)
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
        self.inner.is_closed()
    }

    /// Blocks until every shard has drained and exited. Call
    /// [`close`](Self::close) first, or it waits for a close from elsewhere.
    /// Called on one of the engine's own shards, it skips that shard.
    pub fn join(&self) {
        self.inner.join();
    }
}
