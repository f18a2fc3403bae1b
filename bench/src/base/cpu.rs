//! CPU time used by this process: all threads together (shards, runtimes,
//! generators and the store), and split by whose threads they are
//! ([`Threads`]). Divided by the inputs a run completed, it gives a cost
//! per input that stays meaningful when the machine is shared and
//! throughput is not.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

/// CPU time the process has used since it started (user and system).
pub fn process_cpu_time() -> Duration {
    cpu_time(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time the calling thread has used since it started.
pub fn thread_cpu_time() -> Duration {
    cpu_time(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_time(clock: libc::clockid_t) -> Duration {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid, writable `timespec` that outlives the call;
    // the clock id is a constant the kernel knows.
    let result = unsafe { libc::clock_gettime(clock, &mut time) };
    if result != 0 {
        return Duration::ZERO;
    }
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

/// CPU time of the load's threads that have ended, in ns: a generator
/// adds its own as it ends ([`count_at_exit`]), since `/proc` forgets a
/// thread once it is gone.
static LOAD_GONE_NS: AtomicU64 = AtomicU64::new(0);

/// Counts the calling thread's CPU time as the load's when the returned
/// guard drops, at the thread's end. For threads born during a run (the
/// generators): one alive when a run's [`Threads`] was first read would
/// have its earlier time counted too.
pub fn count_at_exit() -> impl Drop {
    struct AtExit;
    impl Drop for AtExit {
        fn drop(&mut self) {
            let ns = u64::try_from(thread_cpu_time().as_nanos()).unwrap_or(u64::MAX);
            LOAD_GONE_NS.fetch_add(ns, Ordering::Relaxed);
        }
    }
    AtExit
}

/// Whose a thread of this process is, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    /// The load's generators (`ferry-load-gen-*`).
    Load,
    /// The simulated store, the fault injector and its proxy
    /// (`ferry-load-store`, `ferry-load-faults`, `ferry-load-proxy*`).
    Store,
    /// Every other thread: the system's own (shards, runtimes, workers)
    /// and the main thread, which sleeps through a run.
    System,
}

impl Owner {
    /// The owner of a thread named `name` (as `/proc` shows it: at most
    /// 15 bytes).
    ///
    /// ```
    /// use ferry_bench::base::cpu::Owner;
    ///
    /// assert_eq!(Owner::of("ferry-load-gen-0"), Owner::Load);
    /// assert_eq!(Owner::of("ferry-load-prox"), Owner::Store);
    /// assert_eq!(Owner::of("ferry-0"), Owner::System);
    /// ```
    pub fn of(name: &str) -> Owner {
        if name.starts_with("ferry-load-gen") {
            Owner::Load
        } else if ["ferry-load-sto", "ferry-load-fau", "ferry-load-pro"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
        {
            Owner::Store
        } else {
            Owner::System
        }
    }
}

/// CPU time per thread of this process, read from `/proc/self/task` (each
/// thread's `schedstat`: nanoseconds on a CPU).
#[derive(Clone, Debug, Default)]
pub struct Threads {
    times: HashMap<u32, (Owner, Duration)>,
    /// [`LOAD_GONE_NS`] then.
    load_gone: Duration,
}

impl Threads {
    /// Every thread alive now, with its CPU time so far; empty where
    /// `/proc` cannot be read.
    pub fn now() -> Threads {
        let mut times = HashMap::new();
        let load_gone = Duration::from_nanos(LOAD_GONE_NS.load(Ordering::Relaxed));
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return Threads { times, load_gone };
        };
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            let path = task.path();
            let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            let Some(on_cpu) = std::fs::read_to_string(path.join("schedstat"))
                .ok()
                .and_then(|stat| stat.split_whitespace().next()?.parse().ok())
            else {
                continue;
            };
            times.insert(
                tid,
                (Owner::of(name.trim_end()), Duration::from_nanos(on_cpu)),
            );
        }
        Threads { times, load_gone }
    }

    /// The CPU time each owner's threads used since `earlier` (a thread
    /// born since counts whole; one gone since is not seen, but for the
    /// load's, which count themselves as they end).
    pub fn since(&self, earlier: &Threads) -> CpuSplit {
        let mut split = CpuSplit {
            load: self.load_gone.saturating_sub(earlier.load_gone),
            ..CpuSplit::default()
        };
        for (tid, (owner, time)) in &self.times {
            let before = earlier
                .times
                .get(tid)
                .map_or(Duration::ZERO, |(_, time)| *time);
            let used = time.saturating_sub(before);
            match owner {
                Owner::Load => split.load += used,
                Owner::Store => split.store += used,
                Owner::System => split.system += used,
            }
        }
        split
    }
}

/// CPU time split by whose threads used it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuSplit {
    /// The system under load's own threads.
    pub system: Duration,
    /// The load's generators.
    pub load: Duration,
    /// The simulated store and the fault injector.
    pub store: Duration,
}

/// A [`CpuSplit`] per input completed, µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CpuSplitPerInput {
    /// The system's own threads.
    pub system_us: f64,
    /// The load's generators.
    pub load_us: f64,
    /// The simulated store and the fault injector.
    pub store_us: f64,
}

impl CpuSplit {
    /// Per input of `inputs` (zeros for none).
    pub fn per_input(self, inputs: u64) -> CpuSplitPerInput {
        let us = |time: Duration| {
            if inputs == 0 {
                0.0
            } else {
                time.as_secs_f64() * 1e6 / inputs as f64
            }
        };
        CpuSplitPerInput {
            system_us: us(self.system),
            load_us: us(self.load),
            store_us: us(self.store),
        }
    }
}
