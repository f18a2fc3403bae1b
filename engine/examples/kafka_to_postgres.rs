//! A keyed Kafka topic applied to PostgreSQL through `ferry::kafka` and
//! `ferry::entity`, each record's effect exactly once, across rebalances
//! and restarts.
//!
//! Records are (account, amount), keyed by account. The service's own part
//! is the fold (what a record does to its account), a table name, a
//! connection string and the consumer's settings. The library does the
//! rest: the consumer submits each record and commits what is answered;
//! the entities batch each account's records, carry many accounts in one
//! statement, write each on the condition that it is still at the version
//! it was folded from, and resolve a write whose reply was lost.
//!
//! The offset fence is the fold's: an account keeps the offset of the last
//! record added, and a record at or below it (read again after a crash or
//! a handover, from the partition's last commit) is refused, the balance
//! unchanged; the consumer counts it answered. A member that lost the
//! partition and still writes folded from a version the new owner has
//! moved: its write does not land, the account is read again, and the
//! record is refused then.
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
//!     cargo run -p ferry-engine --features kafka,postgres --example kafka_to_postgres
//! ```
//!
//! Without the variables it says how to start private servers and exits
//! with status 2.
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ferry::entity::{Codec, Connection, Entities, Json, PostgresStore, Store};
use ferry::kafka::{Consumer, Failure, OnFailure, Record};
use ferry::{FerryError, Order, Runtime};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

// ---- The service's own part ------------------------------------------------

/// An account as the table keeps it (JSON in its `state` column): its
/// balance, and the offset of the last record added (-1: none yet).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Account {
    balance: i64,
    last_offset: i64,
}

impl Default for Account {
    fn default() -> Self {
        Account {
            balance: 0,
            last_offset: -1,
        }
    }
}

/// A record's input: its offset and amount.
#[derive(Debug)]
struct Deposit {
    offset: i64,
    amount: i64,
}

/// What one record does to its account: added once, the offset fence
/// refusing it if it is at or below the last one added.
fn apply(account: &mut Account, deposit: &Deposit) -> Result<i64, String> {
    if deposit.offset <= account.last_offset {
        return Err(format!(
            "offset {} is added already (the account's last is {})",
            deposit.offset, account.last_offset
        ));
    }
    account.balance += deposit.amount;
    account.last_offset = deposit.offset;
    Ok(account.balance)
}

const TABLE: &str = "ferry_example_ledger";

/// A record's key and input: the key is the topic and the account (the
/// offsets an account keeps are its topic's), the value its amount.
fn decode(record: &Record) -> Result<(String, Deposit), String> {
    let account = record.key_str().ok_or("a record without a UTF-8 key")?;
    let amount = record
        .payload_str()
        .and_then(|value| value.parse().ok())
        .ok_or("a record whose value is not an amount")?;
    let deposit = Deposit {
        offset: record.offset,
        amount,
    };
    Ok((format!("{}/{account}", record.topic), deposit))
}

/// The accounts: keyed by topic and account, each record answered with the
/// new balance or why it was refused.
type Accounts = Entities<String, Deposit, i64, String>;

/// The accounts, and a consumer group member feeding them.
fn start(bootstrap: &str, url: &str, topic: &str) -> Result<(Accounts, Consumer), String> {
    let store = PostgresStore::new(url, TABLE).map_err(|err| err.to_string())?;
    let accounts = Entities::builder()
        .shards(2)
        .pin(false)
        // tokio-postgres's I/O on each shard's own thread.
        .runtime(Runtime::Tokio)
        // A retried record goes ahead of its account's later ones.
        .order(Order::by(|deposit: &Deposit| deposit.offset))
        .start_entities(store, apply)
        .map_err(|err| err.to_string())?;
    let consumer = Consumer::builder(accounts.engine().clone(), decode)
        .bootstrap_servers(bootstrap)
        .group_id(&format!("{topic}-writers"))
        .topic(topic)
        .set("auto.offset.reset", "earliest")
        .on_failure(|failed| match failed.failure {
            // Not applied, or unknown whether: sent again; if it had
            // landed, the fold refuses it now.
            Failure::Answered(FerryError::Failed(_)) if failed.attempt < 5 => OnFailure::Retry,
            // Anything else: stop feeding the partition (nothing is
            // committed past the record).
            other => {
                eprintln!("stopping {}: {other}", failed.record.partition());
                OnFailure::Stop
            }
        })
        .start()
        .map_err(|err| err.to_string())?;
    Ok((accounts, consumer))
}

