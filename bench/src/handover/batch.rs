//! An owner's batch function: one read of the key's row and one
//! conditional write appending the batch's seqs, fenced by the epoch the
//! owner was assigned the key with (the recipe of `docs/scale-out.md`).
//!
//! - Refused on the version: a conflict, read again and retry (at most
//!   [`WRITE_ATTEMPTS_MAX`] times).
//! - Refused on the epoch, or the read finds another owner's epoch: the
//!   batch fails [`HandoverError::Fenced`], final. The shard remembers it
//!   and fails that key's later batches of that epoch without a round trip:
//!   this owner no longer serves the key.
//! - With the fence off (the control) the epoch is never looked at: a
//!   stale owner retries its conflicts and writes on top of the new owner.
//!
//! Invariant: with the fence on, a write lands only while the row names the
//! writer's epoch, so once a new owner has taken the row no older owner's
//! write lands again (`StoreG1` of `formal/Handover.tla`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::store::WRITE_ATTEMPTS_MAX;

use super::row::Written;
use super::rows::RowConnection;
use super::Fence;

/// An input of the handover: the next seq of a key, and the epoch its
/// owner was assigned the key with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Input {
    /// The key's sequence number, from 1; also the input's rank.
    pub seq: u64,
    /// The owner's epoch for the key when it submitted the input.
    pub epoch: u64,
}

/// Where a batch found that its owner had lost the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FencedAt {
    /// The conditional write was refused on the epoch.
    Write,
    /// The read found another owner's epoch, so no write was tried.
    Read,
    /// An earlier batch of the key was fenced on this shard: no round trip.
    Known,
}

/// Why a handover batch failed; each caller of the batch gets a clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandoverError {
    /// The row names a newer owner: nothing applied, final.
    Fenced {
        /// The key.
        key: u64,
        /// This owner's epoch for it.
        epoch: u64,
        /// Where it was found.
        at: FencedAt,
    },
    /// The write conflicted [`WRITE_ATTEMPTS_MAX`] times in a row.
    ConflictsExhausted {
        /// The key.
        key: u64,
    },
    /// The store's server failed the request, or the connection broke.
    Store(String),
}

impl fmt::Display for HandoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandoverError::Fenced { key, epoch, at } => write!(
                f,
                "key {key} is fenced ({at:?}): this owner's epoch {epoch} is no longer the row's; another owner serves the key"
            ),
            HandoverError::ConflictsExhausted { key } => write!(
                f,
                "key {key}: the write conflicted {WRITE_ATTEMPTS_MAX} times in a row"
            ),
            HandoverError::Store(said) => write!(f, "the store: {said}"),
        }
    }
}

impl std::error::Error for HandoverError {}

/// An owner's batch counts, over all its shards.
#[derive(Debug, Default)]
pub struct BatchCounters {
    applied: AtomicU64,
    conflicts: AtomicU64,
    fenced_at_write: AtomicU64,
    fenced_at_read: AtomicU64,
    fenced_known: AtomicU64,
}

/// [`BatchCounters`] read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchCounts {
    /// Batches whose write landed.
    pub applied: u64,
    /// Writes refused on the version.
    pub conflicts: u64,
    /// Batches whose write was refused on the epoch.
    pub fenced_at_write: u64,
    /// Batches whose read found another owner's epoch.
    pub fenced_at_read: u64,
    /// Batches failed at once, the key known to be fenced.
    pub fenced_known: u64,
}

impl BatchCounts {
    /// Fenced batches, wherever found.
    pub fn fenced(&self) -> u64 {
        self.fenced_at_write + self.fenced_at_read + self.fenced_known
    }

    /// What was counted between `earlier` and `self`.
    pub fn since(&self, earlier: &BatchCounts) -> BatchCounts {
        BatchCounts {
            applied: self.applied - earlier.applied,
            conflicts: self.conflicts - earlier.conflicts,
            fenced_at_write: self.fenced_at_write - earlier.fenced_at_write,
            fenced_at_read: self.fenced_at_read - earlier.fenced_at_read,
            fenced_known: self.fenced_known - earlier.fenced_known,
        }
    }

