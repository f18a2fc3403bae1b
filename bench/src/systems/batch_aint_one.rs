//! `batch-aint-one`: the crate of that name (0.16), set up to keep one batch
//! per key in flight like Ferry: `max_key_concurrency = 1`, the `Immediate`
//! policy (a batch starts as soon as its key is free), `max_batch_size` from
//! the command line, and its queue bounds raised to `max_queueing` so that it
//! refuses no more than Ferry does. Its worker and batches run on a tokio
//! multi-threaded runtime.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use batch_aint_one::{BatchError, Batcher, BatchingPolicy, Limits, Processor};

use crate::store::{Store, StoreError};
use crate::systems::{outputs, BatchCounts, Outcome, Settings, System};

/// The crate's batcher under load.
pub struct BatchAintOne {
    batcher: Arc<Batcher<StoreProcessor>>,
    counts: Arc<Counts>,
    runtime: Option<tokio::runtime::Runtime>,
}

#[derive(Debug, Default)]
struct Counts {
    batches: AtomicU64,
    inputs: AtomicU64,
}

/// The batch function: one [`Store::apply`] per batch, nothing to acquire.
#[derive(Clone, Debug)]
struct StoreProcessor {
    store: &'static Store,
    counts: Arc<Counts>,
}

impl Processor for StoreProcessor {
    type Key = u64;
    type Input = u64;
    type Output = u64;
    type Error = StoreError;
    type Resources = ();

    async fn acquire_resources(&self, _key: u64) -> Result<(), StoreError> {
        Ok(())
    }

    fn process(
        &self,
        key: u64,
        inputs: impl Iterator<Item = u64> + Send,
        _resources: (),
    ) -> impl Future<Output = Result<Vec<u64>, StoreError>> + Send {
        let count = inputs.count() as u64;
        self.counts.batches.fetch_add(1, Ordering::Relaxed);
        self.counts.inputs.fetch_add(count, Ordering::Relaxed);
        let applied = self.store.apply(key, count);
        async move { applied.await.map(|version| outputs(version, count)) }
    }
}

impl BatchAintOne {
    /// Starts the batcher on a tokio runtime of `settings.tokio_workers` threads.
    pub fn start(settings: &Settings, store: &'static Store) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(settings.tokio_workers)
            .thread_name("batch-aint-one")
            .enable_time()
            .build()?;
        let counts = Arc::new(Counts::default());
        let limits = Limits::builder()
            .max_batch_size(settings.max_batch_size)
            .max_key_concurrency(1)
            .max_key_queued_items(settings.max_queueing)
            .max_items_awaiting_worker(settings.max_queueing)
            .build();
        let processor = StoreProcessor {
            store,
            counts: Arc::clone(&counts),
        };
        // The batcher spawns its worker task on the runtime it is built in.
        let batcher = {
            let _entered = runtime.enter();
            Batcher::builder()
                .name("ferry-load")
                .processor(processor)
                .limits(limits)
                .batching_policy(BatchingPolicy::Immediate)
                .build()
        };
        Ok(Self {
            batcher: Arc::new(batcher),
            counts,
            runtime: Some(runtime),
        })
    }
}

impl System for BatchAintOne {
    type Submit = Pin<Box<dyn Future<Output = Outcome>>>;

    fn submit(&self, key: u64, input: u64) -> Self::Submit {
        let batcher = Arc::clone(&self.batcher);
        Box::pin(async move {
            match batcher.add(key, input).await {
                Ok(_) => Outcome::Done,
                Err(BatchError::Rejected(_)) => Outcome::Refused,
                Err(_) => Outcome::Failed,
            }
        })
    }

    fn batch_counts(&self) -> Option<BatchCounts> {
        Some(BatchCounts {
            batches: self.counts.batches.load(Ordering::Relaxed),
            inputs: self.counts.inputs.load(Ordering::Relaxed),
        })
    }

    fn close(&mut self) {
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        let worker = self.batcher.worker_handle();
        runtime.block_on(async {
            worker.shut_down().await;
            worker.wait_for_shutdown().await;
        });
        runtime.shutdown_background();
    }
}

impl Drop for BatchAintOne {
    fn drop(&mut self) {
        self.close();
    }
}
