//! Unkeyed batching (docs/guarantees.md#unkeyed-batching): one
//! undifferentiated stream, batched as full as waiting inputs allow, several
//! batches in flight per shard.
//!
//! A different guarantee from per-key batching, not a special case of it:
//! there is no key, so no "one batch in flight per key" and no order across
//! batches; a shard sends its inputs in admission order (FIFO), up to
//! `max_in_flight_batches` batches at once. With a zero delay a free slot
//! takes whatever waits at once, so batches grow only while every slot is
//! busy; with a delay, a partial batch waits at most the delay from its
//! oldest input. Intake, bounds, errors, close, stats and the idle stages
//! are the engine's own (G4, G6, G9, G10 hold as for [`Engine`]).
//!
//! Spreading: each caller thread keeps to one shard, picked on its first
//! submit (round robin over the threads that submitted to this batcher), so
//! the steady submit path touches no shared counter, and every shard gets
//! work as soon as there are at least as many caller threads as shards.
//!
//! [`Engine`]: crate::Engine

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use ferry_shard::parts::{Fifo, Waiter};
use ferry_shard::{Outcome, Runtime, ShardConfig};

use crate::config::{BatcherBuilder, Plan};
use crate::flush::Flush;
use crate::outcomes::Outcomes;
use crate::shards::{block_on_submit, Shards, Started, UnkeyedShards};
use crate::start_error::StartError;
use crate::stats::Stats;
use crate::submit::Submit;

/// Gives each batcher a distinct identity, for the threads' homes.
static BATCHER_IDS: AtomicUsize = AtomicUsize::new(1);

/// Homes a thread remembers at most; past that the oldest is forgotten
/// (and picked again, once, if that batcher is used again).
const HOMES_KEPT_MAX: usize = 16;

thread_local! {
    /// This thread's home shard in each batcher it submitted to lately:
    /// `(batcher id, home)`, the latest last.
    static HOMES: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

/// Where a batcher's caller threads go: each thread keeps to the shard it
/// was given on its first submit, round robin over the batcher's threads.
struct Spread {
    id: usize,
    /// Threads that have submitted to this batcher so far.
    threads_seen: AtomicUsize,
}

impl Spread {
    fn new() -> Self {
        Self {
            id: BATCHER_IDS.fetch_add(1, Relaxed),
            threads_seen: AtomicUsize::new(0),
        }
    }

    /// The calling thread's shard among `shards`. Only a thread's first
    /// submit to this batcher touches the shared count.
    fn home(&self, shards: usize) -> usize {
        let home = HOMES.with(|homes| {
            let mut homes = homes.borrow_mut();
            if let Some(&(_, home)) = homes.iter().rev().find(|(id, _)| *id == self.id) {
                return home;
            }
            let home = self.threads_seen.fetch_add(1, Relaxed);
            if homes.len() == HOMES_KEPT_MAX {
                homes.remove(0);
            }
            homes.push((self.id, home));
            home
        });
        home % shards
    }
}

/// A running unkeyed batcher: a cheap, cloneable handle (`Clone + Send +
/// Sync`). Dropping the last handle closes it and waits for its shards,
/// blocking the dropping thread until the batches in flight end: in an
/// async task, `close` and await `flush` first, as for an
/// [`Engine`](crate::Engine) ("In an async task").
///
/// ```
/// use ferry::{Batcher, FerryError, Refused};
///
/// let batcher: Batcher<u32, u32, String> = Batcher::builder()
///     .shards(2)
///     .pin(false)
///     .max_batch_size(64)
///     .start(|_shard| |inputs: Vec<u32>| async move {
///         Ok::<_, String>(inputs.iter().map(|x| x + 1).collect())
///     })
///     .unwrap();
///
/// assert_eq!(batcher.submit_blocking(41), Ok(42));
/// let out = futures::executor::block_on(batcher.submit(1));
/// assert_eq!(out, Ok(2));
///
/// batcher.close();
/// match batcher.submit_blocking(7) {
///     Err(FerryError::Refused { input, reason: Refused::Closed }) => assert_eq!(input, 7),
///     other => panic!("{other:?}"),
/// }
/// batcher.join();
/// ```
pub struct Batcher<I, O, E> {
    inner: Arc<UnkeyedShards<I, O, E>>,
    spread: Arc<Spread>,
}

impl<I, O, E> Clone for Batcher<I, O, E> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            spread: Arc::clone(&self.spread),
        }
    }
}

