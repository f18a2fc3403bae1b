//! The engine's builder: every setting of SPEC §3, validated at
//! [`start`](Builder::start) into a [`ConfigError`] that names the field and
//! the rule.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use ferry_shard::{BatchFn, ConfigError, LanesConfig, Order, ShardId};

use crate::batcher::Batcher;
use crate::engine::Engine;

/// Weighs an input (default: 1 per input).
pub(crate) type Weigh<I> = Arc<dyn Fn(&I) -> u64 + Send + Sync>;

/// Default `max_in_flight_batches`.
pub const DEFAULT_MAX_IN_FLIGHT_BATCHES: usize = 64;

/// Default intake queue capacity per shard (never above `max_queueing`).
pub const DEFAULT_INTAKE_CAPACITY: usize = 65_536;

/// How long a shard out of work, or a caller blocked in
/// [`Engine::submit_blocking`], looks for more before it parks, by default.
/// About one wake-up's cost on a virtual machine: parking sooner saves
/// little CPU and loses the next answer's head start.
pub const DEFAULT_SPIN_BEFORE_PARK: Duration = Duration::from_micros(50);

/// How long a shard out of work dozes after its spin, by default, before it
/// parks: long enough to span the gaps between answers of a store a
/// millisecond away, so a shard serving one does not park between them.
pub const DEFAULT_DOZE_BEFORE_PARK: Duration = Duration::from_millis(2);

/// Why an engine did not start. Start is all or nothing: when it fails, no
/// shard is left running.
#[derive(Debug)]
pub enum StartError {
    /// A setting broke its rule.
    Config(ConfigError),
    /// A shard thread could not be started (the OS refused a thread).
    Spawn {
        /// The shard that failed.
        shard: ShardId,
        /// What the system said.
        source: std::io::Error,
    },
    /// A shard's runtime could not run on this machine, or its batch
    /// function's factory panicked.
    Runtime {
        /// The shard that failed.
        shard: ShardId,
        /// Why, and what to change.
        reason: String,
    },
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Config(err) => err.fmt(f),
            StartError::Spawn { shard, source } => {
                write!(f, "could not start {shard}: {source}")
            }
            StartError::Runtime { shard, reason } => {
                write!(f, "could not start {shard}: {reason}")
            }
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Config(err) => Some(err),
            StartError::Spawn { source, .. } => Some(source),
            StartError::Runtime { .. } => None,
        }
    }
}

impl From<ConfigError> for StartError {
    fn from(err: ConfigError) -> Self {
        StartError::Config(err)
    }
}

/// The types a builder is for, held by no value.
type Types<K, O, E, M> = fn(K, M) -> (O, E);

/// Marks a [`Builder`] of an [`Engine`]: per-key batching.
#[derive(Debug)]
pub enum PerKey {}

/// Marks a [`Builder`] of a [`Batcher`]: unkeyed batching (no order, no
/// per-key settings).
#[derive(Debug)]
pub enum Unkeyed {}

/// The builder of a [`Batcher`] (see [`Batcher::builder`]).
pub type BatcherBuilder<I, O, E> = Builder<(), I, O, E, Unkeyed>;

/// Configures and starts an [`Engine`] (get one from [`Engine::builder`]) or
/// a [`Batcher`] ([`Batcher::builder`]); the settings are the same but for
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
///     .max_queued_weight(64 << 20)
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
    pin: bool,
    lanes: LanesConfig,
    max_in_flight_batches: usize,
    intake_capacity: Option<usize>,
    spin_before_park: Duration,
    doze_before_park: Duration,
    order: Order<I>,
    weigh: Option<Weigh<I>>,
    _types: PhantomData<Types<K, O, E, M>>,
}

