//! What an entity engine's shards count of their store, over all shards.

use std::sync::atomic::{AtomicU64, Ordering};

/// What the shards of an entity engine did at their store since it
/// started ([`Entities::store_stats`](super::Entities::store_stats)).
///
/// ```
/// let stats = ferry::entity::StoreStats::default();
/// assert_eq!(stats.requests(), 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Read requests (each for many keys).
    pub reads: u64,
    /// Write or append requests (each for many keys).
    pub writes: u64,
    /// Keys' writes that did not land because somebody else had written
    /// the key (each read again and retried alone).
    pub conflicts: u64,
    /// Keys' writes whose reply was lost.
    pub lost: u64,
    /// Lost writes found landed when their key was read back.
    pub found_landed: u64,
    /// Lost writes found absent when their key was read back (then sent
    /// again).
    pub found_absent: u64,
    /// Batches answered `Unknown`.
    pub unknown: u64,
    /// Batches answered `Fenced`.
    pub fenced: u64,
}

impl StoreStats {
    /// Requests of every kind.
    pub fn requests(&self) -> u64 {
        self.reads + self.writes
    }
}

/// The shards' shared counters.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) reads: AtomicU64,
    pub(crate) writes: AtomicU64,
    pub(crate) conflicts: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) found_landed: AtomicU64,
    pub(crate) found_absent: AtomicU64,
    pub(crate) unknown: AtomicU64,
    pub(crate) fenced: AtomicU64,
}

impl Counts {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> StoreStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        StoreStats {
            reads: get(&self.reads),
            writes: get(&self.writes),
            conflicts: get(&self.conflicts),
            lost: get(&self.lost),
            found_landed: get(&self.found_landed),
            found_absent: get(&self.found_absent),
            unknown: get(&self.unknown),
            fenced: get(&self.fenced),
        }
    }
}
