//! The store on a Redis server (`--store redis://…`), through the `redis`
//! crate.
//!
//! Every system writes `ferry::entity`'s keys under [`ENTITY_PREFIX`]
//! through the library's `RedisStore`: ferry's systems through
//! `ferry::entity`'s engine, the others through its connections (see
//! [`conditional`](super::conditional)). The rows are read back and
//! removed by [`rows`](super::rows); this file holds the store's own
//! connection, for the faults' admin work.
//!
//! The server's CPU time is its own account of it (`INFO cpu`), so it is
//! known wherever the server runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ConnectionAddr};

use super::conditional::{Books, Linked};
use super::rows::Rows;
use super::{admin_runtime, lock, Server, CONNECT_TIMEOUT};

/// The prefix of every key the systems write, through `ferry::entity`'s
/// `RedisStore`: key `k` is the string `ferry-load-entity:{k}`, its row
/// `{version}:{epoch}:{state}`, the value as JSON.
/// Deleted at each reset and at the end.
pub const ENTITY_PREFIX: &str = "ferry-load-entity";

/// A Redis server holding the keys.
pub struct RedisStore {
    client: Client,
    /// Where batches' connections go instead, through `--fault`'s proxy.
    routed: Mutex<Option<Client>>,
    /// The address as shown (no password).
    shown: String,
    books: Books,
    /// The rows, as the store itself reads them back and removes them.
    rows: Rows,
    admin: Mutex<Admin>,
}

/// The store's own connection, for the faults' admin work.
struct Admin {
    runtime: tokio::runtime::Runtime,
    connection: MultiplexedConnection,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("address", &self.shown)
            .field("keys", &self.books.keys)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (shown as `shown`) and deletes keys left over.
    pub(super) fn open(url: &str, shown: &str, keys: u64) -> Result<RedisStore, String> {
        let client =
            Client::open(url).map_err(|err| format!("`{shown}` is not a Redis URL: {err}"))?;
        let runtime = admin_runtime()?;
        let connection = runtime.block_on(connect(&client, shown))?;
        let store = RedisStore {
            client: client.clone(),
            routed: Mutex::new(None),
            shown: shown.to_string(),
            books: Books::new(keys),
            rows: Rows::redis(client.clone(), ENTITY_PREFIX, shown)?,
            admin: Mutex::new(Admin {
                runtime,
                connection,
            }),
        };
        store.books.reset(&store.rows)?;
        Ok(store)
    }

    /// A connection of the library's for batches.
    pub(super) async fn connect(
        &'static self,
    ) -> Result<Arc<Linked<ferry::entity::RedisConnection>>, String> {
        Linked::connect(self.entity_store()?, &self.books).await
    }

    /// The `ferry::entity` store of every system, under
    /// [`ENTITY_PREFIX`], through `--fault`'s proxy once routed.
    pub(super) fn entity_store(&self) -> Result<ferry::entity::RedisStore, String> {
        let client = lock(&self.routed)
            .clone()
            .unwrap_or_else(|| self.client.clone());
        ferry::entity::RedisStore::from_client(client, ENTITY_PREFIX).map_err(|err| err.to_string())
    }
}

impl Server for RedisStore {
    fn books(&self) -> &Books {
        &self.books
    }

    fn rows(&self) -> &Rows {
        &self.rows
    }

    /// The server's host and port, from the URL.
    fn server_address(&self) -> Result<(String, u16), String> {
        match self.client.get_connection_info().addr() {
            ConnectionAddr::Tcp(host, port) => Ok((host.clone(), *port)),
            _ => Err(format!(
                "{}: --fault needs a plain TCP address (not TLS, not a Unix socket)",
                self.shown
            )),
        }
    }

    /// With the URL's database and credentials.
    fn route_through(&self, proxy: std::net::SocketAddr) -> Result<(), String> {
        let info = self
            .client
            .get_connection_info()
            .clone()
            .set_addr(ConnectionAddr::Tcp(proxy.ip().to_string(), proxy.port()));
        let client = Client::open(info)
            .map_err(|err| format!("{}: could not route through {proxy}: {err}", self.shown))?;
        *lock(&self.routed) = Some(client);
        Ok(())
    }

    /// `CLIENT KILL TYPE normal SKIPME yes`.
    fn kill_connections(&self) -> Result<u64, String> {
        let mut admin = lock(&self.admin);
        let Admin {
            runtime,
            connection,
        } = &mut *admin;
        let ended: u64 = runtime
            .block_on(
                redis::cmd("CLIENT")
                    .arg("KILL")
                    .arg("TYPE")
                    .arg("normal")
                    .arg("SKIPME")
                    .arg("yes")
                    .query_async(connection),
            )
            .map_err(|err| format!("{}: could not end the connections: {err}", self.shown))?;
        Ok(ended)
    }

    /// Once it answers a read (after a restart: once the data is loaded).
    fn reconnect_admin(&self) -> Result<(), String> {
        let mut admin = lock(&self.admin);
        let mut connection = admin.runtime.block_on(connect(&self.client, &self.shown))?;
        let _: Option<Vec<u8>> = admin
            .runtime
            .block_on(
                redis::cmd("GET")
                    .arg(format!("{ENTITY_PREFIX}:0"))
                    .query_async(&mut connection),
            )
            .map_err(|err| format!("{}: {err}", self.shown))?;
        admin.connection = connection;
        Ok(())
    }

    /// `used_cpu_sys` plus `used_cpu_user` of `INFO cpu`.
    fn server_cpu_time(&self) -> Option<Duration> {
        let mut admin = lock(&self.admin);
        let Admin {
            runtime,
            connection,
        } = &mut *admin;
        let info: String = runtime
            .block_on(redis::cmd("INFO").arg("cpu").query_async(connection))
            .ok()?;
        cpu_seconds(&info).map(Duration::from_secs_f64)
    }
}

/// `INFO cpu`'s user and system seconds, added.
fn cpu_seconds(info: &str) -> Option<f64> {
    let field = |name: &str| -> Option<f64> {
        info.lines()
            .find_map(|line| line.trim().strip_prefix(name)?.strip_prefix(':'))
            .and_then(|value| value.trim().parse().ok())
    };
    Some(field("used_cpu_sys")? + field("used_cpu_user")?)
}

/// A multiplexed connection to `client`'s server (shown as `shown`), with
/// no response timeout (see the module docs).
pub(crate) async fn connect(client: &Client, shown: &str) -> Result<MultiplexedConnection, String> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(None);
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|err| format!("could not connect to {shown}: {err} (is the server running?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_seconds_add_user_and_system() {
        let info = "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.0\r\n";
        assert_eq!(cpu_seconds(info), Some(3.75));
        assert_eq!(cpu_seconds("# CPU\r\n"), None);
    }
}
