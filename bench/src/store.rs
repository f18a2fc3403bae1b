//! The store every system talks to, one per `ferry-load` process, shared by
//! every system measured: the simulated one ([`sim`], the default) or a real
//! PostgreSQL or Redis server (`--store postgres://…`, `--store redis://…`).
//!
//! # What every store does
//!
//! Per key a version and a value. A keyed batch of `count` inputs summing
//! to `sum` ([`Connection::apply`]) is one read of the key's version and
//! value, then one conditional write of `version + count` and
//! `value + sum` on the condition that the version is still the one read.
//! A write that finds another version is a *conflict*: counted
//! ([`Store::conflicts`]), and the batch reads again and retries, at most
//! [`WRITE_ATTEMPTS_MAX`] times. A system that keeps one batch per key in
//! flight never conflicts. An unkeyed batch ([`Connection::apply_unkeyed`])
//! reads one stream's length and appends to it unconditionally.
//!
//! So the versions add up to the inputs applied and the values to their
//! sum ([`Store::contents`]); after a run both must equal what the load
//! counted as answered with success.
//!
//! | store | a key | the read | the conditional write |
//! | --- | --- | --- | --- |
//! | sim | two atomics | a load | a compare-and-swap |
//! | postgres | row `key` of table `ferry_load_keys` | `SELECT` | `UPDATE … WHERE key = $1 AND version = $read` |
//! | redis | hash `ferry-load:{key}` | `HMGET` | a compare-and-set Lua script |
//!
//! # Connections
//!
//! A [`Connection`] is what a batch goes through: a reference to the sim,
//! or one client connection to a server. Ferry's shards each make their own
//! ([`Store::connect`], in the shard's factory, on the shard's thread); the
//! other systems share a [`Pool`] of as many. A connection is an enum, not a
//! trait object: the sim's batch future is returned as it is, unboxed, and
//! a real store's is boxed, one allocation per batch beside a network round
//! trip.
//!
//! # Set-up and clean-up
//!
//! [`Store::open`] creates a real store's table (dropping one left over) or
//! claims its keys; [`Store::reset`] sets every key to version 0 and value
//! 0 (the runs call it before each system); [`Store::stop`] drops the table
//! or deletes the keys. The sim needs none of it: its figures are read as
//! differences.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::Either;
use hdrhistogram::Histogram;

mod conditional;
pub(crate) mod on_postgres;
pub(crate) mod on_redis;
pub mod private;
pub mod resolve;
pub mod sim;

pub use on_postgres::{
    PgConnection, PgStore, ENTITY_TABLE as POSTGRES_ENTITY_TABLE, TABLE as POSTGRES_TABLE,
};
pub use on_redis::{
    RedisConnection, RedisStore, ENTITY_PREFIX as REDIS_ENTITY_PREFIX,
    KEY_PREFIX as REDIS_KEY_PREFIX,
};
pub use resolve::{resolutions, Fence, Resolutions};
use sim::SimStore;

/// A batch reads and tries to write at most this many times before it fails
/// with [`StoreError::ConflictsExhausted`].
pub const WRITE_ATTEMPTS_MAX: u32 = 100;

