//! Filling the topic: `partitions` partitions made afresh, then `records`
//! keyed records, keys drawn from [`crate::sources::dist`]. A record's key is
//! `k` and six digits (`k000123`); its value is `"<seq> <produced_us>"`,
//! the key's sequence number from 1 in produce order and the produce time
//! in microseconds since the Unix epoch. The producer is idempotent, so a
//! key's records sit in its partition once each, in seq order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};

use crate::sources::dist::{KeySampler, Rng};

use super::now_us;

/// How long the producer may take to have every record acknowledged
/// once all are sent.
const FLUSH_WITHIN: Duration = Duration::from_secs(300);

/// What was produced.
#[derive(Clone, Debug, Default)]
pub struct Produced {
    /// Per key, its records (so its last seq).
    pub per_key: BTreeMap<String, u64>,
    /// Records in all.
    pub total: u64,
    /// How long producing took.
    pub took: Duration,
}

/// A key's name in the topic and the rows.
///
/// ```
/// assert_eq!(ferry_bench::sources::kafka::produce::key_name(123), "k000123");
/// ```
pub fn key_name(key: u64) -> String {
    format!("k{key:06}")
}

/// Creates `topic` with `partitions` partitions (it must not exist).
pub fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> Result<(), String> {
    let admin: AdminClient<DefaultClientContext> = client_config(bootstrap)
        .create()
        .map_err(|err| format!("a Kafka admin client for {bootstrap}: {err}"))?;
    let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let results =
        futures::executor::block_on(admin.create_topics([&new], &options)).map_err(|err| {
            format!("creating topic {topic} at {bootstrap}: {err} (is the broker running?)")
        })?;
    for result in results {
        result.map_err(|(topic, err)| {
            format!("creating topic {topic}: {err} (name a topic that does not exist with --topic)")
        })?;
    }
    Ok(())
}

/// Produces `records` records to `topic`, keys drawn by `sampler` with
/// `seed`, and waits until every one is acknowledged.
pub fn produce(
    bootstrap: &str,
    topic: &str,
    records: u64,
    sampler: &KeySampler,
    seed: u64,
) -> Result<Produced, String> {
    let started = Instant::now();
    let producer: ThreadedProducer<Acks> = client_config(bootstrap)
        .set("enable.idempotence", "true")
        .set("linger.ms", "20")
        .set("batch.num.messages", "10000")
        .set("queue.buffering.max.messages", "200000")
        .create_with_context(Acks::default())
        .map_err(|err| format!("a Kafka producer for {bootstrap}: {err}"))?;
    let mut rng = Rng::new(seed);
    let mut produced = Produced::default();
    for _ in 0..records {
        let key = key_name(sampler.sample(&mut rng));
        let seq = produced.per_key.entry(key.clone()).or_insert(0);
        *seq += 1;
        send(&producer, topic, &key, &format!("{seq} {}", now_us()));
    }
    produced.total = records;
    producer.flush(FLUSH_WITHIN).map_err(|err| {
        format!("producing to {topic}: not acknowledged within {FLUSH_WITHIN:?}: {err}")
    })?;
    producer.context().check(records)?;
    produced.took = started.elapsed();
    Ok(produced)
}

/// Sends one record, waiting while the producer's local queue is full.
fn send(producer: &ThreadedProducer<Acks>, topic: &str, key: &str, value: &str) {
    let mut record = BaseRecord::to(topic).key(key).payload(value);
    while let Err((_, returned)) = producer.send(record) {
        record = returned;
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A client configuration reaching `bootstrap`.
pub fn client_config(bootstrap: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", bootstrap);
    config
}

/// The producer's delivery reports: acknowledged and failed counts.
#[derive(Default)]
struct Acks {
    acknowledged: AtomicU64,
    failed: AtomicU64,
    first_failure: Mutex<Option<String>>,
}

impl Acks {
    /// Every one of `records` acknowledged, or why not.
    fn check(&self, records: u64) -> Result<(), String> {
        let failed = self.failed.load(Ordering::Relaxed);
        let acknowledged = self.acknowledged.load(Ordering::Relaxed);
        if failed == 0 && acknowledged == records {
            return Ok(());
        }
        let first = self.first_failure.lock().unwrap_or_else(|e| e.into_inner());
        Err(format!(
            "producing: {acknowledged} of {records} records acknowledged, {failed} failed (first: {})",
            first.as_deref().unwrap_or("none")
        ))
    }
}

impl ClientContext for Acks {}

impl ProducerContext for Acks {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => self.acknowledged.fetch_add(1, Ordering::Relaxed),
            Err((err, _)) => {
                let mut first = self.first_failure.lock().unwrap_or_else(|e| e.into_inner());
                first.get_or_insert_with(|| err.to_string());
                self.failed.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}
