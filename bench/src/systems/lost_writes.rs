//! The control's retry of a write whose outcome was lost (`--no-fence`):
//! the write is sent again as a fresh read-modify-write, without looking
//! whether it had landed — what a retry without the fence does, and what
//! the read-back then catches applied twice.
//!
//! With the fence (the default) ferry's systems on a real store go through
//! `ferry::entity`, which reads the key back and tells a landed write from
//! an absent one; the sim loses no writes.

use std::time::{Duration, Instant};

use futures::future::join_all;

use super::ferry::{connection, Link};
use crate::store::{resolve, StoreError, Write, RECONNECT_FIRST};

/// How lost writes are sent again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retry {
    /// How long a lost write is retried before it is answered unknown
    /// (zero: never retried).
    pub within: Duration,
}

impl Retry {
    /// Whether `applied` is a lost write this policy retries.
    fn lost(&self, applied: &Result<u64, StoreError>) -> bool {
        matches!(applied, Err(StoreError::Unknown { .. })) && !self.within.is_zero()
    }

    /// `applied`, or if it is a lost write, what sending it again gave.
    pub(crate) async fn settle(
        self,
        link: &Link,
        write: Write,
        applied: Result<u64, StoreError>,
    ) -> Result<u64, StoreError> {
        match self.lost(&applied) {
            true => self.retry(link, write).await,
            false => applied,
        }
    }

    /// A trip's results, each lost write among them sent again (together,
    /// each on its own).
    pub(crate) async fn settle_all(
        self,
        link: &Link,
        writes: &[Write],
        applied: Vec<Result<u64, StoreError>>,
    ) -> Vec<Result<u64, StoreError>> {
        if !applied.iter().any(|result| self.lost(result)) {
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

    /// Sends the lost `write` again, blindly, until it is applied or the
    /// time is up (then answered unknown: it may have landed). Waits
    /// between tries as long as the link's first backoff, without holding
    /// the shard.
    async fn retry(self, link: &Link, write: Write) -> Result<u64, StoreError> {
        let give_up = Instant::now() + self.within;
        loop {
            tokio::time::sleep(RECONNECT_FIRST).await;
            if let Ok(connection) = connection(link).await {
                resolve::count_blind();
                let tried = connection.apply(write.key, write.count, write.sum).await;
                if tried.as_ref().is_err_and(StoreError::breaks_connection) {
                    link.broken(&connection);
                }
                if let Ok(version) = tried {
                    return Ok(version);
                }
            }
            if Instant::now() >= give_up {
                return Err(StoreError::Unknown {
                    why: format!(
                        "key {}: the write's outcome was lost and it was not applied again within {:?}",
                        write.key, self.within
                    ),
                    from: None,
                });
            }
        }
    }
}