/// How long connecting to a real store may take before it is given up.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a store request did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// A conditional write found another version than the one expected.
    Conflict {
        /// The key written.
        key: u64,
        /// The version the writer expected.
        expected: u64,
        /// The version the store had.
        current: u64,
    },
    /// A batch conflicted [`WRITE_ATTEMPTS_MAX`] times in a row.
    ConflictsExhausted {
        /// The key.
        key: u64,
        /// Attempts made.
        attempts: u32,
    },
    /// The connection failed before the write was sent: nothing was
    /// applied; the connection is to be made again.
    Disconnected(String),
    /// The connection failed after the write was sent: the write may or may
    /// not have been applied; only reading the key back can tell (what
    /// `ferry::entity` does for ferry's systems; for the others, the
    /// read-back at the end).
    Unknown {
        /// What the client said.
        why: String,
        /// The version the lost write was conditioned on (a keyed write's;
        /// `None` for the unkeyed stream's append).
        from: Option<u64>,
    },
    /// No connection to send on (the store is away; a new one is being
    /// made, or waits out its backoff): nothing was sent.
    Unreachable(String),
    /// The simulated store's thread stopped with the request pending.
    Stopped,
    /// A real store's server answered with an error, or the connection to
    /// it broke: what the client said.
    Server(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Conflict {
                key,
                expected,
                current,
            } => write!(
                f,
                "conditional write of key {key} expected version {expected}, the store has {current}"
            ),
            StoreError::ConflictsExhausted { key, attempts } => write!(
                f,
                "key {key}: the write conflicted {attempts} times in a row; two batches of one key keep racing"
            ),
            StoreError::Stopped => f.write_str("the simulated store stopped with the request pending"),
            StoreError::Server(message) => write!(f, "the store's server: {message}"),
            StoreError::Disconnected(message) => {
                write!(f, "the connection failed before the write was sent (nothing applied): {message}")
            }
            StoreError::Unknown { why, .. } => write!(
                f,
                "the connection failed after the write was sent (applied or not, unknown): {why}"
            ),
            StoreError::Unreachable(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl StoreError {
    /// Whether the connection that gave it is dead and must be made again.
    pub fn breaks_connection(&self) -> bool {
        matches!(
            self,
            StoreError::Disconnected(_) | StoreError::Unknown { .. }
        )
    }

    /// Whether the write may have been applied though it failed.
    pub fn is_unknown(&self) -> bool {
        matches!(self, StoreError::Unknown { .. })
    }

    /// A real store's error before the write was sent (nothing applied):
    /// the server's refusal when `refused`, else a failed connection.
    pub(crate) fn unsent(refused: bool, why: String) -> Self {
        if refused {
            StoreError::Server(why)
        } else {
            StoreError::Disconnected(why)
        }
    }

    /// A real store's error of the write itself: the server's refusal when
    /// `refused` (nothing applied), else an unknown outcome.
    pub(crate) fn sent(refused: bool, why: String) -> Self {
        if refused {
            StoreError::Server(why)
        } else {
            StoreError::Unknown { why, from: None }
        }
    }

    /// The same error, and if it is an unknown outcome, one of a write
    /// conditioned on version `from`.
    pub(crate) fn sent_from(self, from: u64) -> Self {
        match self {
            StoreError::Unknown { why, .. } => StoreError::Unknown {
                why,
                from: Some(from),
            },
            other => other,
        }
    }
}

/// One key's share of a trip: its inputs' count and their sum, written
/// conditionally on the version read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    /// The key.
    pub key: u64,
    /// How many inputs the write applies.
    pub count: u64,
    /// Their sum.
    pub sum: u64,
}

/// One attempt of a trip at some of its writes: which were written (their
/// place in the trip, and the version each started from), and which
/// conflicted; or why the round failed as a whole.
pub(crate) type Attempt = Result<(Vec<(usize, u64)>, Vec<usize>), RoundFailed>;

/// Why a round of a trip failed as a whole, and, if its write request was
/// sent, the version each write of the round was conditioned on (in the
/// round's order), which its [`StoreError::Unknown`] then carries.
#[derive(Debug)]
pub(crate) struct RoundFailed {
    error: StoreError,
    sent_from: Vec<u64>,
}

impl RoundFailed {
    /// The round's write request was sent, conditioned on `sent_from`.
    pub(crate) fn sent(error: StoreError, sent_from: Vec<u64>) -> Self {
        Self { error, sent_from }
    }
}

impl From<StoreError> for RoundFailed {
    /// A failure before the round's write request was sent.
    fn from(error: StoreError) -> Self {
        Self {
            error,
            sent_from: Vec::new(),
        }
    }
}

/// A trip's writes tried in rounds, every store's way: each round tries
/// the writes not yet written, a conflict sends a write to the next round,
/// and after [`WRITE_ATTEMPTS_MAX`] rounds what is left fails
/// `ConflictsExhausted`; a round that fails as a whole fails what it tried.
pub(crate) struct Rounds {
    results: Vec<Result<u64, StoreError>>,
    left: Vec<usize>,
    rounds: u32,
}

impl Rounds {
    /// The rounds of `writes`, none tried yet.
    pub(crate) fn new(writes: &[Write]) -> Self {
        Self {
            results: writes
                .iter()
                .map(|write| {
                    Err(StoreError::ConflictsExhausted {
                        key: write.key,
                        attempts: WRITE_ATTEMPTS_MAX,
                    })
                })
                .collect(),
            left: (0..writes.len()).collect(),
            rounds: 0,
        }
    }

    /// The places of the writes the next round tries, if one is due.
    pub(crate) fn next(&mut self) -> Option<Vec<usize>> {
        if self.left.is_empty() || self.rounds == WRITE_ATTEMPTS_MAX {
            return None;
        }
        self.rounds += 1;
        Some(self.left.clone())
    }

    /// What the round just tried gave; returns how many writes conflicted.
    pub(crate) fn settle(&mut self, attempt: Attempt) -> u64 {
        match attempt {
            Ok((written, conflicted)) => {
                for (at, version) in written {
                    self.results[at] = Ok(version);
                }
                let conflicts = conflicted.len() as u64;
                self.left = conflicted;
                conflicts
            }
            Err(RoundFailed { error, sent_from }) => {
                for (place, &at) in self.left.iter().enumerate() {
                    self.results[at] = Err(match sent_from.get(place) {
                        Some(&from) => error.clone().sent_from(from),
                        None => error.clone(),
                    });
                }
                self.left.clear();
                0
            }
        }
    }

    /// Each write's result, in the trip's order.
    pub(crate) fn finish(self) -> Vec<Result<u64, StoreError>> {
        self.results
    }
}

/// What a store holds: the inputs applied to it (every key's version, and
/// the unkeyed stream's length) and the sum of those inputs (every value).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Contents {
    /// Inputs applied.
    pub inputs: u64,
    /// Their sum (wrapping).
    pub sum: u64,
}

