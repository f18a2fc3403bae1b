//! The engine's builder: every setting (docs/guarantees.md#settings),
//! validated at [`start`](Builder::start) into a [`ConfigError`] that names
//! the field and the rule.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use ferry_shard::{
    usable_cpus, ConfigError, Hold, Order, QueueConfig, Runtime, ShardConfig, ShardId,
};

/// Weighs an input (default: 1 per input).
pub(crate) type Weigh<I> = Arc<dyn Fn(&I) -> u64 + Send + Sync>;

/// Gives an input's boundary value: a batch never mixes two of them.
pub(crate) type Boundary<I> = Arc<dyn Fn(&I) -> i64 + Send + Sync>;

/// Default `max_in_flight_batches`.
///
/// ```
/// assert_eq!(ferry::DEFAULT_MAX_IN_FLIGHT_BATCHES, 64);
/// ```
pub const DEFAULT_MAX_IN_FLIGHT_BATCHES: usize = 64;

/// Default `max_trip_batches`: keys' batches in one trip at most.
///
/// A store's fixed cost per request (a round trip, a commit and its log
/// flush: tens of microseconds to a millisecond) is paid once per trip,
/// and its cost per key (a row read and written: a few microseconds) once
/// per batch. At 256 keys a trip's per-key work is already about its fixed
/// cost, so larger trips save little more, while each one holds its keys
/// busy longer and makes a bigger statement for the store to plan.
///
/// ```
/// assert_eq!(ferry::DEFAULT_MAX_TRIP_BATCHES, 256);
/// ```
pub const DEFAULT_MAX_TRIP_BATCHES: usize = 256;

/// Default intake queue capacity per shard (never above `max_waiting`).
///
/// ```
/// assert_eq!(ferry::DEFAULT_INTAKE_CAPACITY, 65_536);
/// ```
pub const DEFAULT_INTAKE_CAPACITY: usize = 65_536;

/// How long a shard out of work, or a caller blocked in
/// [`Engine::submit_blocking`](crate::Engine::submit_blocking), looks for more before it parks, by default.
/// About one wake-up's cost on a virtual machine: parking sooner saves
/// little CPU and loses the next answer's head start.
///
/// ```
/// use std::time::Duration;
///
/// assert_eq!(ferry::DEFAULT_SPIN_BEFORE_PARK, Duration::from_micros(50));
/// ```
pub const DEFAULT_SPIN_BEFORE_PARK: Duration = Duration::from_micros(50);

/// How long a shard out of work dozes after its spin, by default, before it
/// parks: long enough to span the gaps between answers of a store a
/// millisecond away, so a shard serving one does not park between them.
///
/// ```
/// use std::time::Duration;
///
/// assert_eq!(ferry::DEFAULT_DOZE_BEFORE_PARK, Duration::from_millis(2));
/// ```
pub const DEFAULT_DOZE_BEFORE_PARK: Duration = Duration::from_millis(2);

/// The time slice a shard's thread asks Linux for, by default: the
/// shortest the kernel grants ([`MIN_SCHED_SLICE`]), so that a caller the
/// shard wakes on a shared core waits for the shard's round to end instead
/// of preempting it (see [`Builder::sched_slice`]).
///
/// ```
/// assert_eq!(ferry::DEFAULT_SCHED_SLICE, ferry::MIN_SCHED_SLICE);
/// ```
pub const DEFAULT_SCHED_SLICE: Duration = MIN_SCHED_SLICE;

/// The shortest time slice Linux grants a thread: it clamps shorter
/// requests up to this. The least nonzero [`Builder::sched_slice`].
///
/// ```
/// use std::time::Duration;
///
/// assert_eq!(ferry::MIN_SCHED_SLICE, Duration::from_micros(100));
/// ```
pub const MIN_SCHED_SLICE: Duration = ShardConfig::MIN_SCHED_SLICE;

/// The longest time slice Linux grants a thread: it clamps longer requests
/// down to this. The greatest [`Builder::sched_slice`].
///
/// ```
/// use std::time::Duration;
///
/// assert_eq!(ferry::MAX_SCHED_SLICE, Duration::from_millis(100));
/// ```
pub const MAX_SCHED_SLICE: Duration = ShardConfig::MAX_SCHED_SLICE;

/// The types a builder is for, held by no value.
type Types<K, O, E, M> = fn(K, M) -> (O, E);

/// Marks a [`Builder`] of an [`Engine`](crate::Engine): per-key batching. Only such a
/// builder has the per-key settings ([`order`](Builder::order)).
///
/// ```
/// use ferry::{Builder, Engine, Order, PerKey};
///
/// let builder: Builder<u64, u32, u32, String, PerKey> = Engine::builder();
/// let engine = builder
///     .shards(1)
///     .pin(false)
///     .order(Order::by(|x: &u32| i64::from(*x)))
///     .start(|_| |_key: u64, inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
///     .unwrap();
/// assert_eq!(engine.submit_blocking(1, 2), Ok(2));
/// ```
#[derive(Debug)]
pub enum PerKey {}

/// Marks a [`Builder`] of a [`Batcher`](crate::Batcher): unkeyed batching (no order, no
/// per-key settings).
///
/// ```
/// use ferry::{Batcher, Builder, Unkeyed};
///
/// let builder: Builder<(), u32, u32, String, Unkeyed> = Batcher::builder();
/// let batcher = builder
///     .shards(1)
///     .pin(false)
///     .start(|_| |inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
///     .unwrap();
/// assert_eq!(batcher.submit_blocking(2), Ok(2));
/// ```
#[derive(Debug)]
pub enum Unkeyed {}

