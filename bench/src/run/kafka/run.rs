//! A Kafka run: the topic filled once, then each system in turn, each with
//! its own consumer group and fresh rows: its members started, one killed
//! and replaced when `kill_at` comes, the rows watched until every
//! produced record is applied (or the deadline), the members stopped, the
//! rows read back and judged.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::report::kafka::{KafkaReport, SystemReport};
use crate::sources::dist::{KeyDist, KeySampler};
use crate::sources::kafka::consumer::MemberSettings;
use crate::sources::kafka::produce::{self, Produced};
use crate::sources::kafka::rows::Rows;
use crate::sources::kafka::{now_us, System};
use crate::store::Fence;

use super::kill::KillAt;
use super::members::{Launch, Members};
use super::verdict::{self, Verdict};

/// How often the rows are read back whole while a system runs.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// How often the applied count (one sum) is read while a kill waits for
/// its share: a system that applies tens of thousands of records a second
/// crosses a share's window in well under `WATCH_EVERY`.
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// A whole run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The brokers, `host:port`.
    pub bootstrap: String,
    /// The PostgreSQL URL.
    pub store: String,
    /// The store as shown (password hidden).
    pub store_shown: String,
    /// The topic made and filled.
    pub topic: String,
    /// Its partitions.
    pub partitions: i32,
    /// Records produced.
    pub records: u64,
    /// Keys.
    pub keys: u64,
    /// How keys are drawn.
    pub dist: KeyDist,
    /// The producer's seed.
    pub seed: u64,
    /// Members per system.
    pub members: usize,
    /// When one member is killed and replaced, if at all.
    pub kill_at: Option<KillAt>,
    /// Whether writes are fenced.
    pub fence: Fence,
    /// The systems, in order.
    pub systems: Vec<System>,
    /// The parallel-consumer peer's jar.
    pub parallel_consumer_jar: Option<PathBuf>,
    /// Its `--max-concurrency`.
    pub max_concurrency: usize,
    /// The most one system may take.
    pub duration_limit: Duration,
    /// The tables' prefix.
    pub prefix: String,
    /// ferry's shards per member.
    pub shards: usize,
    /// This program, run as each member.
    pub program: PathBuf,
}

/// Makes and fills the topic, then runs each system.
pub fn run(settings: &Settings) -> Result<KafkaReport, String> {
    let rows = Rows::open(&settings.store, &settings.store_shown, &settings.prefix)?;
    let produced = fill_topic(settings)?;
    let mut systems = Vec::new();
    for &system in &settings.systems {
        systems.push(run_system(settings, system, &rows, &produced)?);
    }
    Ok(report(settings, &produced, systems))
}

/// Makes the topic and produces its records.
fn fill_topic(settings: &Settings) -> Result<Produced, String> {
    let sampler = KeySampler::new(settings.dist, settings.keys)?;
    produce::create_topic(&settings.bootstrap, &settings.topic, settings.partitions)?;
    eprintln!(
        "ferry-load: producing {} records over {} keys ({}) to {} ({} partitions)",
        settings.records, settings.keys, settings.dist, settings.topic, settings.partitions
    );
    let produced = produce::produce(
        &settings.bootstrap,
        &settings.topic,
        settings.records,
        &sampler,
        settings.seed,
    )?;
    eprintln!("ferry-load: produced in {:.1?}", produced.took);
    Ok(produced)
}

/// One system, from fresh rows to its verdict.
fn run_system(
    settings: &Settings,
    system: System,
    rows: &Rows,
    produced: &Produced,
) -> Result<SystemReport, String> {
    let Some(launch) = launch(settings, system)? else {
        return Ok(SystemReport::skipped(system, skip_reason(settings)));
    };
    rows.reset(&settings.topic, produced)?;
    eprintln!("ferry-load: {system}: {} members", settings.members);
    let started = Instant::now();
    let mut members = Members::start(launch, settings.members)?;
    let watched = watch(settings, rows, produced, &mut members, started);
    let stopped = members.stop();
    let (finished, elapsed) = watched?;
    stopped?;
    let verdict = verdict::check(produced, &rows.read_back(&settings.topic)?);
    Ok(system_report(system, &members, verdict, finished, elapsed))
}

