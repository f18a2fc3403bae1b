//! The one handle `ferry` holds per shard: start it, submit to it (from any
//! thread, or directly from a task on the shard itself), spawn a task on it,
//! read its stats, close it and join its thread. Everything else in this
//! crate is the shard's own business.

use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::oneshot;

use crate::answer::answer_cell::{self, answer_cell, local_answer_cell};
use crate::answer::gather::{Outcomes, ToShard};
use crate::core::carry::{Carry, PerBatch, PerTrip};
use crate::core::farewell::farewell;
use crate::core::shard_core::{
    Bundled, FlushReply, Offer, ShardCore, Submission, TripLimits, Waiter,
};
use crate::core::stats::{Distributions, ShardCounters, ShardStats};
use crate::core::trace;
use crate::queue::seam::Queue;
use crate::runtime::choice::Runtime;
use crate::runtime::executor::Executor;
use crate::runtime::on_glommio::Glommio;
use crate::runtime::on_tokio::Tokio;
use crate::runtime::slice::{SliceChoice, MAX_SCHED_SLICE, MIN_SCHED_SLICE};
use crate::thread::clock::Clock;
use crate::thread::flush_door::{FlushDoor, Flushed};
use crate::thread::idle::{Alarm, Bell, IdlePolicy};
use crate::thread::inbound::{Inbound, SharedIntake, SpawnTask};
use crate::thread::intake::Intake;
use crate::thread::local::{LocalShard, Nudge};
use crate::thread::shard_loop::{Parts, ShardLoop, SharedCore, Wakers};
use crate::value::batch_fn::BatchFn;
use crate::value::config::QueueConfig;
use crate::value::error::FerryError;
use crate::value::error::Outcome;
use crate::value::refused::{Refusal, Refused};
use crate::value::shard_id::ShardId;
use crate::value::trip_fn::TripFn;

/// Inputs for one shard, gathered to be passed in one push
/// ([`Shard::submit_bundle`]). Each input is answered through its call's
/// [`Outcomes`], where it takes the next place as it is added.
///
/// ```
/// # use std::sync::Arc;
/// # use ferry_shard::parts::{Lanes, Waiter};
/// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
/// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
/// # let times = |key: u64, inputs: Vec<u64>| async move {
/// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
/// # };
/// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
/// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
/// # starting.wait().expect("started");
/// use ferry_shard::{Bundle, Outcomes};
///
/// let mut outcomes = Outcomes::new();
/// let mut bundle = Bundle::with_capacity(2);
/// for key in [2_u64, 3] {
///     bundle.add(&mut outcomes, Offer::new(key_hash(&key), key, 10, 0, 1));
/// }
/// assert_eq!(shard.submit_bundle(bundle), 0); // none refused
/// let all = futures::executor::block_on(outcomes.all());
/// assert_eq!(all, vec![Ok(20), Ok(30)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Bundle<K, I, O, E> {
    to: Option<ToShard<I, O, E>>,
    inputs: Vec<Bundled<K, I>>,
}

impl<K, I, O, E> Default for Bundle<K, I, O, E> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<K, I, O, E> Bundle<K, I, O, E> {
    /// An empty bundle with room for `inputs`.
    ///
    /// ```
    /// use ferry_shard::Bundle;
    ///
    /// let bundle = Bundle::<u64, u64, u64, String>::with_capacity(16);
    /// assert!(bundle.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_capacity(inputs: usize) -> Self {
        Self {
            to: None,
            inputs: Vec::with_capacity(inputs),
        }
    }

    /// Adds an input (with its key's `hash`, its `rank`, `boundary` value
    /// and `weight`), to
    /// be answered as the next input of `outcomes`. A bundle holds inputs
    /// of one call.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// use ferry_shard::{Bundle, Outcomes};
    ///
    /// let mut outcomes = Outcomes::new();
    /// let mut bundle = Bundle::default();
    /// bundle.add(&mut outcomes, Offer::new(key_hash(&4_u64), 4, 5, 0, 1));
    /// assert_eq!(bundle.len(), 1);
    /// shard.submit_bundle(bundle);
    /// let all = futures::executor::block_on(outcomes.all());
    /// assert_eq!(all, vec![Ok(20)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add(&mut self, outcomes: &mut Outcomes<I, O, E>, offer: Offer<K, I>) {
        let to = self.to.get_or_insert_with(|| outcomes.to_shard());
        assert!(to.is_of(outcomes), "a bundle holds the inputs of one call");
        self.inputs.push(Bundled {
            offer,
            index: outcomes.add(),
        });
    }

    /// Inputs in the bundle.
    ///
    /// ```
    /// use ferry_shard::{Bundle, Offer, Outcomes, key_hash};
    ///
    /// let mut outcomes = Outcomes::<u64, u64, String>::new();
    /// let mut bundle = Bundle::default();
    /// bundle.add(&mut outcomes, Offer::new(key_hash(&1_u64), 1_u64, 1, 0, 1));
    /// bundle.add(&mut outcomes, Offer::new(key_hash(&1_u64), 1_u64, 2, 1, 1));
    /// assert_eq!(bundle.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// Whether it holds no input.
    ///
    /// ```
    /// use ferry_shard::Bundle;
    ///
    /// assert!(Bundle::<u64, u64, u64, String>::default().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }
}

