//! The read-then-conditional-write flow of the systems other than ferry's
//! on a real store, through `ferry::entity`'s connections: the rows and
//! the statements (or scripts) are the library's, the same that ferry's
//! own systems write through, so every system compared pays for the same
//! requests.
//!
//! Key `k` is the entity row `k`, its version the inputs applied and its
//! state the sum of their values (decimal text, as the JSON of ferry's
//! systems), owner epoch 0. A keyed batch reads its key's row, then writes
//! the new one on the condition that the version is still the one read,
//! and reads again after a conflict; a trip goes in rounds until no key of
//! it conflicts (see [`Rounds`]), one read of its keys and one write a
//! round. An unkeyed batch reads, then writes a row of its own past the
//! keys (`keys + n` for its store's `n`-th batch) expected absent, so it
//! never conflicts, however many run at once. A real store's [`Books`]
//! count across its connections, and sum its rows when it is read back.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ferry::entity::{Connection as Entity, Row, StoreError as EntityError, Write as EntityWrite};

use super::rows::Rows;
use super::{Attempt, Contents, RoundFailed, Rounds, StoreError, Write, WRITE_ATTEMPTS_MAX};

/// What a real store counts across its connections.
#[derive(Debug)]
pub(crate) struct Books {
    /// The keys `0..keys`; unkeyed batches' rows come after them.
    pub(crate) keys: u64,
    /// Conditional writes that found another version.
    pub(crate) conflicts: AtomicU64,
    /// Unkeyed batches' rows handed out since the last reset.
    pub(crate) stream_rows: AtomicU64,
    /// Inputs of the unkeyed batches since the last reset: the stream's
    /// length.
    pub(crate) stream_len: AtomicU64,
}

impl Books {
    pub(crate) fn new(keys: u64) -> Self {
        Self {
            keys,
            conflicts: AtomicU64::new(0),
            stream_rows: AtomicU64::new(0),
            stream_len: AtomicU64::new(0),
        }
    }

    /// Conditional writes that found another version, on every connection.
    pub(crate) fn conflicts(&self) -> u64 {
        self.conflicts.load(Ordering::Relaxed)
    }

    /// Every row written so far: the keys' and the unkeyed batches'.
    pub(crate) fn rows(&self) -> u64 {
        self.keys + self.stream_rows.load(Ordering::Acquire)
    }

    /// Every key back to version 0 and value 0: every row of `rows`
    /// removed, and no unkeyed rows.
    pub(crate) fn reset(&self, rows: &Rows) -> Result<(), String> {
        rows.remove()?;
        self.stream_rows.store(0, Ordering::Release);
        self.stream_len.store(0, Ordering::Release);
        Ok(())
    }

    /// Sums the version and the value of every row written.
    pub(crate) fn contents(&self, rows: &Rows) -> Result<Contents, String> {
        let mut contents = Contents::default();
        for (key, row) in rows.read(0..self.rows())? {
            let value = value_of(&row).map_err(|why| format!("key {key}: {why}"))?;
            contents.inputs += row.version;
            contents.sum = contents.sum.wrapping_add(value);
        }
        Ok(contents)
    }
}

/// One connection of the library's to a real store, with that store's
/// books.
#[derive(Debug)]
pub struct Linked<C> {
    pub(crate) connection: C,
    pub(crate) books: &'static Books,
}

impl<C: 'static> Linked<C> {
    /// A connection to `store` for batches, counted in `books`, its I/O on
    /// the calling thread's runtime.
    pub(crate) async fn connect<S>(store: S, books: &'static Books) -> Result<Arc<Self>, String>
    where
        S: ferry::entity::Store<u64, Connection = C>,
    {
        let connection = store.connect().await.map_err(|err| err.to_string())?;
        Ok(Arc::new(Linked { connection, books }))
    }
}

/// A row's state: its value as decimal text.
fn state_of(value: u64) -> Vec<u8> {
    value.to_string().into_bytes()
}

/// A row's value (0 for a key never written).
fn value_of(row: &Row) -> Result<u64, StoreError> {
    let Some(state) = &row.state else {
        return Ok(0);
    };
    std::str::from_utf8(state)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| {
            StoreError::Server(format!(
                "a row's state `{}` is not a value",
                String::from_utf8_lossy(state)
            ))
        })
}

/// The library's error as this tool's: a lost write's outcome is unknown,
/// from the version `from` it was conditioned on (`None` for a read).
fn error_of(error: EntityError, from: Option<u64>) -> StoreError {
    match error {
        EntityError::Refused(why) => StoreError::Server(why),
        EntityError::Broken(why) => StoreError::Disconnected(why),
        EntityError::Lost(why) => StoreError::Unknown { why, from },
    }
}

/// Each key's version and value, in the order given.
async fn read<C: Entity<u64>>(
    connection: &C,
    keys: &[&u64],
) -> Result<Vec<(u64, u64)>, StoreError> {
    let rows = connection
        .read(keys)
        .await
        .map_err(|err| error_of(err, None))?;
    rows.iter()
        .map(|row| Ok((row.version, value_of(row)?)))
        .collect()
}

