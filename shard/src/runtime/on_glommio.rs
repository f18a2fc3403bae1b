//! The shard's runtime on glommio: a `LocalExecutor` per shard thread, in
//! the process's tokio context (`tokio_context.rs`), so that batch
//! functions written for tokio run here too.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use glommio::{LocalExecutorBuilder, Placement};

use crate::runtime::executor::{Executor, LocalTask};
use crate::runtime::glommio_needs::glommio_failure;
use crate::runtime::tokio_context;

/// Memory glommio sets aside for registered I/O buffers. Ferry does no
/// glommio file I/O of its own, and the default (10 MiB) would not fit a
/// low `RLIMIT_MEMLOCK` on hosts with several shards.
const IO_MEMORY: usize = 256 << 10;

/// Set once glommio panicked while starting: it will not start in this
/// process again.
static GLOMMIO_REFUSED: AtomicBool = AtomicBool::new(false);

/// Whether glommio has already failed to start in this process (then
/// `Runtime::Auto` goes straight to tokio).
pub(crate) fn refused_here() -> bool {
    GLOMMIO_REFUSED.load(Relaxed)
}

/// The text a panic carried, if it carried one.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "it panicked while starting".to_string())
}

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
        if GLOMMIO_REFUSED.load(Relaxed) {
            return Err(glommio_failure(
                &"it failed to start earlier in this process",
            ));
        }
        // Entered before glommio pins the thread, so that the context's
        // driver thread, if this makes it, keeps the process's CPUs.
        let _tokio = tokio_context::enter()?;
        // Glommio 0.9 panics, rather than failing, when io_uring_setup is
        // refused (a seccomp profile): its panic becomes this shard's
        // runtime error, and later starts in this process (where glommio's
        // own set-up stays poisoned) are refused at once.
        let made = std::panic::catch_unwind(|| {
            LocalExecutorBuilder::new(placement)
                .name(name)
                .io_memory(IO_MEMORY)
                .make()
        });
        let executor = match made {
            Ok(Ok(executor)) => executor,
            Ok(Err(err)) => return Err(glommio_failure(&err)),
            Err(panic) => {
                GLOMMIO_REFUSED.store(true, Relaxed);
                return Err(glommio_failure(&panic_text(&*panic)));
            }
        };
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
