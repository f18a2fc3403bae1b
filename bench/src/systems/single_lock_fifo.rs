//! `single-lock-fifo`: the unkeyed analogue of [`single_lock`](super::single_lock).
//! One FIFO of waiting inputs behind one `std::sync::Mutex`, shared by every
//! caller; `workers` tasks on a tokio multi-threaded runtime, each taking up
//! to `max_batch_size` inputs from the front, running them as one
//! [`Connection::apply_unkeyed`](crate::store::Connection::apply_unkeyed)
//! through the next connection of a shared [`Pool`], and answering the
//! callers. Up to `workers`
//! batches are in flight at once; that is the system's slot count. The
//! mutex, the workers and the connections are a `Locked` frame; this file
//! is the FIFO's part.
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

use crate::scenarios::overload;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::store::{Pool, Store, StoreError, Write};
use crate::systems::locked::{self, Answer, Locked, Next, Queue, Reply};
use crate::systems::{outputs, BatchCounts, Settings, System};

/// The single-lock FIFO under load.
pub struct SingleLockFifo {
    locked: Locked<Fifo>,
    /// Whether an admission is stamped with its instant (a non-zero delay).
    stamped: bool,
}

/// What a batch is applied as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Apply {
    /// One unkeyed append (`single-lock-fifo`).
    Stream,
    /// One write per key of the batch, all in one request (`multi-key`).
    Keys,
}

/// The waiting inputs, the queue discipline of `single-lock-fifo`.
struct Fifo {
    apply: Apply,
    /// Waiting inputs, oldest first; at most `queued_max`.
    queue: VecDeque<Waiting>,
    closed: bool,
    /// Whether a worker is sleeping until the front's delay is up.
    timer_held: bool,
    batch_size_max: usize,
    batch_delay_max: Duration,
    queued_max: usize,
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
    apply: Apply,
    keys: Vec<u64>,
    inputs: Vec<u64>,
    replies: Vec<Reply>,
}

/// A batch that ran, with what its callers are answered.
enum Ran {
    /// One result for the whole append.
    Stream {
        replies: Vec<Reply>,
        result: Result<Vec<u64>, StoreError>,
    },
    /// Each input's answer, in order.
    Keys {
        replies: Vec<Reply>,
        answers: Vec<Answer>,
    },
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
        let fifo = Fifo {
            apply,
            queue: VecDeque::new(),
            closed: false,
            timer_held: false,
            batch_size_max,
            batch_delay_max: settings.max_batch_delay,
            queued_max: settings.max_waiting,
        };
        let locked = Locked::start(name, settings, fifo, workers, store, connections)?;
        Ok(Self {
            locked,
            stamped: !settings.max_batch_delay.is_zero(),
        })
    }
}

impl Fifo {
    /// When the front's delay is up; `None` without a delay.
    fn due(&self) -> Option<Instant> {
        let admitted = self.queue.front()?.admitted?;
        Some(admitted + self.batch_delay_max)
    }

    /// Takes `count` inputs from the front.
    fn drain(&mut self, count: usize) -> Batch {
        let mut batch = Batch {
            apply: self.apply,
            keys: Vec::with_capacity(count),
            inputs: Vec::with_capacity(count),
            replies: Vec::with_capacity(count),
        };
        for waiting in self.queue.drain(..count) {
            batch.keys.push(waiting.key);
            batch.inputs.push(waiting.input);
            batch.replies.push(waiting.reply);
        }
        debug_assert!((1..=self.batch_size_max).contains(&batch.inputs.len()));
        batch
    }

    /// Admits `waiting` unless closed or full: `Some(wake)`, where `wake`
    /// says the queue became non-empty or filled another whole batch.
    fn admit(&mut self, waiting: Waiting) -> Option<bool> {
        if self.closed || self.queue.len() >= self.queued_max {
            return None;
        }
        self.queue.push_back(waiting);
        let waiting = self.queue.len();
        debug_assert!(waiting <= self.queued_max);
        Some(waiting == 1 || waiting.is_multiple_of(self.batch_size_max))
    }
}

impl Queue for Fifo {
    type Batch = Batch;
    type Ran = Ran;
    const COMPLETES: bool = false;

    fn take(&mut self, held_timer: bool) -> Next<Batch> {
        if held_timer {
            self.timer_held = false;
        }
        let waiting = self.queue.len();
        if waiting == 0 {
            return if self.closed {
                Next::Exit
            } else {
                Next::Wait(None)
            };
        }
        if waiting < self.batch_size_max && !self.closed {
            if let Some(due) = self.due() {
                if due > Instant::now() {
                    if self.timer_held {
                        return Next::Wait(None);
                    }
                    self.timer_held = true;
                    return Next::Wait(Some(due));
                }
            }
        }
        let count = waiting.min(self.batch_size_max);
        let batch = self.drain(count);
        Next::Run {
            batch,
            inputs: count,
            more: !self.queue.is_empty(),
        }
    }

    async fn run(batch: Batch, pool: &Pool) -> Ran {
        overload::note_sent(&batch.inputs);
        if batch.apply == Apply::Keys {
            return run_keys(batch, pool).await;
        }
        let count = batch.inputs.len() as u64;
        let result = pool
            .get()
            .apply_unkeyed(count, batch.inputs.iter().sum())
            .await
            .map(|length| outputs(length, count));
        Ran::Stream {
            replies: batch.replies,
            result,
        }
    }

    fn answer(ran: Ran) {
        match ran {
            Ran::Stream { replies, result } => locked::answer_all(replies, result),
            Ran::Keys { replies, answers } => {
                for (reply, answer) in replies.into_iter().zip(answers) {
                    let _ = reply.send(answer);
                }
            }
        }
    }

    fn close(&mut self) {
        self.closed = true;
    }
}

/// A `multi-key` batch: each key's inputs merged into one write, every
/// write in one request; each input answered with the version its place in
/// its key's write produced.
async fn run_keys(batch: Batch, pool: &Pool) -> Ran {
    // Sized for a key per input, as a loader that knows its batch would.
    let mut writes: Vec<Write> = Vec::with_capacity(batch.inputs.len());
    let mut write_of = ahash::AHashMap::with_capacity(batch.inputs.len());
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
    let applied = pool.get().apply_many(writes).await;
    let answers = places
        .into_iter()
        .map(|(at, place)| match &applied[at] {
            Ok(version) => Ok(version + place + 1),
            Err(err) => Err(err.clone()),
        })
        .collect();
    Ran::Keys {
        replies: batch.replies,
        answers,
    }
}

impl System for SingleLockFifo {
    type Submit = locked::Submit;

    /// `key` is kept for `multi-key` (the stream has none).
    fn submit(&self, key: u64, input: u64) -> Self::Submit {
        let admitted = self.stamped.then(Instant::now);
        self.locked.submit(|fifo, reply| {
            fifo.admit(Waiting {
                key,
                input,
                reply,
                admitted,
            })
        })
    }

    fn batch_counts(&self) -> Option<BatchCounts> {
        Some(self.locked.counts())
    }

    fn close(&mut self) {
        self.locked.close();
    }
}
