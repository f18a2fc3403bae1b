//! The time slice a shard's thread runs with, as the kernel reports it in
//! `/proc/thread-self/sched`, read from a task on the shard: the one asked
//! for with `sched_slice` (100 µs by default) from the start and while its
//! rounds answer many inputs, the kernel's own while they answer few, and
//! the kernel's own throughout with zero.

use std::time::{Duration, Instant};

use ferry::{Engine, Runtime, ShardId, DEFAULT_SCHED_SLICE};

/// The calling thread's slice in the kernel's scheduler (`se.slice`).
fn this_thread_slice() -> Duration {
    let sched = std::fs::read_to_string("/proc/thread-self/sched").unwrap();
    let line = sched
        .lines()
        .find(|line| line.starts_with("se.slice"))
        .expect("the kernel reports se.slice (EEVDF, Linux 6.6 or later)");
    let nanos = line.rsplit(':').next().unwrap().trim();
    Duration::from_nanos(nanos.parse().unwrap())
}

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

/// The slice `engine`'s shard 0 runs with now.
fn slice_of_shard_0(engine: &Engine<u64, u64, u64, String>) -> Duration {
    let (done, on_shard) = futures::channel::oneshot::channel();
    engine
        .spawn_on(ShardId::new(0), move || async move {
            let _ = done.send(this_thread_slice());
        })
        .unwrap();
    futures::executor::block_on(on_shard).unwrap()
}

/// The slice shard 0's thread runs with, for an engine on `runtime` with
/// `slice` (`None`: the default).
fn shard_slice(runtime: Runtime, slice: Option<Duration>) -> Duration {
    let builder = Engine::<u64, u64, u64, String>::builder()
        .shards(1)
        .pin(false)
        .runtime(runtime);
    let builder = match slice {
        Some(slice) => builder.sched_slice(slice),
        None => builder,
    };
    let engine = builder
        .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
        .unwrap();
    let slice = slice_of_shard_0(&engine);
    engine.close();
    engine.join();
    slice
}

#[test]
fn a_shard_runs_with_the_slice_it_asks_for_on_either_runtime() {
    let kernels_own = this_thread_slice();
    for runtime in [Runtime::Glommio, Runtime::Tokio] {
        let default = shard_slice(runtime, None);
        let asked = shard_slice(runtime, Some(Duration::from_micros(250)));
        if kernel_has_custom_slices() {
            assert_eq!(default, DEFAULT_SCHED_SLICE, "{runtime:?}");
            assert_eq!(asked, Duration::from_micros(250), "{runtime:?}");
        } else {
            assert_eq!(default, kernels_own, "{runtime:?}");
        }
    }
}

#[test]
fn a_zero_slice_leaves_the_kernels_own() {
    let kernels_own = this_thread_slice();
    assert!(kernels_own > DEFAULT_SCHED_SLICE);
    for runtime in [Runtime::Glommio, Runtime::Tokio] {
        assert_eq!(
            shard_slice(runtime, Some(Duration::ZERO)),
            kernels_own,
            "{runtime:?}"
        );
    }
}

/// Drives `engine` with `load` until its shard 0 runs with `slice`, for at
/// most ten seconds; says whether it got there.
fn load_until(
    engine: &Engine<u64, u64, u64, String>,
    slice: Duration,
    mut load: impl FnMut(&Engine<u64, u64, u64, String>),
) -> bool {
    let give_up = Instant::now() + Duration::from_secs(10);
    while Instant::now() < give_up {
        for _ in 0..100 {
            load(engine);
        }
        if slice_of_shard_0(engine) == slice {
            return true;
        }
    }
    false
}

#[test]
fn the_short_slice_is_kept_while_rounds_answer_many_inputs() {
    if !kernel_has_custom_slices() {
        // Nothing to switch: the shard runs with the kernel's own.
        assert_eq!(shard_slice(Runtime::Tokio, None), this_thread_slice());
        return;
    }
    let kernels_own = this_thread_slice();
    for runtime in [Runtime::Glommio, Runtime::Tokio] {
        let engine = Engine::<u64, u64, u64, String>::builder()
            .shards(1)
            .pin(false)
            .runtime(runtime)
            .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
            .unwrap();
        // One input at a time: every round answers one.
        let one_at_a_time = |engine: &Engine<u64, u64, u64, String>| {
            assert_eq!(engine.submit_blocking(1, 2), Ok(2));
        };
        assert!(
            load_until(&engine, kernels_own, one_at_a_time),
            "{runtime:?}: rounds of one answer never gave the short slice back"
        );
        // A thousand inputs at once over 100 keys: rounds answer many.
        let many_at_once = |engine: &Engine<u64, u64, u64, String>| {
            let outcomes = engine.submit_many((0..1_000).map(|i| (i % 100, i)));
            let outcomes = futures::executor::block_on(outcomes.all());
            assert!(outcomes.iter().all(|outcome| outcome.is_ok()));
        };
        assert!(
            load_until(&engine, DEFAULT_SCHED_SLICE, many_at_once),
            "{runtime:?}: rounds of many answers never took the short slice again"
        );
        engine.close();
        engine.join();
    }
}