impl Contents {
    /// What was added between `earlier` and `self`.
    pub fn since(self, earlier: Contents) -> Contents {
        Contents {
            inputs: self.inputs.wrapping_sub(earlier.inputs),
            sum: self.sum.wrapping_sub(earlier.sum),
        }
    }
}

/// `--store`'s value: which store, and where.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreAddress {
    /// The simulated store, in this process.
    Sim,
    /// A PostgreSQL server: `postgres://…` or `postgresql://…`.
    Postgres(String),
    /// A Redis server: `redis://…`.
    Redis(String),
    /// A bare `postgres` or `redis`: a private server of that kind, to be
    /// started ([`StoreAddress::start_private`]) before the store is used.
    Private(crate::servers::Kind),
}

impl StoreAddress {
    /// Whether it is a server rather than the simulation.
    pub fn is_real(&self) -> bool {
        !matches!(self, StoreAddress::Sim)
    }
}

impl FromStr for StoreAddress {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text == "sim" {
            Ok(StoreAddress::Sim)
        } else if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Ok(StoreAddress::Postgres(text.to_string()))
        } else if text.starts_with("redis://") {
            Ok(StoreAddress::Redis(text.to_string()))
        } else if text == "postgres" {
            Ok(StoreAddress::Private(crate::servers::Kind::Postgres))
        } else if text == "redis" {
            Ok(StoreAddress::Private(crate::servers::Kind::Redis))
        } else {
            Err(format!(
                "`{}` is not a store: sim, postgres://USER@HOST:PORT/DATABASE, redis://HOST:PORT, or postgres or redis for a private one",
                redacted(text)
            ))
        }
    }
}

/// Shown without the password a URL may carry.
impl fmt::Display for StoreAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreAddress::Sim => f.write_str("sim"),
            StoreAddress::Postgres(url) | StoreAddress::Redis(url) => f.write_str(&redacted(url)),
            StoreAddress::Private(kind) => f.write_str(kind.name()),
        }
    }
}

impl fmt::Debug for StoreAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `scheme://user:password@host/…` as `scheme://user:…@host/…`.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) if user_info.contains(':') => {
            let user = user_info.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:…@{host}{path}")
        }
        _ => url.to_string(),
    }
}

