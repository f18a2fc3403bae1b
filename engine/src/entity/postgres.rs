//! Entities in PostgreSQL tables, through tokio-postgres (feature
//! `postgres`).
//!
//! A store named `t` keeps two tables, created by the first shard that
//! connects:
//!
//! - `t (key, version bigint, epoch bigint, state bytea)`, keyed by `key`:
//!   one row per key; a log's row (its head) keeps its last append's tag
//!   as its state, and its version is the log's length;
//! - `t_events (key, seq bigint, event bytea)`, keyed by `(key, seq)`: a
//!   log's events, `seq` counting from 1.
//!
//! Every request is one statement, and so one transaction (autocommit):
//! a read is a `SELECT … WHERE key = ANY($1)`; a write (or an append) is
//! one statement of data-modifying `WITH` parts over arrays of the
//! request's columns (`unnest`), which moves each row on its own condition
//! (see [`store`](super::store)) and answers the keys that landed.
//!
//! How a failure is told: an error the server answers for the statement
//! (not `FATAL`) is a refusal, and its transaction was rolled back; a
//! connection that fails, or a `FATAL` answer (the session was ended), is
//! a broken connection, or a lost request if a write was already sent.

use std::collections::{HashMap, HashSet};
use std::error::Error as _;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::time::Duration;

use tokio_postgres::error::SqlState;
use tokio_postgres::types::{FromSqlOwned, ToSql};
use tokio_postgres::{Client, Config, NoTls, Statement};

use super::store::{Append, Connection, Row, Store, StoreError, Write};

/// How long a connection may take to be made.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What the events table's name adds to the store's.
const EVENTS_SUFFIX: &str = "_events";

/// The longest table name: PostgreSQL keeps 63 bytes of a name, and the
/// events table's name must fit whole.
const TABLE_NAME_MAX: usize = 63 - EVENTS_SUFFIX.len();

/// A key type as a PostgreSQL column holds it: the column's SQL type, and
/// the value bound for a key. A `Vec` of values binds as one array
/// parameter, so a request's keys travel in one statement.
///
/// Implemented for `i64`, `i32` and `u64` (a `bigint` column; a `u64`
/// above `i64::MAX` is refused) and for `String` and `&'static str` (a
/// `text` column). A key type of one's own implements it by converting to
/// one of those:
///
/// ```
/// use ferry::entity::{PgKey, StoreError};
///
/// assert_eq!(<u64 as PgKey>::SQL_TYPE, "bigint");
/// assert_eq!(7_u64.to_param(), Ok(7_i64));
/// assert!(matches!(u64::MAX.to_param(), Err(StoreError::Refused(_))));
/// assert_eq!("a".to_param(), Ok(String::from("a")));
///
/// /// An account number, kept as text.
/// struct Account(u32);
///
/// impl PgKey for Account {
///     const SQL_TYPE: &'static str = "text";
///     type Param = String;
///
///     fn to_param(&self) -> Result<String, StoreError> {
///         Ok(format!("acct-{}", self.0))
///     }
/// }
///
/// assert_eq!(Account(12).to_param(), Ok(String::from("acct-12")));
/// ```
pub trait PgKey: Send + Sync + 'static {
    /// The key column's type as SQL spells it (`bigint`, `text`): used in
    /// `CREATE TABLE` and in the casts of the statements' arrays
    /// (`$1::bigint[]`).
    const SQL_TYPE: &'static str;

    /// The value bound for a key, and read back from the key column; it
    /// must be the Rust type tokio-postgres binds for [`Self::SQL_TYPE`]
    /// (`i64` for `bigint`, `String` for `text`). Two keys are the same
    /// row if and only if their values are equal.
    type Param: ToSql + FromSqlOwned + Clone + Ord + Hash + Send + Sync + 'static;

    /// The key as bound; [`StoreError::Refused`] if the column cannot hold
    /// it (nothing is sent then).
    fn to_param(&self) -> Result<Self::Param, StoreError>;
}

impl PgKey for i64 {
    const SQL_TYPE: &'static str = "bigint";
    type Param = i64;

    fn to_param(&self) -> Result<i64, StoreError> {
        Ok(*self)
    }
}

impl PgKey for i32 {
    const SQL_TYPE: &'static str = "bigint";
    type Param = i64;

    fn to_param(&self) -> Result<i64, StoreError> {
        Ok(i64::from(*self))
    }
}

impl PgKey for u64 {
    const SQL_TYPE: &'static str = "bigint";
    type Param = i64;

    fn to_param(&self) -> Result<i64, StoreError> {
        i64::try_from(*self).map_err(|_| {
            StoreError::Refused(format!(
                "key {self} does not fit a bigint column (at most {})",
                i64::MAX
            ))
        })
    }
}

