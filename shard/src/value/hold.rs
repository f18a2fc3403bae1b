//! The lateness hold of an event-time order, as a shard's queue keeps it.
//!
//! With [`Order::event_time`](crate::Order::event_time), an input's rank is
//! its event time in milliseconds since the UNIX epoch, and the input is
//! held until that time plus the lateness has passed. The queue has no
//! clock of its own: its `now` counts nanoseconds from an origin its owner
//! keeps fixed (a shard: the moment its clock started), so a [`Hold`] also
//! says where that origin lies in UNIX time, and turns a rank into the
//! moment, on the queue's clock, the input's hold ends.
//!
//! Invariant: the end of a hold grows with the rank (`ends_ns` is monotone),
//! so in a lane kept in rank order the inputs whose hold has ended are a
//! prefix, and the front's hold ends first.

use std::time::Duration;

/// How a queue holds inputs ranked by event time (see the module docs).
///
/// ```
/// use std::time::Duration;
/// use ferry_shard::Hold;
///
/// // The queue's clock started at UNIX time 1,000 ms.
/// let hold = Hold { lateness: Duration::from_millis(25), refuse_late: false, origin_unix_ns: 1_000_000_000 };
/// // An input of event time 1,010 ms is held until 1,035 ms: 35 ms on the queue's clock.
/// assert_eq!(hold.ends_ns(1_010), 35_000_000);
/// // One older than the origin has ended before the clock began.
/// assert_eq!(hold.ends_ns(900), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hold {
    /// How long past its event time an input is held.
    pub lateness: Duration,
    /// Whether an input whose hold has already ended when it arrives is
    /// refused [`Refused::Late`](crate::Refused::Late) (handed back, never
    /// sent) instead of going in its key's next batch.
    pub refuse_late: bool,
    /// The UNIX time, in nanoseconds, at which the queue's `now` is zero. A
    /// shard sets it when its clock starts; a test may leave it 0, so that
    /// `now` counts from the epoch.
    pub origin_unix_ns: i64,
}

impl Hold {
    /// A hold of `lateness`, late inputs not refused, on a clock whose zero
    /// is the UNIX epoch.
    pub fn new(lateness: Duration) -> Self {
        Self {
            lateness,
            refuse_late: false,
            origin_unix_ns: 0,
        }
    }

    /// When, on the queue's clock, the hold of an input ranked `at_ms`
    /// (event time, milliseconds since the UNIX epoch) ends: `at_ms +
    /// lateness`, less the origin, clamped to the clock's range.
    #[inline]
    pub fn ends_ns(&self, at_ms: i64) -> u64 {
        let lateness_ns = i128::try_from(self.lateness.as_nanos()).unwrap_or(i128::MAX);
        let ends = i128::from(at_ms) * 1_000_000 + lateness_ns - i128::from(self.origin_unix_ns);
        u64::try_from(ends.max(0)).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_grows_with_the_rank_and_saturates() {
        let hold = Hold {
            origin_unix_ns: 5_000_000,
            ..Hold::new(Duration::from_millis(2))
        };
        assert_eq!(hold.ends_ns(3), 0, "ended before the origin");
        assert_eq!(hold.ends_ns(4), 1_000_000);
        assert!(hold.ends_ns(4) <= hold.ends_ns(5));
        assert_eq!(hold.ends_ns(i64::MIN), 0);
        assert_eq!(Hold::new(Duration::MAX).ends_ns(i64::MAX), u64::MAX);
    }
}
