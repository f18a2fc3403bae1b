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
//!    thread on a futex until the next look or the next lane deadline,
//!    then give the runtime (glommio) a turn and look again. The first look
//!    comes after [`DOZE_LOOK_EVERY`], each next one after as long again as
//!    the shard has been idle: 7 looks span a 2 ms doze. A dozing shard
//!    uses no CPU, and a caller or a batch answer wakes it with one `futex`
//!    call. The runtime does not run while its thread dozes, so how often
//!    the shard looks depends on what might wait for the runtime
//!    ([`Looks`]): every `DOZE_LOOK_EVERY` while tasks spawned on the shard
//!    are alive, growing while batches are in flight, never with neither.
//!    Its own deadlines are waited for exactly.
//! 3. **Park**: hand the wait to the runtime (glommio), which sleeps until
//!    an event; glommio sleeps in `io_uring_enter`. Nothing runs until
//!    something happens, but with glommio each sleep costs a process-wide
//!    memory barrier (`membarrier`, an interrupt to every CPU running a
//!    thread of the process) and each wake-up an `eventfd` write and an
//!    `io_uring` round, far more than a futex on a virtual machine.
//!
//! A shard busy on and off (a store answering every few hundred
//! microseconds, say) thus stays in the first two stages and never pays
//! for parking; an idle one parks after `spin + doze`.
//!
//! Which stages run depends on what the shard waits for ([`Awaiting`]):
//! with batches out to a store further away than the spin, it does not
//! spin (it dozes from its last work, for `doze`); with batches that the
//! runtime (glommio) wakes (their timers or I/O), it does not doze (it
//! spins, then parks), since the runtime would not run while the thread
//! blocks; and it spins for those events only while a ledger of its recent
//! gaps says the spin saves more than it costs ([`SpinOdds`]), else it
//! parks at once.

use std::cell::Cell;
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use crate::thread::intake::Intake;
use crate::value::nanos::nanos;

/// How long a shard dozes before its first look: the runtime (glommio), with
/// the timers and I/O of the thread's other tasks, gets a turn after this
/// long, then after as long again as the shard has been idle; every this
/// long while tasks spawned on the shard are alive.
pub(crate) const DOZE_LOOK_EVERY: Duration = Duration::from_micros(50);

/// How often a dozing shard looks again, giving the runtime (glommio) a
/// turn: its thread does not run the runtime while it dozes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Looks {
    /// Every [`DOZE_LOOK_EVERY`]: tasks spawned on the shard are alive,
    /// whose timers and I/O the runtime serves.
    Often,
    /// After `DOZE_LOOK_EVERY`, then after as long again as the shard has
    /// been idle: batches are in flight, which might await the runtime's
    /// timers or I/O (once one is seen to, the shard does not doze at all:
    /// [`Awaiting::Runtime`]).
    Growing,
    /// Not before the doze ends or the next deadline: nothing on the thread
    /// waits for the runtime (no batch in flight, no task spawned on it).
    Never,
}

/// What an idle shard does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Yield the CPU once and look again.
    Spin,
    /// Block on a futex for at most this long, then look again.
    Doze(Duration),
    /// Let the runtime (glommio) park the thread until an event.
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
    /// What a shard with `in_flight` batches out, whose batches typically
    /// take `typical_batch`, is waiting for; `runtime_wakes` says whether a
    /// batch was lately woken on the shard's own thread by the runtime
    /// (glommio): by its reactor, for a timer or I/O the batch awaits, or by
    /// a task of the thread.
    ///
    /// `odds` scores the recent idle gaps spent awaiting the runtime with
    /// batches in flight: once a spin there costs more than it saves, such
    /// a shard parks at once ([`Awaiting::RuntimeLater`]).
    pub(crate) fn awaiting(
        &self,
        in_flight: usize,
        typical_batch: Duration,
        runtime_wakes: bool,
        odds: SpinOdds,
    ) -> Awaiting {
        if runtime_wakes && in_flight > 0 && !odds.pays() {
            Awaiting::RuntimeLater
        } else if runtime_wakes {
            Awaiting::Runtime
        } else if in_flight == 0 || typical_batch < self.spin {
            Awaiting::Soon
        } else {
            Awaiting::Elsewhere
        }
    }

    /// The stage for a shard idle for `idle_for`, whose next lane deadline
    /// (if any) is `due_in` from now.
    pub(crate) fn stage(
        &self,
        idle_for: Duration,
        due_in: Option<Duration>,
        awaiting: Awaiting,
        looks: Looks,
    ) -> Stage {
        let spins = matches!(awaiting, Awaiting::Soon | Awaiting::Runtime);
        if idle_for < self.spin && spins {
            return Stage::Spin;
        }
        // A skipped spin is not dozed instead: `doze` is the doze's length
        // whatever came before it (so zero still means no doze).
        let doze_ends = match awaiting {
            Awaiting::Soon => self.spin.saturating_add(self.doze),
            Awaiting::Elsewhere => self.doze,
            Awaiting::Runtime | Awaiting::RuntimeLater => return Stage::Park,
        };
        if idle_for >= doze_ends {
            return Stage::Park;
        }
        // Growing looks: the next comes after as long again as the shard
        // has been idle, so a few span a long doze, where a look every
        // `DOZE_LOOK_EVERY` would wake the thread dozens of times for
        // nothing.
        let next_look = match looks {
            Looks::Often => DOZE_LOOK_EVERY,
            Looks::Growing => DOZE_LOOK_EVERY.max(idle_for),
            Looks::Never => Duration::MAX,
        };
        let mut wait = (doze_ends - idle_for).min(next_look);
        if let Some(due_in) = due_in {
            wait = wait.min(due_in);
        }
        Stage::Doze(wait)
    }
}

