//! Entities in Redis (feature `redis`), through the `redis` crate's
//! multiplexed tokio connection.
//!
//! # Layout
//!
//! A store of prefix `p` keeps, for a key `k` (its `Display` text):
//!
//! - the string `p:k`, its row: `{version}:{epoch}:` (both decimal, without
//!   leading zeros) followed by the encoded state, bytes as given; key 7 at
//!   version 12 under epoch 3 with state `{"n":5}` is `p:7` =
//!   `12:3:{"n":5}`. One value per key, so that many keys are read with
//!   one `MGET` and written with one `MSET`. A log's row (its head) keeps
//!   its last append's tag as its state; its version is the log's length;
//! - for a log, the list `p:k:events`: the event of sequence `s` at index
//!   `s - 1`, so the list is as long as the head's version. A list rather
//!   than a hash of sequences: a log's events are dense, only ever added
//!   at the end and read back in order, which is exactly what `RPUSH` and
//!   `LRANGE` do, without a field name stored per event.
//!
//! A key whose text ends in `:events` names the same Redis key as another
//! key's log (`a:events` is the row of key `a:events` and the list of key
//! `a`). They cannot be mixed up: one is a string and one is a list, so
//! the second to be used is refused (`WRONGTYPE`), with nothing changed.
//! So is a key that holds anything else than a row: a value of another
//! type, or a string without the row's header.
//!
//! # Requests
//!
//! - a read of one key is a `GET`, which the server refuses for a key of
//!   another type; a read of more is one `MULTI`/`EXEC` of an `MGET` of
//!   every key and an `EXISTS` of them all: a key `MGET` finds no string
//!   for, yet `EXISTS` counts, holds another type (one round trip);
//! - a write, and an append, is one `EVALSHA` of a Lua script (the
//!   `redis::Script` type sends the script itself if the server has lost
//!   it). Redis runs a script alone, so each is atomic. A script *looks*
//!   at every key it was given (one `MGET`), *judges* them in order, each
//!   on its own condition (see [`store`](super::store)), and only then
//!   *changes* the ones that land (one `MSET` of the rows, an `RPUSH` per
//!   log); it answers one string, `1` or `0` a key in order, so the reply
//!   is parsed as one value however many keys it carries. Errors (such as
//!   `WRONGTYPE`) can only arise before the changes:
//!   a script that fails has changed nothing (Redis does not undo a
//!   script's changes, so this order is what makes a refusal clean).
//!
//! A write's condition travels as the header it expects, `{expected}:
//! {epoch}:`, and its new row whole, header and state, as built here: a
//! row that starts with the condition (the same version, the same epoch)
//! lands on a comparison of bytes, without the row being taken apart.
//! Numbers never become Lua numbers (doubles, exact only up to 2^53):
//! versions are compared as the decimal text this module wrote, epochs by
//! length and then by text (which orders decimals without leading zeros),
//! and an append's new version is added up here, not in the script.
//!
//! # Failures
//!
//! - an error the server answers (a script's error, `WRONGTYPE`, `NOPERM`,
//!   `LOADING`…) is [`StoreError::Refused`]: nothing was changed and the
//!   connection goes on; so is a read that finds a key holding something
//!   else than a row;
//! - a connection that fails (an I/O error, the server closing it) or a
//!   request unanswered within 5 seconds is [`StoreError::Broken`] for a
//!   read, and [`StoreError::Lost`] for a write or an append: the
//!   multiplexed connection does not tell whether the request had reached
//!   the server, so it may have been applied. A connection that failed
//!   once is not used again: its later requests are `Broken`, unsent;
//! - an answer of the wrong shape is `Refused` for a read, and `Lost` for
//!   a write or an append (the script ran, what it did is unknown).

use std::fmt;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::{
    AsyncConnectionConfig, Client, Cmd, ErrorKind, RedisError, RedisResult, RedisWrite, Script,
    ServerErrorKind,
};

use super::store::{Append, Connection, Row, Store, StoreError, Write};

/// How long a connection may take to be made, and a request to be
/// answered.
const TIMEOUT: Duration = Duration::from_secs(5);

/// What a log's list adds to its head's name.
const EVENTS_SUFFIX: &str = ":events";

/// The URL schemes taken: TCP, and a Unix socket.
const SCHEMES: [&str; 2] = ["redis://", "redis+unix://"];

