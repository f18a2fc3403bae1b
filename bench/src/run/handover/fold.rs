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

use ferry::entity::StoreStats;
use serde::{Deserialize, Serialize};

use super::Fence;

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

/// An owner's figures read at one moment: what its engine's shards did at
/// the store (the library's counts) and what its fold refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnerCounts {
    /// Read requests (each for many keys).
    pub reads: u64,
    /// Write requests (each for many keys).
    pub writes: u64,
    /// Keys' writes that found the key written by somebody else (a take,
    /// or the other owner's write): read again and folded anew.
    pub conflicts: u64,
    /// Keys' writes whose reply was lost (then looked for).
    pub lost: u64,
    /// Inputs answered `Refused(Fenced)`.
    pub fenced: u64,
}

impl OwnerCounts {
    /// The library's `store` counts, and `fenced` refusals.
    pub fn of(store: &StoreStats, fenced: u64) -> OwnerCounts {
        OwnerCounts {
            reads: store.reads,
            writes: store.writes,
            conflicts: store.conflicts,
            lost: store.lost,
            fenced,
        }
    }

    /// What was counted between `earlier` and `self`.
    pub fn since(&self, earlier: &OwnerCounts) -> OwnerCounts {
        OwnerCounts {
            reads: self.reads - earlier.reads,
            writes: self.writes - earlier.writes,
            conflicts: self.conflicts - earlier.conflicts,
            lost: self.lost - earlier.lost,
            fenced: self.fenced - earlier.fenced,
        }
    }

    /// Both added.
    pub fn plus(&self, other: &OwnerCounts) -> OwnerCounts {
        OwnerCounts {
            reads: self.reads + other.reads,
            writes: self.writes + other.writes,
            conflicts: self.conflicts + other.conflicts,
            lost: self.lost + other.lost,
            fenced: self.fenced + other.fenced,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(epoch: u64) -> Step {
        Step::Take { epoch }
    }

    fn apply(epoch: u64, seq: u64) -> Step {
        Step::Apply { epoch, seq }
    }

    #[test]
    fn a_take_raises_the_epoch_and_answers_the_last_seq() {
        let fold = fold(Fence::On);
        let mut state = KeyState::default();
        assert_eq!(fold(&mut state, &take(1)), Ok(0));
        assert_eq!(fold(&mut state, &apply(1, 1)), Ok(1));
        assert_eq!(fold(&mut state, &apply(1, 2)), Ok(2));
        assert_eq!(fold(&mut state, &take(2)), Ok(2));
        assert_eq!(fold(&mut state, &take(2)), Ok(2), "again at the same epoch");
        assert_eq!(
            fold(&mut state, &take(1)),
            Err(Fenced { held: 2, epoch: 1 })
        );
        assert_eq!(state.owner_epoch, 2);
    }

    #[test]
    fn the_fence_refuses_a_stale_owner_and_the_control_does_not() {
        let mut state = KeyState::default();
        fold(Fence::On)(&mut state, &take(1)).unwrap();
        fold(Fence::On)(&mut state, &apply(1, 1)).unwrap();
        fold(Fence::On)(&mut state, &take(2)).unwrap();
        let before = state.clone();
        assert_eq!(
            fold(Fence::On)(&mut state, &apply(1, 2)),
            Err(Fenced { held: 2, epoch: 1 })
        );
        assert_eq!(state, before, "a refused input changes nothing");
        // Without the fence the zombie's seq 2 lands after the take, and
        // the new owner, told last_seq 1, applies 2 again.
        let control = fold(Fence::Off);
        assert_eq!(control(&mut state, &apply(1, 2)), Ok(2));
        assert_eq!(control(&mut state, &apply(2, 2)), Ok(2));
        assert_eq!(state.seqs(), vec![1, 2, 2]);
    }

    #[test]
    fn runs_hold_exactly_the_seqs_applied_in_order() {
        let mut state = KeyState::default();
        for seq in [1, 2, 3, 5, 6, 4, 4, 7] {
            state.append(seq);
        }
        assert_eq!(state.applied, vec![[1, 3], [5, 6], [4, 4], [4, 4], [7, 7]]);
        assert_eq!(state.seqs(), vec![1, 2, 3, 5, 6, 4, 4, 7]);
        let json = serde_json::to_string(&state).unwrap();
        assert_eq!(
            json,
            r#"{"owner_epoch":0,"last_seq":0,"applied":[[1,3],[5,6],[4,4],[4,4],[7,7]]}"#
        );
        assert_eq!(serde_json::from_str::<KeyState>(&json).unwrap(), state);
    }

    #[test]
    fn a_take_ranks_before_every_seq() {
        assert!(take(9).rank() < apply(1, 1).rank());
        assert!(apply(1, 1).rank() < apply(1, 2).rank());
    }
}
