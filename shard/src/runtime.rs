//! A shard on its own thread: a glommio `LocalExecutor`, pinned to its CPU,
//! driving a [`ShardCore`].
//!
//! The loop, round after round:
//! 1. admit what arrived in the intake (a bounded number per round);
//! 2. after close, once the intake is sealed and drained, close the lanes;
//! 3. start the batches of ready lanes while slots are free;
//! 4. publish the stats, and stop once closed, sealed, drained and quiet;
//! 5. wait for a batch to complete, new input (or close), or the earliest
//!    deadline.
//!
//! The shard is one task: batch futures run inside it, in a
//! `FuturesUnordered`, so "take and mark busy" and "check open and admit" are
//! single steps by construction, and no lock is taken on the shard's path.
//! A panic in a batch function is caught and answered `Panicked` (G10).

use std::future::{poll_fn, Future};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;
use glommio::{LocalExecutorBuilder, Placement};

use crate::batch_fn::BatchFn;
use crate::config::LanesConfig;
use crate::core::{BatchOutcome, ShardCore, Submission};
use crate::intake::Intake;
use crate::shard_id::ShardId;
use crate::stats::ShardCounters;

/// Inputs admitted per round at most, so completions and timers are looked
/// at regularly even under a flood of input.
const INTAKE_DRAIN_MAX: usize = 4096;

/// Memory glommio sets aside for registered I/O buffers. Ferry does no
/// glommio file I/O of its own, and the default (10 MiB) would not fit a
/// low `RLIMIT_MEMLOCK` on hosts with several shards.
const IO_MEMORY: usize = 256 << 10;

/// How one shard is placed and bounded.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    /// Which shard.
    pub id: ShardId,
    /// The CPU to pin its thread to, or `None` to leave it unbound.
    pub cpu: Option<usize>,
    /// Bounds of its lanes.
    pub lanes: LanesConfig,
    /// Batches in flight at once (slots).
    pub max_in_flight_batches: usize,
    /// Busy-poll this long before parking when idle (lower wake-up latency
    /// for more CPU); zero parks at once.
    pub spin_before_park: Duration,
}

/// Starts the shard's thread. `factory` is called once, on that thread, to
/// make the batch function that serves this shard.
pub fn spawn_shard<K, I, O, E, F, B>(
    config: ShardConfig,
    intake: Arc<Intake<Submission<K, I, O, E>>>,
    counters: Arc<ShardCounters>,
    factory: Arc<F>,
) -> std::io::Result<glommio::ExecutorJoinHandle<()>>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
    F: Fn(ShardId) -> B + Send + Sync + 'static,
    B: BatchFn<K, I, O, E> + 'static,
{
    let placement = match config.cpu {
        Some(cpu) => Placement::Fixed(cpu),
        None => Placement::Unbound,
    };
    let mut builder = LocalExecutorBuilder::new(placement)
        .name(&format!("ferry-{}", config.id))
        .io_memory(IO_MEMORY);
    if !config.spin_before_park.is_zero() {
        builder = builder.spin_before_park(config.spin_before_park);
    }
    builder
        .spawn(move || async move {
            let batch_fn = factory(config.id);
            let core = ShardCore::new(config.lanes, config.max_in_flight_batches);
            run(core, &intake, &counters, batch_fn).await;
        })
        .map_err(|err| std::io::Error::other(err.to_string()))
}

type Running<'a, I, O, E> = Pin<
    Box<
        dyn Future<
                Output = (
                    crate::LaneId,
                    Vec<crate::core::Reply<I, O, E>>,
                    BatchOutcome<O, E>,
                ),
            > + 'a,
    >,
>;

async fn run<K, I, O, E, B>(
    mut core: ShardCore<K, I, O, E>,
    intake: &Intake<Submission<K, I, O, E>>,
    counters: &ShardCounters,
    batch_fn: B,
) where
    K: std::hash::Hash + Eq + Clone,
    E: Clone,
    B: BatchFn<K, I, O, E>,
{
    let origin = Instant::now();
    let mut running: FuturesUnordered<Running<'_, I, O, E>> = FuturesUnordered::new();
    let mut close_seen = false;
    let mut sealed = false;
    let mut lanes_closed = false;
    let mut timer: Option<(Duration, glommio::timer::Timer)> = None;

    loop {
        let now = origin.elapsed();
        if !close_seen && intake.is_closed() {
            close_seen = true;
        }
        if close_seen && !sealed && intake.is_sealed() {
            // From here on nothing enters the intake; the drains below see
            // everything that did.
            sealed = true;
        }
        // An input whose push succeeded is admitted even if close came
        // after it: the lanes close only once the sealed intake is empty.
        for _ in 0..INTAKE_DRAIN_MAX {
            let Some(submission) = intake.pop() else {
                break;
            };
            core.admit(submission, now);
        }
        if sealed && !lanes_closed && intake.is_empty() {
            lanes_closed = true;
            core.close();
        }
        while let Some(dispatch) = core.dispatch(now) {
            let replies = dispatch.replies;
            let lane = dispatch.lane;
            let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
                batch_fn.call(dispatch.key, dispatch.inputs)
            }));
            running.push(Box::pin(async move {
                let outcome = match started {
                    Ok(future) => match AssertUnwindSafe(future).catch_unwind().await {
                        Ok(result) => BatchOutcome::Returned(result),
                        Err(_) => BatchOutcome::Panicked,
                    },
                    Err(_) => BatchOutcome::Panicked,
                };
                (lane, replies, outcome)
            }));
        }
        counters.publish(&core.stats());
        if lanes_closed && core.is_quiet() {
            debug_assert!(running.is_empty());
            return;
        }

        let deadline = core.next_deadline();
        if timer.as_ref().map(|(due, _)| Some(*due)) != Some(deadline) {
            timer = deadline.map(|due| {
                let wait = due.saturating_sub(origin.elapsed());
                (due, glommio::timer::Timer::new(wait))
            });
        }
        poll_fn(|cx| {
            let mut completed = false;
            while let Poll::Ready(Some((lane, replies, outcome))) = running.poll_next_unpin(cx) {
                core.complete(lane, replies, outcome, origin.elapsed());
                completed = true;
            }
            if completed {
                return Poll::Ready(());
            }
            if let Some((_, sleep)) = timer.as_mut() {
                if Pin::new(sleep).poll(cx).is_ready() {
                    timer = None;
                    return Poll::Ready(());
                }
            }
            if intake.prepare_sleep(cx.waker(), close_seen, close_seen && !sealed) {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await;
        intake.awake();
        glommio::yield_if_needed().await;
    }
}
