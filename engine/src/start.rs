//! Starting what the builder describes: the per-key `Engine` with a batch
//! or trip function, the unkeyed `Batcher` with a batch function. Apart
//! from the settings (`config.rs`), which the handles name, so that the
//! settings do not name the handles back.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use ferry_shard::{BatchFn, Shard, ShardId, TripFn};

use crate::batcher::Batcher;
use crate::config::{Builder, PerKey, Unkeyed};
use crate::engine::Engine;
use crate::start_error::StartError;

impl<K, I, O, E> Builder<K, I, O, E, PerKey>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// Validates the settings and starts the shards. `factory` is called once
    /// on each shard's own thread; the batch function it returns serves that
    /// shard and need not be `Send`. Returns once every shard runs, or with
    /// the first failure and no shard left running.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_shard| {
    ///         // Made on the shard's thread and kept there: `Rc` will do.
    ///         let batches = Rc::new(Cell::new(0_u64));
    ///         move |_key: u64, inputs: Vec<u64>| {
    ///             let batches = Rc::clone(&batches);
    ///             async move {
    ///                 batches.set(batches.get() + 1);
    ///                 Ok::<_, String>(inputs)
    ///             }
    ///         }
    ///     })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(4, 40), Ok(40));
    /// ```
    pub fn start<F, B>(self, factory: F) -> Result<Engine<K, I, O, E>, StartError>
    where
        F: Fn(ShardId) -> B + Send + Sync + 'static,
        B: BatchFn<K, I, O, E> + 'static,
    {
        self.try_start(move |shard| std::future::ready(Ok::<_, Infallible>(factory(shard))))
    }

    /// Like [`start`](Self::start), with a factory that may await and fail:
    /// it runs on each shard's own thread, on that shard's runtime, so it
    /// can connect a per-core store client there (which need not be
    /// `Send`). Returns once every shard has its batch function, or with
    /// the first shard's failure ([`StartError::Factory`],
    /// [`StartError::FactoryPanicked`]) and every shard stopped and joined.
    ///
    /// ```
    /// use ferry::{Engine, ShardId, StartError};
    ///
    /// async fn connect(shard: ShardId) -> Result<String, String> {
    ///     Ok(format!("connection of {shard}"))
    /// }
    ///
    /// let engine: Engine<u64, u64, String, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .try_start(|shard| async move {
    ///         let client = std::rc::Rc::new(connect(shard).await?);
    ///         Ok::<_, String>(move |_key: u64, inputs: Vec<u64>| {
    ///             let client = client.clone();
    ///             async move { Ok::<_, String>(inputs.iter().map(|_| client.to_string()).collect()) }
    ///         })
    ///     })
    ///     .unwrap();
    /// assert!(engine.submit_blocking(1, 1).unwrap().starts_with("connection of shard"));
    ///
    /// let refused = Engine::<u64, u64, u64, String>::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .try_start(|shard| async move {
    ///         if shard.index() == 1 {
    ///             return Err("no route to the store");
    ///         }
    ///         Ok(|_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     });
    /// match refused {
    ///     Err(StartError::Factory { shard, error }) => {
    ///         assert_eq!((shard.index(), error), (1, "no route to the store"));
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn try_start<F, Fut, B, FE>(self, factory: F) -> Result<Engine<K, I, O, E>, StartError<FE>>
    where
        F: Fn(ShardId) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<B, FE>> + 'static,
        B: BatchFn<K, I, O, E> + 'static,
        FE: Send + 'static,
    {
        let plan = self.plan()?;
        let factory = Arc::new(factory);
        Engine::start(plan, move |config| {
            Shard::start(config, Arc::clone(&factory))
        })
    }

    /// Like [`start`](Self::start), with a trip function: each call carries
    /// the batches of up to [`max_trip_batches`](Self::max_trip_batches)
    /// keys of one shard, for one round trip to the store, and returns one
    /// result per batch in the order given (see [`TripFn`]). A trip takes
    /// one slot (`max_in_flight_batches` bounds trips in flight per shard);
    /// every per-key guarantee holds as with a batch function: a key is in
    /// at most one trip in flight, and its batch is in rank order.
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_trip_batches(128)
    ///     .max_in_flight_batches(4)
    ///     .start_trips(|_shard| |trip: Vec<(u64, Vec<u64>)>| async move {
    ///         // One request to the store for every key in the trip goes here.
    ///         trip.into_iter()
    ///             .map(|(key, inputs)| Ok::<_, String>(inputs.iter().map(|n| key + n).collect()))
    ///             .collect()
    ///     })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(40, 2), Ok(42));
    /// // The figures are published at the end of a shard's round, which may
    /// // come after an answer: a flush waits for them.
    /// futures::executor::block_on(engine.flush());
    /// assert_eq!(engine.stats().total().trips, 1);
    /// ```
    pub fn start_trips<F, T>(self, factory: F) -> Result<Engine<K, I, O, E>, StartError>
    where
        F: Fn(ShardId) -> T + Send + Sync + 'static,
        T: TripFn<K, I, O, E> + 'static,
    {
        self.try_start_trips(move |shard| std::future::ready(Ok::<_, Infallible>(factory(shard))))
    }

    /// Like [`try_start`](Self::try_start), with a trip function (see
    /// [`start_trips`](Self::start_trips)): the factory may await and fail
    /// on each shard's own thread, and start is all or nothing.
    ///
    /// ```
    /// use ferry::{Engine, ShardId};
    ///
    /// async fn connect(shard: ShardId) -> Result<std::rc::Rc<String>, String> {
    ///     Ok(std::rc::Rc::new(format!("store of {shard}")))
    /// }
    ///
    /// let engine: Engine<u64, u64, String, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .try_start_trips(|shard| async move {
    ///         let store = connect(shard).await?;
    ///         Ok::<_, String>(move |trip: Vec<(u64, Vec<u64>)>| {
    ///             let store = store.clone();
    ///             async move {
    ///                 trip.into_iter()
    ///                     .map(|(_, inputs)| Ok(inputs.iter().map(|_| store.to_string()).collect()))
    ///                     .collect()
    ///             }
    ///         })
    ///     })
    ///     .unwrap();
    /// assert!(engine.submit_blocking(3, 1).unwrap().starts_with("store of shard"));
    /// ```
    pub fn try_start_trips<F, Fut, T, FE>(
        self,
        factory: F,
    ) -> Result<Engine<K, I, O, E>, StartError<FE>>
    where
        F: Fn(ShardId) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, FE>> + 'static,
        T: TripFn<K, I, O, E> + 'static,
        FE: Send + 'static,
    {
        self.check_trips()?;
        let plan = self.plan()?;
        let factory = Arc::new(factory);
        Engine::start(plan, move |config| {
            Shard::start_trips(config, Arc::clone(&factory))
        })
    }
}