/// How one shard is placed and bounded.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    /// Which shard.
    pub id: ShardId,
    /// Identifies the engine, so a task on this thread can tell whether a
    /// local submit is for this very shard.
    pub engine: usize,
    /// The CPU to pin its thread to, or `None` to leave it unbound.
    pub cpu: Option<usize>,
    /// The runtime of its thread: `Glommio` or `Tokio` (`Auto` is chosen
    /// before, with [`Runtime::choose`]; here it means glommio).
    pub runtime: Runtime,
    /// Bounds of its queue.
    pub queue: QueueConfig,
    /// Batches in flight at once (slots).
    pub max_in_flight_batches: usize,
    /// Capacity of its intake queue.
    pub intake_capacity: usize,
    /// After its last work, an idle shard first keeps looking for more this
    /// long, calling `sched_yield` between looks. Zero skips this stage.
    pub spin_before_park: Duration,
    /// Then it dozes this long, blocked on a futex, before it parks in its
    /// runtime. Zero skips this stage. (The stages are described in
    /// `idle.rs`.)
    pub doze_before_park: Duration,
    /// The time slice its thread asks Linux for while its rounds answer
    /// many inputs (see `slice.rs`), between
    /// [`MIN_SCHED_SLICE`](Self::MIN_SCHED_SLICE) and
    /// [`MAX_SCHED_SLICE`](Self::MAX_SCHED_SLICE); zero asks for nothing.
    pub sched_slice: Duration,
    /// Batches (keys) one trip carries at most, for a shard started with
    /// [`Shard::start_trips`]; at least 1.
    pub max_trip_batches: usize,
    /// The total weight one trip carries at most, unless it is a single
    /// batch (a shard started with [`Shard::start_trips`]); at least 1.
    pub max_trip_weight: u64,
}

impl ShardConfig {
    /// Shard `id`, unpinned, on tokio's runtime, with the default
    /// [`QueueConfig`], 64 batches in flight, an intake of 65,536 (at most
    /// the queue's `max_waiting`), a 50 µs spin and a 2 ms doze before it
    /// parks, the shortest time slice, and trips of up to 256 batches of any
    /// weight: the defaults `ferry` starts its shards with, but for the
    /// runtime (`ferry` prefers glommio where it runs). `engine` is 0: give
    /// shards started by hand in one process distinct `(engine, id)` pairs,
    /// so [`Shard::submit_local`] tells them apart.
    ///
    /// ```
    /// use ferry_shard::{Runtime, ShardConfig, ShardId};
    ///
    /// let config = ShardConfig {
    ///     cpu: Some(0),
    ///     ..ShardConfig::new(ShardId::new(3))
    /// };
    /// assert_eq!(config.id.index(), 3);
    /// assert_eq!(config.runtime, Runtime::Tokio);
    /// assert_eq!(config.max_in_flight_batches, 64);
    /// ```
    pub fn new(id: ShardId) -> Self {
        let queue = QueueConfig::default();
        Self {
            id,
            engine: 0,
            cpu: None,
            runtime: Runtime::Tokio,
            intake_capacity: queue.max_waiting.min(65_536),
            queue,
            max_in_flight_batches: 64,
            spin_before_park: Duration::from_micros(50),
            doze_before_park: Duration::from_millis(2),
            sched_slice: MIN_SCHED_SLICE,
            max_trip_batches: 256,
            max_trip_weight: u64::MAX,
        }
    }

    /// The shortest time slice Linux grants: it clamps shorter requests up
    /// to this.
    ///
    /// ```
    /// use ferry_shard::ShardConfig;
    /// assert_eq!(ShardConfig::MIN_SCHED_SLICE.as_micros(), 100);
    /// ```
    pub const MIN_SCHED_SLICE: Duration = MIN_SCHED_SLICE;

    /// The longest time slice Linux grants: it clamps longer requests down
    /// to this.
    ///
    /// ```
    /// use ferry_shard::ShardConfig;
    /// assert_eq!(ShardConfig::MAX_SCHED_SLICE.as_millis(), 100);
    /// ```
    pub const MAX_SCHED_SLICE: Duration = MAX_SCHED_SLICE;
}

/// One running shard, as the engine holds it: `Send + Sync`, shared by
/// every handle of the engine. `Q` is its queueing discipline
/// ([`Lanes`](crate::parts::Lanes) or [`Fifo`](crate::parts::Fifo)).
///
/// ```
/// use std::sync::Arc;
/// use ferry_shard::parts::{Lanes, Waiter};
/// use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
///
/// // Keys, inputs and outputs u64, errors String; one lane per key.
/// type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
/// let times = |key: u64, inputs: Vec<u64>| async move {
///     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
/// };
/// let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
/// let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
/// starting.wait().expect("the factory made its batch function");
///
/// let answer = shard.submit(Offer::new(key_hash(&3_u64), 3, 5, 0, 1)).map_err(|r| r.reason)?;
/// assert_eq!(futures::executor::block_on(answer), Ok(15));
/// shard.close();
/// shard.join();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Shard<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
{
    id: ShardId,
    engine: usize,
    intake: SharedIntake<Q::Key, I, O, E>,
    counters: Arc<ShardCounters>,
    flushes: Arc<FlushDoor<FlushReply>>,
    /// Its config's `withdraw_on_drop`: answers tell the shard when their
    /// caller drops them unanswered.
    withdraw_on_drop: bool,
    thread: ThreadId,
    join: Mutex<Option<JoinHandle<()>>>,
    _queue: PhantomData<fn() -> Q>,
}

