//! ferry's member: a [`ferry::kafka::Consumer`] feeding an engine whose
//! trip function writes many keys' batches in one statement
//! ([`super::write`]), fenced by the owner epoch each partition is taken
//! with in the assignment hook.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use ferry::kafka::{Consumer, Failure, OnFailure, Partition, Record};
use ferry::{Engine, FerryError, Order, Runtime};

use crate::store::on_postgres::connect;

use super::member::{MemberSettings, Running, Tally};
use super::write::{Outcome, Rec, Writer};

/// Keys' batches in one statement at most.
const TRIP_BATCHES: usize = 256;
/// Records of a key in one batch at most.
const BATCH_SIZE: usize = 256;
/// Statements in flight per shard.
const TRIPS_IN_FLIGHT: usize = 2;
/// Times a record whose write failed at the store is sent again.
const STORE_RETRIES: u32 = 20;

/// Why a batch was not applied.
#[derive(Clone, Debug)]
enum WriteError {
    /// A newer owner holds the partition: final.
    Fenced,
    /// The statement failed.
    Store(String),
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Fenced => f.write_str("fenced: the partition has a newer owner"),
            WriteError::Store(why) => write!(f, "the store: {why}"),
        }
    }
}

/// The owner epoch this member took each partition with.
type Epochs = Arc<Mutex<HashMap<i32, i64>>>;

/// Starts the engine and joins the group.
pub fn start(settings: &MemberSettings, tally: Arc<Tally>) -> Result<Box<dyn Running>, String> {
    let epochs: Epochs = Arc::default();
    let engine = start_engine(settings, tally)?;
    let take = take_hook(settings, epochs.clone())?;
    let decoding = epochs.clone();
    let consumer = Consumer::builder(engine, move |record| decode(record, &decoding))
        .bootstrap_servers(&settings.bootstrap)
        .group_id(&settings.group)
        .topic(&settings.topic)
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "1500")
        .set("client.id", &format!("ferry-member-{}", settings.index))
        .on_assign(take)
        .on_failure(|failed| match failed.failure {
            Failure::Answered(FerryError::Failed(WriteError::Store(_)))
                if failed.attempt < STORE_RETRIES =>
            {
                OnFailure::Retry
            }
            other => {
                eprintln!(
                    "ferry member: stopping {}: {other}",
                    failed.record.partition()
                );
                OnFailure::Stop
            }
        })
        .start()
        .map_err(|err| format!("the consumer did not start: {err}"))?;
    Ok(Box::new(Member(consumer)))
}

struct Member(Consumer);

impl Running for Member {
    fn rebalances(&self) -> u64 {
        let progress = self.0.progress();
        progress.assigned + progress.revoked
    }

    fn partitions(&self) -> usize {
        self.0.progress().partitions.len()
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.0.close().map_err(|err| err.to_string())
    }
}

/// A record's key and input: `"<seq> <produced_us>"`, with its partition's
/// epoch.
fn decode(record: &Record, epochs: &Epochs) -> Result<(String, Rec), String> {
    let key = record.key_str().ok_or("a record without a UTF-8 key")?;
    let (seq, produced_us) = super::parse_value(record.payload_str())?;
    let epoch = *epochs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&record.partition)
        .ok_or_else(|| format!("no epoch for {}", record.partition()))?;
    let rec = Rec {
        seq,
        offset: record.offset,
        epoch,
        produced_us,
    };
    Ok((key.to_owned(), rec))
}

/// The assignment hook: each partition taken at the store (its epoch
/// raised) before any of its records is fed, on a connection of its own.
fn take_hook(
    settings: &MemberSettings,
    epochs: Epochs,
) -> Result<impl FnMut(&[Partition]) -> Result<(), String> + Send + 'static, String> {
    let runtime = crate::store::admin_runtime()?;
    let config = super::pg_config(&settings.store)?;
    let (prefix, fence) = (settings.prefix.clone(), settings.fence);
    let writer = runtime.block_on(async {
        let client = connect(&config, "the store").await?;
        Writer::prepare(client, &prefix, fence).await
    })?;
    Ok(move |partitions: &[Partition]| {
        for partition in partitions {
            let epoch = runtime.block_on(writer.take(&partition.topic, partition.partition))?;
            let mut epochs = epochs.lock().unwrap_or_else(|e| e.into_inner());
            epochs.insert(partition.partition, epoch);
        }
        Ok(())
    })
}

/// The engine: shards on tokio, each with its own connection; a key's
/// records ranked by offset, so a retried one goes before later ones.
fn start_engine(
    settings: &MemberSettings,
    tally: Arc<Tally>,
) -> Result<Engine<String, Rec, (), WriteError>, String> {
    let config = super::pg_config(&settings.store)?;
    let (prefix, fence, topic) = (
        settings.prefix.clone(),
        settings.fence,
        settings.topic.clone(),
    );
    Engine::builder()
        .shards(settings.shards)
        .pin(false)
        .runtime(Runtime::Tokio)
        .order(Order::by(|rec: &Rec| rec.offset))
        .max_batch_size(BATCH_SIZE)
        .max_trip_batches(TRIP_BATCHES)
        .max_in_flight_batches(TRIPS_IN_FLIGHT)
        .try_start_trips(move |shard| {
            let (config, prefix, topic, tally) =
                (config.clone(), prefix.clone(), topic.clone(), tally.clone());
            async move {
                let client = connect(&config, "the store").await?;
                let writer = Rc::new(
                    Writer::prepare(client, &prefix, fence)
                        .await
                        .map_err(|why| format!("{shard}: {why}"))?,
                );
                Ok::<_, String>(move |trip: Vec<(String, Vec<Rec>)>| {
                    carry(writer.clone(), topic.clone(), tally.clone(), trip)
                })
            }
        })
        .map_err(|err| format!("the engine did not start: {err}"))
}

/// One trip: every key's batch in one statement.
async fn carry(
    writer: Rc<Writer>,
    topic: String,
    tally: Arc<Tally>,
    trip: Vec<(String, Vec<Rec>)>,
) -> Vec<Result<Vec<()>, WriteError>> {
    let batches: Vec<(&str, &[Rec])> = trip
        .iter()
        .map(|(key, recs)| (key.as_str(), recs.as_slice()))
        .collect();
    let outcomes = match writer.apply(&topic, &batches).await {
        Ok(outcomes) => outcomes,
        Err(why) => return vec![Err(WriteError::Store(why)); trip.len()],
    };
    trip.iter()
        .zip(outcomes)
        .map(|((_, recs), outcome)| match outcome {
            Outcome::Applied => {
                tally.answered(recs);
                Ok(vec![(); recs.len()])
            }
            Outcome::Fenced => Err(WriteError::Fenced),
        })
        .collect()
}
