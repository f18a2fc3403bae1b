//! `single-lock`: the design Ferry grew from
//! (docs/design/0001-per-key-batching-on-shards.md, "Alternatives"), ported
//! to Rust as directly as it goes.
//!
//! All lanes are one [`Lanes`] (the same pure structure a Ferry shard uses)
//! behind one `std::sync::Mutex`. Admission is one critical section that
//! also checks the structure is open; taking a batch is one critical section
//! that also marks its lane busy, so G1 holds by construction, as in the
//! original. `workers` tasks, shared by all keys, run on a tokio
//! multi-threaded runtime: each takes a ready lane's batch, runs it against
//! the store through the next connection of a shared [`Pool`], completes
//! it under the lock, and answers the callers.
//!
//! An idle worker waits on a `tokio::sync::Notify` for a lane to become
//! ready, or sleeps until the earliest deadline (with tokio's timer). The
//! original woke every idle worker on every admission; here an admission that
//! leaves a lane ready wakes one, a cheaper choice that can only help this
//! baseline.

use crate::event_time;
use crate::overload;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use futures::channel::oneshot;
use futures::future::{Either, Map, Ready};
use futures::FutureExt;
use tokio::sync::Notify;

use ferry_shard::parts::{Batch, Lanes};
use ferry_shard::QueueConfig;

use crate::store::{Pool, Store, StoreError};
use crate::systems::{outputs, tokio_runtime, BatchCounts, Outcome, Settings, System};

type Answer = Result<u64, StoreError>;
type Reply = oneshot::Sender<Answer>;
type Received = Result<Answer, oneshot::Canceled>;

/// The single-lock design under load.
pub struct SingleLock {
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes idle workers.
    ready: Notify,
    /// `now` for the lanes is the time since this instant.
    origin: Instant,
    pool: Pool,
}

struct State {
    lanes: Lanes<u64, (u64, Reply)>,
    counts: BatchCounts,
}

impl SingleLock {
    /// Starts `workers` worker tasks on a tokio runtime of
    /// `settings.tokio_workers` threads, sharing `connections` connections
    /// to `store` made on that runtime.
    pub fn start(
        settings: &Settings,
        workers: usize,
        store: Store,
        connections: usize,
    ) -> Result<Self, String> {
        let lanes = Lanes::new(QueueConfig {
            max_batch_size: settings.max_batch_size,
            max_batch_delay: settings.max_batch_delay,
            max_waiting: settings.max_waiting,
            ..QueueConfig::default()
        });
        let runtime = tokio_runtime("single-lock", settings.tokio_workers, store)?;
        let pool = Pool::open(store, connections, Some(&runtime))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                lanes,
                counts: BatchCounts::default(),
            }),
            ready: Notify::new(),
            origin: Instant::now(),
            pool,
        });
        let workers = (0..workers.max(1))
            .map(|_| runtime.spawn(work(Arc::clone(&shared))))
            .collect();
        Ok(Self {
            shared,
            runtime: Some(runtime),
            workers,
        })
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

enum Next {
    Run(Batch<u64, (u64, Reply)>),
    Wait(Option<std::time::Duration>),
    Exit,
}

/// One worker: take a batch, run it, complete it; wait when nothing is ready.
async fn work(shared: Arc<Shared>) {
    loop {
        // Registered before looking, so a lane made ready in between still
        // wakes this worker.
        let notified = shared.ready.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();

        let next = {
            let mut state = shared.lock();
            let now = shared.origin.elapsed();
            match state.lanes.take(now) {
                Some(batch) => {
                    state.counts.batches += 1;
                    state.counts.inputs += batch.items.len() as u64;
                    if state.lanes.has_ready() {
                        shared.ready.notify_one();
                    }
                    Next::Run(batch)
                }
                None if state.lanes.is_closed() && state.lanes.lanes() == 0 => Next::Exit,
                None => Next::Wait(state.lanes.next_deadline()),
            }
        };
        match next {
            Next::Run(batch) => run_batch(&shared, batch).await,
            Next::Exit => return,
            Next::Wait(None) => notified.await,
            Next::Wait(Some(due)) => {
                let sleep = tokio::time::sleep_until((shared.origin + due).into());
                tokio::select! {
                    _ = notified => {}
                    _ = sleep => {}
                }
            }
        }
    }
}

async fn run_batch(shared: &Shared, batch: Batch<u64, (u64, Reply)>) {
    let count = batch.items.len() as u64;
    let (inputs, replies): (Vec<u64>, Vec<Reply>) = batch.items.into_iter().unzip();
    overload::note_sent(&inputs);
    let result = shared
        .pool
        .get()
        .apply(batch.key, count, inputs.iter().sum())
        .await
        .map(|version| outputs(version, count));
    if result.is_ok() {
        event_time::note_applied(batch.key, &inputs);
    }
    let (more_ready, finished) = {
        let mut state = shared.lock();
        state.lanes.complete(batch.lane, shared.origin.elapsed());
        (
            state.lanes.has_ready(),
            state.lanes.is_closed() && state.lanes.lanes() == 0,
        )
    };
    match result {
        Ok(outputs) => {
            for (reply, output) in replies.into_iter().zip(outputs) {
                let _ = reply.send(Ok(output));
            }
        }
        Err(err) => {
            for reply in replies {
                let _ = reply.send(Err(err.clone()));
            }
        }
    }
    if more_ready {
        shared.ready.notify_one();
    }
    if finished {
        // Closed and drained: let every idle worker see it and exit.
        shared.ready.notify_waiters();
    }
}

/// An error of a write whose connection failed after it was sent is an
/// unknown outcome, and so is a reply dropped unsent (its batch was
/// abandoned, maybe on the wire, as the runtime stopped).
fn outcome(received: Received) -> Outcome {
    match received {
        Ok(Ok(_)) => Outcome::Done,
        Ok(Err(err)) if err.is_unknown() => Outcome::Unknown,
        Ok(Err(_)) => Outcome::Failed,
        Err(oneshot::Canceled) => Outcome::Unknown,
    }
}

impl System for SingleLock {
    type Submit = Either<Ready<Outcome>, Map<oneshot::Receiver<Answer>, fn(Received) -> Outcome>>;

    fn submit(&self, key: u64, input: u64) -> Self::Submit {
        let (reply, answer) = oneshot::channel();
        let admitted = {
            let mut state = self.shared.lock();
            let now = self.shared.origin.elapsed();
            state
                .lanes
                .admit(key, (input, reply), 0, 1, now)
                .map(|()| state.lanes.has_ready())
        };
        match admitted {
            Ok(ready) => {
                if ready {
                    self.shared.ready.notify_one();
                }
                Either::Right(answer.map(outcome as fn(Received) -> Outcome))
            }
            Err(_refusal) => Either::Left(futures::future::ready(Outcome::Refused)),
        }
    }

    fn batch_counts(&self) -> Option<BatchCounts> {
        Some(self.shared.lock().counts)
    }

    fn close(&mut self) {
        self.shared.lock().lanes.close();
        self.shared.ready.notify_waiters();
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        let workers = std::mem::take(&mut self.workers);
        runtime.block_on(async {
            for worker in workers {
                let _ = worker.await;
            }
        });
        runtime.shutdown_background();
    }
}

impl Drop for SingleLock {
    fn drop(&mut self) {
        self.close();
    }
}
