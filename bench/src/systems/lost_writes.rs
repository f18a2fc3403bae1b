//! What a ferry shard does with a write whose outcome was lost: it keeps
//! the key's batch (so the key stays busy, its one writer) and resolves the
//! write through the shard's link once the store is back
//! ([`crate::store::resolve`]), for up to `--retry-unknown`; the batch's
//! callers then get the write's real outcome instead of an unknown one.
//! A write still lost when that time is up is answered unknown, and the
//! read-back at the end resolves it.
//!
//! With the fence off (`--no-fence`) the write is sent again as a fresh
//! read-modify-write, without looking: the control.

use std::time::{Duration, Instant};

use futures::future::join_all;

use super::ferry::{connection, Link};
use crate::store::{resolve, Fence, StoreError, Write, RECONNECT_FIRST};

/// How lost writes are retried.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retry {
    /// Whether the retry looks for the write first.
    pub fence: Fence,
    /// How long a lost write is retried before it is answered unknown
    /// (zero: never retried).
    pub within: Duration,
}

impl Retry {
    /// Whether `applied` is a lost write this policy retries: the version
    /// it was conditioned on, if so.
    fn lost(&self, applied: &Result<u64, StoreError>) -> Option<u64> {
        match applied {
            Err(StoreError::Unknown {
                from: Some(from), ..
            }) if !self.within.is_zero() => Some(*from),
            _ => None,
        }
    }

    /// `applied`, or if it is a lost write, what retrying it gave.
    pub(crate) async fn settle(
        self,
        link: &Link,
        write: Write,
        applied: Result<u64, StoreError>,
    ) -> Result<u64, StoreError> {
        match self.lost(&applied) {
            Some(from) => self.retry(link, write, from).await,
            None => applied,
        }
    }

    /// A trip's results, each lost write among them retried (together,
    /// each on its own).
    pub(crate) async fn settle_all(
        self,
        link: &Link,
        writes: &[Write],
        applied: Vec<Result<u64, StoreError>>,
    ) -> Vec<Result<u64, StoreError>> {
        if !applied.iter().any(|result| self.lost(result).is_some()) {
            return applied;
        }
        join_all(
            writes
                .iter()
                .zip(applied)
                .map(|(&write, applied)| self.settle(link, write, applied)),
        )
        .await
    }

    /// Tries the lost `write`, conditioned on version `from`, until it is
    /// resolved (its batch answered with the version it started from), its
    /// key is found moved, or the time is up: both answered unknown, never
    /// as a failure, since the write may have landed. Waits between
    /// tries as long as the link's first backoff, without holding the
    /// shard: other keys' batches run meanwhile.
    async fn retry(self, link: &Link, write: Write, mut from: u64) -> Result<u64, StoreError> {
        let give_up = Instant::now() + self.within;
        loop {
            tokio::time::sleep(RECONNECT_FIRST).await;
            let tried = match connection(link).await {
                Ok(connection) => {
                    let tried = self.try_once(&connection, write, from).await;
                    if tried.as_ref().is_err_and(StoreError::breaks_connection) {
                        link.broken(&connection);
                    }
                    tried
                }
                Err(away) => Err(away),
            };
            match tried {
                Ok(version) => return Ok(version),
                Err(moved @ StoreError::Moved { .. }) => return Err(moved),
                Err(StoreError::Unknown {
                    from: Some(again), ..
                }) => from = again,
                // Whatever else failed (no connection yet, a server still
                // loading its data after a restart) left the write where it
                // was: lost, still to be resolved. Never a definite
                // failure: the write may have landed.
                Err(_) => {}
            }
            if Instant::now() >= give_up {
                return Err(StoreError::Unknown {
                    why: format!(
                        "key {}: the write's outcome was lost and not resolved within {:?}",
                        write.key, self.within
                    ),
                    from: Some(from),
                });
            }
        }
    }

    /// One try: resolved with the fence, sent again blindly without.
    async fn try_once(
        &self,
        connection: &crate::store::Connection,
        write: Write,
        from: u64,
    ) -> Result<u64, StoreError> {
        match self.fence {
            Fence::On => {
                let resolved = connection.resolve(write, from).await?;
                resolve::count(resolved);
                Ok(from)
            }
            Fence::Off => {
                resolve::count_blind();
                connection.apply(write.key, write.count, write.sum).await
            }
        }
    }
}
