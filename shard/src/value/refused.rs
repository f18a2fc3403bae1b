//! Why an input was not admitted, and the input itself handed back
//! (guarantees G4, G6 and G9, docs/guarantees.md): a refusal never swallows
//! what the caller gave.

use std::fmt;

/// The reason an input was refused. It was never admitted, so nothing about
/// it reached a batch or the store.
///
/// ```
/// use ferry_shard::Refused;
///
/// assert_eq!(
///     Refused::Full.to_string(),
///     "the shard is full (max_waiting, max_waiting_weight or its intake queue is at its bound)"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refused {
    /// The shard's waiting inputs (count or weight) or its intake queue are
    /// at their bound; try again later or shed load.
    Full,
    /// Its key already has `max_waiting_per_key` inputs waiting; the
    /// shard's other keys are still admitted.
    KeyFull,
    /// The input alone weighs more than `max_batch_weight`, so no batch
    /// could ever carry it.
    TooHeavy,
    /// The engine is closed (or closing) and admits nothing new.
    Closed,
    /// With an event-time order and `refuse_late(true)`: the input's hold
    /// (its event time plus the lateness) had already ended when it
    /// arrived. Its caller gets [`FerryError::Late`](crate::FerryError::Late).
    Late,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refused::Full => {
                "the shard is full (max_waiting, max_waiting_weight or its intake queue is at its bound)"
            }
            Refused::KeyFull => {
                "the input's key is full (max_waiting_per_key of its inputs are waiting)"
            }
            Refused::TooHeavy => "the input weighs more than max_batch_weight",
            Refused::Closed => "the engine is closed",
            Refused::Late => "the input arrived after its event time plus the lateness had passed",
        })
    }
}

/// A refusal is an error of its own, for `?` where the input handed back is
/// not wanted (as with `ferry`'s `Engine::spawn_on`, whose refused task
/// is dropped).
///
/// ```
/// use ferry_shard::Refused;
///
/// fn spawn() -> Result<(), Box<dyn std::error::Error>> {
///     Err(Refused::Closed)?
/// }
/// assert_eq!(spawn().unwrap_err().to_string(), "the engine is closed");
/// ```
impl std::error::Error for Refused {}

/// A refused input, handed back with the reason.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal<T> {
    /// What the caller gave, untouched.
    pub item: T,
    /// Why it was not admitted.
    pub reason: Refused,
}
