//! Starting an entity engine: the builder's `start_entities` and
//! `start_log`, each shard connecting on its own thread and carrying its
//! trips through its store.

use std::convert::Infallible;
use std::hash::Hash;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::config::{Builder, PerKey};
use crate::start_error::StartError;

use super::codec::{Codec, Json};
use super::counts::Counts;
use super::entities::Entities;
use super::error::Failure;
use super::options::{Options, DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION};
use super::shape::{Folded, Logged, Shape};
use super::store::{Store, StoreError};
use super::trip::{Carrier, Settings};

impl<K, I, O, R> Builder<K, I, Result<O, R>, Failure, PerKey>
where
    K: Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    R: Clone + Send + 'static,
{
    /// Starts an engine whose keys are entities in `store`: each key's
    /// inputs are folded by `fold` into its state, in rank order, and the
    /// new state written on the condition that nobody wrote the key
    /// since it was read, many keys in one request (a trip). Each shard
    /// connects in its own thread (the start fails, saying why, if one
    /// cannot) and connects again when its connection breaks.
    ///
    /// `fold` is pure: it gets the state and one input, and returns the
    /// input's output, or refuses it (`Err`), leaving the state as it was;
    /// the rest of the batch goes on. The state is `S::default()` for a
    /// key never written, and stored as JSON ([`start_entities_with`]
    /// picks another codec, an owner epoch and the rest of
    /// [`Options`]).
    ///
    /// [`start_entities_with`]: Self::start_entities_with
    ///
    /// ```
    /// use ferry::entity::{Entities, MemoryStore};
    /// use ferry::Engine;
    ///
    /// #[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
    /// struct Cart { items: Vec<String> }
    ///
    /// let carts: Entities<u64, String, usize, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start_entities(MemoryStore::new(), |cart: &mut Cart, item: &String| {
    ///         if cart.items.contains(item) {
    ///             return Err(format!("{item} is in the cart already"));
    ///         }
    ///         cart.items.push(item.clone());
    ///         Ok(cart.items.len())
    ///     })
    ///     .unwrap();
    /// assert_eq!(carts.submit_blocking(1, "tea".into()), Ok(1));
    /// assert_eq!(carts.submit_blocking(1, "jam".into()), Ok(2));
    /// assert!(carts.submit_blocking(1, "tea".into()).is_err());
    /// ```
    pub fn start_entities<St, S, F>(
        self,
        store: St,
        fold: F,
    ) -> Result<Entities<K, I, O, R>, StartError<StoreError>>
    where
        St: Store<K>,
        S: Default + Clone + Serialize + DeserializeOwned + 'static,
        F: Fn(&mut S, &I) -> Result<O, R> + Send + Sync + 'static,
    {
        self.start_entities_with(store, fold, Options::default())
    }

    /// [`start_entities`](Self::start_entities) with `options`: the
    /// state's codec, the owner epoch, how lost writes are resolved, how
    /// many keys a shard remembers.
    ///
    /// ```
    /// use ferry::entity::{Entities, EntityError, Epoch, MemoryStore, Options, Row};
    ///
    /// let store = MemoryStore::<u8>::new();
    /// // A newer owner (epoch 9) wrote key 1.
    /// store.write_outside(1, |row: &mut Row| *row = Row { version: 3, epoch: 9, state: Some(b"3".to_vec()) });
    /// let stale: Entities<u8, u64, u64, String> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_entities_with(
    ///         store.clone(),
    ///         |n: &mut u64, add: &u64| { *n += add; Ok(*n) },
    ///         Options::default().epoch(Epoch::new(8)),
    ///     )
    ///     .unwrap();
    /// assert_eq!(stale.submit_blocking(1, 1), Err(EntityError::Fenced { held: 9, mine: 8 }));
    /// assert_eq!(store.row(&1).unwrap().version, 3); // nothing applied
    /// ```
    pub fn start_entities_with<St, S, F, C>(
        self,
        store: St,
        fold: F,
        options: Options<C>,
    ) -> Result<Entities<K, I, O, R>, StartError<StoreError>>
    where
        St: Store<K>,
        S: Default + Clone + 'static,
        F: Fn(&mut S, &I) -> Result<O, R> + Send + Sync + 'static,
        C: Codec<S> + Clone,
    {
        let fold = Arc::new(fold);
        let codec = options.codec.clone();
        self.start_shaped(store, options, move || Folded {
            fold: Arc::clone(&fold),
            codec: codec.clone(),
            state: PhantomData,
        })
    }

    /// Starts the shards, each with the shape `shape` makes.
    fn start_shaped<St, Sh, C>(
        self,
        store: St,
        options: Options<C>,
        shape: impl Fn() -> Sh + Send + Sync + 'static,
    ) -> Result<Entities<K, I, O, R>, StartError<StoreError>>
    where
        St: Store<K>,
        Sh: Shape<I, Out = Result<O, R>>,
    {
        let store = Arc::new(store);
        let counts = Arc::new(Counts::default());
        let shared = Arc::clone(&counts);
        let (epoch, resolve_within, write_attempts, remember, connections) = (
            options.epoch,
            options.resolve_within,
            options.write_attempts,
            options.remember,
            options.connections,
        );
        let trips_in_flight = DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION.saturating_mul(connections);
        let engine = self
            .max_in_flight_batches_or(trips_in_flight)
            .try_start_trips(move |_shard| {
                let settings = Settings {
                    epoch: epoch.clone(),
                    resolve_within,
                    write_attempts,
                    counts: Arc::clone(&shared),
                };
                let started =
                    Carrier::start(Arc::clone(&store), shape(), settings, remember, connections);
                async move {
                    let carrier = Rc::new(started.await?);
                    Ok::<_, StoreError>(move |trip| Rc::clone(&carrier).carry(trip))
                }
            })?;
        Ok(Entities::of(engine, counts))
    }
}

