//! Allocations per input on the steady path, counted
//! (docs/guarantees.md#cost). A counting global allocator, a thin wrapper around `System`, counts every
//! allocation of the process, caller threads and shard threads alike,
//! while a measured stretch runs after a warm-up. The callers allocate
//! nothing per input themselves (see `Window`), so every allocation counted
//! is the engine's. Two shards, unpinned, the default settings otherwise,
//! and an instant batch function that hands its inputs back; each case runs
//! on both runtimes (`name::glommio`, `name::tokio`).
//!
//! Measured on 2026-12-01, one release run and one debug run on each
//! runtime (100,000 inputs a case; 50,000 for `submit_local`, from one
//! task on one shard), allocations over the stretch:
//!
//! | case | inputs per batch | release | debug |
//! | --- | ---: | ---: | ---: |
//! | `submit`, 1,000 keys | about 2 | 0 | 0–8 |
//! | `submit`, 100,000 keys | 1.00 | 53–234 | 467–961 |
//! | `submit`, 100,000 keys, `u32` outputs | 1.00 | 200,407–200,758 | 200,140–201,025 |
//! | `submit_local`, 1,000 keys | 2.02 | 0–1 | 0 |
//! | `Batcher::submit` | 26–62 | 0 | 1–4 |
//! | `submit_many`, calls of 500, 100,000 keys | 1.00 | 2,042–2,077 | 2,044–2,050 |
//! | trips, 100,000 keys, 4 in flight (2026-12-07) | 1.00 (40–53 batches a trip) | 10,880–18,218 | 8,436–21,305 |
//!
//! (Before an input had an answer cell of its own and batches reused their
//! outputs' vector, the same cases made 1 allocation per input and 1 per
//! batch: 200,000 for `submit` with 100,000 keys.)
//!
//! Inputs per batch follow the timing of callers and shards, so the
//! figures per input and per batch move with them; what does not move is
//! the budget every case keeps, asserted by `Measured::check`:
//!
//! **allocations ≤ 0 per input + 0 per batch + slack** for a batch function
//! that hands back its inputs' vector, **2 per batch** for one that makes
//! outputs of another layout, and for `submit_many` **10 per call of 500**
//! besides, and for a trip function **9 per trip** (`PER_TRIP`): nothing of
//! an input's own, nothing of a batch's own. (Before a shard kept as many
//! spare vectors as batches were ever out at once, the trips case made
//! 137,132 and 140,875: its spares ran dry while finished trips waited to
//! be answered.)
//!
//! - **0 per input** (`PER_INPUT`): an input's outcome goes through its
//!   answer cell (`answer_cell.rs`), a block from the caller's thread's
//!   spares (`pool.rs`), given back when both ends are done; a cell given
//!   back on a shard's thread reaches the callers' threads through the
//!   shared store. The same for `submit_local` (a cell with a plain state
//!   word). `submit_many`'s inputs share their call's cell (`PER_CALL`).
//! - **0 per batch** (`PER_BATCH`): the batch's inputs `Vec` is the emptied
//!   outputs `Vec` of an earlier batch (`ShardCore::keep_spare_inputs`),
//!   since this batch function hands its inputs back; its replies `Vec`
//!   comes from spares too; the batch future's home is a box the loop
//!   reuses (`batch_run.rs`); a batch that finishes on its first poll never
//!   gets a node in the loop's `FuturesUnordered`; lanes reuse their places
//!   and the buffers kept there.
//! - **2 per batch** (`PER_BATCH_OTHER_LAYOUT`) for a batch function whose
//!   outputs (`u32`) have another layout than its inputs (`u64`): the
//!   inputs `Vec` the shard makes, and the outputs `Vec` the function makes.
//! - **slack** (`Measured::slack`): what follows time and timing, not the
//!   inputs: lane places added at a new high of lanes alive, answer cells
//!   made while the shared store was empty, glommio's reactor re-arming its
//!   timers, a few more table growths. Each part is bounded by what it
//!   depends on (inputs in flight, parks, seconds); the figures above show
//!   what was seen beyond the budget.
//!
//! A change that removes one of these allocations shows as a count well
//! under the budget (each case prints its counts and how far they are from
//! the budget): then lower `PER_INPUT` or `PER_BATCH` to match.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use ferry::{Batcher, Engine, FerryError, Runtime, ShardId, ShardStats, Stats};
use futures::channel::oneshot;
use futures::task::AtomicWaker;

