//! The private PostgreSQL and Redis servers of these tests, from
//! [`ferry_bench::servers`]: a server that cannot start fails the test
//! with what went wrong (and what to install), never a skip.

use ferry_bench::servers;

pub use ferry_bench::servers::Private;

/// A PostgreSQL server of its own ([`servers::postgres`]).
pub fn postgres() -> Private {
    servers::postgres().unwrap_or_else(|problem| panic!("{problem}"))
}

/// A PostgreSQL server restartable in place
/// ([`servers::postgres_restartable`]).
pub fn postgres_restartable() -> Private {
    servers::postgres_restartable().unwrap_or_else(|problem| panic!("{problem}"))
}

/// A Redis server of its own, keeping nothing on disk ([`servers::redis`]).
pub fn redis() -> Private {
    servers::redis().unwrap_or_else(|problem| panic!("{problem}"))
}

/// A Redis server that keeps its data across a restart in place
/// ([`servers::redis_durable`]).
pub fn redis_durable() -> Private {
    servers::redis_durable().unwrap_or_else(|problem| panic!("{problem}"))
}
