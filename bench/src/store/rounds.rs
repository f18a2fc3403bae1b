//! What a batch's round on a store can end in: the errors, a write of many
//! keys, and the rounds of reads and conditional writes a batch makes.

use std::fmt;
use std::time::Duration;

use super::WRITE_ATTEMPTS_MAX;

/// The longest pause before a round of a trip after the first two: 100 µs
/// before the third, doubling each round up to this (see [`Rounds::pause`]).
const PAUSE_MAX: Duration = Duration::from_millis(10);

/// The longest pause before the third round.
const PAUSE_FIRST: Duration = Duration::from_micros(100);

/// Why a store request did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// A conditional write found another version than the one expected.
    Conflict {
        /// The key written.
        key: u64,
        /// The version the writer expected.
        expected: u64,
        /// The version the store had.
        current: u64,
    },
    /// A batch conflicted [`WRITE_ATTEMPTS_MAX`] times in a row.
    ConflictsExhausted {
        /// The key.
        key: u64,
        /// Attempts made.
        attempts: u32,
    },
    /// The connection failed before the write was sent: nothing was
    /// applied; the connection is to be made again.
    Disconnected(String),
    /// The connection failed after the write was sent: the write may or may
    /// not have been applied; only reading the key back can tell (what
    /// `ferry::entity` does for ferry's systems; for the others, the
    /// read-back at the end).
    Unknown {
        /// What the client said.
        why: String,
        /// The version the lost write was conditioned on (0 for an unkeyed
        /// batch's row, expected absent); `None` where it had none.
        from: Option<u64>,
    },
    /// No connection to send on (the store is away; a new one is being
    /// made, or waits out its backoff): nothing was sent.
    Unreachable(String),
    /// The simulated store's thread stopped with the request pending.
    Stopped,
    /// A real store's server answered with an error, or the connection to
    /// it broke: what the client said.
    Server(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Conflict {
                key,
                expected,
                current,
            } => write!(
                f,
                "conditional write of key {key} expected version {expected}, the store has {current}"
            ),
            StoreError::ConflictsExhausted { key, attempts } => write!(
                f,
                "key {key}: the write conflicted {attempts} times in a row; two batches of one key keep racing"
            ),
            StoreError::Stopped => f.write_str("the simulated store stopped with the request pending"),
            StoreError::Server(message) => write!(f, "the store's server: {message}"),
            StoreError::Disconnected(message) => {
                write!(f, "the connection failed before the write was sent (nothing applied): {message}")
            }
            StoreError::Unknown { why, .. } => write!(
                f,
                "the connection failed after the write was sent (applied or not, unknown): {why}"
            ),
            StoreError::Unreachable(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl StoreError {
    /// Whether the connection that gave it is dead and must be made again.
    pub fn breaks_connection(&self) -> bool {
        matches!(
            self,
            StoreError::Disconnected(_) | StoreError::Unknown { .. }
        )
    }

    /// Whether the write may have been applied though it failed.
    pub fn is_unknown(&self) -> bool {
        matches!(self, StoreError::Unknown { .. })
    }

    /// The same error, and if it is an unknown outcome, one of a write
    /// conditioned on version `from`.
    pub(crate) fn sent_from(self, from: u64) -> Self {
        match self {
            StoreError::Unknown { why, .. } => StoreError::Unknown {
                why,
                from: Some(from),
            },
            other => other,
        }
    }
}

/// One key's share of a trip: its inputs' count and their sum, written
/// conditionally on the version read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    /// The key.
    pub key: u64,
    /// How many inputs the write applies.
    pub count: u64,
    /// Their sum.
    pub sum: u64,
}

/// One attempt of a trip at some of its writes: which were written (their
/// place in the trip, and the version each started from), and which
/// conflicted; or why the round failed as a whole.
pub(crate) type Attempt = Result<(Vec<(usize, u64)>, Vec<usize>), RoundFailed>;

/// Why a round of a trip failed as a whole, and, if its write request was
/// sent, the version each write of the round was conditioned on (in the
/// round's order), which its [`StoreError::Unknown`] then carries.
#[derive(Debug)]
pub(crate) struct RoundFailed {
    error: StoreError,
    sent_from: Vec<u64>,
}

impl RoundFailed {
    /// The round's write request was sent, conditioned on `sent_from`.
    pub(crate) fn sent(error: StoreError, sent_from: Vec<u64>) -> Self {
        Self { error, sent_from }
    }
}

impl From<StoreError> for RoundFailed {
    /// A failure before the round's write request was sent.
    fn from(error: StoreError) -> Self {
        Self {
            error,
            sent_from: Vec::new(),
        }
    }
}

/// A trip's writes tried in rounds, every store's way: each round tries
/// the writes not yet written, a conflict sends a write to the next round,
/// and after [`WRITE_ATTEMPTS_MAX`] rounds what is left fails
/// `ConflictsExhausted`; a round that fails as a whole fails what it tried.
/// From the third round on, a round waits a random pause first (see
/// [`Rounds::pause`]).
pub(crate) struct Rounds {
    results: Vec<Result<u64, StoreError>>,
    left: Vec<usize>,
    rounds: u32,
}

impl Rounds {
    /// The rounds of `writes`, none tried yet.
    pub(crate) fn new(writes: &[Write]) -> Self {
        Self {
            results: writes
                .iter()
                .map(|write| {
                    Err(StoreError::ConflictsExhausted {
                        key: write.key,
                        attempts: WRITE_ATTEMPTS_MAX,
                    })
                })
                .collect(),
            left: (0..writes.len()).collect(),
            rounds: 0,
        }
    }

    /// The places of the writes the next round tries, if one is due.
    pub(crate) fn next(&mut self) -> Option<Vec<usize>> {
        if self.left.is_empty() || self.rounds == WRITE_ATTEMPTS_MAX {
            return None;
        }
        self.rounds += 1;
        Some(self.left.clone())
    }

    /// How long to wait before the round [`Rounds::next`] just gave, drawn
    /// from `random`: nothing before the first two, then up to
    /// [`PAUSE_FIRST`], doubling each round to at most [`PAUSE_MAX`]. Two
    /// requests that keep meeting on a key (multi-key lets a key be in
    /// several at once; a system that keeps one batch per key never gets
    /// here) are spread apart rather than racing again at once, where the
    /// slower of them can lose every round to fresh requests.
    pub(crate) fn pause(&self, random: u64) -> Duration {
        if self.rounds < 3 {
            return Duration::ZERO;
        }
        let longest = PAUSE_FIRST
            .saturating_mul(1 << (self.rounds - 3).min(16))
            .min(PAUSE_MAX);
        Duration::from_nanos(random % (longest.as_nanos() as u64 + 1))
    }

    /// What the round just tried gave; returns how many writes conflicted.
    pub(crate) fn settle(&mut self, attempt: Attempt) -> u64 {
        match attempt {
            Ok((written, conflicted)) => {
                for (at, version) in written {
                    self.results[at] = Ok(version);
                }
                let conflicts = conflicted.len() as u64;
                self.left = conflicted;
                conflicts
            }
            Err(RoundFailed { error, sent_from }) => {
                for (place, &at) in self.left.iter().enumerate() {
                    self.results[at] = Err(match sent_from.get(place) {
                        Some(&from) => error.clone().sent_from(from),
                        None => error.clone(),
                    });
                }
                self.left.clear();
                0
            }
        }
    }

    /// Each write's result, in the trip's order.
    pub(crate) fn finish(self) -> Vec<Result<u64, StoreError>> {
        self.results
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(rounds: u32) -> Rounds {
        let mut trip = Rounds::new(&[Write {
            key: 1,
            count: 1,
            sum: 1,
        }]);
        for _ in 0..rounds {
            trip.next().expect("a round is due");
        }
        trip
    }

    #[test]
    fn the_first_two_rounds_go_at_once_and_later_ones_pause_at_most_a_doubling_bound() {
        for rounds in [1, 2] {
            assert_eq!(after(rounds).pause(u64::MAX - 1), Duration::ZERO);
        }
        let longest = |rounds| after(rounds).pause(u64::MAX);
        let top = |bound: Duration| bound.as_nanos() as u64;
        assert_eq!(after(3).pause(top(PAUSE_FIRST)), PAUSE_FIRST);
        assert!(longest(3) <= PAUSE_FIRST);
        assert_eq!(after(4).pause(top(PAUSE_FIRST * 2)), PAUSE_FIRST * 2);
        assert_eq!(after(4).pause(top(PAUSE_FIRST * 2) + 1), Duration::ZERO);
        assert_eq!(after(100).pause(top(PAUSE_MAX)), PAUSE_MAX);
        assert!(longest(100) <= PAUSE_MAX);
        assert!((3..=100).all(|rounds| longest(rounds) <= PAUSE_MAX));
    }
}
