//! The store on a Redis server (`--store redis://…`), through the `redis`
//! crate's multiplexed tokio connection.
//!
//! Key `k` is the hash `ferry-load:{k}` with fields `version` and `value`;
//! the unkeyed stream is the hash `ferry-load:stream`. A batch is an
//! `HMGET` of its key, then [`WRITE_SCRIPT`], a Lua script (atomic on the
//! server) that sets the new version and value only if the version is
//! still the one read, and answers 0 otherwise: a conflict. A trip is one
//! pipeline of an `HMGET` per key (one round trip), then
//! [`WRITE_MANY_SCRIPT`], which does the same for every key of the trip,
//! each on its own condition, and answers 1 or 0 per key. Versions are
//! compared as the decimal strings this tool wrote, so no Lua number
//! rounding is involved.
//!
//! Requests have no response timeout: a request that timed out after the
//! server applied it would be answered as failed and yet be in the store,
//! and the read-back would rightly fail the run. A dead server closes the
//! connection, which fails every request on it.
//!
//! The server's CPU time is its own account of it (`INFO cpu`), so it is
//! known wherever the server runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ConnectionAddr, RedisError, Script};

use super::conditional::Conditional;
use super::{
    admin_runtime, lock, Attempt, Contents, RoundFailed, StoreError, Write, CONNECT_TIMEOUT,
};

/// The prefix of every key `ferry-load` writes.
pub const KEY_PREFIX: &str = "ferry-load:";

/// The prefix of ferry's own systems, written through `ferry::entity`'s
/// `RedisStore`: key `k` is the string `ferry-load-entity:{k}`, its row
/// `{version}:{epoch}:{state}` (see `entity_row`), the value as JSON.
/// Deleted at each reset, read back beside the others.
pub const ENTITY_PREFIX: &str = "ferry-load-entity";

/// The unkeyed stream's hash.
const STREAM: &str = "ferry-load:stream";

/// Keys per pipeline when the whole store is reset, read back or deleted.
const KEYS_PER_PIPELINE: u64 = 1_000;

/// The conditional write: `KEYS[1]` the key's hash, `ARGV[1]` the version
/// read, `ARGV[2]` and `ARGV[3]` the new version and value.
pub const WRITE_SCRIPT: &str = r"
local current = redis.call('HGET', KEYS[1], 'version') or '0'
if current ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'value', ARGV[3])
return 1
";

/// The conditional write of a trip: `KEYS` the keys' hashes, and for the
/// `i`th, `ARGV[3i+1]` the version read, `ARGV[3i+2]` and `ARGV[3i+3]` the
/// new version and value; answers 1 (written) or 0 (conflict) per key.
pub const WRITE_MANY_SCRIPT: &str = r"
local written = {}
for i, key in ipairs(KEYS) do
  local current = redis.call('HGET', key, 'version') or '0'
  if current == ARGV[3 * i - 2] then
    redis.call('HSET', key, 'version', ARGV[3 * i - 1], 'value', ARGV[3 * i])
    written[i] = 1
  else
    written[i] = 0
  end
end
return written
";

/// The unkeyed append: adds `ARGV[1]` inputs summing to `ARGV[2]` to the
/// stream `KEYS[1]`; answers its length before them.
const APPEND_SCRIPT: &str = r"
local length = redis.call('HINCRBY', KEYS[1], 'version', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'value', ARGV[2])
return length - tonumber(ARGV[1])
";

/// A Redis server holding the keys.
pub struct RedisStore {
    client: Client,
    /// Where batches' connections go instead, through `--fault`'s proxy.
    routed: Mutex<Option<Client>>,
    /// The address as shown (no password).
    shown: String,
    keys: u64,
    conflicts: AtomicU64,
    write: Script,
    write_many: Script,
    append: Script,
    admin: Mutex<Admin>,
}

