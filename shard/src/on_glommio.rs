//! The shard's runtime on glommio: a `LocalExecutor` per shard thread.

use std::future::Future;
use std::time::Duration;

use glommio::{LocalExecutorBuilder, Placement};

use crate::executor::{Executor, LocalTask};
use crate::runtime::glommio_failure;

/// Memory glommio sets aside for registered I/O buffers. Ferry does no
/// glommio file I/O of its own, and the default (10 MiB) would not fit a
/// low `RLIMIT_MEMLOCK` on hosts with several shards.
const IO_MEMORY: usize = 256 << 10;

/// Glommio's executor (io_uring based).
pub(crate) struct Glommio;

impl Executor for Glommio {
    type Timer = glommio::timer::Timer;

    fn run<F>(name: &str, cpu: Option<usize>, shard: F) -> Result<(), String>
    where
        F: Future<Output = ()>,
    {
        let placement = match cpu {
            Some(cpu) => Placement::Fixed(cpu),
            None => Placement::Unbound,
        };
        let executor = LocalExecutorBuilder::new(placement)
            .name(name)
            .io_memory(IO_MEMORY)
            .make()
            .map_err(|err| glommio_failure(&err))?;
        executor.run(shard);
        Ok(())
    }

    fn timer(wait: Duration) -> Self::Timer {
        glommio::timer::Timer::new(wait)
    }

    fn spawn_local(task: LocalTask) {
        glommio::spawn_local(task).detach();
    }
}