impl PgKey for String {
    const SQL_TYPE: &'static str = "text";
    type Param = String;

    fn to_param(&self) -> Result<String, StoreError> {
        Ok(self.clone())
    }
}

impl PgKey for &'static str {
    const SQL_TYPE: &'static str = "text";
    type Param = String;

    fn to_param(&self) -> Result<String, StoreError> {
        Ok((*self).to_string())
    }
}

/// A store of entities in a PostgreSQL database: the server's address and
/// the table's name. Each shard connects on its own (see
/// [`Store::connect`]), inside a tokio runtime, which drives the
/// connection's I/O.
///
/// Shown (`Debug`) without any password.
///
/// ```no_run
/// use ferry::entity::{Connection, PostgresStore, Store, StoreError, Write};
///
/// # async fn run() -> Result<(), StoreError> {
/// let store = PostgresStore::new("postgres://ferry@localhost:5432/app", "accounts")?;
/// let connection = Store::<u64>::connect(&store).await?;
/// let write = Write { key: &7, expected: 0, version: 1, epoch: 1, state: b"{}" };
/// assert_eq!(connection.write(&[write]).await?, vec![true]);
/// assert_eq!(connection.read(&[&7]).await?[0].version, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    config: Config,
    /// The URL as it may be shown (no password).
    shown: String,
    /// The main table's name: ASCII letters, digits and `_`, at most
    /// [`TABLE_NAME_MAX`] bytes (so it is quoted safely).
    table: String,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("address", &self.shown)
            .field("table", &self.table)
            .finish()
    }
}

impl PostgresStore {
    /// A store at `url` (`postgres://user:password@host:port/database`, or
    /// `postgresql://…`), in table `table` and `{table}_events`. Nothing is
    /// connected yet; connections are made within 5 seconds or fail.
    ///
    /// The table's name may hold ASCII letters, digits and `_` (at most
    /// 56 of them); it is used as written (quoted), so `Accounts` and
    /// `accounts` are two tables. Anything else is
    /// [`StoreError::Refused`], and so is a URL that is not PostgreSQL's;
    /// the messages never show a password.
    ///
    /// ```
    /// use ferry::entity::{PostgresStore, StoreError};
    ///
    /// let store = PostgresStore::new("postgres://ferry:secret@localhost/app", "accounts").unwrap();
    /// assert!(!format!("{store:?}").contains("secret"));
    ///
    /// let Err(StoreError::Refused(why)) = PostgresStore::new("redis://:secret@localhost", "accounts")
    /// else { panic!("a Redis URL is not PostgreSQL's") };
    /// assert!(why.contains("not a PostgreSQL URL") && !why.contains("secret"));
    ///
    /// assert!(PostgresStore::new("postgres://localhost/app", "accounts; DROP TABLE x").is_err());
    /// ```
    pub fn new(url: &str, table: &str) -> Result<PostgresStore, StoreError> {
        check_table_name(table)?;
        let config = parse_url(url)?;
        Ok(PostgresStore {
            config,
            shown: redact(url),
            table: table.to_string(),
        })
    }

    /// A store reached with `config` (for settings a URL does not carry),
    /// in table `table`; refused as [`new`](Self::new) refuses a table
    /// name. A connect timeout of 5 seconds is set unless `config` has one.
    ///
    /// ```
    /// use ferry::entity::PostgresStore;
    ///
    /// let mut config = tokio_postgres::Config::new();
    /// config.host("127.0.0.1").port(5433).user("ferry").dbname("app");
    /// let store = PostgresStore::from_config(config, "accounts").unwrap();
    /// assert!(format!("{store:?}").contains("127.0.0.1:5433"));
    /// ```
    pub fn from_config(mut config: Config, table: &str) -> Result<PostgresStore, StoreError> {
        check_table_name(table)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let host = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
            Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
            None => "localhost".to_string(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        Ok(PostgresStore {
            shown: format!("postgres://{host}:{port}"),
            config,
            table: table.to_string(),
        })
    }

    /// A session of its own, its I/O a task of the calling thread's tokio
    /// runtime.
    async fn open_session(&self) -> Result<Client, StoreError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(StoreError::Broken(format!(
                "{}: PostgresStore::connect must be called inside a tokio runtime, which drives the connection",
                self.shown
            )));
        }
        let (client, connection) = self.config.connect(NoTls).await.map_err(|err| {
            StoreError::Broken(format!(
                "could not connect to {}: {} (is the server running, and are the URL's host, port, user and database right?)",
                self.shown,
                said(&err)
            ))
        })?;
        // The connection's end (and why) reaches the client: its next
        // request fails, and that error is what the caller sees.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(client)
    }

    /// Creates both tables if they are missing. Shards connecting at once
    /// would race in PostgreSQL (`CREATE TABLE IF NOT EXISTS` is not safe
    /// against itself), so the creates hold an advisory lock of the
    /// table's name, in the one implicit transaction of a multi-statement
    /// query; a unique violation (a creator not taking the lock) is tried
    /// once more.
    async fn create_tables<K: PgKey>(&self, client: &Client) -> Result<(), StoreError> {
        let sql = create_tables_sql(&self.table, K::SQL_TYPE);
        let mut result = client.batch_execute(&sql).await;
        if result
            .as_ref()
            .is_err_and(|err| err.code() == Some(&SqlState::UNIQUE_VIOLATION))
        {
            result = client.batch_execute(&sql).await;
        }
        result.map_err(|err| {
            unsent(
                &err,
                &format!("{}: creating table {}", self.shown, self.table),
            )
        })
    }
}

