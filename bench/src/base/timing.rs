//! How precisely the store thread (and an open-loop generator) wakes up.
//!
//! Two things stand between a thread's sleep and its wake-up on time:
//! - the *timer slack*: Linux may end a sleep up to 50 µs late (by default)
//!   to batch wake-ups. [`lower_timer_slack`] brings it down to 1 µs.
//! - the CPU: on a busy machine a woken thread waits for a core. The store
//!   stands for another machine, so its timing should depend as little as
//!   possible on how busy this one is; [`raise_priority`] gives its thread
//!   the highest normal priority (nice -20), so the scheduler runs it soon
//!   after it wakes. (A real-time class was tried and rejected: a real-time
//!   thread that waits on a lock held by a preempted thread of its core can
//!   stall for most of a second.)

/// Timer slack asked for, in nanoseconds.
const TIMER_SLACK_NS: libc::c_ulong = 1_000;

/// The nice value asked for (the highest normal priority).
const NICE: libc::c_int = -20;

/// Asks the kernel to wake the calling thread within about a microsecond of
/// the time it asks for. Returns whether it worked; if not, sleeps end up to
/// 50 µs later than asked.
pub fn lower_timer_slack() -> bool {
    // SAFETY: prctl(PR_SET_TIMERSLACK, n) takes plain integers, reads and
    // writes no memory of ours, and only changes the calling thread's slack.
    let result = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0) };
    result == 0
}

/// Raises the calling thread to nice -20. Returns whether it worked (it
/// needs `CAP_SYS_NICE`, e.g. root); if not, the thread keeps its priority.
pub fn raise_priority() -> bool {
    // SAFETY: gettid and setpriority take and return plain integers and
    // touch no memory of ours; on Linux, setpriority on a thread id changes
    // that thread only.
    let result = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, NICE)
    };
    result == 0
}
