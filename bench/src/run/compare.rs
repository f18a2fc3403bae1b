//! One measured run: reset the shared store, start a system on it, put the
//! load on it, close it, read the store back, and turn what was seen into a
//! [`RunResult`].
//!
//! Systems run one after another, never at once, so each has the machine to
//! itself; the store is shared, and its counters and contents are read
//! before and after (a real store is also reset to zeros before each run).

use std::time::Instant;

use crate::base::cpu::{process_cpu_time, Threads};
use crate::base::sched;
use crate::report::faults::FaultSeen;
use crate::report::{EngineFigures, OverloadResult, RunResult};
use crate::run::faults::{Faults, Injector};
use crate::scenarios::faults::{FaultKind, Injected};
use crate::scenarios::overload::{self, Slowdown};
use crate::sources::load::{drive, Load, Measured, Progress};
use crate::store::{resolutions, Contents, Resolutions, Store};
use crate::systems::batch_aint_one::BatchAintOne;
use crate::systems::batcher::BatcherSystem;
use crate::systems::ferry::FerrySystem;
use crate::systems::single_lock::SingleLock;
use crate::systems::single_lock_fifo::{Apply, SingleLockFifo};
use crate::systems::unbatched::Unbatched;
use crate::systems::{Settings, System, SystemKind, UnkeyedKind};

/// Runs `kind` under `load`. `shards` is ferry's shard count (ignored by the
/// others); single-lock runs `single_lock_workers` workers; the systems
/// without shards share `settings.pool_connections` store connections.
pub fn run(
    kind: SystemKind,
    shards: Option<usize>,
    single_lock_workers: usize,
    settings: &Settings,
    store: Store,
    load: &Load,
    on_progress: impl FnMut(&Progress),
) -> Result<RunResult, String> {
    run_with_faults(
        kind,
        shards,
        single_lock_workers,
        settings,
        store,
        load,
        None,
        on_progress,
    )
}

/// [`run`], with `faults` injected at the store during the run, each at
/// its offset from the measured window's start (see [`crate::scenarios::faults`]);
/// the result tells each fault as the run saw it. `faults` must have been
/// prepared on `store` before.
#[allow(clippy::too_many_arguments)]
pub fn run_with_faults(
    kind: SystemKind,
    shards: Option<usize>,
    single_lock_workers: usize,
    settings: &Settings,
    store: Store,
    load: &Load,
    faults: Option<&Faults>,
    on_progress: impl FnMut(&Progress),
) -> Result<RunResult, String> {
    store.reset()?;
    let measuring = Measuring {
        store,
        load,
        faults,
        on_progress,
    };
    with_system(
        kind,
        shards,
        single_lock_workers,
        settings,
        store,
        measuring,
    )?
}

/// What to do with a system once it is started ([`with_system`]): generic
/// over the system's type, as a closure cannot be.
pub trait WithSystem {
    /// What it gives.
    type Output;

    /// Does it with `system`, `kind`'s, named `name`, of `shards` shards
    /// (`None` without shards).
    fn with<S: System>(self, name: &str, shards: Option<usize>, system: S) -> Self::Output;
}

/// Starts `kind` on `store` (as [`run`] says for `shards` and
/// `single_lock_workers`) and hands it to `then`.
pub fn with_system<W: WithSystem>(
    kind: SystemKind,
    shards: Option<usize>,
    single_lock_workers: usize,
    settings: &Settings,
    store: Store,
    then: W,
) -> Result<W::Output, String> {
    let could_not_start = |err: String| format!("{kind} did not start: {err}");
    let connections = settings.pool_connections;
    let name = kind.name();
    Ok(match kind {
        SystemKind::Ferry | SystemKind::FerryWithdraw | SystemKind::FerryTrips => {
            let shards = shards.unwrap_or(1);
            let system =
                FerrySystem::start(settings, shards, store, kind).map_err(could_not_start)?;
            then.with(name, Some(shards), system)
        }
        SystemKind::MultiKey => {
            let workers = settings.max_in_flight_trips * connections;
            let system = SingleLockFifo::start(settings, workers, store, connections, Apply::Keys)
                .map_err(could_not_start)?;
            then.with(name, None, system)
        }
        SystemKind::SingleLock => {
            let system = SingleLock::start(settings, single_lock_workers, store, connections)
                .map_err(could_not_start)?;
            then.with(name, None, system)
        }
        SystemKind::BatchAintOne => {
            let system =
                BatchAintOne::start(settings, store, connections).map_err(could_not_start)?;
            then.with(name, None, system)
        }
        SystemKind::Unbatched => {
            let system = Unbatched::start(settings, store, connections).map_err(could_not_start)?;
            then.with(name, None, system)
        }
    })
}