/// Why a shard did not come up.
///
/// ```
/// use std::sync::Arc;
/// use ferry_shard::parts::{Lanes, Waiter};
/// use ferry_shard::{Shard, ShardConfig, ShardId, StartFailure};
///
/// type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
/// let times = |key: u64, inputs: Vec<u64>| async move {
///     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
/// };
/// // A factory that cannot reach its store fails the start.
/// let factory = Arc::new(move |_: ShardId| async move {
///     if true { Err("no store at 127.0.0.1:5432") } else { Ok(times) }
/// });
/// let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
/// match starting.wait() {
///     Err(StartFailure::Factory(why)) => assert_eq!(why, "no store at 127.0.0.1:5432"),
///     other => panic!("expected the factory's error, got {other:?}"),
/// }
/// shard.join(); // its thread has ended
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum StartFailure<F> {
    /// Its runtime could not run on this thread: why, and how to fix it.
    Runtime(String),
    /// Its factory returned this error.
    Factory(F),
    /// Its factory panicked, with this message.
    FactoryPanicked(String),
}

/// A shard whose thread runs and is making its batch function; see
/// [`Starting::wait`].
///
/// ```
/// # use std::sync::Arc;
/// # use ferry_shard::parts::{Lanes, Waiter};
/// # use ferry_shard::{key_hash, Shard, ShardConfig, ShardId};
/// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
/// # let times = |key: u64, inputs: Vec<u64>| async move {
/// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
/// # };
/// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
/// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
/// let ready = starting.wait();
/// assert!(ready.is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a shard is only known to run once `wait` says so"]
pub struct Starting<F> {
    ready: mpsc::Receiver<Result<(), StartFailure<F>>>,
}

impl<F> Starting<F> {
    /// Blocks until the shard has its batch function and runs its loop, or
    /// says why it could not.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{key_hash, Shard, ShardConfig, ShardId};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// starting.wait().expect("the factory made its batch function");
    /// assert!(!shard.is_closed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait(self) -> Result<(), StartFailure<F>> {
        match self.ready.recv() {
            Ok(result) => result,
            Err(mpsc::RecvError) => Err(StartFailure::FactoryPanicked(
                "the shard's thread ended before it started".to_string(),
            )),
        }
    }
}

