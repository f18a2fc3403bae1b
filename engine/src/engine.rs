//! The engine handle: submit from any thread, read stats, close, join.

use std::future::Future;
use std::sync::Arc;

use ferry_shard::parts::{Lanes, Waiter};
use ferry_shard::{Offer, Outcome, Refused, Runtime, ShardConfig, ShardId};

use crate::config::{Builder, Plan};
use crate::flush::Flush;
use crate::outcomes::Outcomes;
use crate::route::route;
use crate::shards::{block_on_submit, KeyedShards, Shards, Started};
use crate::start_error::StartError;
use crate::stats::Stats;
use crate::submit::{LocalSubmit, Submit};

/// A running Ferry engine: a cheap, cloneable handle (`Clone + Send + Sync`).
///
/// Dropping the last handle closes the engine and waits for its shards to
/// drain and exit (unless it is dropped on one of its own shards, which
/// cannot wait for itself).
///
/// # In an async task
///
/// That wait blocks the dropping thread, as [`join`](Self::join) does:
/// dropped in a tokio task while a batch runs, the last handle holds the
/// task's worker thread until every batch in flight has ended (a store's
/// round trip, or as long as the batch function takes). In async code,
/// close and await the drain first; the drop then only waits for threads
/// already on their way out:
///
/// ```
/// use ferry::Engine;
///
/// let engine: Engine<u64, u64, u64, String> = Engine::builder()
///     .shards(1)
///     .pin(false)
///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
///     .unwrap();
/// let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// runtime.block_on(async move {
///     let answer = engine.submit(1, 10);
///     engine.close();
///     engine.flush().await; // every input admitted is answered; no thread blocked
///     drop(engine); // the shards are exiting: a short join
///     assert_eq!(answer.await, Ok(10));
/// });
/// ```
///
/// (Or hand the last handle to `tokio::task::spawn_blocking`.)
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
    /// A builder with every setting at its default (docs/guarantees.md#settings).
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u32, u32, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_shard| |_key: u64, inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(1, 5), Ok(5));
    /// ```
    pub fn builder() -> Builder<K, I, O, E> {
        Builder::default()
    }

    pub(crate) fn start<S, FE>(plan: Plan<I>, start_one: S) -> Result<Self, StartError<FE>>
    where
        S: Fn(ShardConfig) -> Started<Lanes<K, Waiter<I, O, E>>, I, O, E, FE>,
    {
        let inner = Shards::start(plan, start_one)?;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The runtime the shards run on: `Glommio` or `Tokio` (what
    /// [`Runtime::Auto`] chose, or what was asked for).
    ///
    /// ```
    /// use ferry::{Engine, Runtime};
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert!(matches!(engine.runtime(), Runtime::Glommio | Runtime::Tokio));
    /// ```
    pub fn runtime(&self) -> Runtime {
        self.inner.runtime()
    }

    /// Why the shards run on tokio though [`Runtime::Auto`] was asked for:
    /// what refused glommio here (io_uring turned off or refused by a
    /// seccomp profile, too little locked memory), and how to lift it.
    /// `None` when they run on glommio, or on the runtime asked for.
    ///
    /// ```
    /// use ferry::{Engine, Runtime};
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// match (engine.runtime(), engine.runtime_reason()) {
    ///     (Runtime::Glommio, why) => assert_eq!(why, None),
    ///     (_, why) => println!("on tokio: {}", why.unwrap()),
    /// }
    /// ```
    pub fn runtime_reason(&self) -> Option<&str> {
        self.inner.runtime_reason()
    }

    /// Submits `input` for `key` and returns a future of its own outcome.
    ///
    /// Callable from any thread; the future is `Send` and works on any
    /// executor. The key is hashed and the input ranked and weighed here, on
    /// the caller's thread. A refusal (`Full`, `KeyFull`, `TooHeavy`,
    /// `Closed`) is ready at once with the input inside. Dropping the future
    /// after admission does not withdraw the input unless the engine was
    /// built with [`withdraw_on_drop`](crate::Builder::withdraw_on_drop): it
    /// is still sent, its output discarded.
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_shard| |_key: u64, inputs: Vec<u64>| async move {
    ///         Ok::<_, String>(inputs.iter().map(|x| x * 2).collect())
    ///     })
    ///     .unwrap();
    ///
    /// // Any executor will do; here a tokio current-thread runtime.
    /// let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let (key, input) = (7, 21);
    /// let out = runtime.block_on(async { engine.submit(key, input).await });
    /// assert_eq!(out, Ok(42));
    /// ```
    pub fn submit(&self, key: K, input: I) -> Submit<I, O, E> {
        let (index, hash) = route(&key, self.inner.list.len());
        self.inner.submit(index, hash, key, input)
    }

    /// Submits many inputs at once, each for its key: the inputs of one
    /// shard are passed in one push, with at most one wake-up of that
    /// shard, instead of one per input (for a caller that has many at hand:
    /// a stream consumer's poll, a request that carries many updates).
    ///
    /// Every input is still answered on its own, through one stream for
    /// the whole call ([`Outcomes`]): `(index, outcome)` pairs, `index`
    /// being the input's position in `items`, in the order the inputs are
    /// answered; [`Outcomes::all`] gives them back in the order given.
    /// One stream rather than a future per input because the point is to
    /// pay per call, not per input: the inputs share one answer cell, and
    /// the caller takes whatever arrived in one look, with no channel,
    /// future or waker of each input's own. Every input is measured,
    /// bounded and refused on its own, as with [`submit`](Self::submit) —
    /// if a shard's intake cannot take its share whole, that share is
    /// refused `Full`, every input handed back.
    ///
    /// ```
    /// use ferry::Engine;
    /// use futures::StreamExt;
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_| |key: u64, inputs: Vec<u64>| async move {
    ///         Ok::<_, String>(inputs.iter().map(|i| i + key).collect())
    ///     })
    ///     .unwrap();
    /// // As they come: input 3 is (3 % 7, 30), answered 33.
    /// let mut outcomes = engine.submit_many((0..500).map(|i| (i % 7, i * 10)));
    /// futures::executor::block_on(async {
    ///     while let Some((index, outcome)) = outcomes.next().await {
    ///         assert_eq!(outcome, Ok(index as u64 * 10 + index as u64 % 7));
    ///     }
    /// });
    /// // Or all of them, in the order given.
    /// let all = futures::executor::block_on(engine.submit_many([(1, 1), (2, 2)]).all());
    /// assert_eq!(all, vec![Ok(2), Ok(4)]);
    /// ```
    pub fn submit_many(&self, items: impl IntoIterator<Item = (K, I)>) -> Outcomes<I, O, E> {
        let shards = self.inner.list.len();
        Outcomes::new(self.inner.submit_many(items, |(key, input)| {
            let (index, hash) = route(&key, shards);
            (index, hash, key, input)
        }))
    }

    /// Like [`submit`](Self::submit), for tasks running on the engine's own
    /// shards (see [`spawn_on`](Self::spawn_on)): if `key` belongs to the
    /// shard this task runs on, the input is admitted directly — no queue,
    /// no channel, no atomic read-modify-write — and answered through a
    /// single-threaded answer cell. Otherwise it takes the ordinary path. The
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
        let shard = &inner.list[index];
        let (rank, boundary, weight) = match inner.measure(&input) {
            Ok(measured) => measured,
            Err(reason) => {
                shard.count_refused();
                return LocalSubmit::remote(Submit::refused(input, reason));
            }
        };
        match shard.submit_local(Offer::new(hash, key, input, rank, weight).bounded(boundary)) {
            Ok(answer) => LocalSubmit::local(answer),
            Err(offer) => LocalSubmit::remote(inner.submit(index, hash, offer.key, offer.input)),
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
    ///
    /// ```
    /// use ferry::{Engine, ShardId};
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let (done, ran_on) = futures::channel::oneshot::channel();
    /// engine
    ///     .spawn_on(ShardId::new(0), move || async move {
    ///         // On the shard's thread: state here need not be `Send`.
    ///         let here = std::rc::Rc::new(std::thread::current().id());
    ///         let _ = done.send(*here);
    ///     })
    ///     .unwrap();
    /// let shard_thread = futures::executor::block_on(ran_on).unwrap();
    /// assert_ne!(shard_thread, std::thread::current().id());
    /// ```
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
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// let engine: Engine<&'static str, u32, u32, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_| |_key: &'static str, inputs: Vec<u32>| async move {
    ///         Ok::<_, String>(inputs.iter().map(|x| x + 1).collect())
    ///     })
    ///     .unwrap();
    /// let worker = std::thread::spawn(move || engine.submit_blocking("a", 1));
    /// assert_eq!(worker.join().unwrap(), Ok(2));
    /// ```
    pub fn submit_blocking(&self, key: K, input: I) -> Outcome<I, O, E> {
        block_on_submit(self.submit(key, input), self.inner.spin_before_park)
    }

    /// Gauges and counters of every shard, read without locks.
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// engine.submit_blocking(1, 10).unwrap();
    /// engine.submit_blocking(2, 20).unwrap();
    /// engine.close();
    /// engine.join();
    /// let stats = engine.stats();
    /// assert_eq!(stats.shards.len(), 2);
    /// let total = stats.total();
    /// assert_eq!((total.admitted, total.sent, total.answered), (2, 2, 2));
    /// assert!(stats.is_quiet());
    /// ```
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// The number of shards.
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.shards(), 2);
    /// ```
    pub fn shards(&self) -> usize {
        self.inner.list.len()
    }

    /// The shard that owns `key`: always the same one for the same key
    /// (see [`route`](crate::route)).
    ///
    /// ```
    /// use ferry::{Engine, ShardId};
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let shard: ShardId = engine.shard_of(&7);
    /// assert!(shard.index() < engine.shards());
    /// assert_eq!(shard.index(), ferry::route(&7_u64, 2).0);
    /// ```
    pub fn shard_of(&self, key: &K) -> ShardId {
        ShardId::new(route(key, self.inner.list.len()).0)
    }

    /// Resolves once every input admitted before the call is answered (or
    /// expired, or withdrawn); the engine stays open and goes on admitting.
    /// For handing keys over without closing: a Kafka consumer whose
    /// partitions are revoked flushes, then commits its offsets. After
    /// [`close`](Self::close) it waits for the drain.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .max_batch_delay(Duration::from_millis(20))
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let answers: Vec<_> = (0..8).map(|key| engine.submit(key, key * 10)).collect();
    /// futures::executor::block_on(engine.flush());
    /// let total = engine.stats().total();
    /// assert_eq!((total.admitted, total.answered), (8, 8));
    /// assert!(!engine.is_closed(), "still open");
    /// assert_eq!(engine.submit_blocking(9, 90), Ok(90));
    /// # drop(answers);
    /// ```
    pub fn flush(&self) -> Flush {
        self.inner.flush()
    }

    /// Closes the engine (G9): new inputs are refused with the input handed
    /// back; everything already admitted is still sent (delay ignored) and
    /// answered; then the shard threads exit. Returns at once; see
    /// [`join`](Self::join), or in async code await
    /// [`flush`](Self::flush) for the drain. Idempotent.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::{Engine, FerryError, Refused};
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_batch_delay(Duration::from_secs(60))
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// // A partial batch would wait a minute for more; close sends it now.
    /// let waiting = engine.submit(1, 10);
    /// engine.close();
    /// assert_eq!(futures::executor::block_on(waiting), Ok(10));
    /// match engine.submit_blocking(1, 11) {
    ///     Err(FerryError::Refused { input, reason: Refused::Closed }) => assert_eq!(input, 11),
    ///     other => panic!("{other:?}"),
    /// }
    /// engine.join();
    /// ```
    pub fn close(&self) {
        self.inner.close();
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert!(!engine.is_closed());
    /// engine.close();
    /// assert!(engine.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Blocks until every shard has drained and exited. Call
    /// [`close`](Self::close) first, or it waits for a close from elsewhere.
    /// Called on one of the engine's own shards, it skips that shard. It
    /// blocks the thread, batches in flight included: in an async task,
    /// await [`flush`](Self::flush) after `close` instead (see
    /// [`Engine`], "In an async task").
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let answer = engine.submit(3, 30);
    /// engine.close();
    /// engine.join();
    /// // Admitted before close, so answered before the shards exited.
    /// assert_eq!(futures::executor::block_on(answer), Ok(30));
    /// ```
    pub fn join(&self) {
        self.inner.join();
    }
}