/// What both scripts share: the judge of a condition, and the looks and
/// changes of many keys at once (1000 arguments per command: Lua's
/// `unpack` cannot spread many thousands of values at once).
///
/// - `at_most(a, b)`: whether decimal text `a` is at most decimal text
///   `b`, both without leading zeros;
/// - `look(first, last)`: the values of `KEYS[first..=last]`, in order
///   (`false` where `MGET` finds no string);
/// - `lands(row, condition)`: whether a change on `condition`
///   (`expected:epoch:`) lands on `row` (`false` for none); `nil` if `row`
///   is not a row;
/// - `taken(keys)`: the first of `keys` that holds a value, or `nil` (for
///   keys `MGET` found no string for: one that holds a value holds
///   another type);
/// - `set_all(sets)`: sets the rows `sets` holds, as `MSET` takes them.
macro_rules! lua_prelude {
    () => {
        r"
local sub, find, unpack, min = string.sub, string.find, unpack, math.min

local function at_most(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a <= b
end

local function look(first, last)
  if last - first < 1000 then
    return redis.call('MGET', unpack(KEYS, first, last))
  end
  local held = {}
  for from = first, last, 1000 do
    local part = redis.call('MGET', unpack(KEYS, from, min(from + 999, last)))
    for at = 1, #part do
      held[#held + 1] = part[at]
    end
  end
  return held
end

local function lands(row, condition)
  if not row then
    return sub(condition, 1, 2) == '0:'
  end
  if sub(row, 1, #condition) == condition then
    return true
  end
  local _, _, version, epoch = find(row, '^(%d+):(%d+):')
  if not version then
    return nil
  end
  local _, _, expected, mine = find(condition, '^(%d+):(%d+):')
  return version == expected and at_most(epoch, mine)
end

local function taken(keys)
  for from = 1, #keys, 1000 do
    local last = min(from + 999, #keys)
    if redis.call('EXISTS', unpack(keys, from, last)) > 0 then
      for at = from, last do
        if redis.call('EXISTS', keys[at]) == 1 then
          return keys[at]
        end
      end
    end
  end
  return nil
end

local function set_all(sets)
  for from = 1, #sets, 1000 do
    redis.call('MSET', unpack(sets, from, min(from + 999, #sets)))
  end
end
"
    };
}

/// The write of many keys. `KEYS[i]`: the i-th key's row; `ARGV[2i-1]`
/// and `ARGV[2i]`: its condition (`expected:epoch:`) and its new row.
/// Answers one string, a flag a key in order: `1` (landed) or `0` (one
/// value to parse, not an array of many integers). `written` holds the
/// rows set so far, so a key given twice is judged the second time on what
/// the first did (and `MSET` keeps the last of a key's rows).
const WRITE_SCRIPT: &str = concat!(
    lua_prelude!(),
    r"
local count = #KEYS
local held = look(1, count)
local written, sets, absent, landed = {}, {}, {}, {}
for i = 1, count do
  local key, condition = KEYS[i], ARGV[2 * i - 1]
  local row = written[key] or held[i]
  local verdict = lands(row, condition)
  if verdict == nil then
    return redis.error_reply('WRONGTYPE ' .. key .. ' holds a string that is not a row')
  end
  if not row then
    absent[#absent + 1] = key
  end
  if verdict then
    local new = ARGV[2 * i]
    sets[#sets + 1] = key
    sets[#sets + 1] = new
    written[key] = new
    landed[i] = '1'
  else
    landed[i] = '0'
  end
end
local other = taken(absent)
if other then
  return redis.error_reply('WRONGTYPE ' .. other .. ' holds another type than a row')
end
set_all(sets)
return table.concat(landed)
"
);

/// The append to many logs, `n` of them. `KEYS[i]` and `KEYS[n + i]`: the
/// i-th key's head and list. `ARGV`, per key in order: its condition
/// (`expected:epoch:`), its new head (`version:epoch:tag`), event count
/// `c`, then its `c` events. Answers as the write does, `1` or `0` a key
/// in one string. The verdicts come first, the pushes after, once nothing
/// can fail.
const APPEND_SCRIPT: &str = concat!(
    lua_prelude!(),
    r"
local count = #KEYS / 2
local held = look(1, count)
for i = count + 1, 2 * count do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  if kind ~= 'list' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' is a ' .. kind .. ', not a list of events')
  end
end
local written, sets, absent, landed, at = {}, {}, {}, {}, 0
for i = 1, count do
  local key, condition = KEYS[i], ARGV[at + 1]
  local row = written[key] or held[i]
  local verdict = lands(row, condition)
  if verdict == nil then
    return redis.error_reply('WRONGTYPE ' .. key .. ' holds a string that is not a row')
  end
  if not row then
    absent[#absent + 1] = key
  end
  if verdict then
    sets[#sets + 1] = key
    sets[#sets + 1] = ARGV[at + 2]
    written[key] = ARGV[at + 2]
    landed[i] = '1'
  else
    landed[i] = '0'
  end
  at = at + 3 + tonumber(ARGV[at + 3])
end
local other = taken(absent)
if other then
  return redis.error_reply('WRONGTYPE ' .. other .. ' holds another type than a row')
end
at = 0
for i = 1, count do
  local first, last = at + 4, at + 3 + tonumber(ARGV[at + 3])
  if landed[i] == '1' then
    for from = first, last, 1000 do
      redis.call('RPUSH', KEYS[count + i], unpack(ARGV, from, min(from + 999, last)))
    end
  end
  at = last
end
set_all(sets)
return table.concat(landed)
"
);

/// A store of entities in Redis: the server's address and the prefix of
/// every key it names. Each shard connects on its own (see
/// [`Store::connect`]), inside a tokio runtime, which drives the
/// connection's I/O; keys are any `K: Display`.
///
/// Shown (`Debug`) without any password.
///
/// ```no_run
/// use ferry::entity::{Connection, RedisStore, Store, StoreError, Write};
///
/// # async fn run() -> Result<(), StoreError> {
/// let store = RedisStore::new("redis://localhost:6379", "accounts")?;
/// let connection = Store::<u64>::connect(&store).await?;
/// // Key 7 is the string `accounts:7`: `1:1:{}`.
/// let write = Write { key: &7, expected: 0, version: 1, epoch: 1, state: b"{}" };
/// assert_eq!(connection.write(&[write]).await?, vec![true]);
/// assert_eq!(connection.read(&[&7]).await?[0].version, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    client: Client,
    /// The URL as it may be shown (no password).
    shown: Arc<str>,
    /// Not empty, no whitespace or control characters.
    prefix: Arc<str>,
    write: Script,
    append: Script,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("address", &self.shown)
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl RedisStore {
    /// A store at `url` (`redis://[user:password@]host[:port][/db]`, or
    /// `redis+unix:///path/to/socket`), naming key `k` `{prefix}:{k}`.
    /// Nothing is connected yet; connections are made within 5 seconds or
    /// fail.
    ///
    /// The prefix may not be empty, nor hold whitespace or control
    /// characters. Anything else, and a URL that is not Redis's (or asks
    /// for TLS, which is not built in), is [`StoreError::Refused`]; the
    /// messages never show a password.
    ///
    /// ```
    /// use ferry::entity::{RedisStore, StoreError};
    ///
    /// let store = RedisStore::new("redis://:secret@localhost:6379/2", "accounts").unwrap();
    /// assert!(!format!("{store:?}").contains("secret"));
    ///
    /// let Err(StoreError::Refused(why)) = RedisStore::new("postgres://ferry:secret@localhost/app", "accounts")
    /// else { panic!("a PostgreSQL URL is not Redis's") };
    /// assert!(why.contains("not a Redis URL") && !why.contains("secret"));
    ///
    /// assert!(RedisStore::new("redis://localhost", "").is_err());
    /// assert!(RedisStore::new("redis://localhost", "my accounts").is_err());
    /// ```
    pub fn new(url: &str, prefix: &str) -> Result<RedisStore, StoreError> {
        check_prefix(prefix)?;
        let shown = redact(url);
        let client = open_client(url, &shown)?;
        Ok(RedisStore {
            client,
            shown: shown.into(),
            prefix: prefix.into(),
            write: Script::new(WRITE_SCRIPT),
            append: Script::new(APPEND_SCRIPT),
        })
    }

    /// A store reached through `client` (built from a
    /// `redis::ConnectionInfo`, for settings a URL does not carry), under
    /// `prefix`; refused as [`new`](Self::new) refuses a prefix.
    ///
    /// ```
    /// use ferry::entity::RedisStore;
    ///
    /// let client = redis::Client::open("redis://127.0.0.1:6379/2").unwrap();
    /// let store = RedisStore::from_client(client, "carts").unwrap();
    /// assert!(format!("{store:?}").contains("127.0.0.1:6379"));
    /// ```
    pub fn from_client(client: Client, prefix: &str) -> Result<RedisStore, StoreError> {
        check_prefix(prefix)?;
        let shown = match client.get_connection_info().addr() {
            ::redis::ConnectionAddr::Tcp(host, port) => format!("redis://{host}:{port}"),
            other => format!("redis at {other}"),
        };
        Ok(RedisStore {
            client,
            shown: shown.into(),
            prefix: prefix.into(),
            write: Script::new(WRITE_SCRIPT),
            append: Script::new(APPEND_SCRIPT),
        })
    }

    /// The name of `key`'s row: `{prefix}:{key}`.
    fn head(&self, key: &impl fmt::Display) -> String {
        format!("{}:{key}", self.prefix)
    }

    /// `key`'s row name (`suffix` empty) or list name ([`EVENTS_SUFFIX`]),
    /// as the next argument of `cmd`.
    ///
    /// Only the key goes through `Display`: a name is written once a key
    /// a request, and the formatting machinery costs more than the bytes.
    fn name_arg(&self, cmd: &mut Cmd, key: &impl fmt::Display, suffix: &str) {
        let mut arg = cmd.writer_for_next_arg();
        let written = arg
            .write_all(self.prefix.as_bytes())
            .and_then(|()| arg.write_all(b":"))
            .and_then(|()| write!(arg, "{key}"))
            .and_then(|()| arg.write_all(suffix.as_bytes()));
        debug_assert!(written.is_ok(), "a command's buffer takes every write");
    }

    /// A multiplexed connection, its I/O a task of the calling thread's
    /// tokio runtime.
    async fn open(&self) -> Result<MultiplexedConnection, StoreError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(StoreError::Broken(format!(
                "{}: RedisStore::connect must be called inside a tokio runtime (with I/O enabled), which drives the connection",
                self.shown
            )));
        }
        // No response timeout: a write given up on by a timer may still run
        // on the server afterwards, after its key was read back and found
        // unchanged. A dead server closes the connection, which fails
        // every request on it.
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(None);
        self.client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|err| {
                StoreError::Broken(format!(
                    "could not connect to {}: {err} ({})",
                    self.shown,
                    connect_hint(&err)
                ))
            })
    }

    /// Loads both scripts, so that the first write need not send one.
    async fn load_scripts(&self, connection: &MultiplexedConnection) -> Result<(), StoreError> {
        for script in [&self.write, &self.append] {
            script
                .prepare_invoke()
                .load_async(&mut connection.clone())
                .await
                .map_err(|err| {
                    StoreError::Broken(format!(
                        "{}: could not load the store's Lua scripts: {err} ({})",
                        self.shown,
                        connect_hint(&err)
                    ))
                })?;
        }
        Ok(())
    }
}

impl<K: fmt::Display> Store<K> for RedisStore {
    type Connection = RedisConnection;

    /// Connects (5 seconds at most) and loads the scripts. A connection
    /// that cannot be made is [`StoreError::Broken`], its message saying
    /// what to check. Nothing needs creating: Redis makes a key when it is
    /// first written.
    async fn connect(&self) -> Result<RedisConnection, StoreError> {
        // Phase 1: the connection.
        let connection = self.open().await?;
        // Phase 2: the scripts, in the server's cache.
        self.load_scripts(&connection).await?;
        Ok(RedisConnection {
            connection,
            store: self.clone(),
            failed: AtomicBool::new(false),
        })
    }
}

/// One shard's connection to a [`RedisStore`]: what [`Store::connect`]
/// answers. Each request is answered within 5 seconds or fails.
///
/// ```no_run
/// use ferry::entity::{Append, Connection, RedisStore, Store, StoreError};
///
/// # async fn run() -> Result<(), StoreError> {
/// let store = RedisStore::new("redis://localhost:6379", "carts")?;
/// let connection = Store::<String>::connect(&store).await?;
/// let key = String::from("cart-1");
/// let events = [b"added".to_vec(), b"paid".to_vec()];
/// let append = Append { tag: b"t", key: &key, expected: 0, epoch: 1, events: &events };
/// // Pushed to the list `carts:cart-1:events`.
/// assert_eq!(connection.append(&[append]).await?, vec![true]);
/// // The head's version is the log's length.
/// assert_eq!(connection.read(&[&key]).await?[0].version, 2);
/// # Ok(())
/// # }
/// ```
pub struct RedisConnection {
    connection: MultiplexedConnection,
    store: RedisStore,
    /// Set once a request found the connection failed; from then on no
    /// request is sent on it.
    failed: AtomicBool,
}

impl fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConnection")
            .field("store", &self.store)
            .field("failed", &self.failed.load(Ordering::Relaxed))
            .finish()
    }
}

/// What a request does to the store, which decides what its failure
/// means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Request {
    /// Changes nothing: a failure is never `Lost`.
    Read,
    /// A write or an append: may have been applied when its connection
    /// failed.
    Change,
}

impl<K: fmt::Display> Connection<K> for RedisConnection {
    /// One `GET` for one key (the server refuses a key of another type
    /// itself); for more, one `MULTI`/`EXEC` of an `MGET` and an `EXISTS`
    /// of every key.
    async fn read(&self, keys: &[&K]) -> Result<Vec<Row>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let doing = format!("reading {} keys", keys.len());
        self.usable(&doing)?;
        if let [key] = keys {
            return self.read_one(key, &doing).await.map(|row| vec![row]);
        }
        // Phase 1: the values, and how many of the keys hold one.
        // A name is a few dozen bytes.
        let sized = || Cmd::with_capacity(1 + keys.len(), 48 * keys.len() + 16);
        let (mut values_of, mut held_by) = (sized(), sized());
        values_of.arg("MGET");
        held_by.arg("EXISTS");
        for key in keys {
            self.store.name_arg(&mut values_of, key, "");
        }
        // The same names again, copied: each is formatted once.
        for name in values_of.args_iter().skip(1) {
            let ::redis::Arg::Simple(name) = name else {
                unreachable!("a name is a plain argument")
            };
            held_by.arg(name);
        }
        let mut pipe = ::redis::pipe();
        pipe.atomic().add_command(values_of).add_command(held_by);
        let (values, held): (Vec<Option<Vec<u8>>>, usize) = pipe
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|err| self.fail(&err, Request::Read, &doing))?;
        // Phase 2: every value a row, and no key of another type.
        let refused =
            |why: String| StoreError::Refused(format!("{}: {doing}: {why}", self.store.shown));
        if values.len() != keys.len() {
            return Err(refused(format!("MGET answered {} values", values.len())));
        }
        let strings = values.iter().filter(|value| value.is_some()).count();
        if strings != held {
            return Err(refused(format!(
                "WRONGTYPE {} of the keys hold another type than a row",
                held.abs_diff(strings)
            )));
        }
        keys.iter()
            .zip(values)
            .map(|(key, value)| self.row_of(key, value, &doing))
            .collect()
    }

    /// One run of the write script.
    async fn write(&self, writes: &[Write<'_, K>]) -> Result<Vec<bool>, StoreError> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let doing = format!("writing {} keys", writes.len());
        self.usable(&doing)?;
        let state_bytes: usize = writes.iter().map(|write| write.state.len()).sum();
        let mut cmd = evalsha(
            &self.store.write,
            writes.len(),
            2 * writes.len(),
            state_bytes,
        );
        for write in writes {
            self.store.name_arg(&mut cmd, write.key, "");
        }
        for write in writes {
            row_arg(&mut cmd, write.expected, write.epoch, &[]);
            row_arg(&mut cmd, write.version, write.epoch, write.state);
        }
        let landed = self
            .run_script(&self.store.write, &cmd)
            .await
            .map_err(|err| self.fail(&err, Request::Change, &doing))?;
        self.landed(landed, writes.len(), &doing)
    }

    /// One run of the append script.
    async fn append(&self, appends: &[Append<'_, K>]) -> Result<Vec<bool>, StoreError> {
        if appends.is_empty() {
            return Ok(Vec::new());
        }
        let doing = format!("appending to {} logs", appends.len());
        self.usable(&doing)?;
        let events: usize = appends.iter().map(|append| append.events.len()).sum();
        let event_bytes: usize = appends
            .iter()
            .flat_map(|append| append.events)
            .map(Vec::len)
            .sum();
        let mut cmd = evalsha(
            &self.store.append,
            2 * appends.len(),
            3 * appends.len() + events,
            event_bytes,
        );
        for append in appends {
            self.store.name_arg(&mut cmd, append.key, "");
        }
        for append in appends {
            self.store.name_arg(&mut cmd, append.key, EVENTS_SUFFIX);
        }
        for append in appends {
            let version = moved_to(append)?;
            row_arg(&mut cmd, append.expected, append.epoch, &[]);
            row_arg(&mut cmd, version, append.epoch, append.tag);
            cmd.arg(append.events.len());
            for event in append.events {
                cmd.arg(event.as_slice());
            }
        }
        let landed = self
            .run_script(&self.store.append, &cmd)
            .await
            .map_err(|err| self.fail(&err, Request::Change, &doing))?;
        self.landed(landed, appends.len(), &doing)
    }
}

impl RedisConnection {
    /// The row of one key, with a `GET`: unlike `MGET`, it answers
    /// `WRONGTYPE` for a key of another type, so no `EXISTS` is needed.
    async fn read_one<K: fmt::Display>(&self, key: &K, doing: &str) -> Result<Row, StoreError> {
        let mut get = Cmd::new();
        get.arg("GET");
        self.store.name_arg(&mut get, key, "");
        let value: Option<Vec<u8>> = get
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|err| self.fail(&err, Request::Read, doing))?;
        self.row_of(key, value, doing)
    }

    /// The row `key`'s value holds (`None`: the key holds none), or
    /// `Refused` saying which key holds something else than a row.
    fn row_of<K: fmt::Display>(
        &self,
        key: &K,
        value: Option<Vec<u8>>,
        doing: &str,
    ) -> Result<Row, StoreError> {
        decode(value).map_err(|why| {
            StoreError::Refused(format!(
                "{}: {doing}: {}: {why}",
                self.store.shown,
                self.store.head(key)
            ))
        })
    }

    /// `Broken`, unsent, if the connection failed before.
    fn usable(&self, doing: &str) -> Result<(), StoreError> {
        if self.failed.load(Ordering::Relaxed) {
            return Err(StoreError::Broken(format!(
                "{}: not {doing}: this connection failed earlier and must be made again",
                self.store.shown
            )));
        }
        Ok(())
    }

    /// What `err` of a `request` means (see the module docs); a failed
    /// connection is marked so.
    fn fail(&self, err: &RedisError, request: Request, doing: &str) -> StoreError {
        if connection_failed(err) {
            self.failed.store(true, Ordering::Relaxed);
        }
        classify(
            err,
            request,
            format!("{}: {doing}: {err}", self.store.shown),
        )
    }

    /// Runs `cmd`, an `EVALSHA` of `script`; a server that does not hold
    /// the script (flushed, or another server behind the address) is given
    /// it and asked again: it answered `NOSCRIPT` without running anything.
    async fn run_script(&self, script: &Script, cmd: &Cmd) -> RedisResult<Vec<u8>> {
        let mut connection = self.connection.clone();
        match cmd.query_async(&mut connection).await {
            Err(err) if err.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                script.prepare_invoke().load_async(&mut connection).await?;
                cmd.query_async(&mut connection).await
            }
            answered => answered,
        }
    }

    /// A script's answer, one flag a key; an answer of another length or
    /// with another byte than `0` and `1` is `Lost` (the script ran, what
    /// it did is unknown).
    fn landed(&self, answer: Vec<u8>, keys: usize, doing: &str) -> Result<Vec<bool>, StoreError> {
        flags(&answer, keys).ok_or_else(|| {
            StoreError::Lost(format!(
                "{}: {doing}: the script answered {:?} for {keys} keys, not a flag a key",
                self.store.shown,
                String::from_utf8_lossy(&answer[..answer.len().min(48)])
            ))
        })
    }
}

/// An `EVALSHA` of `script` with room for `keys` keys and `args`
/// arguments, `bytes` of them besides names and headers. Keys and
/// arguments are written straight into the command's one buffer
/// (`ScriptInvocation` copies each into a vector of its own first, two
/// allocations an argument).
fn evalsha(script: &Script, keys: usize, args: usize, bytes: usize) -> Cmd {
    // A name or a header is a few dozen bytes.
    let mut cmd = Cmd::with_capacity(3 + keys + args, bytes + 48 * (keys + args) + 64);
    cmd.arg("EVALSHA").arg(script.get_hash()).arg(keys);
    cmd
}

/// The flags of a script's answer for `keys` keys (`1`: landed), or
/// `None` if it is not one `0` or `1` a key.
fn flags(answer: &[u8], keys: usize) -> Option<Vec<bool>> {
    if answer.len() != keys {
        return None;
    }
    answer
        .iter()
        .map(|flag| match flag {
            b'1' => Some(true),
            b'0' => Some(false),
            _ => None,
        })
        .collect()
}

/// A row as stored, `{version}:{epoch}:` and the state's bytes, as the
/// next argument of `cmd`; with no state, a change's condition as the
/// scripts take it (the header of the row it expects).
fn row_arg(cmd: &mut Cmd, version: u64, epoch: u64, state: &[u8]) {
    // Two numbers of at most 20 digits and two colons: the header is put
    // together on the stack, in one write (`itoa`, not `write!`: two
    // headers go out for every key a trip writes).
    let mut header = [0_u8; 42];
    let mut end = 0;
    let mut text = itoa::Buffer::new();
    for number in [version, epoch] {
        let digits = text.format(number).as_bytes();
        header[end..end + digits.len()].copy_from_slice(digits);
        header[end + digits.len()] = b':';
        end += digits.len() + 1;
    }
    let mut arg = cmd.writer_for_next_arg();
    let written = arg
        .write_all(&header[..end])
        .and_then(|()| arg.write_all(state));
    debug_assert!(written.is_ok(), "a command's buffer takes every write");
}

/// The row of a key's value (`None`: the key holds none), or why the
/// value is not a row.
fn decode(value: Option<Vec<u8>>) -> Result<Row, String> {
    let Some(mut value) = value else {
        return Ok(Row::default());
    };
    let (version, epoch, header) = header(&value).ok_or_else(|| {
        let shown = String::from_utf8_lossy(&value[..value.len().min(48)]).into_owned();
        format!("WRONGTYPE the string {shown:?} is not a row (version:epoch:state)")
    })?;
    value.drain(..header);
    Ok(Row {
        version,
        epoch,
        state: Some(value),
    })
}

/// A row's version and epoch, and the length of its header
/// `{version}:{epoch}:`; `None` if `value` does not start with one.
fn header(value: &[u8]) -> Option<(u64, u64, usize)> {
    let (version, taken) = number(value)?;
    let (epoch, more) = number(&value[taken..])?;
    Some((version, epoch, taken + more))
}

/// The decimal number (no leading zeros, at most `u64::MAX`) that starts
/// `bytes`, ended by `:`, and the bytes it takes with its colon.
fn number(bytes: &[u8]) -> Option<(u64, usize)> {
    // u64::MAX has 20 digits.
    let colon = bytes.iter().take(21).position(|&byte| byte == b':')?;
    let digits = &bytes[..colon];
    let plain =
        digits.iter().all(u8::is_ascii_digit) && (digits == b"0" || !digits.starts_with(b"0"));
    if digits.is_empty() || !plain {
        return None;
    }
    let number = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some((number, colon + 1))
}

/// The version an append moves its log to: `expected` plus its events;
/// `Refused` (nothing sent) past `u64::MAX`.
fn moved_to<K: fmt::Display>(append: &Append<'_, K>) -> Result<u64, StoreError> {
    u64::try_from(append.events.len())
        .ok()
        .and_then(|count| append.expected.checked_add(count))
        .ok_or_else(|| {
            StoreError::Refused(format!(
                "key {}: {} events after version {} pass the largest version",
                append.key,
                append.events.len(),
                append.expected
            ))
        })
}

/// Whether the connection itself failed: I/O, closed, or no answer in time.
fn connection_failed(err: &RedisError) -> bool {
    err.is_io_error() || err.is_connection_dropped() || err.is_timeout()
}

/// Whether the server answered with an error (possibly inside a pipeline).
fn server_said(err: &RedisError) -> bool {
    matches!(err.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
}

/// The store's error for `err` of a `request`, said as `why`.
fn classify(err: &RedisError, request: Request, why: String) -> StoreError {
    match (connection_failed(err), request) {
        (true, Request::Read) => StoreError::Broken(why),
        (true, Request::Change) => StoreError::Lost(why),
        (false, _) if server_said(err) => StoreError::Refused(why),
        // An answer of the wrong shape: a read changed nothing; a change's
        // script ran, and what it did is unknown.
        (false, Request::Read) => StoreError::Refused(why),
        (false, Request::Change) => StoreError::Lost(why),
    }
}

/// What to check when connecting failed with `err`.
fn connect_hint(err: &RedisError) -> &'static str {
    let auth = err.kind() == ErrorKind::AuthenticationFailed
        || matches!(err.code(), Some("NOAUTH" | "WRONGPASS" | "NOPERM"));
    if auth {
        "check the user and password in the URL, and that the user may run EVALSHA, SCRIPT, MULTI, EXEC, MGET, EXISTS, MSET, TYPE and RPUSH"
    } else if err.is_timeout() {
        "no answer within 5 seconds: is the host reachable, and the server not stalled?"
    } else {
        "is redis-server running there, and are the URL's host and port right?"
    }
}

/// A client for `url` (shown as `shown`), if it is a Redis URL.
fn open_client(url: &str, shown: &str) -> Result<Client, StoreError> {
    if url.starts_with("rediss://") {
        return Err(StoreError::Refused(format!(
            "{shown}: TLS (rediss://) is not built into RedisStore; use redis:// (through a TLS tunnel if needed)"
        )));
    }
    let expected = "expected redis://[user:password@]host[:port][/db] or redis+unix:///path";
    if !SCHEMES.iter().any(|scheme| url.starts_with(scheme)) {
        return Err(StoreError::Refused(format!(
            "{shown} is not a Redis URL ({expected})"
        )));
    }
    // The crate's parse errors are fixed texts: no part of the URL in them.
    Client::open(url).map_err(|err| {
        StoreError::Refused(format!(
            "{shown} is not a Redis URL that can be used: {err} ({expected})"
        ))
    })
}

/// Refuses an empty prefix, or one with whitespace or control characters.
fn check_prefix(prefix: &str) -> Result<(), StoreError> {
    if prefix.is_empty() {
        return Err(StoreError::Refused(
            "the key prefix is empty: give the store's own prefix, such as `accounts`".into(),
        ));
    }
    if prefix.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(StoreError::Refused(format!(
            "the key prefix {prefix:?} holds whitespace or control characters"
        )));
    }
    Ok(())
}

/// `url` as it may be shown. Everything between `://` and the last `@`
/// (user and password) becomes `***`, and a query or fragment (a Unix
/// socket's URL may carry `pass=` there) becomes `?…`. A string with no
/// `://` is not shown at all.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "the URL given".into();
    };
    let (credentials, place) = match rest.rsplit_once('@') {
        Some((_, place)) => ("***@", place),
        None => ("", rest),
    };
    match place.find(['?', '#']) {
        Some(end) => format!("{scheme}://{credentials}{}?…", &place[..end]),
        None => format!("{scheme}://{credentials}{place}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(result: Result<RedisStore, StoreError>) -> String {
        match result {
            Err(StoreError::Refused(why)) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn urls_are_shown_without_credentials() {
        let cases = [
            ("redis://localhost:6379/0", "redis://localhost:6379/0"),
            ("redis://:secret@host:1", "redis://***@host:1"),
            ("redis://user:se@cr/et@host", "redis://***@host"),
            (
                "redis+unix:///run/r.sock?pass=secret",
                "redis+unix:///run/r.sock?…",
            ),
            ("user:secret@host", "the URL given"),
        ];
        for (url, shown) in cases {
            assert_eq!(redact(url), shown, "{url}");
        }
    }

    #[test]
    fn new_takes_redis_urls_and_refuses_others() {
        let store = RedisStore::new("redis://u:secret@127.0.0.1:6390/3", "app:accounts").unwrap();
        let debug = format!("{store:?}");
        assert!(debug.contains("127.0.0.1:6390") && debug.contains("app:accounts"));
        assert!(!debug.contains("secret"), "{debug}");
        assert!(RedisStore::new("redis+unix:///tmp/redis.sock", "p").is_ok());
        for url in [
            "postgres://u:secret@host/db",
            "http://secret@host",
            "localhost:6379",
            "rediss://:secret@host",
        ] {
            let why = refused(RedisStore::new(url, "p"));
            assert!(!why.contains("secret"), "{url}: {why}");
        }
        assert!(refused(RedisStore::new("ftp://h", "p")).contains("not a Redis URL"));
        assert!(refused(RedisStore::new("rediss://h", "p")).contains("TLS"));
    }

    #[test]
    fn prefixes_must_be_plain() {
        for prefix in ["", "two words", "tab\t", "line\n", "bell\u{7}"] {
            refused(RedisStore::new("redis://localhost", prefix));
        }
        assert!(RedisStore::new("redis://localhost", "a:b-c_d.e").is_ok());
    }

    #[test]
    fn names_follow_the_prefix() {
        let store = RedisStore::new("redis://localhost", "carts").unwrap();
        assert_eq!(store.head(&7_u64), "carts:7");
        assert_eq!(store.head(&"cart-1"), "carts:cart-1");
        let mut cmd = Cmd::new();
        store.name_arg(&mut cmd, &7_u64, "");
        store.name_arg(&mut cmd, &"cart-1", EVENTS_SUFFIX);
        assert_eq!(args(&cmd), [&b"carts:7"[..], b"carts:cart-1:events"]);
    }

    /// The arguments of `cmd`, as bytes.
    fn args(cmd: &Cmd) -> Vec<&[u8]> {
        cmd.args_iter()
            .map(|arg| match arg {
                ::redis::Arg::Simple(bytes) => bytes,
                _ => panic!("only plain arguments here"),
            })
            .collect()
    }

    /// A row as [`row_arg`] writes it.
    fn encode(version: u64, epoch: u64, state: &[u8]) -> Vec<u8> {
        let mut cmd = Cmd::new();
        row_arg(&mut cmd, version, epoch, state);
        args(&cmd)[0].to_vec()
    }

    #[test]
    fn a_script_answers_one_flag_a_key() {
        assert_eq!(flags(b"101", 3), Some(vec![true, false, true]));
        assert_eq!(flags(b"", 0), Some(vec![]));
        assert_eq!(flags(b"10", 3), None, "one flag short");
        assert_eq!(flags(b"1x1", 3), None, "not a flag");
        assert_eq!(flags(b"111", 2), None, "one flag too many");
    }

    #[test]
    fn a_script_s_command_is_its_hash_keys_then_arguments() {
        let store = RedisStore::new("redis://localhost", "carts").unwrap();
        let mut cmd = evalsha(&store.write, 1, 2, 3);
        store.name_arg(&mut cmd, &7_u64, "");
        row_arg(&mut cmd, 4, 1, &[]);
        row_arg(&mut cmd, 5, 1, b"{}");
        let hash = store.write.get_hash().as_bytes();
        assert_eq!(
            args(&cmd),
            [&b"EVALSHA"[..], hash, b"1", b"carts:7", b"4:1:", b"5:1:{}"]
        );
    }

    #[test]
    fn an_append_s_version_counts_its_events() {
        let events = [b"a".to_vec(), b"b".to_vec()];
        let append = Append {
            tag: b"t",
            key: &1_u8,
            expected: 4,
            epoch: 0,
            events: &events,
        };
        assert_eq!(moved_to(&append), Ok(6));
        let full = Append {
            tag: b"t",
            expected: u64::MAX - 1,
            ..append
        };
        assert!(matches!(moved_to(&full), Err(StoreError::Refused(_))));
    }

    #[test]
    fn failures_are_told_apart() {
        let io = |kind| RedisError::from(std::io::Error::from(kind));
        let server = ::redis::make_extension_error("WRONGTYPE".into(), Some("a list".into()));
        let shape = RedisError::from((ErrorKind::UnexpectedReturnType, "not a row"));
        let cases = [
            (io(std::io::ErrorKind::BrokenPipe), Request::Read, "Broken"),
            (io(std::io::ErrorKind::BrokenPipe), Request::Change, "Lost"),
            (io(std::io::ErrorKind::TimedOut), Request::Read, "Broken"),
            (io(std::io::ErrorKind::TimedOut), Request::Change, "Lost"),
            (server.clone(), Request::Read, "Refused"),
            (server, Request::Change, "Refused"),
            (shape.clone(), Request::Read, "Refused"),
            (shape, Request::Change, "Lost"),
        ];
        for (err, request, expected) in cases {
            let said = match classify(&err, request, String::new()) {
                StoreError::Refused(_) => "Refused",
                StoreError::Broken(_) => "Broken",
                StoreError::Lost(_) => "Lost",
            };
            assert_eq!(said, expected, "{err} on {request:?}");
        }
    }

    #[test]
    fn scripts_share_the_judge() {
        for script in [WRITE_SCRIPT, APPEND_SCRIPT] {
            assert!(script.contains("local function lands(row, condition)"));
            assert!(script.contains("at_most(epoch, mine)"));
            assert!(script.contains("local verdict = lands(row, condition)"));
        }
    }

    #[test]
    fn rows_are_a_header_and_the_state() {
        assert_eq!(encode(12, 3, br#"{"n":5}"#), br#"12:3:{"n":5}"#.to_vec());
        assert_eq!(encode(0, 7, b""), b"0:7:".to_vec());
        let row = |version, epoch, state: &[u8]| Row {
            version,
            epoch,
            state: Some(state.to_vec()),
        };
        assert_eq!(decode(None), Ok(Row::default()));
        for (version, epoch, state) in [
            (0, 0, &b""[..]),
            (12, 3, b"a:b:c"),
            (u64::MAX, u64::MAX, b"\0\xff"),
        ] {
            let stored = encode(version, epoch, state);
            assert_eq!(decode(Some(stored)), Ok(row(version, epoch, state)));
        }
    }

    #[test]
    fn strings_without_the_header_are_not_rows() {
        let too_large = format!("{}0:1:s", u64::MAX);
        for value in [
            "", "a string", "1:", "1:2", ":1:s", "1::s", "01:1:s", "1:00:s", "-1:1:s", "1:x:s",
            &too_large,
        ] {
            let why = decode(Some(value.as_bytes().to_vec())).expect_err(value);
            assert!(
                why.contains("WRONGTYPE") && why.contains("not a row"),
                "{value}: {why}"
            );
        }
        assert_eq!(header(b"0:0:"), Some((0, 0, 4)));
        assert_eq!(header(b"18446744073709551615:1:"), Some((u64::MAX, 1, 23)));
    }

    #[test]
    fn connecting_outside_tokio_is_broken_and_says_why() {
        let store = RedisStore::new("redis://127.0.0.1:1", "p").unwrap();
        let connected = futures::executor::block_on(Store::<u64>::connect(&store));
        match connected {
            Err(StoreError::Broken(why)) => assert!(why.contains("tokio runtime"), "{why}"),
            other => panic!("expected Broken, got {other:?}"),
        }
    }
}
