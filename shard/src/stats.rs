//! Per-shard gauges and counters, written by the shard alone and read by any
//! thread without a lock.
//!
//! The shard keeps plain counts and publishes them with relaxed stores once
//! per loop round, so the hot path pays no atomic read-modify-write; a reader
//! sees each field as of some recent round. The one exception is
//! `refused_at_intake`, which callers bump themselves when the intake queue
//! is full or closed (the shard never sees those inputs).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A snapshot of one shard's gauges and counters.
///
/// Once the engine is quiet, `admitted == sent == answered` and `lanes == 0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShardStats {
    /// Lanes alive (waiting inputs or a batch in flight). Gauge.
    pub lanes: u64,
    /// Inputs admitted and not yet sent. Gauge.
    pub waiting: u64,
    /// Weight of the waiting inputs. Gauge.
    pub waiting_weight: u64,
    /// Batches in flight. Gauge.
    pub in_flight: u64,
    /// Inputs in the intake queue, not yet seen by the shard. Gauge.
    pub intake: u64,
    /// Inputs admitted into lanes. Counter.
    pub admitted: u64,
    /// Of those, admitted directly from a task on the shard itself (the
    /// thread-per-core fast path). Counter.
    pub admitted_local: u64,
    /// Inputs refused (at the intake or by the lanes), handed back. Counter.
    pub refused: u64,
    /// Batches started. Counter.
    pub batches: u64,
    /// Inputs sent in a batch. Counter.
    pub sent: u64,
    /// Admitted inputs whose caller was answered. Counter.
    pub answered: u64,
    /// Times the shard, out of work, blocked its thread on a futex (the
    /// doze; see `doze_before_park`). Counter.
    pub dozes: u64,
    /// Times the shard, out of work, parked in glommio's `io_uring` wait,
    /// which is dearer to enter and to leave than a doze. Many parks a
    /// second under load say that `doze_before_park` is shorter than the
    /// gaps between the shard's events. Counter.
    pub parks: u64,
}

/// The published counters of one shard.
#[derive(Debug, Default)]
pub struct ShardCounters {
    lanes: AtomicU64,
    waiting: AtomicU64,
    waiting_weight: AtomicU64,
    in_flight: AtomicU64,
    admitted: AtomicU64,
    admitted_local: AtomicU64,
    refused_in_shard: AtomicU64,
    refused_at_intake: AtomicU64,
    batches: AtomicU64,
    sent: AtomicU64,
    answered: AtomicU64,
    dozes: AtomicU64,
    parks: AtomicU64,
}

impl ShardCounters {
    /// Shard side: publish a fresh snapshot (the `intake` and the
    /// caller-side refusals are not the shard's to write).
    pub fn publish(&self, stats: &ShardStats) {
        self.lanes.store(stats.lanes, Relaxed);
        self.waiting.store(stats.waiting, Relaxed);
        self.waiting_weight.store(stats.waiting_weight, Relaxed);
        self.in_flight.store(stats.in_flight, Relaxed);
        self.admitted.store(stats.admitted, Relaxed);
        self.admitted_local.store(stats.admitted_local, Relaxed);
        self.refused_in_shard.store(stats.refused, Relaxed);
        self.batches.store(stats.batches, Relaxed);
        self.sent.store(stats.sent, Relaxed);
        self.answered.store(stats.answered, Relaxed);
        self.dozes.store(stats.dozes, Relaxed);
        self.parks.store(stats.parks, Relaxed);
    }

    /// Caller side: an input was refused before reaching the shard.
    pub fn count_refused_at_intake(&self) {
        self.refused_at_intake.fetch_add(1, Relaxed);
    }

    /// The latest snapshot; `intake` is the queue length the caller read.
    pub fn snapshot(&self, intake: u64) -> ShardStats {
        ShardStats {
            lanes: self.lanes.load(Relaxed),
            waiting: self.waiting.load(Relaxed),
            waiting_weight: self.waiting_weight.load(Relaxed),
            in_flight: self.in_flight.load(Relaxed),
            intake,
            admitted: self.admitted.load(Relaxed),
            admitted_local: self.admitted_local.load(Relaxed),
            refused: self.refused_in_shard.load(Relaxed) + self.refused_at_intake.load(Relaxed),
            batches: self.batches.load(Relaxed),
            sent: self.sent.load(Relaxed),
            answered: self.answered.load(Relaxed),
            dozes: self.dozes.load(Relaxed),
            parks: self.parks.load(Relaxed),
        }
    }
}
