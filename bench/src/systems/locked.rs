//! A queue behind one `std::sync::Mutex`, drained by a pool of worker tasks
//! on a tokio multi-threaded runtime that share a [`Pool`] of store
//! connections: the frame of [`single_lock`](super::single_lock) and
//! [`single_lock_fifo`](super::single_lock_fifo), generic over the queue's
//! discipline ([`Queue`]).
//!
//! A worker registers for the shared `tokio::sync::Notify` before it looks
//! at the queue, so a wake sent in between is not lost. It takes a batch in
//! one critical section (counted there, in [`BatchCounts`]), runs it outside
//! the lock, completes it under the lock when the discipline asks for that
//! ([`Queue::COMPLETES`]), then answers its callers. With nothing to take it
//! waits for a wake, or also until the instant the queue names.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use futures::channel::oneshot;
use futures::future::{Either, Map, Ready};
use futures::FutureExt;
use tokio::sync::Notify;

use crate::store::{Pool, Store, StoreError};
use crate::systems::{tokio_runtime, BatchCounts, Outcome, Settings};

/// What a caller is answered: the output of its input, or why none.
pub(crate) type Answer = Result<u64, StoreError>;
/// Where a caller's answer goes.
pub(crate) type Reply = oneshot::Sender<Answer>;
type Received = Result<Answer, oneshot::Canceled>;
/// The future of one submitted input's outcome.
pub(crate) type Submit =
    Either<Ready<Outcome>, Map<oneshot::Receiver<Answer>, fn(Received) -> Outcome>>;

/// What a worker does next.
pub(crate) enum Next<B> {
    /// Run this batch of `inputs` inputs; `more` says another is ready.
    Run { batch: B, inputs: usize, more: bool },
    /// Wait for a wake, or also until this instant.
    Wait(Option<Instant>),
    /// Closed and drained: the worker ends.
    Exit,
}

/// Whom a completed batch wakes.
#[derive(Default)]
pub(crate) struct Wake {
    /// Another batch is ready: wake one idle worker.
    pub(crate) more: bool,
    /// Closed and drained: wake every idle worker, so each sees it and exits.
    pub(crate) finished: bool,
}

/// A queue discipline: what waits, how a batch is taken, run and answered.
pub(crate) trait Queue: Send + 'static {
    /// A batch taken from the queue.
    type Batch: Send + 'static;
    /// A batch that ran: what completes it and answers its callers.
    type Ran: Send;
    /// Whether a batch that ran is completed under the lock before its
    /// callers are answered (`complete` is called only then).
    const COMPLETES: bool;

    /// What a worker does next; `held_timer` says its last answer was a
    /// `Next::Wait(Some(_))`.
    fn take(&mut self, held_timer: bool) -> Next<Self::Batch>;

    /// Runs `batch` against the store through `pool`, outside the lock.
    fn run(batch: Self::Batch, pool: &Pool) -> impl Future<Output = Self::Ran> + Send;

    /// Completes `ran` under the lock.
    fn complete(&mut self, _ran: &Self::Ran) -> Wake {
        Wake::default()
    }

    /// Sends every caller of `ran` its answer.
    fn answer(ran: Self::Ran);

    /// Admits no more; what waits still runs.
    fn close(&mut self);
}

/// The queue `Q` behind one mutex, its workers, runtime and connections.
pub(crate) struct Locked<Q: Queue> {
    shared: Arc<Shared<Q>>,
    runtime: Option<tokio::runtime::Runtime>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

struct Shared<Q> {
    state: Mutex<State<Q>>,
    /// Wakes idle workers.
    ready: Notify,
    pool: Pool,
}

struct State<Q> {
    queue: Q,
    counts: BatchCounts,
}

impl<Q: Queue> Locked<Q> {
    /// Starts `workers` worker tasks draining `queue` on a tokio runtime
    /// named `name` of `settings.tokio_workers` threads, sharing
    /// `connections` connections to `store` made on that runtime.
    pub(crate) fn start(
        name: &str,
        settings: &Settings,
        queue: Q,
        workers: usize,
        store: Store,
        connections: usize,
    ) -> Result<Self, String> {
        let runtime = tokio_runtime(name, settings.tokio_workers, store)?;
        let pool = Pool::open(store, connections, Some(&runtime))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue,
                counts: BatchCounts::default(),
            }),
            ready: Notify::new(),
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