// ---- Driving it ---------------------------------------------------------------

const PARTITIONS: i32 = 4;
const ACCOUNTS: u64 = 50;
const RECORDS: u64 = 5_000;
const WITHIN: Duration = Duration::from_secs(120);

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
    let topic = std::env::var("FERRY_EXAMPLE_TOPIC").unwrap_or_else(|_| {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        format!("ferry-example-ledger-{}", now.as_secs())
    });
    let expected = produce(bootstrap, &topic)?;
    let ends = end_offsets(bootstrap, &topic)?;
    let (accounts, consumer) = start(bootstrap, url, &topic)?;
    let started = Instant::now();
    loop {
        let progress = consumer.progress();
        let committed: BTreeMap<i32, i64> = progress
            .partitions
            .iter()
            .filter_map(|(partition, at)| Some((partition.partition, at.committed?)))
            .collect();
        if committed == ends {
            println!(
                "{RECORDS} records in {:?}: {} submitted, {} answered, {} retried",
                started.elapsed(),
                progress.submitted,
                progress.answered,
                progress.retried
            );
            break;
        }
        if consumer.is_finished() || started.elapsed() > WITHIN {
            consumer.close().map_err(|err| err.to_string())?;
            return Err(format!(
                "not committed to the end within {WITHIN:?}: {progress:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    consumer.close().map_err(|err| err.to_string())?;
    let store = accounts.store_stats();
    accounts.close();
    accounts.join();
    println!(
        "{} statements ({} conflicts, {} lost replies)",
        store.requests(),
        store.conflicts,
        store.lost
    );
    check(url, &topic, &expected)
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

/// The balances read back (through the store, on a connection of its own)
/// equal what was produced: on a topic produced to more than once, each
/// run's records count once.
fn check(url: &str, topic: &str, produced: &BTreeMap<String, i64>) -> Result<(), String> {
    let store = PostgresStore::new(url, TABLE).map_err(|err| err.to_string())?;
    let keys: Vec<String> = produced
        .keys()
        .map(|account| format!("{topic}/{account}"))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| err.to_string())?;
    let rows = runtime
        .block_on(async {
            let connection = Store::<String>::connect(&store).await?;
            connection.read(&keys.iter().collect::<Vec<_>>()).await
        })
        .map_err(|err| format!("reading back: {err}"))?;
    let mut balances = BTreeMap::new();
    for (account, row) in produced.keys().zip(rows) {
        let read: Account = match row.state {
            Some(state) => Json
                .decode(&state)
                .map_err(|err| format!("{account}: {err}"))?,
            None => Account::default(), // never written
        };
        balances.insert(account.clone(), read.balance);
    }
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

const HOW_TO: &str = "\
kafka_to_postgres needs a Kafka broker and a PostgreSQL server:
  FERRY_KAFKA_BOOTSTRAP=127.0.0.1:9092 FERRY_POSTGRES_URL=postgres://ferry@127.0.0.1:5433/postgres \\
      cargo run -p ferry-engine --features kafka,postgres --example kafka_to_postgres
A private broker: `.ci/kafka-jars` fetches Apache Kafka's jars; format a
storage directory with `java -cp 'LIBS/*' kafka.tools.StorageTool format`
and start `java -cp 'LIBS/*' kafka.Kafka server.properties` (one KRaft node:
engine/tests/kafka/broker.rs writes such a server.properties). A private
PostgreSQL: see the postgres_counters example.";