/// The builder of a [`Batcher`](crate::Batcher) (see [`Batcher::builder`](crate::Batcher::builder)).
///
/// ```
/// use ferry::{Batcher, BatcherBuilder};
///
/// let builder: BatcherBuilder<String, usize, String> = Batcher::builder().shards(1).pin(false);
/// let batcher = builder
///     .start(|_| |lines: Vec<String>| async move {
///         Ok::<_, String>(lines.iter().map(String::len).collect())
///     })
///     .unwrap();
/// assert_eq!(batcher.submit_blocking("four".to_string()), Ok(4));
/// ```
pub type BatcherBuilder<I, O, E> = Builder<(), I, O, E, Unkeyed>;

/// Configures and starts an [`Engine`](crate::Engine) (get one from [`Engine::builder`](crate::Engine::builder)) or
/// a [`Batcher`](crate::Batcher) ([`Batcher::builder`](crate::Batcher::builder)); the settings are the same but for
/// the per-key ones, which only an engine's builder has.
///
/// ```
/// use ferry::{Engine, Order};
/// use std::time::Duration;
///
/// #[derive(Debug)]
/// struct Event { at: i64, body: String }
///
/// let engine: Engine<u64, Event, usize, String> = Engine::builder()
///     .shards(1)
///     .pin(false)
///     .max_batch_size(32)
///     .max_batch_delay(Duration::from_micros(200))
///     .order(Order::by(|e: &Event| e.at))
///     .weigh(|e: &Event| e.body.len() as u64 + 1)
///     .max_waiting_weight(64 << 20)
///     .start(|_shard| {
///         |_key: u64, events: Vec<Event>| async move {
///             Ok::<_, String>(events.iter().map(|e| e.body.len()).collect())
///         }
///     })
///     .unwrap();
///
/// let len = engine.submit_blocking(7, Event { at: 1, body: "hello".into() }).unwrap();
/// assert_eq!(len, 5);
/// ```
pub struct Builder<K, I, O, E, M = PerKey> {
    shards: Option<usize>,
    cpus: Option<Vec<usize>>,
    /// `None`: pinned when `cpus` names their CPUs.
    pin: Option<bool>,
    queue: QueueConfig,
    /// `None`: [`DEFAULT_MAX_IN_FLIGHT_BATCHES`], or the entity engines'
    /// own, `ferry::entity::DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION` a
    /// connection.
    max_in_flight_batches: Option<usize>,
    intake_capacity: Option<usize>,
    spin_before_park: Duration,
    doze_before_park: Duration,
    sched_slice: Duration,
    order: Order<I>,
    weigh: Option<Weigh<I>>,
    refuse_late: bool,
    boundary: Option<Boundary<I>>,
    runtime: Runtime,
    max_trip_batches: usize,
    max_trip_weight: u64,
    _types: PhantomData<Types<K, O, E, M>>,
}

impl<K, I, O, E, M> Default for Builder<K, I, O, E, M> {
    fn default() -> Self {
        Self {
            shards: None,
            cpus: None,
            pin: None,
            queue: QueueConfig::default(),
            max_in_flight_batches: None,
            intake_capacity: None,
            spin_before_park: DEFAULT_SPIN_BEFORE_PARK,
            doze_before_park: DEFAULT_DOZE_BEFORE_PARK,
            sched_slice: DEFAULT_SCHED_SLICE,
            order: Order::arrival(),
            weigh: None,
            refuse_late: false,
            boundary: None,
            runtime: Runtime::Auto,
            max_trip_batches: DEFAULT_MAX_TRIP_BATCHES,
            max_trip_weight: u64::MAX,
            _types: PhantomData,
        }
    }
}

impl<K, I, O, E, M> fmt::Debug for Builder<K, I, O, E, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("shards", &self.shards)
            .field("cpus", &self.cpus)
            .field("pin", &self.pin)
            .field("queue", &self.queue)
            .field("max_in_flight_batches", &self.max_in_flight_batches)
            .field("intake_capacity", &self.intake_capacity)
            .field("spin_before_park", &self.spin_before_park)
            .field("doze_before_park", &self.doze_before_park)
            .field("sched_slice", &self.sched_slice)
            .field("order", &self.order)
            .field("weigh", &self.weigh.as_ref().map(|_| ".."))
            .field("refuse_late", &self.refuse_late)
            .field("boundary", &self.boundary.as_ref().map(|_| ".."))
            .field("runtime", &self.runtime)
            .field("max_trip_batches", &self.max_trip_batches)
            .field("max_trip_weight", &self.max_trip_weight)
            .finish()
    }
}

