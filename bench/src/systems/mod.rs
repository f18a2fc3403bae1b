//! The systems `ferry-load` compares, behind one trait, all on the same
//! [`Store`](crate::store::Store):
//!
//! - [`ferry`]: this engine;
//! - [`single_lock`]: the design Ferry grew from, ported: every lane in one
//!   `Lanes` behind one mutex, workers shared by all keys, on tokio;
//! - [`batch_aint_one`]: the `batch-aint-one` crate, one batch per key;
//! - [`unbatched`]: one store round trip per input, serialised per key.
//!
//! Every system's batch is the same [`Store::apply`](crate::store::Store::apply):
//! one read and one conditional write for a whole batch.

use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

pub mod batch_aint_one;
pub mod ferry;
pub mod single_lock;
pub mod unbatched;

/// How one input ended, as the load generator counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Applied by the store and answered with its output.
    Done,
    /// Answered with an error (the batch failed).
    Failed,
    /// Refused at once (a bound was reached, or the system is closed).
    Refused,
}

/// Batches a system started, and the inputs they carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchCounts {
    /// Batches started.
    pub batches: u64,
    /// Inputs sent in those batches.
    pub inputs: u64,
}

impl BatchCounts {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: BatchCounts) -> BatchCounts {
        BatchCounts {
            batches: self.batches - earlier.batches,
            inputs: self.inputs - earlier.inputs,
        }
    }

    /// Inputs per batch (0 when no batch ran).
    pub fn mean(self) -> f64 {
        if self.batches == 0 {
            0.0
        } else {
            self.inputs as f64 / self.batches as f64
        }
    }
}

/// How often a system's shards went to sleep, and how: the doze (a futex)
/// and the park (glommio's `io_uring` wait). Only ferry has shards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdleCounts {
    /// Dozes so far.
    pub dozes: u64,
    /// Parks so far.
    pub parks: u64,
}

impl IdleCounts {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: IdleCounts) -> IdleCounts {
        IdleCounts {
            dozes: self.dozes - earlier.dozes,
            parks: self.parks - earlier.parks,
        }
    }
}

/// A system under load. Its `submit` is called from the generator threads;
/// the returned future is polled there and must work on any executor.
pub trait System: Send + Sync + 'static {
    /// The future of one input's outcome.
    type Submit: Future<Output = Outcome> + Unpin + 'static;

    /// Submits `input` for `key`.
    fn submit(&self, key: u64, input: u64) -> Self::Submit;

    /// Batches started so far and the inputs they carried; `None` when every
    /// batch is one input by construction.
    fn batch_counts(&self) -> Option<BatchCounts>;

    /// Dozes and parks of the system's shards so far; `None` without
    /// shards of that kind.
    fn idle_counts(&self) -> Option<IdleCounts> {
        None
    }

    /// Refuses new inputs, finishes what was admitted, and stops the
    /// system's threads. Called once the load has ended.
    fn close(&mut self);
}

/// The settings every system takes from the command line.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Inputs per batch at most.
    pub max_batch_size: usize,
    /// How long a partial batch may wait for more (ferry, single-lock).
    pub max_batch_delay: Duration,
    /// Batches in flight at once: per shard for ferry; single-lock runs this
    /// many workers per shard of the largest shard count measured.
    pub max_in_flight: usize,
    /// Waiting inputs at most: per shard for ferry, in total for
    /// single-lock, per key for batch-aint-one.
    pub max_queueing: usize,
    /// Tokio worker threads for single-lock and batch-aint-one.
    pub tokio_workers: usize,
    /// Pin ferry's shards to CPUs `0..shards` (when there are that many).
    pub pin: bool,
    /// How long an idle ferry shard polls before it dozes.
    pub spin_before_park: Duration,
    /// How long an idle ferry shard then dozes before it parks.
    pub doze_before_park: Duration,
}

/// The systems by name, as `--compare` spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SystemKind {
    /// This engine.
    Ferry,
    /// One `Lanes` behind one mutex, shared workers.
    SingleLock,
    /// The `batch-aint-one` crate.
    BatchAintOne,
    /// One round trip per input.
    Unbatched,
}

impl SystemKind {
    /// Every system, in the order they are run by default.
    pub const ALL: [SystemKind; 4] = [
        SystemKind::Ferry,
        SystemKind::SingleLock,
        SystemKind::BatchAintOne,
        SystemKind::Unbatched,
    ];

    /// The name used by `--compare`, the table and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            SystemKind::Ferry => "ferry",
            SystemKind::SingleLock => "single-lock",
            SystemKind::BatchAintOne => "batch-aint-one",
            SystemKind::Unbatched => "unbatched",
        }
    }
}

impl fmt::Display for SystemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SystemKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        SystemKind::ALL
            .into_iter()
            .find(|kind| kind.name() == text)
            .ok_or_else(|| {
                format!("`{text}`: unknown system (ferry, single-lock, batch-aint-one, unbatched)")
            })
    }
}

/// The outputs of a batch of `count` inputs that started from `version`:
/// each input gets the version its write produced.
pub(crate) fn outputs(version: u64, count: u64) -> Vec<u64> {
    (version + 1..=version + count).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for kind in SystemKind::ALL {
            assert_eq!(kind.name().parse::<SystemKind>(), Ok(kind));
        }
        assert!("bogus".parse::<SystemKind>().is_err());
    }

    #[test]
    fn mean_batch_of_a_window() {
        let before = BatchCounts {
            batches: 10,
            inputs: 40,
        };
        let after = BatchCounts {
            batches: 30,
            inputs: 140,
        };
        assert_eq!(after.since(before).mean(), 5.0);
        assert_eq!(BatchCounts::default().mean(), 0.0);
        assert_eq!(outputs(7, 3), vec![8, 9, 10]);
    }
}
