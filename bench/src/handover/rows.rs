//! The handover's rows, on PostgreSQL (`super::rows_pg`) or Redis
//! (`super::rows_redis`): per key a `version`, an `owner_epoch`, a
//! `last_seq` and the list of sequence numbers `applied`, in the order they
//! were applied.
//!
//! An owner reaches the rows through a [`RowConnection`] (one per shard,
//! and one for its takes); the coordinator, through [`RowStore`], creates
//! them afresh, reads them back at the end and removes them.
//!
//! | step | PostgreSQL (table `ferry_handover`) | Redis (hash `ferry-handover:{k}`, list `…:applied`) |
//! | --- | --- | --- |
//! | take | `INSERT … ON CONFLICT DO UPDATE SET owner_epoch … WHERE owner_epoch <= $epoch RETURNING last_seq` | a script: the same test and set, answers `last_seq` |
//! | read | `SELECT version, owner_epoch` | `HMGET version owner_epoch` |
//! | write | `UPDATE … applied = applied \|\| $seqs … WHERE key AND version AND owner_epoch` | a script checking both, then `RPUSH` |

use std::rc::Rc;

use crate::store::StoreAddress;

pub use super::row::{RowState, StoredRow, Written};
use super::rows_pg::{PgRowStore, PgRows};
use super::rows_redis::{RedisRowStore, RedisRows};
use super::Fence;

/// One connection to the rows, for an owner's batches and takes.
#[derive(Clone)]
pub enum RowConnection {
    /// A PostgreSQL client with the statements prepared.
    Postgres(Rc<PgRows>),
    /// A multiplexed Redis connection.
    Redis(RedisRows),
}

impl RowConnection {
    /// Connects to the store at `address`, on the calling thread's tokio
    /// runtime; `fence` says whether its writes check the owner epoch.
    pub async fn connect(address: &StoreAddress, fence: Fence) -> Result<Self, String> {
        match address {
            StoreAddress::Postgres(url) => PgRows::connect(url, &address.to_string(), fence)
                .await
                .map(|rows| RowConnection::Postgres(Rc::new(rows))),
            StoreAddress::Redis(url) => RedisRows::connect(url, &address.to_string(), fence)
                .await
                .map(RowConnection::Redis),
            StoreAddress::Sim => Err(NEEDS_A_SERVER.to_string()),
        }
    }

    /// Takes `key`'s row for an owner assigned it at `epoch`, in one
    /// statement: raises `owner_epoch` to `epoch` unless the row holds a
    /// higher one, creating the row if it is not there. Answers the row's
    /// `last_seq`, or `None` if an owner with a newer epoch holds the key.
    pub async fn take(&self, key: u64, epoch: u64) -> Result<Option<u64>, String> {
        match self {
            RowConnection::Postgres(pg) => pg.take(key, epoch).await,
            RowConnection::Redis(redis) => redis.take(key, epoch).await,
        }
    }

    /// Reads `key`'s version and owner epoch.
    pub async fn read(&self, key: u64) -> Result<RowState, String> {
        match self {
            RowConnection::Postgres(pg) => pg.read(key).await,
            RowConnection::Redis(redis) => redis.read(key).await,
        }
    }

    /// Appends `seqs` to `key`'s row and sets `last_seq` to the last of
    /// them, if the row still has `version` (and, with the fence on,
    /// `epoch`).
    pub async fn write(
        &self,
        key: u64,
        version: u64,
        epoch: u64,
        seqs: &[u64],
    ) -> Result<Written, String> {
        debug_assert!(!seqs.is_empty());
        match self {
            RowConnection::Postgres(pg) => pg.write(key, version, epoch, seqs).await,
            RowConnection::Redis(redis) => redis.write(key, version, epoch, seqs).await,
        }
    }
}

/// The coordinator's hold on the rows: set-up, read-back, clean-up.
pub enum RowStore {
    /// Table `ferry_handover` on a PostgreSQL server.
    Postgres(PgRowStore),
    /// Hashes and lists `ferry-handover:*` on a Redis server.
    Redis(RedisRowStore),
}

impl RowStore {
    /// Connects to `address` and removes rows a previous run left for
    /// keys `0..keys` (PostgreSQL: the table is made afresh). Owners
    /// create the rows when they take them.
    pub fn open(address: &StoreAddress, keys: u64) -> Result<Self, String> {
        let shown = address.to_string();
        match address {
            StoreAddress::Postgres(url) => {
                PgRowStore::open(url, &shown, keys).map(RowStore::Postgres)
            }
            StoreAddress::Redis(url) => RedisRowStore::open(url, &shown, keys).map(RowStore::Redis),
            StoreAddress::Sim => Err(NEEDS_A_SERVER.to_string()),
        }
    }

    /// Every row there is, by key.
    pub fn read_back(&self) -> Result<Vec<StoredRow>, String> {
        match self {
            RowStore::Postgres(pg) => pg.read_back(),
            RowStore::Redis(redis) => redis.read_back(),
        }
    }

    /// Removes every row.
    pub fn remove(&self) -> Result<(), String> {
        match self {
            RowStore::Postgres(pg) => pg.remove(),
            RowStore::Redis(redis) => redis.remove(),
        }
    }
}

/// Why the simulated store will not do.
const NEEDS_A_SERVER: &str = "the handover runs owners in separate processes, which share only a real store: use --store postgres://… or --store redis://…";