impl<K, I, O, E, M> Builder<K, I, O, E, M>
where
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// Number of shards (threads), at least 1. Default:
    /// [`default_shards`](crate::default_shards), one per CPU this process
    /// may use. Pinned shards (`pin(true)`) must not outnumber the usable
    /// CPUs.
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.shards(), 2);
    /// assert_eq!(engine.stats().shards.len(), 2);
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The CPU each shard is pinned to, one per shard (default: the first
    /// `shards` usable CPUs). Each must be usable by this process. Not
    /// looked at with `pin(false)`.
    ///
    /// ```
    /// use ferry::{Engine, StartError};
    ///
    /// let started = Engine::<u64, u64, u64, String>::builder()
    ///     .shards(2)
    ///     .cpus([0])
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) });
    /// match started {
    ///     Err(StartError::Config(err)) => assert_eq!(err.field, "cpus"),
    ///     other => panic!("one CPU for two shards: {other:?}"),
    /// }
    /// ```
    pub fn cpus(mut self, cpus: impl IntoIterator<Item = usize>) -> Self {
        self.cpus = Some(cpus.into_iter().collect());
        self
    }

    /// Whether shards are pinned to their CPUs. By default they are when
    /// [`cpus`](Self::cpus) names their CPUs, and are not otherwise: they
    /// share the CPUs with the callers and the scheduler places them.
    ///
    /// Pinning assumes those cores are the engine's: on a machine shared
    /// with other busy threads or processes, a pinned shard cannot move
    /// away from them. On two CPUs shared with its callers and a build,
    /// pinned shards measured more time waiting for their CPU than running,
    /// and far less throughput than the same shards unpinned at times
    /// (`docs/benchmarks.md`, "Where CPUs are shared"). `pin(true)` pins
    /// shard `i` to the `i`-th usable CPU (where the cores are the
    /// engine's own, as on a dedicated host or under a static CPU
    /// manager); `pin(false)` never pins, even with `cpus`.
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// // Unpinned, any number of shards runs, whatever the CPUs.
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(2)
    ///     .pin(false)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(9, 1), Ok(1));
    /// ```
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = Some(pin);
        self
    }

    /// Inputs per batch at most (default 64, at least 1). A key with this
    /// many inputs waiting is full: its batch goes without waiting for the
    /// delay.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::Engine;
    ///
    /// // Each caller learns the size of the batch that carried its input.
    /// let engine: Engine<u64, u32, usize, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_batch_size(2)
    ///     .max_batch_delay(Duration::from_secs(60))
    ///     .start(|_| |_key: u64, inputs: Vec<u32>| async move {
    ///         Ok::<_, String>(vec![inputs.len(); inputs.len()])
    ///     })
    ///     .unwrap();
    /// let (a, b) = (engine.submit(1, 10), engine.submit(1, 20));
    /// // The second input fills the batch, so neither waits a minute.
    /// let sizes = futures::executor::block_on(async { (a.await, b.await) });
    /// assert_eq!(sizes, (Ok(2), Ok(2)));
    /// ```
    pub fn max_batch_size(mut self, size: usize) -> Self {
        self.queue.max_batch_size = size;
        self
    }

    /// Weight per batch at most (default unbounded, at least 1). A batch
    /// always carries at least one input; a heavier input is refused
    /// `TooHeavy`. A key whose waiting inputs weigh this much is full.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, usize, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .weigh(|n: &u64| *n)
    ///     .max_batch_weight(4)
    ///     .max_batch_delay(Duration::from_secs(60))
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move {
    ///         Ok::<_, String>(vec![inputs.len(); inputs.len()])
    ///     })
    ///     .unwrap();
    /// let (a, b) = (engine.submit(1, 2), engine.submit(1, 2));
    /// // Together they weigh 4: the batch is full and goes at once.
    /// let sizes = futures::executor::block_on(async { (a.await, b.await) });
    /// assert_eq!(sizes, (Ok(2), Ok(2)));
    /// ```
    pub fn max_batch_weight(mut self, weight: u64) -> Self {
        self.queue.max_batch_weight = weight;
        self
    }

    /// How long a partial batch waits for more, from its oldest input by
    /// arrival (default 0: send at once). A full batch does not wait, and
    /// close sends what waits at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u32, usize, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_batch_delay(Duration::from_millis(1))
    ///     .start(|_| |_key: u64, inputs: Vec<u32>| async move {
    ///         Ok::<_, String>(vec![inputs.len(); inputs.len()])
    ///     })
    ///     .unwrap();
    /// // A lone input goes once it has waited the delay.
    /// assert_eq!(engine.submit_blocking(1, 10), Ok(1));
    /// ```
    pub fn max_batch_delay(mut self, delay: Duration) -> Self {
        self.queue.max_batch_delay = delay;
        self
    }

    /// Batches in flight at once per shard, shared by its keys (default 64,
    /// at least 1): the shard's slots. An entity engine (`start_entities`,
    /// `start_log`) has its own default, a few trips per connection
    /// (`ferry::entity::DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION`).
    ///
    /// ```
    /// use ferry::{Engine, StartError};
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_in_flight_batches(8)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(1, 1), Ok(1));
    ///
    /// let none = Engine::<u64, u64, u64, String>::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_in_flight_batches(0)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) });
    /// assert!(matches!(none, Err(StartError::Config(e)) if e.field == "max_in_flight_batches"));
    /// ```
    pub fn max_in_flight_batches(mut self, slots: usize) -> Self {
        self.max_in_flight_batches = Some(slots);
        self
    }

    /// `slots` batches (or trips) in flight per shard unless the user
    /// chose how many.
    pub(crate) fn max_in_flight_batches_or(mut self, slots: usize) -> Self {
        self.max_in_flight_batches.get_or_insert(slots);
        self
    }

    /// Waiting inputs per shard at most (default 1,000,000, at least 1).
    /// Past it, inputs are refused `Full` with the input handed back.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::{Engine, FerryError, Refused};
    ///
    /// let engine: Engine<u64, u32, u32, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_waiting(1)
    ///     .max_batch_delay(Duration::from_secs(60))
    ///     .start(|_| |_key: u64, inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let first = engine.submit(1, 10); // waits for its delay
    /// match engine.submit_blocking(2, 20) {
    ///     Err(FerryError::Refused { input, reason: Refused::Full }) => assert_eq!(input, 20),
    ///     other => panic!("{other:?}"),
    /// }
    /// engine.close(); // sends what waits
    /// assert_eq!(futures::executor::block_on(first), Ok(10));
    /// ```
    pub fn max_waiting(mut self, inputs: usize) -> Self {
        self.queue.max_waiting = inputs;
        self
    }

    /// Total weight of waiting inputs per shard at most (default unbounded,
    /// at least 1). Past it, inputs are refused `Full` with the input handed
    /// back.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::{Engine, FerryError, Refused};
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .weigh(|n: &u64| *n)
    ///     .max_waiting_weight(10)
    ///     .max_batch_delay(Duration::from_secs(60))
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let first = engine.submit(1, 8); // waits, weighing 8
    /// match engine.submit_blocking(2, 5) {
    ///     Err(FerryError::Refused { input, reason: Refused::Full }) => assert_eq!(input, 5),
    ///     other => panic!("{other:?}"),
    /// }
    /// engine.close();
    /// assert_eq!(futures::executor::block_on(first), Ok(8));
    /// ```
    pub fn max_waiting_weight(mut self, weight: u64) -> Self {
        self.queue.max_waiting_weight = weight;
        self
    }

    /// How long an input may wait to be taken into a batch (default: as long
    /// as it takes; more than zero). An input still waiting then is answered
    /// [`FerryError::Expired`](crate::FerryError::Expired) with the input
    /// handed back, never sent; one already in a batch is never expired.
    /// The store's scarce round trips then go to inputs that are still
    /// fresh.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::{Engine, FerryError};
    ///
    /// let engine: Engine<u64, u32, u32, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_batch_delay(Duration::from_secs(60))
    ///     .max_queue_time(Duration::from_millis(5))
    ///     .start(|_| |_key: u64, inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// match engine.submit_blocking(1, 7) {
    ///     Err(FerryError::Expired { input }) => assert_eq!(input, 7),
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn max_queue_time(mut self, wait: Duration) -> Self {
        self.queue.max_queue_time = Some(wait);
        self
    }

    /// Whether a caller that drops its `submit` future before its input is
    /// taken into a batch withdraws the input (default `false`: the input
    /// is still sent and its output dropped). Withdrawn, it is never sent,
    /// and its count and weight leave the bounds; once taken, it is sent as
    /// before. For callers with timeouts: the store does no work for a
    /// caller that gave up.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u32, u32, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_batch_delay(Duration::from_millis(50))
    ///     .withdraw_on_drop(true)
    ///     .start(|_| |_key: u64, inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// drop(engine.submit(1, 7)); // gave up while it waited for its delay
    /// futures::executor::block_on(engine.flush());
    /// let stats = engine.stats().total();
    /// assert_eq!((stats.withdrawn, stats.sent), (1, 0));
    /// ```
    pub fn withdraw_on_drop(mut self, withdraw: bool) -> Self {
        self.queue.withdraw_on_drop = withdraw;
        self
    }

    /// Every bound of a shard's queue at once, as one [`QueueConfig`]
    /// (kept, say, in a service's own settings and shared by its engines):
    /// batch size, weight and delay, waiting inputs and weight (per shard and
    /// per key), queue time and `withdraw_on_drop`. A setter called after it
    /// changes its one field. Its `hold` and `boundaries` are not read:
    /// [`order`](Builder::order), [`refuse_late`](Builder::refuse_late) and
    /// [`boundary`](Builder::boundary) set them at start.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::{Engine, QueueConfig, StartError};
    ///
    /// let bounds = QueueConfig {
    ///     max_batch_size: 8,
    ///     max_batch_delay: Duration::from_micros(200),
    ///     ..QueueConfig::default()
    /// };
    /// let engine: Engine<u64, u32, u32, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .queue(bounds.clone())
    ///     .start(|_| |_key: u64, inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(3, 9), Ok(9));
    ///
    /// // Checked at start like each setter's value.
    /// let refused = Engine::<u64, u32, u32, String>::builder()
    ///     .queue(QueueConfig { max_waiting: 0, ..bounds })
    ///     .start(|_| |_key: u64, inputs: Vec<u32>| async move { Ok::<_, String>(inputs) });
    /// assert!(matches!(refused, Err(StartError::Config(e)) if e.field == "max_waiting"));
    /// ```
    pub fn queue(mut self, bounds: QueueConfig) -> Self {
        self.queue = bounds;
        self
    }

    /// How much an input weighs (default 1). Called on the caller's thread.
    ///
    /// ```
    /// use ferry::{Engine, FerryError, Refused};
    ///
    /// let engine: Engine<u64, Vec<u8>, usize, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .weigh(|bytes: &Vec<u8>| bytes.len() as u64)
    ///     .max_batch_weight(1024)
    ///     .start(|_| |_key: u64, inputs: Vec<Vec<u8>>| async move {
    ///         Ok::<_, String>(inputs.iter().map(Vec::len).collect())
    ///     })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(1, vec![0; 10]), Ok(10));
    /// // No batch could carry it: refused at once, handed back.
    /// match engine.submit_blocking(1, vec![0; 2000]) {
    ///     Err(FerryError::Refused { input, reason: Refused::TooHeavy }) => {
    ///         assert_eq!(input.len(), 2000)
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn weigh(mut self, weigh: impl Fn(&I) -> u64 + Send + Sync + 'static) -> Self {
        self.weigh = Some(Arc::new(weigh));
        self
    }

    /// Capacity of each shard's intake queue (default 65,536, never more
    /// than `max_waiting`; at least 1). A full intake refuses with
    /// `Refused::Full`.
    ///
    /// ```
    /// use ferry::{Engine, StartError};
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .intake_capacity(1024)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(1, 1), Ok(1));
    ///
    /// let none = Engine::<u64, u64, u64, String>::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .intake_capacity(0)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) });
    /// assert!(matches!(none, Err(StartError::Config(e)) if e.field == "intake_capacity"));
    /// ```
    pub fn intake_capacity(mut self, inputs: usize) -> Self {
        self.intake_capacity = Some(inputs);
        self
    }

    /// How long a shard that has just run out of work keeps looking for more
    /// before it dozes (see [`doze_before_park`](Self::doze_before_park)),
    /// and how long [`Engine::submit_blocking`](crate::Engine::submit_blocking) looks for its outcome before
    /// it parks the calling thread (default [`DEFAULT_SPIN_BEFORE_PARK`],
    /// 50 µs; zero skips the spin).
    ///
    /// Between looks the thread yields its CPU to any other thread that
    /// wants it, so what it spends is CPU time nobody else was asking for.
    /// What it saves: input, a batch completion or an answer that arrives in
    /// that window needs no wake-up, and a wake-up crosses CPUs (tens of
    /// microseconds in a virtual machine, whose idle CPUs are slow to wake).
    /// Set it to zero where CPU time is billed or shared with work that does
    /// not yield; raise it when light-load latency matters most. A shard
    /// does not spin while its batches are out to a store further away than
    /// this, and one whose batches its own runtime wakes (a store's client
    /// on the shard's thread) spins for them only while its recent gaps
    /// say the spin saves more CPU time than it spends.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::Engine;
    ///
    /// // Where idle CPU time is billed: no spin, neither on the shards nor
    /// // in `submit_blocking`.
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .spin_before_park(Duration::ZERO)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(1, 1), Ok(1));
    /// ```
    pub fn spin_before_park(mut self, spin: Duration) -> Self {
        self.spin_before_park = spin;
        self
    }

    /// How long a shard that has spun without finding work then *dozes*
    /// before it parks (default [`DEFAULT_DOZE_BEFORE_PARK`], 2 ms; zero
    /// parks right after the spin).
    ///
    /// A dozing shard blocks its thread on a futex: it uses no CPU, and new
    /// input or a batch answered on another thread wakes it with one system
    /// call. A parked shard sleeps in glommio's `io_uring` wait, which costs
    /// a process-wide memory barrier to enter and an `eventfd` write and an
    /// `io_uring` round to leave. So a shard whose store answers every few
    /// hundred microseconds does best to doze between answers.
    ///
    /// While a shard dozes, glommio does not run: timers and I/O of other
    /// tasks on the shard's thread (see [`Engine::spawn_on`](crate::Engine::spawn_on)), and a batch
    /// function's own glommio I/O, are looked at every
    /// 50 µs, not at once.
    /// A batch function that awaits glommio I/O on a shard with little else
    /// to do is better served by zero here.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::Engine;
    ///
    /// let engine = Engine::<u64, u64, u64, String>::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .doze_before_park(Duration::ZERO)
    ///     .start(|_shard| |_key: u64, inputs: Vec<u64>| async move { Ok(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(7, 41).unwrap(), 41);
    /// engine.close();
    /// engine.join();
    /// ```
    pub fn doze_before_park(mut self, doze: Duration) -> Self {
        self.doze_before_park = doze;
        self
    }

    /// The time slice each shard's thread asks Linux for while its rounds
    /// answer many inputs each (default [`DEFAULT_SCHED_SLICE`], 100 µs,
    /// the shortest the kernel grants; at most [`MAX_SCHED_SLICE`]; zero
    /// asks for nothing and keeps the kernel's own, 0.7–3 ms).
    ///
    /// It matters where callers share the shards' cores. Every answer
    /// wakes its caller, and under Linux's scheduler (EEVDF) a woken thread
    /// with an earlier deadline than the running one preempts it at once:
    /// with the kernel's slice, the caller woken by the first answer of a
    /// round takes the core in the middle of the round, and the shard and
    /// its callers then trade the core every few inputs, two context
    /// switches each time. A thread with a short slice has earlier
    /// deadlines, so the callers it wakes wait until it yields at the end
    /// of the round and find all its answers ready. The CPU share of each
    /// thread is unchanged; a shard busy for long is preempted more often
    /// (at most every slice).
    ///
    /// At light load the short slice would cost latency instead: an idle
    /// shard spins calling `sched_yield`, which gives way for about one
    /// slice of virtual time, so a caller it just answered on its core
    /// would wait. So each shard looks once a millisecond at the inputs
    /// its rounds answered: from 8 a round it takes the short slice, below
    /// 3 it gives it back. Kernels from 6.12 honour it; older ones run the
    /// shard with their default, as does a thread with a real-time policy.
    /// `docs/benchmarks.md` has the measurements.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::{ConfigError, Engine, StartError};
    ///
    /// // The kernel's own slice for the shards' threads.
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .sched_slice(Duration::ZERO)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(1, 2), Ok(2));
    ///
    /// // Between the kernel's bounds, or zero.
    /// let short = Engine::<u64, u64, u64, String>::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .sched_slice(Duration::from_micros(10))
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) });
    /// assert!(matches!(short, Err(StartError::Config(e)) if e.field == "sched_slice"));
    /// ```
    pub fn sched_slice(mut self, slice: Duration) -> Self {
        self.sched_slice = slice;
        self
    }

    /// The runtime of the shards' threads (default [`Runtime::Auto`]:
    /// glommio where it can start, tokio where it cannot — a container
    /// whose seccomp profile refuses io_uring, a host with
    /// `kernel.io_uring_disabled`, a locked-memory limit below glommio's
    /// need). Asked for explicitly, `Runtime::Glommio` that cannot start
    /// is a [`StartError::Runtime`](crate::StartError::Runtime) saying what refused it and how to lift
    /// it. [`Engine::runtime`](crate::Engine::runtime) tells which one runs.
    ///
    /// ```
    /// use ferry::{Engine, Runtime};
    ///
    /// let engine: Engine<u64, u64, u64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .runtime(Runtime::Tokio)
    ///     .start(|_| |_key: u64, inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// assert_eq!(engine.runtime(), Runtime::Tokio);
    /// assert_eq!(engine.submit_blocking(1, 2), Ok(2));
    /// ```
    pub fn runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = runtime;
        self
    }

    pub(crate) fn plan(mut self) -> Result<Plan<I>, ConfigError> {
        self.event_time()?;
        self.queue.validate()?;
        let max_in_flight_batches = self
            .max_in_flight_batches
            .unwrap_or(DEFAULT_MAX_IN_FLIGHT_BATCHES);
        if max_in_flight_batches == 0 {
            return Err(ConfigError::new(
                "max_in_flight_batches",
                "must be at least 1",
                0,
            ));
        }
        let usable = usable_cpus();
        let shards = self.shards.unwrap_or_else(crate::default_shards);
        if shards == 0 {
            return Err(ConfigError::new("shards", "must be at least 1", 0));
        }
        let pin = self.pin.unwrap_or(self.cpus.is_some());
        let cpus = if pin {
            let cpus = match self.cpus {
                Some(cpus) => cpus,
                None => {
                    if shards > usable.len() {
                        return Err(ConfigError::new(
                            "shards",
                            "must not exceed the usable CPUs when pinned (pin(true))",
                            format!("{shards}, usable CPUs: {}", usable.len()),
                        ));
                    }
                    usable[..shards].to_vec()
                }
            };
            check_cpus(&cpus, shards, &usable, self.shards.is_none())?;
            cpus.into_iter().map(Some).collect()
        } else {
            vec![None; shards]
        };
        let intake_capacity = match self.intake_capacity {
            Some(0) => return Err(ConfigError::new("intake_capacity", "must be at least 1", 0)),
            Some(capacity) => capacity,
            None => DEFAULT_INTAKE_CAPACITY,
        }
        .min(self.queue.max_waiting);
        check_sched_slice(self.sched_slice)?;
        Ok(Plan {
            cpus,
            shard: ShardConfig {
                id: ShardId::new(0),
                engine: 0,
                cpu: None,
                runtime: self.runtime,
                queue: self.queue,
                max_in_flight_batches,
                intake_capacity,
                spin_before_park: self.spin_before_park,
                doze_before_park: self.doze_before_park,
                sched_slice: self.sched_slice,
                max_trip_batches: self.max_trip_batches,
                max_trip_weight: self.max_trip_weight,
            },
            order: self.order,
            weigh: self.weigh,
            boundary: self.boundary,
        })
    }

    /// Turns the event-time settings into the shards' bounds: the order's
    /// lateness into a hold (late inputs refused with `refuse_late`), and a
    /// boundary function into batches that end at a change of value.
    fn event_time(&mut self) -> Result<(), ConfigError> {
        let lateness = self.order.lateness();
        if self.refuse_late && lateness.is_none() {
            return Err(ConfigError::new(
                "refuse_late",
                "needs an event-time order (order(Order::event_time(at, lateness)))",
                true,
            ));
        }
        self.queue.hold = lateness.map(|lateness| Hold {
            refuse_late: self.refuse_late,
            ..Hold::new(lateness)
        });
        self.queue.boundaries = self.boundary.is_some();
        Ok(())
    }
}