/// The store of a `ferry-load` process. It lives for the rest of the
/// process (each kind is leaked when opened), so it is `Copy` and batch
/// functions hold it without reference counting.
#[derive(Clone, Copy, Debug)]
pub enum Store {
    /// The simulated store.
    Sim(&'static SimStore),
    /// A PostgreSQL server.
    Postgres(&'static PgStore),
    /// A Redis server.
    Redis(&'static RedisStore),
}

impl Store {
    /// A simulated store for keys `0..keys`, each request one `rtt`.
    pub fn sim(keys: u64, rtt: Duration) -> std::io::Result<Store> {
        SimStore::start(keys, rtt).map(Store::Sim)
    }

    /// Opens the store at `address` for keys `0..keys` (`rtt` is the sim's
    /// round trip; a server has its own): a real store's table or keys are
    /// created and set to zero.
    pub fn open(address: &StoreAddress, keys: u64, rtt: Duration) -> Result<Store, String> {
        match address {
            StoreAddress::Sim => Store::sim(keys, rtt)
                .map_err(|err| format!("could not start the simulated store's thread: {err}")),
            StoreAddress::Postgres(url) => PgStore::open(url, &address.to_string(), keys)
                .map(|store| Store::Postgres(Box::leak(Box::new(store)))),
            StoreAddress::Redis(url) => RedisStore::open(url, &address.to_string(), keys)
                .map(|store| Store::Redis(Box::leak(Box::new(store)))),
            StoreAddress::Private(_) => Err(private::NOT_STARTED.to_string()),
        }
    }

    /// Where ferry's systems keep their keys on a real store, through
    /// `ferry::entity` (a table, or a key prefix, of their own, read back
    /// with the rest); `None` for the sim, whose ferry batches call it
    /// directly.
    pub fn entity_store(self) -> Option<Result<EntityStore, String>> {
        match self {
            Store::Sim(_) => None,
            Store::Postgres(pg) => Some(pg.entity_store().map(EntityStore::Postgres)),
            Store::Redis(redis) => Some(redis.entity_store().map(EntityStore::Redis)),
        }
    }

    /// The simulated store, if this is it.
    pub fn as_sim(self) -> Option<&'static SimStore> {
        match self {
            Store::Sim(sim) => Some(sim),
            _ => None,
        }
    }

    /// Whether it is a server rather than the simulation.
    pub fn is_real(self) -> bool {
        !matches!(self, Store::Sim(_))
    }

    /// `sim`, `postgres` or `redis`.
    pub fn kind(self) -> &'static str {
        match self {
            Store::Sim(_) => "sim",
            Store::Postgres(_) => "postgres",
            Store::Redis(_) => "redis",
        }
    }

    /// The number of keys.
    pub fn keys(self) -> u64 {
        match self {
            Store::Sim(sim) => sim.keys(),
            Store::Postgres(pg) => pg.keys(),
            Store::Redis(redis) => redis.keys(),
        }
    }

    /// A connection for batches. A real store's is made on the calling
    /// thread's tokio runtime, whose reactor then does its I/O; the sim's
    /// is ready at once, anywhere.
    pub async fn connect(self) -> Result<Connection, String> {
        match self {
            Store::Sim(sim) => Ok(Connection::Sim(sim)),
            Store::Postgres(pg) => pg.connect().await.map(Connection::Postgres),
            Store::Redis(redis) => redis.connect().await.map(Connection::Redis),
        }
    }

    /// Sets every key (and the unkeyed stream) to version 0 and value 0.
    /// Nothing for the sim, whose runs read differences.
    pub fn reset(self) -> Result<(), String> {
        match self {
            Store::Sim(_) => Ok(()),
            Store::Postgres(pg) => pg.reset(),
            Store::Redis(redis) => redis.reset(),
        }
    }

    /// Reads the whole store back: the inputs it holds and their sum.
    pub fn contents(self) -> Result<Contents, String> {
        match self {
            Store::Sim(sim) => Ok(sim.contents()),
            Store::Postgres(pg) => pg.contents(),
            Store::Redis(redis) => redis.contents(),
        }
    }

    /// Conditional writes refused as conflicts since the store was opened.
    pub fn conflicts(self) -> u64 {
        match self {
            Store::Sim(sim) => sim.conflicts(),
            Store::Postgres(pg) => pg.conflicts(),
            Store::Redis(redis) => redis.conflicts(),
        }
    }

    /// How late the sim's answers came back since the last call (see
    /// [`SimStore::take_lateness`]); empty for a real store.
    pub fn take_lateness(self) -> Histogram<u64> {
        match self {
            Store::Sim(sim) => sim.take_lateness(),
            Store::Postgres(_) | Store::Redis(_) => new_histogram(),
        }
    }

    /// CPU time the server's processes have used (user and system), when it
    /// can be read: PostgreSQL's from `/proc` when the server runs on this
    /// machine, Redis's from `INFO cpu`. `None` for the sim, whose thread
    /// counts in this process's own CPU time.
    pub fn server_cpu_time(self) -> Option<Duration> {
        match self {
            Store::Sim(_) => None,
            Store::Postgres(pg) => pg.server_cpu_time(),
            Store::Redis(redis) => redis.server_cpu_time(),
        }
    }

    /// The server's host and port, as its URL gives them (where
    /// `--fault`'s proxy forwards to); an error for the sim, or a server
    /// reached through a Unix socket.
    pub fn server_address(self) -> Result<(String, u16), String> {
        match self {
            Store::Sim(_) => Err("the simulated store has no server".to_string()),
            Store::Postgres(pg) => pg.server_address(),
            Store::Redis(redis) => redis.server_address(),
        }
    }

    /// Sends the connections made from now on for batches ([`connect`](Self::connect),
    /// and so every system's) to `proxy` on this machine instead of the
    /// server; the store's own connection (set-up, reset, read-back, the
    /// faults' admin work) keeps going to the server directly.
    pub fn route_through(self, proxy: std::net::SocketAddr) -> Result<(), String> {
        match self {
            Store::Sim(_) => Err("the simulated store has no connections to route".to_string()),
            Store::Postgres(pg) => {
                pg.route_through(proxy);
                Ok(())
            }
            Store::Redis(redis) => redis.route_through(proxy),
        }
    }

    /// Ends every client connection of the server but the store's own, by
    /// the server's own means (PostgreSQL's `pg_terminate_backend` of the
    /// database's other client backends, Redis's `CLIENT KILL TYPE normal
    /// SKIPME yes`); answers how many it ended.
    pub fn kill_connections(self) -> Result<u64, String> {
        match self {
            Store::Sim(_) => Err("the simulated store has no connections to end".to_string()),
            Store::Postgres(pg) => pg.kill_connections(),
            Store::Redis(redis) => redis.kill_connections(),
        }
    }

    /// Makes the store's own connection again and reads the store through
    /// it: `Ok` once the server accepts connections and answers reads
    /// (after a restart, its recovery or loading done).
    pub fn reconnect_admin(self) -> Result<(), String> {
        match self {
            Store::Sim(_) => Ok(()),
            Store::Postgres(pg) => pg.reconnect_admin(),
            Store::Redis(redis) => redis.reconnect_admin(),
        }
    }

    /// Ends the store once traffic has ended: the sim's thread stops; a real
    /// store's table is dropped, or its keys deleted.
    pub fn stop(self) -> Result<(), String> {
        match self {
            Store::Sim(sim) => {
                sim.stop();
                Ok(())
            }
            Store::Postgres(pg) => pg.remove(),
            Store::Redis(redis) => redis.remove(),
        }
    }
}

/// A real store as `ferry::entity` reaches it.
#[derive(Clone, Debug)]
pub enum EntityStore {
    /// A PostgreSQL table.
    Postgres(ferry::entity::PostgresStore),
    /// Redis hashes under a prefix.
    Redis(ferry::entity::RedisStore),
}

/// The future of one batch: the sim's as it is, a real store's boxed.
type Applying<F> = Either<F, Pin<Box<dyn Future<Output = Result<u64, StoreError>> + Send>>>;

/// What batches go through: the sim, or one client connection to a real
/// store. Cheap to clone (a reference, or a handle to a shared client).
#[derive(Clone)]
pub enum Connection {
    /// The simulated store.
    Sim(&'static SimStore),
    /// One PostgreSQL connection with its statements prepared.
    Postgres(Arc<PgConnection>),
    /// One multiplexed Redis connection.
    Redis(RedisConnection),
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
        let applying: Applying<_> = match self {
            Connection::Sim(sim) => Either::Left(sim.apply(key, count, sum)),
            Connection::Postgres(pg) => Either::Right(Box::pin(conditional::apply(
                Arc::clone(pg),
                key,
                count,
                sum,
            ))),
            Connection::Redis(redis) => {
                Either::Right(Box::pin(conditional::apply(redis.clone(), key, count, sum)))
            }
        };
        applying
    }

