//! Asking Linux for a short time slice on the shard's thread.
//!
//! A shard that shares its core with its callers wakes them as it answers.
//! Under Linux's EEVDF scheduler a woken thread whose virtual deadline is
//! earlier than the running one's takes the CPU at once, so with the
//! default slice (0.7–3 ms, against the shard's few microseconds a round)
//! a caller woken by the round's first answer preempts the shard in the
//! middle of the round, runs until it has nothing left, blocks, and hands
//! the core back for the next answer: one pair of context switches every
//! few inputs. A thread that asks for a shorter slice gets earlier
//! deadlines: the caller it wakes then waits until the shard yields at the
//! end of its round and finds every answer of the round ready. The share of
//! CPU each thread gets stays the same; a shard that is busy for long is
//! preempted at shorter intervals.
//!
//! The request is `sched_setattr` with the thread's own policy and nice
//! value and a `sched_runtime`, which kernels since 6.12 take as the slice
//! of a `SCHED_OTHER` or `SCHED_BATCH` thread (clamped to 100 µs–100 ms);
//! older kernels ignore it. The thread's other settings are read first and
//! written back unchanged.

#![allow(unsafe_code)]

use std::io;
use std::time::Duration;

/// The shortest slice Linux grants: it clamps shorter requests up to this.
pub const MIN_SCHED_SLICE: Duration = Duration::from_micros(100);

/// The longest slice Linux grants: it clamps longer requests down to this.
pub const MAX_SCHED_SLICE: Duration = Duration::from_millis(100);

/// `SCHED_FLAG_RESET_ON_FORK`, the one flag read back that is written again.
const RESET_ON_FORK: u64 = 0x01;

/// `struct sched_attr` of `<linux/sched/types.h>`, first version (56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

const ATTR_SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;

/// Asks for `slice` as the calling thread's time slice, keeping its policy
/// and nice value. Returns the slice the kernel reports afterwards, or
/// `None` where it keeps no slice of its own for the thread (a kernel
/// before 6.12, or a real-time policy, which is left as it is).
pub(crate) fn ask_for_slice(slice: Duration) -> io::Result<Option<Duration>> {
    let mut attr = this_thread()?;
    if attr.policy != libc::SCHED_OTHER as u32 && attr.policy != libc::SCHED_BATCH as u32 {
        return Ok(None);
    }
    attr.size = ATTR_SIZE;
    attr.flags &= RESET_ON_FORK;
    attr.runtime = u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX);
    // SAFETY: `attr` is a valid, initialised `sched_attr` of `size` bytes
    // that outlives the call; pid 0 is the calling thread; the kernel only
    // reads it.
    let set = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if set != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(slice_of(&this_thread()?))
}

/// A fair thread's `sched_runtime`, which kernels since 6.12 fill in with
/// its slice; zero (older kernels) means none is known.
fn slice_of(attr: &SchedAttr) -> Option<Duration> {
    (attr.runtime > 0).then(|| Duration::from_nanos(attr.runtime))
}

/// The calling thread's scheduling attributes.
fn this_thread() -> io::Result<SchedAttr> {
    let mut attr = SchedAttr::default();
    // SAFETY: `attr` is writable for `ATTR_SIZE` bytes, the size passed;
    // pid 0 is the calling thread; the kernel writes at most that many.
    let got = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut SchedAttr,
            ATTR_SIZE,
            0,
        )
    };
    if got != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(attr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this kernel keeps a slice per thread (Linux 6.12 and later).
    fn kernel_has_custom_slices() -> bool {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut numbers = release
            .split(|c: char| !c.is_ascii_digit())
            .map(|part| part.parse::<u32>().unwrap_or(0));
        let major = numbers.next().unwrap_or(0);
        let minor = numbers.next().unwrap_or(0);
        (major, minor) >= (6, 12)
    }

    #[test]
    fn the_attribute_struct_is_the_kernels_first_version() {
        assert_eq!(ATTR_SIZE, 56);
    }

    #[test]
    fn a_thread_gets_the_slice_it_asks_for_clamped_and_keeps_its_nice() {
        std::thread::spawn(|| {
            // SAFETY: plain system call; `who` 0 is the calling thread on Linux.
            assert_eq!(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 3) }, 0);
            assert_eq!(this_thread().unwrap().nice, 3);
            let short = ask_for_slice(Duration::from_micros(300)).unwrap();
            let clamped = ask_for_slice(Duration::from_micros(10)).unwrap();
            if kernel_has_custom_slices() {
                assert_eq!(short, Some(Duration::from_micros(300)));
                assert_eq!(clamped, Some(MIN_SCHED_SLICE));
                assert_eq!(slice_of(&this_thread().unwrap()), Some(MIN_SCHED_SLICE));
            } else {
                assert_eq!(short, None);
            }
            assert_eq!(this_thread().unwrap().nice, 3);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_that_asks_nothing_keeps_the_kernels_slice() {
        std::thread::spawn(|| {
            let slice = slice_of(&this_thread().unwrap());
            if kernel_has_custom_slices() {
                // The base slice (0.7 ms, scaled up with the CPUs), not ours.
                assert!(slice.unwrap() > MIN_SCHED_SLICE);
            }
        })
        .join()
        .unwrap();
    }
}
