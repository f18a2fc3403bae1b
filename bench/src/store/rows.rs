//! A `ferry::entity` store's rows as the tool itself reaches them, for
//! its runs' set-up, read-back and clean-up: read back through the
//! library's own connection (so the rows are decoded the library's way),
//! and removed (PostgreSQL: the table and its events table dropped, to be
//! made again by the next connection; Redis: every key under the prefix
//! deleted).
//!
//! Each call makes a connection of its own, used once: a fault that ends
//! every client connection of the server (`--fault kill`) cannot leave the
//! read-back without one.

use std::ops::Range;

use ferry::entity::{Connection, PostgresStore, RedisStore, Row, Store as _};
use tokio_postgres::Config;

use super::on_postgres::{connect, said};
use super::{admin_runtime, StoreAddress, CONNECT_TIMEOUT};

/// Keys a read-back asks for in one request, and keys a Redis clean-up
/// deletes at once.
const KEYS_PER_REQUEST: usize = 1_000;

/// One store's rows: a PostgreSQL table or a Redis prefix.
pub struct Rows {
    on: On,
    /// The address as shown (no password).
    shown: String,
    runtime: tokio::runtime::Runtime,
}

enum On {
    Postgres {
        store: PostgresStore,
        config: Config,
        table: String,
    },
    Redis {
        store: RedisStore,
        client: redis::Client,
        prefix: String,
    },
}

impl Rows {
    /// Table `table` of the PostgreSQL server at `config` (shown as
    /// `shown`).
    pub fn postgres(mut config: Config, table: &str, shown: &str) -> Result<Rows, String> {
        config.connect_timeout(CONNECT_TIMEOUT);
        let store = PostgresStore::from_config(config.clone(), table)
            .map_err(|err| format!("{shown}: {err}"))?;
        Rows::new(
            On::Postgres {
                store,
                config,
                table: table.to_string(),
            },
            shown,
        )
    }

    /// The keys under `prefix` on the Redis server of `client` (shown as
    /// `shown`).
    pub fn redis(client: redis::Client, prefix: &str, shown: &str) -> Result<Rows, String> {
        let store = RedisStore::from_client(client.clone(), prefix)
            .map_err(|err| format!("{shown}: {err}"))?;
        Rows::new(
            On::Redis {
                store,
                client,
                prefix: prefix.to_string(),
            },
            shown,
        )
    }

    /// The rows named `name` (a table, or a key prefix) of the server at
    /// `address`; `None` for an address that is not a server's.
    pub fn at(address: &StoreAddress, name: &str) -> Option<Result<Rows, String>> {
        let shown = address.to_string();
        Some(match address {
            StoreAddress::Postgres(url) => url
                .parse()
                .map_err(|err| format!("`{shown}` is not a PostgreSQL URL: {}", said(&err)))
                .and_then(|config| Rows::postgres(config, name, &shown)),
            StoreAddress::Redis(url) => redis::Client::open(url.as_str())
                .map_err(|err| format!("`{shown}` is not a Redis URL: {err}"))
                .and_then(|client| Rows::redis(client, name, &shown)),
            StoreAddress::Sim | StoreAddress::Private(_) => return None,
        })
    }

    fn new(on: On, shown: &str) -> Result<Rows, String> {
        Ok(Rows {
            on,
            shown: shown.to_string(),
            runtime: admin_runtime()?,
        })
    }

    /// Every key of `keys` that was ever written, with its row, in key
    /// order.
    pub fn read(&self, keys: Range<u64>) -> Result<Vec<(u64, Row)>, String> {
        let failed = |err: ferry::entity::StoreError| format!("reading the keys back: {err}");
        self.runtime.block_on(async {
            match &self.on {
                On::Postgres { store, .. } => {
                    let connection = store.connect().await.map_err(failed)?;
                    read_all(keys, &connection).await
                }
                On::Redis { store, .. } => {
                    let connection = ferry::entity::Store::<u64>::connect(store)
                        .await
                        .map_err(failed)?;
                    read_all(keys, &connection).await
                }
            }
            .map_err(failed)
        })
    }

    /// Removes every row (see the module docs).
    pub fn remove(&self) -> Result<(), String> {
        let shown = &self.shown;
        self.runtime.block_on(async {
            match &self.on {
                On::Postgres { config, table, .. } => {
                    let client = connect(config, shown).await?;
                    let drop = format!(r#"DROP TABLE IF EXISTS "{table}", "{table}_events""#);
                    client
                        .batch_execute(&drop)
                        .await
                        .map_err(|err| format!("{shown}: could not drop {table}: {}", said(&err)))
                }
                On::Redis { client, prefix, .. } => {
                    let connection = super::on_redis::connect(client, shown).await?;
                    unlink_prefix(connection, prefix)
                        .await
                        .map_err(|err| format!("{shown}: could not delete the keys: {err}"))
                }
            }
        })
    }
}

/// Every written row of `keys`, a request a chunk.
async fn read_all<C: Connection<u64>>(
    keys: Range<u64>,
    connection: &C,
) -> Result<Vec<(u64, Row)>, ferry::entity::StoreError> {
    let keys: Vec<u64> = keys.collect();
    let mut written = Vec::new();
    for chunk in keys.chunks(KEYS_PER_REQUEST) {
        let asked: Vec<&u64> = chunk.iter().collect();
        let rows = connection.read(&asked).await?;
        written.extend(
            chunk
                .iter()
                .copied()
                .zip(rows)
                .filter(|(_, row)| row.state.is_some() || row.version > 0),
        );
    }
    Ok(written)
}

/// Deletes every key under `prefix:`, a scan's page at a time.
async fn unlink_prefix(
    mut connection: redis::aio::MultiplexedConnection,
    prefix: &str,
) -> Result<(), redis::RedisError> {
    let mut cursor = 0_u64;
    loop {
        let (next, names): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(KEYS_PER_REQUEST)
            .query_async(&mut connection)
            .await?;
        if !names.is_empty() {
            redis::cmd("UNLINK")
                .arg(&names)
                .query_async::<u64>(&mut connection)
                .await?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}
