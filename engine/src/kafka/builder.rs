//! Configuring and starting a [`Consumer`].

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};

use super::feed::{AssignHook, Decode, Feed, Policy, Submitter};
use super::rebalance::FeedContext;
use super::{answers, consumer, Consumer, Error, Failed, OnFailure, Partition, Progress};
use crate::Engine;

/// The default bound on a partition's records in the engine.
pub const DEFAULT_MAX_UNANSWERED_PER_PARTITION: usize = 10_000;
/// The default bound on all partitions' records in the engine together:
/// a tenth of the engine's default `max_waiting` (per shard).
pub const DEFAULT_MAX_UNANSWERED: usize = 100_000;
/// The default bound on waiting for a revoked partition's records.
pub const DEFAULT_REVOKE_TIMEOUT: Duration = Duration::from_secs(30);
/// The default interval between commits while consuming.
pub const DEFAULT_COMMIT_INTERVAL: Duration = Duration::from_secs(1);

/// The client settings the consumer relies on, set by it: offsets are
/// committed by the consumer alone, and rebalances are cooperative (a
/// member keeps the partitions that do not move).
const REQUIRED: [(&str, &str); 3] = [
    ("enable.auto.commit", "false"),
    ("enable.auto.offset.store", "false"),
    ("partition.assignment.strategy", "cooperative-sticky"),
];

/// Configures a [`Consumer`]: made by [`Consumer::builder`], started by
/// [`start`](Self::start). [`bootstrap_servers`](Self::bootstrap_servers),
/// [`group_id`](Self::group_id) and at least one [`topic`](Self::topic)
/// are required; any other librdkafka consumer property goes through
/// [`set`](Self::set).
///
/// ```
/// use std::time::Duration;
/// use ferry::kafka::{Consumer, OnFailure};
/// use ferry::Engine;
///
/// let engine: Engine<Vec<u8>, i64, (), String> = Engine::builder()
///     .shards(1)
///     .pin(false)
///     .start(|_| |_key: Vec<u8>, offsets: Vec<i64>| async move { Ok::<_, String>(vec![(); offsets.len()]) })
///     .unwrap();
/// let builder = Consumer::builder(engine, |record| Ok((record.key.clone().unwrap_or_default(), record.offset)))
///     .bootstrap_servers("127.0.0.1:9092")
///     .group_id("ledger")
///     .topic("ledger")
///     .set("auto.offset.reset", "earliest")
///     .max_unanswered_per_partition(1_000)
///     .revoke_timeout(Duration::from_secs(10))
///     .commit_interval(Duration::from_millis(200))
///     .on_assign(|partitions| {
///         println!("taking {} partitions", partitions.len());
///         Ok(())
///     })
///     .on_failure(|failed| if failed.attempt < 3 { OnFailure::Retry } else { OnFailure::Stop });
/// # drop(builder);
/// ```
pub struct ConsumerBuilder<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone,
{
    engine: Engine<K, I, O, E>,
    decode: Decode<K, I>,
    config: ClientConfig,
    topics: Vec<String>,
    max_unanswered_per_partition: usize,
    max_unanswered: usize,
    revoke_timeout: Duration,
    commit_interval: Duration,
    on_assign: AssignHook,
    on_failure: Policy<I, E>,
}