/// What an idle shard is waiting for, which decides its stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Awaiting {
    /// Something that may come any moment: nothing is in flight (the next
    /// event is a caller's input), or batches come back within the spin.
    /// Spin, doze, park.
    Soon,
    /// Answers from other threads, further away than the spin. Spinning
    /// would not see one come, and a CPU that spins never looks idle to the
    /// scheduler, which then keeps threads waiting for a CPU off it: doze
    /// from the start, then park.
    Elsewhere,
    /// Events the runtime (glommio) delivers on this thread (the batches'
    /// timers or I/O): the runtime must keep running, which it does not
    /// while the thread dozes. Spin (each look gives the runtime a turn),
    /// then park.
    Runtime,
    /// The same events, which have lately come later than the spin (a
    /// store's answers over a socket, say): a spin would mostly end in the
    /// park anyway, its CPU time spent for nothing, so park at once.
    RuntimeLater,
}

impl Awaiting {
    /// Whether a wait in this state scores its gap in [`SpinOdds`]: one
    /// for the runtime's events, spinning or not.
    pub(crate) fn scores_gaps(self) -> bool {
        matches!(self, Awaiting::Runtime | Awaiting::RuntimeLater)
    }
}

/// Whether spinning for the runtime's events (batches in flight, woken by
/// the runtime) has been paying for itself lately: a ledger of what the
/// spin would have saved and cost over the recent gaps.
///
/// A gap that ends within the spin (a hit) saves a park and its wake-up,
/// [`SpinOdds::WAKE_COST`] of CPU, and costs the gap's own length spent
/// looking. A gap longer than the spin (a miss) costs the whole spin, and
/// the park anyway. The shard spins while the ledger is not negative: when
/// events come a few microseconds apart, or nearly always within the spin.
/// Store answers over a socket, tens of microseconds apart and some far
/// later (a commit's `fsync`), turn it off: each spin there mostly burned
/// CPU time the store's and the callers' threads of the same CPUs wanted,
/// and then parked.
///
/// Gaps are scored whether the shard spun or parked for them, so a spin
/// turned off comes back once events come close together again. Only these
/// waits are scored: a shard with nothing in flight waits for its callers,
/// whose next input a spin catches at light load, when one caller's
/// latency is all there is to measure, and a preempted thread's burst of
/// long gaps must not take that spin away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SpinOdds {
    /// Nanoseconds saved minus spent, within `±BOUND_SPINS` spins.
    ledger_ns: i64,
}

impl SpinOdds {
    /// The CPU time a park and its wake-up cost the shard's CPUs: the
    /// runtime's wait call, the waker's call, two context switches (on
    /// the tokio runtime; glommio's park costs more).
    pub(crate) const WAKE_COST: Duration = Duration::from_micros(10);
    /// The ledger's bounds, in spins: a change of load is followed within
    /// a few gaps.
    const BOUND_SPINS: i64 = 4;

    /// Counts an idle gap of `gap` (from the shard's last work to its next
    /// event), for a spin of `spin`.
    pub(crate) fn gap(&mut self, gap: Duration, spin: Duration) {
        // Saturating: a spin set to `Duration::MAX` (look for ever) must
        // neither wrap negative nor invert the bounds.
        let signed = |time: Duration| i64::try_from(nanos(time)).unwrap_or(i64::MAX);
        let (gap, spin) = (signed(gap), signed(spin));
        let step = if gap < spin {
            signed(Self::WAKE_COST) - gap
        } else {
            -spin
        };
        let bound = spin.saturating_mul(Self::BOUND_SPINS);
        self.ledger_ns = self.ledger_ns.saturating_add(step).clamp(-bound, bound);
    }

