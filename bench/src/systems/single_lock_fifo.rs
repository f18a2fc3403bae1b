//! `single-lock-fifo`: the unkeyed analogue of [`single_lock`](super::single_lock).
//! One FIFO of waiting inputs behind one `std::sync::Mutex`, shared by every
//! caller; `workers` tasks on a tokio multi-threaded runtime, each taking up
//! to `max_batch_size` inputs from the front, running them as one
//! [`Connection::apply_unkeyed`](crate::store::Connection::apply_unkeyed)
//! through the next connection of a shared [`Pool`], and answering the
//! callers. Up to `workers`
//! batches are in flight at once; that is the system's slot count.
//!
//! # `multi-key`
//!
//! The same queue carries (key, input) pairs for `multi-key`, the
//! DataLoader way of batching many keys ([`Apply::Keys`]): a worker takes
//! up to `max_batch_size × max_trip_batches` pairs (as many inputs as one
//! of ferry's trips can carry), merges each key's inputs into one write,
//! and applies them all in one [`Connection::apply_many`](crate::store::Connection::apply_many).
//! Nothing keeps a key to one batch in flight: two workers may write the
//! same key at once, and the loser's conditional write conflicts and is
//! retried.
//!
//! # Waking
//!
//! Idle workers wait on one `tokio::sync::Notify`. A worker registers for it
//! before it looks at the queue, so a wake sent in between is not lost. Who
//! sends one, and why that is enough for the invariant *while inputs wait,
//! some worker is running, woken, or timed to look*:
//!
//! - an admission that makes the queue non-empty, or fills another whole
//!   batch (so a second idle worker can take it at once), wakes one;
//! - a worker that takes a batch and leaves inputs behind wakes one;
//! - a worker that finishes a batch looks again by itself.
//!
//! With a non-zero `max_batch_delay`, a partial batch waits until its
//! oldest input is that old: one worker at a time (`timer_held`) sleeps
//! until then, the others wait for a wake, so the deadline does not rouse
//! every idle worker at once. After [`System::close`] the delay is ignored,
//! and a worker that finds the queue empty exits.

use crate::overload;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use futures::future::{Either, Map, Ready};
use futures::FutureExt;
use tokio::sync::Notify;

use crate::store::{Pool, Store, StoreError, Write};
use crate::systems::{outputs, tokio_runtime, BatchCounts, Outcome, Settings, System};

type Answer = Result<u64, StoreError>;
type Reply = oneshot::Sender<Answer>;
type Received = Result<Answer, oneshot::Canceled>;

/// The single-lock FIFO under load.
pub struct SingleLockFifo {
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

/// What a batch is applied as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Apply {
    /// One unkeyed append (`single-lock-fifo`).
    Stream,
    /// One write per key of the batch, all in one request (`multi-key`).
    Keys,
}

struct Shared {
    apply: Apply,
    state: Mutex<State>,
    /// Wakes idle workers.
    ready: Notify,
    pool: Pool,
    batch_size_max: usize,
    batch_delay_max: Duration,
    queued_max: usize,
}

struct State {
    /// Waiting inputs, oldest first; at most `queued_max`.
    queue: VecDeque<Waiting>,
    closed: bool,
    /// Whether a worker is sleeping until the front's delay is up.
    timer_held: bool,
    counts: BatchCounts,
}

struct Waiting {
    /// Its key (`Apply::Keys` only).
    key: u64,
    input: u64,
    reply: Reply,
    /// When it was admitted; only read, and so only taken, with a delay.
    admitted: Option<Instant>,
}

/// A batch taken from the front: inputs and their callers, in order.
struct Batch {
    keys: Vec<u64>,
    inputs: Vec<u64>,
    replies: Vec<Reply>,
}

enum Next {
    Run(Batch),
    /// Wait for a wake, or also until this instant (the timer holder).
    Wait(Option<Instant>),
    Exit,
}

