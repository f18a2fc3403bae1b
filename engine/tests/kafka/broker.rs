//! A private Apache Kafka broker for these tests: one KRaft node (broker
//! and controller in one process) in a temporary directory, listening on
//! 127.0.0.1 only, at ports that were free. Its jars come from Maven
//! Central through `.ci/kafka-jars`; missing jars or a missing `java` fail
//! the test with the command that fixes it, never a silent skip.
//!
//! The tests of one run share one broker (it takes seconds to start), each
//! with topics and groups of its own. It is started by a small shell
//! script that also watches this test process: when the process exits,
//! however it exits, the script stops the broker and removes its
//! directory. Starting takes about 10 s: 4 s to format the storage, 5 s
//! until the broker serves.

use std::fmt::Write as _;
use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

/// The Kafka release the jars are of (as in `.ci/kafka-jars`).
const KAFKA_VERSION: &str = "4.1.1";

/// How long the broker may take to serve once started.
const READY_WITHIN: Duration = Duration::from_secs(90);

/// What fetches the jars.
const FETCH: &str = ".ci/kafka-jars";

/// The broker of this test run, started by the first test that asks.
pub fn shared() -> &'static Broker {
    static BROKER: OnceLock<Broker> = OnceLock::new();
    static STARTING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = STARTING.lock().unwrap_or_else(|e| e.into_inner());
    BROKER.get_or_init(Broker::start)
}

/// A running broker.
pub struct Broker {
    /// `127.0.0.1:port` of its client listener.
    pub bootstrap: String,
    dir: PathBuf,
    /// The watching script (the broker is its child); kept so that it is
    /// not reaped as a zombie by nobody.
    _watch: Child,
}

