//! A record that could not be applied, and what the user's policy decides
//! for it. A failed record is never skipped silently: until the policy
//! settles it, it holds its partition's commit point back.

use std::fmt;

use ferry_shard::FerryError;

use super::Record;

/// Why a record could not be applied.
#[derive(Debug)]
pub enum Failure<I, E> {
    /// The decoder refused the record; its reason.
    Undecodable(String),
    /// The engine answered the record's input with an error (the batch
    /// function failed or panicked, the input expired, ...).
    Answered(FerryError<I, E>),
}

impl<I, E: fmt::Display> fmt::Display for Failure<I, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Undecodable(reason) => write!(f, "the record could not be decoded: {reason}"),
            Failure::Answered(error) => write!(f, "{error}"),
        }
    }
}

/// A failed record as the failure policy sees it.
///
/// ```
/// use ferry::kafka::{Failed, Failure, OnFailure, Record};
/// use ferry::FerryError;
///
/// // Retry a failed batch twice, then give the record up to a dead letter.
/// fn policy(failed: Failed<'_, u64, String>) -> OnFailure {
///     match failed.failure {
///         Failure::Answered(FerryError::Failed(_)) if failed.attempt < 3 => OnFailure::Retry,
///         _ => {
///             eprintln!("dead letter {}@{}: {}", failed.record.partition(), failed.record.offset, failed.failure);
///             OnFailure::DeadLetter
///         }
///     }
/// }
///
/// let record = Record { topic: "t".into(), partition: 0, offset: 9, key: None, payload: None, timestamp_ms: None };
/// let failure = Failure::Answered(FerryError::Failed("timeout".to_string()));
/// assert_eq!(policy(Failed { record: &record, failure: &failure, attempt: 1 }), OnFailure::Retry);
/// assert_eq!(policy(Failed { record: &record, failure: &failure, attempt: 3 }), OnFailure::DeadLetter);
/// ```
#[derive(Debug)]
pub struct Failed<'a, I, E> {
    /// The record, as read.
    pub record: &'a Record,
    /// Why it failed.
    pub failure: &'a Failure<I, E>,
    /// How many times it was tried, decoded and submitted (1 the first
    /// time; a refusal that passes on its own, the engine being full, is
    /// not counted).
    pub attempt: u32,
}

/// What the failure policy decides for a failed record.
///
/// Whatever the decision, a failed record does not hold back its key's
/// later records that are already in the engine: they may be applied
/// before the failed one is submitted or read again. A fence on the key's
/// last applied offset (the fold's or the store's) then refuses the failed
/// record as a duplicate when it comes back, so it is never applied. Where a fault of
/// the store can fail a record (a write not applied, an unknown outcome),
/// keep each key's later records out of the engine while one is
/// unsettled ([`ConsumerBuilder::max_unanswered_per_partition`] of 1 does
/// that, at the cost of batching), or let the policy send such a record to
/// a dead letter and reconcile it there.
///
/// [`ConsumerBuilder::max_unanswered_per_partition`]: super::ConsumerBuilder::max_unanswered_per_partition
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Decode and submit the record again. It is ranked by the engine's
    /// order as before: with an order by offset it goes ahead of its key's
    /// later records still waiting, but those already sent are not undone
    /// (see above).
    Retry,
    /// The policy has kept the record elsewhere (a dead-letter topic, a
    /// table, a log it answers for): the record counts as answered and the
    /// partition's commits may pass it.
    DeadLetter,
    /// Stop the partition: nothing more of it is fed, and its commits never
    /// pass this record, so the partition's next owner (or this consumer,
    /// restarted) reads it again. Records of it already in the engine are
    /// still applied (see above). The default.
    Stop,
}
