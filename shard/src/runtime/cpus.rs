//! The CPUs this process may use, and pinning a thread to one of them.
//!
//! The usable CPUs are the process's own affinity set (`sched_getaffinity`),
//! which reflects `taskset`, a cgroup cpuset (a container's `--cpuset-cpus`,
//! Kubernetes' static CPU manager) and the like: never the machine's online
//! list, since a shard pinned outside the set would fail or run where the
//! process was not given a CPU.

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

/// The CPUs the calling thread may run on (at start, the process's set), in
/// ascending order. Empty only if the kernel refuses to say.
///
/// ```
/// let cpus = ferry_shard::usable_cpus();
/// assert!(!cpus.is_empty());
/// assert!(cpus.windows(2).all(|pair| pair[0] < pair[1]));
/// ```
pub fn usable_cpus() -> Vec<usize> {
    match sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU)
            .filter(|&cpu| set.is_set(cpu))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Pins the calling thread to `cpu`.
pub(crate) fn pin_this_thread(cpu: usize) -> std::io::Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_sees_only_its_cpu() {
        let cpu = usable_cpus()[0];
        std::thread::spawn(move || {
            pin_this_thread(cpu).unwrap();
            assert_eq!(usable_cpus(), vec![cpu]);
        })
        .join()
        .unwrap();
    }
}