mod support;
use support::on_each_runtime;

/// Every allocation of the process (`alloc`, `alloc_zeroed`, `realloc`).
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// `System`, counting each allocation.
struct Counting;

// SAFETY: each method forwards its arguments unchanged to `System`, which
// keeps `GlobalAlloc`'s contract; the count is a relaxed atomic add that
// touches no memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The count is the whole process's: one measurement at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const SHARDS: usize = 2;
/// Inputs each caller keeps in flight: with 1,000 keys over two callers,
/// a key has about two inputs waiting when its lane is taken.
const IN_FLIGHT_PER_CALLER: usize = 1_000;
const WARM_UP_PER_CALLER: usize = 20_000;
const MEASURED_PER_CALLER: usize = 50_000;

/// The budget: allocations per input and per batch (see the module docs).
const PER_INPUT: u64 = 0;
/// Per batch, for a batch function that hands back its inputs' vector.
const PER_BATCH: u64 = 0;
/// Per batch, for one whose outputs have another layout than its inputs:
/// the batch's inputs vector, and the outputs vector the function makes.
const PER_BATCH_OTHER_LAYOUT: u64 = 2;
/// Batches a trip carries at most in the trips case.
const TRIP_BATCHES: usize = 64;
/// Turns of its shard each trip of the trips case waits: long enough that
/// the lanes the callers fill meanwhile make the next trips full or nearly.
const TRIP_TURNS: u32 = 8;
/// Per trip, for a trip function: the trip's vector of batches, which the
/// shard makes with room for as many as the trip before carried, and its
/// growth when this one carries more (at most one doubling from 1 up to
/// `TRIP_BATCHES`, 6 of them); the results vector the function makes of it
/// (moved in place, then shrunk); the trip's task in the loop's
/// `FuturesUnordered`, when it does not finish on its first poll.
const PER_TRIP: u64 = 3 + TRIP_BATCHES.ilog2() as u64;
/// And per `submit_many` call, whose inputs cost nothing each: the call's
/// answer cell (its `Arc`, its vector, the stream's queue), the list of
/// bundles, and per shard a bundle's vector and the shard's share of the
/// cell (its `Rc` and the vector answers are kept in).
const PER_CALL: u64 = 4 + 3 * SHARDS as u64;
/// Inputs per `submit_many` call.
const PER_CALL_INPUTS: usize = 500;

/// Allocations allowed beyond the budget in any case: tables that grow a
/// few more times, and the test harness reporting another test's result.
const SLACK_FIXED: u64 = 50;
/// Allocations allowed beyond the budget per time a glommio shard parked:
/// glommio's reactor makes a new source for each of its preemption timers
/// as it goes to sleep. Measured here: 6.0 per park (3,831 allocations
/// for 635 parks, with no spin and no doze). Tokio's parks made none.
const SLACK_GLOMMIO_PER_PARK: u64 = 8;
/// Allocations allowed beyond the budget per second (or part of one) of a
/// measured stretch on glommio: its executor polls its reactor, re-arming
/// the same timers, each time a task queue's time slice runs out, busy or
/// not. Measured here: about 60 a second with both shards busy (109 in a
/// 1.7 s stretch of the batcher with 2,000,000 inputs and one park).
const SLACK_GLOMMIO_PER_SECOND: u64 = 100;

type Outcome = Result<u64, FerryError<u64, ()>>;

/// What one measured stretch saw.
#[derive(Debug)]
struct Measured {
    runtime: Runtime,
    /// The budget per input (`PER_INPUT`, or none for `submit_many`).
    per_input: u64,
    /// The budget per batch (`PER_BATCH`, or `PER_BATCH_OTHER_LAYOUT`).
    per_batch: u64,
    /// `submit_many` calls made (0 for the other cases).
    calls: u64,
    /// The budget per trip (`PER_TRIP` with a trip function, or none).
    per_trip: u64,
    inputs: u64,
    batches: u64,
    trips: u64,
    allocations: u64,
    /// Times the shards parked in the stretch (their published count).
    parks: u64,
    took: Duration,
    /// The most lane places the stretch may add (see `lane_places_max`).
    lane_places_max: u64,
}

