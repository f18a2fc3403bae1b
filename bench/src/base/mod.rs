//! What every other layer stands on: durations, CPU time, the timer and
//! scheduler settings of threads, and child processes and their lines.

pub mod children;
pub mod cpu;
pub mod duration;
pub mod sched;
pub mod timing;
