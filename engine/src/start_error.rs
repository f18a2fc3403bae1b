//! Why an engine or a batcher did not start (docs/guarantees.md#starting).
//! Start is all or nothing: when it fails, every shard that did come up has
//! been stopped and joined, and no thread is left behind.

use std::convert::Infallible;
use std::fmt;

use ferry_shard::{ConfigError, ShardId, StartFailure};

/// Why an engine did not start. `F` is the error of a fallible factory
/// ([`try_start`](crate::Builder::try_start)); with
/// [`start`](crate::Builder::start) it is [`Infallible`].
///
/// ```
/// use ferry::{Engine, StartError};
///
/// let started = Engine::<u64, u64, u64, String>::builder()
///     .shards(0)
///     .pin(false)
///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) });
/// match started {
///     Err(StartError::Config(err)) => {
///         assert_eq!(err.field, "shards");
///         assert_eq!(
///             StartError::<std::convert::Infallible>::Config(err).to_string(),
///             "invalid configuration: `shards` must be at least 1 (got 0)"
///         );
///     }
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug)]
pub enum StartError<F = Infallible> {
    /// A setting broke its rule.
    Config(ConfigError),
    /// A shard's thread could not be started (the OS refused a thread).
    Spawn {
        /// The shard that failed.
        shard: ShardId,
        /// What the system said.
        source: std::io::Error,
    },
    /// A shard's factory returned this error.
    Factory {
        /// The shard that failed.
        shard: ShardId,
        /// The factory's error.
        error: F,
    },
    /// A shard's factory panicked.
    FactoryPanicked {
        /// The shard that failed.
        shard: ShardId,
        /// The panic's message.
        message: String,
    },
    /// The runtime asked for cannot run here (glommio without io_uring or
    /// without enough locked memory): which limit or policy refused it,
    /// and how to lift it.
    Runtime {
        /// The shard that failed (the first, when it was known before any
        /// started).
        shard: ShardId,
        /// Why, and what to change.
        reason: String,
    },
}

impl<F> StartError<F> {
    /// The error of `shard` that came up short.
    pub(crate) fn of_shard(shard: ShardId, failure: StartFailure<F>) -> Self {
        match failure {
            StartFailure::Runtime(reason) => StartError::Runtime { shard, reason },
            StartFailure::Factory(error) => StartError::Factory { shard, error },
            StartFailure::FactoryPanicked(message) => {
                StartError::FactoryPanicked { shard, message }
            }
        }
    }
}

impl<F: fmt::Display> fmt::Display for StartError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Config(err) => err.fmt(f),
            StartError::Spawn { shard, source } => write!(
                f,
                "could not start {shard}: the system refused a thread ({source}); \
                 check the process's thread and memory limits"
            ),
            StartError::Factory { shard, error } => write!(
                f,
                "could not start {shard}: its factory failed: {error} (no shard is left running)"
            ),
            StartError::FactoryPanicked { shard, message } => write!(
                f,
                "could not start {shard}: its factory panicked: {message} (no shard is left running)"
            ),
            StartError::Runtime { shard, reason } => {
                write!(f, "could not start {shard}: {reason}")
            }
        }
    }
}

impl<F> std::error::Error for StartError<F>
where
    F: std::error::Error + 'static,
{
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Config(err) => Some(err),
            StartError::Spawn { source, .. } => Some(source),
            StartError::Factory { error, .. } => Some(error),
            StartError::FactoryPanicked { .. } | StartError::Runtime { .. } => None,
        }
    }
}

impl<F> From<ConfigError> for StartError<F> {
    fn from(err: ConfigError) -> Self {
        StartError::Config(err)
    }
}
