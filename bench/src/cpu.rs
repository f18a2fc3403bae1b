//! CPU time used by this process, all threads together: shards, runtimes,
//! generators and the store. Divided by the inputs a run completed, it gives
//! a cost per input that stays meaningful when the machine is shared and
//! throughput is not.

use std::time::Duration;

/// CPU time the process has used since it started (user and system).
pub fn process_cpu_time() -> Duration {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid, writable `timespec` that outlives the call;
    // the clock id is a constant the kernel knows.
    let result = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut time) };
    if result != 0 {
        return Duration::ZERO;
    }
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_while_working() {
        let before = process_cpu_time();
        let mut x = 0_u64;
        while process_cpu_time() - before < Duration::from_millis(5) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(process_cpu_time() > before);
    }
}
