//! The event-time scenario (`--disorder D`, with `--event-time LATENESS`
//! and `--refuse-late`): inputs carry an event time that lags their sending
//! by up to D, and each keyed system's writes are watched per key for
//! inputs that reach the store after one of a later event time.
//!
//! An input's value holds its event time (milliseconds since the UNIX
//! epoch) in its high bits and a counter in its low bits ([`input_at`]).
//! Each keyed system's batch function tells [`note_applied`] the inputs of
//! every write that succeeded; per key the latest event time applied is
//! kept, and an input below it is counted out of order. Ferry ranks inputs
//! by their event time, and with `--event-time` holds each for the
//! lateness ([`ferry::Order::event_time`]); the other systems keep arrival
//! order. The counts are the process's, one run at a time.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferry::Order;

/// Low bits of an input that count; the rest hold its event time.
const COUNTER_BITS: u32 = 22;

/// The disorder of the inputs made now, in ms (`u64::MAX`: no event time).
static DISORDER_MS: AtomicU64 = AtomicU64::new(u64::MAX);
static WATCHING: AtomicBool = AtomicBool::new(false);
static APPLIED: AtomicU64 = AtomicU64::new(0);
static OUT_OF_ORDER: AtomicU64 = AtomicU64::new(0);
/// A ferry engine's `admitted_late` and `refused_late` at the run's end
/// (`u64::MAX`: no engine told).
static ADMITTED_LATE: AtomicU64 = AtomicU64::new(u64::MAX);
static REFUSED_LATE: AtomicU64 = AtomicU64::new(u64::MAX);
/// Per key, the latest event time applied.
static LATEST: OnceLock<Vec<AtomicI64>> = OnceLock::new();

/// An input of event time `at_ms` (ms since the UNIX epoch), numbered
/// `counter` (its low bits only).
///
/// ```
/// use ferry_bench::scenarios::event_time::{event_ms_of, input_at};
///
/// let input = input_at(1_764_000_000_123, 9);
/// assert_eq!(event_ms_of(input), 1_764_000_000_123);
/// assert_eq!(input & 0xff, 9);
/// ```
pub fn input_at(at_ms: i64, counter: u64) -> u64 {
    ((at_ms.max(0) as u64) << COUNTER_BITS) | (counter & ((1 << COUNTER_BITS) - 1))
}

/// The event time an input of [`input_at`] carries.
pub fn event_ms_of(input: u64) -> i64 {
    (input >> COUNTER_BITS) as i64
}

/// The wall clock in ms since the UNIX epoch, rounded up: an event time
/// is never later than the moment it stands for by more than the lag drawn
/// (rounded down, a lag of 20 ms would reach almost 21).
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos().div_ceil(1_000_000) as i64)
}

/// How ferry's engines take the scenario's inputs: the hold, if any, and
/// whether late inputs are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ranking {
    lateness: Option<Duration>,
    refuse_late: bool,
}

static RANKING: Mutex<Option<Ranking>> = Mutex::new(None);

/// From now on, inputs carry an event time lagging by up to `disorder`
/// (`None`: plain counters, and none of the rest applies); ferry ranks them
/// by it, holds each for `lateness` if set, and refuses late ones with
/// `refuse_late`.
pub fn set_scenario(disorder: Option<Duration>, lateness: Option<Duration>, refuse_late: bool) {
    let ms = disorder.map_or(u64::MAX, |d| d.as_millis() as u64);
    DISORDER_MS.store(ms, Relaxed);
    let ranking = disorder.map(|_| Ranking {
        lateness,
        refuse_late,
    });
    *RANKING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = ranking;
}

/// The order (and `refuse_late`) a ferry engine takes in the scenario:
/// by event time, with the hold if one is set; `None` outside it.
pub fn ferry_order() -> Option<(Order<u64>, bool)> {
    let ranking = (*RANKING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()))?;
    let at = |input: &u64| event_ms_of(*input);
    let order = match ranking.lateness {
        Some(lateness) => Order::event_time(at, lateness),
        None => Order::by(at),
    };
    Some((order, ranking.refuse_late && ranking.lateness.is_some()))
}

/// Whether writes are being watched (a batch function that does not keep
/// its inputs keeps them then).
pub fn watching() -> bool {
    WATCHING.load(Relaxed)
}

/// The input numbered `counter` with an event time, if the scenario runs:
/// now, less a lag in `0..=disorder` drawn from the counter.
#[inline]
pub fn input_of(counter: u64) -> Option<u64> {
    let disorder_ms = DISORDER_MS.load(Relaxed);
    if disorder_ms == u64::MAX {
        return None;
    }
    let spread = counter.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
    let lag = spread % (disorder_ms + 1);
    Some(input_at(now_ms() - lag as i64, counter))
}

/// Starts (or stops) watching the writes of keys `0..keys`, from zero. The
/// first call fixes how many keys are watched for the process (`ferry-load`
/// runs one key range).
pub fn watch(on: bool, keys: u64) {
    WATCHING.store(false, Relaxed);
    if !on {
        return;
    }
    let latest = LATEST.get_or_init(|| (0..keys).map(|_| AtomicI64::new(i64::MIN)).collect());
    latest.iter().for_each(|at| at.store(i64::MIN, Relaxed));
    APPLIED.store(0, Relaxed);
    OUT_OF_ORDER.store(0, Relaxed);
    ADMITTED_LATE.store(u64::MAX, Relaxed);
    REFUSED_LATE.store(u64::MAX, Relaxed);
    WATCHING.store(true, Relaxed);
}

/// A keyed system's write of `inputs` for `key` succeeded: counts those
/// that reached the store after an input of a later event time.
#[inline]
pub fn note_applied(key: u64, inputs: &[u64]) {
    if !WATCHING.load(Relaxed) {
        return;
    }
    let Some(latest) = LATEST.get().and_then(|latest| latest.get(key as usize)) else {
        return;
    };
    let mut out_of_order = 0;
    for &input in inputs {
        let at = event_ms_of(input);
        if latest.fetch_max(at, Relaxed) > at {
            out_of_order += 1;
        }
    }
    APPLIED.fetch_add(inputs.len() as u64, Relaxed);
    OUT_OF_ORDER.fetch_add(out_of_order, Relaxed);
}

/// A ferry engine, at the end of its run, tells its inputs that arrived
/// after their hold had ended: admitted unheld, and refused `Late`.
pub fn note_engine(stats: &ferry::ShardStats) {
    ADMITTED_LATE.store(stats.admitted_late, Relaxed);
    REFUSED_LATE.store(stats.refused_late, Relaxed);
}

/// Inputs applied, and of those out of order per key, since [`watch`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Disorder {
    /// Inputs whose write succeeded.
    pub applied: u64,
    /// Of those, applied after an input of the same key with a later event
    /// time.
    pub out_of_order: u64,
    /// A ferry engine's inputs that arrived after their hold had ended:
    /// admitted unheld, and refused `Late` (`None` for another system).
    pub late: Option<(u64, u64)>,
}

/// The counts since [`watch`].
pub fn disorder() -> Disorder {
    let (admitted, refused) = (ADMITTED_LATE.load(Relaxed), REFUSED_LATE.load(Relaxed));
    Disorder {
        applied: APPLIED.load(Relaxed),
        out_of_order: OUT_OF_ORDER.load(Relaxed),
        late: (admitted != u64::MAX).then_some((admitted, refused)),
    }
}