impl<Q, I, O, E> Shard<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>> + 'static,
    Q::Key: Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// Starts the shard's thread on `config.runtime`, serving one key's
    /// batch per call of a batch function. `factory` is called once, on
    /// that thread, and awaited there, to make that function;
    /// [`Starting::wait`] tells whether it did.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ferry_shard::parts::{Fifo, Waiter};
    /// use ferry_shard::{Offer, Shard, ShardConfig, ShardId};
    ///
    /// // One stream without keys (the key is `()`): `Fifo` batches in arrival order.
    /// type Stream = Shard<Fifo<Waiter<u32, usize, String>>, u32, usize, String>;
    /// let lengths = |(): (), inputs: Vec<u32>| async move {
    ///     Ok::<_, String>(vec![inputs.len(); inputs.len()])
    /// };
    /// let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(lengths) });
    /// let (shard, starting) = Stream::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// starting.wait().expect("the factory made its batch function");
    /// let answer = shard.submit(Offer::new(0, (), 9, 0, 1)).map_err(|r| r.reason)?;
    /// assert_eq!(futures::executor::block_on(answer), Ok(1));
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start<F, Fut, B, FE>(
        config: ShardConfig,
        factory: Arc<F>,
    ) -> std::io::Result<(Self, Starting<FE>)>
    where
        F: Fn(ShardId) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<B, FE>> + 'static,
        B: BatchFn<Q::Key, I, O, E> + 'static,
        FE: Send + 'static,
    {
        Self::start_carried(config, factory, PerBatch)
    }

    /// Like [`start`](Self::start), with a trip function: each call carries
    /// the batches of up to `config.max_trip_batches` keys, of at most
    /// `config.max_trip_weight` in all unless it is a single batch. Fails
    /// with [`std::io::ErrorKind::InvalidInput`] if either bound is zero.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ferry_shard::parts::{Lanes, Waiter};
    /// use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
    ///
    /// type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// // One call carries several keys' batches: one result per batch.
    /// let times = |trip: Vec<(u64, Vec<u64>)>| async move {
    ///     trip.into_iter()
    ///         .map(|(key, inputs)| Ok::<_, String>(inputs.iter().map(|n| key * n).collect()))
    ///         .collect::<Vec<_>>()
    /// };
    /// let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// let config = ShardConfig { max_trip_batches: 32, ..ShardConfig::new(ShardId::new(0)) };
    /// let (shard, starting) = Keyed::start_trips(config, factory)?;
    /// starting.wait().expect("the factory made its trip function");
    /// let answer = shard.submit(Offer::new(key_hash(&2_u64), 2, 21, 0, 1)).map_err(|r| r.reason)?;
    /// assert_eq!(futures::executor::block_on(answer), Ok(42));
    ///
    /// // A trip bound of zero is refused before any thread starts.
    /// let zero = ShardConfig { max_trip_batches: 0, ..ShardConfig::new(ShardId::new(1)) };
    /// let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// let refused = Keyed::start_trips(zero, factory).err().expect("refused");
    /// assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_trips<F, Fut, T, FE>(
        config: ShardConfig,
        factory: Arc<F>,
    ) -> std::io::Result<(Self, Starting<FE>)>
    where
        F: Fn(ShardId) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, FE>> + 'static,
        T: TripFn<Q::Key, I, O, E> + 'static,
        FE: Send + 'static,
    {
        let limits = TripLimits {
            max_batches: config.max_trip_batches,
            max_weight: config.max_trip_weight,
        };
        if limits.max_batches == 0 || limits.max_weight == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "max_trip_batches and max_trip_weight must be at least 1, not {} and {}",
                    limits.max_batches, limits.max_weight
                ),
            ));
        }
        Self::start_carried(config, factory, move |trip_fn| PerTrip { trip_fn, limits })
    }

    /// Starts the thread, whose factory's function `carry` wraps in the way
    /// the shard's slots are filled.
    fn start_carried<F, Fut, M, W, C, FE>(
        config: ShardConfig,
        factory: Arc<F>,
        carry: W,
    ) -> std::io::Result<(Self, Starting<FE>)>
    where
        F: Fn(ShardId) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<M, FE>> + 'static,
        W: FnOnce(M) -> C + Send + 'static,
        C: Carry<Q, I, O, E> + 'static,
        FE: Send + 'static,
    {
        let intake = Arc::new(Intake::new(config.intake_capacity));
        let counters = Arc::new(ShardCounters::default());
        let flushes = Arc::new(FlushDoor::default());
        let (ready_tx, ready) = mpsc::channel();
        let thread = {
            let (intake, counters) = (Arc::clone(&intake), Arc::clone(&counters));
            let shared = Shared {
                intake,
                counters,
                flushes: Arc::clone(&flushes),
            };
            let config = config.clone();
            std::thread::Builder::new()
                .name(format!("ferry-{}", config.id))
                .spawn(move || {
                    let ready = Ready(ready_tx);
                    match config.runtime {
                        Runtime::Tokio => {
                            Runtime::Tokio.set_current();
                            serve::<Tokio, Q, I, O, E, F, Fut, M, W, C, FE>(
                                config, shared, factory, carry, ready,
                            )
                        }
                        Runtime::Glommio | Runtime::Auto => {
                            Runtime::Glommio.set_current();
                            serve::<Glommio, Q, I, O, E, F, Fut, M, W, C, FE>(
                                config, shared, factory, carry, ready,
                            )
                        }
                    }
                })?
        };
        let shard = Self {
            id: config.id,
            engine: config.engine,
            intake,
            counters,
            flushes,
            withdraw_on_drop: config.queue.withdraw_on_drop,
            thread: thread.thread().id(),
            join: Mutex::new(Some(thread)),
            _queue: PhantomData,
        };
        Ok((shard, Starting { ready }))
    }

    /// Hands an input to the shard as one [`Offer`] (its key's hash, its
    /// rank, weight and boundary value computed on the caller's thread);
    /// refused at once, with the input handed back, if the intake is full
    /// or closed.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// // The caller computes the key's hash, the rank and the weight (and a
    /// // boundary value, `Offer::bounded`); the shard only compares them.
    /// let answer = shard.submit(Offer::new(key_hash(&7_u64), 7, 6, 0, 1)).map_err(|r| r.reason)?;
    /// assert_eq!(futures::executor::block_on(answer), Ok(42));
    ///
    /// // A closed shard refuses, and hands the input back.
    /// shard.close();
    /// let refusal = shard.submit(Offer::new(key_hash(&7_u64), 7, 6, 0, 1)).err().expect("refused");
    /// assert_eq!(refusal.item, 6);
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn submit(&self, offer: Offer<Q::Key, I>) -> Result<Answer<I, O, E>, Refusal<I>> {
        let hash = offer.hash;
        let (reply, answer) = answer_cell::<Outcome<I, O, E>>();
        let submission = Submission { offer, reply };
        match self.intake.push(Inbound::Submit(submission)) {
            Ok(()) => Ok(Answer {
                outcome: answer,
                notice: self.notice(hash),
            }),
            Err(Refusal { item, reason }) => {
                self.refused_at_intake(reason);
                let Inbound::Submit(submission) = item else {
                    unreachable!("the intake hands back what it was given")
                };
                Err(Refusal {
                    item: submission.offer.input,
                    reason,
                })
            }
        }
    }

    /// The thread-per-core fast path: if the calling task runs on this very
    /// shard, admits the input directly (no queue, no channel, no atomic
    /// read-modify-write). Otherwise hands the offer back, for the ordinary
    /// path.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// // On any thread but the shard's own, the key and input come back.
    /// let here = shard.submit_local(Offer::new(key_hash(&5_u64), 5, 1, 0, 1));
    /// assert_eq!(here.err().map(|offer| (offer.key, offer.input)), Some((5, 1)));
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn submit_local(
        &self,
        offer: Offer<Q::Key, I>,
    ) -> Result<LocalAnswer<I, O, E>, Offer<Q::Key, I>> {
        let Some(here) =
            LocalShard::<RefCell<ShardCore<Q, I, O, E>>>::find((self.engine, self.id.index()))
        else {
            return Err(offer);
        };
        let Ok(mut core) = here.core.try_borrow_mut() else {
            // Only reachable from inside the shard loop's own call stack.
            return Err(offer);
        };
        let (reply, answer) = local_answer_cell();
        if self.intake.is_closed() {
            drop(core);
            self.refused_at_intake(Refused::Closed);
            let refused = FerryError::Refused {
                input: offer.input,
                reason: Refused::Closed,
            };
            reply.send(Err(refused));
        } else {
            core.admit_local(offer, reply, here.clock.read());
            drop(core);
            here.nudge.nudge();
        }
        Ok(LocalAnswer(answer))
    }

    /// Hands every input of `bundle` to the shard in one push, with at most
    /// one wake-up. If the intake cannot take them all (full or closed),
    /// each is refused on its own: its outcome is the refusal, with its
    /// input handed back. Returns how many were refused.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// use ferry_shard::{Bundle, Outcomes};
    ///
    /// let mut outcomes = Outcomes::new();
    /// let mut bundle = Bundle::default();
    /// for (rank, input) in [1_u64, 2, 3].into_iter().enumerate() {
    ///     bundle.add(&mut outcomes, Offer::new(key_hash(&10_u64), 10, input, rank as i64, 1));
    /// }
    /// assert_eq!(shard.submit_bundle(bundle), 0);
    /// let all = futures::executor::block_on(outcomes.all());
    /// assert_eq!(all, vec![Ok(10), Ok(20), Ok(30)]);
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn submit_bundle(&self, bundle: Bundle<Q::Key, I, O, E>) -> usize {
        let Bundle {
            to: Some(to),
            inputs,
        } = bundle
        else {
            return 0;
        };
        let count = inputs.len();
        let refused = match self.intake.push_bundle(Inbound::Bundle(to, inputs), count) {
            Ok(()) => return 0,
            Err(refused) => refused,
        };
        let Inbound::Bundle(to, inputs) = refused.item else {
            unreachable!("the intake hands back what it was given")
        };
        for _ in 0..count {
            self.refused_at_intake(refused.reason);
        }
        refuse_bundled(&to, inputs, refused.reason);
        count
    }

    /// A caller of the key of `hash` stopped waiting: tells the shard, which
    /// withdraws the caller's input if it has not been taken yet (with
    /// `withdraw_on_drop`). Best effort: if the intake is full or closed the
    /// notice is dropped, and the input is found gone when its batch is
    /// taken instead.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// // A notice for a key with nothing waiting changes nothing.
    /// shard.withdraw(key_hash(&8_u64));
    /// let answer = shard.submit(Offer::new(key_hash(&8_u64), 8, 2, 0, 1)).map_err(|r| r.reason)?;
    /// assert_eq!(futures::executor::block_on(answer), Ok(16));
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn withdraw(&self, hash: u64) {
        let _ = self.intake.push(Inbound::Withdraw(hash));
    }

    /// What an answer for the key of `hash` sends when dropped unanswered,
    /// if inputs are withdrawn on drop.
    fn notice(&self, hash: u64) -> Option<Notice> {
        self.withdraw_on_drop.then(|| Notice {
            door: Arc::clone(&self.intake) as Arc<dyn NoticeDoor>,
            hash,
        })
    }

    /// Resolves once every input admitted before the call is answered
    /// (or expired, or withdrawn); the shard stays open. Resolves at once if
    /// the shard has stopped.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// let answer = shard.submit(Offer::new(key_hash(&4_u64), 4, 4, 0, 1)).map_err(|r| r.reason)?;
    /// futures::executor::block_on(shard.flush());
    /// assert_eq!(shard.stats().answered_ok, 1);
    /// assert_eq!(futures::executor::block_on(answer), Ok(16));
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flush(&self) -> Flushed {
        let (reply, flushed) = oneshot::channel();
        if self.flushes.request(reply) {
            self.intake.ring();
            Flushed::new(flushed)
        } else {
            // Stopped: nothing to wait for.
            Flushed::done()
        }
    }

    /// Runs `task` on the shard's thread, beside its loop. Refused (`Full`
    /// or `Closed`) when the intake cannot take it.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{key_hash, Shard, ShardConfig, ShardId};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// let (tell, told) = std::sync::mpsc::channel();
    /// shard.spawn(Box::new(move || {
    ///     Box::pin(async move {
    ///         tell.send(std::thread::current().id()).expect("the caller waits");
    ///     })
    /// }))?;
    /// assert_eq!(told.recv()?, shard.thread());
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn(&self, task: SpawnTask) -> Result<(), Refused> {
        self.intake
            .push(Inbound::Spawn(task))
            .map_err(|refusal| refusal.reason)
    }
}

