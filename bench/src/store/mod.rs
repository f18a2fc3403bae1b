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
//! reads, then appends to one stream unconditionally (on the sim, the
//! stream's length and value; on a server, a row of the batch's own).
//!
//! So the versions add up to the inputs applied and the values to their
//! sum ([`Store::contents`]); after a run both must equal what the load
//! counted as answered with success.
//!
//! | store | a key | the read | the conditional write |
//! | --- | --- | --- | --- |
//! | sim | two atomics | a load | a compare-and-swap |
//! | postgres | row `key` of table `ferry_load_entities` | `ferry::entity`'s `PostgresStore` read | its conditional write |
//! | redis | string `ferry-load-entity:{key}` | `ferry::entity`'s `RedisStore` read | its conditional write |
//!
//! On a real store every system goes through the library's store: ferry's
//! through `ferry::entity`'s engine, the others through its connections
//! ([`Linked`]), so they all send the same requests.
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
//! [`Store::open`] drops a real store's table or keys left over;
//! [`Store::reset`] does it again, setting every key to version 0 and value
//! 0 (the runs call it before each system; the library's first connection
//! creates the table); [`Store::stop`] drops the table or deletes the keys. The sim needs none of it: its figures are read as
//! differences.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use hdrhistogram::Histogram;

mod conditional;
pub(crate) mod on_postgres;
pub(crate) mod on_redis;
mod pool;
pub mod private;
pub mod resolve;
mod rounds;
pub mod rows;
pub mod sim;

pub use conditional::Linked;
pub use on_postgres::{PgStore, ENTITY_TABLE as POSTGRES_ENTITY_TABLE};
pub use on_redis::{RedisStore, ENTITY_PREFIX as REDIS_ENTITY_PREFIX};
pub use resolve::{resolutions, Fence, Resolutions};
use sim::SimStore;

pub use crate::base::new_histogram;
pub(crate) use crate::base::{admin_runtime, lock};
pub use pool::{Connection, Pool, Pooled, Slot, RECONNECT_FIRST, RECONNECT_MAX};
pub(crate) use rounds::{Attempt, RoundFailed, Rounds};
pub use rounds::{StoreError, Write};

/// A batch reads and tries to write at most this many times before it fails
/// with [`StoreError::ConflictsExhausted`].
pub const WRITE_ATTEMPTS_MAX: u32 = 100;

