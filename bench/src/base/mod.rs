//! What every other layer stands on: durations, CPU time, the timer and
//! scheduler settings of threads, and child processes and their lines.

use std::time::Duration;

use hdrhistogram::Histogram;

pub mod children;
pub mod cpu;
pub mod duration;
pub mod sched;
pub mod timing;

/// How long connecting to a server on loopback (a real store, or the proxy's
/// upstream) may take before it is given up.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A latency histogram: 1 ns to 1 hour, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// `mutex` locked, also after a holder panicked: the stores take what it
/// guards as that holder left it.
pub fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// The tokio runtime a real store's own requests (set-up, reset, read-back,
/// clean-up) run on: one thread, this one, only while they run.
pub fn admin_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("could not start a tokio runtime for the store: {err}"))
}
