//! The store on a PostgreSQL server (`--store postgres://…`), through
//! tokio-postgres.
//!
//! One table, `ferry_load_keys (key bigint primary key, version bigint,
//! value bigint)`: a row per key `0..keys`, and row `-1` for the unkeyed
//! stream (its version is the stream's length). Every statement is its own
//! transaction (autocommit), as a service's single-statement writes are: a
//! batch is a `SELECT` of its key's row, then an `UPDATE` that sets the new
//! version and value `WHERE key = $1 AND version = $read`; no row updated is
//! a conflict. A trip is the same in two statements for all its keys: a
//! `SELECT … WHERE key = ANY($1)`, then one `UPDATE … FROM unnest(…)` that
//! writes each row on its own condition and returns the keys it wrote (one
//! commit for the whole trip); a key not returned conflicted and is tried
//! again. Statements are prepared once per connection.
//!
//! The server's CPU time is read from `/proc` when the server runs on this
//! machine: the postmaster's own and its reaped children's, plus every live
//! child's (each connection is a child process of the postmaster).

use std::error::Error as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry::entity::POSTGRES_FILLFACTOR;
use tokio_postgres::config::Host;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Config, NoTls, Statement};

use super::conditional::Conditional;
use super::{
    admin_runtime, lock, Attempt, Contents, RoundFailed, StoreError, Write, CONNECT_TIMEOUT,
};

/// The table `ferry-load` creates, resets, reads back and drops.
pub const TABLE: &str = "ferry_load_keys";

/// The table of ferry's own systems, written through `ferry::entity`'s
/// `PostgresStore` (which creates it, with `{ENTITY_TABLE}_events`); a
/// key's state is its value as JSON. Dropped at each reset, read back
/// beside [`TABLE`].
pub const ENTITY_TABLE: &str = "ferry_load_entities";

/// The unkeyed stream's row.
const STREAM_KEY: i64 = -1;

const READ: &str = "SELECT version, value FROM ferry_load_keys WHERE key = $1";
const WRITE: &str =
    "UPDATE ferry_load_keys SET version = $3, value = $4 WHERE key = $1 AND version = $2";
const READ_MANY: &str = "SELECT key, version, value FROM ferry_load_keys WHERE key = ANY($1)";
/// Every key's row is locked in key order (the sorted `FOR UPDATE`) before
/// any is written: the join alone moves rows in the table's order, which
/// two requests on overlapping keys can see differently and deadlock on
/// (PostgreSQL breaks a deadlock only after a second, failing one of them).
/// The locking runs once, as a materialised aggregate the join needs
/// before its first row: as a subquery joined row by row it ran again for
/// every key of the request (200 keys: 59 ms instead of 2).
const WRITE_MANY: &str = "WITH locked AS MATERIALIZED (SELECT count(*) AS keys_locked FROM \
                            (SELECT key FROM ferry_load_keys WHERE key = ANY($1) \
                             ORDER BY key FOR UPDATE) AS l) \
                          UPDATE ferry_load_keys AS t SET version = u.next, value = u.value \
                          FROM locked, unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[]) \
                          AS u(key, expected, next, value) \
                          WHERE t.key = u.key AND t.version = u.expected AND locked.keys_locked >= 0 \
                          RETURNING t.key";
const APPEND: &str = "UPDATE ferry_load_keys SET version = version + $1, value = value + $2 \
                      WHERE key = -1 RETURNING version - $1";

/// A PostgreSQL server holding the keys.
pub struct PgStore {
    config: Config,
    /// Where batches' connections go instead, through `--fault`'s proxy.
    routed: Mutex<Option<Config>>,
    /// The address as shown (no password).
    shown: String,
    keys: u64,
    conflicts: AtomicU64,
    /// The postmaster's process id, when the server runs on this machine
    /// (another after a restart).
    postmaster: Mutex<Option<u32>>,
    admin: Mutex<Admin>,
}

