//! How a shard with nothing to do waits for its next event, and the two
//! wakers that reach it from other threads.
//!
//! # Three stages
//!
//! By how long the shard has had nothing to do (since its last work):
//!
//! 1. **Spin** (`spin_before_park`): look again at once, calling
//!    `sched_yield` between looks. An event is seen within microseconds and
//!    costs nobody a wake-up; the price is CPU time, but only time no other
//!    thread of that CPU asked for.
//! 2. **Doze** (`doze_before_park`): announce sleep through the intake
//!    (the same handshake as parking, so no wake-up is lost) and block the
//!    thread on a futex, for at most [`DOZE_LOOK_EVERY`] or until the next
//!    lane deadline, then give glommio a turn and look again. A dozing
//!    shard uses no CPU, and a caller or a batch answer wakes it with one
//!    `futex` call. Glommio does not run while its thread dozes, so the
//!    timers and I/O of *other* tasks on the shard (its own deadlines are
//!    waited for exactly) are looked at every `DOZE_LOOK_EVERY`.
//! 3. **Park**: hand the wait to glommio, which sleeps in `io_uring_enter`
//!    until an event. Nothing runs until something happens, but each sleep
//!    costs glommio a process-wide memory barrier (`membarrier`, an
//!    interrupt to every CPU running a thread of the process) and each
//!    wake-up an `eventfd` write and an `io_uring` round, far more than a
//!    futex on a virtual machine.
//!
//! A shard busy on and off (a store answering every few hundred
//! microseconds, say) thus stays in the first two stages and never pays
//! for parking; an idle one parks after `spin + doze`.

use std::sync::Arc;
use std::task::{Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use crate::intake::Intake;

/// The longest a shard dozes in one go, so that glommio (timers and I/O of
/// other tasks on the thread) gets a turn at least this often.
pub const DOZE_LOOK_EVERY: Duration = Duration::from_micros(50);

/// What an idle shard does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Yield the CPU once and look again.
    Spin,
    /// Block on a futex for at most this long, then look again.
    Doze(Duration),
    /// Let glommio park the thread until an event.
    Park,
}

/// How long each stage lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdlePolicy {
    /// Spin while idle for less than this.
    pub spin: Duration,
    /// Then doze for this long.
    pub doze: Duration,
}

impl IdlePolicy {
    /// Whether spinning can pay for a shard with `in_flight` batches out,
    /// whose batches typically take `typical_batch`: when nothing is in
    /// flight (the next event may be a caller's input, any moment now), or
    /// when batches come back within the spin. A shard that waits for a
    /// store further away goes straight to the doze: spinning would not see
    /// the answer come, and a CPU that spins never looks idle to the
    /// scheduler, which then leaves the threads waiting for a CPU where
    /// they are instead of moving one here.
    pub(crate) fn spin_pays(&self, in_flight: usize, typical_batch: Duration) -> bool {
        in_flight == 0 || typical_batch < self.spin
    }

    /// The stage for a shard idle for `idle_for`, whose next lane deadline
    /// (if any) is `due_in` from now; without `spin`, the spin stage is
    /// dozed instead (the shard still parks at `spin + doze`).
    pub(crate) fn stage(&self, idle_for: Duration, due_in: Option<Duration>, spin: bool) -> Stage {
        if idle_for < self.spin && spin {
            return Stage::Spin;
        }
        let doze_ends = self.spin.saturating_add(self.doze);
        if idle_for >= doze_ends {
            return Stage::Park;
        }
        let mut wait = (doze_ends - idle_for).min(DOZE_LOOK_EVERY);
        if let Some(due_in) = due_in {
            wait = wait.min(due_in);
        }
        Stage::Doze(wait)
    }
}

/// How long a shard's batches take, smoothed: each batch moves the estimate
/// an eighth of the way to its own time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BatchTime {
    typical_ns: u64,
}

impl BatchTime {
    /// Counts a batch that took `took`, from its start to its outcome.
    pub(crate) fn record(&mut self, took: Duration) {
        let took_ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.typical_ns = self.typical_ns - self.typical_ns / 8 + took_ns / 8;
    }

    /// The estimate (zero before any batch).
    pub(crate) fn typical(&self) -> Duration {
        Duration::from_nanos(self.typical_ns)
    }
}

/// Wakes a dozing shard: unparks its thread. A wake that comes before the
/// shard blocks is kept by the thread's park token, so it is not lost.
#[derive(Debug)]
pub(crate) struct Alarm(Thread);

impl Alarm {
    /// The alarm of the calling thread.
    pub(crate) fn for_this_thread() -> Waker {
        Waker::from(Arc::new(Alarm(std::thread::current())))
    }
}

impl Wake for Alarm {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// The waker of the shard's batch futures: rings the shard's intake, so
/// an answer that arrives on another thread reaches the shard whether it
/// is running (one store and one load), dozing or parked.
pub(crate) struct Bell<T>(Arc<Intake<T>>);

impl<T: Send + 'static> Bell<T> {
    /// A waker that rings `intake`.
    pub(crate) fn waker(intake: Arc<Intake<T>>) -> Waker {
        Waker::from(Arc::new(Bell(intake)))
    }
}