/// Refuses a `cpus` list that names a CPU this process may not use, or
/// not one CPU per shard. When both are wrong it says both: fixing the
/// count alone would only meet the other refusal.
fn check_cpus(
    cpus: &[usize],
    shards: usize,
    usable: &[usize],
    default_shards: bool,
) -> Result<(), ConfigError> {
    let outside: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|cpu| !usable.contains(cpu))
        .collect();
    // The count was not asked for: say where it came from.
    let default_count = if default_shards {
        format!("; {shards} shards is the default, one per usable CPU, which `shards(n)` changes")
    } else {
        String::new()
    };
    match (outside.is_empty(), cpus.len() == shards) {
        (true, true) => Ok(()),
        (false, true) => Err(ConfigError::new(
            "cpus",
            "must only name CPUs this process may use",
            format!("{}, usable: {usable:?}", cpu_names(&outside)),
        )),
        (true, false) => Err(ConfigError::new(
            "cpus",
            "must name exactly one CPU per shard",
            format!("{} for {shards} shards{default_count}", cpu_names(cpus)),
        )),
        (false, false) => Err(ConfigError::new(
            "cpus",
            "must name exactly one CPU per shard, each one this process may use",
            format!(
                "{cpus:?} for {shards} shards: {} {} outside this process's CPUs \
                 {usable:?}{default_count}",
                cpu_names(&outside),
                if outside.len() == 1 { "is" } else { "are" }
            ),
        )),
    }
}

