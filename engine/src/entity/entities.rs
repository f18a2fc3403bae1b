//! The handle of an entity engine: submit an input to a key, get its own
//! output or why not.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::engine::Engine;
use crate::flush::Flush;
use crate::stats::Stats;
use crate::submit::Submit;

use super::counts::{Counts, StoreStats};
use super::error::{EntityError, Failure};

/// An engine whose keys are entities in a store: each input folded into
/// its key's state (or appended to its log) and written, fenced, in trips.
/// Started by [`Builder::start_entities`](crate::Builder::start_entities)
/// or [`Builder::start_log`](crate::Builder::start_log). Cheap to clone;
/// every clone drives the same shards.
///
/// ```
/// use ferry::entity::{Entities, EntityError, MemoryStore};
///
/// let store = MemoryStore::<u64>::new();
/// let accounts: Entities<u64, i64, i64, &str> = Entities::builder()
///     .shards(1)
///     .pin(false)
///     .start_entities(store.clone(), |balance: &mut i64, amount: &i64| {
///         if *balance + amount < 0 {
///             return Err("overdrawn");
///         }
///         *balance += amount;
///         Ok(*balance)
///     })
///     .unwrap();
/// assert_eq!(accounts.submit_blocking(7, 10), Ok(10));
/// assert_eq!(accounts.submit_blocking(7, -25), Err(EntityError::Refused("overdrawn")));
/// assert_eq!(accounts.submit_blocking(7, -4), Ok(6));
/// accounts.close();
/// accounts.join();
/// assert_eq!(store.row(&7).unwrap().version, 2); // two inputs applied
/// ```
pub struct Entities<K, I, O, R>
where
    K: std::hash::Hash + Eq + Clone,
{
    engine: Engine<K, I, Result<O, R>, Failure>,
    counts: Arc<Counts>,
}

impl<K, I, O, R> Clone for Entities<K, I, O, R>
where
    K: std::hash::Hash + Eq + Clone,
{
    fn clone(&self) -> Self {
        Self {
            engine: self.engine.clone(),
            counts: Arc::clone(&self.counts),
        }
    }
}

impl<K, I, O, R> std::fmt::Debug for Entities<K, I, O, R>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    R: Send + 'static,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entities")
            .field("shards", &self.engine.shards())
            .finish_non_exhaustive()
    }
}

impl<K, I, O, R> Entities<K, I, O, R>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    R: Clone + Send + 'static,
{
    /// The builder of an entity engine: every setting of
    /// [`Engine::builder`], then `start_entities` (or `start_log`).
    ///
    /// ```
    /// use ferry::entity::{Entities, MemoryStore};
    ///
    /// let counters: Entities<&str, u64, u64, std::convert::Infallible> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_entities(MemoryStore::new(), |n: &mut u64, add: &u64| { *n += add; Ok(*n) })
    ///     .unwrap();
    /// assert_eq!(counters.submit_blocking("a", 2), Ok(2));
    /// ```
    pub fn builder() -> crate::Builder<K, I, Result<O, R>, Failure> {
        Engine::builder()
    }

    pub(crate) fn of(engine: Engine<K, I, Result<O, R>, Failure>, counts: Arc<Counts>) -> Self {
        Self { engine, counts }
    }

    /// Submits `input` to `key`: resolves to its own output once its batch
    /// is written, or to why not ([`EntityError`]).
    ///
    /// ```
    /// use ferry::entity::{Entities, MemoryStore};
    ///
    /// let counters: Entities<u8, u64, u64, String> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_entities(MemoryStore::new(), |n: &mut u64, add: &u64| { *n += add; Ok(*n) })
    ///     .unwrap();
    /// let first = counters.submit(1, 5);
    /// let second = counters.submit(1, 6);
    /// assert_eq!(futures::executor::block_on(first), Ok(5));
    /// assert_eq!(futures::executor::block_on(second), Ok(11));
    /// ```
    pub fn submit(&self, key: K, input: I) -> EntitySubmit<I, O, R> {
        EntitySubmit {
            submit: self.engine.submit(key, input),
        }
    }

    /// [`submit`](Self::submit), waiting on this thread: for callers
    /// outside any async runtime.
    ///
    /// ```
    /// use ferry::entity::{Entities, MemoryStore};
    ///
    /// let log: Entities<u8, String, u64, std::convert::Infallible> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_log(MemoryStore::new())
    ///     .unwrap();
    /// assert_eq!(log.submit_blocking(1, "opened".to_string()), Ok(1));
    /// assert_eq!(log.submit_blocking(1, "closed".to_string()), Ok(2));
    /// ```
    pub fn submit_blocking(&self, key: K, input: I) -> Result<O, EntityError<I, R>> {
        answer(self.engine.submit_blocking(key, input))
    }

