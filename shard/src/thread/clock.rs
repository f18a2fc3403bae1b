//! The shard's one clock: time since the shard started, never going
//! backwards from one reading to the next.
//!
//! Every `now` handed to the core comes from here. A phase that only needs
//! "about now" takes [`Clock::latest`], the last reading, which costs
//! nothing; a phase that stamps or measures takes [`Clock::read`]. Since
//! the latest reading is never older than any stamp given before it, the
//! core never sees time go backwards (`Lanes` asserts it).
//!
//! The time is the CPU's time-stamp counter scaled to nanoseconds
//! (`quanta`), read in a few instructions where `Instant::now` takes a
//! hundred: a shard reads it once a batch. `quanta` uses it only where it
//! is invariant (the same rate on every core, in every power state) and
//! falls back to the OS's monotonic clock otherwise. Calibrating the
//! counter against that clock takes from half a millisecond to 200 ms, once
//! per process, when the first shard starts.

use std::cell::Cell;
use std::sync::OnceLock;

use crate::value::nanos::Nanos;

/// The process's calibrated counter, shared by every shard.
fn source() -> &'static quanta::Clock {
    static SOURCE: OnceLock<quanta::Clock> = OnceLock::new();
    SOURCE.get_or_init(quanta::Clock::new)
}

/// A monotone clock for one shard thread.
#[derive(Debug)]
pub(crate) struct Clock {
    source: quanta::Clock,
    /// The counter's raw value when the clock started.
    origin: u64,
    /// The wall clock's reading (nanoseconds since the UNIX epoch) when the
    /// clock started: where an event time lies on this clock (`hold.rs`).
    origin_unix_ns: i64,
    latest: Cell<Nanos>,
}

impl Clock {
    /// A clock starting now.
    pub(crate) fn start() -> Self {
        let source = source().clone();
        let origin_unix_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
            });
        Self {
            origin: source.raw(),
            origin_unix_ns,
            source,
            latest: Cell::new(Nanos::ZERO),
        }
    }

    /// The UNIX time, in nanoseconds, at which this clock read zero. The
    /// two clocks may drift apart by the counter's error over a long run,
    /// which an event-time hold measured in milliseconds can bear.
    pub(crate) fn origin_unix_ns(&self) -> i64 {
        self.origin_unix_ns
    }

    /// Reads the time, and remembers it as the latest reading.
    #[inline]
    pub(crate) fn read(&self) -> Nanos {
        let elapsed = self.source.delta_as_nanos(self.origin, self.source.raw());
        let now = Nanos::from_u64(elapsed).max(self.latest.get());
        self.latest.set(now);
        now
    }

    /// The latest reading, without reading the time again.
    pub(crate) fn latest(&self) -> Nanos {
        self.latest.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_latest_reading_never_goes_back() {
        let clock = Clock::start();
        let first = clock.read();
        assert_eq!(clock.latest(), first);
        std::thread::sleep(Duration::from_millis(1));
        let second = clock.read();
        assert!(second >= first + Duration::from_millis(1));
        assert_eq!(clock.latest(), second);
    }
}
