//! `batch-aint-one`: the crate of that name (0.16), in two set-ups.
//!
//! Keyed ([`BatchAintOne::start`]): one batch per key in flight like Ferry:
//! `max_key_concurrency = 1`, the `Immediate` policy (a batch starts as soon
//! as its key is free), `max_batch_size` from the command line, and its
//! queue bounds raised to `max_waiting` so that it refuses no more than
//! Ferry does.
//!
//! Unkeyed ([`BatchAintOne::start_unkeyed`]): the crate has no unkeyed
//! mode, so every input goes to one key, [`ONE_KEY`], and that key may run
//! as many batches at once as `ferry::Batcher` has slots. The knob is
//! `Limits::max_key_concurrency`: the crate counts batches in flight per
//! key (resource acquisition included) and does not bound them across keys,
//! so on a single key it is the crate's whole concurrency, the counterpart
//! of `max_in_flight_batches` summed over `ferry::Batcher`'s shards. Under
//! `Immediate` a batch starts whenever an item waits and fewer than that
//! many batches run, so batches grow only while every slot is busy, as
//! `ferry::Batcher`'s do with a zero delay. Each batch is one
//! [`Connection::apply_unkeyed`](crate::store::Connection::apply_unkeyed).
//!
//! Either way its worker and batches run on a tokio multi-threaded runtime,
//! and its batches share a [`Pool`] of connections made on that runtime.

use crate::scenarios::event_time;
use crate::scenarios::overload;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use batch_aint_one::{BatchError, Batcher, BatchingPolicy, Limits, Processor};

use crate::store::{Pool, Store, StoreError};
use crate::systems::{outputs, tokio_runtime, BatchCounts, Keying, Outcome, Settings, System};

/// The key every input is added with when unkeyed.
pub const ONE_KEY: u64 = 0;

/// How long [`BatchAintOne`]'s close waits for the crate's worker to stop.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// The crate's batcher under load.
pub struct BatchAintOne {
    batcher: Arc<Batcher<StoreProcessor>>,
    counts: Arc<Counts>,
    keying: Keying,
    runtime: Option<tokio::runtime::Runtime>,
}

#[derive(Debug, Default)]
struct Counts {
    batches: AtomicU64,
    inputs: AtomicU64,
}

/// The batch function: one
/// [`Connection::apply`](crate::store::Connection::apply) per batch (one
/// `apply_unkeyed` when unkeyed), nothing to acquire.
#[derive(Clone, Debug)]
struct StoreProcessor {
    pool: Arc<Pool>,
    counts: Arc<Counts>,
    keying: Keying,
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
        let mut tally = overload::Tally::start();
        // Kept only while the event-time scenario watches the writes.
        let mut kept = (self.keying == Keying::Keyed && event_time::watching()).then(Vec::new);
        let (count, sum) = inputs.fold((0_u64, 0_u64), |(count, sum), input| {
            if let Some(tally) = &mut tally {
                tally.add(input);
            }
            if let Some(kept) = &mut kept {
                kept.push(input);
            }
            (count + 1, sum.wrapping_add(input))
        });
        if let Some(tally) = tally {
            tally.finish();
        }
        self.counts.batches.fetch_add(1, Ordering::Relaxed);
        self.counts.inputs.fetch_add(count, Ordering::Relaxed);
        let connection = self.pool.get();
        let applying = match self.keying {
            Keying::Keyed => futures::future::Either::Left(connection.apply(key, count, sum)),
            Keying::Unkeyed => futures::future::Either::Right(connection.apply_unkeyed(count, sum)),
        };
        async move {
            let version = applying.await?;
            if let Some(kept) = kept {
                event_time::note_applied(key, &kept);
            }
            Ok(outputs(version, count))
        }
    }
}

impl BatchAintOne {
    /// Starts the batcher, one batch per key at once, on a tokio runtime of
    /// `settings.tokio_workers` threads, its batches sharing `connections`
    /// connections to `store`.
    pub fn start(settings: &Settings, store: Store, connections: usize) -> Result<Self, String> {
        Self::start_with(settings, store, connections, Keying::Keyed, 1)
    }

    /// Starts it for one unkeyed stream: every input on [`ONE_KEY`], up to
    /// `slots` batches of it at once (see the module docs).
    pub fn start_unkeyed(
        settings: &Settings,
        slots: usize,
        store: Store,
        connections: usize,
    ) -> Result<Self, String> {
        Self::start_with(settings, store, connections, Keying::Unkeyed, slots)
    }

    fn start_with(
        settings: &Settings,
        store: Store,
        connections: usize,
        keying: Keying,
        key_concurrency: usize,
    ) -> Result<Self, String> {
        let runtime = tokio_runtime("batch-aint-one", settings.tokio_workers, store)?;
        let pool = Arc::new(Pool::open(store, connections, Some(&runtime))?);
        let counts = Arc::new(Counts::default());
        let limits = Limits::builder()
            .max_batch_size(settings.max_batch_size)
            .max_key_concurrency(key_concurrency.max(1))
            .max_key_queued_items(settings.max_waiting)
            .max_items_awaiting_worker(settings.max_waiting)
            .build();
        let processor = StoreProcessor {
            pool,
            counts: Arc::clone(&counts),
            keying,
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
            keying,
            runtime: Some(runtime),
        })
    }
}

impl System for BatchAintOne {
    type Submit = Pin<Box<dyn Future<Output = Outcome>>>;

    fn submit(&self, key: u64, input: u64) -> Self::Submit {
        let key = match self.keying {
            Keying::Keyed => key,
            Keying::Unkeyed => ONE_KEY,
        };
        let batcher = Arc::clone(&self.batcher);
        Box::pin(async move {
            match batcher.add(key, input).await {
                Ok(_) => Outcome::Done,
                Err(BatchError::Rejected(_)) => Outcome::Refused,
                Err(BatchError::BatchFailed(err)) if err.is_unknown() => Outcome::Unknown,
                // The batch's result was lost (its task gone): maybe sent.
                Err(BatchError::Rx(_)) => Outcome::Unknown,
                Err(err) => Outcome::Failed(err.to_string()),
            }
        })
    }

    fn batch_counts(&self) -> Option<BatchCounts> {
        Some(BatchCounts {
            batches: self.counts.batches.load(Ordering::Relaxed),
            inputs: self.counts.inputs.load(Ordering::Relaxed),
        })
    }

    /// Shuts the crate's worker down and waits for it, for at most
    /// [`SHUTDOWN_WAIT`]: its worker has been seen (once, in a debug build,
    /// unkeyed, every input answered) never to finish its shutdown, and a
    /// load test that hangs on a competitor's close measures nothing. Past
    /// the wait it says so and leaves the runtime to stop in the
    /// background; what was answered has been counted by then.
    fn close(&mut self) {
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        let worker = self.batcher.worker_handle();
        let shut_down = runtime.block_on(async {
            let shutdown = async {
                worker.shut_down().await;
                worker.wait_for_shutdown().await;
            };
            tokio::time::timeout(SHUTDOWN_WAIT, shutdown).await
        });
        if shut_down.is_err() {
            eprintln!(
                "ferry-load: batch-aint-one's worker did not shut down within {SHUTDOWN_WAIT:?}; \
                 its runtime is left to stop in the background"
            );
        }
        runtime.shutdown_background();
    }
}

impl Drop for BatchAintOne {
    fn drop(&mut self) {
        self.close();
    }
}
