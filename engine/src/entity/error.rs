//! What a caller of an entity gets instead of an output.

use std::fmt;
use std::sync::Arc;

use ferry_shard::FerryError;

/// Why a key's batch was not applied, as the shard answers it (the
/// engine's error type; callers see it inside [`EntityError`]).
///
/// ```
/// use ferry::entity::Failure;
///
/// let fenced = Failure::Fenced { held: 5, mine: 4 };
/// assert_eq!(fenced.to_string(), "a newer owner (epoch 5) holds the key; this owner's epoch is 4: nothing applied");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The store failed and the input was not applied: safe to submit
    /// again.
    NotApplied(Arc<str>),
    /// The write was sent and its reply lost, and the key could not be read
    /// back in time to tell: it may or may not have been applied.
    Unknown(Arc<str>),
    /// A newer owner (epoch `held`) wrote the key: this owner's write was
    /// refused and nothing applied.
    Fenced {
        /// The epoch of the key's last write.
        held: u64,
        /// This engine's epoch.
        mine: u64,
    },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::NotApplied(why) => write!(f, "not applied: {why}"),
            Failure::Unknown(why) => write!(f, "applied or not, unknown: {why}"),
            Failure::Fenced { held, mine } => write!(
                f,
                "a newer owner (epoch {held}) holds the key; this owner's epoch is {mine}: nothing applied"
            ),
        }
    }
}

impl std::error::Error for Failure {}

/// What a caller of [`Entities::submit`](super::Entities::submit) gets
/// instead of its output.
///
/// ```
/// use ferry::entity::EntityError;
///
/// let refused: EntityError<u64, &str> = EntityError::Refused("overdrawn");
/// assert!(refused.was_not_applied());
/// let unknown: EntityError<u64, &str> = EntityError::Unknown("reply lost".into());
/// assert!(!unknown.was_not_applied());
/// assert_eq!(refused.to_string(), "the fold refused the input: overdrawn");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub enum EntityError<I, R> {
    /// The fold refused the input: the state is as it was, and the rest of
    /// its batch went on.
    Refused(R),
    /// The store failed and the input was not applied: safe to submit
    /// again.
    NotApplied(Arc<str>),
    /// The input's write was sent and its reply lost, and the key could not
    /// be read back within `resolve_within` to tell: read the key before
    /// submitting again.
    Unknown(Arc<str>),
    /// A newer owner (epoch `held`) wrote the key: nothing applied; this
    /// instance no longer owns it.
    Fenced {
        /// The epoch of the key's last write.
        held: u64,
        /// This engine's epoch.
        mine: u64,
    },
    /// The engine's own outcome: refused at the door or expired (the input
    /// handed back), the engine stopped mid-trip (`Aborted`: unknown), or
    /// the fold panicked.
    Engine(FerryError<I, Failure>),
}

impl<I, R> EntityError<I, R> {
    /// Whether the input is known not to have been applied.
    pub fn was_not_applied(&self) -> bool {
        match self {
            EntityError::Refused(_) | EntityError::NotApplied(_) | EntityError::Fenced { .. } => {
                true
            }
            EntityError::Unknown(_) => false,
            EntityError::Engine(err) => !matches!(err, FerryError::Aborted),
        }
    }
}

/// The caller's error for what the engine underneath answered (for its
/// `submit_many`, say).
///
/// ```
/// use ferry::entity::{EntityError, Failure};
/// use ferry::FerryError;
///
/// let unknown: EntityError<u8, String> = FerryError::Failed(Failure::Unknown("lost".into())).into();
/// assert_eq!(unknown, EntityError::Unknown("lost".into()));
/// let aborted: EntityError<u8, String> = FerryError::Aborted.into();
/// assert_eq!(aborted, EntityError::Engine(FerryError::Aborted));
/// ```
impl<I, R> From<FerryError<I, Failure>> for EntityError<I, R> {
    fn from(err: FerryError<I, Failure>) -> Self {
        match err {
            FerryError::Failed(Failure::NotApplied(why)) => EntityError::NotApplied(why),
            FerryError::Failed(Failure::Unknown(why)) => EntityError::Unknown(why),
            FerryError::Failed(Failure::Fenced { held, mine }) => {
                EntityError::Fenced { held, mine }
            }
            other => EntityError::Engine(other),
        }
    }
}

impl<I, R: fmt::Display> fmt::Display for EntityError<I, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntityError::Refused(why) => write!(f, "the fold refused the input: {why}"),
            EntityError::NotApplied(why) => write!(f, "not applied: {why}"),
            EntityError::Unknown(why) => write!(f, "applied or not, unknown: {why}"),
            EntityError::Fenced { held, mine } => fmt::Display::fmt(
                &Failure::Fenced {
                    held: *held,
                    mine: *mine,
                },
                f,
            ),
            EntityError::Engine(err) => fmt::Display::fmt(err, f),
        }
    }
}

impl<I, R: fmt::Debug> fmt::Debug for EntityError<I, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntityError::Refused(why) => f.debug_tuple("Refused").field(why).finish(),
            EntityError::NotApplied(why) => f.debug_tuple("NotApplied").field(why).finish(),
            EntityError::Unknown(why) => f.debug_tuple("Unknown").field(why).finish(),
            EntityError::Fenced { held, mine } => f
                .debug_struct("Fenced")
                .field("held", held)
                .field("mine", mine)
                .finish(),
            EntityError::Engine(err) => f.debug_tuple("Engine").field(err).finish(),
        }
    }
}

impl<I, R: fmt::Debug + fmt::Display> std::error::Error for EntityError<I, R> {}
