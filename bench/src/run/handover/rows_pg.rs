//! The handover's keys on PostgreSQL: the library's `PostgresStore` on
//! table `ferry_handover (key bigint primary key, version bigint, epoch
//! bigint, state bytea)` (and its `ferry_handover_events`, which a state
//! never uses), created by the first owner's shard that connects. The
//! coordinator drops both before the owners start and after the run, and
//! reads the table back in between.

use tokio_postgres::{Client, Config};

use crate::store::admin_runtime;
use crate::store::on_postgres::{connect, said};
use crate::store::CONNECT_TIMEOUT;

use super::row::StoredRow;

/// The table the owners' engines write (the library creates it).
pub const TABLE: &str = "ferry_handover";

/// The library's second table, beside [`TABLE`]: a log's events.
pub const EVENTS_TABLE: &str = "ferry_handover_events";

/// The coordinator's own connection: set-up, read-back, clean-up.
pub struct PgRowStore {
    runtime: tokio::runtime::Runtime,
    client: Client,
    shown: String,
}

impl PgRowStore {
    /// Connects and drops the tables a previous run left.
    pub(super) fn open(url: &str, shown: &str, keys: u64) -> Result<PgRowStore, String> {
        i64::try_from(keys).map_err(|_| format!("{keys} keys do not fit PostgreSQL's bigint"))?;
        let mut config: Config = url
            .parse()
            .map_err(|err| format!("`{shown}` is not a PostgreSQL URL: {}", said(&err)))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        let runtime = admin_runtime()?;
        let client = runtime.block_on(connect(&config, shown))?;
        let store = PgRowStore {
            runtime,
            client,
            shown: shown.to_string(),
        };
        store.remove()?;
        Ok(store)
    }

    pub(super) fn read_back(&self) -> Result<Vec<StoredRow>, String> {
        let sql = format!("SELECT key, version, state FROM {TABLE} ORDER BY key");
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
                let state: Option<Vec<u8>> = row.try_get(2).map_err(|err| said(&err))?;
                StoredRow::decode(column(row, 0)?, column(row, 1)?, state.as_deref())
            })
            .collect()
    }

    pub(super) fn remove(&self) -> Result<(), String> {
        let drop = format!("DROP TABLE IF EXISTS {TABLE}, {EVENTS_TABLE}");
        self.runtime
            .block_on(self.client.batch_execute(&drop))
            .map_err(|err| format!("{}: could not drop {TABLE}: {}", self.shown, said(&err)))
    }
}

/// A bigint column that holds no negative number.
fn column(row: &tokio_postgres::Row, index: usize) -> Result<u64, String> {
    let value: i64 = row.try_get(index).map_err(|err| said(&err))?;
    u64::try_from(value).map_err(|_| format!("column {index} holds {value}"))
}