impl<Q, I, O, E> Shard<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
{
    /// Counts an input the engine refused before handing it to the shard
    /// (it is too heavy for any batch).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{key_hash, Shard, ShardConfig, ShardId};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// shard.count_refused();
    /// assert_eq!(shard.stats().refused_too_heavy, 1);
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count_refused(&self) {
        self.refused_at_intake(Refused::TooHeavy);
    }

    /// Counts (and, with the feature `tracing`, reports) an input refused
    /// for `reason` before it reached the shard.
    fn refused_at_intake(&self, reason: Refused) {
        self.counters.count_refused_at_intake(reason);
        trace::refused(self.id, reason);
    }

    /// Which shard.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{key_hash, Shard, ShardConfig, ShardId};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// assert_eq!(shard.id(), ShardId::new(0));
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> ShardId {
        self.id
    }

    /// Its gauges and counters, read without a lock.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// let answer = shard.submit(Offer::new(key_hash(&1_u64), 1, 1, 0, 1)).map_err(|r| r.reason)?;
    /// futures::executor::block_on(answer)?;
    /// // The figures are published at the end of the shard's round, which
    /// // may come after the answer: a flush waits for it.
    /// futures::executor::block_on(shard.flush());
    /// let stats = shard.stats();
    /// assert_eq!((stats.admitted, stats.answered_ok), (1, 1));
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> ShardStats {
        self.counters.snapshot(self.intake.len() as u64)
    }

