//! `unbatched`: no batching at all. Each input is its own read and
//! conditional write, made by the caller itself, with the key's async mutex
//! held so a key's inputs go one at a time (and in order: tokio's mutex is
//! fair). Keys do not wait for each other; there is no runtime and no
//! thread hop, so this is the cheapest way to talk to the store, and the
//! slowest once round trips cost time.
//!
//! With a real store the callers' requests go through a [`Pool`] of
//! connections like the other systems', and those connections' I/O needs a
//! reactor: a tokio runtime of `tokio_workers` threads runs it (and nothing
//! else), as a service's runtime would under its request handlers.

use crate::scenarios::event_time;
use crate::scenarios::overload;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::Mutex;

use crate::store::sim::SimStore;
use crate::store::{Pool, Store, StoreError};
use crate::systems::{tokio_runtime, BatchCounts, Outcome, Settings, System};

/// Per-key serialised round trips.
pub struct Unbatched {
    shared: Arc<Shared>,
    /// Where a real store's connections do their I/O; none on the sim.
    runtime: Option<tokio::runtime::Runtime>,
}

/// What every input's future holds (one reference count per input).
struct Shared {
    /// One mutex per key of the store (`0..keys`).
    keys: Box<[Mutex<()>]>,
    route: Route,
}

/// Where an input's round trips go. The sim is called directly, its
/// future as it is: an unbatched input is a batch of one, so a choice
/// made per batch would be made per input, and the sim's figures would
/// pay for the real stores.
enum Route {
    Sim(&'static SimStore),
    Pool(Arc<Pool>),
}

impl Unbatched {
    /// One mutex per key of `store`, and `connections` connections to it.
    pub fn start(settings: &Settings, store: Store, connections: usize) -> Result<Self, String> {
        let runtime = if store.is_real() {
            Some(tokio_runtime("unbatched", settings.tokio_workers, store)?)
        } else {
            None
        };
        let route = match store.as_sim() {
            Some(sim) => Route::Sim(sim),
            None => Route::Pool(Arc::new(Pool::open(store, connections, runtime.as_ref())?)),
        };
        let keys = (0..store.keys()).map(|_| Mutex::new(())).collect();
        Ok(Self {
            shared: Arc::new(Shared { keys, route }),
            runtime,
        })
    }
}

impl System for Unbatched {
    type Submit = Pin<Box<dyn Future<Output = Outcome>>>;

    fn submit(&self, key: u64, input: u64) -> Self::Submit {
        let shared = Arc::clone(&self.shared);
        match &self.shared.route {
            Route::Sim(sim) => {
                let sim = *sim;
                Box::pin(async move {
                    let _serialised = shared.keys[key as usize].lock().await;
                    overload::note_sent(&[input]);
                    let applied = sim.apply(key, 1, input).await;
                    if applied.is_ok() {
                        event_time::note_applied(key, &[input]);
                    }
                    outcome(applied)
                })
            }
            Route::Pool(pool) => {
                let pool = Arc::clone(pool);
                Box::pin(async move {
                    let _serialised = shared.keys[key as usize].lock().await;
                    overload::note_sent(&[input]);
                    let applied = pool.get().apply(key, 1, input).await;
                    if applied.is_ok() {
                        event_time::note_applied(key, &[input]);
                    }
                    outcome(applied)
                })
            }
        }
    }

    fn batch_counts(&self) -> Option<BatchCounts> {
        None
    }

    fn close(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn outcome(applied: Result<u64, StoreError>) -> Outcome {
    match applied {
        Ok(_) => Outcome::Done,
        Err(err) if err.is_unknown() => Outcome::Unknown,
        Err(err) => Outcome::Failed(err.to_string()),
    }
}
