//! The store on a PostgreSQL server (`--store postgres://…`), through
//! tokio-postgres.
//!
//! Every system writes `ferry::entity`'s table [`ENTITY_TABLE`] through the
//! library's `PostgresStore` (which creates it, with its events table):
//! ferry's systems through `ferry::entity`'s engine, the others through its
//! connections (see [`conditional`](super::conditional)). The rows are
//! read back and removed by [`rows`](super::rows); this file holds the
//! store's own connection, for the faults' admin work.
//!
//! The server's CPU time is read from `/proc` when the server runs on this
//! machine: the postmaster's own and its reaped children's, plus every live
//! child's (each connection is a child process of the postmaster).

use std::error::Error as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry::entity::PgConnection;
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls};

use super::conditional::{Books, Linked};
use super::rows::Rows;
use super::{admin_runtime, lock, Server, CONNECT_TIMEOUT};

/// The table every system writes, through `ferry::entity`'s
/// `PostgresStore` (with `{ENTITY_TABLE}_events`, unused here); a key's
/// state is its value as JSON. Dropped at each reset and at the end.
pub const ENTITY_TABLE: &str = "ferry_load_entities";

/// A PostgreSQL server holding the keys.
pub struct PgStore {
    config: Config,
    /// Where batches' connections go instead, through `--fault`'s proxy.
    routed: Mutex<Option<Config>>,
    /// The address as shown (no password).
    shown: String,
    books: Books,
    /// The rows, as the store itself reads them back and removes them.
    rows: Rows,
    /// The postmaster's process id, when the server runs on this machine
    /// (another after a restart).
    postmaster: Mutex<Option<u32>>,
    admin: Mutex<Admin>,
}

/// The store's own connection, for the faults' admin work.
struct Admin {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("address", &self.shown)
            .field("keys", &self.books.keys)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to `url` (shown as `shown`) and drops a table left over.
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
        let rows = Rows::postgres(config.clone(), ENTITY_TABLE, shown)?;
        let store = PgStore {
            config,
            routed: Mutex::new(None),
            shown: shown.to_string(),
            books: Books::new(keys),
            rows,
            postmaster: Mutex::new(u32::try_from(backend).ok().and_then(postmaster_of)),
            admin: Mutex::new(Admin { runtime, client }),
        };
        store.books.reset(&store.rows)?;
        Ok(store)
    }

    /// A connection of the library's for batches.
    pub(super) async fn connect(&'static self) -> Result<Arc<Linked<PgConnection<u64>>>, String> {
        Linked::connect(self.entity_store()?, &self.books).await
    }

    /// The `ferry::entity` store of every system: on [`ENTITY_TABLE`],
    /// through `--fault`'s proxy once routed.
    pub(super) fn entity_store(&self) -> Result<ferry::entity::PostgresStore, String> {
        let config = lock(&self.routed)
            .clone()
            .unwrap_or_else(|| self.config.clone());
        ferry::entity::PostgresStore::from_config(config, ENTITY_TABLE)
            .map_err(|err| err.to_string())
    }
}

impl Server for PgStore {
    fn books(&self) -> &Books {
        &self.books
    }

    fn rows(&self) -> &Rows {
        &self.rows
    }

    /// The server's host and port, from the URL.
    fn server_address(&self) -> Result<(String, u16), String> {
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

    /// With the URL's user, password, database and options.
    fn route_through(&self, proxy: std::net::SocketAddr) -> Result<(), String> {
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
        Ok(())
    }

    /// `pg_terminate_backend` of every other client backend of the
    /// database.
    fn kill_connections(&self) -> Result<u64, String> {
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

    /// Once it answers a query (after a restart: once recovery is over).
    fn reconnect_admin(&self) -> Result<(), String> {
        let mut admin = lock(&self.admin);
        let client = admin.runtime.block_on(connect(&self.config, &self.shown))?;
        let backend: i32 = admin
            .runtime
            .block_on(client.query_one("SELECT pg_backend_pid()", &[]))
            .and_then(|row| row.try_get(0))
            .map_err(|err| format!("{}: {}", self.shown, said(&err)))?;
        admin.client = client;
        *lock(&self.postmaster) = u32::try_from(backend).ok().and_then(postmaster_of);
        Ok(())
    }

    /// The postmaster's CPU time with its children's, from `/proc`.
    fn server_cpu_time(&self) -> Option<Duration> {
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