impl<K, I, O, E, M> Default for Builder<K, I, O, E, M> {
    fn default() -> Self {
        Self {
            shards: None,
            cpus: None,
            pin: true,
            lanes: LanesConfig::default(),
            max_in_flight_batches: DEFAULT_MAX_IN_FLIGHT_BATCHES,
            intake_capacity: None,
            spin_before_park: DEFAULT_SPIN_BEFORE_PARK,
            doze_before_park: DEFAULT_DOZE_BEFORE_PARK,
            order: Order::arrival(),
            weigh: None,
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
            .field("lanes", &self.lanes)
            .field("max_in_flight_batches", &self.max_in_flight_batches)
            .field("intake_capacity", &self.intake_capacity)
            .field("order", &self.order)
            .field("weigh", &self.weigh.as_ref().map(|_| ".."))
            .finish()
    }
}

impl<K, I, O, E, M> Builder<K, I, O, E, M>
where
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// Number of shards (threads), at least 1. Default: the CPUs this
    /// process may use. More shards than usable CPUs needs `pin(false)`.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The CPU each shard is pinned to, one per shard (default `0..shards`).
    pub fn cpus(mut self, cpus: impl IntoIterator<Item = usize>) -> Self {
        self.cpus = Some(cpus.into_iter().collect());
        self
    }

    /// Whether shards are pinned to their CPUs (default `true`).
    ///
    /// Pinning assumes those cores are the engine's: on a machine shared
    /// with other busy processes, a pinned shard cannot move away from them
    /// and its latency suffers; `pin(false)` lets the scheduler place it.
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// Inputs per batch at most (default 64, at least 1).
    pub fn max_batch_size(mut self, size: usize) -> Self {
        self.lanes.max_batch_size = size;
        self
    }

    /// Weight per batch at most (default unbounded, at least 1). A batch
    /// always carries at least one input; a heavier input is refused
    /// `TooHeavy`.
    pub fn max_batch_weight(mut self, weight: u64) -> Self {
        self.lanes.max_batch_weight = weight;
        self
    }

    /// How long a partial batch waits for more, from its oldest input by
    /// arrival (default 0: send at once).
    pub fn max_batch_delay(mut self, delay: Duration) -> Self {
        self.lanes.max_batch_delay = delay;
        self
    }

    /// Batches in flight at once per shard, shared by its keys (default 64,
    /// at least 1).
    pub fn max_in_flight_batches(mut self, slots: usize) -> Self {
        self.max_in_flight_batches = slots;
        self
    }

    /// Waiting inputs per shard at most (default 1,000,000, at least 1).
    pub fn max_queueing(mut self, inputs: usize) -> Self {
        self.lanes.max_queueing = inputs;
        self
    }

    /// Total weight of waiting inputs per shard at most (default unbounded,
    /// at least 1).
    pub fn max_queued_weight(mut self, weight: u64) -> Self {
        self.lanes.max_queued_weight = weight;
        self
    }

    /// How much an input weighs (default 1). Called on the caller's thread.
    pub fn weigh(mut self, weigh: impl Fn(&I) -> u64 + Send + Sync + 'static) -> Self {
        self.weigh = Some(Arc::new(weigh));
        self
    }

    /// Capacity of each shard's intake queue (default 65,536, never more
    /// than `max_queueing`; at least 1). A full intake refuses with
    /// `Refused::Full`.
    pub fn intake_capacity(mut self, inputs: usize) -> Self {
        self.intake_capacity = Some(inputs);
        self
    }

    /// How long a shard that has just run out of work keeps looking for more
    /// before it dozes (see [`doze_before_park`](Self::doze_before_park)),
    /// and how long [`Engine::submit_blocking`] looks for its outcome before
    /// it parks the calling thread (default [`DEFAULT_SPIN_BEFORE_PARK`],
    /// 50 µs; zero skips the spin).
    ///
    /// Between looks the thread yields its CPU to any other thread that
    /// wants it, so what it spends is CPU time nobody else was asking for.
    /// What it saves: input, a batch completion or an answer that arrives in
    /// that window needs no wake-up, and a wake-up crosses CPUs (tens of
    /// microseconds in a virtual machine, whose idle CPUs are slow to wake).
    /// Set it to zero where CPU time is billed or shared with work that does
    /// not yield; raise it when light-load latency matters most.
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
    /// tasks on the shard's thread (see [`Engine::spawn_on`]), and a batch
    /// function's own glommio I/O, are looked at every
    /// [`DOZE_LOOK_EVERY`](ferry_shard::DOZE_LOOK_EVERY) (50 µs), not at once.
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