/// The store's own connection, for set-up, reset, read-back and clean-up.
struct Admin {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("address", &self.shown)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to `url` (shown as `shown`) and creates the table afresh.
    pub(super) fn open(url: &str, shown: &str, keys: u64) -> Result<PgStore, String> {
        if i64::try_from(keys).is_err() {
            return Err(format!("{keys} keys do not fit PostgreSQL's bigint"));
        }
        let mut config: Config = url
            .parse()
            .map_err(|err| format!("`{shown}` is not a PostgreSQL URL: {}", said(&err)))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        let runtime = admin_runtime()?;
        let client = runtime.block_on(connect(&config, shown))?;
        let backend: i32 = runtime
            .block_on(client.query_one("SELECT pg_backend_pid()", &[]))
            .and_then(|row| row.try_get(0))
            .map_err(|err| format!("{shown}: {}", said(&err)))?;
        // Pages filled as the library fills its entity tables, so that the
        // systems compared meet the same storage (updates stay in their page).
        let create = format!(
            "DROP TABLE IF EXISTS {TABLE}; \
             CREATE TABLE {TABLE} (key bigint PRIMARY KEY, version bigint NOT NULL, value bigint NOT NULL) \
             WITH (fillfactor = {POSTGRES_FILLFACTOR})"
        );
        runtime
            .block_on(client.batch_execute(&create))
            .map_err(|err| format!("{shown}: could not create table {TABLE}: {}", said(&err)))?;
        let store = PgStore {
            config,
            routed: Mutex::new(None),
            shown: shown.to_string(),
            keys,
            conflicts: AtomicU64::new(0),
            postmaster: Mutex::new(u32::try_from(backend).ok().and_then(postmaster_of)),
            admin: Mutex::new(Admin { runtime, client }),
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
    pub(super) async fn connect(&'static self) -> Result<Arc<PgConnection>, String> {
        let routed = lock(&self.routed).clone();
        let client = connect(routed.as_ref().unwrap_or(&self.config), &self.shown).await?;
        let prepare = |sql: &'static str, types: &'static [Type]| {
            let client = &client;
            async move {
                client.prepare_typed(sql, types).await.map_err(|err| {
                    format!("{}: could not prepare `{sql}`: {}", self.shown, said(&err))
                })
            }
        };
        let read = prepare(READ, &[Type::INT8]).await?;
        let write = prepare(WRITE, &[Type::INT8, Type::INT8, Type::INT8, Type::INT8]).await?;
        let append = prepare(APPEND, &[Type::INT8, Type::INT8]).await?;
        let read_many = prepare(READ_MANY, &[Type::INT8_ARRAY]).await?;
        let arrays = &[Type::INT8_ARRAY; 4];
        let write_many = prepare(WRITE_MANY, arrays).await?;
        Ok(Arc::new(PgConnection {
            client,
            read,
            write,
            append,
            read_many,
            write_many,
            store: self,
        }))
    }

    /// Every row back to version 0 and value 0: the table emptied and
    /// filled again, so no run inherits another's dead row versions.
    pub(super) fn reset(&self) -> Result<(), String> {
        let fill = format!(
            "BEGIN; DROP TABLE IF EXISTS {ENTITY_TABLE}, {ENTITY_TABLE}_events; TRUNCATE {TABLE}; \
             INSERT INTO {TABLE} (key, version, value) SELECT k, 0, 0 FROM generate_series({STREAM_KEY}, {}) AS k; \
             COMMIT; ANALYZE {TABLE}",
            self.keys as i64 - 1
        );
        let admin = lock(&self.admin);
        admin
            .runtime
            .block_on(admin.client.batch_execute(&fill))
            .map_err(|err| {
                format!(
                    "{}: could not reset table {TABLE}: {}",
                    self.shown,
                    said(&err)
                )
            })
    }

    /// Sums every row's version and value; every row must still be there.
    pub(super) fn contents(&self) -> Result<Contents, String> {
        let sql = format!(
            "SELECT count(*), coalesce(sum(version), 0)::bigint, coalesce(sum(value), 0)::bigint FROM {TABLE}"
        );
        let admin = lock(&self.admin);
        let row = admin
            .runtime
            .block_on(admin.client.query_one(&sql, &[]))
            .map_err(|err| {
                format!(
                    "{}: could not read table {TABLE} back: {}",
                    self.shown,
                    said(&err)
                )
            })?;
        let column = |index: usize| -> Result<i64, String> {
            row.try_get(index)
                .map_err(|err| format!("{}: reading {TABLE} back: {}", self.shown, said(&err)))
        };
        let rows = column(0)?;
        if rows != self.keys as i64 + 1 {
            return Err(format!(
                "{}: table {TABLE} has {rows} rows, not the {} it was filled with",
                self.shown,
                self.keys + 1
            ));
        }
        let entities = self.entity_contents(&admin)?;
        Ok(Contents {
            inputs: column(1)? as u64 + entities.inputs,
            sum: (column(2)? as u64).wrapping_add(entities.sum),
        })
    }

    /// What ferry's systems wrote to [`ENTITY_TABLE`] (nothing if it is
    /// not there): versions added, and values (JSON numbers) added,
    /// wrapping as the other table's sums do.
    fn entity_contents(&self, admin: &Admin) -> Result<Contents, String> {
        let sql = format!(
            "SELECT coalesce(sum(version), 0)::text, \
                    coalesce(sum(convert_from(state, 'UTF8')::numeric) % 18446744073709551616, 0)::text \
             FROM {ENTITY_TABLE}"
        );
        let exists = admin
            .runtime
            .block_on(admin.client.query_one(
                &format!("SELECT to_regclass('{ENTITY_TABLE}') IS NOT NULL"),
                &[],
            ))
            .and_then(|row| row.try_get::<_, bool>(0))
            .map_err(|err| format!("{}: {}", self.shown, said(&err)))?;
        if !exists {
            return Ok(Contents::default());
        }
        let row = admin
            .runtime
            .block_on(admin.client.query_one(&sql, &[]))
            .map_err(|err| {
                format!(
                    "{}: could not read table {ENTITY_TABLE} back: {}",
                    self.shown,
                    said(&err)
                )
            })?;
        let number = |index: usize| -> Result<u64, String> {
            let text: String = row.try_get(index).map_err(|err| said(&err))?;
            text.parse()
                .map_err(|err| format!("{ENTITY_TABLE}: `{text}` is not a count: {err}"))
        };
        Ok(Contents {
            inputs: number(0)?,
            sum: number(1)?,
        })
    }

    /// The `ferry::entity` store of ferry's systems: on [`ENTITY_TABLE`],
    /// through `--fault`'s proxy once routed.
    pub(super) fn entity_store(&self) -> Result<ferry::entity::PostgresStore, String> {
        let config = lock(&self.routed)
            .clone()
            .unwrap_or_else(|| self.config.clone());
        ferry::entity::PostgresStore::from_config(config, ENTITY_TABLE)
            .map_err(|err| err.to_string())
    }

    /// Drops the table.
    pub(super) fn remove(&self) -> Result<(), String> {
        let admin = lock(&self.admin);
        admin
            .runtime
            .block_on(admin.client.batch_execute(&format!(
                "DROP TABLE IF EXISTS {TABLE}, {ENTITY_TABLE}, {ENTITY_TABLE}_events"
            )))
            .map_err(|err| {
                format!(
                    "{}: could not drop table {TABLE}: {}",
                    self.shown,
                    said(&err)
                )
            })
    }

    /// The server's host and port, from the URL.
    pub(super) fn server_address(&self) -> Result<(String, u16), String> {
        let host = match (
            self.config.get_hostaddrs().first(),
            self.config.get_hosts().first(),
        ) {
            (Some(address), _) => address.to_string(),
            (None, Some(Host::Tcp(host))) => host.clone(),
            (None, Some(Host::Unix(path))) => {
                return Err(format!(
                "{}: the server is reached through a Unix socket ({}); --fault needs a TCP address",
                self.shown,
                path.display()
            ))
            }
            (None, None) => "localhost".to_string(),
        };
        Ok((
            host,
            self.config.get_ports().first().copied().unwrap_or(5432),
        ))
    }

    /// Batches' connections made from now on go to `proxy` instead, with
    /// the URL's user, password, database and options.
    pub(super) fn route_through(&self, proxy: std::net::SocketAddr) {
        let mut routed = Config::new();
        routed
            .host(proxy.ip().to_string())
            .port(proxy.port())
            .connect_timeout(CONNECT_TIMEOUT);
        if let Some(user) = self.config.get_user() {
            routed.user(user);
        }
        if let Some(password) = self.config.get_password() {
            routed.password(password);
        }
        if let Some(dbname) = self.config.get_dbname() {
            routed.dbname(dbname);
        }
        if let Some(options) = self.config.get_options() {
            routed.options(options);
        }
        if let Some(name) = self.config.get_application_name() {
            routed.application_name(name);
        }
        *lock(&self.routed) = Some(routed);
    }

    /// `pg_terminate_backend` of every other client backend of the
    /// database; answers how many were ended.
    pub(super) fn kill_connections(&self) -> Result<u64, String> {
        const KILL: &str = "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) \
                            FROM pg_stat_activity \
                            WHERE datname = current_database() AND pid <> pg_backend_pid() \
                            AND backend_type = 'client backend'";
        let admin = lock(&self.admin);
        let row = admin
            .runtime
            .block_on(admin.client.query_one(KILL, &[]))
            .map_err(|err| {
                format!(
                    "{}: could not end the connections: {}",
                    self.shown,
                    said(&err)
                )
            })?;
        let ended: i64 = row.try_get(0).map_err(|err| said(&err))?;
        Ok(ended as u64)
    }

    /// A new connection of the store's own, in place of the old one once
    /// it reads the table (after a restart: once recovery is over).
    pub(super) fn reconnect_admin(&self) -> Result<(), String> {
        let mut admin = lock(&self.admin);
        let client = admin.runtime.block_on(connect(&self.config, &self.shown))?;
        let backend: i32 = admin
            .runtime
            .block_on(async {
                client
                    .query_one(
                        &format!("SELECT version FROM {TABLE} WHERE key = {STREAM_KEY}"),
                        &[],
                    )
                    .await?;
                client
                    .query_one("SELECT pg_backend_pid()", &[])
                    .await?
                    .try_get(0)
            })
            .map_err(|err| format!("{}: {}", self.shown, said(&err)))?;
        admin.client = client;
        *lock(&self.postmaster) = u32::try_from(backend).ok().and_then(postmaster_of);
        Ok(())
    }

    /// The postmaster's CPU time with its children's, from `/proc`.
    pub(super) fn server_cpu_time(&self) -> Option<Duration> {
        let postmaster = (*lock(&self.postmaster))?;
        let own = ProcStat::read(postmaster)?;
        let mut ticks = own.utime + own.stime + own.cutime + own.cstime;
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(child) = ProcStat::read(pid).filter(|stat| stat.ppid == postmaster) {
                ticks += child.utime + child.stime;
            }
        }
        Some(ticks_to_duration(ticks))
    }
}

/// One PostgreSQL connection with the batch statements prepared on it.
pub struct PgConnection {
    client: Client,
    read: Statement,
    write: Statement,
    append: Statement,
    read_many: Statement,
    write_many: Statement,
    store: &'static PgStore,
}

impl Conditional for Arc<PgConnection> {
    /// The `key` column's value.
    type Name = u64;

