//! Resolving a write whose outcome was lost: the fenced retry.
//!
//! A batch's write that was sent when its connection broke may or may not
//! have been applied ([`StoreError::Unknown`]). Sending it again blindly,
//! as a fresh read-modify-write, applies it twice if it had landed. The
//! fence tells the two apart by the key's last applied sequence: a key's
//! version counts the inputs applied to it, each input taking the next
//! one, so a write of `count` inputs conditioned on version `from` moves
//! the key to `from + count`, and reading the key again says what happened:
//!
//! | version read | meaning | what resolving does |
//! | --- | --- | --- |
//! | `from + count` | the write landed | nothing more: the batch succeeded ([`Resolved::Landed`]) |
//! | `from` | it did not | sends it again, on the same condition ([`Resolved::Sent`]) |
//! | anything else | another writer moved the key | nothing: the outcome stays unknown ([`StoreError::Moved`]) |
//!
//! Invariant: the first two rows are sound only while the batch is the
//! key's one writer, which is what Ferry keeps for a key within one
//! instance (one batch in flight per key, and the key kept busy while its
//! batch resolves), and the owner epoch keeps across instances (the
//! handover's rows). A system that lets two batches of a key race has no
//! such knowledge, and leaves an unknown outcome unknown.
//!
//! With [`Fence::Off`] (`--no-fence`), the control, a lost write is sent
//! again as a fresh read-modify-write: what a retry without the fence does,
//! and what the read-back then catches applied twice.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::StoreError;

/// Whether writes are fenced: a lost write resolved by the key's last
/// applied sequence before it is sent again, and (in a handover) a write
/// conditioned on the owner epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fence {
    /// The design: a lost write is looked for before it is sent again, and
    /// a handover's write holds `owner_epoch = mine`.
    On,
    /// The control (`--no-fence`): a lost write is sent again as new, and a
    /// handover's write is conditioned on the version alone.
    Off,
}

/// What resolving a lost write found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// It had landed.
    Landed,
    /// It had not; it was sent again and landed now.
    Sent,
}

/// What the key's version says of a lost write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// The version is the write's: it landed.
    Landed,
    /// The version is the one the write was conditioned on: it did not.
    Absent,
}

/// Judges a lost write of `count` inputs to `key`, conditioned on version
/// `from`, by the version read now (the table in the module docs).
///
/// ```
/// use ferry_bench::store::resolve::{judge, Found};
/// use ferry_bench::store::StoreError;
///
/// // Key 7, a write of 3 inputs conditioned on version 10:
/// assert_eq!(judge(7, 10, 3, 13), Ok(Found::Landed));
/// assert_eq!(judge(7, 10, 3, 10), Ok(Found::Absent));
/// assert!(matches!(judge(7, 10, 3, 14), Err(StoreError::Moved { .. })));
/// ```
pub fn judge(key: u64, from: u64, count: u64, version: u64) -> Result<Found, StoreError> {
    if version == from + count {
        Ok(Found::Landed)
    } else if version == from {
        Ok(Found::Absent)
    } else {
        Err(StoreError::Moved { key, from })
    }
}

/// How lost writes were resolved, counted over the process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Resolutions {
    /// Lost writes found landed.
    pub landed: u64,
    /// Lost writes found absent and sent again.
    pub sent: u64,
    /// Lost writes sent again without looking (the fence off).
    pub resent_blind: u64,
}

impl Resolutions {
    /// The resolutions since `earlier`.
    pub fn since(self, earlier: Resolutions) -> Resolutions {
        Resolutions {
            landed: self.landed - earlier.landed,
            sent: self.sent - earlier.sent,
            resent_blind: self.resent_blind - earlier.resent_blind,
        }
    }

    /// Every lost write tried again.
    pub fn total(self) -> u64 {
        self.landed + self.sent + self.resent_blind
    }
}

static LANDED: AtomicU64 = AtomicU64::new(0);
static SENT: AtomicU64 = AtomicU64::new(0);
static RESENT_BLIND: AtomicU64 = AtomicU64::new(0);

/// The resolutions so far in this process.
pub fn resolutions() -> Resolutions {
    Resolutions {
        landed: LANDED.load(Ordering::Relaxed),
        sent: SENT.load(Ordering::Relaxed),
        resent_blind: RESENT_BLIND.load(Ordering::Relaxed),
    }
}

/// Counts a lost write resolved.
pub(crate) fn count(resolved: Resolved) {
    match resolved {
        Resolved::Landed => LANDED.fetch_add(1, Ordering::Relaxed),
        Resolved::Sent => SENT.fetch_add(1, Ordering::Relaxed),
    };
}

/// Counts a lost write sent again without looking.
pub(crate) fn count_blind() {
    RESENT_BLIND.fetch_add(1, Ordering::Relaxed);
}

/// What a lost write sent again on its own condition gave: `written`, or
/// the key moved meanwhile (another writer: the outcome stays unknown).
pub(crate) fn sent_again(key: u64, from: u64, written: bool) -> Result<Resolved, StoreError> {
    if written {
        Ok(Resolved::Sent)
    } else {
        Err(StoreError::Moved { key, from })
    }
}
