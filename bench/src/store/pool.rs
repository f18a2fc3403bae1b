//! Connections to the store, and the pool the systems other than ferry
//! share.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::Either;

use super::sim::SimStore;
use ferry::entity::{PgConnection, RedisConnection};

use super::conditional::Linked;
use super::{Store, StoreError, Write};

/// What batches go through: the sim, or one of the library's connections
/// to a real store (see [`Linked`]). Cheap to clone (a reference, or a
/// handle to a shared connection).
#[derive(Clone)]
pub enum Connection {
    /// The simulated store.
    Sim(&'static SimStore),
    /// One PostgreSQL connection with its statements prepared.
    Postgres(Arc<Linked<PgConnection<u64>>>),
    /// One multiplexed Redis connection.
    Redis(Arc<Linked<RedisConnection>>),
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Connection::Sim(_) => "sim",
            Connection::Postgres(_) => "postgres",
            Connection::Redis(_) => "redis",
        };
        f.debug_tuple("Connection").field(&kind).finish()
    }
}

impl Connection {
    /// One keyed batch of `count` inputs summing to `sum` (see the module
    /// docs). Answers the version the batch started from: its inputs got
    /// versions `version + 1 ..= version + count`.
    #[inline]
    pub fn apply(
        &self,
        key: u64,
        count: u64,
        sum: u64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send + 'static {
        let applying: Applying<_> = match self.clone() {
            Connection::Sim(sim) => Either::Left(sim.apply(key, count, sum)),
            Connection::Postgres(pg) => {
                Either::Right(Box::pin(async move { pg.apply(key, count, sum).await }))
            }
            Connection::Redis(redis) => {
                Either::Right(Box::pin(async move { redis.apply(key, count, sum).await }))
            }
        };
        applying
    }

    /// A trip: every write's key read in one request and written
    /// conditionally, each on its own, in one more (see
    /// [`SimStore::apply_many`] and [`Linked`]); a key that conflicted
    /// is retried alone of the others. The keys must be distinct. Answers,
    /// per write, the version it started from.
    pub fn apply_many(
        &self,
        writes: Vec<Write>,
    ) -> impl Future<Output = Vec<Result<u64, StoreError>>> + Send + 'static {
        type Many = Pin<Box<dyn Future<Output = Vec<Result<u64, StoreError>>> + Send>>;
        let applying: Many = match self.clone() {
            Connection::Sim(sim) => Box::pin(sim.apply_many(writes)),
            Connection::Postgres(pg) => Box::pin(async move { pg.apply_many(writes).await }),
            Connection::Redis(redis) => Box::pin(async move { redis.apply_many(writes).await }),
        };
        applying
    }

    /// One unkeyed batch of `count` inputs summing to `sum`: a read, then
    /// an unconditional append. Answers the length before the batch's
    /// inputs.
    #[inline]
    pub fn apply_unkeyed(
        &self,
        count: u64,
        sum: u64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send + 'static {
        let applying: Applying<_> = match self.clone() {
            Connection::Sim(sim) => Either::Left(sim.apply_unkeyed(count, sum)),
            Connection::Postgres(pg) => {
                Either::Right(Box::pin(async move { pg.apply_unkeyed(count, sum).await }))
            }
            Connection::Redis(redis) => {
                Either::Right(Box::pin(
                    async move { redis.apply_unkeyed(count, sum).await },
                ))
            }
        };
        applying
    }
}

/// The connections of a system without shards, shared by all its batches
/// and handed out in turn, as a tokio service shares a few multiplexed
/// clients: each connection carries many batches at once (tokio-postgres
/// and redis pipeline the requests of concurrent callers), as each of
/// ferry's shards does on its one connection. A checkout pool, one batch per
/// connection at a time, would instead cap the system at as many batches in
/// flight as connections, a limit ferry does not have.
///
/// A real store's connection comes back after it breaks, as a ferry
/// shard's does through `ferry::Reconnect`: a batch whose error
/// [breaks the connection](StoreError::breaks_connection) marks its slot
/// down, and the next batch given that slot connects again (on the pool's
/// runtime), with the same backoff ([`RECONNECT_FIRST`] doubling up to
/// [`RECONNECT_MAX`]); meanwhile, and while the attempt is under way, the
/// slot's batches fail at once with [`StoreError::Unreachable`] (nothing
/// sent).
#[derive(Debug)]
pub struct Pool {
    pooled: Box<[Pooled]>,
    next: AtomicUsize,
}

