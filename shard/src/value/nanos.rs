//! A point in a shard's time, as the pure parts keep it: whole nanoseconds
//! since an origin the caller keeps fixed, in one `u64` (584 years fit).
//!
//! The shard's clock reads it in this form and every step of the queues
//! compares and subtracts it in this form, so the hot path never converts
//! to and from a [`Duration`] (seconds and nanoseconds in two fields,
//! through a `u128`). A `Duration` converts into it, saturating, so tests
//! and callers that think in `Duration`s pass them as they are.

use std::ops::Add;
use std::time::Duration;

/// Nanoseconds since a fixed origin: see the module docs.
///
/// ```
/// # #[cfg(feature = "internals")] {
/// use std::time::Duration;
/// use ferry_shard::parts::Nanos;
///
/// let start = Nanos::from(Duration::from_micros(5));
/// let later = start + Duration::from_nanos(250);
/// assert_eq!(later.as_u64(), 5_250);
/// assert_eq!(later.saturating_sub(start), Duration::from_nanos(250));
/// assert_eq!(start.saturating_sub(later), Duration::ZERO);
/// assert_eq!(Nanos::from(Duration::MAX), Nanos::MAX);
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(u64);

impl Nanos {
    /// The origin.
    pub const ZERO: Nanos = Nanos(0);
    /// The latest point there is.
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// `nanos` nanoseconds after the origin.
    pub const fn from_u64(nanos: u64) -> Self {
        Nanos(nanos)
    }

    /// Nanoseconds since the origin.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// How long after `earlier` this is; zero if it is not after.
    pub fn saturating_sub(self, earlier: Nanos) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl From<Duration> for Nanos {
    /// The point `time` after the origin, saturating at [`Nanos::MAX`].
    #[inline]
    fn from(time: Duration) -> Self {
        Nanos(u64::try_from(time.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl From<Nanos> for Duration {
    fn from(time: Nanos) -> Self {
        Duration::from_nanos(time.0)
    }
}

impl Add<Duration> for Nanos {
    type Output = Nanos;

    /// `span` later, saturating at [`Nanos::MAX`].
    fn add(self, span: Duration) -> Nanos {
        Nanos(self.0.saturating_add(Nanos::from(span).0))
    }
}

/// The latest `now` a pure queue was given, for the check that its time
/// never goes backwards: kept, and checked, in debug builds only.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Latest {
    ns: u64,
}

impl Latest {
    /// `now` in nanoseconds, after checking that it is not earlier than the
    /// latest `now` seen, and recording it (both in debug builds only).
    #[inline]
    pub(crate) fn observe(&mut self, now: impl Into<Nanos>) -> u64 {
        let now_ns = now.into().as_u64();
        debug_assert!(
            now_ns >= self.ns,
            "time went backwards: now = {now_ns} ns after {} ns",
            self.ns
        );
        if cfg!(debug_assertions) {
            self.ns = self.ns.max(now_ns);
        }
        now_ns
    }
}

/// Whole nanoseconds of `span`, saturating at `u64::MAX`.
pub(crate) fn nanos(span: Duration) -> u64 {
    Nanos::from(span).as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanoseconds_saturate() {
        assert_eq!(nanos(Duration::from_micros(3)), 3_000);
        assert_eq!(nanos(Duration::MAX), u64::MAX);
        assert_eq!(Nanos::MAX + Duration::from_secs(1), Nanos::MAX);
        assert_eq!(
            Duration::from(Nanos::from_u64(1_500)),
            Duration::from_nanos(1_500)
        );
    }
}