/// The most lane places that can be added after the warm-up, where
/// `shards` shards have lanes and `in_flight` inputs are in flight at most.
/// A new high of lanes alive at once gives the lane at each new place a
/// buffer of its own, one allocation. A lane holds at least one input, so
/// a shard never has more lanes than inputs in flight. How many are added
/// follows the timing of callers and shards: up to 1,558 seen with 100,000
/// keys, where each input has a lane of its own.
fn lane_places_max(shards: usize, in_flight: usize) -> u64 {
    (shards * in_flight) as u64
}

impl Measured {
    /// Allocations allowed beyond the budget: those that follow time and
    /// timing, not the inputs.
    fn slack(&self) -> u64 {
        let runtime = match self.runtime {
            Runtime::Glommio => {
                let seconds = self.took.as_secs() + 1;
                SLACK_GLOMMIO_PER_PARK * self.parks + SLACK_GLOMMIO_PER_SECOND * seconds
            }
            _ => 0,
        };
        SLACK_FIXED + self.lane_places_max + runtime
    }

    /// Reports the counts, then asserts the budget.
    fn check(&self, case: &str) {
        let budget = self.per_input * self.inputs
            + self.per_batch * self.batches
            + self.per_trip * self.trips
            + PER_CALL * self.calls;
        let slack = self.slack();
        eprintln!(
            "{case}, {:?}: {} inputs in {} batches ({:.2} inputs per batch) and {} trips, \
             {} parks, {:?}; {} allocations, {:.3} per input, {:.3} per batch; budget {budget} \
             ({} per input + {} per batch + {} per trip + {PER_CALL} per call, {} calls), \
             {} beyond it (slack {slack})",
            self.runtime,
            self.inputs,
            self.batches,
            self.inputs as f64 / self.batches as f64,
            self.trips,
            self.parks,
            self.took,
            self.allocations,
            self.allocations as f64 / self.inputs as f64,
            self.allocations as f64 / self.batches as f64,
            self.per_input,
            self.per_batch,
            self.per_trip,
            self.calls,
            self.allocations as i64 - budget as i64,
        );
        assert!(
            self.allocations <= budget + slack,
            "{case}, {:?}: {} allocations for {} inputs in {} batches, {} trips and {} calls, \
             more than {} per input + {} per batch + {} per trip + {PER_CALL} per call + \
             {slack} slack",
            self.runtime,
            self.allocations,
            self.inputs,
            self.batches,
            self.trips,
            self.calls,
            self.per_input,
            self.per_batch,
            self.per_trip,
        );
    }
}

// ---------------------------------------------------------------------------
// A caller that allocates nothing per input.

/// Which slots were woken since the window last looked, each at most once.
struct Woken {
    slots: Mutex<Vec<usize>>,
    queued: Vec<AtomicBool>,
    window: AtomicWaker,
}

struct SlotWaker {
    slot: usize,
    woken: Arc<Woken>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.woken.queued[self.slot].swap(true, SeqCst) {
            self.woken.slots.lock().unwrap().push(self.slot);
            self.woken.window.wake();
        }
    }
}

/// Keeps up to `slots` submits in flight and polls only the woken ones. Its
/// memory is made once: every allocation after that is the engine's.
struct Window<F> {
    slots: Vec<Option<F>>,
    wakers: Vec<Waker>,
    woken: Arc<Woken>,
    spare: Vec<usize>,
}

impl<F: Future<Output = Outcome> + Unpin> Window<F> {
    fn new(slots: usize) -> Self {
        let woken = Arc::new(Woken {
            slots: Mutex::new(Vec::with_capacity(slots)),
            queued: (0..slots).map(|_| AtomicBool::new(false)).collect(),
            window: AtomicWaker::new(),
        });
        let wakers = (0..slots)
            .map(|slot| {
                Waker::from(Arc::new(SlotWaker {
                    slot,
                    woken: Arc::clone(&woken),
                }))
            })
            .collect();
        Self {
            slots: (0..slots).map(|_| None).collect(),
            wakers,
            woken,
            spare: Vec::with_capacity(slots),
        }
    }