    fn plan(self) -> Result<Plan<I>, ConfigError> {
        self.lanes.validate()?;
        if self.max_in_flight_batches == 0 {
            return Err(ConfigError::new(
                "max_in_flight_batches",
                "must be at least 1",
                0,
            ));
        }
        let usable = usable_cpus();
        let shards = self.shards.unwrap_or(usable.len().max(1));
        if shards == 0 {
            return Err(ConfigError::new("shards", "must be at least 1", 0));
        }
        let cpus = if self.pin {
            let cpus = match self.cpus {
                Some(cpus) => cpus,
                None => {
                    if shards > usable.len() {
                        return Err(ConfigError::new(
                            "shards",
                            "must not exceed the usable CPUs unless pin(false) is set",
                            format!("{shards}, usable CPUs: {}", usable.len()),
                        ));
                    }
                    usable[..shards].to_vec()
                }
            };
            if cpus.len() != shards {
                return Err(ConfigError::new(
                    "cpus",
                    "must name exactly one CPU per shard",
                    format!("{} CPUs for {shards} shards", cpus.len()),
                ));
            }
            if let Some(cpu) = cpus.iter().find(|cpu| !usable.contains(cpu)) {
                return Err(ConfigError::new(
                    "cpus",
                    "must only name CPUs this process may use",
                    format!("CPU {cpu}, usable: {usable:?}"),
                ));
            }
            cpus.into_iter().map(Some).collect()
        } else {
            vec![None; shards]
        };
        let intake_capacity = match self.intake_capacity {
            Some(0) => return Err(ConfigError::new("intake_capacity", "must be at least 1", 0)),
            Some(capacity) => capacity,
            None => DEFAULT_INTAKE_CAPACITY,
        }
        .min(self.lanes.max_queueing);
        Ok(Plan {
            cpus,
            lanes: self.lanes,
            max_in_flight_batches: self.max_in_flight_batches,
            intake_capacity,
            spin_before_park: self.spin_before_park,
            doze_before_park: self.doze_before_park,
            order: self.order,
            weigh: self.weigh,
        })
    }
}

impl<K, I, O, E> Builder<K, I, O, E, PerKey>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// The order of a key's waiting inputs (default [`Order::arrival`]).
    pub fn order(mut self, order: Order<I>) -> Self {
        self.order = order;
        self
    }

    /// Validates the settings and starts the shards. `factory` is called once
    /// on each shard's own thread; the batch function it returns serves that
    /// shard and need not be `Send`.
    pub fn start<F, B>(self, factory: F) -> Result<Engine<K, I, O, E>, StartError>
    where
        F: Fn(ShardId) -> B + Send + Sync + 'static,
        B: BatchFn<K, I, O, E> + 'static,
    {
        let plan = self.plan()?;
        Engine::start(plan, factory)
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
        Fut: std::future::Future<Output = Result<Vec<O>, E>>,
    {
        let plan = self.plan()?;
        Batcher::start(plan, move |shard| {
            let batch = factory(shard);
            move |(): (), inputs: Vec<I>| batch(inputs)
        })
    }
}

/// Validated settings.
pub(crate) struct Plan<I> {
    /// One entry per shard: its CPU, if pinned.
    pub cpus: Vec<Option<usize>>,
    pub lanes: LanesConfig,
    pub max_in_flight_batches: usize,
    pub intake_capacity: usize,
    pub spin_before_park: Duration,
    pub doze_before_park: Duration,
    pub order: Order<I>,
    pub weigh: Option<Weigh<I>>,
}

/// The CPUs this process may run on, in ascending order.
fn usable_cpus() -> Vec<usize> {
    match glommio::CpuSet::online() {
        Ok(set) => {
            let mut cpus: Vec<usize> = set.into_iter().map(|location| location.cpu).collect();
            cpus.sort_unstable();
            cpus.dedup();
            let allowed = std::thread::available_parallelism().map_or(cpus.len(), |n| n.get());
            cpus.truncate(allowed.max(1));
            cpus
        }
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}