    /// Both added.
    pub fn plus(&self, other: &BatchCounts) -> BatchCounts {
        BatchCounts {
            applied: self.applied + other.applied,
            conflicts: self.conflicts + other.conflicts,
            fenced_at_write: self.fenced_at_write + other.fenced_at_write,
            fenced_at_read: self.fenced_at_read + other.fenced_at_read,
            fenced_known: self.fenced_known + other.fenced_known,
        }
    }
}

impl BatchCounters {
    /// The counts now.
    pub fn read(&self) -> BatchCounts {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        BatchCounts {
            applied: load(&self.applied),
            conflicts: load(&self.conflicts),
            fenced_at_write: load(&self.fenced_at_write),
            fenced_at_read: load(&self.fenced_at_read),
            fenced_known: load(&self.fenced_known),
        }
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// One shard's batch function state: its connection, and the keys it
/// learnt it lost. Lives on the shard's thread.
pub struct ShardRows {
    connection: RowConnection,
    fence: Fence,
    /// Per key, the highest epoch of this owner found fenced: bounded by the
    /// keys this owner ever held.
    fenced: RefCell<HashMap<u64, u64>>,
    counters: Arc<BatchCounters>,
}

impl ShardRows {
    /// The state of one shard, writing through `connection`.
    pub fn new(connection: RowConnection, fence: Fence, counters: Arc<BatchCounters>) -> Self {
        Self {
            connection,
            fence,
            fenced: RefCell::new(HashMap::new()),
            counters,
        }
    }

    /// The batch function: applies `inputs` of `key`, in rank (seq) order,
    /// and answers each input's seq.
    pub async fn apply(
        self: Rc<Self>,
        key: u64,
        inputs: Vec<Input>,
    ) -> Result<Vec<u64>, HandoverError> {
        let epoch = inputs[0].epoch;
        // A key leaves an owner's hands only after its lane drained, so
        // one batch carries one tenure's inputs.
        assert!(
            inputs.iter().all(|input| input.epoch == epoch),
            "a batch mixes epochs"
        );
        let seqs: Vec<u64> = inputs.iter().map(|input| input.seq).collect();
        debug_assert!(
            seqs.windows(2).all(|pair| pair[0] < pair[1]),
            "G2: rank order"
        );
        if self.fence == Fence::On && self.is_known_fenced(key, epoch) {
            return Err(self.fenced(key, epoch, FencedAt::Known));
        }
        for _ in 0..WRITE_ATTEMPTS_MAX {
            let row = self
                .connection
                .read(key)
                .await
                .map_err(HandoverError::Store)?;
            if self.fence == Fence::On && row.owner_epoch != epoch {
                return Err(self.fenced(key, epoch, FencedAt::Read));
            }
            let written = self.connection.write(key, row.version, epoch, &seqs).await;
            match written.map_err(HandoverError::Store)? {
                Written::Applied => {
                    BatchCounters::bump(&self.counters.applied);
                    return Ok(seqs);
                }
                Written::Fenced => return Err(self.fenced(key, epoch, FencedAt::Write)),
                Written::Conflict => BatchCounters::bump(&self.counters.conflicts),
            }
        }
        Err(HandoverError::ConflictsExhausted { key })
    }

    fn is_known_fenced(&self, key: u64, epoch: u64) -> bool {
        self.fenced
            .borrow()
            .get(&key)
            .is_some_and(|&fenced| epoch <= fenced)
    }

    /// Counts the fence, remembers it, and makes the batch's error.
    fn fenced(&self, key: u64, epoch: u64, at: FencedAt) -> HandoverError {
        let counter = match at {
            FencedAt::Write => &self.counters.fenced_at_write,
            FencedAt::Read => &self.counters.fenced_at_read,
            FencedAt::Known => &self.counters.fenced_known,
        };
        BatchCounters::bump(counter);
        let mut fenced = self.fenced.borrow_mut();
        let highest = fenced.entry(key).or_insert(epoch);
        *highest = (*highest).max(epoch);
        HandoverError::Fenced { key, epoch, at }
    }
}
