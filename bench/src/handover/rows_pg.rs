//! The handover's rows on PostgreSQL: table `ferry_handover (key bigint
//! primary key, version bigint, owner_epoch bigint, last_seq bigint,
//! applied bigint[])`, every statement its own transaction.
//!
//! A write that updates no row does not say why; with the fence on, a read
//! of the row then tells a fence (another epoch) from a conflict (the
//! version moved), as `docs/scale-out.md` describes. That read costs a
//! round trip only on a refused write. Without the fence every refused
//! write is a conflict.

use tokio_postgres::types::Type;
use tokio_postgres::{Client, Config, Statement};

use crate::store::admin_runtime;
use crate::store::on_postgres::{connect, said};
use crate::store::CONNECT_TIMEOUT;

use super::row::{RowState, StoredRow, Written};
use super::Fence;

/// The table the handover creates, reads back and drops.
pub const TABLE: &str = "ferry_handover";

/// Takes the row (creating it if missing): raises `owner_epoch` unless the
/// row holds a higher one; no row returned means it does.
const TAKE: &str = "INSERT INTO ferry_handover (key, version, owner_epoch, last_seq, applied) \
                    VALUES ($1, 0, $2, 0, '{}') \
                    ON CONFLICT (key) DO UPDATE SET owner_epoch = EXCLUDED.owner_epoch \
                    WHERE ferry_handover.owner_epoch <= EXCLUDED.owner_epoch \
                    RETURNING last_seq";

const READ: &str = "SELECT version, owner_epoch FROM ferry_handover WHERE key = $1";

/// The conditional write, fenced: the version read and the writer's epoch.
const WRITE_FENCED: &str = "UPDATE ferry_handover \
                            SET version = version + 1, last_seq = $4, applied = applied || $5 \
                            WHERE key = $1 AND version = $2 AND owner_epoch = $3";

/// The control: the version read alone.
const WRITE_UNFENCED: &str = "UPDATE ferry_handover \
                              SET version = version + 1, last_seq = $3, applied = applied || $4 \
                              WHERE key = $1 AND version = $2";

/// One connection, with the take, the read and the write prepared.
pub struct PgRows {
    client: Client,
    take: Statement,
    read: Statement,
    write: Statement,
    fence: Fence,
}

impl PgRows {
    /// Connects to `url` (shown as `shown`) and prepares the statements.
    pub(super) async fn connect(url: &str, shown: &str, fence: Fence) -> Result<PgRows, String> {
        let client = connect(&config(url, shown)?, shown).await?;
        let write_sql = match fence {
            Fence::On => WRITE_FENCED,
            Fence::Off => WRITE_UNFENCED,
        };
        let write_types: &[Type] = match fence {
            Fence::On => &[
                Type::INT8,
                Type::INT8,
                Type::INT8,
                Type::INT8,
                Type::INT8_ARRAY,
            ],
            Fence::Off => &[Type::INT8, Type::INT8, Type::INT8, Type::INT8_ARRAY],
        };
        let prepare = |sql: &'static str, types: &'static [Type]| {
            let client = &client;
            async move {
                client
                    .prepare_typed(sql, types)
                    .await
                    .map_err(|err| format!("{shown}: could not prepare `{sql}`: {}", said(&err)))
            }
        };
        let take = prepare(TAKE, &[Type::INT8, Type::INT8]).await?;
        let read = prepare(READ, &[Type::INT8]).await?;
        let write = prepare(write_sql, write_types).await?;
        Ok(PgRows {
            client,
            take,
            read,
            write,
            fence,
        })
    }

    pub(super) async fn take(&self, key: u64, epoch: u64) -> Result<Option<u64>, String> {
        let row = self
            .client
            .query_opt(&self.take, &[&sql_int(key)?, &sql_int(epoch)?])
            .await
            .map_err(|err| said(&err))?;
        row.map(|row| column(&row, 0)).transpose()
    }

    pub(super) async fn read(&self, key: u64) -> Result<RowState, String> {
        let row = self
            .client
            .query_one(&self.read, &[&sql_int(key)?])
            .await
            .map_err(|err| format!("reading key {key}: {}", said(&err)))?;
        Ok(RowState {
            version: column(&row, 0)?,
            owner_epoch: column(&row, 1)?,
        })
    }