    /// Whether the shard should spin for the runtime's events.
    pub(crate) fn pays(&self) -> bool {
        self.ledger_ns >= 0
    }
}

/// How long after a batch was last woken by the runtime (glommio) the shard
/// still counts on the runtime's events.
pub(crate) const RUNTIME_WAKE_MEMORY: Duration = Duration::from_millis(10);

/// Where the shard's thread is, for telling the runtime's wake-ups apart.
const NOT_A_SHARD: u8 = 0;
/// In the shard's loop: a ring here is the loop's own doing (a batch that
/// woke another while polled, or `FuturesUnordered` asking to be polled
/// again after a long turn), not an event from outside.
const IN_LOOP: u8 = 1;
/// Out of the loop (the runtime's turn, or parked): a ring here comes from
/// the reactor of the runtime (glommio), for a timer or I/O a batch awaits,
/// or from another task.
const OUT_OF_LOOP: u8 = 2;
/// Rung while out of the loop.
const RUNG_OUT_OF_LOOP: u8 = 3;

thread_local! {
    static WHERE: Cell<u8> = const { Cell::new(NOT_A_SHARD) };
}

/// The shard's loop resumes on this thread; returns whether a bell rang
/// on it while the loop was out (see [`leave_loop`]).
pub(crate) fn enter_loop() -> bool {
    WHERE.with(|place| place.replace(IN_LOOP) == RUNG_OUT_OF_LOOP)
}

/// The shard's loop hands this thread to the runtime (glommio), or parks.
pub(crate) fn leave_loop() {
    WHERE.with(|place| {
        if place.get() == IN_LOOP {
            place.set(OUT_OF_LOOP);
        }
    });
}

