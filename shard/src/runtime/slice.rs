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
//! The short slice has a price at light load. A shard that runs out of
//! work spins, calling `sched_yield`, and a yield gives way for about one
//! slice of virtual time: with 100 µs the spinning shard keeps a caller it
//! just answered on the same core waiting for tens of microseconds (the
//! engine bench's one-caller latency: p99 5 µs with the kernel's slice,
//! 30–50 µs with the short one). So the shard asks for the short slice
//! only while its rounds answer many inputs each, where being cut in the
//! middle of a round costs most ([`SliceChoice`]), and runs with the
//! kernel's own otherwise.
//!
//! The request is `sched_setattr` with the thread's own policy and nice
//! value and a `sched_runtime`, which kernels since 6.12 take as the slice
//! of a `SCHED_OTHER` or `SCHED_BATCH` thread (clamped to 100 µs–100 ms;
//! zero gives the kernel's own back); older kernels ignore it. The
//! thread's other settings are read first and written back unchanged.

#![allow(unsafe_code)]

use std::io;
use std::time::Duration;

/// The shortest slice Linux grants: it clamps shorter requests up to this.
pub(crate) const MIN_SCHED_SLICE: Duration = Duration::from_micros(100);

/// The longest slice Linux grants: it clamps longer requests down to this.
pub(crate) const MAX_SCHED_SLICE: Duration = Duration::from_millis(100);

/// How often a shard looks at how many inputs its rounds answer.
pub(crate) const LOOK_EVERY: Duration = Duration::from_millis(1);

/// Inputs answered per round (of the rounds that answered any, over one
/// `LOOK_EVERY`) from which a shard on the kernel's slice takes the short
/// one...
pub(crate) const SHORT_FROM: u64 = 8;

/// ...and below which a shard on the short slice gives it back.
pub(crate) const KERNEL_BELOW: u64 = 3;

/// The slice a shard's thread should run with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slice {
    /// The short slice it was configured with.
    Short,
    /// The kernel's own.
    Kernel,
}

/// Which slice a shard wants, from how many inputs its rounds answer: the
/// short one from `SHORT_FROM` inputs a round, the kernel's own again below
/// `KERNEL_BELOW` (the gap keeps it from switching to and fro), looked at
/// once per `LOOK_EVERY`. A window with no answers changes nothing. Pure:
/// the loop makes the system call ([`SliceChoice::switch`]).
#[derive(Debug)]
pub(crate) struct SliceChoice {
    /// The slice asked for, or `None` when there is nothing to switch
    /// (zero configured, or the kernel refused or ignored it).
    short: Option<Duration>,
    now: Slice,
    window_start: Duration,
    answered_before: u64,
    answered: u64,
    rounds: u64,
}

impl SliceChoice {
    /// Asks for `short` on the calling thread (zero: asks for nothing and
    /// never will). Returns the choice and what the kernel said.
    pub(crate) fn start(short: Duration) -> (Self, Option<io::Result<Option<Duration>>>) {
        let mut choice = Self {
            short: None,
            now: Slice::Kernel,
            window_start: Duration::ZERO,
            answered_before: 0,
            answered: 0,
            rounds: 0,
        };
        if short.is_zero() {
            return (choice, None);
        }
        let granted = ask_for_slice(short);
        if let Ok(Some(_)) = granted {
            choice.short = Some(short);
            choice.now = Slice::Short;
        }
        (choice, Some(granted))
    }

    /// After a round, at `now` on the shard's clock, with `answered` inputs
    /// answered since the shard started: the slice to switch to, if it
    /// should change.
    pub(crate) fn after_round(&mut self, now: Duration, answered: u64) -> Option<Slice> {
        self.short?;
        let this_round = answered.saturating_sub(self.answered_before);
        self.answered_before = answered;
        if this_round > 0 {
            self.rounds += 1;
            self.answered += this_round;
        }
        if now.saturating_sub(self.window_start) < LOOK_EVERY {
            return None;
        }
        self.window_start = now;
        let (rounds, answered) = (self.rounds, self.answered);
        (self.rounds, self.answered) = (0, 0);
        if rounds == 0 {
            return None;
        }
        let per_round = answered / rounds;
        let wanted = match self.now {
            Slice::Kernel if per_round >= SHORT_FROM => Slice::Short,
            Slice::Short if per_round < KERNEL_BELOW => Slice::Kernel,
            unchanged => unchanged,
        };
        (wanted != self.now).then_some(wanted)
    }

    /// Switches the calling thread to `slice`; a refusal ends switching.
    pub(crate) fn switch(&mut self, slice: Slice) {
        let Some(short) = self.short else {
            return;
        };
        let asked = match slice {
            Slice::Short => short,
            Slice::Kernel => Duration::ZERO,
        };
        match ask_for_slice(asked) {
            Ok(_) => self.now = slice,
            Err(_) => self.short = None,
        }
    }
}

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