impl<C: Entity<u64>> Linked<C> {
    /// `connection` to a store of keys `0..keys`, with books of its own
    /// that live as long as the process (the real stores share theirs
    /// among their connections).
    ///
    /// ```
    /// use ferry::entity::{MemoryStore, Store};
    /// use ferry_bench::store::Linked;
    ///
    /// # futures::executor::block_on(async {
    /// let store = MemoryStore::<u64>::new();
    /// let linked = Linked::new(store.connect().await.unwrap(), 10);
    /// assert_eq!(linked.conflicts(), 0);
    /// # });
    /// ```
    pub fn new(connection: C, keys: u64) -> Self {
        Self {
            connection,
            books: Box::leak(Box::new(Books::new(keys))),
        }
    }

    /// The conditional writes that found another version, on every
    /// connection of these books.
    pub fn conflicts(&self) -> u64 {
        self.books.conflicts()
    }

    /// A keyed batch of `count` inputs summing to `sum`: read, then the
    /// conditional write, again after a conflict; the version it started
    /// from.
    pub async fn apply(&self, key: u64, count: u64, sum: u64) -> Result<u64, StoreError> {
        for _ in 0..WRITE_ATTEMPTS_MAX {
            let [(version, value)] = read(&self.connection, &[&key]).await?[..] else {
                return Err(StoreError::Server("one key read, not one row".to_string()));
            };
            let moved = (version, version + count);
            if self.write_one(key, moved, value.wrapping_add(sum)).await? {
                return Ok(version);
            }
            self.books.conflicts.fetch_add(1, Ordering::Relaxed);
        }
        Err(StoreError::ConflictsExhausted {
            key,
            attempts: WRITE_ATTEMPTS_MAX,
        })
    }

    /// A trip: rounds of one read of its keys left and one write of each
    /// until no key conflicts, from the third round on after a short
    /// random pause (on the caller's tokio runtime); per write, the
    /// version it started from.
    pub async fn apply_many(&self, writes: Vec<Write>) -> Vec<Result<u64, StoreError>> {
        let mut rounds = Rounds::new(&writes);
        while let Some(left) = rounds.next() {
            let pause = rounds.pause(RandomState::new().hash_one(left.len()));
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            let conflicts = rounds.settle(self.try_many(&writes, &left).await);
            self.books.conflicts.fetch_add(conflicts, Ordering::Relaxed);
        }
        rounds.finish()
    }

    /// One round of a trip at the writes `left` (places in `writes`): one
    /// read of their keys, then one write of each on its own condition.
    async fn try_many(&self, writes: &[Write], left: &[usize]) -> Attempt {
        let keys: Vec<&u64> = left.iter().map(|&at| &writes[at].key).collect();
        let read = read(&self.connection, &keys).await?;
        let states: Vec<Vec<u8>> = left
            .iter()
            .zip(&read)
            .map(|(&at, &(_, value))| state_of(value.wrapping_add(writes[at].sum)))
            .collect();
        let entity_writes: Vec<EntityWrite<'_, u64>> = left
            .iter()
            .zip(&read)
            .zip(&states)
            .map(|((&at, &(version, _)), state)| EntityWrite {
                key: &writes[at].key,
                expected: version,
                version: version + writes[at].count,
                epoch: 0,
                state,
            })
            .collect();
        let landed = self.connection.write(&entity_writes).await.map_err(|err| {
            let sent_from = read.iter().map(|&(version, _)| version).collect();
            RoundFailed::sent(error_of(err, None), sent_from)
        })?;
        let (mut written, mut conflicted) = (Vec::new(), Vec::new());
        for ((&at, landed), (version, _)) in left.iter().zip(landed).zip(read) {
            if landed {
                written.push((at, version));
            } else {
                conflicted.push(at);
            }
        }
        Ok((written, conflicted))
    }

    /// One unkeyed batch of `count` inputs summing to `sum`: a read (for
    /// the round trip it stands for, as `SimStore::apply_unkeyed`'s), then
    /// a row of its own written. Answers the stream's length before the
    /// batch's inputs.
    pub async fn apply_unkeyed(&self, count: u64, sum: u64) -> Result<u64, StoreError> {
        let row = self.books.keys + self.books.stream_rows.fetch_add(1, Ordering::AcqRel);
        read(&self.connection, &[&row]).await?;
        if !self.write_one(row, (0, count), sum).await? {
            return Err(StoreError::Server(format!(
                "the unkeyed batch's row {row} was already written"
            )));
        }
        Ok(self.books.stream_len.fetch_add(count, Ordering::AcqRel))
    }

    /// Row `key` moved from version `moved.0` to `moved.1` with `value`, on
    /// that condition; whether it landed. A lost reply is an unknown
    /// outcome from `moved.0` (for an unkeyed row too: a row expected
    /// absent is conditioned on version 0).
    async fn write_one(&self, key: u64, moved: (u64, u64), value: u64) -> Result<bool, StoreError> {
        let state = state_of(value);
        let write = EntityWrite {
            key: &key,
            expected: moved.0,
            version: moved.1,
            epoch: 0,
            state: &state,
        };
        let landed = self
            .connection
            .write(&[write])
            .await
            .map_err(|err| error_of(err, Some(moved.0)))?;
        Ok(landed == [true])
    }
}
