//! A tokio context for glommio shards.
//!
//! Most batch functions are written for tokio: they await
//! `tokio::time::sleep`, or a tokio-based client (tokio-postgres, redis).
//! Those need a tokio runtime's timer and I/O driver, and on a thread with
//! none they panic ("there is no reactor running"). A tokio shard has its
//! own runtime; a glommio shard's thread instead enters the handle of one
//! small tokio runtime shared by the process, whose driver runs on a
//! thread of its own (`ferry-tokio`), made the first time a glommio shard
//! starts and never before. A tokio timer or socket of a batch then wakes
//! the batch from that thread, through the shard's bell, as a store's
//! answer from another thread would; `tokio::spawn` runs its task there.
//!
//! What it costs a shard that does not use it: nothing on its path (the
//! context is one thread-local entered once per thread), and one thread
//! per process, asleep in `epoll_wait` until a tokio timer or socket
//! needs it.

use std::sync::OnceLock;

use tokio::runtime::{EnterGuard, Handle};

/// The process's runtime for glommio shards, once started (or why it
/// could not start).
static SHARED: OnceLock<Result<Handle, String>> = OnceLock::new();

/// Enters the shared runtime's context on this thread until the guard is
/// dropped, starting the runtime if this is the first time.
pub(crate) fn enter() -> Result<EnterGuard<'static>, String> {
    match SHARED.get_or_init(start) {
        Ok(handle) => Ok(handle.enter()),
        Err(why) => Err(why.clone()),
    }
}

/// Builds the runtime and hands it to its driver thread, which runs it
/// (timers, I/O and spawned tasks) for the rest of the process.
fn start() -> Result<Handle, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("the tokio context of glommio shards could not start: {err}"))?;
    let handle = runtime.handle().clone();
    std::thread::Builder::new()
        .name("ferry-tokio".to_string())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))
        .map_err(|err| format!("the tokio context of glommio shards has no thread: {err}"))?;
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_tokio_timer_fires_on_a_thread_that_entered_the_context() {
        std::thread::spawn(|| {
            let _context = enter().expect("the context starts");
            let started = Instant::now();
            futures::executor::block_on(tokio::time::sleep(Duration::from_millis(2)));
            assert!(started.elapsed() >= Duration::from_millis(2));
        })
        .join()
        .expect("slept on the shared driver");
    }

    #[test]
    fn every_thread_shares_one_runtime() {
        let first = enter().map(|_| ());
        let second = enter().map(|_| ());
        assert_eq!((first, second), (Ok(()), Ok(())));
        assert!(SHARED.get().is_some_and(Result::is_ok));
    }
}