fn note_ring_here() {
    WHERE.with(|place| {
        if place.get() == OUT_OF_LOOP {
            place.set(RUNG_OUT_OF_LOOP);
        }
    });
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
        let took_ns = nanos(took);
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
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        note_ring_here();
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
        assert_eq!(
            policy.stage(Duration::ZERO, None, Awaiting::Soon, Looks::Growing),
            Stage::Spin
        );
        assert_eq!(
            policy.stage(19 * US, None, Awaiting::Soon, Looks::Growing),
            Stage::Spin
        );
        assert_eq!(
            policy.stage(20 * US, None, Awaiting::Soon, Looks::Growing),
            Stage::Doze(DOZE_LOOK_EVERY)
        );
        assert_eq!(
            policy.stage(1000 * US, None, Awaiting::Soon, Looks::Growing),
            Stage::Doze(20 * US)
        );
        assert_eq!(
            policy.stage(1020 * US, None, Awaiting::Soon, Looks::Growing),
            Stage::Park
        );
        assert_eq!(
            policy.stage(Duration::from_secs(9), None, Awaiting::Soon, Looks::Growing),
            Stage::Park
        );
    }

    #[test]
    fn a_long_doze_looks_again_after_as_long_again_as_it_has_been_idle() {
        let policy = IdlePolicy {
            spin: Duration::ZERO,
            doze: Duration::from_millis(2),
        };
        let doze = |idle_for| policy.stage(idle_for, None, Awaiting::Elsewhere, Looks::Growing);
        let doze_with = |idle_for, looks| policy.stage(idle_for, None, Awaiting::Elsewhere, looks);
        assert_eq!(doze(Duration::ZERO), Stage::Doze(DOZE_LOOK_EVERY));
        assert_eq!(doze(400 * US), Stage::Doze(400 * US));
        assert_eq!(doze(1500 * US), Stage::Doze(500 * US), "ends with the doze");
        // From the first look, the looks of a whole doze: 50, 100, 200, 400,
        // 800 and 1,600 µs after its start, then its end.
        let mut idle_for = Duration::ZERO;
        let mut looks = 0;
        while let Stage::Doze(wait) = doze(idle_for) {
            idle_for += wait;
            looks += 1;
        }
        assert_eq!((looks, idle_for), (7, Duration::from_millis(2)));
        // A thread with tasks of its own looks every `DOZE_LOOK_EVERY`; one
        // with nothing for the runtime dozes to the end.
        assert_eq!(
            doze_with(400 * US, Looks::Often),
            Stage::Doze(DOZE_LOOK_EVERY)
        );
        assert_eq!(doze_with(1990 * US, Looks::Often), Stage::Doze(10 * US));
        assert_eq!(doze_with(400 * US, Looks::Never), Stage::Doze(1600 * US));
        assert_eq!(doze_with(2000 * US, Looks::Never), Stage::Park);
        assert_eq!(
            policy.stage(400 * US, Some(7 * US), Awaiting::Elsewhere, Looks::Never),
            Stage::Doze(7 * US),
            "a deadline still ends it"
        );
    }

    #[test]
    fn a_doze_ends_by_the_next_deadline() {
        let policy = IdlePolicy {
            spin: Duration::ZERO,
            doze: Duration::from_millis(2),
        };
        assert_eq!(
            policy.stage(Duration::ZERO, Some(7 * US), Awaiting::Soon, Looks::Growing),
            Stage::Doze(7 * US)
        );
        assert_eq!(
            policy.stage(
                Duration::ZERO,
                Some(Duration::ZERO),
                Awaiting::Soon,
                Looks::Growing
            ),
            Stage::Doze(Duration::ZERO)
        );
    }

    #[test]
    fn zero_durations_skip_their_stage() {
        let park_at_once = IdlePolicy {
            spin: Duration::ZERO,
            doze: Duration::ZERO,
        };
        assert_eq!(
            park_at_once.stage(Duration::ZERO, None, Awaiting::Soon, Looks::Growing),
            Stage::Park
        );
        let spin_then_park = IdlePolicy {
            spin: 50 * US,
            doze: Duration::ZERO,
        };
        assert_eq!(
            spin_then_park.stage(49 * US, None, Awaiting::Soon, Looks::Growing),
            Stage::Spin
        );
        assert_eq!(
            spin_then_park.stage(50 * US, None, Awaiting::Soon, Looks::Growing),
            Stage::Park
        );
        let never_park = IdlePolicy {
            spin: Duration::MAX,
            doze: Duration::MAX,
        };
        assert_eq!(
            never_park.stage(
                Duration::from_secs(3600),
                None,
                Awaiting::Soon,
                Looks::Growing
            ),
            Stage::Spin
        );
    }

    #[test]
    fn without_spin_the_shard_dozes_from_its_last_work_for_the_doze_alone() {
        let policy = IdlePolicy {
            spin: 50 * US,
            doze: 100 * US,
        };
        let elsewhere =
            |idle_for| policy.stage(idle_for, None, Awaiting::Elsewhere, Looks::Growing);
        assert_eq!(elsewhere(Duration::ZERO), Stage::Doze(DOZE_LOOK_EVERY));
        assert_eq!(elsewhere(70 * US), Stage::Doze(30 * US));
        assert_eq!(elsewhere(100 * US), Stage::Park);
        // No doze configured: the skipped spin is not dozed instead.
        let no_doze = IdlePolicy {
            spin: 50 * US,
            doze: Duration::ZERO,
        };
        assert_eq!(
            no_doze.stage(Duration::ZERO, None, Awaiting::Elsewhere, Looks::Growing),
            Stage::Park
        );
    }

    #[test]
    fn what_the_shard_awaits() {
        let policy = IdlePolicy {
            spin: 50 * US,
            doze: Duration::from_millis(2),
        };
        let ms = Duration::from_millis(1);
        let pays = SpinOdds::default();
        assert_eq!(policy.awaiting(0, ms, false, pays), Awaiting::Soon);
        assert_eq!(policy.awaiting(3, 10 * US, false, pays), Awaiting::Soon);
        assert_eq!(
            policy.awaiting(3, 50 * US, false, pays),
            Awaiting::Elsewhere
        );
        assert_eq!(policy.awaiting(1, ms, false, pays), Awaiting::Elsewhere);
        assert_eq!(policy.awaiting(1, ms, true, pays), Awaiting::Runtime);
        assert_eq!(
            policy.awaiting(0, Duration::ZERO, true, pays),
            Awaiting::Runtime
        );
        let mut misses = SpinOdds::default();
        misses.gap(ms, policy.spin);
        assert!(!misses.pays());
        assert_eq!(policy.awaiting(1, ms, true, misses), Awaiting::RuntimeLater);
        // With nothing in flight the next event is a caller's: spin for it.
        assert_eq!(policy.awaiting(0, ms, true, misses), Awaiting::Runtime);
        // Answers from other threads do not depend on the odds.
        assert_eq!(policy.awaiting(1, ms, false, misses), Awaiting::Elsewhere);
        assert_eq!(policy.awaiting(0, ms, false, misses), Awaiting::Soon);
    }

    #[test]
    fn runtime_events_that_come_later_than_the_spin_are_parked_for_at_once() {
        let policy = IdlePolicy {
            spin: 50 * US,
            doze: Duration::from_millis(2),
        };
        let later = |idle_for| policy.stage(idle_for, None, Awaiting::RuntimeLater, Looks::Growing);
        assert_eq!(later(Duration::ZERO), Stage::Park);
        assert_eq!(later(Duration::from_millis(5)), Stage::Park);
        assert!(Awaiting::RuntimeLater.scores_gaps() && Awaiting::Runtime.scores_gaps());
        assert!(!Awaiting::Soon.scores_gaps() && !Awaiting::Elsewhere.scores_gaps());
    }

    #[test]
    fn a_spin_pays_while_what_it_saves_outweighs_what_it_costs() {
        let spin = 50 * US;
        let mut odds = SpinOdds::default();
        assert!(odds.pays(), "a new shard spins");
        // Events a few microseconds apart: each hit saves a wake-up for
        // less than its cost, and a miss now and then is outweighed.
        for _ in 0..100 {
            odds.gap(2 * US, spin);
        }
        odds.gap(spin, spin);
        assert!(
            odds.pays(),
            "a gap as long as the spin is a miss, outweighed"
        );
        // Hits as long as a wake-up save nothing; misses then turn it off.
        for _ in 0..100 {
            odds.gap(SpinOdds::WAKE_COST, spin);
        }
        assert!(odds.pays(), "nothing saved, nothing lost");
        // Then misses: the 150 us left are spent by the fourth.
        for _ in 0..3 {
            odds.gap(Duration::from_millis(1), spin);
        }
        assert!(odds.pays());
        odds.gap(Duration::from_millis(1), spin);
        assert!(!odds.pays());
        // Answers tens of microseconds apart: every hit costs more than the
        // wake-up it saves.
        let mut odds = SpinOdds::default();
        for _ in 0..100 {
            odds.gap(30 * US, spin);
        }
        assert!(!odds.pays());
        // Whatever came before, the ledger is bounded: close events bring
        // the spin back within a few dozen gaps.
        for _ in 0..1000 {
            odds.gap(Duration::from_secs(1), spin);
        }
        let mut gaps = 0;
        while !odds.pays() {
            odds.gap(US, spin);
            gaps += 1;
        }
        assert_eq!(gaps, 23, "4 spins' worth, 9 us saved a gap");
    }

    #[test]
    fn a_spin_without_end_is_scored_without_overflow() {
        let mut odds = SpinOdds::default();
        odds.gap(US, Duration::MAX);
        assert!(odds.pays(), "a short gap saves a wake-up");
        odds.gap(Duration::from_secs(1), Duration::MAX);
        assert!(!odds.pays(), "a second spun costs more than a wake-up");
        odds.gap(Duration::MAX, Duration::MAX);
        assert!(!odds.pays(), "a gap as long as the spin is a miss");
        let mut odds = SpinOdds::default();
        odds.gap(Duration::MAX, 50 * US);
        assert!(!odds.pays());
    }

    #[test]
    fn runtime_driven_shards_spin_then_park_without_dozing() {
        let policy = IdlePolicy {
            spin: 50 * US,
            doze: Duration::from_millis(2),
        };
        assert_eq!(
            policy.stage(49 * US, None, Awaiting::Runtime, Looks::Growing),
            Stage::Spin
        );
        assert_eq!(
            policy.stage(50 * US, None, Awaiting::Runtime, Looks::Growing),
            Stage::Park
        );
    }

    #[test]
    fn only_rings_on_the_shard_thread_while_the_loop_is_out_count_as_the_runtime() {
        let intake = Arc::new(Intake::<u32>::new(4));
        let bell = Bell::waker(Arc::clone(&intake));
        std::thread::spawn(move || {
            assert!(!enter_loop(), "nothing rang yet");
            bell.wake_by_ref();
            leave_loop();
            assert!(!enter_loop(), "rung by the loop itself");
            leave_loop();
            let elsewhere = bell.clone();
            std::thread::spawn(move || elsewhere.wake()).join().unwrap();
            assert!(!enter_loop(), "rung on another thread");
            leave_loop();
            bell.wake_by_ref();
            bell.wake_by_ref();
            assert!(enter_loop(), "rung here while the loop was out");
            leave_loop();
            assert!(!enter_loop(), "taken once");
        })
        .join()
        .unwrap();
        // On a thread that never entered a loop, nothing is recorded.
        Bell::waker(Arc::new(Intake::<u32>::new(1))).wake();
        leave_loop();
        WHERE.with(|place| assert_eq!(place.get(), NOT_A_SHARD));
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