    /// Its gauges and counters, and the distributions their summaries were
    /// computed from (to merge with other shards' or to subtract from a
    /// later reading), read without a lock.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// let answer = shard.submit(Offer::new(key_hash(&1_u64), 1, 1, 0, 1)).map_err(|r| r.reason)?;
    /// futures::executor::block_on(answer)?;
    /// futures::executor::block_on(shard.flush()); // the round's figures
    /// let (stats, distributions) = shard.stats_with_distributions();
    /// assert_eq!(stats.batches, 1);
    /// assert_eq!(distributions.batch_size.count(), 1);
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats_with_distributions(&self) -> (ShardStats, Distributions) {
        self.counters
            .snapshot_with_distributions(self.intake.len() as u64)
    }

    /// Refuses new input and lets the shard drain and exit (G9). Any
    /// thread; idempotent.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{key_hash, Shard, ShardConfig, ShardId};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// shard.close();
    /// shard.close(); // again: nothing more happens
    /// shard.join();
    /// assert!(shard.stats().stopped > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.intake.close();
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{key_hash, Shard, ShardConfig, ShardId};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// assert!(!shard.is_closed());
    /// shard.close();
    /// assert!(shard.is_closed());
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.intake.is_closed()
    }

    /// The shard's thread.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{key_hash, Shard, ShardConfig, ShardId};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// assert_ne!(shard.thread(), std::thread::current().id());
    /// # shard.close();
    /// # shard.join();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn thread(&self) -> ThreadId {
        self.thread
    }

    /// Blocks until the shard's thread exited; at once if it was joined
    /// before. Returns at once, without joining, on the shard's own thread.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use ferry_shard::parts::{Lanes, Waiter};
    /// # use ferry_shard::{key_hash, Shard, ShardConfig, ShardId};
    /// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
    /// # let times = |key: u64, inputs: Vec<u64>| async move {
    /// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
    /// # };
    /// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
    /// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
    /// # starting.wait().expect("started");
    /// shard.close();
    /// shard.join();
    /// shard.join(); // once joined, returns at once
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join(&self) {
        if std::thread::current().id() == self.thread {
            return;
        }
        let join = self
            .join
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
        if let Some(join) = join {
            // A shard thread that panicked has answered nothing more; its
            // callers see `Aborted`. Nothing to report here.
            let _ = join.join();
        }
    }
}

/// Tells the starting engine how the shard came up, once.
struct Ready<F>(mpsc::Sender<Result<(), StartFailure<F>>>);

impl<F> Ready<F> {
    fn send(&self, result: Result<(), StartFailure<F>>) {
        // The engine may have stopped waiting (another shard failed).
        let _ = self.0.send(result);
    }
}

/// What a shard's thread shares with its handle.
struct Shared<K, I, O, E> {
    intake: SharedIntake<K, I, O, E>,
    counters: Arc<ShardCounters>,
    flushes: Arc<FlushDoor<FlushReply>>,
}

/// The body of a shard's thread: the runtime, the batch function, the loop.
fn serve<R, Q, I, O, E, F, Fut, M, W, C, FE>(
    config: ShardConfig,
    shared: Shared<Q::Key, I, O, E>,
    factory: Arc<F>,
    carry: W,
    ready: Ready<FE>,
) where
    R: Executor,
    Q: Queue<Waiter<I, O, E>> + 'static,
    Q::Key: Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
    F: Fn(ShardId) -> Fut,
    Fut: Future<Output = Result<M, FE>>,
    W: FnOnce(M) -> C,
    C: Carry<Q, I, O, E> + 'static,
{
    let Shared {
        intake,
        counters,
        flushes,
    } = shared;
    let _closing = CloseOnExit {
        intake: &intake,
        counters: &counters,
        flushes: &flushes,
    };
    let name = format!("ferry-{}", config.id);
    let ran = R::run(&name, config.cpu, async {
        let slice = slice_of(&config);
        let Some(carry) = make(&*factory, config.id, &ready).await.map(carry) else {
            return;
        };
        let clock = Rc::new(Clock::start());
        let core: SharedCore<Q, I, O, E> = new_core(&config, &clock);
        let _farewell = Farewell {
            core: Rc::clone(&core),
            counters: Arc::clone(&counters),
        };
        let wakers = wakers_of(&intake);
        let _installed = LocalShard::install(LocalShard {
            owner: (config.engine, config.id.index()),
            core: Rc::clone(&core),
            nudge: Rc::clone(&wakers.nudge),
            clock: Rc::clone(&clock),
        });
        let parts = Parts {
            core,
            flushes: Arc::clone(&flushes),
            intake: Arc::clone(&intake),
            counters: Arc::clone(&counters),
            carry,
            clock,
            wakers,
            idle: IdlePolicy {
                spin: config.spin_before_park,
                doze: config.doze_before_park,
            },
            slice,
        };
        ready.send(Ok(()));
        ShardLoop::<R, Q, I, O, E, C>::new(parts).run().await;
    });
    if let Err(reason) = ran {
        ready.send(Err(StartFailure::Runtime(reason)));
    }
}

/// The time slice the shard's thread asks for, with what Linux granted
/// traced.
fn slice_of(config: &ShardConfig) -> SliceChoice {
    let (slice, granted) = SliceChoice::start(config.sched_slice);
    if let Some(granted) = granted {
        trace::sched_slice(config.id, config.sched_slice, &granted);
    }
    slice
}