pub use crate::base::CONNECT_TIMEOUT;

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
    /// This process's command line, each store address in it (alone or
    /// as `--store=…`) as it is shown, a password hidden, for a report.
    pub fn shown_command_line() -> String {
        let shown = |text: &str| text.parse::<StoreAddress>().ok().map(|a| a.to_string());
        std::env::args()
            .map(|arg| match arg.strip_prefix("--store=") {
                Some(url) => shown(url).map_or(arg.clone(), |url| format!("--store={url}")),
                None => shown(&arg).unwrap_or(arg),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

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

/// What a real store does, each server its own way, for the set-up, the
/// read-back and `--fault`'s admin work (a batch's work goes through its
/// [`Connection`]).
pub(crate) trait Server: Sync {
    /// What it counts across its connections.
    fn books(&self) -> &conditional::Books;

    /// Its rows, as the store itself reads them back and removes them.
    fn rows(&self) -> &rows::Rows;

    /// The server's host and port, from the URL.
    fn server_address(&self) -> Result<(String, u16), String>;

    /// Batches' connections made from now on go to `proxy` instead.
    fn route_through(&self, proxy: std::net::SocketAddr) -> Result<(), String>;

    /// Ends every client connection but the store's own; answers how many.
    fn kill_connections(&self) -> Result<u64, String>;

    /// A new connection of the store's own, in place of the old one.
    fn reconnect_admin(&self) -> Result<(), String>;

    /// The server's CPU time, when it can be read.
    fn server_cpu_time(&self) -> Option<Duration>;
}

/// A store as the sim or a server, whichever server it is.
enum Side {
    Sim(&'static SimStore),
    Server(&'static dyn Server),
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

    /// The library's store of a real store's keys, through which ferry's
    /// systems write; `None` for the sim, whose ferry batches call it
    /// directly.
    pub fn entity_store(self) -> Option<Result<EntityStore, String>> {
        match self {
            Store::Sim(_) => None,
            Store::Postgres(pg) => Some(pg.entity_store().map(EntityStore::Postgres)),
            Store::Redis(redis) => Some(redis.entity_store().map(EntityStore::Redis)),
        }
    }

    fn side(self) -> Side {
        match self {
            Store::Sim(sim) => Side::Sim(sim),
            Store::Postgres(pg) => Side::Server(pg),
            Store::Redis(redis) => Side::Server(redis),
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
        match self.side() {
            Side::Sim(sim) => sim.keys(),
            Side::Server(server) => server.books().keys,
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

    /// Sets every key (and the unkeyed stream) to version 0 and value 0: a
    /// server's rows removed (PostgreSQL's table dropped, for the next
    /// connection to make again, so no run inherits another's rows or dead
    /// row versions). Nothing for the sim, whose runs read differences.
    pub fn reset(self) -> Result<(), String> {
        match self.side() {
            Side::Sim(_) => Ok(()),
            Side::Server(server) => server.books().reset(server.rows()),
        }
    }

    /// Reads the whole store back: the inputs it holds and their sum.
    pub fn contents(self) -> Result<Contents, String> {
        match self.side() {
            Side::Sim(sim) => Ok(sim.contents()),
            Side::Server(server) => server.books().contents(server.rows()),
        }
    }

    /// Conditional writes refused as conflicts since the store was opened.
    pub fn conflicts(self) -> u64 {
        match self.side() {
            Side::Sim(sim) => sim.conflicts(),
            Side::Server(server) => server.books().conflicts(),
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
        match self.side() {
            Side::Sim(_) => None,
            Side::Server(server) => server.server_cpu_time(),
        }
    }

    /// The server's host and port, as its URL gives them (where
    /// `--fault`'s proxy forwards to); an error for the sim, or a server
    /// reached through a Unix socket.
    pub fn server_address(self) -> Result<(String, u16), String> {
        match self.side() {
            Side::Sim(_) => Err("the simulated store has no server".to_string()),
            Side::Server(server) => server.server_address(),
        }
    }

    /// Sends the connections made from now on for batches ([`connect`](Self::connect),
    /// and so every system's) to `proxy` on this machine instead of the
    /// server; the store's own connection (set-up, reset, read-back, the
    /// faults' admin work) keeps going to the server directly.
    pub fn route_through(self, proxy: std::net::SocketAddr) -> Result<(), String> {
        match self.side() {
            Side::Sim(_) => Err("the simulated store has no connections to route".to_string()),
            Side::Server(server) => server.route_through(proxy),
        }
    }

    /// Ends every client connection of the server but the store's own, by
    /// the server's own means (PostgreSQL's `pg_terminate_backend` of the
    /// database's other client backends, Redis's `CLIENT KILL TYPE normal
    /// SKIPME yes`); answers how many it ended.
    pub fn kill_connections(self) -> Result<u64, String> {
        match self.side() {
            Side::Sim(_) => Err("the simulated store has no connections to end".to_string()),
            Side::Server(server) => server.kill_connections(),
        }
    }

    /// Makes the store's own connection again and reads the store through
    /// it: `Ok` once the server accepts connections and answers reads
    /// (after a restart, its recovery or loading done).
    pub fn reconnect_admin(self) -> Result<(), String> {
        match self.side() {
            Side::Sim(_) => Ok(()),
            Side::Server(server) => server.reconnect_admin(),
        }
    }

    /// Ends the store once traffic has ended: the sim's thread stops; a real
    /// store's table is dropped, or its keys deleted.
    pub fn stop(self) -> Result<(), String> {
        match self.side() {
            Side::Sim(sim) => {
                sim.stop();
                Ok(())
            }
            Side::Server(server) => server.books().reset(server.rows()),
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
