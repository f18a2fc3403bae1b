//! The read-then-conditional-write flow the real stores share: a keyed
//! batch reads its key's version and value, then writes the new ones on the
//! condition that the version is still the one read, and reads again after
//! a conflict; a trip goes in rounds until no key of it
//! conflicts (see [`Rounds`]). What a read and a conditional write are on
//! the server is each store's own ([`Conditional`]).

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Attempt, Rounds, StoreError, Write, WRITE_ATTEMPTS_MAX};

/// A connection that reads a key and writes it conditionally.
pub(crate) trait Conditional: Send {
    /// A key as the server names it.
    type Name: Send + Sync;

    /// The server's name of `key`.
    fn name(key: u64) -> Self::Name;

    /// The key's version and value.
    fn read(
        &mut self,
        name: &Self::Name,
    ) -> impl Future<Output = Result<(u64, u64), StoreError>> + Send;

    /// `version + count` and `value` written if the key is still at
    /// `version`; whether it was.
    fn write(
        &mut self,
        name: &Self::Name,
        version: u64,
        count: u64,
        value: u64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// One round of a trip at the writes `left` (places in `writes`):
    /// which were written, from which version, and which conflicted.
    fn try_many(
        &mut self,
        writes: &[Write],
        left: &[usize],
    ) -> impl Future<Output = Attempt> + Send;

    /// The store's count of conflicts.
    fn conflicts(&self) -> &AtomicU64;
}

/// A keyed batch of `count` inputs summing to `sum`: read, then the
/// conditional write, again after a conflict; the version it started from.
pub(crate) async fn apply<C: Conditional>(
    mut connection: C,
    key: u64,
    count: u64,
    sum: u64,
) -> Result<u64, StoreError> {
    let name = C::name(key);
    for _ in 0..WRITE_ATTEMPTS_MAX {
        let (version, value) = connection.read(&name).await?;
        if connection
            .write(&name, version, count, value.wrapping_add(sum))
            .await?
        {
            return Ok(version);
        }
        connection.conflicts().fetch_add(1, Ordering::Relaxed);
    }
    Err(StoreError::ConflictsExhausted {
        key,
        attempts: WRITE_ATTEMPTS_MAX,
    })
}

/// A trip: rounds of [`Conditional::try_many`] until no key conflicts,
/// paused as [`Rounds::pause`] says (on the caller's tokio runtime); per
/// write, the version it started from.
pub(crate) async fn apply_many<C: Conditional>(
    mut connection: C,
    writes: Vec<Write>,
) -> Vec<Result<u64, StoreError>> {
    let mut rounds = Rounds::new(&writes);
    while let Some(left) = rounds.next() {
        let pause = rounds.pause(RandomState::new().hash_one(left.len()));
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        let conflicts = rounds.settle(connection.try_many(&writes, &left).await);
        connection
            .conflicts()
            .fetch_add(conflicts, Ordering::Relaxed);
    }
    rounds.finish()
}