impl Broker {
    fn start() -> Broker {
        let started = Instant::now();
        let libs = libs_dir();
        let java = java();
        let dir = temp_dir();
        let [port, controller_port] = free_ports();
        let data = dir.join("data");
        let properties = dir.join("server.properties");
        fs::write(&properties, server_properties(port, controller_port, &data))
            .unwrap_or_else(|err| panic!("could not write {}: {err}", properties.display()));
        let log4j = dir.join("log4j2.properties");
        fs::write(&log4j, log4j_properties(&dir.join("broker.log")))
            .unwrap_or_else(|err| panic!("could not write {}: {err}", log4j.display()));
        let class_path = format!("{}/*", libs.display());

        let format_log = dir.join("format.log");
        let formatted = Command::new(&java)
            .args([
                "-Xmx256m",
                "-cp",
                &class_path,
                "kafka.tools.StorageTool",
                "format",
            ])
            // `=` joins the id to its flag: an id may begin with `-`, which
            // the tool's parser would otherwise take for a flag of its own.
            .arg(format!("--cluster-id={}", cluster_id()))
            .arg("--config")
            .arg(&properties)
            .stdin(Stdio::null())
            .stdout(file(&format_log))
            .stderr(file(&format_log))
            .status()
            .unwrap_or_else(|err| panic!("could not run {}: {err}", java.display()));
        assert!(
            formatted.success(),
            "formatting the broker's storage failed ({formatted}):\n{}",
            tail(&format_log)
        );

        // The broker runs under a script that stops it (and removes its
        // directory) once this test process is gone.
        let watch = format!(
            r#"'{java}' -Xmx512m -Dlog4j2.configurationFile='{log4j}' -cp '{class_path}' kafka.Kafka '{properties}' >'{out}' 2>&1 &
broker=$!
trap 'kill $broker 2>/dev/null; wait $broker; rm -rf "{dir}"' EXIT
trap 'exit 0' TERM INT
while kill -0 {tests} 2>/dev/null && kill -0 $broker 2>/dev/null; do sleep 0.5; done
"#,
            java = java.display(),
            log4j = log4j.display(),
            properties = properties.display(),
            out = dir.join("broker.out").display(),
            dir = dir.display(),
            tests = std::process::id(),
        );
        let watch = Command::new("sh")
            .args(["-c", &watch])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("could not start sh to run the broker: {err}"));
        let broker = Broker {
            bootstrap: format!("127.0.0.1:{port}"),
            dir,
            _watch: watch,
        };
        broker.wait_until_ready(started);
        eprintln!(
            "Kafka {KAFKA_VERSION} broker at {} ready in {:.1?} ({})",
            broker.bootstrap,
            started.elapsed(),
            broker.dir.display()
        );
        broker
    }

    /// Waits until the broker says it started and answers a metadata
    /// request; fails with its log's tail otherwise.
    fn wait_until_ready(&self, started: Instant) {
        let log = self.dir.join("broker.log");
        loop {
            let said = fs::read_to_string(&log).unwrap_or_default();
            if said.contains("Kafka Server started") && self.answers_metadata() {
                return;
            }
            assert!(
                started.elapsed() < READY_WITHIN,
                "the Kafka broker did not serve within {READY_WITHIN:?}; its log ends:\n{}\n{}",
                tail(&log),
                tail(&self.dir.join("broker.out"))
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn answers_metadata(&self) -> bool {
        let consumer: BaseConsumer = match self.config().create() {
            Ok(consumer) => consumer,
            Err(_) => return false,
        };
        consumer
            .fetch_metadata(None, Duration::from_secs(2))
            .is_ok()
    }

    /// A client configuration reaching this broker.
    pub fn config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", &self.bootstrap);
        config
    }

    /// Creates `topic` with `partitions` partitions.
    pub fn create_topic(&self, topic: &str, partitions: i32) {
        let admin: AdminClient<DefaultClientContext> = self
            .config()
            .create()
            .unwrap_or_else(|err| panic!("could not make an admin client: {err}"));
        let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
        let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
        let results = futures::executor::block_on(admin.create_topics([&new], &options))
            .unwrap_or_else(|err| panic!("could not create topic {topic}: {err}"));
        for result in results {
            result.unwrap_or_else(|(topic, err)| panic!("could not create topic {topic}: {err}"));
        }
    }

    /// Produces `records` (key, value) to `topic`, each key to one
    /// partition, and waits until every one is acknowledged.
    pub fn produce(&self, topic: &str, records: &[(String, String)]) {
        let producer: ThreadedProducer<DefaultProducerContext> = self
            .config()
            .set("linger.ms", "5")
            .set("enable.idempotence", "true")
            .create()
            .unwrap_or_else(|err| panic!("could not make a producer: {err}"));
        for (key, value) in records {
            let mut record = BaseRecord::to(topic).key(key).payload(value);
            loop {
                match producer.send(record) {
                    Ok(()) => break,
                    // The local queue is full: let it drain.
                    Err((_, returned)) => {
                        record = returned;
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
            }
        }
        producer
            .flush(Duration::from_secs(60))
            .unwrap_or_else(|err| panic!("producing to {topic} was not acknowledged: {err}"));
    }

    /// The offset one past each partition's last record, by partition.
    pub fn end_offsets(&self, topic: &str, partitions: i32) -> Vec<i64> {
        let consumer: BaseConsumer = self.config().create().expect("a consumer for watermarks");
        (0..partitions)
            .map(|partition| {
                let (_, high) = consumer
                    .fetch_watermarks(topic, partition, Duration::from_secs(10))
                    .unwrap_or_else(|err| {
                        panic!("could not read {topic}/{partition}'s end: {err}")
                    });
                high
            })
            .collect()
    }

    /// The offsets `group` committed for each of `topic`'s partitions
    /// (`None` where it committed nothing), read back from the broker.
    pub fn committed(&self, group: &str, topic: &str, partitions: i32) -> Vec<Option<i64>> {
        let consumer: BaseConsumer = self
            .config()
            .set("group.id", group)
            .create()
            .expect("a consumer to read commits");
        let mut list = TopicPartitionList::new();
        for partition in 0..partitions {
            list.add_partition(topic, partition);
        }
        let committed = consumer
            .committed_offsets(list, Duration::from_secs(10))
            .unwrap_or_else(|err| panic!("could not read {group}'s commits: {err}"));
        (0..partitions)
            .map(|partition| {
                match committed
                    .find_partition(topic, partition)
                    .map(|e| e.offset())
                {
                    Some(Offset::Offset(offset)) => Some(offset),
                    _ => None,
                }
            })
            .collect()
    }
}

/// Where `.ci/kafka-jars` put the jars (`FERRY_KAFKA_LIBS`, else its
/// default); fails with the command to run if they are not there.
fn libs_dir() -> PathBuf {
    let libs = match std::env::var_os("FERRY_KAFKA_LIBS") {
        Some(libs) => PathBuf::from(libs),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
                .expect("neither XDG_CACHE_HOME nor HOME is set: set FERRY_KAFKA_LIBS to the jars' folder");
            cache.join(format!("ferry/kafka-{KAFKA_VERSION}/libs"))
        }
    };
    assert!(
        libs.join(".complete").exists(),
        "the Kafka {KAFKA_VERSION} broker's jars are not in {}: fetch them from Maven Central with \
         `{FETCH}` (run at the repository's root; needs Maven), then run the tests again",
        libs.display()
    );
    libs
}

/// The `java` to run the broker with: `$JAVA_HOME/bin/java`, else the one
/// on `$PATH`; fails with what to install if there is none.
fn java() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let candidates = std::env::var_os("JAVA_HOME")
        .map(|home| Path::new(&home).join("bin/java"))
        .into_iter()
        .chain(std::env::split_paths(&path).map(|dir| dir.join("java")));
    for java in candidates {
        if java.is_file() {
            return java;
        }
    }
    panic!(
        "java was not found ($JAVA_HOME/bin or $PATH): the Kafka broker needs Java 17 or later \
         (`apt-get install -y openjdk-17-jre-headless`), then `{FETCH}` for its jars"
    )
}

fn server_properties(port: u16, controller_port: u16, data: &Path) -> String {
    let mut text = String::new();
    for line in [
        "process.roles=broker,controller".to_owned(),
        "node.id=1".to_owned(),
        format!("controller.quorum.voters=1@127.0.0.1:{controller_port}"),
        format!("listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}"),
        format!("advertised.listeners=PLAINTEXT://127.0.0.1:{port}"),
        "controller.listener.names=CONTROLLER".to_owned(),
        "inter.broker.listener.name=PLAINTEXT".to_owned(),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT".to_owned(),
        format!("log.dirs={}", data.display()),
        // One node: every internal topic with one replica.
        "offsets.topic.replication.factor=1".to_owned(),
        "offsets.topic.num.partitions=1".to_owned(),
        "transaction.state.log.replication.factor=1".to_owned(),
        "transaction.state.log.min.isr=1".to_owned(),
        "share.coordinator.state.topic.replication.factor=1".to_owned(),
        "share.coordinator.state.topic.min.isr=1".to_owned(),
        // A group forms at once, not after the default 3 s.
        "group.initial.rebalance.delay.ms=0".to_owned(),
        "auto.create.topics.enable=false".to_owned(),
        "num.network.threads=2".to_owned(),
        "num.io.threads=2".to_owned(),
    ] {
        let _ = writeln!(text, "{line}");
    }
    text
}

fn log4j_properties(log: &Path) -> String {
    format!(
        "status = warn\n\
         appender.file.type = File\n\
         appender.file.name = file\n\
         appender.file.fileName = {}\n\
         appender.file.layout.type = PatternLayout\n\
         appender.file.layout.pattern = [%d] %p %m (%c)%n\n\
         rootLogger.level = info\n\
         rootLogger.appenderRef.file.ref = file\n",
        log.display()
    )
}

/// A cluster id: 16 bytes in unpadded URL-safe base64, as Kafka writes
/// its UUIDs. Unique enough for a private broker.
fn cluster_id() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut state = nanos ^ (u128::from(std::process::id()) << 64);
    let mut bits = 0u128;
    for _ in 0..4 {
        // splitmix-style mixing, 32 bits at a time.
        state = state
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x2545_F491_4F6C_DD1D);
        bits = (bits << 32) | ((state >> 64) as u32 as u128);
    }
    let bytes = bits.to_be_bytes();
    let mut id = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let group = chunk
            .iter()
            .fold(0u32, |acc, byte| (acc << 8) | u32::from(*byte))
            << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            id.push(ALPHABET[((group >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    id
}

fn temp_dir() -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("ferry-kafka-{}-{nanos}", std::process::id()));
    fs::create_dir(&dir).unwrap_or_else(|err| panic!("could not create {}: {err}", dir.display()));
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
        .unwrap_or_else(|err| panic!("could not restrict {}: {err}", dir.display()));
    dir
}

/// Distinct ports free on 127.0.0.1: every listener is held until all
/// are bound, so no two are the same port.
fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: [TcpListener; N] = std::array::from_fn(|_| {
        TcpListener::bind(("127.0.0.1", 0))
            .unwrap_or_else(|err| panic!("could not find a free port on 127.0.0.1: {err}"))
    });
    listeners.map(|listener| {
        listener
            .local_addr()
            .map(|address| address.port())
            .unwrap_or_else(|err| panic!("a bound listener has no address: {err}"))
    })
}

fn file(path: &Path) -> fs::File {
    fs::File::options()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|err| panic!("could not open {}: {err}", path.display()))
}

/// The last lines of a log, for a failure message.
fn tail(path: &Path) -> String {
    let text =
        fs::read_to_string(path).unwrap_or_else(|err| format!("({}: {err})", path.display()));
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