    /// Submits `inputs` inputs through `submit(0)`, `submit(1)`, … and
    /// waits for all their outcomes, which must be outputs.
    async fn run(&mut self, inputs: usize, mut submit: impl FnMut(usize) -> F) {
        let mut next = 0;
        let mut done = 0;
        for slot in 0..self.slots.len().min(inputs) {
            self.slots[slot] = Some(submit(next));
            next += 1;
            self.wakers[slot].wake_by_ref();
        }
        poll_fn(|cx| {
            self.woken.window.register(cx.waker());
            loop {
                let mut woken = std::mem::take(&mut self.spare);
                std::mem::swap(&mut *self.woken.slots.lock().unwrap(), &mut woken);
                if woken.is_empty() {
                    self.spare = woken;
                    return if done == inputs {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    };
                }
                for slot in woken.drain(..) {
                    self.woken.queued[slot].store(false, SeqCst);
                    let Some(submitted) = self.slots[slot].as_mut() else {
                        continue;
                    };
                    let mut slot_cx = Context::from_waker(&self.wakers[slot]);
                    let Poll::Ready(outcome) = Pin::new(submitted).poll(&mut slot_cx) else {
                        continue;
                    };
                    assert!(outcome.is_ok(), "an input failed: {outcome:?}");
                    done += 1;
                    self.slots[slot] = None;
                    if next < inputs {
                        self.slots[slot] = Some(submit(next));
                        next += 1;
                        self.wakers[slot].wake_by_ref();
                    }
                }
                self.spare = woken;
            }
        })
        .await
    }
}

// ---------------------------------------------------------------------------
// The cases.

/// Waits until the shards have published `answered` answers (they publish
/// once a round, maybe just after a caller saw its answer), and returns
/// their totals. Reading stats allocates: never inside a measured stretch.
fn published(stats: impl Fn() -> Stats, answered: u64) -> ShardStats {
    for _ in 0..10_000 {
        let total = stats().total();
        if total.answered >= answered {
            return total;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the shards did not publish {answered} answers in 10 s");
}

/// `SHARDS` caller threads, each with its own window, submitting inputs
/// `caller, caller + SHARDS, …`: a warm-up, then the measured stretch,
/// counted from before either thread starts it until both are done.
fn measure_on_threads<F>(
    runtime: Runtime,
    submit: impl Fn(usize) -> F + Sync,
    stats: impl Fn() -> Stats,
    lane_places_max: u64,
) -> Measured
where
    F: Future<Output = Outcome> + Unpin,
{
    let phase = Barrier::new(SHARDS + 1);
    std::thread::scope(|scope| {
        for caller in 0..SHARDS {
            let (submit, phase) = (&submit, &phase);
            scope.spawn(move || {
                let mut window = Window::new(IN_FLIGHT_PER_CALLER);
                let warm_up = |j: usize| submit(caller + j * SHARDS);
                futures::executor::block_on(window.run(WARM_UP_PER_CALLER, warm_up));
                phase.wait(); // warmed up
                phase.wait(); // counting
                let after_warm_up = WARM_UP_PER_CALLER * SHARDS;
                let measured = |j: usize| submit(after_warm_up + caller + j * SHARDS);
                futures::executor::block_on(window.run(MEASURED_PER_CALLER, measured));
                phase.wait(); // done
            });
        }
        phase.wait();
        let before = published(&stats, (WARM_UP_PER_CALLER * SHARDS) as u64);
        let started = Instant::now();
        let counted_from = ALLOCATIONS.load(SeqCst);
        phase.wait();
        phase.wait();
        let allocations = ALLOCATIONS.load(SeqCst) - counted_from;
        let took = started.elapsed();
        let answered = (WARM_UP_PER_CALLER + MEASURED_PER_CALLER) * SHARDS;
        let after = published(&stats, answered as u64);
        Measured {
            runtime,
            per_input: PER_INPUT,
            per_batch: PER_BATCH,
            calls: 0,
            per_trip: 0,
            inputs: (MEASURED_PER_CALLER * SHARDS) as u64,
            batches: after.batches - before.batches,
            trips: after.trips - before.trips,
            allocations,
            parks: after.parks - before.parks,
            took,
            lane_places_max,
        }
    })
}

fn engine(runtime: Runtime) -> Engine<u64, u64, u64, ()> {
    let engine = Engine::builder()
        .runtime(runtime)
        .shards(SHARDS)
        .pin(false)
        .start(|_shard| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, ()>(inputs) })
        .expect("the engine starts");
    assert_eq!(engine.runtime(), runtime, "runs on the runtime asked for");
    engine
}

/// Cross-thread `submit`, input `i` with key `i % keys`.
fn submit_from_threads(runtime: Runtime, keys: u64) -> Measured {
    measure_engine(runtime, engine(runtime), keys, std::convert::identity)
}

/// Cross-thread `submit` to `engine`, input `i` with key `i % keys`, each
/// outcome made an `Outcome` by `outcome`; then closes the engine.
fn measure_engine<O: Send + 'static>(
    runtime: Runtime,
    engine: Engine<u64, u64, O, ()>,
    keys: u64,
    outcome: fn(Result<O, FerryError<u64, ()>>) -> Outcome,
) -> Measured {
    use futures::FutureExt;
    let measured = measure_on_threads(
        runtime,
        |i| engine.submit(i as u64 % keys, i as u64).map(outcome),
        || engine.stats(),
        lane_places_max(SHARDS, IN_FLIGHT_PER_CALLER * SHARDS),
    );
    engine.close();
    engine.join();
    measured
}

