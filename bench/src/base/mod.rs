//! What every other layer stands on: durations, CPU time, the timer and
//! scheduler settings of threads, and the lines of child processes.

use std::time::Duration;

pub mod child_lines;
pub mod cpu;
pub mod duration;
pub mod sched;
pub mod timing;

/// How long connecting to a server on loopback (a real store, or the proxy's
/// upstream) may take before it is given up.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