    fn name(key: u64) -> u64 {
        key
    }

    /// A key's version and value (the `SELECT`).
    async fn read(&mut self, &key: &u64) -> Result<(u64, u64), StoreError> {
        let row = self
            .client
            .query_one(&self.read, &[&(key as i64)])
            .await
            .map_err(server_error)?;
        let version: i64 = row.try_get(0).map_err(server_error)?;
        let value: i64 = row.try_get(1).map_err(server_error)?;
        Ok((version as u64, value as u64))
    }

    /// The conditional `UPDATE`: `version + count` and `value` written if
    /// the key is still at `version`; whether it was.
    async fn write(
        &mut self,
        &key: &u64,
        version: u64,
        count: u64,
        value: u64,
    ) -> Result<bool, StoreError> {
        let written = self
            .client
            .execute(
                &self.write,
                &[
                    &(key as i64),
                    &(version as i64),
                    &((version + count) as i64),
                    &(value as i64),
                ],
            )
            .await
            .map_err(|err| write_error(err).sent_from(version))?;
        Ok(written == 1)
    }

    /// One `SELECT` of every key's row, then one `UPDATE` writing each on
    /// its own condition.
    async fn try_many(&mut self, writes: &[Write], left: &[usize]) -> Attempt {
        let keys: Vec<i64> = left.iter().map(|&at| writes[at].key as i64).collect();
        let rows = self
            .client
            .query(&self.read_many, &[&keys])
            .await
            .map_err(server_error)?;
        let mut read = std::collections::HashMap::with_capacity(rows.len());
        for row in rows {
            let key: i64 = row.try_get(0).map_err(server_error)?;
            let version: i64 = row.try_get(1).map_err(server_error)?;
            let value: i64 = row.try_get(2).map_err(server_error)?;
            read.insert(key, (version, value));
        }
        let (mut expected, mut next, mut value) = (Vec::new(), Vec::new(), Vec::new());
        for &at in left {
            let Write { key, count, sum } = writes[at];
            let Some(&(version, held)) = read.get(&(key as i64)) else {
                return Err(StoreError::Server(format!("key {key} has no row")).into());
            };
            expected.push(version);
            next.push(version + count as i64);
            value.push(held.wrapping_add(sum as i64));
        }
        let written_rows = self
            .client
            .query(&self.write_many, &[&keys, &expected, &next, &value])
            .await
            .map_err(|err| {
                let sent_from = expected.iter().map(|&version| version as u64).collect();
                RoundFailed::sent(write_error(err), sent_from)
            })?;
        let mut written_keys = std::collections::HashSet::with_capacity(written_rows.len());
        for row in written_rows {
            written_keys.insert(row.try_get::<_, i64>(0).map_err(server_error)?);
        }
        let mut written = Vec::with_capacity(written_keys.len());
        let mut conflicted = Vec::new();
        for (&at, version) in left.iter().zip(&expected) {
            if written_keys.contains(&(writes[at].key as i64)) {
                written.push((at, *version as u64));
            } else {
                conflicted.push(at);
            }
        }
        Ok((written, conflicted))
    }