on_each_runtime!(submit_with_1000_keys_batches_several_inputs);
fn submit_with_1000_keys_batches_several_inputs(runtime: Runtime) {
    let _alone = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let measured = submit_from_threads(runtime, 1_000);
    assert!(
        measured.batches < measured.inputs,
        "batches hold several inputs"
    );
    measured.check("submit, 1000 keys");
}

on_each_runtime!(submit_with_100000_keys_one_input_per_batch);
fn submit_with_100000_keys_one_input_per_batch(runtime: Runtime) {
    let _alone = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let measured = submit_from_threads(runtime, 100_000);
    measured.check("submit, 100000 keys");
}

on_each_runtime!(submit_with_outputs_of_another_layout);
/// As with 100,000 keys, the batch function making `u32` outputs of its
/// `u64` inputs: a new outputs vector, so its inputs vector cannot serve
/// the next batch.
fn submit_with_outputs_of_another_layout(runtime: Runtime) {
    let _alone = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let engine: Engine<u64, u64, u32, ()> = Engine::builder()
        .runtime(runtime)
        .shards(SHARDS)
        .pin(false)
        .start(|_shard| {
            |_key: u64, inputs: Vec<u64>| async move {
                Ok::<_, ()>(inputs.into_iter().map(|input| input as u32).collect())
            }
        })
        .expect("the engine starts");
    let mut measured = measure_engine(runtime, engine, 100_000, |outcome| outcome.map(u64::from));
    measured.per_batch = PER_BATCH_OTHER_LAYOUT;
    measured.check("submit, 100000 keys, u32 outputs");
}

on_each_runtime!(trips_with_100000_keys_several_in_flight);
/// A trip function at 100,000 keys (one input a batch), whose trips each
/// wait a few turns of the shard, so that several are in flight at once and
/// more finish while the next ones start: their batches' vectors come back
/// as spares, as many as were ever out at once (`Books::spares_max`), so a
/// batch allocates nothing and a trip only its own (`PER_TRIP`).
fn trips_with_100000_keys_several_in_flight(runtime: Runtime) {
    let _alone = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let engine: Engine<u64, u64, u64, ()> = Engine::builder()
        .runtime(runtime)
        .shards(SHARDS)
        .pin(false)
        .max_in_flight_batches(4)
        .max_trip_batches(TRIP_BATCHES)
        .start_trips(|_shard| {
            |trip: Vec<(u64, Vec<u64>)>| async move {
                Turns(TRIP_TURNS).await;
                trip.into_iter()
                    .map(|(_key, inputs)| Ok::<_, ()>(inputs))
                    .collect::<Vec<_>>()
            }
        })
        .expect("the engine starts");
    let mut measured = measure_engine(runtime, engine, 100_000, std::convert::identity);
    // So that one allocation a batch would pass the budget of a trip.
    assert!(
        measured.batches > 2 * PER_TRIP * measured.trips,
        "trips carry many batches: {} in {} trips",
        measured.batches,
        measured.trips
    );
    measured.per_trip = PER_TRIP;
    measured.check("trips, 100000 keys");
}