impl<K: PgKey> Store<K> for PostgresStore {
    type Connection = PgConnection<K>;

    /// Connects (with `NoTls`), creates the tables if they are missing and
    /// prepares the three statements. A connection that cannot be made is
    /// [`StoreError::Broken`], its message saying what to check.
    async fn connect(&self) -> Result<PgConnection<K>, StoreError> {
        // Phase 1: the session.
        let client = self.open_session().await?;
        // Phase 2: the tables, and plans that reach rows by key: a plan
        // cached while the table was small (or never analysed) would
        // otherwise scan it whole once it is not (the statements join the
        // request's keys to the table). The session runs only these
        // statements, each of which has the primary key to go by.
        self.create_tables::<K>(&client).await?;
        client
            .batch_execute("SET enable_seqscan = off")
            .await
            .map_err(|err| unsent(&err, &format!("{}: setting the session", self.shown)))?;
        // Phase 3: the statements, prepared once for the connection's life.
        let sql = Statements::new(&self.table, K::SQL_TYPE);
        let prepare = |name: &'static str, text: String| {
            let client = &client;
            async move {
                client.prepare(&text).await.map_err(|err| {
                    let doing = format!(
                        "{}: preparing the {name} of table {}",
                        self.shown, self.table
                    );
                    unsent(&err, &doing)
                })
            }
        };
        let read = prepare("read", sql.read).await?;
        let write = prepare("write", sql.write).await?;
        let append = prepare("append", sql.append).await?;
        Ok(PgConnection {
            client,
            read,
            write,
            append,
            shown: self.shown.clone(),
            table: self.table.clone(),
            keys: PhantomData,
        })
    }
}

/// One shard's connection to a [`PostgresStore`], its statements prepared:
/// what [`Store::connect`] answers.
///
/// ```no_run
/// use ferry::entity::{Append, Connection, PostgresStore, Store, StoreError};
///
/// # async fn run() -> Result<(), StoreError> {
/// let store = PostgresStore::new("postgres://ferry@localhost/app", "carts")?;
/// let connection = Store::<String>::connect(&store).await?;
/// let key = String::from("cart-1");
/// let events = [b"added".to_vec(), b"paid".to_vec()];
/// let append = Append { tag: b"t", key: &key, expected: 0, epoch: 1, events: &events };
/// assert_eq!(connection.append(&[append]).await?, vec![true]);
/// // The head's version is the log's length.
/// assert_eq!(connection.read(&[&key]).await?[0].version, 2);
/// # Ok(())
/// # }
/// ```
pub struct PgConnection<K> {
    client: Client,
    read: Statement,
    write: Statement,
    append: Statement,
    /// The URL as it may be shown, for messages.
    shown: String,
    table: String,
    keys: PhantomData<fn(&K)>,
}

impl<K> fmt::Debug for PgConnection<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgConnection")
            .field("address", &self.shown)
            .field("table", &self.table)
            .field("closed", &self.client.is_closed())
            .finish_non_exhaustive()
    }
}

