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
//! it under the lock, and answers the callers. The mutex, the workers and
//! the connections are a `Locked` frame; this file is the lanes' part.
//!
//! An idle worker waits on a `tokio::sync::Notify` for a lane to become
//! ready, or sleeps until the earliest deadline (with tokio's timer). The
//! original woke every idle worker on every admission; here an admission that
//! leaves a lane ready wakes one, a cheaper choice that can only help this
//! baseline.

use crate::scenarios::event_time;
use crate::scenarios::overload;
use std::time::Instant;

use ferry_shard::parts::{Batch, LaneId, Lanes};
use ferry_shard::QueueConfig;

use crate::store::{Pool, Store, StoreError};
use crate::systems::locked::{self, Locked, Next, Queue, Reply, Wake};
use crate::systems::{outputs, BatchCounts, Settings, System};

/// The single-lock design under load.
pub struct SingleLock {
    locked: Locked<KeyLanes>,
}

/// Every key's lane, the queue discipline of `single-lock`.
struct KeyLanes {
    lanes: Lanes<u64, (u64, Reply)>,
    /// `now` for the lanes is the time since this instant.
    origin: Instant,
}

/// A lane's batch that ran: its lane, callers and result.
struct Ran {
    lane: LaneId,
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
        let lanes = Lanes::new(QueueConfig {
            max_batch_size: settings.max_batch_size,
            max_batch_delay: settings.max_batch_delay,
            max_waiting: settings.max_waiting,
            ..QueueConfig::default()
        });
        let queue = KeyLanes {
            lanes,
            origin: Instant::now(),
        };
        let locked = Locked::start("single-lock", settings, queue, workers, store, connections)?;
        Ok(Self { locked })
    }
}

impl KeyLanes {
    /// Closed and every lane gone.
    fn drained(&self) -> bool {
        self.lanes.is_closed() && self.lanes.lanes() == 0
    }
}

impl Queue for KeyLanes {
    type Batch = Batch<u64, (u64, Reply)>;
    type Ran = Ran;
    const COMPLETES: bool = true;

    fn take(&mut self, _held_timer: bool) -> Next<Self::Batch> {
        let now = self.origin.elapsed();
        match self.lanes.take(now) {
            Some(batch) => Next::Run {
                inputs: batch.items.len(),
                more: self.lanes.has_ready(),
                batch,
            },
            None if self.drained() => Next::Exit,
            None => Next::Wait(self.lanes.next_deadline().map(|due| self.origin + due)),
        }
    }

    async fn run(batch: Self::Batch, pool: &Pool) -> Ran {
        let count = batch.items.len() as u64;
        let (inputs, replies): (Vec<u64>, Vec<Reply>) = batch.items.into_iter().unzip();
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
            lane: batch.lane,
            replies,
            result,
        }
    }

    fn complete(&mut self, ran: &Ran) -> Wake {
        self.lanes.complete(ran.lane, self.origin.elapsed());
        Wake {
            more: self.lanes.has_ready(),
            finished: self.drained(),
        }
    }

    fn answer(ran: Ran) {
        locked::answer_all(ran.replies, ran.result);
    }

    fn close(&mut self) {
        self.lanes.close();
    }
}

impl System for SingleLock {
    type Submit = locked::Submit;

    fn submit(&self, key: u64, input: u64) -> Self::Submit {
        self.locked.submit(|queue, reply| {
            let now = queue.origin.elapsed();
            queue
                .lanes
                .admit(key, (input, reply), 0, 1, now)
                .map(|()| queue.lanes.has_ready())
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