impl<T: Send> Wake for Bell<T> {
    fn wake(self: Arc<Self>) {
        self.0.ring();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.ring();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn stages_follow_each_other_by_idle_time() {
        let policy = IdlePolicy {
            spin: 20 * US,
            doze: 1000 * US,
        };
        assert_eq!(policy.stage(Duration::ZERO, None, true), Stage::Spin);
        assert_eq!(policy.stage(19 * US, None, true), Stage::Spin);
        assert_eq!(
            policy.stage(20 * US, None, true),
            Stage::Doze(DOZE_LOOK_EVERY)
        );
        assert_eq!(policy.stage(1000 * US, None, true), Stage::Doze(20 * US));
        assert_eq!(policy.stage(1020 * US, None, true), Stage::Park);
        assert_eq!(
            policy.stage(Duration::from_secs(9), None, true),
            Stage::Park
        );
    }

    #[test]
    fn a_doze_ends_by_the_next_deadline() {
        let policy = IdlePolicy {
            spin: Duration::ZERO,
            doze: Duration::from_millis(2),
        };
        assert_eq!(
            policy.stage(Duration::ZERO, Some(7 * US), true),
            Stage::Doze(7 * US)
        );
        assert_eq!(
            policy.stage(Duration::ZERO, Some(Duration::ZERO), true),
            Stage::Doze(Duration::ZERO)
        );
    }

    #[test]
    fn zero_durations_skip_their_stage() {
        let park_at_once = IdlePolicy {
            spin: Duration::ZERO,
            doze: Duration::ZERO,
        };
        assert_eq!(park_at_once.stage(Duration::ZERO, None, true), Stage::Park);
        let spin_then_park = IdlePolicy {
            spin: 50 * US,
            doze: Duration::ZERO,
        };
        assert_eq!(spin_then_park.stage(49 * US, None, true), Stage::Spin);
        assert_eq!(spin_then_park.stage(50 * US, None, true), Stage::Park);
        let never_park = IdlePolicy {
            spin: Duration::MAX,
            doze: Duration::MAX,
        };
        assert_eq!(
            never_park.stage(Duration::from_secs(3600), None, true),
            Stage::Spin
        );
    }

    #[test]
    fn without_spin_the_shard_dozes_from_its_last_work_and_parks_on_time() {
        let policy = IdlePolicy {
            spin: 50 * US,
            doze: 100 * US,
        };
        assert_eq!(
            policy.stage(Duration::ZERO, None, false),
            Stage::Doze(DOZE_LOOK_EVERY)
        );
        assert_eq!(policy.stage(120 * US, None, false), Stage::Doze(30 * US));
        assert_eq!(policy.stage(150 * US, None, false), Stage::Park);
    }

    #[test]
    fn spinning_pays_with_nothing_in_flight_or_a_store_within_the_spin() {
        let policy = IdlePolicy {
            spin: 50 * US,
            doze: Duration::from_millis(2),
        };
        assert!(policy.spin_pays(0, Duration::from_millis(1)));
        assert!(policy.spin_pays(3, 10 * US));
        assert!(!policy.spin_pays(3, 50 * US));
        assert!(!policy.spin_pays(1, Duration::from_millis(1)));
    }

    #[test]
    fn the_batch_time_follows_recent_batches() {
        let mut took = BatchTime::default();
        assert_eq!(took.typical(), Duration::ZERO);
        for _ in 0..100 {
            took.record(Duration::from_millis(2));
        }
        let settled = took.typical();
        assert!(
            settled > Duration::from_micros(1_990) && settled <= Duration::from_millis(2),
            "{settled:?}"
        );
        // A run of instant batches brings it down within a few dozen.
        for _ in 0..40 {
            took.record(Duration::ZERO);
        }
        assert!(took.typical() < 50 * US, "{:?}", took.typical());
        took.record(Duration::MAX);
        assert!(took.typical() >= Duration::from_nanos(u64::MAX / 8));
    }

    /// Counts its wakes.
    #[derive(Default)]
    struct Counter(std::sync::atomic::AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_bell_wakes_a_sleeping_shard_once_and_an_awake_one_never() {
        let intake = Arc::new(Intake::<u32>::new(4));
        let bell = Bell::waker(Arc::clone(&intake));
        let counter = Arc::new(Counter::default());
        let shard_waker = Waker::from(Arc::clone(&counter));
        let wakes = || counter.0.load(std::sync::atomic::Ordering::SeqCst);

        // Awake: a ring is recorded, nobody is woken.
        bell.wake_by_ref();
        assert_eq!(wakes(), 0);
        assert!(
            !intake.prepare_sleep(&shard_waker, false, false),
            "a ring not yet taken keeps the shard up"
        );
        intake.awake();
        assert!(intake.take_rung());
        assert!(!intake.take_rung(), "a ring is taken once");

        // Asleep: rings from another thread wake it exactly once.
        assert!(intake.prepare_sleep(&shard_waker, false, false));
        std::thread::spawn(move || {
            bell.wake_by_ref();
            bell.wake_by_ref();
        })
        .join()
        .unwrap();
        assert_eq!(wakes(), 1);
        intake.awake();
        assert!(intake.take_rung());
    }
}
