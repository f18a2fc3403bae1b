//! `batcher`: this engine's unkeyed form, [`ferry::Batcher`]
//! (docs/guarantees.md#unkeyed-batching), its batch function one
//! [`Connection::apply_unkeyed`](crate::store::Connection::apply_unkeyed)
//! per batch.
//!
//! Set up like [`ferry`](super::ferry): the same shards, pinning, bounds,
//! idle stages and runtime from the command line, `max_in_flight_batches` batches
//! at once per shard, one store connection per shard made in its factory. The batcher spreads inputs by caller thread (each keeps to
//! one shard), so here a generator thread is a caller: with fewer
//! generators than shards, some shards get no work.

use crate::scenarios::overload;
use futures::future::Map;
use futures::{FutureExt, StreamExt};

use ferry::{Batcher, FerryError, StartError};

use crate::store::{Store, StoreError};
use crate::systems::ferry::{outcome, shard_settings, why_tokio};
use crate::systems::{in_flags, outputs, Call, Outcome, Settings, System};

type BatcherOutcome = Result<u64, FerryError<u64, StoreError>>;

/// The unkeyed batcher under load.
#[derive(Debug)]
pub struct BatcherSystem {
    batcher: Batcher<u64, u64, StoreError>,
    /// Why `--runtime auto` gave the shards tokio, if it did.
    why_tokio: Option<String>,
}

impl BatcherSystem {
    /// Starts a batcher of `shards` shards on `store`.
    pub fn start(settings: &Settings, shards: usize, store: Store) -> Result<Self, String> {
        let builder = shard_settings(Batcher::builder(), settings, shards, store)?;
        // As ferry's: the sim called directly, a real store through the
        // shard's own connection.
        let batcher = match store.as_sim() {
            Some(sim) => builder
                .start(move |_shard| {
                    move |inputs: Vec<u64>| {
                        overload::note_sent(&inputs);
                        let count = inputs.len() as u64;
                        let applied = sim.apply_unkeyed(count, inputs.iter().sum());
                        async move { applied.await.map(|length| outputs(length, count)) }
                    }
                })
                .map_err(|err| in_flags(&err.to_string())),
            None => builder
                .try_start(move |_shard| async move {
                    let connection = store.connect().await?;
                    Ok::<_, String>(move |inputs: Vec<u64>| {
                        overload::note_sent(&inputs);
                        let count = inputs.len() as u64;
                        let applied = connection.apply_unkeyed(count, inputs.iter().sum());
                        async move { applied.await.map(|length| outputs(length, count)) }
                    })
                })
                .map_err(|err: StartError<String>| in_flags(&err.to_string())),
        }?;
        let why_tokio = why_tokio(settings.runtime, store, batcher.runtime_reason());
        Ok(Self { batcher, why_tokio })
    }
}

impl System for BatcherSystem {
    type Submit = Map<ferry::Submit<u64, u64, StoreError>, fn(BatcherOutcome) -> Outcome>;

    /// `key` is ignored: the stream has none.
    fn submit(&self, _key: u64, input: u64) -> Self::Submit {
        self.batcher
            .submit(input)
            .map(outcome as fn(BatcherOutcome) -> Outcome)
    }

    fn submit_many(&self, items: Vec<(u64, u64)>) -> Call<'_> {
        Box::pin(
            self.batcher
                .submit_many(items.into_iter().map(|(_key, input)| input))
                .map(|(index, answered)| (index, outcome(answered))),
        )
    }

    fn runtime(&self) -> Option<ferry::Runtime> {
        Some(self.batcher.runtime())
    }

    fn runtime_reason(&self) -> Option<String> {
        self.why_tokio.clone()
    }

    fn engine_stats(&self) -> Option<ferry::ShardStats> {
        Some(self.batcher.stats().total())
    }

    fn close(&mut self) {
        self.batcher.close();
        self.batcher.join();
    }
}
