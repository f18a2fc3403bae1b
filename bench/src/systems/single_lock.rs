//! `single-lock`: the design Ferry grew from
//! (docs/design/0001-per-key-batching-on-shards.md, "Alternatives"), ported
//! to Rust as directly as it goes.
//!
//! All lanes are one [`KeyLanes`], the queue discipline of that design,
//! behind one `std::sync::Mutex`. Admission is one critical section that
//! also checks the lanes are open; taking a batch is one critical section
//! that also marks its lane busy, so at most one batch per key is in flight
//! (G1) by construction, as in the original. `workers` tasks, shared by all
//! keys, run on a tokio multi-threaded runtime: each takes a ready lane's
//! batch, runs it against the store through the next connection of a
//! shared [`Pool`], completes it under the lock, and answers the callers.
//! The mutex, the workers and the connections are a `Locked` frame; this
//! file joins the lanes to it.
//!
//! An idle worker waits on a `tokio::sync::Notify` for a lane to become
//! ready, or sleeps until the earliest deadline (with tokio's timer). The
//! original woke every idle worker on every admission; here an admission that
//! leaves a lane ready wakes one, a cheaper choice that can only help this
//! baseline.

use crate::scenarios::event_time;
use crate::scenarios::overload;
use std::time::Instant;

use crate::store::{Pool, Store, StoreError};
use crate::systems::key_lanes::{Batch, KeyLanes, Limits};
use crate::systems::locked::{self, Locked, Next, Queue, Reply, Wake};
use crate::systems::{outputs, BatchCounts, Settings, System};

/// The single-lock design under load.
pub struct SingleLock {
    locked: Locked<KeyLanes<(u64, Reply)>>,
}

/// A lane's batch that ran: its key, callers and result.
pub(crate) struct Ran {
    key: u64,
    replies: Vec<Reply>,
    result: Result<Vec<u64>, StoreError>,
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
        let lanes = KeyLanes::new(Limits {
            max_batch_size: settings.max_batch_size,
            max_batch_delay: settings.max_batch_delay,
            max_waiting: settings.max_waiting,
        });
        let locked = Locked::start("single-lock", settings, lanes, workers, store, connections)?;
        Ok(Self { locked })
    }
}

impl Queue for KeyLanes<(u64, Reply)> {
    type Batch = Batch<(u64, Reply)>;
    type Ran = Ran;
    const COMPLETES: bool = true;

    fn take(&mut self, _held_timer: bool) -> Next<Self::Batch> {
        match KeyLanes::take(self, Instant::now()) {
            Some(batch) => Next::Run {
                inputs: batch.inputs.len(),
                more: self.has_ready(),
                batch,
            },
            None if self.is_drained() => Next::Exit,
            None => Next::Wait(self.next_due()),
        }
    }

    async fn run(batch: Self::Batch, pool: &Pool) -> Ran {
        let count = batch.inputs.len() as u64;
        let (inputs, replies): (Vec<u64>, Vec<Reply>) = batch.inputs.into_iter().unzip();
        overload::note_sent(&inputs);
        let result = pool
            .get()
            .apply(batch.key, count, inputs.iter().sum())
            .await
            .map(|version| outputs(version, count));
        if result.is_ok() {
            event_time::note_applied(batch.key, &inputs);
        }
        Ran {
            key: batch.key,
            replies,
            result,
        }
    }

    fn complete(&mut self, ran: &Ran) -> Wake {
        KeyLanes::complete(self, ran.key, Instant::now());
        Wake {
            more: self.has_ready(),
            finished: self.is_drained(),
        }
    }

    fn answer(ran: Ran) {
        locked::answer_all(ran.replies, ran.result);
    }

    fn close(&mut self) {
        KeyLanes::close(self);
    }
}

impl System for SingleLock {
    type Submit = locked::Submit;

    fn submit(&self, key: u64, input: u64) -> Self::Submit {
        // A refused input's reply is dropped with it: its caller is
        // answered `Refused` at once.
        self.locked.submit(|lanes, reply| {
            lanes
                .admit(key, (input, reply), Instant::now())
                .map(|()| lanes.has_ready())
                .ok()
        })
    }

    fn batch_counts(&self) -> Option<BatchCounts> {
        Some(self.locked.counts())
    }

    fn close(&mut self) {
        self.locked.close();
    }
}
