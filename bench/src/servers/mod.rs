//! Private servers started on demand: PostgreSQL, Redis and a one-node
//! Kafka broker, from the programs installed on this machine, each in a
//! temporary directory of its own, listening on 127.0.0.1 only, at ports
//! that were free, never a shared system service. `ferry-load` starts one
//! for a bare `--store postgres` or `--store redis` (and for `--source
//! kafka` without a broker), and the tests against real stores start
//! theirs here too.
//!
//! Dropping a [`Private`] stops the server and removes its directory,
//! also when the program panics. A missing program is an error that says
//! what to install, never a silent skip.
//!
//! - [`postgres`](mod@postgres): `initdb` and `postgres`, run as `nobody`
//!   (through `setpriv`) when this process is root ([`runner`]);
//! - [`redis`](mod@redis): `redis-server`, keeping nothing on disk, or
//!   durable;
//! - [`kafka`](mod@kafka): a KRaft broker from the jars `.ci/kafka-jars`
//!   fetches, run with Java;
//! - [`process`]: a server as a child process, or detached and run by
//!   scripts; [`dir`]: the temporary directory, ports and logs.
//!
//! [`postgres_restartable`] and [`redis_durable`] can be restarted in
//! place (same port, same data) by a script written into their directory,
//! [`Private::restart_command`], which `ferry-load --restart-command`
//! runs: a hard stop (PostgreSQL's immediate shutdown, a `SIGKILL` to
//! Redis), then a start. Such a server runs detached (started and
//! restarted by its scripts), and is stopped through its pid file.

pub mod dir;
pub mod kafka;
pub mod postgres;
pub mod process;
pub mod redis;
pub mod runner;

use std::fmt;
use std::path::Path;

use dir::{read_log, TempDir};
use process::{Detached, Process};

pub use postgres::{postgres, postgres_restartable};
pub use redis::{redis, redis_durable};

/// What kind of server to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A PostgreSQL server.
    Postgres,
    /// A Redis server.
    Redis,
    /// A one-node Apache Kafka broker.
    Kafka,
}

impl Kind {
    /// Its name as a command line writes it: `postgres`, `redis`, `kafka`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Postgres => "postgres",
            Kind::Redis => "redis",
            Kind::Kafka => "kafka",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A running private server. Fields drop in order: the server stops, then
/// its directory goes.
pub struct Private {
    server: Server,
    dir: TempDir,
    /// Where to reach it: `postgres://…`, `redis://…`, or a Kafka
    /// bootstrap address `127.0.0.1:PORT`.
    pub url: String,
    /// A shell command that stops the server hard and starts it again in
    /// place, for `--restart-command` (restartable servers only).
    pub restart_command: Option<String>,
    /// The program and its version, `PostgreSQL 15.13`.
    what: String,
    /// `127.0.0.1:PORT`.
    address: String,
}

/// A server process: a child of this process, one its scripts start, or
/// one a watching script runs.
enum Server {
    Child(Process),
    Detached(Detached),
    Watched(kafka::Watch),
}

impl Private {
    /// Starts a plain private server of `kind`: PostgreSQL and Redis
    /// keeping nothing once stopped, or a Kafka broker. The error says
    /// what failed, and what to install when a program is missing.
    pub fn start_for(kind: Kind) -> Result<Private, String> {
        match kind {
            Kind::Postgres => postgres(),
            Kind::Redis => redis(),
            Kind::Kafka => kafka::broker(),
        }
    }

    /// [`Private::start_for`] for `ferry-load`, which says on stderr what
    /// it started where.
    pub fn start_said(kind: Kind) -> Result<Private, String> {
        let server = Private::start_for(kind)?;
        eprintln!(
            "ferry-load: started a private {} (stopped at the end)",
            server.describe()
        );
        Ok(server)
    }

    /// The server's directory (its data, scripts and log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's log so far, for a failure message.
    pub fn log(&self) -> String {
        match &self.server {
            Server::Child(process) => read_log(&process.log),
            Server::Detached(server) => read_log(&server.log),
            Server::Watched(watch) => read_log(&watch.log),
        }
    }

    /// What runs where: `PostgreSQL 15.13 on 127.0.0.1:PORT`.
    pub fn describe(&self) -> String {
        format!("{} on {}", self.what, self.address)
    }
}
