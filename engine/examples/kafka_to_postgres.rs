//! A keyed Kafka topic applied to PostgreSQL through `ferry::kafka`, each
//! record's effect exactly once, across rebalances and restarts.
//!
//! Records are (account, amount), keyed by account. A consumer group
//! member feeds them to an engine whose batch function adds one account's
//! amounts in one statement, through its shard's own connection. The
//! statement is a fenced write (docs/scale-out.md):
//!
//! - the partition's **owner epoch**, raised by the assignment hook when the
//!   member is given the partition, must be at least the row's: a member
//!   that lost the partition (and has not noticed) is refused;
//! - only records above the account's **last applied offset** are added,
//!   and that offset is written by the same statement: a record read again
//!   after a crash or a handover is not added twice.
//!
//! The example makes its own topic, produces to it, consumes it until every
//! partition is committed to its end, then reads the balances back and
//! checks them against what it produced. Run it again with the same
//! `FERRY_EXAMPLE_TOPIC`: the group goes on from its commits, and each
//! run's records count once.
//!
//! ```sh
//! FERRY_KAFKA_BOOTSTRAP=127.0.0.1:9092 \
//! FERRY_POSTGRES_URL=postgres://ferry@127.0.0.1:5433/postgres \
//!     cargo run -p ferry-engine --features kafka --example kafka_to_postgres
//! ```
//!
//! Without the variables it says how to start private servers and exits
//! with status 2.
use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ferry::kafka::{Consumer, Failure, OnFailure, Partition, Record};
use ferry::{Engine, FerryError, Runtime};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};
use tokio_postgres::{Config, NoTls};

const PARTITIONS: i32 = 4;
const ACCOUNTS: u64 = 50;
const RECORDS: u64 = 5_000;
const WITHIN: Duration = Duration::from_secs(120);

const HOW_TO: &str = "\
kafka_to_postgres needs a Kafka broker and a PostgreSQL server:
  FERRY_KAFKA_BOOTSTRAP=127.0.0.1:9092 FERRY_POSTGRES_URL=postgres://ferry@127.0.0.1:5433/postgres \\
      cargo run -p ferry-engine --features kafka --example kafka_to_postgres
A private broker: `.ci/kafka-jars` fetches Apache Kafka's jars; format a
storage directory with `java -cp 'LIBS/*' kafka.tools.StorageTool format`
and start `java -cp 'LIBS/*' kafka.Kafka server.properties` (one KRaft node:
engine/tests/kafka/broker.rs writes such a server.properties). A private
PostgreSQL: see the postgres_counters example.";

/// The partitions' owner epochs (one row per partition: raised by each
/// new owner) and the accounts (balance, the epoch of the owner that wrote
/// last, the offset of the last record added).
const SET_UP: &str = "\
CREATE TABLE IF NOT EXISTS ferry_example_kafka_epochs (
    topic text NOT NULL, partition int NOT NULL, epoch bigint NOT NULL,
    PRIMARY KEY (topic, partition));
CREATE TABLE IF NOT EXISTS ferry_example_kafka_accounts (
    topic text NOT NULL, account text NOT NULL, balance bigint NOT NULL,
    owner_epoch bigint NOT NULL, last_offset bigint NOT NULL,
    PRIMARY KEY (topic, account));";

/// Taking a partition: its epoch raised, the new value returned.
const TAKE: &str = "\
INSERT INTO ferry_example_kafka_epochs (topic, partition, epoch) VALUES ($1, $2, 1)
ON CONFLICT (topic, partition) DO UPDATE SET epoch = ferry_example_kafka_epochs.epoch + 1
RETURNING epoch";

/// One account's batch, one statement: the amounts of the records above the
/// account's last applied offset are added, if the row's owner epoch is not
/// newer than ours. No row returned: fenced.
const APPLY: &str = "\
INSERT INTO ferry_example_kafka_accounts AS a (topic, account, balance, owner_epoch, last_offset)
SELECT $1, $2, sum(t.amount)::bigint, $3, max(t.offset_)
  FROM unnest($4::bigint[], $5::bigint[]) AS t(offset_, amount)