    /// A trip: every write's key read in one request and written
    /// conditionally, each on its own, in one more (see
    /// [`SimStore::apply_many`] and its real-store counterparts); a key
    /// that conflicted is retried alone of the others. The keys must be
    /// distinct. Answers, per write, the version it started from.
    pub fn apply_many(
        &self,
        writes: Vec<Write>,
    ) -> impl Future<Output = Vec<Result<u64, StoreError>>> + Send + 'static {
        type Many = Pin<Box<dyn Future<Output = Vec<Result<u64, StoreError>>> + Send>>;
        let applying: Many = match self {
            Connection::Sim(sim) => Box::pin(sim.apply_many(writes)),
            Connection::Postgres(pg) => Box::pin(conditional::apply_many(Arc::clone(pg), writes)),
            Connection::Redis(redis) => Box::pin(conditional::apply_many(redis.clone(), writes)),
        };
        applying
    }

    /// One unkeyed batch of `count` inputs summing to `sum`: a read of the
    /// stream's length, then an unconditional append. Answers the length
    /// before the batch's inputs.
    #[inline]
    pub fn apply_unkeyed(
        &self,
        count: u64,
        sum: u64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send + 'static {
        let applying: Applying<_> = match self {
            Connection::Sim(sim) => Either::Left(sim.apply_unkeyed(count, sum)),
            Connection::Postgres(pg) => {
                Either::Right(Box::pin(Arc::clone(pg).apply_unkeyed(count, sum)))
            }
            Connection::Redis(redis) => {
                Either::Right(Box::pin(redis.clone().apply_unkeyed(count, sum)))
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

/// A latency histogram: 1 ns to 1 hour, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// `mutex` locked, also after a holder panicked: the stores take what it
/// guards as that holder left it.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// The tokio runtime a real store's own requests (set-up, reset, read-back,
/// clean-up) run on: one thread, this one, only while they run.
pub(crate) fn admin_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("could not start a tokio runtime for the store: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    #[test]
    fn addresses_parse_and_hide_their_password() {
        assert_eq!("sim".parse::<StoreAddress>(), Ok(StoreAddress::Sim));
        let pg: StoreAddress = "postgres://ferry:secret@127.0.0.1:5432/db".parse().unwrap();
        assert!(pg.is_real());
        assert_eq!(pg.to_string(), "postgres://ferry:…@127.0.0.1:5432/db");
        let redis: StoreAddress = "redis://127.0.0.1:6379/0".parse().unwrap();
        assert_eq!(redis.to_string(), "redis://127.0.0.1:6379/0");
        let refused = "mysql://root:hunter2@db"
            .parse::<StoreAddress>()
            .unwrap_err();
        assert!(refused.contains("sim, postgres://"), "{refused}");
        assert!(!refused.contains("hunter2"), "{refused}");
    }

    #[test]
    fn bare_postgres_and_redis_ask_for_a_private_server() {
        use crate::servers::Kind;
        for (text, kind) in [("postgres", Kind::Postgres), ("redis", Kind::Redis)] {
            let address: StoreAddress = text.parse().unwrap();
            assert_eq!(address, StoreAddress::Private(kind));
            assert!(address.is_real());
            assert_eq!(address.to_string(), text);
        }
        for text in ["kafka", "postgresql", "Redis", "postgres:", "redis:/"] {
            assert!(text.parse::<StoreAddress>().is_err(), "{text}");
        }
        let refused = "mysql".parse::<StoreAddress>().unwrap_err();
        assert!(
            refused.contains("postgres or redis for a private one"),
            "{refused}"
        );
        let opened = Store::open(&StoreAddress::Private(Kind::Redis), 1, Duration::ZERO);
        assert!(opened.is_err());
    }

    #[test]
    fn a_sim_connection_applies_batches_and_its_pool_has_one() {
        let store = Store::sim(3, Duration::ZERO).unwrap();
        let pool = Pool::open(store, 4, None).unwrap();
        assert_eq!(pool.len(), 1);
        let connection = block_on(store.connect()).unwrap();
        assert_eq!(block_on(connection.apply(1, 2, 7)), Ok(0));
        assert_eq!(block_on(pool.get().apply(1, 1, 3)), Ok(2));
        assert_eq!(block_on(pool.get().apply_unkeyed(4, 10)), Ok(0));
        let held = store.contents().unwrap();
        assert_eq!(held, Contents { inputs: 7, sum: 20 });
        assert_eq!(
            held.since(Contents { inputs: 3, sum: 7 }),
            Contents { inputs: 4, sum: 13 }
        );
        assert_eq!(store.reset(), Ok(()));
        assert_eq!(store.server_cpu_time(), None);
    }
}
