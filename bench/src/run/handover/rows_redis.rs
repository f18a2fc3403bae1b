//! The handover's keys on Redis: the library's `RedisStore` under prefix
//! `ferry-handover`, so key `k` is the string `ferry-handover:{k}`, its
//! row `{version}:{epoch}:{state}`, written by the library's script. The
//! coordinator deletes keys `0..keys` before the owners start and after
//! the run, and reads them back in between, in one pipeline.

use redis::aio::MultiplexedConnection;
use redis::Client;

use crate::store::admin_runtime;
use crate::store::on_redis::{connect, entity_row};

use super::row::StoredRow;

/// The library's prefix of every key the handover writes.
pub const PREFIX: &str = "ferry-handover";

/// The coordinator's own connection: set-up, read-back, clean-up.
pub struct RedisRowStore {
    runtime: tokio::runtime::Runtime,
    connection: MultiplexedConnection,
    shown: String,
    keys: u64,
}

impl RedisRowStore {
    /// Connects and deletes what a previous run left.
    pub(super) fn open(url: &str, shown: &str, keys: u64) -> Result<RedisRowStore, String> {
        let client =
            Client::open(url).map_err(|err| format!("`{shown}` is not a Redis URL: {err}"))?;
        let runtime = admin_runtime()?;
        let connection = runtime.block_on(connect(&client, shown))?;
        let store = RedisRowStore {
            runtime,
            connection,
            shown: shown.to_string(),
            keys,
        };
        store.remove()?;
        Ok(store)
    }

    pub(super) fn read_back(&self) -> Result<Vec<StoredRow>, String> {
        let mut pipe = redis::pipe();
        for key in 0..self.keys {
            pipe.cmd("GET").arg(row_name(key));
        }
        let replies: Vec<Option<Vec<u8>>> = self
            .runtime
            .block_on(pipe.query_async(&mut self.connection.clone()))
            .map_err(|err| format!("{}: could not read the keys back: {err}", self.shown))?;
        (0..self.keys)
            .zip(replies)
            .filter_map(|(key, stored)| {
                let stored = stored?;
                Some(
                    entity_row(&stored)
                        .and_then(|(version, state)| StoredRow::decode(key, version, Some(state))),
                )
            })
            .collect()
    }

    pub(super) fn remove(&self) -> Result<(), String> {
        let mut pipe = redis::pipe();
        for key in 0..self.keys {
            pipe.cmd("UNLINK").arg(row_name(key)).ignore();
        }
        self.runtime
            .block_on(pipe.query_async::<()>(&mut self.connection.clone()))
            .map_err(|err| format!("{}: could not delete the keys: {err}", self.shown))
    }
}

/// `ferry-handover:{key}`, as the library names key `key`'s row.
fn row_name(key: u64) -> String {
    format!("{PREFIX}:{key}")
}
