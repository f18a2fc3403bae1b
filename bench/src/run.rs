//! One measured run: start a system on the shared store, put the load on it,
//! close it, and turn what was seen into a [`RunResult`].
//!
//! Systems run one after another, never at once, so each has the machine to
//! itself; the store is shared, and its counters are read before and after.

use crate::cpu::process_cpu_time;
use crate::load::{drive, Load, Progress};
use crate::report::RunResult;
use crate::store::Store;
use crate::systems::batch_aint_one::BatchAintOne;
use crate::systems::batcher::BatcherSystem;
use crate::systems::ferry::FerrySystem;
use crate::systems::single_lock::SingleLock;
use crate::systems::single_lock_fifo::SingleLockFifo;
use crate::systems::unbatched::Unbatched;
use crate::systems::{Settings, System, SystemKind, UnkeyedKind};

/// Runs `kind` under `load`. `shards` is ferry's shard count (ignored by the
/// others); single-lock runs `single_lock_workers` workers.
pub fn run(
    kind: SystemKind,
    shards: Option<usize>,
    single_lock_workers: usize,
    settings: &Settings,
    store: &'static Store,
    load: &Load,
    on_progress: impl FnMut(&Progress),
) -> Result<RunResult, String> {
    let could_not_start = |err: &dyn std::fmt::Display| format!("{kind} did not start: {err}");
    match kind {
        SystemKind::Ferry => {
            let shards = shards.unwrap_or(1);
            let system =
                FerrySystem::start(settings, shards, store).map_err(|e| could_not_start(&e))?;
            Ok(measure(
                kind.name(),
                Some(shards),
                system,
                store,
                load,
                on_progress,
            ))
        }
        SystemKind::SingleLock => {
            let system = SingleLock::start(settings, single_lock_workers, store)
                .map_err(|e| could_not_start(&e))?;
            Ok(measure(kind.name(), None, system, store, load, on_progress))
        }
        SystemKind::BatchAintOne => {
            let system = BatchAintOne::start(settings, store).map_err(|e| could_not_start(&e))?;
            Ok(measure(kind.name(), None, system, store, load, on_progress))
        }
        SystemKind::Unbatched => {
            let system = Unbatched::start(store);
            Ok(measure(kind.name(), None, system, store, load, on_progress))
        }
    }
}

/// Runs the unkeyed system `kind` under `load`. `shards` is the batcher's
/// shard count (ignored by the others); `slots` is how many batches the
/// others may have in flight at once: single-lock-fifo's workers, and
/// batch-aint-one's concurrency on its one key.
pub fn run_unkeyed(
    kind: UnkeyedKind,
    shards: Option<usize>,
    slots: usize,
    settings: &Settings,
    store: &'static Store,
    load: &Load,
    on_progress: impl FnMut(&Progress),
) -> Result<RunResult, String> {
    let could_not_start = |err: &dyn std::fmt::Display| format!("{kind} did not start: {err}");
    let name = kind.name();
    match kind {
        UnkeyedKind::Batcher => {
            let shards = shards.unwrap_or(1);
            let system =
                BatcherSystem::start(settings, shards, store).map_err(|e| could_not_start(&e))?;
            Ok(measure(
                name,
                Some(shards),
                system,
                store,
                load,
                on_progress,
            ))
        }
        UnkeyedKind::BatchAintOne => {
            let system = BatchAintOne::start_unkeyed(settings, slots, store)
                .map_err(|e| could_not_start(&e))?;
            Ok(measure(name, None, system, store, load, on_progress))
        }
        UnkeyedKind::SingleLockFifo => {
            let system =
                SingleLockFifo::start(settings, slots, store).map_err(|e| could_not_start(&e))?;
            Ok(measure(name, None, system, store, load, on_progress))
        }
    }
}

fn measure<S: System>(
    name: &str,
    shards: Option<usize>,
    mut system: S,
    store: &'static Store,
    load: &Load,
    on_progress: impl FnMut(&Progress),
) -> RunResult {
    let conflicts_before = store.conflicts();
    let applied_before = store.applied();
    let _ = store.take_lateness();
    let cpu_before = process_cpu_time();
    let measured = drive(&system, load, on_progress);
    let cpu = process_cpu_time().saturating_sub(cpu_before);
    if !measured.gave_up {
        // With inputs outstanding, closing could wait for ever on them.
        system.close();
    }
    let conflicts = store.conflicts() - conflicts_before;
    let applied = store.applied() - applied_before;
    let lateness = store.take_lateness();
    let mut result = RunResult::new(name, shards, &measured, conflicts, applied, &lateness);
    result.runtime = system.runtime().map(|runtime| runtime.to_string());
    result.cpu_us_per_input = if measured.done == 0 {
        0.0
    } else {
        (cpu.as_secs_f64() * 1e6 / measured.done as f64 * 100.0).round() / 100.0
    };
    if measured.gave_up {
        // Leak it rather than block on inputs that will never come back.
        std::mem::forget(system);
    }
    result
}
