//! A private Apache Kafka broker: one KRaft node (broker and controller in
//! one process) in a temporary directory, listening on 127.0.0.1 only, at
//! ports that were free. Its jars come from Maven Central through
//! `.ci/kafka-jars`; missing jars or a missing `java` are an error with
//! the command that fixes it.
//!
//! The broker runs under a small shell script that also watches this
//! process: when it exits, however it exits (even killed), the script
//! stops the broker and removes its directory. Dropping the [`Private`]
//! does the same at once. Starting takes about 10 s: 4 s to format the
//! storage, 5 s until the broker serves. Whether it serves is asked in
//! Kafka's own protocol (an `ApiVersions` request), so no client library
//! is needed here.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::dir::{free_ports, log_file, read_log, tail, TempDir};
use super::process::{signal, STOP_WITHIN};
use super::{Private, Server};

/// The Kafka release the jars are of (as in `.ci/kafka-jars`).
pub const KAFKA_VERSION: &str = "4.1.1";

/// How long the broker may take to serve once started.
const READY_WITHIN: Duration = Duration::from_secs(90);

/// What fetches the jars.
const FETCH: &str = ".ci/kafka-jars";

/// A broker's files in its directory.
struct Files {
    properties: PathBuf,
    log4j: PathBuf,
    /// What the broker logs (through log4j).
    log: PathBuf,
    /// What it prints.
    out: PathBuf,
    /// Its pid, written by the watching script.
    pid: PathBuf,
}

/// A private Kafka broker; its [`Private::url`] is the bootstrap address,
/// `127.0.0.1:PORT`.
pub fn broker() -> Result<Private, String> {
    let started = Instant::now();
    let libs = libs_dir()?;
    let java = java()?;
    let dir = TempDir::new("kafka")?;
    let [port, controller_port] = free_ports()?;
    let files = write_config(dir.path(), port, controller_port)?;
    let class_path = format!("{}/*", libs.display());
    format_storage(&java, &class_path, &files, dir.path())?;
    let child = watch(&java, &class_path, &files, dir.path())?;
    let watch = Watch {
        child,
        log: files.log.clone(),
        pid: files.pid.clone(),
    };
    let address = format!("127.0.0.1:{port}");
    wait_until_ready(&files, port, started)?;
    Ok(Private {
        server: Server::Watched(watch),
        dir,
        url: address.clone(),
        restart_command: None,
        what: format!("Kafka {KAFKA_VERSION} broker"),
        address,
    })
}