ON CONFLICT (topic, account) DO UPDATE
   SET balance = a.balance + (SELECT coalesce(sum(t.amount), 0)::bigint
                                FROM unnest($4::bigint[], $5::bigint[]) AS t(offset_, amount)
                               WHERE t.offset_ > a.last_offset),
       last_offset = greatest(a.last_offset, EXCLUDED.last_offset),
       owner_epoch = EXCLUDED.owner_epoch
 WHERE a.owner_epoch <= EXCLUDED.owner_epoch
RETURNING a.balance";

/// A record's input: its partition (for the epoch), offset and amount.
#[derive(Debug)]
struct Input {
    partition: i32,
    offset: i64,
    amount: i64,
}

/// Why a batch was not applied.
#[derive(Clone, Debug)]
enum ApplyError {
    /// A newer owner holds the partition: nothing applied; the records are
    /// theirs now.
    Fenced { partition: i32 },
    /// The store failed: nothing applied (the statement is one transaction),
    /// or, if the connection broke after sending it, perhaps applied — then
    /// the last applied offset keeps a retry from adding it twice.
    Store(String),
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApplyError::Fenced { partition } => {
                write!(f, "fenced: partition {partition} has a newer owner")
            }
            ApplyError::Store(why) => write!(f, "the store failed: {why}"),
        }
    }
}

/// The epoch this member took each partition with.
type Epochs = Arc<Mutex<HashMap<i32, i64>>>;

fn main() -> ExitCode {
    let (Ok(bootstrap), Ok(url)) = (
        std::env::var("FERRY_KAFKA_BOOTSTRAP"),
        std::env::var("FERRY_POSTGRES_URL"),
    ) else {
        eprintln!("{HOW_TO}");
        return ExitCode::from(2);
    };
    match run(&bootstrap, &url) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kafka_to_postgres: {err}\n\n{HOW_TO}");
            ExitCode::FAILURE
        }
    }
}