impl SingleLockFifo {
    /// Starts `workers` worker tasks on a tokio runtime of
    /// `settings.tokio_workers` threads, sharing `connections` connections
    /// to `store` made on that runtime, applying batches as `apply` says.
    pub fn start(
        settings: &Settings,
        workers: usize,
        store: Store,
        connections: usize,
        apply: Apply,
    ) -> Result<Self, String> {
        assert!(settings.max_batch_size >= 1, "a batch holds an input");
        let (name, batch_size_max) = match apply {
            Apply::Stream => ("single-lock-fifo", settings.max_batch_size),
            Apply::Keys => (
                "multi-key",
                settings.max_batch_size * settings.max_trip_batches.max(1),
            ),
        };
        let runtime = tokio_runtime(name, settings.tokio_workers, store)?;
        let pool = Pool::open(store, connections, Some(&runtime))?;
        let shared = Arc::new(Shared {
            apply,
            state: Mutex::new(State {
                queue: VecDeque::new(),
                closed: false,
                timer_held: false,
                counts: BatchCounts::default(),
            }),
            ready: Notify::new(),
            pool,
            batch_size_max,
            batch_delay_max: settings.max_batch_delay,
            queued_max: settings.max_waiting,
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

    /// What a worker does next; `held_timer` says it was the timer holder.
    fn next(&self, held_timer: bool) -> Next {
        let mut state = self.lock();
        if held_timer {
            state.timer_held = false;
        }
        let waiting = state.queue.len();
        if waiting == 0 {
            return if state.closed {
                Next::Exit
            } else {
                Next::Wait(None)
            };
        }
        if waiting < self.batch_size_max && !state.closed {
            if let Some(due) = self.due(&state) {
                if due > Instant::now() {
                    if state.timer_held {
                        return Next::Wait(None);
                    }
                    state.timer_held = true;
                    return Next::Wait(Some(due));
                }
            }
        }
        let count = waiting.min(self.batch_size_max);
        let mut batch = Batch {
            keys: Vec::with_capacity(count),
            inputs: Vec::with_capacity(count),
            replies: Vec::with_capacity(count),
        };
        for waiting in state.queue.drain(..count) {
            batch.keys.push(waiting.key);
            batch.inputs.push(waiting.input);
            batch.replies.push(waiting.reply);
        }
        state.counts.batches += 1;
        state.counts.inputs += count as u64;
        let more = !state.queue.is_empty();
        drop(state);
        if more {
            self.ready.notify_one();
        }
        debug_assert!((1..=self.batch_size_max).contains(&batch.inputs.len()));
        Next::Run(batch)
    }

    /// When the front's delay is up; `None` without a delay.
    fn due(&self, state: &State) -> Option<Instant> {
        let admitted = state.queue.front()?.admitted?;
        Some(admitted + self.batch_delay_max)
    }

    async fn run(&self, batch: Batch) {
        overload::note_sent(&batch.inputs);
        if self.apply == Apply::Keys {
            return self.run_keys(batch).await;
        }
        let count = batch.inputs.len() as u64;
        let result = self
            .pool
            .get()
            .apply_unkeyed(count, batch.inputs.iter().sum())
            .await
            .map(|length| outputs(length, count));
        match result {
            Ok(outputs) => {
                for (reply, output) in batch.replies.into_iter().zip(outputs) {
                    let _ = reply.send(Ok(output));
                }
            }
            Err(err) => {
                for reply in batch.replies {
                    let _ = reply.send(Err(err.clone()));
                }
            }
        }
    }
}

impl Shared {
    /// A `multi-key` batch: each key's inputs merged into one write, every
    /// write in one request; each input answered with the version its
    /// place in its key's write produced.
    async fn run_keys(&self, batch: Batch) {
        let mut writes: Vec<Write> = Vec::new();
        let mut write_of: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
        // Each input's write, and its place among that write's inputs.
        let mut places = Vec::with_capacity(batch.inputs.len());
        for (&key, &input) in batch.keys.iter().zip(&batch.inputs) {
            let at = *write_of.entry(key).or_insert_with(|| {
                writes.push(Write {
                    key,
                    count: 0,
                    sum: 0,
                });
                writes.len() - 1
            });
            let write = &mut writes[at];
            places.push((at, write.count));
            write.count += 1;
            write.sum += input;
        }
        let applied = self.pool.get().apply_many(writes).await;
        for (reply, (at, place)) in batch.replies.into_iter().zip(places) {
            let answer = match &applied[at] {
                Ok(version) => Ok(version + place + 1),
                Err(err) => Err(err.clone()),
            };
            let _ = reply.send(answer);
        }
    }
}

/// One worker: take a batch, run it, answer it; wait when none is ready.
async fn work(shared: Arc<Shared>) {
    let mut held_timer = false;
    loop {
        // Registered before looking, so a wake sent in between counts.
        let notified = shared.ready.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();

        let next = shared.next(held_timer);
        held_timer = matches!(next, Next::Wait(Some(_)));
        match next {
            Next::Run(batch) => shared.run(batch).await,
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

impl System for SingleLockFifo {
    type Submit = Either<Ready<Outcome>, Map<oneshot::Receiver<Answer>, fn(Received) -> Outcome>>;

    /// `key` is kept for `multi-key` (the stream has none).
    fn submit(&self, key: u64, input: u64) -> Self::Submit {
        let shared = &self.shared;
        let (reply, answer) = oneshot::channel();
        let admitted = (!shared.batch_delay_max.is_zero()).then(Instant::now);
        let wake = {
            let mut state = shared.lock();
            if state.closed || state.queue.len() >= shared.queued_max {
                None
            } else {
                state.queue.push_back(Waiting {
                    key,
                    input,
                    reply,
                    admitted,
                });
                let waiting = state.queue.len();
                debug_assert!(waiting <= shared.queued_max);
                Some(waiting == 1 || waiting.is_multiple_of(shared.batch_size_max))
            }
        };
        match wake {
            Some(wake) => {
                if wake {
                    shared.ready.notify_one();
                }
                Either::Right(answer.map(outcome as fn(Received) -> Outcome))
            }
            None => Either::Left(futures::future::ready(Outcome::Refused)),
        }
    }

    fn batch_counts(&self) -> Option<BatchCounts> {
        Some(self.shared.lock().counts)
    }

    fn close(&mut self) {
        self.shared.lock().closed = true;
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

impl Drop for SingleLockFifo {
    fn drop(&mut self) {
        self.close();
    }
}
