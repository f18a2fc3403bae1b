//! What the handover reads and writes of one key's row, whatever store
//! holds it (`rows_pg.rs`, `rows_redis.rs`): the values both stores and
//! their one front (`rows.rs`) name.

/// What a batch reads of its key's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowState {
    /// Bumped by every applied write.
    pub version: u64,
    /// The epoch of the owner that took the row last.
    pub owner_epoch: u64,
}

/// What a conditional write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The condition held: the seqs are appended, the version bumped.
    Applied,
    /// The version moved since the read (the epoch, if checked, is the
    /// writer's): read again and retry.
    Conflict,
    /// The row names another owner's epoch: final.
    Fenced,
}

/// A key's row as the coordinator reads it back after a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRow {
    /// The key.
    pub key: u64,
    /// Applied writes.
    pub version: u64,
    /// The epoch of the owner that took the row last.
    pub owner_epoch: u64,
    /// What the last applied write set: the highest seq of its batch.
    pub last_seq: u64,
    /// Every seq appended, in the order appended.
    pub applied: Vec<u64>,
}