/// The shard's core, for its thread, with its bounds, slots and name; an
/// event-time hold is told where `clock`'s zero lies in UNIX time.
fn new_core<Q, I, O, E>(config: &ShardConfig, clock: &Clock) -> SharedCore<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
    E: Clone,
{
    let mut lanes = config.queue.clone();
    if let Some(hold) = lanes.hold.as_mut() {
        hold.origin_unix_ns = clock.origin_unix_ns();
    }
    let core = ShardCore::new(lanes, config.max_in_flight_batches);
    let core = Rc::new(RefCell::new(core));
    core.borrow_mut().observer_mut().set_shard(config.id);
    core
}

/// The wakers of a shard's loop on this thread (see `Wakers`).
fn wakers_of<T: Send + 'static>(intake: &Arc<Intake<T>>) -> Wakers {
    Wakers {
        nudge: Rc::new(Nudge::default()),
        bell: Bell::waker(Arc::clone(intake)),
        alarm: Alarm::for_this_thread(),
    }
}

/// Calls and awaits the factory on the shard's thread; reports its error or
/// panic to the starting engine (and returns `None`).
async fn make<F, Fut, M, FE>(factory: &F, id: ShardId, ready: &Ready<FE>) -> Option<M>
where
    F: Fn(ShardId) -> Fut,
    Fut: Future<Output = Result<M, FE>>,
{
    let made = match std::panic::catch_unwind(AssertUnwindSafe(|| factory(id))) {
        Ok(making) => AssertUnwindSafe(making).catch_unwind().await,
        Err(panic) => Err(panic),
    };
    match made {
        Ok(Ok(batch_fn)) => Some(batch_fn),
        Ok(Err(error)) => {
            ready.send(Err(StartFailure::Factory(error)));
            None
        }
        Err(panic) => {
            ready.send(Err(StartFailure::FactoryPanicked(panic_message(&*panic))));
            None
        }
    }
}

/// The message a panic carried, if it was a string.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_string()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// When the shard's loop ends for any reason, every input still waiting in
/// its queue goes back to its caller, refused `Closed` (never sent). After
/// a normal exit nothing waits. If user code that runs on the shard (the
/// key's `Eq` or `Clone`, a `Drop`) panics, the thread unwinds through here
/// (G4): only callers whose batch was in flight learn `Aborted`, when
/// their batch is dropped.
struct Farewell<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
    E: Clone,
{
    core: SharedCore<Q, I, O, E>,
    counters: Arc<ShardCounters>,
}

impl<Q, I, O, E> Drop for Farewell<Q, I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
    E: Clone,
{
    fn drop(&mut self) {
        // The loop ends by itself only once closed and drained: anything
        // else that brings the thread here is a panic unwinding it.
        let died = std::thread::panicking();
        // Marked first, so that a caller handed its input back below sees
        // the shard stopped.
        self.counters.mark_stopped(died);
        // The loop's borrows end before the unwinding reaches here.
        if let Ok(mut core) = self.core.try_borrow_mut() {
            core.refuse_waiting();
            core.deliver();
            farewell(&mut core, &self.counters, died);
        }
    }
}

/// Closes and empties the intake when the shard's thread ends for any
/// reason, and marks the shard stopped. After a normal exit the intake is
/// already sealed and empty. Otherwise every input still in it goes back
/// to its caller, refused `Closed`, and later pushes are refused at the
/// door: nobody waits on a shard that is gone (G4).
struct CloseOnExit<'a, K, I, O, E> {
    intake: &'a Intake<Inbound<K, I, O, E>>,
    counters: &'a ShardCounters,
    flushes: &'a FlushDoor<FlushReply>,
}

impl<K, I, O, E> CloseOnExit<'_, K, I, O, E> {
    /// Refuses `Closed` what was left in the intake, handing it back.
    fn refuse(&self, inbound: Inbound<K, I, O, E>) {
        let closed = Refused::Closed;
        match inbound {
            Inbound::Submit(submission) => {
                self.counters.count_refused_at_intake(closed);
                let refused = FerryError::Refused {
                    input: submission.offer.input,
                    reason: closed,
                };
                submission.reply.send(Err(refused));
            }
            Inbound::Bundle(to, inputs) => {
                self.intake.popped_bundle(inputs.len());
                for _ in &inputs {
                    self.counters.count_refused_at_intake(closed);
                }
                refuse_bundled(&to, inputs, closed);
            }
            Inbound::Spawn(_) | Inbound::Withdraw(_) => {}
        }
    }
}

/// Answers every input of a share of a call with its refusal, handing it
/// back.
fn refuse_bundled<K, I, O, E>(to: &ToShard<I, O, E>, inputs: Vec<Bundled<K, I>>, reason: Refused) {
    let indexed = inputs
        .into_iter()
        .map(|bundled| (bundled.index, bundled.offer.input));
    to.answer_all(indexed, |input| Err(FerryError::Refused { input, reason }));
}

impl<K, I, O, E> Drop for CloseOnExit<'_, K, I, O, E> {
    fn drop(&mut self) {
        let died = std::thread::panicking() || !self.intake.is_closed();
        self.counters.mark_stopped(died);
        // Nothing is left to wait for: every flush, now or later, resolves.
        drop(self.flushes.shut());
        let intake = self.intake;
        intake.close();
        loop {
            while let Some(inbound) = intake.pop() {
                self.refuse(inbound);
            }
            if intake.is_sealed() && intake.is_empty() {
                break;
            }
            // A pusher is between registering and deregistering: nanoseconds.
            std::thread::yield_now();
        }
    }
}

