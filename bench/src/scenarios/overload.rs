//! The overload scenario: the store slows down mid-run (`--store-slowdown`)
//! and callers give up on inputs not answered in time (`--timeout`).
//!
//! What it measures, per system:
//!
//! - **goodput**: inputs answered with success per second (an answer always
//!   comes before its caller's timeout, or the caller has gone), before,
//!   during and after the slowdown;
//! - **waste**: inputs the store was sent after their caller had given up,
//!   and batches of which every input was such;
//! - **recovery**: how long after the store speeds up again goodput is back
//!   to nine tenths of what it was before the slowdown.
//!
//! To tell at the store whether an input's caller had given up, the input
//! carries its caller's deadline: with `--timeout`, an input's value is the
//! deadline (microseconds since [`epoch`]) in its high bits and a counter in
//! its low bits ([`input_until`]). The store's read-back sums inputs, which
//! works for any value.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::base::duration::{format_duration, parse_duration};

/// Goodput is counted per bucket of this length, by when the answer came.
pub const BUCKET: Duration = Duration::from_millis(100);

/// Low bits of an input that count; the rest hold the caller's deadline.
const COUNTER_BITS: u32 = 24;

/// Goodput back to this share of its level before the slowdown counts as
/// recovered.
const RECOVERED_SHARE: f64 = 0.9;

/// The instant deadlines are counted from: the first call's.
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// An input whose caller gives up at `deadline`, numbered `counter` (its
/// low bits only).
///
/// ```
/// use std::time::{Duration, Instant};
/// use ferry_bench::scenarios::overload::{deadline_of, input_until};
///
/// let deadline = Instant::now() + Duration::from_millis(50);
/// let input = input_until(deadline, 7);
/// let off = deadline_of(input).max(deadline) - deadline_of(input).min(deadline);
/// assert!(off < Duration::from_micros(1));
/// assert_eq!(input & 0xff, 7);
/// ```
pub fn input_until(deadline: Instant, counter: u64) -> u64 {
    let micros = deadline.saturating_duration_since(epoch()).as_micros() as u64;
    (micros << COUNTER_BITS) | (counter & ((1 << COUNTER_BITS) - 1))
}

/// The deadline carried by an input of [`input_until`].
pub fn deadline_of(input: u64) -> Instant {
    epoch() + Duration::from_micros(input >> COUNTER_BITS)
}

/// Whether the batch functions count inputs sent after their callers gave
/// up (only while inputs carry deadlines). The counts are the process's,
/// not a run's: one run at a time (as `ferry-load` runs them).
static WATCHING: AtomicBool = AtomicBool::new(false);
static SENT: AtomicU64 = AtomicU64::new(0);
static SENT_LATE: AtomicU64 = AtomicU64::new(0);
static BATCHES: AtomicU64 = AtomicU64::new(0);
static BATCHES_WASTED: AtomicU64 = AtomicU64::new(0);

/// Inputs sent to the store, and how many went after their caller had
/// given up, since the last [`take_waste`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waste {
    /// Inputs sent.
    pub sent: u64,
    /// Of those, sent after their caller's deadline.
    pub sent_late: u64,
    /// Batches sent.
    pub batches: u64,
    /// Batches all of whose inputs were sent late: whole round trips for
    /// nobody.
    pub batches_wasted: u64,
}

/// Turns the counting of [`note_sent`] on or off.
pub fn watch(on: bool) {
    WATCHING.store(on, Relaxed);
}

/// Every system's batch function calls this with the inputs it is about to
/// send: counts those whose caller has already given up.
#[inline]
pub fn note_sent(inputs: &[u64]) {
    if let Some(mut tally) = Tally::start() {
        inputs.iter().for_each(|&input| tally.add(input));
        tally.finish();
    }
}

/// [`note_sent`] for inputs seen one at a time: [`Tally::add`] each, then
/// [`Tally::finish`] the batch.
#[derive(Debug)]
pub struct Tally {
    now: Instant,
    sent: u64,
    late: u64,
}

impl Tally {
    /// A batch to count, if counting is on.
    #[inline]
    pub fn start() -> Option<Self> {
        WATCHING.load(Relaxed).then(|| Self {
            now: Instant::now(),
            sent: 0,
            late: 0,
        })
    }

    /// One input of the batch.
    pub fn add(&mut self, input: u64) {
        self.sent += 1;
        self.late += u64::from(deadline_of(input) <= self.now);
    }

    /// The batch is complete.
    pub fn finish(self) {
        SENT.fetch_add(self.sent, Relaxed);
        SENT_LATE.fetch_add(self.late, Relaxed);
        BATCHES.fetch_add(1, Relaxed);
        if self.late == self.sent {
            BATCHES_WASTED.fetch_add(1, Relaxed);
        }
    }
}