impl<K: PgKey> Connection<K> for PgConnection<K> {
    async fn read(&self, keys: &[&K]) -> Result<Vec<Row>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let params = keys
            .iter()
            .map(|key| key.to_param())
            .collect::<Result<Vec<_>, _>>()?;
        let found = self
            .client
            .query(&self.read, &[&params])
            .await
            .map_err(|err| unsent(&err, &self.doing("reading")))?;
        let mut rows = HashMap::with_capacity(found.len());
        for row in &found {
            let (key, row) = self.decode::<K>(row)?;
            rows.insert(key, row);
        }
        // One row per key asked, in order; a key not found was never written.
        Ok(params
            .iter()
            .map(|key| rows.get(key).cloned().unwrap_or_default())
            .collect())
    }

    async fn write(&self, writes: &[Write<'_, K>]) -> Result<Vec<bool>, StoreError> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        // Phase 1: the columns, every value checked before anything is sent.
        let columns = WriteColumns::of(writes)?;
        // Phase 2: the one statement.
        let landed = self
            .send(
                &self.write,
                &[
                    &columns.keys,
                    &columns.expected,
                    &columns.versions,
                    &columns.epochs,
                    &columns.states,
                ],
                "writing",
            )
            .await?;
        // Phase 3: each write's outcome, in the request's order.
        self.outcomes::<K>(&columns.asked, &landed)
    }

    async fn append(&self, appends: &[Append<'_, K>]) -> Result<Vec<bool>, StoreError> {
        if appends.is_empty() {
            return Ok(Vec::new());
        }
        // Phase 1: the heads' columns and the events', checked before
        // anything is sent.
        let columns = AppendColumns::of(appends)?;
        // Phase 2: the one statement.
        let landed = self
            .send(
                &self.append,
                &[
                    &columns.keys,
                    &columns.expected,
                    &columns.versions,
                    &columns.epochs,
                    &columns.event_keys,
                    &columns.event_seqs,
                    &columns.events,
                    &columns.tags,
                ],
                "appending",
            )
            .await?;
        // Phase 3: each append's outcome, in the request's order.
        self.outcomes::<K>(&columns.asked, &landed)
    }
}

impl<K> PgConnection<K> {
    /// What the connection was doing, for a message.
    fn doing(&self, what: &str) -> String {
        format!("{}: {what} table {}", self.shown, self.table)
    }

    /// Runs a write (or append) statement: refused by the server, nothing
    /// was applied; the connection failing once it was sent, the outcome
    /// is unknown.
    async fn send(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
        what: &str,
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        if self.client.is_closed() {
            return Err(StoreError::Broken(format!(
                "{}: the connection is closed",
                self.doing(what)
            )));
        }
        self.client
            .query(statement, params)
            .await
            .map_err(|err| sent(&err, &self.doing(what)))
    }

    /// A row read: its key and what it holds; a value out of range is
    /// refused.
    fn decode<P: PgKey>(&self, row: &tokio_postgres::Row) -> Result<(P::Param, Row), StoreError> {
        let bad = |err: tokio_postgres::Error| {
            StoreError::Refused(format!("{}: {}", self.doing("reading"), said(&err)))
        };
        let key: P::Param = row.try_get(0).map_err(bad)?;
        let version: i64 = row.try_get(1).map_err(bad)?;
        let epoch: i64 = row.try_get(2).map_err(bad)?;
        let state: Option<Vec<u8>> = row.try_get(3).map_err(bad)?;
        let count = |value: i64, column: &str| {
            u64::try_from(value).map_err(|_| {
                StoreError::Refused(format!(
                    "{}: a row's {column} is {value}, below 0",
                    self.doing("reading")
                ))
            })
        };
        let row = Row {
            version: count(version, "version")?,
            epoch: count(epoch, "epoch")?,
            state,
        };
        Ok((key, row))
    }

    /// Whether each key landed: whether the statement returned it. The
    /// statement has committed by now, so a reply that cannot be read is a
    /// lost one.
    fn outcomes<P: PgKey>(
        &self,
        keys: &[P::Param],
        returned: &[tokio_postgres::Row],
    ) -> Result<Vec<bool>, StoreError> {
        let mut landed = HashSet::with_capacity(returned.len());
        for row in returned {
            let key: P::Param = row.try_get(0).map_err(|err| {
                StoreError::Lost(format!(
                    "{}: the keys written could not be read back: {}",
                    self.doing("writing"),
                    said(&err)
                ))
            })?;
            landed.insert(key);
        }
        Ok(keys.iter().map(|key| landed.contains(key)).collect())
    }
}

/// A write request as the statement's array parameters, one element per
/// write, sorted by key (so that the statement meets the rows, and locks
/// them, in key order); `asked` keeps the request's order.
struct WriteColumns<'a, P> {
    asked: Vec<P>,
    keys: Vec<P>,
    expected: Vec<i64>,
    versions: Vec<i64>,
    epochs: Vec<i64>,
    states: Vec<&'a [u8]>,
}