/// Pending a number of times (waking its task at once each time), then
/// ready: a trip that takes a few turns of the shard, without a timer or
/// an allocation.
struct Turns(u32);

impl Future for Turns {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

on_each_runtime!(batcher_unkeyed_submit);
fn batcher_unkeyed_submit(runtime: Runtime) {
    let _alone = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let batcher: Batcher<u64, u64, ()> = Batcher::builder()
        .runtime(runtime)
        .shards(SHARDS)
        .pin(false)
        .start(|_shard| |inputs: Vec<u64>| async move { Ok::<_, ()>(inputs) })
        .expect("the batcher starts");
    assert_eq!(batcher.runtime(), runtime, "runs on the runtime asked for");
    let submit = |i: usize| batcher.submit(i as u64);
    // No lanes: nothing to allow for them.
    let measured = measure_on_threads(runtime, submit, || batcher.stats(), 0);
    batcher.close();
    batcher.join();
    measured.check("batcher");
}

on_each_runtime!(submit_local_from_a_task_on_the_shard);
/// One task on shard 0, submitting shard 0's keys among 1,000 through
/// `submit_local`: it counts its own measured stretch, told when to start
/// once the warm-up's stats are read.
fn submit_local_from_a_task_on_the_shard(runtime: Runtime) {
    let _alone = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let engine = engine(runtime);
    let shard = ShardId::new(0);
    let own: Vec<u64> = (0..1_000).filter(|k| engine.shard_of(k) == shard).collect();
    let (warmed_up, warm) = oneshot::channel();
    let (go, told_to_go) = oneshot::channel::<()>();
    let (counted, count) = oneshot::channel();
    let on_shard = engine.clone();
    engine
        .spawn_on(shard, move || async move {
            let submit = |j: usize| on_shard.submit_local(own[j % own.len()], j as u64);
            let mut window = Window::new(IN_FLIGHT_PER_CALLER);
            window.run(WARM_UP_PER_CALLER, submit).await;
            let _ = warmed_up.send(());
            told_to_go.await.expect("told to go on");
            let started = Instant::now();
            let counted_from = ALLOCATIONS.load(SeqCst);
            window.run(MEASURED_PER_CALLER, submit).await;
            let allocations = ALLOCATIONS.load(SeqCst) - counted_from;
            let _ = counted.send((allocations, started.elapsed()));
        })
        .expect("the shard takes the task");
    futures::executor::block_on(warm).expect("the task warmed up");
    let before = published(|| engine.stats(), WARM_UP_PER_CALLER as u64);
    go.send(()).expect("the task waits to be told");
    let (allocations, took) = futures::executor::block_on(count).expect("the task counted");
    let answered = WARM_UP_PER_CALLER + MEASURED_PER_CALLER;
    let after = published(|| engine.stats(), answered as u64);
    assert_eq!(
        after.admitted_local, after.admitted,
        "every input went the local way"
    );
    engine.close();
    engine.join();
    let measured = Measured {
        runtime,
        per_input: PER_INPUT,
        per_batch: PER_BATCH,
        calls: 0,
        per_trip: 0,
        inputs: MEASURED_PER_CALLER as u64,
        batches: after.batches - before.batches,
        trips: after.trips - before.trips,
        allocations,
        parks: after.parks - before.parks,
        took,
        lane_places_max: lane_places_max(1, IN_FLIGHT_PER_CALLER),
    };
    measured.check("submit_local, 1000 keys");
}

on_each_runtime!(submit_many_in_calls_of_500);
/// `submit_many` in calls of `PER_CALL_INPUTS`, from two caller threads,
/// 100,000 keys: no allocation of an input's own, only the call's.
fn submit_many_in_calls_of_500(runtime: Runtime) {
    let _alone = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let engine = engine(runtime);
    let phase = Barrier::new(SHARDS + 1);
    let call = |caller: usize, first: usize| {
        engine.submit_many((first..first + PER_CALL_INPUTS).map(|j| {
            let i = (caller + j * SHARDS) as u64;
            (i % 100_000, i)
        }))
    };
    let (before, allocations, took) = std::thread::scope(|scope| {
        for caller in 0..SHARDS {
            let (call, phase) = (&call, &phase);
            scope.spawn(move || {
                let mut calls = Calls::new(IN_FLIGHT_PER_CALLER / PER_CALL_INPUTS);
                calls.run(0, WARM_UP_PER_CALLER, |first| call(caller, first));
                phase.wait(); // warmed up
                phase.wait(); // counting
                let (from, to) = (WARM_UP_PER_CALLER, WARM_UP_PER_CALLER + MEASURED_PER_CALLER);
                calls.run(from, to, |first| call(caller, first));
                phase.wait(); // done
            });
        }
        phase.wait();
        let before = published(|| engine.stats(), (WARM_UP_PER_CALLER * SHARDS) as u64);
        let started = Instant::now();
        let counted_from = ALLOCATIONS.load(SeqCst);
        phase.wait();
        phase.wait();
        (
            before,
            ALLOCATIONS.load(SeqCst) - counted_from,
            started.elapsed(),
        )
    });
    let answered = (WARM_UP_PER_CALLER + MEASURED_PER_CALLER) * SHARDS;
    let after = published(|| engine.stats(), answered as u64);
    engine.close();
    engine.join();
    let measured = Measured {
        runtime,
        per_input: 0,
        per_batch: PER_BATCH,
        calls: (MEASURED_PER_CALLER * SHARDS / PER_CALL_INPUTS) as u64,
        per_trip: 0,
        inputs: (MEASURED_PER_CALLER * SHARDS) as u64,
        batches: after.batches - before.batches,
        trips: after.trips - before.trips,
        allocations,
        parks: after.parks - before.parks,
        took,
        lane_places_max: lane_places_max(SHARDS, IN_FLIGHT_PER_CALLER * SHARDS),
    };
    measured.check("submit_many, 100000 keys");
}

/// A caller keeping `slots` `submit_many` calls in flight, reading their
/// streams in turn; its own memory is made once.
struct Calls {
    slots: Vec<Option<ferry::Outcomes<u64, u64, ()>>>,
}

impl Calls {
    fn new(slots: usize) -> Self {
        Self {
            slots: (0..slots).map(|_| None).collect(),
        }
    }

