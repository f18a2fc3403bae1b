//! What every other layer stands on: durations, CPU time, the timer and
//! scheduler settings of threads, and the lines of child processes.

pub mod child_lines;
pub mod cpu;
pub mod duration;
pub mod sched;
pub mod timing;