/// The store's own connection, for set-up, reset, read-back and clean-up.
struct Admin {
    runtime: tokio::runtime::Runtime,
    connection: MultiplexedConnection,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("address", &self.shown)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (shown as `shown`), loads the scripts and sets
    /// every key to zero.
    pub(super) fn open(url: &str, shown: &str, keys: u64) -> Result<RedisStore, String> {
        let client =
            Client::open(url).map_err(|err| format!("`{shown}` is not a Redis URL: {err}"))?;
        let runtime = admin_runtime()?;
        let mut connection = runtime.block_on(connect(&client, shown))?;
        let write = Script::new(WRITE_SCRIPT);
        let write_many = Script::new(WRITE_MANY_SCRIPT);
        let append = Script::new(APPEND_SCRIPT);
        for script in [&write, &append] {
            runtime
                .block_on(script.prepare_invoke().load_async(&mut connection))
                .map_err(|err| format!("{shown}: could not load a script: {err}"))?;
        }
        let store = RedisStore {
            client,
            routed: Mutex::new(None),
            shown: shown.to_string(),
            keys,
            conflicts: AtomicU64::new(0),
            write,
            write_many,
            append,
            admin: Mutex::new(Admin {
                runtime,
                connection,
            }),
        };
        store.reset()?;
        Ok(store)
    }

    pub(super) fn keys(&self) -> u64 {
        self.keys
    }

    pub(super) fn conflicts(&self) -> u64 {
        self.conflicts.load(Ordering::Relaxed)
    }

    /// A connection of its own, its I/O on the calling thread's runtime.
    pub(super) async fn connect(&'static self) -> Result<RedisConnection, String> {
        let routed = lock(&self.routed).clone();
        Ok(RedisConnection {
            connection: connect(routed.as_ref().unwrap_or(&self.client), &self.shown).await?,
            store: self,
        })
    }

    /// The server's host and port, from the URL.
    pub(super) fn server_address(&self) -> Result<(String, u16), String> {
        match self.client.get_connection_info().addr() {
            ConnectionAddr::Tcp(host, port) => Ok((host.clone(), *port)),
            _ => Err(format!(
                "{}: --fault needs a plain TCP address (not TLS, not a Unix socket)",
                self.shown
            )),
        }
    }