    fn conflicts(&self) -> &AtomicU64 {
        &self.store.conflicts
    }
}

impl PgConnection {
    /// An unkeyed batch: a `SELECT` of the stream's row, then an `UPDATE`
    /// that adds to it whatever it holds.
    pub(super) async fn apply_unkeyed(
        self: Arc<Self>,
        count: u64,
        sum: u64,
    ) -> Result<u64, StoreError> {
        // Read for the round trip it stands for (see `SimStore::apply_unkeyed`).
        self.client
            .query_one(&self.read, &[&STREAM_KEY])
            .await
            .map_err(server_error)?;
        let row = self
            .client
            .query_one(&self.append, &[&(count as i64), &(sum as i64)])
            .await
            .map_err(write_error)?;
        let length: i64 = row.try_get(0).map_err(server_error)?;
        Ok(length as u64)
    }
}

/// A client connected to `config` (shown as `shown`), its connection a
/// task on the calling thread's runtime.
pub(crate) async fn connect(config: &Config, shown: &str) -> Result<Client, String> {
    let (client, connection) = config.connect(NoTls).await.map_err(|err| {
        format!(
            "could not connect to {shown}: {} (is the server running and the URL's user, database and port right?)",
            said(&err)
        )
    })?;
    let shown = shown.to_string();
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            eprintln!(
                "ferry-load: the connection to {shown} broke: {}",
                said(&err)
            );
        }
    });
    Ok(client)
}