impl<K, I> Builder<K, I, Result<u64, Infallible>, Failure, PerKey>
where
    K: Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
{
    /// Starts an engine whose keys are logs in `store`: each key's inputs
    /// are appended as events, in rank order, on the condition that the
    /// log is as long as the shard last saw it, many keys in one request.
    /// Each input is answered its sequence number in its key's log (from
    /// 1). Events are stored as JSON ([`start_log_with`](Self::start_log_with)
    /// picks another codec and the rest of [`Options`]).
    ///
    /// ```
    /// use ferry::entity::{Entities, MemoryStore};
    ///
    /// let store = MemoryStore::<&str>::new();
    /// let streams: Entities<&str, u32, u64, std::convert::Infallible> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_log(store.clone())
    ///     .unwrap();
    /// assert_eq!(streams.submit_blocking("orders", 7), Ok(1));
    /// assert_eq!(streams.submit_blocking("orders", 8), Ok(2));
    /// assert_eq!(store.log(&"orders"), vec![b"7".to_vec(), b"8".to_vec()]);
    /// ```
    pub fn start_log<St>(
        self,
        store: St,
    ) -> Result<Entities<K, I, u64, Infallible>, StartError<StoreError>>
    where
        St: Store<K>,
        I: Serialize + DeserializeOwned + 'static,
    {
        self.start_log_with(store, Options::<Json>::default())
    }

    /// [`start_log`](Self::start_log) with `options`.
    ///
    /// ```
    /// use ferry::entity::{Entities, Epoch, MemoryStore, Options};
    ///
    /// let streams: Entities<u8, String, u64, std::convert::Infallible> = Entities::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start_log_with(MemoryStore::new(), Options::default().epoch(Epoch::new(1)))
    ///     .unwrap();
    /// assert_eq!(streams.submit_blocking(4, "a".into()), Ok(1));
    /// ```
    pub fn start_log_with<St, C>(
        self,
        store: St,
        options: Options<C>,
    ) -> Result<Entities<K, I, u64, Infallible>, StartError<StoreError>>
    where
        St: Store<K>,
        I: 'static,
        C: Codec<I> + Clone,
    {
        let codec = options.codec.clone();
        self.start_shaped(store, options, move || Logged {
            codec: codec.clone(),
        })
    }
}