impl<'a, P: Clone + Ord + Hash> WriteColumns<'a, P> {
    fn of<K: PgKey<Param = P>>(writes: &[Write<'a, K>]) -> Result<Self, StoreError> {
        let (asked, sorted) = by_key(writes, |write| write.key)?;
        let mut columns = WriteColumns {
            asked,
            keys: Vec::with_capacity(writes.len()),
            expected: Vec::with_capacity(writes.len()),
            versions: Vec::with_capacity(writes.len()),
            epochs: Vec::with_capacity(writes.len()),
            states: Vec::with_capacity(writes.len()),
        };
        for (key, write) in sorted {
            columns.keys.push(key);
            columns
                .expected
                .push(bigint(write.expected, "expected version")?);
            columns.versions.push(bigint(write.version, "version")?);
            columns.epochs.push(bigint(write.epoch, "epoch")?);
            columns.states.push(write.state);
        }
        debug_assert!(
            distinct(&columns.keys),
            "the keys of a request are distinct"
        );
        Ok(columns)
    }
}

/// An append request as the statement's array parameters: the heads, one
/// element per append sorted by key (as [`WriteColumns`]), and the events,
/// one element per event, each with its key and sequence; `asked` keeps
/// the request's order.
struct AppendColumns<'a, P> {
    asked: Vec<P>,
    keys: Vec<P>,
    expected: Vec<i64>,
    versions: Vec<i64>,
    epochs: Vec<i64>,
    tags: Vec<&'a [u8]>,
    event_keys: Vec<P>,
    event_seqs: Vec<i64>,
    events: Vec<&'a [u8]>,
}

impl<'a, P: Clone + Ord + Hash> AppendColumns<'a, P> {
    fn of<K: PgKey<Param = P>>(appends: &[Append<'a, K>]) -> Result<Self, StoreError> {
        let (asked, sorted) = by_key(appends, |append| append.key)?;
        let mut columns = AppendColumns {
            asked,
            keys: Vec::with_capacity(appends.len()),
            expected: Vec::with_capacity(appends.len()),
            versions: Vec::with_capacity(appends.len()),
            epochs: Vec::with_capacity(appends.len()),
            tags: Vec::with_capacity(appends.len()),
            event_keys: Vec::new(),
            event_seqs: Vec::new(),
            events: Vec::new(),
        };
        for (key, append) in sorted {
            let expected = bigint(append.expected, "expected length")?;
            let added = u64::try_from(append.events.len()).unwrap_or(u64::MAX);
            let length = append
                .expected
                .checked_add(added)
                .ok_or_else(|| StoreError::Refused("a log's length overflows".into()))?;
            // The head's version becomes the log's new length; the events
            // take the sequences after the old one.
            columns.versions.push(bigint(length, "log length")?);
            for (seq, event) in (expected + 1..).zip(append.events) {
                columns.event_keys.push(key.clone());
                columns.event_seqs.push(seq);
                columns.events.push(event.as_slice());
            }
            columns.keys.push(key);
            columns.expected.push(expected);
            columns.epochs.push(bigint(append.epoch, "epoch")?);
            columns.tags.push(append.tag);
        }
        debug_assert!(
            distinct(&columns.keys),
            "the keys of a request are distinct"
        );
        Ok(columns)
    }
}

/// A request's keys as bound in its order, and its items with their keys
/// sorted by key.
type ByKey<'r, P, T> = (Vec<P>, Vec<(P, &'r T)>);

/// `items` as [`ByKey`] holds them.
fn by_key<'r, T, K: PgKey>(
    items: &'r [T],
    key: impl Fn(&'r T) -> &'r K,
) -> Result<ByKey<'r, K::Param, T>, StoreError> {
    let mut sorted = items
        .iter()
        .map(|item| Ok((key(item).to_param()?, item)))
        .collect::<Result<Vec<_>, StoreError>>()?;
    let asked = sorted.iter().map(|(param, _)| param.clone()).collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((asked, sorted))
}

/// `value` as a bigint column holds it; refused if it does not fit.
fn bigint(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| {
        StoreError::Refused(format!(
            "{what} {value} does not fit a bigint column (at most {})",
            i64::MAX
        ))
    })
}

fn distinct<P: Eq + Hash>(keys: &[P]) -> bool {
    keys.iter().collect::<HashSet<_>>().len() == keys.len()
}

/// The three statements of a connection, for one table and key type.
struct Statements {
    read: String,
    write: String,
    append: String,
}