    /// Admits one caller through `admit`, called under the lock with the
    /// queue and the caller's reply: `Some(wake)` when admitted (`wake`
    /// says to wake one idle worker), `None` when refused.
    pub(crate) fn submit(&self, admit: impl FnOnce(&mut Q, Reply) -> Option<bool>) -> Submit {
        let (reply, answer) = oneshot::channel();
        let admitted = admit(&mut self.shared.lock().queue, reply);
        match admitted {
            Some(wake) => {
                if wake {
                    self.shared.ready.notify_one();
                }
                Either::Right(answer.map(outcome as fn(Received) -> Outcome))
            }
            None => Either::Left(futures::future::ready(Outcome::Refused)),
        }
    }

    /// Batches taken so far and the inputs they carried.
    pub(crate) fn counts(&self) -> BatchCounts {
        self.shared.lock().counts
    }

    /// Closes the queue, lets the workers drain it, and stops the runtime.
    pub(crate) fn close(&mut self) {
        self.shared.lock().queue.close();
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

impl<Q: Queue> Drop for Locked<Q> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<Q: Queue> Shared<Q> {
    fn lock(&self) -> MutexGuard<'_, State<Q>> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Takes the next step under the lock, counting a batch taken, and
    /// wakes another worker when more is ready.
    fn next(&self, held_timer: bool) -> Next<Q::Batch> {
        let mut state = self.lock();
        let next = state.queue.take(held_timer);
        if let Next::Run { inputs, more, .. } = next {
            state.counts.batches += 1;
            state.counts.inputs += inputs as u64;
            drop(state);
            if more {
                self.ready.notify_one();
            }
        }
        next
    }

    /// Runs `batch`, completes it if the queue asks, answers its callers,
    /// then wakes whom its completion says.
    async fn run(&self, batch: Q::Batch) {
        let ran = Q::run(batch, &self.pool).await;
        let wake = if Q::COMPLETES {
            self.lock().queue.complete(&ran)
        } else {
            Wake::default()
        };
        Q::answer(ran);
        if wake.more {
            self.ready.notify_one();
        }
        if wake.finished {
            self.ready.notify_waiters();
        }
    }
}

/// One worker: take a batch, run it, answer it; wait when none is ready.
async fn work<Q: Queue>(shared: Arc<Shared<Q>>) {
    let mut held_timer = false;
    loop {
        // Registered before looking, so a wake sent in between counts.
        let notified = shared.ready.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();

        let next = shared.next(held_timer);
        held_timer = matches!(next, Next::Wait(Some(_)));
        match next {
            Next::Run { batch, .. } => shared.run(batch).await,
            Next::Exit => return,
            Next::Wait(None) => notified.await,
            Next::Wait(Some(due)) => {
                let sleep = tokio::time::sleep_until(due.into());
                tokio::select! {
                    _ = notified => {}
                    _ = sleep => {}
                }
            }
        }
    }
}

/// Answers every caller of one write: each its output, or all the error.
pub(crate) fn answer_all(replies: Vec<Reply>, result: Result<Vec<u64>, StoreError>) {
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
}

/// An error of a write whose connection failed after it was sent is an
/// unknown outcome, and so is a reply dropped unsent (its batch was
/// abandoned, maybe on the wire, as the runtime stopped).
fn outcome(received: Received) -> Outcome {
    match received {
        Ok(Ok(_)) => Outcome::Done,
        Ok(Err(err)) if err.is_unknown() => Outcome::Unknown,
        Ok(Err(err)) => Outcome::Failed(err.to_string()),
        Err(oneshot::Canceled) => Outcome::Unknown,
    }
}
