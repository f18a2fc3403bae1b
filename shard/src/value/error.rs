//! What a caller gets instead of an output (guarantees G4 and G10,
//! docs/guarantees.md#outcomes).
//!
//! Every submitted input ends in exactly one outcome: its output or one of
//! these. A refused input was never admitted and comes back inside the error;
//! the other variants concern an input that was admitted, and say what
//! happened to its batch.

use std::fmt;

pub use crate::value::refused::Refused;

/// The error side of a submit's outcome.
///
/// ```
/// use ferry_shard::{FerryError, Refused};
///
/// let err: FerryError<&str, String> = FerryError::Refused { input: "x", reason: Refused::Full };
/// match err {
///     FerryError::Refused { input, reason: Refused::Full } => assert_eq!(input, "x"),
///     other => panic!("unexpected {other}"),
/// }
///
/// let failed: FerryError<(), String> = FerryError::Failed("store unavailable".into());
/// assert_eq!(failed.to_string(), "the batch function failed: store unavailable");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub enum FerryError<I, E> {
    /// Never admitted; `input` is what the caller gave, untouched.
    Refused {
        /// The input, handed back.
        input: I,
        /// Which bound or state refused it.
        reason: Refused,
    },
    /// The batch function returned this error for the input's batch.
    Failed(E),
    /// The batch function panicked while processing the input's batch.
    Panicked,
    /// The batch function returned `got` outputs for the `expected` inputs
    /// of the caller's batch; with a trip function, `got` results for the
    /// `expected` batches of the trip. Which key: the caller's own, the one
    /// it submitted (a batch holds one key's inputs, and every caller of
    /// that batch gets this error); the feature `tracing` logs the key's
    /// hash and the shard with the fault, in the batch's span.
    WrongOutputCount {
        /// Inputs in the batch (with a trip function, batches in the trip).
        expected: usize,
        /// Outputs returned (with a trip function, results returned).
        got: usize,
    },
    /// The engine stopped while the input's batch was in flight (or before
    /// it was sent); whether the store applied it is unknown.
    Aborted,
    /// Admitted, but still waiting (never taken into a batch, never sent)
    /// `max_queue_time` after it arrived; `input` is handed back.
    Expired {
        /// The input, handed back.
        input: I,
    },
    /// Never admitted: with an event-time order and `refuse_late(true)`,
    /// the input arrived after its event time plus the lateness had passed,
    /// so it could no longer be sent in order; `input` is handed back.
    Late {
        /// The input, handed back.
        input: I,
    },
}

impl<I, E> FerryError<I, E> {
    /// What the caller of an input refused for `reason` gets: `Late` for a
    /// late input, `Refused` for every other reason.
    ///
    /// ```
    /// use ferry_shard::{FerryError, Refused};
    ///
    /// let late: FerryError<u8, ()> = FerryError::refusal(3, Refused::Late);
    /// assert!(matches!(late, FerryError::Late { input: 3 }));
    /// let full: FerryError<u8, ()> = FerryError::refusal(4, Refused::Full);
    /// assert!(matches!(full, FerryError::Refused { input: 4, reason: Refused::Full }));
    /// ```
    pub fn refusal(input: I, reason: Refused) -> Self {
        match reason {
            Refused::Late => FerryError::Late { input },
            reason => FerryError::Refused { input, reason },
        }
    }

    /// The input handed back, if the error is a refusal (`Late` too) or an
    /// expiry (the input was never sent).
    pub fn into_input(self) -> Option<I> {
        match self {
            FerryError::Refused { input, .. }
            | FerryError::Expired { input }
            | FerryError::Late { input } => Some(input),
            _ => None,
        }
    }

    /// Whether the input was refused (never admitted, never sent), `Late`
    /// included.
    pub fn is_refused(&self) -> bool {
        matches!(self, FerryError::Refused { .. } | FerryError::Late { .. })
    }
}

impl<I, E: fmt::Display> fmt::Display for FerryError<I, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FerryError::Refused { reason, .. } => {
                write!(f, "input refused, handed back: {reason}")
            }
            FerryError::Failed(err) => write!(f, "the batch function failed: {err}"),
            FerryError::Panicked => f.write_str(
                "the batch function panicked; the input's batch was abandoned and its key released",
            ),
            FerryError::WrongOutputCount { expected, got } => write!(
                f,
                "the batch function returned {got} outputs where {expected} were due (one per \
                 input of this key's batch, in order; from a trip function, one result per batch \
                 of the trip); every caller of the batch gets this error"
            ),
            FerryError::Aborted => f.write_str(
                "the engine stopped while the input's batch was in flight; its outcome at the store is unknown",
            ),
            FerryError::Expired { .. } => f.write_str(
                "the input waited max_queue_time without being sent and was handed back (never sent)",
            ),
            FerryError::Late { .. } => f.write_str(
                "the input arrived after its event time plus the lateness had passed and was handed \
                 back (refuse_late; never sent)",
            ),
        }
    }
}

impl<I, E: fmt::Debug> fmt::Debug for FerryError<I, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The input is left out: it need not be Debug, and may be large.
        match self {
            FerryError::Refused { reason, .. } => f
                .debug_struct("Refused")
                .field("reason", reason)
                .finish_non_exhaustive(),
            FerryError::Failed(err) => f.debug_tuple("Failed").field(err).finish(),
            FerryError::Panicked => f.write_str("Panicked"),
            FerryError::WrongOutputCount { expected, got } => f
                .debug_struct("WrongOutputCount")
                .field("expected", expected)
                .field("got", got)
                .finish(),
            FerryError::Aborted => f.write_str("Aborted"),
            FerryError::Expired { .. } => f.write_str("Expired { .. }"),
            FerryError::Late { .. } => f.write_str("Late { .. }"),
        }
    }
}

/// Any `E` with a message will do (a `String` too): the batch error's own
/// message is part of this error's, so nothing is lost by not chaining it as
/// a `source`.
impl<I, E> std::error::Error for FerryError<I, E> where E: fmt::Debug + fmt::Display {}

/// What a caller finally receives.
pub type Outcome<I, O, E> = Result<O, FerryError<I, E>>;