/// Where a withdrawal notice goes: a shard's intake, whatever its types.
trait NoticeDoor: Send + Sync {
    fn withdraw(&self, hash: u64);
}

impl<K, I, O, E> NoticeDoor for Intake<Inbound<K, I, O, E>>
where
    K: Send,
    I: Send,
    O: Send,
    E: Send,
{
    fn withdraw(&self, hash: u64) {
        // Best effort (see `Shard::withdraw`).
        let _ = self.push(Inbound::Withdraw(hash));
    }
}

/// Tells a shard that the caller of an input of the key of `hash` stopped
/// waiting.
struct Notice {
    door: Arc<dyn NoticeDoor>,
    hash: u64,
}

/// The future of an input handed to a shard: its outcome, or `Aborted` if
/// the shard stopped without answering. `Send` and `Unpin`. With
/// `withdraw_on_drop`, dropping it unanswered tells the shard, which
/// withdraws the input if it has not been taken into a batch yet.
///
/// ```
/// # use std::sync::Arc;
/// # use ferry_shard::parts::{Lanes, Waiter};
/// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
/// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
/// # let times = |key: u64, inputs: Vec<u64>| async move {
/// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
/// # };
/// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
/// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
/// # starting.wait().expect("started");
/// let answer = shard.submit(Offer::new(key_hash(&9_u64), 9, 9, 0, 1)).map_err(|r| r.reason)?;
/// assert_eq!(futures::executor::block_on(answer), Ok(81));
/// # shard.close();
/// # shard.join();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Answer<I, O, E> {
    outcome: answer_cell::Receiver<Outcome<I, O, E>>,
    notice: Option<Notice>,
}

impl<I, O, E> Drop for Answer<I, O, E> {
    fn drop(&mut self) {
        if let Some(notice) = self.notice.take() {
            // Closing first makes the input look abandoned to the shard
            // before the notice can reach it.
            self.outcome.close();
            notice.door.withdraw(notice.hash);
        }
    }
}

impl<I, O, E> std::fmt::Debug for Answer<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answer")
            .field("withdraws_on_drop", &self.notice.is_some())
            .finish_non_exhaustive()
    }
}

impl<I, O, E> Future for Answer<I, O, E> {
    type Output = Outcome<I, O, E>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let polled = Pin::new(&mut self.outcome).poll(cx);
        if polled.is_ready() {
            // Answered: there is nothing to withdraw any more.
            self.notice = None;
        }
        match polled {
            Poll::Ready(Ok(outcome)) => Poll::Ready(outcome),
            // The shard dropped the reply without answering: it stopped (its
            // thread died) with the input admitted.
            Poll::Ready(Err(answer_cell::Unsent)) => Poll::Ready(Err(FerryError::Aborted)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The future of an input admitted directly by the shard the caller runs
/// on. Not `Send`: it stays on that thread.
///
/// ```
/// # use std::sync::Arc;
/// # use ferry_shard::parts::{Lanes, Waiter};
/// # use ferry_shard::{Offer, Shard, ShardConfig, ShardId, key_hash};
/// # type Keyed = Shard<Lanes<u64, Waiter<u64, u64, String>>, u64, u64, String>;
/// # let times = |key: u64, inputs: Vec<u64>| async move {
/// #     Ok::<_, String>(inputs.iter().map(|n| key * n).collect())
/// # };
/// # let factory = Arc::new(move |_: ShardId| async move { Ok::<_, String>(times) });
/// # let (shard, starting) = Keyed::start(ShardConfig::new(ShardId::new(0)), factory)?;
/// # starting.wait().expect("started");
/// // Only a task on the shard's own thread gets one: here, a spawned task.
/// let shard = Arc::new(shard);
/// let on_shard = Arc::clone(&shard);
/// let (tell, told) = std::sync::mpsc::channel();
/// shard.spawn(Box::new(move || {
///     Box::pin(async move {
///         let answer = on_shard.submit_local(Offer::new(key_hash(&3_u64), 3, 3, 0, 1));
///         let outcome = answer.ok().expect("on the shard").await;
///         tell.send(outcome).expect("the caller waits");
///     })
/// }))?;
/// assert_eq!(told.recv()?, Ok(9));
/// # shard.close();
/// # shard.join();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct LocalAnswer<I, O, E>(answer_cell::Receiver<Outcome<I, O, E>, answer_cell::Local>);

impl<I, O, E> Future for LocalAnswer<I, O, E> {
    type Output = Outcome<I, O, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.0).poll(cx) {
            Poll::Ready(Ok(outcome)) => Poll::Ready(outcome),
            // The shard dropped the reply without answering.
            Poll::Ready(Err(answer_cell::Unsent)) => Poll::Ready(Err(FerryError::Aborted)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<I, O, E> std::fmt::Debug for LocalAnswer<I, O, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalAnswer")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "a bundle holds the inputs of one call")]
    fn a_bundle_refuses_inputs_of_a_second_call() {
        let (mut first, mut second) = (Outcomes::<u8, u8, ()>::new(), Outcomes::new());
        let mut bundle = Bundle::<u8, u8, u8, ()>::default();
        bundle.add(&mut first, Offer::new(0, 1, 1, 0, 1));
        bundle.add(&mut second, Offer::new(0, 1, 2, 0, 1));
    }
}
