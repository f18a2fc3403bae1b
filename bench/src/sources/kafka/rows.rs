//! The rows a Kafka run writes, on PostgreSQL: per partition an owner
//! epoch (`{prefix}_epochs`), per key what was applied (`{prefix}_keys`),
//! written by partition-serial and the Java peer; and ferry's entities
//! (`{prefix}_entities`), written by `ferry::entity`'s `PostgresStore`,
//! each key's state a [`KeyRow`] as JSON. Every system keeps per key the
//! same four figures, so one read-back judges them all:
//!
//! ```sql
//! CREATE TABLE {p}_epochs (topic text NOT NULL, partition int NOT NULL,
//!     epoch bigint NOT NULL, PRIMARY KEY (topic, partition));
//! CREATE TABLE {p}_keys (topic text NOT NULL, key text NOT NULL,
//!     applied bigint NOT NULL, last_seq bigint NOT NULL, disorder bigint NOT NULL,
//!     last_offset bigint NOT NULL, owner_epoch bigint NOT NULL,
//!     PRIMARY KEY (topic, key));
//! -- made by ferry::entity (with {p}_entities_events, unused here):
//! -- {p}_entities (key text PRIMARY KEY, version bigint, epoch bigint, state bytea),
//! -- state = {"applied":…,"last_seq":…,"disorder":…,"last_offset":…}
//! ```
//!
//! Before each system the tables are made afresh and every key produced
//! gets its row in `{p}_keys` (`applied = last_seq = disorder =
//! owner_epoch = 0`, `last_offset = -1`), so that a write there is always
//! an update of a row it can lock
//! ([`crate::sources::kafka::write`](mod@crate::sources::kafka::write)); ferry's entity
//! table starts empty (a key never written folds from
//! [`KeyRow::default`]). Only the system running writes, so a key's
//! figures are its entity's if it has one, else its `{p}_keys` row. This
//! is the parent's side: set-up, the read-back. The tables stay after a
//! run, for a look at the rows (the last system's); the next run makes
//! them afresh.

use std::collections::BTreeMap;

use ferry::entity::{PostgresStore, Store};
use serde::{Deserialize, Serialize};
use tokio_postgres::{Client, Config};

use crate::store::admin_runtime;
use crate::store::on_postgres::{connect, said};

use super::produce::Produced;

/// The default `--table-prefix`.
pub const DEFAULT_PREFIX: &str = "ferry_kafka";

/// The entity table of ferry's members for tables prefixed `prefix` (and
/// `ferry::entity`'s events table beside it, this name and `_events`).
///
/// ```
/// assert_eq!(ferry_bench::sources::kafka::rows::entity_table("ferry_kafka"), "ferry_kafka_entities");
/// ```
pub fn entity_table(prefix: &str) -> String {
    format!("{prefix}_entities")
}

/// A key's figures: its row in `{p}_keys` as read back, or ferry's state
/// of the key (stored as JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

impl Default for KeyRow {
    /// Nothing applied: offset 0 is a record's, so none is -1.
    fn default() -> KeyRow {
        KeyRow {
            applied: 0,
            last_seq: 0,
            disorder: 0,
            last_offset: -1,
        }
    }
}

/// The parent's connection to the rows.
pub struct Rows {
    runtime: tokio::runtime::Runtime,
    client: Client,
    /// For `ferry::entity`, which makes its own tables.
    config: Config,
    prefix: String,
    /// [`entity_table`] of the prefix.
    entities: String,
    shown: String,
}

impl Rows {
    /// Connects to `url` (shown as `shown`) for tables prefixed `prefix`.
    pub fn open(url: &str, shown: &str, prefix: &str) -> Result<Rows, String> {
        check_prefix(prefix)?;
        let config: Config = url
            .parse()
            .map_err(|err| format!("`{shown}` is not a PostgreSQL URL: {}", said(&err)))?;
        let runtime = admin_runtime()?;
        let client = runtime.block_on(connect(&config, shown))?;
        Ok(Rows {
            runtime,
            client,
            config,
            prefix: prefix.to_owned(),
            entities: entity_table(prefix),
            shown: shown.to_owned(),
        })
    }

