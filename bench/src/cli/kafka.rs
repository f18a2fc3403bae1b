//! `ferry-load kafka` (feature `kafka`): a Kafka topic consumed into
//! PostgreSQL by a consumer group; and, hidden, one member of the group
//! (`--kafka-member N`), which the run starts.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::base::duration::parse_duration;
use crate::report::kafka::{self as report, KafkaReport};
use crate::run::kafka::{run, KillAt, Settings};
use crate::servers::{Kind, Private};
use crate::sources::dist::KeyDist;
use crate::store::{Fence, StoreAddress};

use crate::sources::kafka::consumer::MemberSettings;
use crate::sources::kafka::member;
use crate::sources::kafka::rows::{check_prefix, DEFAULT_PREFIX};
use crate::sources::kafka::{now_us, System};

/// What to say when there is no broker.
const NO_BROKER: &str = "kafka needs a Kafka broker: --kafka-bootstrap 127.0.0.1:PORT. \
A private one: `.ci/kafka-jars` fetches Apache Kafka's jars (needs Maven and Java 17+); format a \
storage directory with `java -cp 'LIBS/*' kafka.tools.StorageTool format --cluster-id ID --config server.properties` \
and start `java -cp 'LIBS/*' kafka.Kafka server.properties` (one KRaft node listening on 127.0.0.1; \
engine/tests/kafka/broker.rs writes such a server.properties)";

/// A keyed Kafka topic consumed into PostgreSQL by a consumer group, each
/// system in turn, one member killed mid-run, the rows read back
///
/// Makes a topic of --partitions partitions and fills it with --records
/// records over --keys keys (each record's value: its key's sequence
/// number and its produce time). Then, for each of --systems, starts
/// --members member processes in one consumer group, which apply every
/// record to its key's row in PostgreSQL (tables --table-prefix_epochs
/// and _keys; ferry's, _entities), kills one with SIGKILL at
/// --kill-member-at and starts a new one, and waits until the rows show
/// every record applied. Prints per system records/s, lag, rebalances,
/// kills, and the verdict: lost, applied twice, out of order. Exits
/// non-zero if ferry's verdict with the fence is not exact.
#[derive(Clone, Debug, Args)]
pub struct KafkaArgs {
    /// The Kafka broker(s), host:port[,host:port…] [default: a private one,
    /// started from the jars of .ci/kafka-jars and stopped at the end]
    #[arg(long, value_name = "HOST:PORT")]
    kafka_bootstrap: Option<String>,

    /// The PostgreSQL server the rows go to [default, or postgres alone: a
    /// private one, started and stopped at the end]
    #[arg(long, value_name = "postgres://…|postgres")]
    store: Option<String>,

    /// The topic to make and fill (it must not exist) [default: ferry-load-UNIX_SECONDS]
    #[arg(long, value_name = "NAME")]
    topic: Option<String>,

    /// The topic's partitions
    #[arg(long, value_name = "P", default_value_t = 12)]
    partitions: i32,

    /// Records produced
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    records: u64,

    /// Distinct keys, k000000 onwards
    #[arg(long, value_name = "K", default_value_t = 10_000)]
    keys: u64,

    /// How keys are drawn: uniform, or zipf:S
    #[arg(long, value_name = "uniform|zipf:S", default_value = "uniform")]
    dist: KeyDist,

    /// The producer's seed for drawing keys
    #[arg(long, value_name = "SEED", default_value_t = 1)]
    seed: u64,

    /// Member processes per system, all in one consumer group
    #[arg(long, value_name = "M", default_value_t = 3)]
    members: usize,

    /// Kill one member (SIGKILL) and start a new one: after a duration
    /// from the members' start (10s), or once a share of the records is
    /// applied (30%)
    #[arg(long, value_name = "D|P%")]
    kill_member_at: Option<KillAt>,

    /// The control: no offset or epoch condition on the writes (ferry's
    /// fold applies every record), so a record read again after a kill is
    /// applied again
    #[arg(long)]
    no_fence: bool,

    /// The systems, in order: ferry, partition-serial, parallel-consumer
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "ferry,partition-serial,parallel-consumer"
    )]
    systems: Vec<System>,

    /// parallel-consumer's jar, run with `java -jar` (skipped without it)
    #[arg(long, value_name = "PATH")]
    parallel_consumer_jar: Option<PathBuf>,

    /// parallel-consumer's --max-concurrency
    #[arg(long, value_name = "C", default_value_t = 16)]
    parallel_consumer_max_concurrency: usize,

    /// The most one system may take; then it reports how far it got
    #[arg(long, value_name = "D", value_parser = parse_duration, default_value = "600s")]
    duration_limit: Duration,

    /// The tables' prefix: PREFIX_epochs, PREFIX_keys and PREFIX_entities
    #[arg(long, value_name = "PREFIX", default_value = DEFAULT_PREFIX)]
    table_prefix: String,

    /// ferry's shards per member
    #[arg(long, value_name = "N", default_value_t = 2)]
    shards: usize,

    /// Write the figures as JSON to PATH
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,

    /// Run as member N of a run (started by the run itself)
    #[arg(long, value_name = "N", hide = true)]
    kafka_member: Option<usize>,

    /// A member's system
    #[arg(long, value_name = "SYSTEM", hide = true)]
    kafka_system: Option<System>,

    /// A member's consumer group
    #[arg(long, value_name = "GROUP", hide = true)]
    group: Option<String>,

    /// When a member's system started, µs since the Unix epoch
    #[arg(long, value_name = "US", hide = true)]
    start_us: Option<i64>,
}