impl Statements {
    /// `table` is a checked name (see [`check_table_name`]), so quoting it
    /// is enough; `key_type` is a [`PgKey::SQL_TYPE`].
    fn new(table: &str, key_type: &str) -> Statements {
        let events = format!("{table}{EVENTS_SUFFIX}");
        let read = format!(
            r#"SELECT key, version, epoch, state FROM "{table}" WHERE key = ANY($1::{key_type}[])"#
        );
        // Each write lands if its row moves (present, at the expected
        // version, at an epoch at most the write's) or is created (absent,
        // expected 0); the two parts see the same snapshot, and the
        // insert's conflict check keeps a row both could reach from
        // landing twice.
        // The request's rows come sorted by key (see `WriteColumns`), and
        // new ones are inserted in that order too: two requests on
        // overlapping keys (two instances, a handover) lock them in one
        // order rather than wait on each other in a cycle.
        let write = format!(
            r#"WITH w (key, expected, version, epoch, state) AS (
    SELECT * FROM unnest($1::{key_type}[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bytea[])
), moved AS (
    UPDATE "{table}" AS t SET version = w.version, epoch = w.epoch, state = w.state
    FROM w WHERE t.key = w.key AND t.version = w.expected AND t.epoch <= w.epoch
    RETURNING t.key
), created AS (
    INSERT INTO "{table}" (key, version, epoch, state)
    SELECT key, version, epoch, state FROM w WHERE expected = 0 ORDER BY key
    ON CONFLICT (key) DO NOTHING
    RETURNING key
)
SELECT key FROM moved UNION ALL SELECT key FROM created"#
        );
        // The heads move as writes do (their state the append's tag);
        // only the events of heads that landed are inserted.
        let append = format!(
            r#"WITH a (key, expected, version, epoch, tag) AS (
    SELECT * FROM unnest($1::{key_type}[], $2::bigint[], $3::bigint[], $4::bigint[], $8::bytea[])
), moved AS (
    UPDATE "{table}" AS t SET version = a.version, epoch = a.epoch, state = a.tag
    FROM a WHERE t.key = a.key AND t.version = a.expected AND t.epoch <= a.epoch
    RETURNING t.key
), created AS (
    INSERT INTO "{table}" (key, version, epoch, state)
    SELECT key, version, epoch, tag FROM a WHERE expected = 0 ORDER BY key
    ON CONFLICT (key) DO NOTHING
    RETURNING key
), landed AS (
    SELECT key FROM moved UNION ALL SELECT key FROM created
), logged AS (
    INSERT INTO "{events}" (key, seq, event)
    SELECT e.key, e.seq, e.event
    FROM unnest($5::{key_type}[], $6::bigint[], $7::bytea[]) AS e (key, seq, event)
    JOIN landed ON landed.key = e.key
)
SELECT key FROM landed"#
        );
        Statements {
            read,
            write,
            append,
        }
    }
}

/// How full PostgreSQL fills the pages of an entity table it creates, in
/// percent. Every write rewrites a row; with room left in its page the new
/// version stays there and the key's index is not touched (a "HOT"
/// update: one WAL record a row instead of three, measured on a trip of
/// 175 rows). The events table only grows, and keeps the default. A table
/// that already exists is used as it is (`ALTER TABLE … SET (fillfactor =
/// 50)` applies to pages written from then on).
///
/// ```
/// assert!((10..=100).contains(&ferry::entity::POSTGRES_FILLFACTOR));
/// ```
pub const POSTGRES_FILLFACTOR: u8 = 50;

/// Both tables' creation, in one multi-statement query (one implicit
/// transaction), under an advisory lock of the table's name.
fn create_tables_sql(table: &str, key_type: &str) -> String {
    let events = format!("{table}{EVENTS_SUFFIX}");
    format!(
        r#"SELECT pg_advisory_xact_lock(hashtext('ferry.entity'), hashtext('{table}'));
CREATE TABLE IF NOT EXISTS "{table}" (key {key_type} PRIMARY KEY, version bigint NOT NULL, epoch bigint NOT NULL, state bytea) WITH (fillfactor = {POSTGRES_FILLFACTOR});
CREATE TABLE IF NOT EXISTS "{events}" (key {key_type}, seq bigint, event bytea NOT NULL, PRIMARY KEY (key, seq));"#
    )
}

/// ASCII letters, digits and `_`, at most [`TABLE_NAME_MAX`] bytes.
fn check_table_name(table: &str) -> Result<(), StoreError> {
    let refuse = |why: String| Err(StoreError::Refused(why));
    if table.is_empty() {
        return refuse("the table's name is empty".into());
    }
    if let Some(bad) = table
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        return refuse(format!(
            "the table's name {table:?} holds {bad:?}: only ASCII letters, digits and `_` are allowed"
        ));
    }
    if table.len() > TABLE_NAME_MAX {
        return refuse(format!(
            "the table's name {table:?} is {} characters long: at most {TABLE_NAME_MAX} (PostgreSQL keeps 63, and {table}{EVENTS_SUFFIX} must fit)",
            table.len()
        ));
    }
    Ok(())
}