/// The first wait after a failed attempt to connect again, for ferry's
/// shards (`ferry::Reconnect`'s own default) and the pools alike.
pub const RECONNECT_FIRST: Duration = ferry::DEFAULT_RECONNECT_FIRST;

/// The longest wait between attempts to connect again, for ferry's shards
/// and the pools alike: how late after a store's return a connection may
/// come back (`ferry::Reconnect`'s default is 2 s; `ferry-load` keeps its
/// attempts closer, a refused connection costing next to nothing).
pub const RECONNECT_MAX: Duration = Duration::from_millis(500);

/// One of a pool's connections, as [`Pool::get`] hands it out: the sim, or
/// a slot of a real store's connection that comes back after it breaks.
#[derive(Clone, Debug)]
pub enum Pooled {
    /// The simulated store, called directly.
    Sim(&'static SimStore),
    /// A real store's connection.
    Real(Arc<Slot>),
}

/// A real store's pooled connection, made again after it breaks.
pub struct Slot {
    store: Store,
    /// Where connections are made (their I/O tasks run there).
    runtime: tokio::runtime::Handle,
    link: std::sync::Mutex<SlotLink>,
}

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let link = match &*self.lock() {
            SlotLink::Up { .. } => "up",
            SlotLink::Connecting { .. } => "connecting",
            SlotLink::Down { .. } => "down",
        };
        f.debug_struct("Slot").field("link", &link).finish()
    }
}

/// Where a slot's link stands; `made` counts the connections made, so that
/// a report about one already replaced is ignored.
enum SlotLink {
    Up {
        connection: Connection,
        made: u64,
    },
    Connecting {
        wait: Duration,
        made: u64,
    },
    Down {
        retry_at: Instant,
        wait: Duration,
        why: String,
        made: u64,
    },
}

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotLink> {
        self.link
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The slot's connection, connecting first if it is down and its
    /// backoff has passed; `Unreachable` at once otherwise.
    async fn connection(&self) -> Result<(Connection, u64), StoreError> {
        let now = Instant::now();
        let (wait, made) = {
            let mut link = self.lock();
            match &*link {
                SlotLink::Up { connection, made } => return Ok((connection.clone(), *made)),
                SlotLink::Connecting { .. } => {
                    return Err(StoreError::Unreachable(
                        "the store is unreachable (reconnecting); nothing was sent".to_string(),
                    ))
                }
                SlotLink::Down { retry_at, why, .. } if now < *retry_at => {
                    return Err(StoreError::Unreachable(format!(
                        "the store is unreachable (next attempt in {:?}): {why}; nothing was sent",
                        *retry_at - now
                    )))
                }
                SlotLink::Down { wait, made, .. } => {
                    let (wait, made) = (*wait, *made);
                    *link = SlotLink::Connecting { wait, made };
                    (wait, made)
                }
            }
        };
        let mut attempt = SlotAttempt {
            slot: self,
            done: false,
        };
        let store = self.store;
        let connected = match self.runtime.spawn(store.connect()).await {
            Ok(connected) => connected,
            Err(err) => Err(format!("the attempt to connect stopped: {err}")),
        };
        attempt.done = true;
        let mut link = self.lock();
        match connected {
            Ok(connection) => {
                let made = made + 1;
                *link = SlotLink::Up {
                    connection: connection.clone(),
                    made,
                };
                Ok((connection, made))
            }
            Err(why) => {
                *link = SlotLink::Down {
                    retry_at: Instant::now() + wait,
                    wait: (wait * 2).min(RECONNECT_MAX),
                    why: why.clone(),
                    made,
                };
                Err(StoreError::Unreachable(format!(
                    "the store is unreachable: {why}; nothing was sent"
                )))
            }
        }
    }

    /// A batch found connection `made` broken: the next batch connects
    /// again, at once.
    fn broken(&self, made: u64) {
        let mut link = self.lock();
        if matches!(&*link, SlotLink::Up { made: current, .. } if *current == made) {
            *link = SlotLink::Down {
                retry_at: Instant::now(),
                wait: RECONNECT_FIRST,
                why: "the connection broke".to_string(),
                made,
            };
        }
    }

    /// Runs `work` on the slot's connection, and marks it broken if the
    /// result says so; without a connection, what `away` makes of why.
    async fn through<T, F>(
        self: Arc<Self>,
        work: impl FnOnce(Connection) -> F,
        breaks: impl Fn(&T) -> bool,
        away: impl FnOnce(StoreError) -> T,
    ) -> T
    where
        F: Future<Output = T>,
    {
        let (connection, made) = match self.connection().await {
            Ok(connection) => connection,
            Err(unreachable) => return away(unreachable),
        };
        let done = work(connection).await;
        if breaks(&done) {
            self.broken(made);
        }
        done
    }
}

