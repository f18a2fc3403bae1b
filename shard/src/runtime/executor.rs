//! The seam between a shard and the runtime of its thread: everything the
//! shard loop needs from an executor, and nothing more.
//!
//! - run the shard's future on a thread of its own, pinned to its CPU;
//! - a timer, for the earliest lane deadline;
//! - spawn a task beside the loop (tasks sent with `spawn_on`);
//! - its waker, to park the loop until an event (the wake-up from other
//!   threads goes through the intake, which wakes that waker).
//!
//! A yield is not part of it: waking one's own waker and returning
//! `Pending` once gives every single-threaded executor's other tasks a turn.
//!
//! Implemented for glommio in `on_glommio.rs` and for tokio (a
//! current-thread runtime with a `LocalSet`) in `on_tokio.rs`; which one a
//! shard runs is chosen in `choice.rs`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A task to run beside the shard loop.
pub(crate) type LocalTask = Pin<Box<dyn Future<Output = ()>>>;

/// What a shard needs from the executor of its thread.
pub(crate) trait Executor: 'static {
    /// Fires once, after the wait it was made with (its output is not
    /// looked at).
    type Timer: Future + Unpin;

    /// Builds an executor on the calling thread (a thread made for the
    /// shard `name`), pins the thread to `cpu` if given, and runs `shard` on
    /// it to completion. `Err` says why no executor could run here.
    fn run<F>(name: &str, cpu: Option<usize>, shard: F) -> Result<(), String>
    where
        F: Future<Output = ()>;

    /// A timer that fires after `wait`.
    fn timer(wait: Duration) -> Self::Timer;

    /// Runs `task` on this thread beside the loop.
    fn spawn_local(task: LocalTask);
}

/// Gives the other tasks of this thread a turn, once.
pub(crate) async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx: &mut Context<'_>| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}
