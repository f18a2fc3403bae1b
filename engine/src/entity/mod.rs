//! Entities: the write path of a read-modify-write store, in the library.
//!
//! A service updates entities — an account, a cart, a stream — each by a
//! conditional read-modify-write. Here it writes only its part: a pure
//! **fold** (`&mut S, &I -> Result<O, R>`), a [`Store`] (a table and a
//! connection string: `PostgresStore` with feature `postgres`,
//! `RedisStore` with `redis`, or the [`MemoryStore`] of tests), and
//! calls [`Builder::start_entities`](crate::Builder::start_entities). Each
//! shard then:
//!
//! - batches each key's inputs, one batch per key in flight, in rank order,
//!   and carries many keys' batches in one **trip**;
//! - reads the keys it does not know (one request), folds each key's inputs
//!   into its state, and writes every key of the trip in one request, each
//!   **on its own condition**: the key's **version** (the count of inputs
//!   applied to it, its last applied sequence) is still the one folded
//!   from, and no newer owner **epoch** has written it;
//! - remembers what it wrote, so that the next trip of a key needs only
//!   the write: a key is written only by its shard;
//! - reads and retries alone a key somebody else wrote meanwhile;
//! - when a write's reply is lost, keeps the key busy and reads it back
//!   until it can tell whether the write landed (version moved by exactly
//!   its inputs) or not (version unchanged, so it is sent again): a lost
//!   reply becomes [`EntityError::Unknown`] only when the key cannot be
//!   read back within [`Options::resolve_within`], or somebody else moved
//!   it meanwhile.
//!
//! A second shape, [`Builder::start_log`](crate::Builder::start_log),
//! appends each key's inputs as events under the expected sequence
//! number, with the same fence.
//!
//! ```
//! use ferry::entity::{Entities, EntityError, MemoryStore};
//!
//! let store = MemoryStore::<u64>::new(); // PostgresStore::new(url, "accounts")? in a service
//! let accounts: Entities<u64, i64, i64, String> = Entities::builder()
//!     .shards(2)
//!     .pin(false)
//!     .start_entities(store, |balance: &mut i64, amount: &i64| {
//!         if *balance + amount < 0 {
//!             return Err(format!("{amount} would overdraw {balance}"));
//!         }
//!         *balance += amount;
//!         Ok(*balance)
//!     })
//!     .unwrap();
//! assert_eq!(accounts.submit_blocking(1, 30), Ok(30));
//! assert!(matches!(accounts.submit_blocking(1, -50), Err(EntityError::Refused(_))));
//! ```

mod codec;
mod counts;
mod entities;
mod epoch;
mod error;
mod in_memory;
mod memory;
mod options;
mod shape;
mod spares;
mod start;
mod store;
mod trip;

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;

pub use codec::{Codec, Json};
pub use counts::StoreStats;
pub use entities::{Entities, EntitySubmit};
pub use epoch::Epoch;
pub use error::{EntityError, Failure};
pub use in_memory::{Fault, MemoryStore, Request, Requests};
pub use options::{
    Options, DEFAULT_REMEMBER, DEFAULT_RESOLVE_WITHIN, DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION,
    DEFAULT_WRITE_ATTEMPTS,
};
pub use store::{Append, Connection, Row, Store, StoreError, Write};

#[cfg(feature = "postgres")]
pub use postgres::{PgConnection, PgKey, PostgresStore, POSTGRES_FILLFACTOR};
#[cfg(feature = "redis")]
pub use redis::{RedisConnection, RedisStore};
