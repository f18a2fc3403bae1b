//! The time slices the kernel gives this process's shard threads, as it
//! reports them in `/proc/self/task/*/sched`: what a run's shards really
//! ran with, whatever they asked for (a kernel before 6.12 keeps no slice
//! per thread and gives its own).

use std::collections::BTreeMap;
use std::fs;
use std::time::Duration;

/// The slice of each live shard thread of this process, with its shard's
/// number, in the order of those numbers; empty where `/proc` says nothing.
///
/// A shard's thread is named `ferry-shard-N`; glommio starts a helper
/// thread of the same name, which has run next to nothing: of the threads
/// of one name, the one that has run longest is the shard's.
pub fn shard_slices() -> Vec<(usize, Duration)> {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut busiest: BTreeMap<usize, (f64, Duration)> = BTreeMap::new();
    for task in tasks.flatten() {
        let Ok(comm) = fs::read_to_string(task.path().join("comm")) else {
            continue;
        };
        let Some(shard) = comm
            .trim()
            .strip_prefix("ferry-shard-")
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        let Ok(sched) = fs::read_to_string(task.path().join("sched")) else {
            continue;
        };
        let (Some(ran), Some(slice)) = (field(&sched, "se.sum_exec_runtime"), slice_in(&sched))
        else {
            continue;
        };
        let entry = busiest.entry(shard).or_insert((ran, slice));
        if ran > entry.0 {
            *entry = (ran, slice);
        }
    }
    busiest
        .into_iter()
        .map(|(shard, (_, slice))| (shard, slice))
        .collect()
}

/// The `se.slice` line of a thread's `sched` file, in nanoseconds.
pub fn slice_in(sched: &str) -> Option<Duration> {
    field(sched, "se.slice").map(|nanos| Duration::from_nanos(nanos as u64))
}

/// The figure of a `name : figure` line of a thread's `sched` file.
pub fn field(sched: &str, name: &str) -> Option<f64> {
    let line = sched
        .lines()
        .find(|line| line.split(':').next().is_some_and(|key| key.trim() == name))?;
    line.rsplit(':').next()?.trim().parse().ok()
}

/// The slices of a run's shards in words, each figure named by its shard:
/// one figure for all when they agree.
pub fn describe(slices: &[(usize, Duration)]) -> Option<String> {
    let (&(_, first), rest) = slices.split_first()?;
    let micros = |slice: Duration| format!("{} µs", slice.as_micros());
    if rest.iter().all(|&(_, slice)| slice == first) {
        Some(format!("every shard {}", micros(first)))
    } else {
        Some(
            slices
                .iter()
                .map(|&(shard, slice)| format!("shard {shard} {}", micros(slice)))
                .collect::<Vec<_>>()
                .join(", "),
        )
    }
}