fn run(bootstrap: &str, url: &str) -> Result<(), String> {
    let config: Config = url
        .parse()
        .map_err(|err| format!("FERRY_POSTGRES_URL: {err}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|err| err.to_string())?;
    let client = Arc::new(runtime.block_on(connect(&config))?);
    runtime
        .block_on(client.batch_execute(SET_UP))
        .map_err(|err| format!("setting up the tables: {err}"))?;

    let topic = std::env::var("FERRY_EXAMPLE_TOPIC").unwrap_or_else(|_| {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        format!("ferry-example-ledger-{}", now.as_secs())
    });
    let expected = produce(bootstrap, &topic)?;

    let epochs: Epochs = Arc::default();
    let engine = start_engine(config, &topic, &epochs)?;
    let (take_client, handle, take_topic) =
        (client.clone(), runtime.handle().clone(), topic.clone());
    let group = format!("{topic}-writers");
    let consumer = Consumer::builder(engine, decode)
        .bootstrap_servers(bootstrap)
        .group_id(&group)
        .topic(&topic)
        .set("auto.offset.reset", "earliest")
        // Before any record of a newly assigned partition is fetched:
        // take it at the store, so that its previous owner is fenced.
        .on_assign(move |partitions: &[Partition]| {
            for partition in partitions {
                let row = handle
                    .block_on(take_client.query_one(TAKE, &[&take_topic, &partition.partition]))
                    .map_err(|err| format!("taking {partition}: {err}"))?;
                let epoch: i64 = row.get(0);
                epochs_insert(&epochs, partition.partition, epoch);
                println!("took {partition} at epoch {epoch}");
            }
            Ok(())
        })
        .on_failure(|failed| match failed.failure {
            Failure::Answered(FerryError::Failed(ApplyError::Store(_))) if failed.attempt < 5 => {
                OnFailure::Retry
            }
            // Fenced: the partition is someone else's now; stop feeding it
            // (nothing is committed past the record: its owner reads it).
            other => {
                eprintln!("stopping {}: {other}", failed.record.partition());
                OnFailure::Stop
            }
        })
        .start()
        .map_err(|err| err.to_string())?;

    let started = Instant::now();
    let ends = end_offsets(bootstrap, &topic)?;
    while committed(bootstrap, &group, &topic)? != ends {
        if consumer.is_finished() || started.elapsed() > WITHIN {
            let progress = consumer.progress();
            consumer.close().map_err(|err| err.to_string())?;
            return Err(format!(
                "not committed to the end within {WITHIN:?}: {progress:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let progress = consumer.progress();
    consumer.close().map_err(|err| err.to_string())?;
    println!(
        "{RECORDS} records in {:?}: {} submitted, {} answered, {} retried",
        started.elapsed(),
        progress.submitted,
        progress.answered,
        progress.retried
    );
    check(&runtime, &client, &topic, &expected)
}

/// The records' key and input: the key is the account, the value its
/// amount.
fn decode(record: &Record) -> Result<(String, Input), String> {
    let account = record
        .key_str()
        .ok_or("a record without a UTF-8 key")?
        .to_owned();
    let amount = record
        .payload_str()
        .and_then(|value| value.parse().ok())
        .ok_or("a record whose value is not an amount")?;
    let input = Input {
        partition: record.partition,
        offset: record.offset,
        amount,
    };
    Ok((account, input))
}

fn epochs_insert(epochs: &Epochs, partition: i32, epoch: i64) {
    epochs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(partition, epoch);
}

/// Two shards on tokio, each with its own connection and the statement
/// prepared on it.
fn start_engine(
    config: Config,
    topic: &str,
    epochs: &Epochs,
) -> Result<Engine<String, Input, (), ApplyError>, String> {
    let (topic, epochs) = (topic.to_owned(), epochs.clone());
    Engine::builder()
        .shards(2)
        .pin(false)
        .runtime(Runtime::Tokio)
        .max_batch_size(256)
        .try_start(move |shard| {
            let (config, topic, epochs) = (config.clone(), topic.clone(), epochs.clone());
            async move {
                let client = Rc::new(
                    connect(&config)
                        .await
                        .map_err(|err| format!("{shard}: {err}"))?,
                );
                let apply = client
                    .prepare(APPLY)
                    .await
                    .map_err(|err| format!("{shard}: {err}"))?;
                Ok::<_, String>(move |account: String, inputs: Vec<Input>| {
                    let (client, apply, topic, epochs) =
                        (client.clone(), apply.clone(), topic.clone(), epochs.clone());
                    async move {
                        let partition = inputs[0].partition;
                        let epoch = epochs
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get(&partition)
                            .copied();
                        let epoch = epoch.ok_or(ApplyError::Fenced { partition })?;
                        let offsets: Vec<i64> = inputs.iter().map(|i| i.offset).collect();
                        let amounts: Vec<i64> = inputs.iter().map(|i| i.amount).collect();
                        let rows = client
                            .query(&apply, &[&topic, &account, &epoch, &offsets, &amounts])
                            .await
                            .map_err(|err| ApplyError::Store(err.to_string()))?;
                        if rows.is_empty() {
                            return Err(ApplyError::Fenced { partition });
                        }
                        Ok(vec![(); inputs.len()])
                    }
                })
            }
        })
        .map_err(|err| format!("the engine did not start: {err}"))
}

/// Connects, the connection's I/O on the current tokio runtime.
async fn connect(config: &Config) -> Result<tokio_postgres::Client, String> {
    let (client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|err| format!("connecting: {err}"))?;
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            eprintln!("kafka_to_postgres: a connection broke: {err}");
        }
    });
    Ok(client)
}

/// Makes the topic (unless it is there) and produces the records; returns
/// each account's expected balance.
fn produce(bootstrap: &str, topic: &str) -> Result<BTreeMap<String, i64>, String> {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", bootstrap);
    let admin: AdminClient<DefaultClientContext> =
        config.create().map_err(|err| err.to_string())?;
    let new = NewTopic::new(topic, PARTITIONS, TopicReplication::Fixed(1));
    let made = futures::executor::block_on(admin.create_topics([&new], &AdminOptions::new()))
        .map_err(|err| format!("creating {topic}: {err}"))?;
    for result in made {
        match result {
            Ok(_) => println!("made topic {topic} ({PARTITIONS} partitions)"),
            Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)) => {
                println!("topic {topic} is there")
            }
            Err((_, err)) => return Err(format!("creating {topic}: {err}")),
        }
    }
    let producer: ThreadedProducer<DefaultProducerContext> =
        config.create().map_err(|err| err.to_string())?;
    let mut expected = BTreeMap::new();
    for n in 0..RECORDS {
        let account = format!("account-{}", n % ACCOUNTS);
        let amount = (n % 7) as i64 + 1;
        *expected.entry(account.clone()).or_insert(0) += amount;
        let value = amount.to_string();
        let mut record = BaseRecord::to(topic).key(&account).payload(&value);
        while let Err((_, returned)) = producer.send(record) {
            record = returned; // The local queue is full: let it drain.
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    producer
        .flush(Duration::from_secs(30))
        .map_err(|err| format!("producing: {err}"))?;
    Ok(expected)
}

/// The offset one past each partition's last record.
fn end_offsets(bootstrap: &str, topic: &str) -> Result<BTreeMap<i32, i64>, String> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .map_err(|err| err.to_string())?;
    (0..PARTITIONS)
        .map(|partition| {
            let (_, high) = consumer
                .fetch_watermarks(topic, partition, Duration::from_secs(10))
                .map_err(|err| format!("{topic}/{partition}: {err}"))?;
            Ok((partition, high))
        })
        .collect()
}

/// The offsets `group` committed for `topic`, read back from the broker.
fn committed(bootstrap: &str, group: &str, topic: &str) -> Result<BTreeMap<i32, i64>, String> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .create()
        .map_err(|err| err.to_string())?;
    let mut list = TopicPartitionList::new();
    for partition in 0..PARTITIONS {
        list.add_partition(topic, partition);
    }
    let list = consumer
        .committed_offsets(list, Duration::from_secs(10))
        .map_err(|err| format!("reading {group}'s commits: {err}"))?;
    Ok(list
        .elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(offset) => Some((e.partition(), offset)),
            _ => None,
        })
        .collect())
}

/// The balances read back equal what was produced (on a topic produced to
/// more than once, each run's records count once).
fn check(
    runtime: &tokio::runtime::Runtime,
    client: &tokio_postgres::Client,
    topic: &str,
    produced: &BTreeMap<String, i64>,
) -> Result<(), String> {
    let rows = runtime
        .block_on(client.query(
            "SELECT account, balance FROM ferry_example_kafka_accounts WHERE topic = $1",
            &[&topic],
        ))
        .map_err(|err| format!("reading back: {err}"))?;
    let balances: BTreeMap<String, i64> = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
    let runs = balances
        .iter()
        .next()
        .and_then(|(account, balance)| produced.get(account).map(|one| balance / one.max(&1)))
        .unwrap_or(0);
    let wrong: Vec<_> = produced
        .iter()
        .filter(|(account, one)| balances.get(*account) != Some(&(*one * runs)))
        .collect();
    if runs == 0 || !wrong.is_empty() {
        return Err(format!(
            "balances read back do not match what was produced: {wrong:?}"
        ));
    }
    println!(
        "read back: {} accounts, each balance exactly {runs} × what one run produced",
        balances.len()
    );
    Ok(())
}
