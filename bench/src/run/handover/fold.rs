//! What an owner's engine folds: each key's state (the owner epoch, the
//! last seq, the seqs applied), the two inputs (a take, a seq to apply),
//! and the fold that fences an input of a stale owner.
//!
//! The owners write through `ferry::entity`: the library reads a key,
//! folds its batch into the state, and writes it on the condition that the
//! key's version is still the one folded from. The owner epoch is per key
//! here (every take raises that key's), so it lives *in the state*, not in
//! the library's engine-wide `Epoch` (left at 0 by every owner):
//!
//! - [`Step::Take`] raises the state's `owner_epoch` to the taker's, and is
//!   answered `last_seq`; refused [`Fenced`] if the state holds a newer
//!   epoch. It is a write like any other: it moves the key's version.
//! - [`Step::Apply`] appends its seq and sets `last_seq`; with the fence,
//!   refused [`Fenced`] unless the state's `owner_epoch` is the input's.
//!
//! A stale owner's trip reads the key and folds it. Read after the take,
//! the state names the new owner's epoch, and the fold refuses the input
//! at once (nothing written). Read before it, the write expects the
//! version before the take, which moved it, so the write does not land (a
//! conflict): the library reads the key again and folds anew, and the fold
//! refuses the input then. With [`Fence::Off`] (the control) an apply
//! ignores the epoch, so the stale owner's seqs are folded after the take
//! and land.
//!
//! Invariant (with the fence): a write holds only the state of the version
//! it was folded from, and every state from a take on names the taker's
//! epoch, so once a take has landed no input of an older owner lands
//! (`StoreG1` of `formal/Handover.tla`).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::store::Fence;

/// An input of a handover owner, for one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Take the key for an owner assigned it at `epoch`: answered the
    /// key's `last_seq`.
    Take {
        /// The taker's epoch for the key.
        epoch: u64,
    },
    /// Apply the key's `seq` for the owner that took it at `epoch`:
    /// answered `seq`.
    Apply {
        /// The owner's epoch for the key when it submitted the input.
        epoch: u64,
        /// The key's sequence number, from 1.
        seq: u64,
    },
}

impl Step {
    /// The input's rank in its key's lane: a take first, then the seqs in
    /// order (an owner submits its seqs only once its take is answered, so
    /// the two never wait together; the rank keeps the seqs in order).
    pub fn rank(&self) -> i64 {
        match *self {
            Step::Take { .. } => 0,
            Step::Apply { seq, .. } => i64::try_from(seq).unwrap_or(i64::MAX),
        }
    }
}

/// A key's state as the store holds it, as JSON:
/// `{"owner_epoch":3,"last_seq":120,"applied":[[1,120]]}`.
///
/// `applied` is every seq applied, in the order applied, as runs of
/// consecutive seqs (`[first, last]`, a new run wherever a seq is not the
/// one after the last): exactly the list, and a few numbers long while
/// it is in order. The state is written whole with every write, so a
/// plain list would make each write as long as the run so far.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyState {
    /// The epoch of the owner that took the key last (0: never taken).
    pub owner_epoch: u64,
    /// The seq of the last input applied (0: none).
    pub last_seq: u64,
    /// The seqs applied, in order, as runs `[first, last]`.
    pub applied: Vec<[u64; 2]>,
}

impl KeyState {
    /// Appends `seq` to the seqs applied.
    pub fn append(&mut self, seq: u64) {
        match self.applied.last_mut() {
            Some(run) if run[1].checked_add(1) == Some(seq) => run[1] = seq,
            _ => self.applied.push([seq, seq]),
        }
    }

    /// Every seq applied, in the order applied.
    pub fn seqs(&self) -> Vec<u64> {
        let runs = self.applied.iter();
        runs.flat_map(|&[first, last]| first..=last).collect()
    }
}

/// Why the fold refused an input: another owner holds the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fenced {
    /// The owner epoch the key's state names.
    pub held: u64,
    /// The input's.
    pub epoch: u64,
}

impl fmt::Display for Fenced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fenced: the key's owner epoch is {}, this owner's {}: another owner serves the key",
            self.held, self.epoch
        )
    }
}

impl std::error::Error for Fenced {}

/// The fold of every owner: see the module docs. `fence` says whether an
/// apply checks the owner epoch; a take always does, as the take statement
/// of `docs/scale-out.md` does.
pub fn fold(fence: Fence) -> impl Fn(&mut KeyState, &Step) -> Result<u64, Fenced> + Send + Sync {
    move |state: &mut KeyState, step: &Step| match *step {
        Step::Take { epoch } => {
            if state.owner_epoch > epoch {
                return Err(Fenced {
                    held: state.owner_epoch,
                    epoch,
                });
            }
            state.owner_epoch = epoch;
            Ok(state.last_seq)
        }
        Step::Apply { epoch, seq } => {
            if fence == Fence::On && state.owner_epoch != epoch {
                return Err(Fenced {
                    held: state.owner_epoch,
                    epoch,
                });
            }
            state.append(seq);
            state.last_seq = seq;
            Ok(seq)
        }
    }
}
