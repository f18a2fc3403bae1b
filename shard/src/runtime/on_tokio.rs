//! The shard's runtime on tokio: a current-thread runtime with a
//! `LocalSet` per shard thread, pinned like glommio's, so that a per-core
//! tokio-based client (tokio-postgres, redis) made in the shard's factory
//! lives on its shard. It needs neither io_uring nor locked memory.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::runtime::cpus::pin_this_thread;
use crate::runtime::executor::{Executor, LocalTask};

/// A tokio current-thread runtime with a `LocalSet`.
pub(crate) struct Tokio;

impl Executor for Tokio {
    type Timer = Pin<Box<tokio::time::Sleep>>;

    fn run<F>(_name: &str, cpu: Option<usize>, shard: F) -> Result<(), String>
    where
        F: Future<Output = ()>,
    {
        if let Some(cpu) = cpu {
            pin_this_thread(cpu).map_err(|err| format!("could not pin to CPU {cpu}: {err}"))?;
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| format!("tokio could not start: {err}"))?;
        tokio::task::LocalSet::new().block_on(&runtime, shard);
        Ok(())
    }

    fn timer(wait: Duration) -> Self::Timer {
        Box::pin(tokio::time::sleep(wait))
    }

    fn spawn_local(task: LocalTask) {
        drop(tokio::task::spawn_local(task));
    }
}
