//! The handover's rows on Redis: key `k` is the hash `ferry-handover:{k}`
//! (fields `version`, `owner_epoch`, `last_seq`) and the list
//! `ferry-handover:{k}:applied`. The take and the write are Lua scripts,
//! each one step on the server, so the check and the change cannot be
//! split by another client's command.
//!
//! Versions and epochs are compared as the decimal strings written, so no
//! Lua number rounding is involved in a condition.

use redis::aio::MultiplexedConnection;
use redis::{Client, Script};

use crate::store::admin_runtime;
use crate::store::on_redis::connect;

use super::row::{RowState, StoredRow, Written};
use super::Fence;

/// The prefix of every key the handover writes.
pub const KEY_PREFIX: &str = "ferry-handover:";

/// Takes the row: `KEYS[1]` the hash, `ARGV[1]` the new owner's epoch.
/// Answers `last_seq`, or -1 if the row holds a higher epoch.
const TAKE_SCRIPT: &str = r"
local held = tonumber(redis.call('HGET', KEYS[1], 'owner_epoch') or '0')
if held > tonumber(ARGV[1]) then
  return -1
end
redis.call('HSETNX', KEYS[1], 'version', '0')
redis.call('HSETNX', KEYS[1], 'last_seq', '0')
redis.call('HSET', KEYS[1], 'owner_epoch', ARGV[1])
return tonumber(redis.call('HGET', KEYS[1], 'last_seq'))
";

/// The conditional write: `KEYS[1]` the hash, `KEYS[2]` the applied list;
/// `ARGV[1]` the version read, `ARGV[2]` the writer's epoch (empty: no
/// fence, the control), `ARGV[3]` the new `last_seq`, `ARGV[4..]` the seqs.
const WRITE_SCRIPT: &str = r"
local row = redis.call('HMGET', KEYS[1], 'version', 'owner_epoch')
if ARGV[2] ~= '' and row[2] ~= ARGV[2] then
  return 'fenced'
end
if row[1] ~= ARGV[1] then
  return 'conflict'
end
redis.call('RPUSH', KEYS[2], unpack(ARGV, 4))
redis.call('HSET', KEYS[1], 'version', tostring(tonumber(row[1]) + 1), 'last_seq', ARGV[3])
return 'ok'
";

/// One multiplexed connection to the rows.
#[derive(Clone)]
pub struct RedisRows {
    connection: MultiplexedConnection,
    take: &'static Script,
    write: &'static Script,
    fence: Fence,
}

impl RedisRows {
    /// Connects to `url` (shown as `shown`).
    pub(super) async fn connect(url: &str, shown: &str, fence: Fence) -> Result<RedisRows, String> {
        let client = client(url, shown)?;
        Ok(RedisRows {
            connection: connect(&client, shown).await?,
            take: scripts().0,
            write: scripts().1,
            fence,
        })
    }

    pub(super) async fn take(&self, key: u64, epoch: u64) -> Result<Option<u64>, String> {
        let last_seq: i64 = self
            .take
            .key(row_name(key))
            .arg(epoch)
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|err| format!("taking key {key}: {err}"))?;
        Ok(u64::try_from(last_seq).ok())
    }

    pub(super) async fn read(&self, key: u64) -> Result<RowState, String> {
        let (version, owner_epoch): (Option<u64>, Option<u64>) = redis::cmd("HMGET")
            .arg(row_name(key))
            .arg("version")
            .arg("owner_epoch")
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|err| format!("reading key {key}: {err}"))?;
        Ok(RowState {
            version: version.unwrap_or(0),
            owner_epoch: owner_epoch.unwrap_or(0),
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
        let epoch_arg = match self.fence {
            Fence::On => epoch.to_string(),
            Fence::Off => String::new(),
        };
        let said: String = self
            .write
            .key(row_name(key))
            .key(applied_name(key))
            .arg(version)
            .arg(epoch_arg)
            .arg(last)
            .arg(seqs)
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|err| format!("writing key {key}: {err}"))?;
        match said.as_str() {
            "ok" => Ok(Written::Applied),
            "conflict" => Ok(Written::Conflict),
            "fenced" => Ok(Written::Fenced),
            other => Err(format!("writing key {key}: the script answered `{other}`")),
        }
    }
}

/// The coordinator's own connection: set-up, read-back, clean-up.
pub struct RedisRowStore {
    runtime: tokio::runtime::Runtime,
    connection: MultiplexedConnection,
    shown: String,
    keys: u64,
}

impl RedisRowStore {
    /// Connects, loads the scripts and deletes what a previous run left.
    pub(super) fn open(url: &str, shown: &str, keys: u64) -> Result<RedisRowStore, String> {
        let client = client(url, shown)?;
        let runtime = admin_runtime()?;
        let mut connection = runtime.block_on(connect(&client, shown))?;
        let (take, write) = scripts();
        for script in [take, write] {
            runtime
                .block_on(script.prepare_invoke().load_async(&mut connection))
                .map_err(|err| format!("{shown}: could not load a script: {err}"))?;
        }
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
            pipe.cmd("HMGET")
                .arg(row_name(key))
                .arg("version")
                .arg("owner_epoch")
                .arg("last_seq");
            pipe.cmd("LRANGE").arg(applied_name(key)).arg(0).arg(-1);
        }
        type Reply = ((Option<u64>, Option<u64>, Option<u64>), Vec<u64>);
        let replies: Vec<Reply> = self
            .runtime
            .block_on(pipe.query_async(&mut self.connection.clone()))
            .map_err(|err| format!("{}: could not read the rows back: {err}", self.shown))?;
        let rows = (0..self.keys).zip(replies);
        Ok(rows
            .filter(|(_, ((version, _, _), _))| version.is_some())
            .map(
                |(key, ((version, owner_epoch, last_seq), applied))| StoredRow {
                    key,
                    version: version.unwrap_or(0),
                    owner_epoch: owner_epoch.unwrap_or(0),
                    last_seq: last_seq.unwrap_or(0),
                    applied,
                },
            )
            .collect())
    }

    pub(super) fn remove(&self) -> Result<(), String> {
        let mut pipe = redis::pipe();
        for key in 0..self.keys {
            pipe.cmd("UNLINK")
                .arg(row_name(key))
                .arg(applied_name(key))
                .ignore();
        }
        self.runtime
            .block_on(pipe.query_async::<()>(&mut self.connection.clone()))
            .map_err(|err| format!("{}: could not delete the rows: {err}", self.shown))
    }
}

/// The take and write scripts, made once per process.
fn scripts() -> (&'static Script, &'static Script) {
    static SCRIPTS: std::sync::OnceLock<(Script, Script)> = std::sync::OnceLock::new();
    let (take, write) =
        SCRIPTS.get_or_init(|| (Script::new(TAKE_SCRIPT), Script::new(WRITE_SCRIPT)));
    (take, write)
}

fn client(url: &str, shown: &str) -> Result<Client, String> {
    Client::open(url).map_err(|err| format!("`{shown}` is not a Redis URL: {err}"))
}

/// `ferry-handover:{key}`.
fn row_name(key: u64) -> String {
    format!("{KEY_PREFIX}{key}")
}

/// `ferry-handover:{key}:applied`.
fn applied_name(key: u64) -> String {
    format!("{KEY_PREFIX}{key}:applied")
}