/// `CPU 3` or `CPUs 3, 5` (`no CPU` for none).
fn cpu_names(cpus: &[usize]) -> String {
    let list = cpus
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    match cpus.len() {
        0 => "no CPU".to_string(),
        1 => format!("CPU {list}"),
        _ => format!("CPUs {list}"),
    }
}

impl<K, I, O, E> Builder<K, I, O, E, PerKey>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// The order of a key's waiting inputs (default [`Order::arrival`]):
    /// inputs that wait together are sent in ascending rank, ties in
    /// admission order.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::{Engine, Order};
    ///
    /// // Each caller learns where its input stood in its batch.
    /// let engine: Engine<u64, i64, usize, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .order(Order::by(|priority: &i64| *priority))
    ///     .max_batch_size(3)
    ///     .max_batch_delay(Duration::from_secs(60))
    ///     .start(|_| |_key: u64, inputs: Vec<i64>| async move {
    ///         Ok::<_, String>((0..inputs.len()).collect())
    ///     })
    ///     .unwrap();
    /// let (low, high, middle) = (engine.submit(1, 30), engine.submit(1, 10), engine.submit(1, 20));
    /// let positions = futures::executor::block_on(async {
    ///     (low.await, high.await, middle.await)
    /// });
    /// assert_eq!(positions, (Ok(2), Ok(0), Ok(1)));
    /// ```
    pub fn order(mut self, order: Order<I>) -> Self {
        self.order = order;
        self
    }

    /// Waiting inputs of one key at most (default unbounded, at least 1).
    /// Past it, that key's inputs are refused
    /// [`Refused::KeyFull`](crate::Refused::KeyFull) with the input handed
    /// back, while other keys are still admitted: one hot key cannot take a
    /// whole shard's queue.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::{Engine, FerryError, Refused};
    ///
    /// let engine: Engine<u64, u32, u32, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_waiting_per_key(1)
    ///     .max_batch_delay(Duration::from_secs(60))
    ///     .start(|_| |_key: u64, inputs: Vec<u32>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// let first = engine.submit(1, 10); // waits for its delay
    /// match engine.submit_blocking(1, 11) {
    ///     Err(FerryError::Refused { input, reason: Refused::KeyFull }) => assert_eq!(input, 11),
    ///     other => panic!("{other:?}"),
    /// }
    /// let other_key = engine.submit(2, 20); // another key is admitted
    /// engine.close();
    /// assert_eq!(futures::executor::block_on(first), Ok(10));
    /// assert_eq!(futures::executor::block_on(other_key), Ok(20));
    /// ```
    pub fn max_waiting_per_key(mut self, inputs: usize) -> Self {
        self.queue.max_waiting_per_key = inputs;
        self
    }

    /// With an event-time order ([`Order::event_time`]): whether an input
    /// that arrives after its event time plus the lateness has passed is
    /// refused [`FerryError::Late`](crate::FerryError::Late), handed back
    /// and never sent (counted in `refused_late`). Default `false`: such an
    /// input is not held, and goes in its key's next batch at its rank,
    /// for the store to place. For a store that cannot place an input older
    /// than one it already has (an append-only log). Without an event-time
    /// order, `start` refuses `refuse_late(true)`.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use ferry::{Engine, FerryError, Order};
    ///
    /// let now_ms = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    /// let engine: Engine<u64, i64, i64, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .order(Order::event_time(|at_ms: &i64| *at_ms, Duration::from_millis(500)))
    ///     .refuse_late(true)
    ///     .start(|_| |_key: u64, inputs: Vec<i64>| async move { Ok::<_, String>(inputs) })
    ///     .unwrap();
    /// // An hour old: far past its lateness, so it comes back.
    /// let old = now_ms() - 3_600_000;
    /// match engine.submit_blocking(1, old) {
    ///     Err(FerryError::Late { input }) => assert_eq!(input, old),
    ///     other => panic!("{other:?}"),
    /// }
    /// // A fresh one is held for half a second, then sent.
    /// let fresh = now_ms();
    /// assert_eq!(engine.submit_blocking(1, fresh), Ok(fresh));
    /// futures::executor::block_on(engine.flush());
    /// assert_eq!(engine.stats().total().refused_late, 1);
    /// ```
    pub fn refuse_late(mut self, refuse: bool) -> Self {
        self.refuse_late = refuse;
        self
    }

    /// A batch (and so a trip's batch) never mixes inputs of two values of
    /// `boundary(input)` (say two time buckets, or two partitions), for a
    /// store whose group write refuses such a mix: where the value changes
    /// along a key's lane, the batch ends early. Called once per input, on
    /// the caller's thread. Default: no boundary.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::{Engine, Order};
    ///
    /// // Minutes as buckets: each batch holds one minute's inputs.
    /// let engine: Engine<u64, i64, usize, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .order(Order::by(|at_ms: &i64| *at_ms))
    ///     .boundary(|at_ms: &i64| at_ms / 60_000)
    ///     .max_batch_delay(Duration::from_secs(60))
    ///     .start(|_| |_key: u64, inputs: Vec<i64>| async move {
    ///         let size = inputs.len();
    ///         Ok::<_, String>(vec![size; size])
    ///     })
    ///     .unwrap();
    /// let sizes: Vec<_> = [59_000, 59_500, 60_000].map(|at| engine.submit(1, at)).into();
    /// engine.close();
    /// let sizes: Vec<_> = futures::executor::block_on(futures::future::join_all(sizes));
    /// assert_eq!(sizes, vec![Ok(2), Ok(2), Ok(1)]);
    /// ```
    pub fn boundary(mut self, boundary: impl Fn(&I) -> i64 + Send + Sync + 'static) -> Self {
        self.boundary = Some(Arc::new(boundary));
        self
    }

    /// Keys' batches in one trip at most (default
    /// [`DEFAULT_MAX_TRIP_BATCHES`], at least 1), for
    /// [`start_trips`](Self::start_trips): when a slot is free, the shard
    /// takes up to this many ready lanes, first come first served, into one
    /// call of the trip function. A batch function (`start`) ignores it.
    ///
    /// ```
    /// use ferry::{Engine, StartError};
    ///
    /// let none = Engine::<u64, u64, u64, String>::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .max_trip_batches(0)
    ///     .start_trips(|_| |trip: Vec<(u64, Vec<u64>)>| async move {
    ///         trip.into_iter().map(|(_, inputs)| Ok::<_, String>(inputs)).collect()
    ///     });
    /// assert!(matches!(none, Err(StartError::Config(e)) if e.field == "max_trip_batches"));
    /// ```
    pub fn max_trip_batches(mut self, batches: usize) -> Self {
        self.max_trip_batches = batches;
        self
    }

    /// A trip's total weight at most (default unbounded, at least 1), for
    /// [`start_trips`](Self::start_trips): a ready lane whose batch would
    /// take the trip past it waits, at the front of the line, for the next
    /// trip. A trip's first batch always goes, whatever it weighs.
    ///
    /// ```
    /// use ferry::Engine;
    ///
    /// let engine: Engine<u64, u64, usize, String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .weigh(|input: &u64| *input)
    ///     .max_trip_weight(10)
    ///     .start_trips(|_| |trip: Vec<(u64, Vec<u64>)>| async move {
    ///         let keys = trip.len();
    ///         trip.into_iter().map(|(_, inputs)| Ok::<_, String>(vec![keys; inputs.len()])).collect()
    ///     })
    ///     .unwrap();
    /// assert_eq!(engine.submit_blocking(1, 7), Ok(1));
    /// ```
    pub fn max_trip_weight(mut self, weight: u64) -> Self {
        self.max_trip_weight = weight;
        self
    }

    /// Checks the trip settings, which only a trip function uses.
    pub(crate) fn check_trips(&self) -> Result<(), ConfigError> {
        if self.max_trip_batches == 0 {
            return Err(ConfigError::new(
                "max_trip_batches",
                "must be at least 1",
                0,
            ));
        }
        if self.max_trip_weight == 0 {
            return Err(ConfigError::new("max_trip_weight", "must be at least 1", 0));
        }
        Ok(())
    }
}