    /// Batches' connections made from now on go to `proxy` instead, with
    /// the URL's database and credentials.
    pub(super) fn route_through(&self, proxy: std::net::SocketAddr) -> Result<(), String> {
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

    /// `CLIENT KILL TYPE normal SKIPME yes`: every client connection but
    /// the store's own; answers how many were ended.
    pub(super) fn kill_connections(&self) -> Result<u64, String> {
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

    /// A new connection of the store's own, in place of the old one once
    /// it reads a key (after a restart: once the data is loaded).
    pub(super) fn reconnect_admin(&self) -> Result<(), String> {
        let mut admin = lock(&self.admin);
        let mut connection = admin.runtime.block_on(connect(&self.client, &self.shown))?;
        let _: Option<u64> = admin
            .runtime
            .block_on(
                redis::cmd("HGET")
                    .arg(STREAM)
                    .arg("version")
                    .query_async(&mut connection),
            )
            .map_err(|err| format!("{}: {err}", self.shown))?;
        admin.connection = connection;
        Ok(())
    }

    /// Every key, and the stream, to version 0 and value 0; ferry's own
    /// keys deleted.
    pub(super) fn reset(&self) -> Result<(), String> {
        self.each_entity_chunk("reset", |pipe, key| {
            pipe.cmd("UNLINK").arg(key).ignore();
        })?;
        self.each_chunk("reset", |pipe, key| {
            pipe.cmd("HSET")
                .arg(key)
                .arg("version")
                .arg(0)
                .arg("value")
                .arg(0)
                .ignore();
        })
        .map(drop)
    }

    /// Sums every key's (and the stream's) version and value.
    pub(super) fn contents(&self) -> Result<Contents, String> {
        let replies = self.each_chunk("read back", |pipe, key| {
            pipe.cmd("HMGET").arg(key).arg("version").arg("value");
        })?;
        let mut contents = Contents::default();
        for reply in replies {
            let (version, value): (Option<u64>, Option<u64>) = redis::from_redis_value(reply)
                .map_err(|err| format!("{}: reading the keys back: {err}", self.shown))?;
            contents.inputs += version.unwrap_or(0);
            contents.sum = contents.sum.wrapping_add(value.unwrap_or(0));
        }
        let replies = self.each_entity_chunk("read back", |pipe, key| {
            pipe.cmd("GET").arg(key);
        })?;
        for reply in replies {
            let stored: Option<Vec<u8>> = redis::from_redis_value(reply)
                .map_err(|err| format!("{}: reading ferry's keys back: {err}", self.shown))?;
            let Some(stored) = stored else { continue };
            let (version, state) =
                entity_row(&stored).map_err(|why| format!("{}: {why}", self.shown))?;
            let text = String::from_utf8_lossy(state);
            let value: u64 = text
                .parse()
                .map_err(|err| format!("{}: a state `{text}` is not a value: {err}", self.shown))?;
            contents.inputs += version;
            contents.sum = contents.sum.wrapping_add(value);
        }
        Ok(contents)
    }

    /// The `ferry::entity` store of ferry's systems, under
    /// [`ENTITY_PREFIX`], through `--fault`'s proxy once routed.
    pub(super) fn entity_store(&self) -> Result<ferry::entity::RedisStore, String> {
        let client = lock(&self.routed)
            .clone()
            .unwrap_or_else(|| self.client.clone());
        ferry::entity::RedisStore::from_client(client, ENTITY_PREFIX).map_err(|err| err.to_string())
    }

    /// [`each_chunk`](Self::each_chunk) over ferry's own keys.
    fn each_entity_chunk(
        &self,
        what: &str,
        command: impl Fn(&mut redis::Pipeline, &str),
    ) -> Result<Vec<redis::Value>, String> {
        let names = (0..self.keys).map(|key| format!("{ENTITY_PREFIX}:{key}"));
        self.pipelined(what, names, command)
    }

    /// Deletes every key and the stream, ferry's own too.
    pub(super) fn remove(&self) -> Result<(), String> {
        self.each_entity_chunk("delete", |pipe, key| {
            pipe.cmd("UNLINK").arg(key).ignore();
        })?;
        self.each_chunk("delete", |pipe, key| {
            pipe.cmd("UNLINK").arg(key).ignore();
        })
        .map(drop)
    }

    /// Sends one command per key and the stream, on the store's own
    /// connection; answers the replies not ignored.
    fn each_chunk(
        &self,
        what: &str,
        command: impl Fn(&mut redis::Pipeline, &str),
    ) -> Result<Vec<redis::Value>, String> {
        let names = (0..self.keys)
            .map(key_name)
            .chain(std::iter::once(STREAM.to_string()));
        self.pipelined(what, names, command)
    }

    /// One command per name of `names`, `KEYS_PER_PIPELINE` at a time, on
    /// the store's own connection; answers the replies not ignored.
    fn pipelined(
        &self,
        what: &str,
        names: impl Iterator<Item = String>,
        command: impl Fn(&mut redis::Pipeline, &str),
    ) -> Result<Vec<redis::Value>, String> {
        let mut admin = lock(&self.admin);
        let Admin {
            runtime,
            connection,
        } = &mut *admin;
        let mut replies = Vec::new();
        let mut names = names.peekable();
        while names.peek().is_some() {
            let mut pipe = redis::pipe();
            for name in names.by_ref().take(KEYS_PER_PIPELINE as usize) {
                command(&mut pipe, &name);
            }
            let chunk: Vec<redis::Value> = runtime
                .block_on(pipe.query_async(connection))
                .map_err(|err| format!("{}: could not {what} the keys: {err}", self.shown))?;
            replies.extend(chunk);
        }
        Ok(replies)
    }

    /// `used_cpu_sys` plus `used_cpu_user` of `INFO cpu`.
    pub(super) fn server_cpu_time(&self) -> Option<Duration> {
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

/// The version and the state of a row as `ferry::entity`'s `RedisStore`
/// stores it: `{version}:{epoch}:` (decimal), then the state's bytes.
pub fn entity_row(stored: &[u8]) -> Result<(u64, &[u8]), String> {
    let not_a_row = || {
        format!(
            "`{}` is not an entity row (version:epoch:state)",
            String::from_utf8_lossy(&stored[..stored.len().min(48)])
        )
    };
    let mut parts = stored.splitn(3, |&byte| byte == b':');
    let (Some(version), Some(epoch), Some(state)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(not_a_row());
    };
    let number = |digits: &[u8]| std::str::from_utf8(digits).ok()?.parse::<u64>().ok();
    match (number(version), number(epoch)) {
        (Some(version), Some(_)) => Ok((version, state)),
        _ => Err(not_a_row()),
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

/// One multiplexed Redis connection.
#[derive(Clone)]
pub struct RedisConnection {
    connection: MultiplexedConnection,
    store: &'static RedisStore,
}

impl Conditional for RedisConnection {
    /// `ferry-load:{key}`.
    type Name = String;

    fn name(key: u64) -> String {
        key_name(key)
    }

    /// A key's version and value (0 and 0 for a key never written).
    async fn read(&mut self, name: &String) -> Result<(u64, u64), StoreError> {
        let (version, value): (Option<u64>, Option<u64>) = redis::cmd("HMGET")
            .arg(name)
            .arg("version")
            .arg("value")
            .query_async(&mut self.connection)
            .await
            .map_err(server_error)?;
        Ok((version.unwrap_or(0), value.unwrap_or(0)))
    }

    /// The compare-and-set script.
    async fn write(
        &mut self,
        name: &String,
        version: u64,
        count: u64,
        value: u64,
    ) -> Result<bool, StoreError> {
        let written: i64 = self
            .store
            .write
            .key(name)
            .arg(version)
            .arg(version + count)
            .arg(value)
            .invoke_async(&mut self.connection)
            .await
            .map_err(|err| write_error(err).sent_from(version))?;
        Ok(written == 1)
    }

    /// One pipeline reading every key, then one script writing each on
    /// its own condition.
    async fn try_many(&mut self, writes: &[Write], left: &[usize]) -> Attempt {
        let names: Vec<String> = left.iter().map(|&at| key_name(writes[at].key)).collect();
        let mut reads = redis::pipe();
        for name in &names {
            reads.cmd("HMGET").arg(name).arg("version").arg("value");
        }
        let read: Vec<(Option<u64>, Option<u64>)> = reads
            .query_async(&mut self.connection)
            .await
            .map_err(server_error)?;
        let mut invocation = self.store.write_many.prepare_invoke();
        for ((&at, name), (version, value)) in left.iter().zip(&names).zip(&read) {
            let (version, value) = (version.unwrap_or(0), value.unwrap_or(0));
            let Write { count, sum, .. } = writes[at];
            invocation
                .key(name)
                .arg(version)
                .arg(version + count)
                .arg(value.wrapping_add(sum));
        }
        let written: Vec<i64> = invocation
            .invoke_async(&mut self.connection)
            .await
            .map_err(|err| {
                let sent_from = read
                    .iter()
                    .map(|(version, _)| version.unwrap_or(0))
                    .collect();
                RoundFailed::sent(write_error(err), sent_from)
            })?;
        let (mut done, mut conflicted) = (Vec::new(), Vec::new());
        for ((&at, wrote), (version, _)) in left.iter().zip(written).zip(read) {
            if wrote == 1 {
                done.push((at, version.unwrap_or(0)));
            } else {
                conflicted.push(at);
            }
        }
        Ok((done, conflicted))
    }

    fn conflicts(&self) -> &AtomicU64 {
        &self.store.conflicts
    }
}

impl RedisConnection {
    /// An unkeyed batch: an `HGET` of the stream's length, then the append
    /// script.
    pub(super) async fn apply_unkeyed(mut self, count: u64, sum: u64) -> Result<u64, StoreError> {
        // Read for the round trip it stands for (see `SimStore::apply_unkeyed`).
        let _length: Option<u64> = redis::cmd("HGET")
            .arg(STREAM)
            .arg("version")
            .query_async(&mut self.connection)
            .await
            .map_err(server_error)?;
        let before: i64 = self
            .store
            .append
            .key(STREAM)
            .arg(count)
            .arg(sum)
            .invoke_async(&mut self.connection)
            .await
            .map_err(write_error)?;
        u64::try_from(before)
            .map_err(|_| StoreError::Server(format!("the stream's length was {before}")))
    }
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

/// `ferry-load:{key}`.
fn key_name(key: u64) -> String {
    format!("{KEY_PREFIX}{key}")
}

/// An error before the write was sent: nothing was applied. The server's
/// refusal of a command, or a connection that failed (to be made again).
fn server_error(err: RedisError) -> StoreError {
    StoreError::unsent(!connection_failed(&err), err.to_string())
}

/// An error of the write itself: the server's refusal (an error reply:
/// the script did not run), or anything else once the write was sent (a
/// connection that failed, a reply that could not be read): applied or
/// not, the outcome is unknown. Only an error the server itself answered
/// is taken as definite.
fn write_error(err: RedisError) -> StoreError {
    StoreError::sent(
        err.code().is_some() && !connection_failed(&err),
        err.to_string(),
    )
}

fn connection_failed(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_timeout()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_seconds_add_user_and_system() {
        let info = "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.0\r\n";
        assert_eq!(cpu_seconds(info), Some(3.75));
        assert_eq!(cpu_seconds("# CPU\r\n"), None);
        assert_eq!(key_name(42), "ferry-load:42");
    }
}
