//! How many shards an engine starts with when `shards(n)` is not set.

use ferry_shard::usable_cpus;

/// The shard count an engine or batcher starts with by default: half the
/// CPUs this process may use, rounded down, and at least one.
///
/// The CPUs are the fewer of the process's CPU affinity and its CPU quota
/// (a container's `--cpus`, a cgroup's `cpu.max`), so a service in a
/// container sized for two CPUs on a large host starts one shard, not one
/// per host CPU.
///
/// Why half: a shard is one thread, and the callers that submit to it and
/// take its answers are threads too. A shard's round costs far less per
/// input than the caller spends making the input and using the answer, so
/// a shard keeps up with the callers of several CPUs. When every CPU holds
/// a shard, each caller shares its CPU with one, and every input crosses a
/// context switch on the way in and on the way out; on two CPUs shared
/// with two load threads and a store's thread, `ferry-load` measured one
/// shard doing more inputs a second than two, at a third of their CPU
/// (`docs/benchmarks.md`, "Shards where CPUs are shared"). A service that
/// runs little beside Ferry sets `shards(n)` up to the CPUs.
///
/// ```
/// let shards = ferry::default_shards();
/// let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
/// assert!(shards >= 1);
/// assert!(shards <= cpus.max(2) / 2);
///
/// let engine: ferry::Engine<u64, u64, u64, String> = ferry::Engine::builder()
///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
///     .unwrap();
/// assert_eq!(engine.shards(), shards);
/// ```
pub fn default_shards() -> usize {
    let affinity = usable_cpus().len();
    let quota = std::thread::available_parallelism().map_or(affinity, |n| n.get());
    half(affinity.min(quota))
}

/// Half of `cpus`, at least one.
fn half(cpus: usize) -> usize {
    (cpus / 2).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_the_cpus_and_at_least_one() {
        assert_eq!(half(0), 1);
        assert_eq!(half(1), 1);
        assert_eq!(half(2), 1);
        assert_eq!(half(3), 1);
        assert_eq!(half(4), 2);
        assert_eq!(half(64), 32);
    }
}