impl<I, O, E> Builder<(), I, O, E, Unkeyed>
where
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// Validates the settings and starts the shards. `factory` is called
    /// once on each shard's own thread; the batch function it returns
    /// serves that shard and need not be `Send`.
    ///
    /// ```
    /// use ferry::Batcher;
    ///
    /// let batcher: Batcher<u32, u32, String> = Batcher::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_shard| |inputs: Vec<u32>| async move {
    ///         Ok::<_, String>(inputs.iter().map(|x| x * 10).collect())
    ///     })
    ///     .unwrap();
    /// assert_eq!(batcher.submit_blocking(4), Ok(40));
    /// ```
    pub fn start<F, B, Fut>(self, factory: F) -> Result<Batcher<I, O, E>, StartError>
    where
        F: Fn(ShardId) -> B + Send + Sync + 'static,
        B: Fn(Vec<I>) -> Fut + 'static,
        Fut: Future<Output = Result<Vec<O>, E>>,
    {
        self.try_start(move |shard| std::future::ready(Ok::<_, Infallible>(factory(shard))))
    }

    /// Like [`start`](Self::start), with a factory that may await and fail,
    /// run on each shard's own thread (see [`Builder::try_start`] of an
    /// engine: the same all-or-nothing start).
    ///
    /// ```
    /// use ferry::{Batcher, StartError};
    ///
    /// let failed = Batcher::<u32, u32, String>::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .try_start(|shard| async move {
    ///         if shard.index() == 0 {
    ///             panic!("the store's address is missing");
    ///         }
    ///         Ok::<_, String>(|inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
    ///     });
    /// match failed {
    ///     Err(StartError::FactoryPanicked { shard, message }) => {
    ///         assert_eq!(shard.index(), 0);
    ///         assert!(message.contains("address is missing"));
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn try_start<F, MakeFut, B, Fut, FE>(
        self,
        factory: F,
    ) -> Result<Batcher<I, O, E>, StartError<FE>>
    where
        F: Fn(ShardId) -> MakeFut + Send + Sync + 'static,
        MakeFut: Future<Output = Result<B, FE>> + 'static,
        B: Fn(Vec<I>) -> Fut + 'static,
        Fut: Future<Output = Result<Vec<O>, E>>,
        FE: Send + 'static,
    {
        let plan = self.plan()?;
        // A batcher's one stream is the lane of the key `()`.
        let factory = Arc::new(move |shard| {
            let making = factory(shard);
            async move {
                let batch = making.await?;
                Ok(move |(): (), inputs: Vec<I>| batch(inputs))
            }
        });
        Batcher::start(plan, move |config| {
            Shard::start(config, Arc::clone(&factory))
        })
    }
}