/// A time slice Linux grants (100 µs to 100 ms), or zero for none asked.
fn check_sched_slice(slice: Duration) -> Result<(), ConfigError> {
    if slice.is_zero() || (MIN_SCHED_SLICE..=MAX_SCHED_SLICE).contains(&slice) {
        return Ok(());
    }
    Err(ConfigError::new(
        "sched_slice",
        "must be zero or between 100 µs and 100 ms, the slices Linux grants",
        format!("{slice:?}"),
    ))
}

/// Validated settings.
pub(crate) struct Plan<I> {
    /// One entry per shard: its CPU, if pinned.
    pub cpus: Vec<Option<usize>>,
    /// What every shard is given, one `ShardConfig` for all: `id`,
    /// `engine` and `cpu` are each shard's own, set as it starts
    /// ([`Plan::shard_config`]); `runtime` may still be `Auto` here.
    pub shard: ShardConfig,
    pub order: Order<I>,
    pub weigh: Option<Weigh<I>>,
    pub boundary: Option<Boundary<I>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ShardConfig::new` promises the defaults `ferry` starts its shards
    /// with, but for the runtime: a change to either shows here.
    #[test]
    fn a_shard_started_by_hand_gets_the_builders_defaults() {
        let plan = Builder::<u64, u64, u64, String, PerKey>::default()
            .plan()
            .expect("the defaults are valid");
        let by_hand = ShardConfig {
            runtime: plan.shard.runtime,
            ..ShardConfig::new(ShardId::new(0))
        };
        assert_eq!(format!("{:?}", plan.shard), format!("{by_hand:?}"));
    }
}