    /// Makes the calls of inputs `from..to` (`call(first)` makes the call
    /// of `first..first + PER_CALL_INPUTS`) and reads every outcome, which
    /// must be an output.
    fn run(
        &mut self,
        from: usize,
        to: usize,
        mut call: impl FnMut(usize) -> ferry::Outcomes<u64, u64, ()>,
    ) {
        use futures::StreamExt;
        let mut next = from;
        futures::executor::block_on(poll_fn(|cx| loop {
            let mut open = 0;
            for slot in &mut self.slots {
                if slot.is_none() && next < to {
                    *slot = Some(call(next));
                    next += PER_CALL_INPUTS;
                }
                let Some(outcomes) = slot else { continue };
                loop {
                    match outcomes.poll_next_unpin(cx) {
                        Poll::Ready(Some((_, outcome))) => {
                            assert!(outcome.is_ok(), "an input failed: {outcome:?}");
                        }
                        Poll::Ready(None) => {
                            *slot = None;
                            break;
                        }
                        Poll::Pending => {
                            open += 1;
                            break;
                        }
                    }
                }
            }
            if open == 0 && next >= to && self.slots.iter().all(Option::is_none) {
                return Poll::Ready(());
            }
            if open > 0 && self.slots.iter().all(Option::is_some) || next >= to {
                return Poll::Pending;
            }
        }))
    }
}