    pub(super) async fn write(
        &self,
        key: u64,
        version: u64,
        epoch: u64,
        seqs: &[u64],
    ) -> Result<Written, String> {
        let last = *seqs.last().ok_or("a write of no seqs")?;
        let seqs: Vec<i64> = seqs.iter().map(|&s| sql_int(s)).collect::<Result<_, _>>()?;
        let (key_sql, version_sql, last_sql) = (sql_int(key)?, sql_int(version)?, sql_int(last)?);
        let updated = match self.fence {
            Fence::On => {
                let epoch_sql = sql_int(epoch)?;
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
                    [&key_sql, &version_sql, &epoch_sql, &last_sql, &seqs];
                self.client.execute(&self.write, &params).await
            }
            Fence::Off => {
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                    [&key_sql, &version_sql, &last_sql, &seqs];
                self.client.execute(&self.write, &params).await
            }
        }
        .map_err(|err| format!("writing key {key}: {}", said(&err)))?;
        match (updated, self.fence) {
            (1, _) => Ok(Written::Applied),
            (_, Fence::Off) => Ok(Written::Conflict),
            // The read tells which part of the condition failed.
            (_, Fence::On) if self.read(key).await?.owner_epoch != epoch => Ok(Written::Fenced),
            (_, Fence::On) => Ok(Written::Conflict),
        }
    }
}

/// The coordinator's own connection: set-up, read-back, clean-up.
pub struct PgRowStore {
    runtime: tokio::runtime::Runtime,
    client: Client,
    shown: String,
}

impl PgRowStore {
    /// Connects and creates the table afresh (dropping one left over).
    pub(super) fn open(url: &str, shown: &str, keys: u64) -> Result<PgRowStore, String> {
        sql_int(keys)?;
        let config = config(url, shown)?;
        let runtime = admin_runtime()?;
        let client = runtime.block_on(connect(&config, shown))?;
        let create = format!(
            "DROP TABLE IF EXISTS {TABLE}; \
             CREATE TABLE {TABLE} (key bigint PRIMARY KEY, version bigint NOT NULL, \
             owner_epoch bigint NOT NULL, last_seq bigint NOT NULL, applied bigint[] NOT NULL)"
        );
        runtime
            .block_on(client.batch_execute(&create))
            .map_err(|err| format!("{shown}: could not create table {TABLE}: {}", said(&err)))?;
        Ok(PgRowStore {
            runtime,
            client,
            shown: shown.to_string(),
        })
    }

    pub(super) fn read_back(&self) -> Result<Vec<StoredRow>, String> {
        let sql = format!(
            "SELECT key, version, owner_epoch, last_seq, applied FROM {TABLE} ORDER BY key"
        );
        let rows = self
            .runtime
            .block_on(self.client.query(&sql, &[]))
            .map_err(|err| {
                format!(
                    "{}: could not read {TABLE} back: {}",
                    self.shown,
                    said(&err)
                )
            })?;
        rows.iter()
            .map(|row| {
                let applied: Vec<i64> = row.try_get(4).map_err(|err| said(&err))?;
                Ok(StoredRow {
                    key: column(row, 0)?,
                    version: column(row, 1)?,
                    owner_epoch: column(row, 2)?,
                    last_seq: column(row, 3)?,
                    applied: applied.into_iter().map(|s| s as u64).collect(),
                })
            })
            .collect()
    }

    pub(super) fn remove(&self) -> Result<(), String> {
        self.runtime
            .block_on(
                self.client
                    .batch_execute(&format!("DROP TABLE IF EXISTS {TABLE}")),
            )
            .map_err(|err| format!("{}: could not drop {TABLE}: {}", self.shown, said(&err)))
    }
}

fn config(url: &str, shown: &str) -> Result<Config, String> {
    let mut config: Config = url
        .parse()
        .map_err(|err| format!("`{shown}` is not a PostgreSQL URL: {}", said(&err)))?;
    config.connect_timeout(CONNECT_TIMEOUT);
    Ok(config)
}

/// A bigint column that holds no negative number.
fn column(row: &tokio_postgres::Row, index: usize) -> Result<u64, String> {
    let value: i64 = row.try_get(index).map_err(|err| said(&err))?;
    u64::try_from(value).map_err(|_| format!("column {index} holds {value}"))
}

fn sql_int(value: u64) -> Result<i64, String> {
    i64::try_from(value).map_err(|_| format!("{value} does not fit PostgreSQL's bigint"))
}
