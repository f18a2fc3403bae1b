//! What a store must do for entities: connect a shard, read many keys in
//! one request, and write (or append to) many keys in one more, each on
//! its own condition.
//!
//! Every key is a row `(key, version, epoch, state)`. The **version** counts
//! the inputs applied to the key (its last applied sequence); the **epoch**
//! is the owner epoch of the last write. A write of key `k` expecting
//! version `v` under epoch `e` lands if and only if
//!
//! - the row is absent and `v == 0`, or
//! - the row's version is `v` and its epoch is at most `e`;
//!
//! and then sets version, epoch and state (or appends the events, and
//! keeps the append's tag as the state) in the same step. Writes of one request are judged each on its own: one that
//! does not land leaves the others as they are.

use std::fmt;
use std::future::Future;

/// A store of entities: connects one shard at a time, on the shard's own
/// thread. Implemented by [`MemoryStore`](super::MemoryStore) and, with
/// their features, `PostgresStore` and `RedisStore`.
///
/// ```
/// use ferry::entity::{Connection, MemoryStore, Store};
///
/// # futures::executor::block_on(async {
/// let store = MemoryStore::<u64>::new();
/// let connection = store.connect().await.unwrap();
/// let rows = connection.read(&[&7]).await.unwrap();
/// assert_eq!((rows[0].version, rows[0].epoch, rows[0].state.clone()), (0, 0, None));
/// # });
/// ```
pub trait Store<K>: Send + Sync + 'static {
    /// One shard's connection.
    type Connection: Connection<K> + 'static;

    /// Connects a shard (creating the store's table or namespace if it is
    /// missing); called again after the connection breaks.
    fn connect(&self) -> impl Future<Output = Result<Self::Connection, StoreError>>;
}

/// One shard's connection to a store: two requests per trip at most.
///
/// ```
/// use ferry::entity::{Connection, MemoryStore, Store, Write};
///
/// # futures::executor::block_on(async {
/// let connection = MemoryStore::<&str>::new().connect().await.unwrap();
/// let first = Write { key: &"a", expected: 0, version: 2, epoch: 0, state: b"2" };
/// assert_eq!(connection.write(&[first]).await.unwrap(), vec![true]);
/// // The same condition again: the key has moved on, so it does not land.
/// assert_eq!(connection.write(&[first]).await.unwrap(), vec![false]);
/// assert_eq!(connection.read(&[&"a"]).await.unwrap()[0].version, 2);
/// # });
/// ```
pub trait Connection<K> {
    /// Each key's row, in the order given (version 0, epoch 0 and no state
    /// for a key never written): one request.
    fn read(&self, keys: &[&K]) -> impl Future<Output = Result<Vec<Row>, StoreError>>;

    /// Each write on its own condition (see the module docs): whether it
    /// landed, in the order given; one request.
    fn write(&self, writes: &[Write<'_, K>])
        -> impl Future<Output = Result<Vec<bool>, StoreError>>;

    /// Each key's events appended at sequences `expected + 1 ..`, on the
    /// same condition as a write: whether it landed, in the order given;
    /// one request.
    fn append(
        &self,
        appends: &[Append<'_, K>],
    ) -> impl Future<Output = Result<Vec<bool>, StoreError>>;
}

/// A key as the store holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    /// Inputs applied to the key (0 for a key never written).
    pub version: u64,
    /// The owner epoch of the key's last write.
    pub epoch: u64,
    /// The encoded state (`None` for a key never written, and for a log).
    pub state: Option<Vec<u8>>,
}

/// A key's new state, on the condition that it is still at `expected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write<'a, K> {
    /// The key.
    pub key: &'a K,
    /// The version the state was folded from.
    pub expected: u64,
    /// The version written: `expected` plus the inputs applied.
    pub version: u64,
    /// The writer's owner epoch.
    pub epoch: u64,
    /// The encoded new state.
    pub state: &'a [u8],
}

/// A key's events, appended on the condition that its log is still
/// `expected` long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Append<'a, K> {
    /// The key.
    pub key: &'a K,
    /// The log's length the events follow.
    pub expected: u64,
    /// The writer's owner epoch.
    pub epoch: u64,
    /// The encoded events, in order: sequences `expected + 1 ..=
    /// expected + events.len()`.
    pub events: &'a [Vec<u8>],
    /// A mark of this append, kept as the head's state: a lost append is
    /// told from another at the same length by it.
    pub tag: &'a [u8],
}

/// Why a store request did not succeed, and so what is known of it.
///
/// ```
/// use ferry::entity::StoreError;
///
/// let lost = StoreError::Lost("connection reset".into());
/// assert!(lost.breaks_connection() && lost.may_have_applied());
/// assert!(!StoreError::Refused("syntax".into()).breaks_connection());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The server refused the request: nothing of it was applied, and the
    /// connection goes on.
    Refused(String),
    /// The connection failed before the request was sent (or could not be
    /// made): nothing was applied; it is made again.
    Broken(String),
    /// The connection failed after the request was sent: it may or may not
    /// have been applied; it is made again.
    Lost(String),
}

impl StoreError {
    /// Whether the connection is dead and must be made again.
    pub fn breaks_connection(&self) -> bool {
        !matches!(self, StoreError::Refused(_))
    }

    /// Whether the request may have been applied though it failed.
    pub fn may_have_applied(&self) -> bool {
        matches!(self, StoreError::Lost(_))
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Refused(why) => write!(f, "the store refused the request: {why}"),
            StoreError::Broken(why) => {
                write!(
                    f,
                    "the connection failed before the request was sent: {why}"
                )
            }
            StoreError::Lost(why) => write!(
                f,
                "the connection failed after the request was sent (applied or not, unknown): {why}"
            ),
        }
    }
}

impl std::error::Error for StoreError {}
