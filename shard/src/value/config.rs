//! The bounds a shard's lanes keep (docs/guarantees.md#settings), and the
//! typed error that names a setting and the rule it broke.
//!
//! Every value here is per shard. [`QueueConfig::validate`] is the one place
//! the rules are written; the engine's builder calls it, so an invalid value
//! is an error value, never a panic.

use std::fmt;
use std::time::Duration;

use crate::value::hold::Hold;

/// Bounds on batches and on waiting inputs for one shard's queue
/// ([`Lanes`](crate::parts::Lanes) or [`Fifo`](crate::parts::Fifo)).
///
/// ```
/// use ferry_shard::QueueConfig;
/// use std::time::Duration;
///
/// let config = QueueConfig {
///     max_batch_size: 16,
///     max_batch_delay: Duration::from_micros(200),
///     ..QueueConfig::default()
/// };
/// assert!(config.validate().is_ok());
///
/// let bad = QueueConfig { max_batch_size: 0, ..QueueConfig::default() };
/// let err = bad.validate().unwrap_err();
/// assert_eq!(err.field, "max_batch_size");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// A batch carries at most this many inputs; a lane with this many
    /// waiting inputs is *full*. At least 1.
    pub max_batch_size: usize,
    /// A batch weighs at most this much (it always carries at least one
    /// input); a lane whose waiting weight reaches it is *full*. At least 1.
    pub max_batch_weight: u64,
    /// How long a partial batch may wait for more inputs, counted from its
    /// oldest input by arrival. Zero sends a lone input at once.
    pub max_batch_delay: Duration,
    /// At most this many inputs wait (admitted, not yet sent) on the shard.
    /// At least 1.
    pub max_waiting: usize,
    /// The waiting inputs of the shard weigh at most this much. At least 1.
    pub max_waiting_weight: u64,
    /// At most this many inputs of one key wait (admitted, not yet sent);
    /// past it the key's inputs are refused `KeyFull`, so that one hot key
    /// cannot take the whole shard's queue. At least 1. (Unkeyed batching
    /// has no keys and ignores it.)
    pub max_waiting_per_key: usize,
    /// An input still waiting (not yet taken into a batch) this long after
    /// its arrival is answered `Expired`, its input handed back, never
    /// sent. `None`: inputs wait as long as it takes. Not zero.
    pub max_queue_time: Option<Duration>,
    /// Whether an input whose caller stopped waiting (dropped its future)
    /// before the input was taken into a batch is withdrawn: never sent, its
    /// count and weight out of the bounds.
    pub withdraw_on_drop: bool,
    /// The lateness hold of an event-time order: each input is held until
    /// its event time (its rank, in milliseconds since the UNIX epoch) plus
    /// the lateness has passed (see [`Hold`]). `None`: nothing is held, and
    /// no input is late. Per-key batching only (unkeyed batching ignores it).
    pub hold: Option<Hold>,
    /// Whether a batch ends where the inputs' boundary values change (the
    /// value given with each input at admission): a batch then never mixes
    /// two of them. Per-key batching only (unkeyed batching ignores it).
    pub boundaries: bool,
}

impl QueueConfig {
    /// Default `max_batch_size`.
    pub const DEFAULT_MAX_BATCH_SIZE: usize = 64;
    /// Default `max_waiting`.
    pub const DEFAULT_MAX_WAITING: usize = 1_000_000;
    /// Whether an input of `weight` is too heavy for any batch: the one
    /// test of `Refused::TooHeavy`, made by both queues at admission and by
    /// the engine on the caller's thread before the input travels.
    ///
    /// ```
    /// use ferry_shard::QueueConfig;
    ///
    /// let config = QueueConfig { max_batch_weight: 10, ..QueueConfig::default() };
    /// assert!(!config.is_too_heavy(10));
    /// assert!(config.is_too_heavy(11));
    /// ```
    pub fn is_too_heavy(&self, weight: u64) -> bool {
        weight > self.max_batch_weight
    }