/// Asks for `slice` as the calling thread's time slice (zero: the kernel's
/// own), keeping its policy and nice value. Returns the slice the kernel
/// reports afterwards, or `None` where it keeps no slice of its own for the
/// thread (a kernel before 6.12, or a real-time policy, which is left as
/// it is).
fn ask_for_slice(slice: Duration) -> io::Result<Option<Duration>> {
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

    const MS: Duration = Duration::from_millis(1);

    /// A choice that took the short slice, without asking the kernel.
    fn on_short() -> SliceChoice {
        SliceChoice {
            short: Some(MIN_SCHED_SLICE),
            now: Slice::Short,
            window_start: Duration::ZERO,
            answered_before: 0,
            answered: 0,
            rounds: 0,
        }
    }

    /// Feeds `rounds` rounds answering `each` inputs, spread over one
    /// `LOOK_EVERY` from `from`, to `choice`, switching as it says; returns
    /// the switches and the answered total after them.
    fn window(
        choice: &mut SliceChoice,
        from: Duration,
        total: &mut u64,
        rounds: u32,
        each: u64,
    ) -> Vec<Slice> {
        let mut switches = Vec::new();
        for round in 1..=rounds {
            *total += each;
            let at = from + LOOK_EVERY * round / rounds;
            if let Some(slice) = choice.after_round(at, *total) {
                choice.now = slice;
                switches.push(slice);
            }
        }
        switches
    }

    #[test]
    fn rounds_that_answer_few_give_the_short_slice_back_and_many_take_it_again() {
        let mut choice = on_short();
        let mut total = 0;
        assert_eq!(window(&mut choice, Duration::ZERO, &mut total, 50, 64), []);
        assert_eq!(choice.now, Slice::Short);
        assert_eq!(window(&mut choice, MS, &mut total, 50, 1), [Slice::Kernel]);
        assert_eq!(window(&mut choice, 2 * MS, &mut total, 50, 1), []);
        assert_eq!(
            window(&mut choice, 3 * MS, &mut total, 50, 64),
            [Slice::Short]
        );
        assert_eq!(choice.now, Slice::Short);
    }

    #[test]
    fn between_the_two_bounds_the_slice_stays_as_it_is() {
        let between = (KERNEL_BELOW + SHORT_FROM) / 2;
        let mut choice = on_short();
        let mut total = 0;
        assert_eq!(
            window(&mut choice, Duration::ZERO, &mut total, 50, between),
            []
        );
        assert_eq!(choice.now, Slice::Short);
        assert_eq!(window(&mut choice, MS, &mut total, 50, 1), [Slice::Kernel]);
        assert_eq!(window(&mut choice, 2 * MS, &mut total, 50, between), []);
        assert_eq!(choice.now, Slice::Kernel);
        assert_eq!(
            window(&mut choice, 3 * MS, &mut total, 50, SHORT_FROM),
            [Slice::Short]
        );
    }

    #[test]
    fn idle_rounds_neither_count_nor_switch() {
        let mut choice = on_short();
        let mut total = 0;
        // Many looks that answer nothing among few rounds of many answers:
        // the answering rounds decide.
        for step in 1..=100_u32 {
            let each = if step % 10 == 0 { 64 } else { 0 };
            total += each;
            assert_eq!(choice.after_round(MS * step / 100, total), None);
        }
        // A window with no answers at all keeps the slice.
        assert_eq!(window(&mut choice, MS, &mut total, 50, 0), []);
        assert_eq!(choice.now, Slice::Short);
    }

    #[test]
    fn it_decides_once_a_window() {
        let mut choice = on_short();
        let mut total = 0;
        for step in 0..99_u32 {
            total += 1;
            assert_eq!(choice.after_round(MS * step / 100, total), None);
        }
        assert_eq!(choice.after_round(MS, total + 1), Some(Slice::Kernel));
    }

    #[test]
    fn with_nothing_asked_there_is_nothing_to_choose() {
        let (mut choice, asked) = SliceChoice::start(Duration::ZERO);
        assert!(asked.is_none());
        assert_eq!(choice.now, Slice::Kernel);
        assert_eq!(choice.after_round(10 * MS, 1_000_000), None);
    }

    #[test]
    fn the_attribute_struct_is_the_kernels_first_version() {
        assert_eq!(ATTR_SIZE, 56);
    }

    /// (Whether the kernel keeps a slice per thread at all is checked
    /// from its version in `engine/tests/slice.rs`.)
    #[test]
    fn a_thread_gets_the_slice_it_asks_for_clamped_and_keeps_its_nice() {
        std::thread::spawn(|| {
            // SAFETY: plain system call; `who` 0 is the calling thread on Linux.
            assert_eq!(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 3) }, 0);
            assert_eq!(this_thread().unwrap().nice, 3);
            let short = ask_for_slice(Duration::from_micros(300)).unwrap();
            let clamped = ask_for_slice(Duration::from_micros(10)).unwrap();
            let kernels = ask_for_slice(Duration::ZERO).unwrap();
            if short.is_some() {
                assert_eq!(short, Some(Duration::from_micros(300)));
                assert_eq!(clamped, Some(MIN_SCHED_SLICE));
                assert!(kernels.unwrap() > MIN_SCHED_SLICE);
            } else {
                // A kernel that keeps no slice per thread says so each time.
                assert_eq!((clamped, kernels), (None, None));
            }
            assert_eq!(this_thread().unwrap().nice, 3);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_that_asks_nothing_keeps_the_kernels_slice() {
        std::thread::spawn(|| {
            // The base slice (0.7 ms, scaled up with the CPUs), not ours;
            // none where the kernel keeps no slice per thread.
            if let Some(slice) = slice_of(&this_thread().unwrap()) {
                assert!(slice > MIN_SCHED_SLICE);
            }
        })
        .join()
        .unwrap();
    }
}