/// An error before the write was sent: nothing was applied. The server's
/// refusal of a statement, or a connection that failed (to be made again).
fn server_error(err: tokio_postgres::Error) -> StoreError {
    StoreError::unsent(refused(&err), said(&err))
}

/// An error of the write itself: the server's refusal of the statement
/// (nothing applied: each statement is its own transaction), or a
/// connection that failed once the write was sent (applied or not: the
/// outcome is unknown).
fn write_error(err: tokio_postgres::Error) -> StoreError {
    StoreError::sent(refused(&err), said(&err))
}

/// Whether the server refused the statement and the session goes on.
fn refused(err: &tokio_postgres::Error) -> bool {
    err.as_db_error().is_some() && !ends_connection(err)
}

/// Whether the server's error ends the session (severity `FATAL`: the
/// backend terminated by `pg_terminate_backend`, a shutdown, a crash): the
/// connection is gone as if it had broken, and a write it answers is
/// counted unknown rather than refused (the server cannot be trusted to
/// have said so only before the commit).
fn ends_connection(err: &tokio_postgres::Error) -> bool {
    err.as_db_error()
        .is_some_and(|db| matches!(db.severity(), "FATAL" | "PANIC"))
}

/// tokio-postgres's error with what caused it (its own message is one
/// word for every server error).
pub(crate) fn said(err: &tokio_postgres::Error) -> String {
    match err.source() {
        Some(cause) => format!("{err}: {cause}"),
        None => err.to_string(),
    }
}

