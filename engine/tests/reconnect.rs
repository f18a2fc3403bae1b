//! A shard's client comes back after its store went away (`Reconnect`),
//! without restarting the engine: while the store is away every caller is
//! still answered (with an error, at once), and once it is back the same
//! shards serve again. On each runtime, with a batch function and with a
//! trip function.

use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry::{Engine, FerryError, Reconnect, Runtime};

mod support;
use support::{on_each_runtime_and_way, StartAs, Way};

/// A store that can go away: while `up` is false, connecting fails; each
/// time it comes back it is a new incarnation, and a client of an older
/// one finds its connection broken.
#[derive(Default)]
struct Store {
    up: AtomicBool,
    incarnation: AtomicU64,
    connects: AtomicU64,
}

/// A client of one incarnation of the store.
struct Client {
    incarnation: u64,
    store: Arc<Store>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum StoreError {
    /// No client: the store is away (nothing sent).
    Unreachable(String),
    /// The connection broke (the store restarted under it).
    Broken,
}

impl Store {
    fn stop(&self) {
        self.up.store(false, SeqCst);
    }

    fn start(&self) {
        self.incarnation.fetch_add(1, SeqCst);
        self.up.store(true, SeqCst);
    }

    async fn connect(self: Arc<Self>) -> Result<Client, String> {
        self.connects.fetch_add(1, SeqCst);
        if !self.up.load(SeqCst) {
            return Err("connection refused".to_string());
        }
        Ok(Client {
            incarnation: self.incarnation.load(SeqCst),
            store: self,
        })
    }
}

impl Client {
    /// One request: answered while this client's incarnation is the
    /// store's and the store is up.
    async fn apply(&self, inputs: Vec<u64>) -> Result<Vec<u64>, StoreError> {
        support::sleep(Duration::from_micros(200)).await;
        let store = &self.store;
        if !store.up.load(SeqCst) || store.incarnation.load(SeqCst) != self.incarnation {
            return Err(StoreError::Broken);
        }
        Ok(inputs)
    }
}

fn engine_on(runtime: Runtime, way: Way, store: &Arc<Store>) -> Engine<u64, u64, u64, StoreError> {
    let store = Arc::clone(store);
    Engine::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .start_as(way, move |_shard| {
            let store = Arc::clone(&store);
            let link = Rc::new(
                Reconnect::new(move || Arc::clone(&store).connect())
                    .backoff(Duration::from_millis(5), Duration::from_millis(20)),
            );
            move |_key: u64, inputs: Vec<u64>| {
                let link = Rc::clone(&link);
                async move {
                    let client = link
                        .client()
                        .await
                        .map_err(|away| StoreError::Unreachable(away.to_string()))?;
                    let applied = client.apply(inputs).await;
                    if applied == Err(StoreError::Broken) {
                        link.broken(&client);
                    }
                    applied
                }
            }
        })
        .expect("engine starts")
}

/// Submits a round of inputs over `keys` keys and waits for every answer:
/// how many succeeded, and how many failed with each error.
fn round(engine: &Engine<u64, u64, u64, StoreError>, keys: u64) -> (usize, usize, usize) {
    let outcomes = futures::executor::block_on(futures::future::join_all(
        (0..keys * 4).map(|i| engine.submit(i % keys, i)),
    ));
    let (mut ok, mut unreachable, mut broken) = (0, 0, 0);
    for (i, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Ok(output) => {
                assert_eq!(output, i as u64, "each caller gets its own output");
                ok += 1;
            }
            Err(FerryError::Failed(StoreError::Unreachable(why))) => {
                assert!(why.contains("nothing was sent"), "{why}");
                unreachable += 1;
            }
            Err(FerryError::Failed(StoreError::Broken)) => broken += 1,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    (ok, unreachable, broken)
}

on_each_runtime_and_way!(a_shard_whose_store_went_away_answers_everyone_then_serves_again);
fn a_shard_whose_store_went_away_answers_everyone_then_serves_again(runtime: Runtime, way: Way) {
    let store = Arc::new(Store::default());
    store.start();
    let engine = engine_on(runtime, way, &store);
    assert_eq!(round(&engine, 16), (64, 0, 0), "the store is up");

    // The store goes away: nothing hangs; every caller is answered, with
    // the broken connection's error or the store's absence.
    store.stop();
    let away_since = Instant::now();
    let mut answered_away = 0;
    while away_since.elapsed() < Duration::from_millis(100) {
        let (ok, unreachable, broken) = round(&engine, 16);
        assert_eq!(ok, 0, "no success while the store is away");
        answered_away += unreachable + broken;
    }
    assert!(answered_away > 0);
    let tries_while_away = store.connects.load(SeqCst);

    // It comes back, a new incarnation: the same engine serves again once
    // each shard's backoff has passed.
    store.start();
    let back_at = Instant::now();
    let served_again = loop {
        let (ok, _, _) = round(&engine, 16);
        if ok == 64 {
            break back_at.elapsed();
        }
        assert!(
            back_at.elapsed() < Duration::from_secs(5),
            "never served again"
        );
    };
    assert!(
        store.connects.load(SeqCst) > tries_while_away,
        "the shards connected again"
    );
    assert!(
        served_again < Duration::from_secs(1),
        "served again after {served_again:?}"
    );
    // A flush resolves once the figures show what it waited for.
    futures::executor::block_on(engine.flush());
    let total = engine.stats().total();
    assert_eq!(total.admitted, total.answered, "{total:?}");
    engine.close();
    engine.join();
}