impl KafkaArgs {
    /// Runs every system (or, with `--kafka-member`, one member);
    /// `Ok(false)`: ferry's fenced verdict failed.
    pub fn run(self) -> Result<bool, String> {
        self.check()?;
        if let Some(index) = self.kafka_member {
            return member::serve(&self.member(index)?).map(|()| true);
        }
        let (args, _private) = self.with_private_servers()?;
        let settings = args.settings()?;
        let mut report = run(&settings)?;
        report.command = StoreAddress::shown_command_line();
        print!("{}", report::table(&report.systems));
        write_json(&args, &report)?;
        Ok(!report.ferry_failed())
    }

    /// These arguments with a private broker where they name none, and a
    /// private PostgreSQL where they name none (or say `postgres`); the
    /// servers stop, their directories removed, when the answer is dropped.
    fn with_private_servers(self) -> Result<(KafkaArgs, Vec<Private>), String> {
        let mut args = self;
        let mut started = Vec::new();
        if args.kafka_bootstrap.is_none() {
            let broker = Private::start_said(Kind::Kafka)?;
            args.kafka_bootstrap = Some(broker.url.clone());
            started.push(broker);
        }
        if args
            .store
            .as_deref()
            .is_none_or(|store| store == "postgres")
        {
            let postgres = Private::start_said(Kind::Postgres)?;
            args.store = Some(postgres.url.clone());
            started.push(postgres);
        }
        Ok((args, started))
    }

    /// Every count at least 1, the keys' names in reach, a system, and a
    /// usable table prefix.
    pub fn check(&self) -> Result<(), String> {
        if self.partitions < 1 || self.members < 1 || self.keys < 1 || self.records < 1 {
            return Err("--partitions, --members, --keys and --records must be at least 1".into());
        }
        if self.shards < 1 || self.parallel_consumer_max_concurrency < 1 {
            return Err(
                "--shards and --parallel-consumer-max-concurrency must be at least 1".into(),
            );
        }
        if self.keys > 1_000_000 {
            return Err("--keys: at most 1,000,000 (names are k and six digits)".into());
        }
        if self.systems.is_empty() {
            return Err("--systems: name at least one".into());
        }
        check_prefix(&self.table_prefix)
    }

    fn bootstrap(&self) -> Result<String, String> {
        self.kafka_bootstrap
            .clone()
            .ok_or_else(|| NO_BROKER.to_owned())
    }

    /// The PostgreSQL URL, and how to show it.
    fn store(&self) -> Result<(String, String), String> {
        let url = self.store.clone().ok_or(
            "kafka writes its rows to PostgreSQL: --store postgres://USER@127.0.0.1:PORT/DB",
        )?;
        match url.parse::<StoreAddress>() {
            Ok(address @ StoreAddress::Postgres(_)) => Ok((url, address.to_string())),
            _ => Err(format!("--store {url}: kafka needs a postgres:// URL")),
        }
    }

    fn fence(&self) -> Fence {
        if self.no_fence {
            Fence::Off
        } else {
            Fence::On
        }
    }

    fn settings(&self) -> Result<Settings, String> {
        let bootstrap = self.bootstrap()?;
        let (store, store_shown) = self.store()?;
        let topic = self
            .topic
            .clone()
            .unwrap_or_else(|| format!("ferry-load-{}", now_us() / 1_000_000));
        let mut systems = self.systems.clone();
        systems.dedup();
        Ok(Settings {
            bootstrap,
            store,
            store_shown,
            topic,
            partitions: self.partitions,
            records: self.records,
            keys: self.keys,
            dist: self.dist,
            seed: self.seed,
            members: self.members,
            kill_at: self.kill_member_at,
            fence: self.fence(),
            systems,
            parallel_consumer_jar: self.parallel_consumer_jar.clone(),
            max_concurrency: self.parallel_consumer_max_concurrency,
            duration_limit: self.duration_limit,
            prefix: self.table_prefix.clone(),
            shards: self.shards,
            program: std::env::current_exe()
                .map_err(|err| format!("could not find this program to run its members: {err}"))?,
        })
    }

    fn member(&self, index: usize) -> Result<MemberSettings, String> {
        let missing = |flag: &str| format!("a member needs {flag}");
        Ok(MemberSettings {
            index,
            system: self.kafka_system.ok_or_else(|| missing("--kafka-system"))?,
            bootstrap: self.bootstrap()?,
            store: self.store()?.0,
            topic: self.topic.clone().ok_or_else(|| missing("--topic"))?,
            group: self.group.clone().ok_or_else(|| missing("--group"))?,
            prefix: self.table_prefix.clone(),
            fence: self.fence(),
            shards: self.shards,
            start_us: self.start_us.ok_or_else(|| missing("--start-us"))?,
        })
    }
}

fn write_json(args: &KafkaArgs, report: &KafkaReport) -> Result<(), String> {
    let Some(path) = &args.json else {
        return Ok(());
    };
    let json = serde_json::to_string_pretty(report)
        .map_err(|err| format!("could not encode the results: {err}"))?;
    std::fs::write(path, json + "\n")
        .map_err(|err| format!("could not write {}: {err}", path.display()))?;
    eprintln!("ferry-load: wrote {}", path.display());
    Ok(())
}
