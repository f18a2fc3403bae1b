//! `ferry`: this engine, its batch function one [`Store::apply`] per batch.
//!
//! Shards are pinned to CPUs `0..shards` when there are that many CPUs (and
//! `--no-pin` is not given); otherwise they float. The generator and store
//! threads are never pinned, so on a small machine they share the shards'
//! cores.

use futures::future::Map;
use futures::FutureExt;

use ferry::{Engine, FerryError, StartError};

use crate::store::{Store, StoreError};
use crate::systems::{outputs, BatchCounts, IdleCounts, Outcome, Settings, System};

type FerryOutcome = Result<u64, FerryError<u64, StoreError>>;

/// The engine under load.
#[derive(Debug)]
pub struct FerrySystem {
    engine: Engine<u64, u64, u64, StoreError>,
}

impl FerrySystem {
    /// Starts an engine of `shards` shards on `store`.
    pub fn start(
        settings: &Settings,
        shards: usize,
        store: &'static Store,
    ) -> Result<Self, StartError> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let engine = Engine::builder()
            .shards(shards)
            .pin(settings.pin && shards <= cpus)
            .max_batch_size(settings.max_batch_size)
            .max_batch_delay(settings.max_batch_delay)
            .max_in_flight_batches(settings.max_in_flight)
            .max_queueing(settings.max_queueing)
            .spin_before_park(settings.spin_before_park)
            .doze_before_park(settings.doze_before_park)
            .runtime(settings.runtime)
            .start(move |_shard| {
                move |key: u64, inputs: Vec<u64>| {
                    let count = inputs.len() as u64;
                    let applied = store.apply(key, count);
                    async move { applied.await.map(|version| outputs(version, count)) }
                }
            })?;
        Ok(Self { engine })
    }
}

/// How the load counts an engine's (or a batcher's) outcome.
pub(crate) fn outcome(result: FerryOutcome) -> Outcome {
    match result {
        Ok(_) => Outcome::Done,
        Err(FerryError::Refused { .. }) => Outcome::Refused,
        Err(_) => Outcome::Failed,
    }
}

impl System for FerrySystem {
    type Submit = Map<ferry::Submit<u64, u64, StoreError>, fn(FerryOutcome) -> Outcome>;

    fn submit(&self, key: u64, input: u64) -> Self::Submit {
        self.engine
            .submit(key, input)
            .map(outcome as fn(FerryOutcome) -> Outcome)
    }

    fn batch_counts(&self) -> Option<BatchCounts> {
        let total = self.engine.stats().total();
        Some(BatchCounts {
            batches: total.batches,
            inputs: total.sent,
        })
    }

    fn runtime(&self) -> Option<ferry::Runtime> {
        Some(self.engine.runtime())
    }

    fn idle_counts(&self) -> Option<IdleCounts> {
        let total = self.engine.stats().total();
        Some(IdleCounts {
            dozes: total.dozes,
            parks: total.parks,
        })
    }

    fn close(&mut self) {
        self.engine.close();
        self.engine.join();
    }
}