/// `url` as tokio-postgres reads it, with the connect timeout; refused if
/// it is not a `postgres://` (or `postgresql://`) URL.
fn parse_url(url: &str) -> Result<Config, StoreError> {
    let not_postgres = |why: String| {
        StoreError::Refused(format!(
            "{} is not a PostgreSQL URL (postgres://user@host:port/database): {why}",
            redact(url)
        ))
    };
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(not_postgres(
            "it does not begin with postgres:// or postgresql://".into(),
        ));
    }
    let mut config: Config = url.parse().map_err(|err| not_postgres(said(&err)))?;
    config.connect_timeout(CONNECT_TIMEOUT);
    Ok(config)
}

/// `url` as it may be shown: what follows the user's name before the last
/// `@` (a password) becomes `***`, and a query (which may hold one) is cut.
/// A string that is not a URL is not shown at all.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "the address given".into();
    };
    let (userinfo, place) = match rest.rsplit_once('@') {
        Some((userinfo, place)) => (Some(userinfo), place),
        None => (None, rest),
    };
    let (place, query) = match place.split_once('?') {
        Some((place, _)) => (place, "?…"),
        None => (place, ""),
    };
    let user = match userinfo {
        None => String::new(),
        Some(userinfo) => match userinfo.find([':', '/', '?']) {
            Some(end) => format!("{}:***@", &userinfo[..end]),
            None => format!("{userinfo}@"),
        },
    };
    format!("{scheme}://{user}{place}{query}")
}

/// An error of a request not yet applied (a read, a create, a prepare):
/// the server's refusal, or a broken connection.
fn unsent(err: &tokio_postgres::Error, doing: &str) -> StoreError {
    if refused(err) {
        StoreError::Refused(format!("{doing}: {}", said(err)))
    } else {
        StoreError::Broken(format!("{doing}: {}", said(err)))
    }
}

/// An error of a write sent: the server's refusal (the statement's
/// transaction rolled back: nothing applied), or a connection that failed
/// with it in flight (applied or not, unknown).
fn sent(err: &tokio_postgres::Error, doing: &str) -> StoreError {
    if refused(err) {
        StoreError::Refused(format!("{doing}: {}", said(err)))
    } else {
        StoreError::Lost(format!("{doing}: {}", said(err)))
    }
}

/// Whether the server refused the statement and the session goes on: an
/// error it answered, of a severity below `FATAL` (a `FATAL` or `PANIC`
/// ends the session: the backend was terminated, the server shut down or
/// crashed, and the answer is no proof of a rollback).
fn refused(err: &tokio_postgres::Error) -> bool {
    err.as_db_error()
        .is_some_and(|db| !matches!(db.severity(), "FATAL" | "PANIC"))
}

