//! The rows a Kafka run writes, on PostgreSQL: per partition an owner
//! epoch (`{prefix}_epochs`), per key what was applied (`{prefix}_keys`).
//! Every system of the run, whatever its language, writes the same tables
//! in the same way, so one read-back judges them all:
//!
//! ```sql
//! CREATE TABLE {p}_epochs (topic text NOT NULL, partition int NOT NULL,
//!     epoch bigint NOT NULL, PRIMARY KEY (topic, partition));
//! CREATE TABLE {p}_keys (topic text NOT NULL, key text NOT NULL,
//!     applied bigint NOT NULL, last_seq bigint NOT NULL, disorder bigint NOT NULL,
//!     last_offset bigint NOT NULL, owner_epoch bigint NOT NULL,
//!     PRIMARY KEY (topic, key));
//! ```
//!
//! Before each system the tables are made afresh and every key produced
//! gets its row (`applied = last_seq = disorder = owner_epoch = 0`,
//! `last_offset = -1`), so that a write is always an update of a row it
//! can lock ([`crate::kafka::write`](mod@crate::kafka::write)). This is the parent's side: set-up,
//! the read-back. The tables stay after a run, for a look at the rows
//! (the last system's); the next run makes them afresh.

use std::collections::BTreeMap;

use tokio_postgres::Client;

use crate::store::admin_runtime;
use crate::store::on_postgres::{connect, said};

use super::produce::Produced;

/// The default `--table-prefix`.
pub const DEFAULT_PREFIX: &str = "ferry_kafka";

/// A key's row as read back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyRow {
    /// Records applied (a record applied twice counts twice).
    pub applied: u64,
    /// The seq of the last record applied.
    pub last_seq: u64,
    /// Records applied whose seq was not the previous one's plus one.
    pub disorder: u64,
    /// The offset of the last record applied (-1: none).
    pub last_offset: i64,
}

/// The parent's connection to the rows.
pub struct Rows {
    runtime: tokio::runtime::Runtime,
    client: Client,
    prefix: String,
    shown: String,
}

impl Rows {
    /// Connects to `url` (shown as `shown`) for tables prefixed `prefix`.
    pub fn open(url: &str, shown: &str, prefix: &str) -> Result<Rows, String> {
        check_prefix(prefix)?;
        let config = url
            .parse()
            .map_err(|err| format!("`{shown}` is not a PostgreSQL URL: {}", said(&err)))?;
        let runtime = admin_runtime()?;
        let client = runtime.block_on(connect(&config, shown))?;
        Ok(Rows {
            runtime,
            client,
            prefix: prefix.to_owned(),
            shown: shown.to_owned(),
        })
    }

    /// Drops and creates both tables, and gives each key produced its row.
    pub fn reset(&self, topic: &str, produced: &Produced) -> Result<(), String> {
        let p = &self.prefix;
        let create = format!(
            "DROP TABLE IF EXISTS {p}_epochs; DROP TABLE IF EXISTS {p}_keys; \
             CREATE TABLE {p}_epochs (topic text NOT NULL, partition int NOT NULL, \
               epoch bigint NOT NULL, PRIMARY KEY (topic, partition)); \
             CREATE TABLE {p}_keys (topic text NOT NULL, key text NOT NULL, \
               applied bigint NOT NULL, last_seq bigint NOT NULL, disorder bigint NOT NULL, \
               last_offset bigint NOT NULL, owner_epoch bigint NOT NULL, \
               PRIMARY KEY (topic, key))"
        );
        self.runtime
            .block_on(self.client.batch_execute(&create))
            .map_err(|err| self.failed("create the tables", &err))?;
        let keys: Vec<&str> = produced.per_key.keys().map(String::as_str).collect();
        let insert = format!(
            "INSERT INTO {p}_keys (topic, key, applied, last_seq, disorder, last_offset, owner_epoch) \
             SELECT $1, k, 0, 0, 0, -1, 0 FROM unnest($2::text[]) AS k"
        );
        self.runtime
            .block_on(self.client.execute(&insert, &[&topic, &keys]))
            .map_err(|err| self.failed("create the keys' rows", &err))?;
        Ok(())
    }

    /// Every key's row of `topic`.
    pub fn read_back(&self, topic: &str) -> Result<BTreeMap<String, KeyRow>, String> {
        let sql = format!(
            "SELECT key, applied, last_seq, disorder, last_offset FROM {}_keys WHERE topic = $1",
            self.prefix
        );
        let rows = self
            .runtime
            .block_on(self.client.query(&sql, &[&topic]))
            .map_err(|err| self.failed("read the rows back", &err))?;
        rows.iter()
            .map(|row| {
                let key: String = row.try_get(0).map_err(|err| said(&err))?;
                let last_offset: i64 = row.try_get(4).map_err(|err| said(&err))?;
                let read = KeyRow {
                    applied: count(row, 1)?,
                    last_seq: count(row, 2)?,
                    disorder: count(row, 3)?,
                    last_offset,
                };
                Ok((key, read))
            })
            .collect()
    }

    /// Records of `topic` applied so far, duplicates included: one sum,
    /// cheap enough to read every few milliseconds.
    pub fn applied(&self, topic: &str) -> Result<u64, String> {
        let sql = format!(
            "SELECT coalesce(sum(applied), 0)::bigint FROM {}_keys WHERE topic = $1",
            self.prefix
        );
        let row = self
            .runtime
            .block_on(self.client.query_one(&sql, &[&topic]))
            .map_err(|err| self.failed("count the records applied", &err))?;
        count(&row, 0)
    }

    fn failed(&self, what: &str, err: &tokio_postgres::Error) -> String {
        format!("{}: could not {what}: {}", self.shown, said(err))
    }
}

/// Column `index` of `row`, a count: a `bigint` that is never negative.
fn count(row: &tokio_postgres::Row, index: usize) -> Result<u64, String> {
    let value: i64 = row.try_get(index).map_err(|err| said(&err))?;
    u64::try_from(value).map_err(|_| format!("a count of {value}"))
}

/// A prefix that is a plain SQL identifier: `[a-z_][a-z0-9_]*`, at most
/// 40 characters (PostgreSQL's names stop at 63).
///
/// ```
/// use ferry_bench::kafka::rows::check_prefix;
///
/// assert!(check_prefix("ferry_kafka").is_ok());
/// assert!(check_prefix("drop table; --").is_err());
/// ```
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    let mut chars = prefix.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if first_ok && rest_ok && prefix.len() <= 40 {
        Ok(())
    } else {
        Err(format!(
            "--table-prefix `{prefix}`: use lower-case letters, digits and `_`, starting with a letter or `_`, at most 40 characters"
        ))
    }
}
