//! `unbatched`: no batching at all. Each input is its own read and
//! conditional write, made by the caller itself, with the key's async mutex
//! held so a key's inputs go one at a time (and in order: tokio's mutex is
//! fair). Keys do not wait for each other; there is no runtime and no
//! thread hop, so this is the cheapest way to talk to the store, and the
//! slowest once round trips cost time.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::Mutex;

use crate::store::Store;
use crate::systems::{BatchCounts, Outcome, System};

/// Per-key serialised round trips.
pub struct Unbatched {
    /// One mutex per key of the store (`0..keys`).
    keys: Arc<[Mutex<()>]>,
    store: &'static Store,
}

impl Unbatched {
    /// One mutex per key of `store`.
    pub fn start(store: &'static Store) -> Self {
        Self {
            keys: (0..store.keys()).map(|_| Mutex::new(())).collect(),
            store,
        }
    }
}

impl System for Unbatched {
    type Submit = Pin<Box<dyn Future<Output = Outcome>>>;

    fn submit(&self, key: u64, _input: u64) -> Self::Submit {
        let keys = Arc::clone(&self.keys);
        let store = self.store;
        Box::pin(async move {
            let _serialised = keys[key as usize].lock().await;
            match store.apply(key, 1).await {
                Ok(_) => Outcome::Done,
                Err(_) => Outcome::Failed,
            }
        })
    }

    fn batch_counts(&self) -> Option<BatchCounts> {
        None
    }

    fn close(&mut self) {}
}