/// tokio-postgres's error with its cause (the error's own text is one word
/// for every server error).
fn said(err: &tokio_postgres::Error) -> String {
    match err.source() {
        Some(cause) => format!("{err}: {cause}"),
        None => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_with(result: Result<PostgresStore, StoreError>) -> String {
        match result {
            Err(StoreError::Refused(why)) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_postgres_url_parses_with_the_connect_timeout() {
        for url in [
            "postgres://ferry@127.0.0.1:5432/app",
            "postgresql://ferry:pw@localhost/app?application_name=shard",
            "postgres://localhost",
        ] {
            let store = PostgresStore::new(url, "accounts").unwrap();
            assert_eq!(store.config.get_connect_timeout(), Some(&CONNECT_TIMEOUT));
        }
        let store = PostgresStore::new("postgres://ferry@db.example:6543/app", "t").unwrap();
        assert_eq!(store.config.get_user(), Some("ferry"));
        assert_eq!(store.config.get_ports(), &[6543]);
        assert_eq!(store.config.get_dbname(), Some("app"));
    }

    #[test]
    fn other_addresses_are_refused_without_their_password() {
        for url in [
            "redis://:hunter2@localhost:6379",
            "mysql://root:hunter2@localhost/app",
            "host=localhost password=hunter2",
            "postgres://ferry:hunter2@localhost:notaport/app",
            "postgres://ferry@localhost/app?password=hunter2&nonsense=1",
            "",
        ] {
            let why = refused_with(PostgresStore::new(url, "accounts"));
            assert!(why.contains("not a PostgreSQL URL"), "{url}: {why}");
            assert!(!why.contains("hunter2"), "{url}: {why}");
        }
    }

    #[test]
    fn no_password_is_shown() {
        let cases = [
            (
                "postgres://ferry:hunter2@host:5432/app",
                "postgres://ferry:***@host:5432/app",
            ),
            ("postgres://ferry@host/app", "postgres://ferry@host/app"),
            (
                "postgres://ferry:p@ss:w@rd@host/app",
                "postgres://ferry:***@host/app",
            ),
            (
                "postgres://host/app?password=hunter2",
                "postgres://host/app?…",
            ),
            (
                "postgres://host/app?password=hun@ter2",
                "postgres://host:***@ter2",
            ),
            ("host=h password=hunter2", "the address given"),
        ];
        for (url, shown) in cases {
            assert_eq!(redact(url), shown, "{url}");
        }
        let store = PostgresStore::new("postgres://ferry:hunter2@host/app", "t").unwrap();
        let debug = format!("{store:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("ferry:***@host/app"), "{debug}");
    }

    #[test]
    fn table_names_are_letters_digits_and_underscores() {
        for table in [
            "accounts",
            "Accounts_2",
            "_t",
            "9lives",
            &"t".repeat(TABLE_NAME_MAX),
        ] {
            assert!(
                PostgresStore::new("postgres://h/d", table).is_ok(),
                "{table}"
            );
        }
        let bad = [
            ("", "empty"),
            ("a b", "' '"),
            ("t\"; DROP TABLE x; --", "'\"'"),
            ("schema.table", "'.'"),
            ("tâble", "'â'"),
            ("a-b", "'-'"),
        ];
        for (table, said) in bad {
            let why = refused_with(PostgresStore::new("postgres://h/d", table));
            assert!(why.contains(said), "{table:?}: {why}");
        }
        let long = "t".repeat(TABLE_NAME_MAX + 1);
        let why = refused_with(PostgresStore::new("postgres://h/d", &long));
        assert!(why.contains("at most 56"), "{why}");
    }

    #[test]
    fn keys_become_their_columns_values() {
        assert_eq!(5_i64.to_param(), Ok(5));
        assert_eq!((-5_i32).to_param(), Ok(-5_i64));
        assert_eq!((i64::MAX as u64).to_param(), Ok(i64::MAX));
        let Err(StoreError::Refused(why)) = (i64::MAX as u64 + 1).to_param() else {
            panic!("a u64 above i64::MAX is refused");
        };
        assert!(why.contains("9223372036854775808"), "{why}");
        assert_eq!(String::from("k").to_param(), Ok(String::from("k")));
        assert_eq!("k".to_param(), Ok(String::from("k")));
        assert_eq!(<i32 as PgKey>::SQL_TYPE, "bigint");
        assert_eq!(<&str as PgKey>::SQL_TYPE, "text");
    }

    #[test]
    fn columns_out_of_range_are_refused_before_sending() {
        let key = 1_u64;
        let write = Write {
            key: &key,
            expected: 0,
            version: u64::MAX,
            epoch: 0,
            state: b"",
        };
        assert!(matches!(
            WriteColumns::of(&[write]),
            Err(StoreError::Refused(_))
        ));
        let events = [b"e".to_vec()];
        let append = Append {
            tag: b"t",
            key: &key,
            expected: i64::MAX as u64,
            epoch: 0,
            events: &events,
        };
        assert!(matches!(
            AppendColumns::of(&[append]),
            Err(StoreError::Refused(_))
        ));
    }

    #[test]
    fn an_append_numbers_its_events_after_the_expected_length() {
        let (a, b) = (1_i64, 2_i64);
        let (one, two) = ([b"x".to_vec()], [b"y".to_vec(), b"z".to_vec()]);
        let appends = [
            Append {
                tag: b"t",
                key: &a,
                expected: 3,
                epoch: 1,
                events: &one,
            },
            Append {
                tag: b"t",
                key: &b,
                expected: 0,
                epoch: 1,
                events: &two,
            },
        ];
        let columns = AppendColumns::of(&appends).unwrap();
        assert_eq!(columns.keys, vec![1, 2]);
        assert_eq!(columns.versions, vec![4, 2]);
        assert_eq!(columns.event_keys, vec![1, 2, 2]);
        assert_eq!(columns.event_seqs, vec![4, 1, 2]);
        assert_eq!(columns.events, vec![&b"x"[..], b"y", b"z"]);
    }

    #[test]
    fn a_server_not_there_is_a_broken_connection_that_says_what_to_check() {
        let store = PostgresStore::new("postgres://ferry:hunter2@127.0.0.1:1/app", "t").unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let result = runtime.block_on(Store::<u64>::connect(&store));
        let Err(StoreError::Broken(why)) = result else {
            panic!("expected a broken connection, got {result:?}");
        };
        assert!(why.contains("is the server running"), "{why}");
        assert!(!why.contains("hunter2"), "{why}");
    }

    #[test]
    fn connecting_outside_tokio_says_so() {
        let store = PostgresStore::new("postgres://127.0.0.1:1/app", "t").unwrap();
        let result = futures::executor::block_on(Store::<u64>::connect(&store));
        let Err(StoreError::Broken(why)) = result else {
            panic!("expected a broken connection, got {result:?}");
        };
        assert!(why.contains("inside a tokio runtime"), "{why}");
    }
}