/// A measured run of the system it is given.
struct Measuring<'a, P> {
    store: Store,
    load: &'a Load,
    faults: Option<&'a Faults>,
    on_progress: P,
}

impl<P: FnMut(&Progress)> WithSystem for Measuring<'_, P> {
    type Output = Result<RunResult, String>;

    fn with<S: System>(self, name: &str, shards: Option<usize>, system: S) -> Self::Output {
        measure(
            name,
            shards,
            system,
            self.store,
            self.load,
            self.faults,
            self.on_progress,
        )
    }
}

/// Runs the unkeyed system `kind` under `load`. `shards` is the batcher's
/// shard count (ignored by the others); `slots` is how many batches the
/// others may have in flight at once: single-lock-fifo's workers, and
/// batch-aint-one's concurrency on its one key. Measured as [`run`]
/// measures a keyed system.
pub fn run_unkeyed(
    kind: UnkeyedKind,
    shards: Option<usize>,
    slots: usize,
    settings: &Settings,
    store: Store,
    load: &Load,
    on_progress: impl FnMut(&Progress),
) -> Result<RunResult, String> {
    store.reset()?;
    let measuring = Measuring {
        store,
        load,
        faults: None,
        on_progress,
    };
    with_unkeyed_system(kind, shards, slots, settings, store, measuring)?
}

/// Starts the unkeyed `kind` on `store` (as [`run_unkeyed`] says for
/// `shards` and `slots`) and hands it to `then`, as [`with_system`] does
/// for a keyed one.
pub fn with_unkeyed_system<W: WithSystem>(
    kind: UnkeyedKind,
    shards: Option<usize>,
    slots: usize,
    settings: &Settings,
    store: Store,
    then: W,
) -> Result<W::Output, String> {
    let could_not_start = |err: String| format!("{kind} did not start: {err}");
    let connections = settings.pool_connections;
    let name = kind.name();
    Ok(match kind {
        UnkeyedKind::Batcher => {
            let shards = shards.unwrap_or(1);
            let system = BatcherSystem::start(settings, shards, store).map_err(could_not_start)?;
            then.with(name, Some(shards), system)
        }
        UnkeyedKind::BatchAintOne => {
            let system = BatchAintOne::start_unkeyed(settings, slots, store, connections)
                .map_err(could_not_start)?;
            then.with(name, None, system)
        }
        UnkeyedKind::SingleLockFifo => {
            let system = SingleLockFifo::start(settings, slots, store, connections, Apply::Stream)
                .map_err(could_not_start)?;
            then.with(name, None, system)
        }
    })
}