/// The figures of `/proc/PID/stat` used here, CPU times in clock ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ProcStat {
    comm_is_postgres: bool,
    ppid: u32,
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
}

impl ProcStat {
    fn read(pid: u32) -> Option<ProcStat> {
        ProcStat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// `PID (COMM) STATE PPID …`: the name may hold spaces and
    /// parentheses, so the fields are counted from its last `)`.
    fn parse(text: &str) -> Option<ProcStat> {
        let (head, tail) = text.rsplit_once(')')?;
        let comm = head.split_once('(')?.1;
        let fields: Vec<&str> = tail.split_whitespace().collect();
        let field = |index: usize| fields.get(index)?.parse::<u64>().ok();
        Some(ProcStat {
            comm_is_postgres: comm == "postgres" || comm == "postmaster",
            ppid: u32::try_from(field(1)?).ok()?,
            utime: field(11)?,
            stime: field(12)?,
            cutime: field(13)?,
            cstime: field(14)?,
        })
    }
}

/// The postmaster of the backend `backend`, if both are PostgreSQL
/// processes of this machine (a server elsewhere has its own process ids).
fn postmaster_of(backend: u32) -> Option<u32> {
    let stat = ProcStat::read(backend).filter(|stat| stat.comm_is_postgres)?;
    ProcStat::read(stat.ppid)
        .filter(|parent| parent.comm_is_postgres)
        .map(|_| stat.ppid)
}

fn ticks_to_duration(ticks: u64) -> Duration {
    // SAFETY: `sysconf` reads a constant of the system; no memory is passed.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let per_second = u64::try_from(per_second)
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or(100);
    Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / per_second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_fields_are_counted_from_the_name_s_end() {
        let line = "4242 (postgres) S 4200 4200 4200 0 -1 4194560 900 0 0 0 \
                    31 7 5 2 20 0 1 0 100 200000000 1000 18446744073709551615";
        assert_eq!(
            ProcStat::parse(line),
            Some(ProcStat {
                comm_is_postgres: true,
                ppid: 4200,
                utime: 31,
                stime: 7,
                cutime: 5,
                cstime: 2,
            })
        );
        let odd = "7 (a) b) R 1 7 7 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0";
        let parsed = ProcStat::parse(odd).unwrap();
        assert!(!parsed.comm_is_postgres);
        assert_eq!((parsed.ppid, parsed.utime, parsed.cstime), (1, 1, 4));
        assert_eq!(ProcStat::parse("garbage"), None);
    }
}
