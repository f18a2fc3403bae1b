//! How many shards an engine starts with when `shards(n)` is not set.

use ferry_shard::usable_cpus;

/// The shard count an engine or batcher starts with by default: one per CPU
/// this process may use.
///
/// The CPUs are the fewer of the process's CPU affinity and its CPU quota
/// (a container's `--cpus`, a cgroup's `cpu.max`), so a service in a
/// container given two CPUs on a large host starts two shards, not one per
/// host CPU. The shards are not pinned unless asked
/// ([`Builder::pin`](crate::Builder::pin)): they share these CPUs with the
/// callers, and the scheduler places them.
///
/// ```
/// let shards = ferry::default_shards();
/// let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
/// assert!(shards >= 1 && shards <= cpus);
///
/// let engine: ferry::Engine<u64, u64, u64, String> = ferry::Engine::builder()
///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
///     .unwrap();
/// assert_eq!(engine.shards(), shards);
/// ```
pub fn default_shards() -> usize {
    let affinity = usable_cpus().len();
    let quota = std::thread::available_parallelism().map_or(affinity, |n| n.get());
    affinity.min(quota).max(1)
}