fn measure<S: System>(
    name: &str,
    shards: Option<usize>,
    mut system: S,
    store: Store,
    load: &Load,
    faults: Option<&Faults>,
    on_progress: impl FnMut(&Progress),
) -> Result<RunResult, String> {
    let before = Before::read(store)?;
    let slowed = slow_down(store, load)?;
    overload::watch(load.timeout.is_some());
    let _ = overload::take_waste();
    // Its window starts a warm-up from now, as `drive` puts it.
    let injector = faults.map(|faults| faults.start(store, Instant::now() + load.warmup));
    let measured = drive(&system, load, on_progress);
    // Every fault is over, and the store back, before the read-back.
    let injected = injector.map(Injector::finish).transpose();
    let waste = overload::take_waste();
    overload::watch(false);
    let cpu = process_cpu_time().saturating_sub(before.cpu);
    let server_cpu = before
        .server_cpu
        .zip(store.server_cpu_time())
        .map(|(before, after)| after.saturating_sub(before));
    // Read while the shards still run: closed, their threads are gone.
    let slices = sched::shard_slices();
    let threads = Threads::now().since(&before.threads);
    if !measured.gave_up {
        // With inputs outstanding, closing could wait for ever on them.
        system.close();
    }
    let injected = injected.map_err(|problem| format!("{name}: {problem}"))?;
    let entity = system.entity_stats().unwrap_or_default();
    let conflicts = store.conflicts() - before.conflicts + entity.conflicts;
    // Read back once the system is closed, so no batch is still writing.
    let held: Contents = store.contents()?.since(before.held);
    let lateness = store.take_lateness();
    let mut result = RunResult::new(name, shards, &measured, conflicts, held, &lateness);
    result.resolutions = resolutions().since(before.resolutions);
    result.resolutions.landed += entity.found_landed;
    result.resolutions.sent += entity.found_absent;
    result.runtime = system.runtime().map(|runtime| runtime.to_string());
    result.runtime_reason = system.runtime_reason();
    result.sched_slice = sched::describe(&slices);
    if let Some(slow) = slowed {
        result.overload = Some(OverloadResult::new(&measured, load, slow, waste));
    }
    let restarted = note_faults(&mut result, injected, &measured, load);
    // Read once closed: every input the run admitted is counted.
    result.engine = system
        .engine_stats()
        .map(|total| EngineFigures::from_total(&total));
    result.cpu_us_per_input = per_input_us(cpu, measured.done);
    result.cpu_split = threads.per_input(measured.done);
    // After a restart, the server's processes are others: their CPU time
    // is not this run's.
    result.server_cpu_us_per_input = server_cpu
        .filter(|_| !restarted)
        .map(|time| per_input_us(time, measured.done));
    if measured.gave_up {
        // Leak it rather than block on inputs that will never come back.
        std::mem::forget(system);
    }
    Ok(result)
}

/// What is read before a run, for the run's own share of each figure.
struct Before {
    conflicts: u64,
    resolutions: Resolutions,
    held: Contents,
    server_cpu: Option<std::time::Duration>,
    cpu: std::time::Duration,
    threads: Threads,
}

impl Before {
    /// Reads every figure now (and empties the store's lateness record).
    fn read(store: Store) -> Result<Self, String> {
        let before = Before {
            conflicts: store.conflicts(),
            resolutions: resolutions(),
            held: store.contents()?,
            server_cpu: store.server_cpu_time(),
            cpu: process_cpu_time(),
            threads: Threads::now(),
        };
        let _ = store.take_lateness();
        Ok(before)
    }
}

/// Puts the faults the run saw into `result`; whether one restarted the
/// store.
fn note_faults(
    result: &mut RunResult,
    injected: Option<Vec<Injected>>,
    measured: &Measured,
    load: &Load,
) -> bool {
    let Some(injected) = injected else {
        return false;
    };
    result.faults = FaultSeen::of(&injected, measured, load.warmup);
    injected
        .iter()
        .any(|fault| fault.fault.kind == FaultKind::Restart)
}

/// Sets the store's slowdown for this run, if the load has one: measured
/// from the window's start, which `drive` puts one warm-up from now.
fn slow_down(store: Store, load: &Load) -> Result<Option<Slowdown>, String> {
    let Some(slow) = load.slowdown else {
        return Ok(None);
    };
    let sim = store
        .as_sim()
        .ok_or("--store-slowdown slows the simulated store only")?;
    let from = Instant::now() + load.warmup + slow.after;
    sim.slow_down(from, from + slow.length, slow.factor);
    Ok(Some(slow))
}

/// `time` per input of `inputs`, µs, to two decimals (0 without inputs).
fn per_input_us(time: std::time::Duration, inputs: u64) -> f64 {
    if inputs == 0 {
        0.0
    } else {
        (time.as_secs_f64() * 1e6 / inputs as f64 * 100.0).round() / 100.0
    }
}