    /// Drops and creates every table, and gives each key produced its row
    /// in `{p}_keys`; ferry's entity table is made empty, by
    /// `ferry::entity` itself.
    pub fn reset(&self, topic: &str, produced: &Produced) -> Result<(), String> {
        let (p, e) = (&self.prefix, &self.entities);
        let create = format!(
            "DROP TABLE IF EXISTS {p}_epochs; DROP TABLE IF EXISTS {p}_keys; \
             DROP TABLE IF EXISTS {e}, {e}_events; \
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
        // A connection of `ferry::entity`'s makes its tables (as a member's
        // shard would), so that the read-back always finds them.
        let store = PostgresStore::from_config(self.config.clone(), e)
            .map_err(|err| format!("{}: table {e}: {err}", self.shown))?;
        self.runtime
            .block_on(async { Store::<String>::connect(&store).await.map(drop) })
            .map_err(|err| format!("{}: could not make table {e}: {err}", self.shown))
    }

    /// Every key's figures: its row of `topic` in `{p}_keys`, or ferry's
    /// entity of it.
    pub fn read_back(&self, topic: &str) -> Result<BTreeMap<String, KeyRow>, String> {
        let mut rows = self.read_keys(topic)?;
        for (key, entity) in self.read_entities()? {
            if rows.get(&key).is_some_and(|row| row.applied > 0) {
                return Err(format!(
                    "{}: key {key} was written both in {}_keys and in {}: one system at a time \
                     writes the tables",
                    self.shown, self.prefix, self.entities
                ));
            }
            rows.insert(key, entity);
        }
        Ok(rows)
    }

    /// Every key's row of `topic` in `{p}_keys`.
    fn read_keys(&self, topic: &str) -> Result<BTreeMap<String, KeyRow>, String> {
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

    /// ferry's entities: each key's state decoded. A key's version (the
    /// records its fold applied) must be the state's `applied`.
    fn read_entities(&self) -> Result<Vec<(String, KeyRow)>, String> {
        let e = &self.entities;
        let sql = format!("SELECT key, version, state FROM {e}");
        let rows = self
            .runtime
            .block_on(self.client.query(&sql, &[]))
            .map_err(|err| self.failed(&format!("read {e} back"), &err))?;
        rows.iter()
            .map(|row| {
                let key: String = row.try_get(0).map_err(|err| said(&err))?;
                let version = count(row, 1)?;
                let state: Option<Vec<u8>> = row.try_get(2).map_err(|err| said(&err))?;
                let state = state.ok_or_else(|| format!("{e}: key {key} has no state"))?;
                let read: KeyRow = serde_json::from_slice(&state).map_err(|err| {
                    let shown = String::from_utf8_lossy(&state);
                    format!("{e}: key {key}'s state `{shown}` is not a key's figures: {err}")
                })?;
                if read.applied != version {
                    return Err(format!(
                        "{e}: key {key} is at version {version}, but its state says {} applied",
                        read.applied
                    ));
                }
                Ok((key, read))
            })
            .collect()
    }

    /// Records of `topic` applied so far, duplicates included: one sum
    /// over `{p}_keys` and one over the entities' versions (each the
    /// records its key's fold applied), cheap enough to read every few
    /// milliseconds.
    pub fn applied(&self, topic: &str) -> Result<u64, String> {
        let sql = format!(
            "SELECT ((SELECT coalesce(sum(applied), 0) FROM {}_keys WHERE topic = $1) \
                   + (SELECT coalesce(sum(version), 0) FROM {}))::bigint",
            self.prefix, self.entities
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
/// use ferry_bench::sources::kafka::rows::check_prefix;
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