/// Puts a slot back down if its attempt to connect is dropped half-way.
struct SlotAttempt<'a> {
    slot: &'a Slot,
    done: bool,
}

impl Drop for SlotAttempt<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut link = self.slot.lock();
        if let SlotLink::Connecting { wait, made } = *link {
            *link = SlotLink::Down {
                retry_at: Instant::now(),
                wait,
                why: "an attempt to connect was abandoned".to_string(),
                made,
            };
        }
    }
}

/// Whether a result broke its connection.
fn breaks(result: &Result<u64, StoreError>) -> bool {
    result.as_ref().is_err_and(StoreError::breaks_connection)
}

impl Pooled {
    /// [`Connection::apply`] through this connection.
    #[inline]
    pub fn apply(
        &self,
        key: u64,
        count: u64,
        sum: u64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send + 'static {
        let applying: Applying<_> = match self {
            Pooled::Sim(sim) => Either::Left(sim.apply(key, count, sum)),
            Pooled::Real(slot) => Either::Right(Box::pin(Arc::clone(slot).through(
                move |connection| connection.apply(key, count, sum),
                breaks,
                Err,
            ))),
        };
        applying
    }

    /// [`Connection::apply_many`] through this connection.
    pub fn apply_many(
        &self,
        writes: Vec<Write>,
    ) -> impl Future<Output = Vec<Result<u64, StoreError>>> + Send + 'static {
        type Many = Pin<Box<dyn Future<Output = Vec<Result<u64, StoreError>>> + Send>>;
        let applying: Many = match self {
            Pooled::Sim(sim) => Box::pin(sim.apply_many(writes)),
            Pooled::Real(slot) => {
                let count = writes.len();
                Box::pin(Arc::clone(slot).through(
                    move |connection| connection.apply_many(writes),
                    |done: &Vec<Result<u64, StoreError>>| done.iter().any(breaks),
                    move |away| vec![Err(away); count],
                ))
            }
        };
        applying
    }

    /// [`Connection::apply_unkeyed`] through this connection.
    #[inline]
    pub fn apply_unkeyed(
        &self,
        count: u64,
        sum: u64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send + 'static {
        let applying: Applying<_> = match self {
            Pooled::Sim(sim) => Either::Left(sim.apply_unkeyed(count, sum)),
            Pooled::Real(slot) => Either::Right(Box::pin(Arc::clone(slot).through(
                move |connection| connection.apply_unkeyed(count, sum),
                breaks,
                Err,
            ))),
        };
        applying
    }
}

impl Pool {
    /// `connections` connections to `store`, made on `runtime`, whose
    /// reactor then does their I/O (a real store needs one), and where
    /// they are made again after they break. The sim gets a pool of one:
    /// there is nothing to connect, and no counter to bump per batch.
    pub fn open(
        store: Store,
        connections: usize,
        runtime: Option<&tokio::runtime::Runtime>,
    ) -> Result<Pool, String> {
        let pooled = match (store, runtime) {
            (Store::Sim(sim), _) => vec![Pooled::Sim(sim)],
            (_, None) => return Err(format!("a {} pool needs a tokio runtime", store.kind())),
            (_, Some(runtime)) => runtime.block_on(async {
                let mut opened = Vec::with_capacity(connections.max(1));
                for _ in 0..connections.max(1) {
                    let connection = store.connect().await?;
                    opened.push(Pooled::Real(Arc::new(Slot {
                        store,
                        runtime: runtime.handle().clone(),
                        link: std::sync::Mutex::new(SlotLink::Up {
                            connection,
                            made: 1,
                        }),
                    })));
                }
                Ok::<_, String>(opened)
            })?,
        };
        Ok(Pool {
            pooled: pooled.into_boxed_slice(),
            next: AtomicUsize::new(0),
        })
    }

    /// The next connection in turn.
    pub fn get(&self) -> &Pooled {
        if let [only] = &*self.pooled {
            return only;
        }
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        &self.pooled[turn % self.pooled.len()]
    }

    /// How many connections it has.
    pub fn len(&self) -> usize {
        self.pooled.len()
    }

    /// Never: a pool has at least one connection.
    pub fn is_empty(&self) -> bool {
        self.pooled.is_empty()
    }
}

/// The future of one batch: the sim's as it is, a real store's boxed.
type Applying<F> = Either<F, Pin<Box<dyn Future<Output = Result<u64, StoreError>> + Send>>>;