    /// What the shards did at their store so far: requests, conflicts,
    /// lost replies and how they were resolved.
    ///
    /// ```
    /// use ferry::entity::{Entities, MemoryStore};
    ///
    /// let counters: Entities<u8, u64, u64, String> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_entities(MemoryStore::new(), |n: &mut u64, add: &u64| { *n += add; Ok(*n) })
    ///     .unwrap();
    /// counters.submit_blocking(1, 1).unwrap();
    /// counters.submit_blocking(1, 1).unwrap();
    /// // One read (the key was new), then only writes.
    /// let stats = counters.store_stats();
    /// assert_eq!((stats.reads, stats.writes), (1, 2));
    /// ```
    pub fn store_stats(&self) -> StoreStats {
        self.counts.read()
    }

    /// The engine underneath, for everything else it offers
    /// (`submit_many`, `spawn_on`, `shard_of`, `runtime`, …); its outputs
    /// are the fold's results, its error a [`Failure`].
    ///
    /// ```
    /// use ferry::entity::{Entities, MemoryStore};
    ///
    /// let counters: Entities<u8, u64, u64, String> = Entities::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start_entities(MemoryStore::new(), |n: &mut u64, add: &u64| { *n += add; Ok(*n) })
    ///     .unwrap();
    /// assert_eq!(counters.engine().shards(), 2);
    /// ```
    pub fn engine(&self) -> &Engine<K, I, Result<O, R>, Failure> {
        &self.engine
    }

    /// The shards' figures (batches, trips, sizes, times).
    ///
    /// ```
    /// use ferry::entity::{Entities, MemoryStore};
    ///
    /// let counters: Entities<u8, u64, u64, String> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_entities(MemoryStore::new(), |n: &mut u64, add: &u64| { *n += add; Ok(*n) })
    ///     .unwrap();
    /// counters.submit_blocking(1, 1).unwrap();
    /// futures::executor::block_on(counters.flush());
    /// assert_eq!(counters.stats().total().trips, 1);
    /// ```
    pub fn stats(&self) -> Stats {
        self.engine.stats()
    }

    /// Resolves once everything admitted before it is answered.
    ///
    /// ```
    /// use ferry::entity::{Entities, MemoryStore};
    ///
    /// let counters: Entities<u8, u64, u64, String> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_entities(MemoryStore::new(), |n: &mut u64, add: &u64| { *n += add; Ok(*n) })
    ///     .unwrap();
    /// let pending = counters.submit(3, 1);
    /// futures::executor::block_on(counters.flush());
    /// assert_eq!(futures::executor::block_on(pending), Ok(1));
    /// ```
    pub fn flush(&self) -> Flush {
        self.engine.flush()
    }

    /// Refuses new inputs and lets the shards write what they hold.
    ///
    /// ```
    /// use ferry::entity::{Entities, EntityError, MemoryStore};
    ///
    /// let counters: Entities<u8, u64, u64, String> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_entities(MemoryStore::new(), |n: &mut u64, add: &u64| { *n += add; Ok(*n) })
    ///     .unwrap();
    /// counters.close();
    /// assert!(matches!(counters.submit_blocking(1, 1), Err(EntityError::Engine(_))));
    /// counters.join();
    /// ```
    pub fn close(&self) {
        self.engine.close();
    }

    /// Waits until every shard has stopped (after [`close`](Self::close)).
    ///
    /// ```
    /// use ferry::entity::{Entities, MemoryStore};
    ///
    /// let counters: Entities<u8, u64, u64, String> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_entities(MemoryStore::new(), |n: &mut u64, add: &u64| { *n += add; Ok(*n) })
    ///     .unwrap();
    /// counters.close();
    /// counters.join();
    /// ```
    pub fn join(&self) {
        self.engine.join();
    }
}

/// The caller's answer for what the engine answered.
fn answer<I, O, R>(
    outcome: Result<Result<O, R>, ferry_shard::FerryError<I, Failure>>,
) -> Result<O, EntityError<I, R>> {
    match outcome {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(refused)) => Err(EntityError::Refused(refused)),
        Err(err) => Err(EntityError::from(err)),
    }
}

/// The future of [`Entities::submit`]: the input's output, or why not.
#[must_use = "an input's outcome is known only by awaiting it"]
pub struct EntitySubmit<I, O, R> {
    submit: Submit<I, Result<O, R>, Failure>,
}

impl<I, O, R> std::fmt::Debug for EntitySubmit<I, O, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntitySubmit").finish_non_exhaustive()
    }
}

impl<I, O, R> Future for EntitySubmit<I, O, R> {
    type Output = Result<O, EntityError<I, R>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.submit).poll(cx).map(answer)
    }
}