/// The figures of a system's run.
fn system_report(
    system: System,
    members: &Members,
    verdict: Verdict,
    finished: bool,
    elapsed: Duration,
) -> SystemReport {
    let (lag_p50_us, lag_p99_us, lag_records) = members.lag_figures();
    let elapsed_s = elapsed.as_secs_f64();
    SystemReport {
        system: system.name().to_owned(),
        skipped: None,
        finished,
        elapsed_s,
        records_per_s: verdict.applied as f64 / elapsed_s.max(1e-9),
        lag_p50_us,
        lag_p99_us,
        lag_records,
        rebalances: members.rebalances(),
        kills: members.kills,
        killed_at_applied: members.killed_at,
        verdict,
    }
}

/// The run's report.
fn report(settings: &Settings, produced: &Produced, systems: Vec<SystemReport>) -> KafkaReport {
    KafkaReport {
        command: String::new(),
        topic: settings.topic.clone(),
        partitions: settings.partitions,
        records: produced.total,
        keys: produced.per_key.len(),
        dist: settings.dist.to_string(),
        members: settings.members,
        fence: settings.fence == Fence::On,
        produce_s: produced.took.as_secs_f64(),
        systems,
    }
}

/// Watches the rows until every record is applied or the deadline, with
/// the kill on the way; answers whether it finished, and when.
fn watch(
    settings: &Settings,
    rows: &Rows,
    produced: &Produced,
    members: &mut Members,
    started: Instant,
) -> Result<(bool, Duration), String> {
    let mut kill_at = settings.kill_at;
    let mut read_at = Instant::now();
    loop {
        members.pump(if kill_at.is_some() {
            LOOK_EVERY
        } else {
            WATCH_EVERY
        })?;
        let elapsed = started.elapsed();
        if let Some(at) = kill_at {
            if kill_if_due(at, settings, rows, produced, members, elapsed)? {
                kill_at = None;
            }
        }
        if read_at.elapsed() < WATCH_EVERY {
            continue;
        }
        read_at = Instant::now();
        let read = rows.read_back(&settings.topic)?;
        if verdict::complete(produced, &read) {
            if kill_at.is_some() {
                eprintln!(
                    "ferry-load: every record was applied before the kill came: none was made \
                     (more --records, or an earlier --kill-member-at, widens its window)"
                );
            }
            return Ok((true, elapsed));
        }
        if elapsed >= settings.duration_limit {
            return Ok((false, elapsed));
        }
    }
}

/// Kills and replaces one member if `at` has come and some record is
/// still to be applied; answers whether it did.
fn kill_if_due(
    at: KillAt,
    settings: &Settings,
    rows: &Rows,
    produced: &Produced,
    members: &mut Members,
    elapsed: Duration,
) -> Result<bool, String> {
    let applied = rows.applied(&settings.topic)? as f64 / produced.total.max(1) as f64;
    if !at.due(elapsed, applied) || applied >= 1.0 {
        return Ok(false);
    }
    let killed = members.kill_one()?;
    members.killed_at = Some(applied);
    eprintln!(
        "ferry-load: killed member {killed} at {elapsed:.1?} ({:.0}% applied), started another",
        applied * 100.0
    );
    Ok(true)
}

/// How to start `system`'s members; `None`: it is skipped.
fn launch(settings: &Settings, system: System) -> Result<Option<Launch>, String> {
    let member = MemberSettings {
        index: 0,
        system,
        bootstrap: settings.bootstrap.clone(),
        store: settings.store.clone(),
        topic: settings.topic.clone(),
        group: format!("{}-{system}-{}", settings.prefix, now_us()),
        prefix: settings.prefix.clone(),
        fence: settings.fence,
        shards: settings.shards,
        start_us: now_us(),
    };
    if system != System::ParallelConsumer {
        return Ok(Some(Launch::Ours {
            program: settings.program.clone(),
            settings: member,
        }));
    }
    Ok(settings
        .parallel_consumer_jar
        .as_ref()
        .filter(|jar| jar.is_file())
        .map(|jar| Launch::Java {
            jar: jar.clone(),
            max_concurrency: settings.max_concurrency,
            settings: member,
        }))
}

/// Why parallel-consumer is skipped.
fn skip_reason(settings: &Settings) -> String {
    match &settings.parallel_consumer_jar {
        None => "no --parallel-consumer-jar given".to_owned(),
        Some(jar) => format!(
            "{} is not a file (build the peer with Maven first)",
            jar.display()
        ),
    }
}