impl<K, I, O, E> ConsumerBuilder<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    pub(crate) fn new(engine: Engine<K, I, O, E>, decode: Decode<K, I>) -> Self {
        Self {
            engine,
            decode,
            config: ClientConfig::new(),
            topics: Vec::new(),
            max_unanswered_per_partition: DEFAULT_MAX_UNANSWERED_PER_PARTITION,
            max_unanswered: DEFAULT_MAX_UNANSWERED,
            revoke_timeout: DEFAULT_REVOKE_TIMEOUT,
            commit_interval: DEFAULT_COMMIT_INTERVAL,
            on_assign: Box::new(|_| Ok(())),
            on_failure: Box::new(|_| OnFailure::Stop),
        }
    }

    /// The brokers to reach first, `host:port[,host:port...]` (librdkafka's
    /// `bootstrap.servers`). Required.
    pub fn bootstrap_servers(self, servers: &str) -> Self {
        self.set("bootstrap.servers", servers)
    }

    /// The consumer group to join (`group.id`). Required.
    pub fn group_id(self, group: &str) -> Self {
        self.set("group.id", group)
    }

    /// A topic to subscribe to; call once per topic. At least one is
    /// required.
    pub fn topic(mut self, topic: &str) -> Self {
        self.topics.push(topic.to_owned());
        self
    }

    /// Any librdkafka consumer property (`auto.offset.reset`,
    /// `session.timeout.ms`, `client.id`, ...). The consumer sets three
    /// itself and refuses to start if they are set otherwise:
    /// `enable.auto.commit=false` and `enable.auto.offset.store=false` (it
    /// commits, once records are answered) and
    /// `partition.assignment.strategy=cooperative-sticky`.
    ///
    /// ```
    /// # use ferry::kafka::Consumer;
    /// # let engine: ferry::Engine<Vec<u8>, i64, (), String> = ferry::Engine::builder().shards(1).pin(false)
    /// #     .start(|_| |_k: Vec<u8>, v: Vec<i64>| async move { Ok::<_, String>(vec![(); v.len()]) }).unwrap();
    /// # let builder = Consumer::builder(engine, |r| Ok((r.key.clone().unwrap_or_default(), r.offset)))
    /// #     .bootstrap_servers("127.0.0.1:9092").group_id("g").topic("t");
    /// // The consumer commits, once records are answered: not librdkafka.
    /// let err = builder.set("enable.auto.commit", "true").start().unwrap_err();
    /// assert!(err.to_string().contains("`enable.auto.commit` must be `false`"), "{err}");
    /// ```
    pub fn set(mut self, property: &str, value: &str) -> Self {
        self.config.set(property, value);
        self
    }

    /// The bound on a partition's records in the engine (submitted, not yet
    /// answered): at the bound the partition is paused, and it resumes when
    /// half have been answered. Default
    /// [`DEFAULT_MAX_UNANSWERED_PER_PARTITION`].
    ///
    /// Keep the engine's `max_waiting_per_key`, if set, at or above it
    /// (a key's records all come from one partition): see
    /// [`max_unanswered`](Self::max_unanswered).
    ///
    /// ```
    /// # use ferry::kafka::Consumer;
    /// # let engine: ferry::Engine<Vec<u8>, i64, (), String> = ferry::Engine::builder().shards(1).pin(false)
    /// #     .start(|_| |_k: Vec<u8>, v: Vec<i64>| async move { Ok::<_, String>(vec![(); v.len()]) }).unwrap();
    /// # let builder = Consumer::builder(engine, |r| Ok((r.key.clone().unwrap_or_default(), r.offset)))
    /// #     .bootstrap_servers("127.0.0.1:9092").group_id("g").topic("t");
    /// let err = builder.max_unanswered_per_partition(0).start().unwrap_err();
    /// assert!(err.to_string().contains("max_unanswered_per_partition"), "{err}");
    /// ```
    pub fn max_unanswered_per_partition(mut self, records: usize) -> Self {
        self.max_unanswered_per_partition = records;
        self
    }

    /// The bound on all partitions' records in the engine together: past
    /// it, records read are held and their partitions paused until some
    /// are answered. Default [`DEFAULT_MAX_UNANSWERED`].
    ///
    /// Keep it at or below the engine's `max_waiting` (a bound per shard,
    /// and the records could all be one shard's), less what other callers
    /// of the engine may have waiting. A refusal decided on the caller's
    /// thread (the intake queue full, an input too heavy) is known before
    /// the partition's next record is submitted, so it cannot put a key
    /// out of order; one decided on a shard, after admission, comes back
    /// when later records of its key may have been admitted already
    /// ([`Progress::refused_by_shard`](super::Progress::refused_by_shard)).
    /// With the engine's bounds above the consumer's, its shards never
    /// refuse its records.
    ///
    /// ```
    /// # use ferry::kafka::Consumer;
    /// # let engine: ferry::Engine<Vec<u8>, i64, (), String> = ferry::Engine::builder().shards(1).pin(false)
    /// #     .start(|_| |_k: Vec<u8>, v: Vec<i64>| async move { Ok::<_, String>(vec![(); v.len()]) }).unwrap();
    /// # let builder = Consumer::builder(engine, |r| Ok((r.key.clone().unwrap_or_default(), r.offset)))
    /// #     .bootstrap_servers("127.0.0.1:9092").group_id("g").topic("t");
    /// // The engine above queues up to 1,000,000 inputs per shard (its
    /// // default `max_waiting`): a tenth of that is well under it.
    /// let builder = builder.max_unanswered(ferry::kafka::DEFAULT_MAX_UNANSWERED);
    /// let err = builder.max_unanswered(0).start().unwrap_err();
    /// assert!(err.to_string().contains("max_unanswered"), "{err}");
    /// ```
    pub fn max_unanswered(mut self, records: usize) -> Self {
        self.max_unanswered = records;
        self
    }

    /// How long a rebalance (or [`Consumer::close`]) waits for a revoked
    /// partition's records in the engine before committing what is answered
    /// and letting it go. Default [`DEFAULT_REVOKE_TIMEOUT`]; keep it
    /// under the group's `max.poll.interval.ms`.
    ///
    /// ```
    /// use std::time::Duration;
    /// # use ferry::kafka::Consumer;
    /// # let engine: ferry::Engine<Vec<u8>, i64, (), String> = ferry::Engine::builder().shards(1).pin(false)
    /// #     .start(|_| |_k: Vec<u8>, v: Vec<i64>| async move { Ok::<_, String>(vec![(); v.len()]) }).unwrap();
    /// # let builder = Consumer::builder(engine, |r| Ok((r.key.clone().unwrap_or_default(), r.offset)))
    /// #     .bootstrap_servers("127.0.0.1:9092").group_id("g").topic("t");
    /// let err = builder.revoke_timeout(Duration::ZERO).start().unwrap_err();
    /// assert!(err.to_string().contains("revoke_timeout"), "{err}");
    /// ```
    pub fn revoke_timeout(mut self, timeout: Duration) -> Self {
        self.revoke_timeout = timeout;
        self
    }

    /// How often partitions whose commit point moved are committed while
    /// consuming (asynchronously; a rebalance and close commit
    /// synchronously). Default [`DEFAULT_COMMIT_INTERVAL`].
    ///
    /// ```
    /// use std::time::Duration;
    /// # use ferry::kafka::Consumer;
    /// # let engine: ferry::Engine<Vec<u8>, i64, (), String> = ferry::Engine::builder().shards(1).pin(false)
    /// #     .start(|_| |_k: Vec<u8>, v: Vec<i64>| async move { Ok::<_, String>(vec![(); v.len()]) }).unwrap();
    /// # let builder = Consumer::builder(engine, |r| Ok((r.key.clone().unwrap_or_default(), r.offset)))
    /// #     .bootstrap_servers("127.0.0.1:9092").group_id("g").topic("t");
    /// let builder = builder.commit_interval(Duration::from_millis(200));
    /// let err = builder.commit_interval(Duration::ZERO).start().unwrap_err();
    /// assert!(err.to_string().contains("commit_interval"), "{err}");
    /// ```
    pub fn commit_interval(mut self, interval: Duration) -> Self {
        self.commit_interval = interval;
        self
    }

    /// Runs when partitions are assigned, before any of their records is
    /// fetched: take the owner epoch of each at the store here, so that a
    /// stale owner's writes are refused. It runs on the consumer's thread
    /// (block there on async work, e.g. with a tokio `Handle::block_on`).
    /// An `Err` stops the consumer, which returns it from
    /// [`Consumer::close`] as [`Error::AssignHook`] without feeding the
    /// partitions.
    ///
    /// ```
    /// # use ferry::kafka::Consumer;
    /// # let engine: ferry::Engine<Vec<u8>, i64, (), String> = ferry::Engine::builder().shards(1).pin(false)
    /// #     .start(|_| |_k: Vec<u8>, v: Vec<i64>| async move { Ok::<_, String>(vec![(); v.len()]) }).unwrap();
    /// # let builder = Consumer::builder(engine, |r| Ok((r.key.clone().unwrap_or_default(), r.offset)))
    /// #     .bootstrap_servers("127.0.0.1:9092").group_id("g").topic("t");
    /// use std::collections::HashMap;
    /// use std::sync::{Arc, Mutex};
    ///
    /// // Each partition's owner epoch, for the batch function's fenced write.
    /// let epochs: Arc<Mutex<HashMap<i32, i64>>> = Arc::default();
    /// let taken = epochs.clone();
    /// let builder = builder.on_assign(move |partitions| {
    ///     for partition in partitions {
    ///         let epoch = 1; // `UPDATE ... SET epoch = epoch + 1 RETURNING epoch` at the store
    ///         taken.lock().unwrap().insert(partition.partition, epoch);
    ///     }
    ///     Ok(())
    /// });
    /// ```
    pub fn on_assign(
        mut self,
        hook: impl FnMut(&[Partition]) -> Result<(), String> + Send + 'static,
    ) -> Self {
        self.on_assign = Box::new(hook);
        self
    }

    /// The failure policy: decides, for each record answered with an error
    /// or that the decoder refused, whether to retry it, give it up to a
    /// dead letter (which the policy writes), or stop its partition. Runs
    /// on the consumer's thread. Default: [`OnFailure::Stop`].
    ///
    /// ```
    /// # use ferry::kafka::Consumer;
    /// # let engine: ferry::Engine<Vec<u8>, i64, (), String> = ferry::Engine::builder().shards(1).pin(false)
    /// #     .start(|_| |_k: Vec<u8>, v: Vec<i64>| async move { Ok::<_, String>(vec![(); v.len()]) }).unwrap();
    /// # let builder = Consumer::builder(engine, |r| Ok((r.key.clone().unwrap_or_default(), r.offset)))
    /// #     .bootstrap_servers("127.0.0.1:9092").group_id("g").topic("t");
    /// use ferry::kafka::{Failure, OnFailure};
    /// use ferry::FerryError;
    ///
    /// let builder = builder.on_failure(|failed| match failed.failure {
    ///     // A store that failed: twice more, then stop the partition.
    ///     Failure::Answered(FerryError::Failed(_)) if failed.attempt < 3 => OnFailure::Retry,
    ///     Failure::Answered(FerryError::Failed(_)) => OnFailure::Stop,
    ///     // Anything else (undecodable, expired, too heavy): kept aside.
    ///     other => {
    ///         eprintln!("dead letter {}@{}: {other}", failed.record.partition(), failed.record.offset);
    ///         OnFailure::DeadLetter
    ///     }
    /// });
    /// ```
    pub fn on_failure(
        mut self,
        policy: impl FnMut(Failed<'_, I, E>) -> OnFailure + Send + 'static,
    ) -> Self {
        self.on_failure = Box::new(policy);
        self
    }

    /// Joins the group and starts consuming on threads of the consumer's
    /// own. Fails at once on a missing or broken setting, or if librdkafka
    /// refuses the configuration or the subscription (an unreachable broker
    /// is not an error: the client keeps trying, see
    /// [`Progress::last_poll_error`]).
    pub fn start(mut self) -> Result<Consumer, Error> {
        self.check()?;
        for (property, value) in REQUIRED {
            self.config.set(property, value);
        }
        let group = self.config.get("group.id").unwrap_or_default().to_owned();
        let (channels, _answers) =
            answers::spawn(format!("ferry-kafka-answers-{group}")).map_err(Error::Spawn)?;
        let (pending, answers) = channels;
        let published = Arc::new(Mutex::new(Progress::default()));
        let feed = Feed {
            submitter: Submitter {
                engine: self.engine,
                decode: self.decode,
                pending,
            },
            answers,
            on_failure: self.on_failure,
            on_assign: self.on_assign,
            max_in_engine: self.max_unanswered_per_partition,
            max_in_engine_total: self.max_unanswered,
            in_engine_total: 0,
            revoke_timeout: self.revoke_timeout,
            partitions: Default::default(),
            assignments: 0,
            progress: Progress::default(),
            published: published.clone(),
            last_published: Instant::now(),
            fatal: None,
        };
        let client: BaseConsumer<_> = self.config.create_with_context(FeedContext::new(feed))?;
        let topics: Vec<&str> = self.topics.iter().map(String::as_str).collect();
        client.subscribe(&topics)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let commit_interval = self.commit_interval;
        let thread = thread::Builder::new()
            .name(format!("ferry-kafka-{group}"))
            .spawn(move || consumer::run(client, &stop_flag, commit_interval))
            .map_err(Error::Spawn)?;
        Ok(Consumer::started(stop, thread, published))
    }

    /// Every required setting given, every value within its rule.
    fn check(&self) -> Result<(), Error> {
        let refuse = |setting: &'static str, reason: &str| Error::Config {
            setting,
            reason: reason.to_owned(),
        };
        if self
            .config
            .get("bootstrap.servers")
            .is_none_or(str::is_empty)
        {
            return Err(refuse(
                "bootstrap_servers",
                "required: the brokers to reach, host:port",
            ));
        }
        if self.config.get("group.id").is_none_or(str::is_empty) {
            return Err(refuse("group_id", "required: the consumer group to join"));
        }
        if self.topics.is_empty() {
            return Err(refuse("topic", "required: at least one topic to consume"));
        }
        if self.max_unanswered_per_partition == 0 {
            return Err(refuse("max_unanswered_per_partition", "must be at least 1"));
        }
        if self.max_unanswered == 0 {
            return Err(refuse("max_unanswered", "must be at least 1"));
        }
        if self.revoke_timeout.is_zero() || self.commit_interval.is_zero() {
            return Err(refuse(
                "revoke_timeout / commit_interval",
                "must be above zero",
            ));
        }
        for (property, value) in REQUIRED {
            if let Some(set) = self.config.get(property) {
                if set != value {
                    return Err(Error::Config {
                        setting: "set",
                        reason: format!("`{property}` must be `{value}` (the consumer relies on it), not `{set}`"),
                    });
                }
            }
        }
        Ok(())
    }
}

impl<K, I, O, E> std::fmt::Debug for ConsumerBuilder<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerBuilder")
            .field("config", &self.config)
            .field("topics", &self.topics)
            .field(
                "max_unanswered_per_partition",
                &self.max_unanswered_per_partition,
            )
            .field("max_unanswered", &self.max_unanswered)
            .field("revoke_timeout", &self.revoke_timeout)
            .field("commit_interval", &self.commit_interval)
            .finish_non_exhaustive()
    }
}