/// The counts since the last call, which starts them over.
pub fn take_waste() -> Waste {
    Waste {
        sent: SENT.swap(0, Relaxed),
        sent_late: SENT_LATE.swap(0, Relaxed),
        batches: BATCHES.swap(0, Relaxed),
        batches_wasted: BATCHES_WASTED.swap(0, Relaxed),
    }
}

/// `--store-slowdown FACTORx@AFTER+LENGTH`: the store's round trips take
/// `factor` times as long from `after` into the measured window, for
/// `length`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slowdown {
    /// How many times slower.
    pub factor: u32,
    /// From the start of the measured window to the slowdown.
    pub after: Duration,
    /// How long it lasts.
    pub length: Duration,
}

impl FromStr for Slowdown {
    type Err = String;

    /// ```
    /// use std::time::Duration;
    /// use ferry_bench::scenarios::overload::Slowdown;
    ///
    /// let slow: Slowdown = "10x@2s+1500ms".parse().unwrap();
    /// assert_eq!(slow, Slowdown { factor: 10, after: Duration::from_secs(2), length: Duration::from_millis(1500) });
    /// assert!("10@2s+1s".parse::<Slowdown>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Self, String> {
        let shape = || format!("`{text}`: expected FACTORx@AFTER+LENGTH, e.g. 10x@2s+2s");
        let (factor, rest) = text.split_once("x@").ok_or_else(shape)?;
        let (after, length) = rest.split_once('+').ok_or_else(shape)?;
        let factor: u32 = factor.parse().map_err(|_| shape())?;
        if factor < 1 {
            return Err(format!("`{text}`: the factor must be at least 1"));
        }
        Ok(Self {
            factor,
            after: parse_duration(after).map_err(|err| err.to_string())?,
            length: parse_duration(length).map_err(|err| err.to_string())?,
        })
    }
}

impl fmt::Display for Slowdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x@{}+{}",
            self.factor,
            format_duration(self.after),
            format_duration(self.length)
        )
    }
}

/// Goodput around a slowdown, from the answers counted per [`BUCKET`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Goodput {
    /// Inputs answered with success per second, in the measured window
    /// before the slowdown.
    pub before: f64,
    /// The same during the slowdown.
    pub during: f64,
    /// The same from its end to the end of the window.
    pub after: f64,
    /// From the slowdown's end to the first bucket whose goodput was back
    /// to nine tenths of `before`; `None` if it never was within the
    /// window.
    pub recovery: Option<Duration>,
}

impl Goodput {
    /// From `buckets` (answers per [`BUCKET`] since the run's start), a
    /// warm-up of `warmup`, a window of `window` and the slowdown.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_bench::scenarios::overload::{Goodput, Slowdown};
    ///
    /// // 100 ms buckets: 1 s warm-up, then 10 per bucket, 2 during the
    /// // slowdown, 5 in its first bucket after, then 10 again.
    /// let mut buckets = vec![10; 10];
    /// buckets.extend([10; 5].iter().chain(&[2; 5]).chain(&[5]).chain(&[10; 9]));
    /// let slow = Slowdown { factor: 10, after: Duration::from_millis(500), length: Duration::from_millis(500) };
    /// let goodput = Goodput::of(&buckets, Duration::from_secs(1), Duration::from_secs(2), slow);
    /// assert_eq!((goodput.before, goodput.during), (100.0, 20.0));
    /// assert_eq!(goodput.recovery, Some(Duration::from_millis(100)));
    /// ```
    pub fn of(buckets: &[u64], warmup: Duration, window: Duration, slow: Slowdown) -> Self {
        let index = |at: Duration| (at.as_nanos() / BUCKET.as_nanos()) as usize;
        let slow_from = warmup + slow.after;
        let slow_to = slow_from + slow.length;
        let (a, b, c, d) = (
            index(warmup),
            index(slow_from),
            index(slow_to),
            index(warmup + window),
        );
        let rate = |from: usize, to: usize| {
            let to = to.min(buckets.len());
            if to <= from {
                return 0.0;
            }
            let sum: u64 = buckets[from..to].iter().sum();
            sum as f64 / ((to - from) as f64 * BUCKET.as_secs_f64())
        };
        let before = rate(a, b);
        let per_bucket_before = before * BUCKET.as_secs_f64();
        let recovery = (c..d.min(buckets.len()))
            .find(|&i| buckets[i] as f64 >= RECOVERED_SHARE * per_bucket_before)
            .map(|i| BUCKET * (i - c) as u32);
        Self {
            before,
            during: rate(b, c),
            after: rate(c, d),
            recovery,
        }
    }
}
