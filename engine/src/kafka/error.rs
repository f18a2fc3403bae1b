//! Why a consumer could not start, or stopped on its own.

use std::{error, fmt, io};

use super::Partition;

/// Why a [`Consumer`](super::Consumer) could not start, or stopped on its
/// own. Each message says what to change.
///
/// ```
/// use ferry::kafka::{Error, Partition};
///
/// let err = Error::AssignHook {
///     partitions: vec![Partition::new("ledger", 0)],
///     reason: "the store is unreachable".into(),
/// };
/// assert_eq!(
///     err.to_string(),
///     "the assignment hook failed for ledger/0: the store is unreachable; \
///      the consumer stopped without feeding them"
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A required setting is missing or a value breaks its rule.
    Config {
        /// The builder method to call or fix.
        setting: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// librdkafka refused the configuration or the subscription.
    Kafka(rdkafka::error::KafkaError),
    /// The assignment hook failed: the partitions were not fed, and the
    /// consumer stopped (their next owner takes them from their last
    /// commit).
    AssignHook {
        /// The partitions being assigned.
        partitions: Vec<Partition>,
        /// The hook's error.
        reason: String,
    },
    /// The engine was closed while the consumer was feeding it.
    EngineClosed,
    /// The consumer's thread could not be started.
    Spawn(io::Error),
    /// The consumer's thread panicked (in the decoder, a hook, the policy,
    /// or the consumer itself).
    Panicked(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config { setting, reason } => write!(f, "consumer setting `{setting}`: {reason}"),
            Error::Kafka(err) => write!(f, "Kafka client: {err}"),
            Error::AssignHook { partitions, reason } => {
                let names: Vec<String> = partitions.iter().map(Partition::to_string).collect();
                write!(
                    f,
                    "the assignment hook failed for {}: {reason}; \
                     the consumer stopped without feeding them",
                    names.join(", ")
                )
            }
            Error::EngineClosed => write!(
                f,
                "the engine was closed while the consumer fed it: stop the consumer before closing the engine"
            ),
            Error::Spawn(err) => write!(f, "could not start the consumer's thread: {err}"),
            Error::Panicked(message) => write!(f, "the consumer's thread panicked: {message}"),
        }
    }
}

impl error::Error for Error {
    fn source(&self) -> Option<&(dyn error::Error + 'static)> {
        match self {
            Error::Kafka(err) => Some(err),
            Error::Spawn(err) => Some(err),
            _ => None,
        }
    }
}

impl From<rdkafka::error::KafkaError> for Error {
    fn from(err: rdkafka::error::KafkaError) -> Self {
        Error::Kafka(err)
    }
}