/// The watching script that runs the broker; stopped (and with it the
/// broker, and the directory removed) when dropped.
pub struct Watch {
    child: Child,
    /// The broker's log.
    pub log: PathBuf,
    pid: PathBuf,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        signal(self.child.id(), libc::SIGTERM);
        let asked = Instant::now();
        while asked.elapsed() < STOP_WITHIN {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("the Kafka broker did not stop within {STOP_WITHIN:?}; killing it");
        if let Some(pid) = std::fs::read_to_string(&self.pid)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            signal(pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the broker's `server.properties` and `log4j2.properties` into
/// `dir`.
fn write_config(dir: &Path, port: u16, controller_port: u16) -> Result<Files, String> {
    let files = Files {
        properties: dir.join("server.properties"),
        log4j: dir.join("log4j2.properties"),
        log: dir.join("broker.log"),
        out: dir.join("broker.out"),
        pid: dir.join("broker.pid"),
    };
    let properties = server_properties(port, controller_port, &dir.join("data"));
    std::fs::write(&files.properties, properties)
        .map_err(|err| format!("could not write {}: {err}", files.properties.display()))?;
    std::fs::write(&files.log4j, log4j_properties(&files.log))
        .map_err(|err| format!("could not write {}: {err}", files.log4j.display()))?;
    Ok(files)
}

/// Formats the broker's storage (`kafka.tools.StorageTool format`).
fn format_storage(java: &Path, class_path: &str, files: &Files, dir: &Path) -> Result<(), String> {
    let log = dir.join("format.log");
    let formatted = Command::new(java)
        .args(["-Xmx256m", "-cp", class_path])
        .args(["kafka.tools.StorageTool", "format"])
        // `=` joins the id to its flag: an id may begin with `-`, which
        // the tool's parser would otherwise take for a flag of its own.
        .arg(format!("--cluster-id={}", cluster_id()))
        .arg("--config")
        .arg(&files.properties)
        .stdin(Stdio::null())
        .stdout(log_file(&log)?)
        .stderr(log_file(&log)?)
        .status()
        .map_err(|err| format!("could not run {}: {err}", java.display()))?;
    if !formatted.success() {
        return Err(format!(
            "formatting the Kafka broker's storage failed ({formatted}):\n{}",
            tail(&log)
        ));
    }
    Ok(())
}

/// Starts the script that runs the broker and stops it (and removes
/// `dir`) once this process is gone or the script is told to stop.
fn watch(java: &Path, class_path: &str, files: &Files, dir: &Path) -> Result<Child, String> {
    let script = format!(
        r#"'{java}' -Xmx512m -Dlog4j2.configurationFile='{log4j}' -cp '{class_path}' kafka.Kafka '{properties}' >'{out}' 2>&1 &
broker=$!
echo $broker >'{pid}'
trap 'kill $broker 2>/dev/null; wait $broker; rm -rf "{dir}"' EXIT
trap 'exit 0' TERM INT
while kill -0 {owner} 2>/dev/null && kill -0 $broker 2>/dev/null; do sleep 0.5; done
"#,
        java = java.display(),
        log4j = files.log4j.display(),
        properties = files.properties.display(),
        out = files.out.display(),
        pid = files.pid.display(),
        dir = dir.display(),
        owner = std::process::id(),
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|err| format!("could not start sh to run the Kafka broker: {err}"))
}

/// Waits until the broker says it started and answers a request; an
/// error with its log's end otherwise.
fn wait_until_ready(files: &Files, port: u16, started: Instant) -> Result<(), String> {
    loop {
        if read_log(&files.log).contains("Kafka Server started") && answers(port) {
            return Ok(());
        }
        if started.elapsed() > READY_WITHIN {
            return Err(format!(
                "the Kafka broker did not serve within {READY_WITHIN:?}; its log ends:\n{}\n{}",
                tail(&files.log),
                tail(&files.out)
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether the broker at `port` answers an `ApiVersions` request (version
/// 0: every broker answers it, if only to name the versions it takes).
fn answers(port: u16) -> bool {
    const CORRELATION: i32 = 7;
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let client = b"ferry";
    let mut request = Vec::new();
    request.extend_from_slice(&18i16.to_be_bytes()); // ApiVersions
    request.extend_from_slice(&0i16.to_be_bytes()); // version 0
    request.extend_from_slice(&CORRELATION.to_be_bytes());
    request.extend_from_slice(&(client.len() as i16).to_be_bytes());
    request.extend_from_slice(client);
    let mut framed = (request.len() as i32).to_be_bytes().to_vec();
    framed.extend_from_slice(&request);
    if stream.write_all(&framed).is_err() {
        return false;
    }
    // The answer: its length, then the correlation id it echoes.
    let mut head = [0u8; 8];
    let answered = stream.read_exact(&mut head).is_ok()
        && i32::from_be_bytes([head[4], head[5], head[6], head[7]]) == CORRELATION;
    let _ = stream.shutdown(Shutdown::Both);
    answered
}

/// Where `.ci/kafka-jars` put the jars (`FERRY_KAFKA_LIBS`, else its
/// default); an error with the command to run if they are not there.
fn libs_dir() -> Result<PathBuf, String> {
    let libs = match std::env::var_os("FERRY_KAFKA_LIBS") {
        Some(libs) => PathBuf::from(libs),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
                .ok_or("neither XDG_CACHE_HOME nor HOME is set: set FERRY_KAFKA_LIBS to the Kafka jars' folder")?;
            cache.join(format!("ferry/kafka-{KAFKA_VERSION}/libs"))
        }
    };
    if !libs.join(".complete").exists() {
        return Err(format!(
            "the Kafka {KAFKA_VERSION} broker's jars are not in {}: run {FETCH} (needs Java 17 and \
             Maven; at the repository's root), or give a broker with --kafka-bootstrap",
            libs.display()
        ));
    }
    Ok(libs)
}

/// The `java` to run the broker with: `$JAVA_HOME/bin/java`, else the one
/// on `$PATH`; an error with what to install if there is none.
fn java() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::var_os("JAVA_HOME")
        .map(|home| Path::new(&home).join("bin/java"))
        .into_iter()
        .chain(std::env::split_paths(&path).map(|dir| dir.join("java")))
        .find(|java| java.is_file())
        .ok_or_else(|| {
            format!(
                "java was not found ($JAVA_HOME/bin or $PATH): the Kafka broker needs Java 17 or \
                 later: `apt-get install -y openjdk-17-jre-headless`, then {FETCH} for its jars"
            )
        })
}

/// One node, broker and controller, on 127.0.0.1, every internal topic
/// with one replica.
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

/// The broker's logging: everything from `info` up, into `log`.
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

/// A cluster id: 16 bytes in unpadded URL-safe base64 (22 characters), as
/// Kafka writes its UUIDs; from the time and this process's id, unique
/// enough for a private broker.
fn cluster_id() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let mut state = nanos as u64 ^ (u64::from(std::process::id()) << 32);
    let mut next = || {
        // splitmix64.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let bits = (u128::from(next()) << 64) | u128::from(next());
    // 22 characters of 6 bits cover 132 bits: the 128, then 4 zero bits.
    (0..22i32)
        .map(|i| {
            let shift = 128 - 6 * (i + 1);
            let index = if shift >= 0 {
                (bits >> shift) & 63
            } else {
                (bits << -shift) & 63
            };
            char::from(ALPHABET[index as usize])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_id_is_22_characters_of_url_safe_base64() {
        let id = cluster_id();
        assert_eq!(id.len(), 22, "{id}");
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{id}"
        );
        // The last character carries 2 bits and 4 zeros: A, Q, g or w.
        assert!(
            matches!(id.as_bytes()[21], b'A' | b'Q' | b'g' | b'w'),
            "{id}"
        );
    }
}