impl<I, O, E> std::fmt::Debug for Batcher<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher")
            .field("shards", &self.inner.list.len())
            .field("closed", &self.inner.is_closed())
            .finish()
    }
}

impl<I, O, E> Batcher<I, O, E>
where
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// A builder with every setting at its default, less the per-key ones
    /// (docs/guarantees.md#settings).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::Batcher;
    ///
    /// let batcher: Batcher<String, usize, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_batch_size(16)
    ///     .max_batch_delay(Duration::from_micros(100))
    ///     .max_in_flight_batches(8)
    ///     .max_waiting(10_000)
    ///     .start(|_shard| |lines: Vec<String>| async move {
    ///         Ok::<_, String>(lines.iter().map(String::len).collect())
    ///     })
    ///     .unwrap();
    /// assert_eq!(batcher.submit_blocking("hello".to_string()), Ok(5));
    /// ```
    pub fn builder() -> BatcherBuilder<I, O, E> {
        BatcherBuilder::default()
    }

    pub(crate) fn start<S, FE>(plan: Plan<I>, start_one: S) -> Result<Self, StartError<FE>>
    where
        S: Fn(ShardConfig) -> Started<Fifo<Waiter<I, O, E>>, I, O, E, FE>,
    {
        Ok(Self {
            inner: Arc::new(Shards::start(plan, start_one)?),
            spread: Arc::new(Spread::new()),
        })
    }

    /// The runtime the shards run on: `Glommio` or `Tokio`.
    ///
    /// ```
    /// use ferry::{Batcher, Runtime};
    ///
    /// let batcher: Batcher<u8, u8, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .runtime(Runtime::Tokio)
    ///     .start(|_| |inputs: Vec<u8>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(batcher.runtime(), Runtime::Tokio);
    /// ```
    pub fn runtime(&self) -> Runtime {
        self.inner.runtime()
    }

    /// Why the shards run on tokio though [`Runtime::Auto`] was asked for,
    /// as [`Engine::runtime_reason`](crate::Engine::runtime_reason) says.
    ///
    /// ```
    /// use ferry::{Batcher, Runtime};
    ///
    /// let batcher: Batcher<u8, u8, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .runtime(Runtime::Tokio)
    ///     .start(|_| |inputs: Vec<u8>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(batcher.runtime_reason(), None, "tokio was asked for");
    /// ```
    pub fn runtime_reason(&self) -> Option<&str> {
        self.inner.runtime_reason()
    }

    /// Submits `input` and returns a future of its own outcome. Callable
    /// from any thread; the future is `Send` and works on any executor. A
    /// refusal (`Full`, `TooHeavy`, `Closed`) is ready at once with the
    /// input inside.
    ///
    /// ```
    /// use ferry::Batcher;
    ///
    /// let batcher: Batcher<u8, u8, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |inputs: Vec<u8>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// assert_eq!(runtime.block_on(async { batcher.submit(3).await }), Ok(3));
    /// ```
    pub fn submit(&self, input: I) -> Submit<I, O, E> {
        let index = self.spread.home(self.inner.list.len());
        self.inner.submit(index, 0, (), input)
    }

    /// Submits many inputs at once: handed to the calling thread's shard in
    /// one push, with at most one wake-up. Each input is answered on its
    /// own, through one stream for the call ([`Outcomes`], as with
    /// [`Engine::submit_many`](crate::Engine::submit_many)); each is
    /// measured, bounded and refused on its own (if the intake cannot take
    /// them all, all are refused `Full`, each handed back).
    ///
    /// ```
    /// use ferry::Batcher;
    ///
    /// let batcher: Batcher<u32, u32, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let outcomes = futures::executor::block_on(batcher.submit_many(0..100).all());
    /// assert_eq!(outcomes[42], Ok(42));
    /// ```
    pub fn submit_many(&self, inputs: impl IntoIterator<Item = I>) -> Outcomes<I, O, E> {
        let index = self.spread.home(self.inner.list.len());
        Outcomes::new(
            self.inner
                .submit_many(inputs, |input| (index, 0, (), input)),
        )
    }

    /// [`submit`](Self::submit) and block the calling thread until the
    /// outcome, for plain threads (not an async executor's, where blocking
    /// stalls other work). It looks for the outcome for up to
    /// `spin_before_park` first, then parks.
    ///
    /// ```
    /// use ferry::Batcher;
    ///
    /// let batcher: Batcher<u8, u8, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |inputs: Vec<u8>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(batcher.submit_blocking(9), Ok(9));
    /// ```
    pub fn submit_blocking(&self, input: I) -> Outcome<I, O, E> {
        block_on_submit(self.submit(input), self.inner.spin_before_park)
    }

    /// Gauges and counters of every shard, read without locks (`lanes` is
    /// always 0: unkeyed batching has no lanes).
    ///
    /// ```
    /// use ferry::Batcher;
    ///
    /// let batcher: Batcher<u8, u8, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |inputs: Vec<u8>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// batcher.submit_blocking(1).unwrap();
    /// batcher.close();
    /// batcher.join();
    /// let total = batcher.stats().total();
    /// assert_eq!((total.admitted, total.sent, total.answered), (1, 1, 1));
    /// ```
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// The number of shards.
    ///
    /// ```
    /// use ferry::Batcher;
    ///
    /// let batcher: Batcher<u8, u8, String> = Batcher::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_| |inputs: Vec<u8>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(batcher.shards(), 2);
    /// ```
    pub fn shards(&self) -> usize {
        self.inner.list.len()
    }

    /// Resolves once every input admitted before the call is answered (or
    /// expired, or withdrawn); the batcher stays open and goes on admitting.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::Batcher;
    ///
    /// let batcher: Batcher<u8, u8, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_batch_delay(Duration::from_millis(20))
    ///     .start(|_| |inputs: Vec<u8>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let answers: Vec<_> = (0..4).map(|n| batcher.submit(n)).collect();
    /// futures::executor::block_on(batcher.flush());
    /// assert_eq!(batcher.stats().total().answered, 4);
    /// # drop(answers);
    /// ```
    pub fn flush(&self) -> Flush {
        self.inner.flush()
    }

    /// Closes the batcher (G9): new inputs are refused with the input
    /// handed back; everything already admitted is still sent (delay
    /// ignored) and answered; then the shard threads exit. Returns at once;
    /// see [`join`](Self::join). Idempotent.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::{Batcher, FerryError, Refused};
    ///
    /// let batcher: Batcher<u8, u8, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_batch_delay(Duration::from_secs(60))
    ///     .start(|_| |inputs: Vec<u8>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// // A partial batch would wait a minute for more; close sends it now.
    /// let waiting = batcher.submit(1);
    /// batcher.close();
    /// assert_eq!(futures::executor::block_on(waiting), Ok(1));
    /// match batcher.submit_blocking(2) {
    ///     Err(FerryError::Refused { input, reason: Refused::Closed }) => assert_eq!(input, 2),
    ///     other => panic!("{other:?}"),
    /// }
    /// batcher.join();
    /// ```
    pub fn close(&self) {
        self.inner.close();
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// ```
    /// use ferry::Batcher;
    ///
    /// let batcher: Batcher<u8, u8, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |inputs: Vec<u8>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert!(!batcher.is_closed());
    /// batcher.close();
    /// assert!(batcher.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Blocks until every shard has drained and exited. Call
    /// [`close`](Self::close) first, or it waits for a close from elsewhere.
    ///
    /// ```
    /// use ferry::Batcher;
    ///
    /// let batcher: Batcher<u8, u8, String> = Batcher::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_| |inputs: Vec<u8>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let answer = batcher.submit(3);
    /// batcher.close();
    /// batcher.join();
    /// // Admitted before close, so answered before the shards exited.
    /// assert_eq!(futures::executor::block_on(answer), Ok(3));
    /// ```
    pub fn join(&self) {
        self.inner.join();
    }
}