    /// Checks every rule of the settings (docs/guarantees.md#settings) that
    /// concerns lanes.
    pub fn validate(&self) -> Result<(), ConfigError> {
        at_least_one("max_batch_size", self.max_batch_size as u64)?;
        at_least_one("max_batch_weight", self.max_batch_weight)?;
        at_least_one("max_waiting", self.max_waiting as u64)?;
        at_least_one("max_waiting_weight", self.max_waiting_weight)?;
        at_least_one("max_waiting_per_key", self.max_waiting_per_key as u64)?;
        if self.max_queue_time == Some(Duration::ZERO) {
            return Err(ConfigError::new(
                "max_queue_time",
                "must be more than zero (leave it unset for no limit)",
                "0s",
            ));
        }
        Ok(())
    }

    /// `max_queue_time` in whole nanoseconds, saturating; `None` if unset.
    pub(crate) fn max_queue_time_ns(&self) -> Option<u64> {
        self.max_queue_time.map(crate::value::nanos::nanos)
    }

    /// `max_batch_delay` in whole nanoseconds, saturating.
    pub(crate) fn max_batch_delay_ns(&self) -> u64 {
        crate::value::nanos::nanos(self.max_batch_delay)
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            max_batch_size: Self::DEFAULT_MAX_BATCH_SIZE,
            max_batch_weight: u64::MAX,
            max_batch_delay: Duration::ZERO,
            max_waiting: Self::DEFAULT_MAX_WAITING,
            max_waiting_weight: u64::MAX,
            max_waiting_per_key: usize::MAX,
            max_queue_time: None,
            withdraw_on_drop: false,
            hold: None,
            boundaries: false,
        }
    }
}

fn at_least_one(field: &'static str, value: u64) -> Result<(), ConfigError> {
    if value >= 1 {
        Ok(())
    } else {
        Err(ConfigError::new(field, "must be at least 1", value))
    }
}

/// A configuration value broke its rule: names the field, the rule and the
/// value given.
///
/// ```
/// use ferry_shard::ConfigError;
///
/// let err = ConfigError::new("max_batch_size", "must be at least 1", 0);
/// assert_eq!(
///     err.to_string(),
///     "invalid configuration: `max_batch_size` must be at least 1 (got 0)"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The setting, as named on the builder (e.g. `max_batch_size`).
    pub field: &'static str,
    /// The rule it broke, in words (e.g. `must be at least 1`).
    pub rule: &'static str,
    /// The value that was given, rendered for the message.
    pub value: String,
}

impl ConfigError {
    /// A new error for `field`, which broke `rule` with `value`.
    pub fn new(field: &'static str, rule: &'static str, value: impl fmt::Display) -> Self {
        Self {
            field,
            rule,
            value: value.to_string(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid configuration: `{}` {} (got {})",
            self.field, self.rule, self.value
        )
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_spec_and_are_valid() {
        let config = QueueConfig::default();
        assert_eq!(config.max_batch_size, 64);
        assert_eq!(config.max_batch_delay, Duration::ZERO);
        assert_eq!(config.max_waiting, 1_000_000);
        assert_eq!(config.max_batch_weight, u64::MAX);
        assert_eq!(config.max_waiting_weight, u64::MAX);
        assert_eq!(config.max_waiting_per_key, usize::MAX);
        assert_eq!(config.max_queue_time, None);
        assert!(!config.withdraw_on_drop);
        assert_eq!(config.validate(), Ok(()));
    }

    #[test]
    fn each_zero_bound_is_named_in_its_error() {
        type Breaks = fn(&mut QueueConfig);
        let cases: [(&str, Breaks); 6] = [
            ("max_waiting_per_key", |c| c.max_waiting_per_key = 0),
            ("max_queue_time", |c| {
                c.max_queue_time = Some(Duration::ZERO)
            }),
            ("max_batch_size", |c| c.max_batch_size = 0),
            ("max_batch_weight", |c| c.max_batch_weight = 0),
            ("max_waiting", |c| c.max_waiting = 0),
            ("max_waiting_weight", |c| c.max_waiting_weight = 0),
        ];
        for (field, break_it) in cases {
            let mut config = QueueConfig::default();
            break_it(&mut config);
            let err = config.validate().unwrap_err();
            assert_eq!(err.field, field);
            assert!(err.to_string().contains(field), "{err}");
        }
    }
}
