//! A Kafka run's figures: per system its throughput, lag, rebalances,
//! kills and verdict, as a table and as `--json`.

use serde::Serialize;

use crate::report::thousands;
use crate::store::Fence;

use super::children::Members;
use super::produce::Produced;
use super::run::Settings;
use super::verdict::Verdict;
use super::System;

/// One system's figures.
#[derive(Clone, Debug, Serialize)]
pub struct SystemReport {
    /// The system.
    pub system: String,
    /// Why it did not run, if it did not.
    pub skipped: Option<String>,
    /// Whether every produced record was applied before the deadline.
    pub finished: bool,
    /// From its members' start to the end (every record applied, or the
    /// deadline), seconds.
    pub elapsed_s: f64,
    /// Records applied (duplicates included) per second of `elapsed_s`.
    pub records_per_s: f64,
    /// The lag's median, µs: from a record's produce time, or the system's
    /// start if later, to its write's answer.
    pub lag_p50_us: Option<u64>,
    /// The lag's 99th percentile, µs.
    pub lag_p99_us: Option<u64>,
    /// Records the lag figures cover (a killed member's are lost with it).
    pub lag_records: u64,
    /// Rebalance callbacks the members reported (assigned or revoked;
    /// `None` for the Java peer, which does not report them).
    pub rebalances: Option<u64>,
    /// Members killed.
    pub kills: u64,
    /// The share of the records applied (0 to 1) when one was killed.
    pub killed_at_applied: Option<f64>,
    /// What the rows say.
    pub verdict: Verdict,
}

impl SystemReport {
    /// The figures of a system's run.
    pub fn new(
        system: System,
        members: &Members,
        verdict: Verdict,
        finished: bool,
        elapsed: std::time::Duration,
    ) -> SystemReport {
        let (lag_p50_us, lag_p99_us, lag_records) = lag_figures(members);
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

    /// A system that did not run, and why.
    pub fn skipped(system: System, why: String) -> SystemReport {
        SystemReport {
            system: system.name().to_owned(),
            skipped: Some(why),
            finished: false,
            elapsed_s: 0.0,
            records_per_s: 0.0,
            lag_p50_us: None,
            lag_p99_us: None,
            lag_records: 0,
            rebalances: None,
            kills: 0,
            killed_at_applied: None,
            verdict: Verdict::default(),
        }
    }
}

/// Our members' histograms merged; the Java peer's own percentiles, the
/// highest of its members'.
fn lag_figures(members: &Members) -> (Option<u64>, Option<u64>, u64) {
    let peers = members.peer_summaries();
    if !peers.is_empty() {
        let highest = |f: fn(&super::children::PeerSummary) -> f64| {
            peers.iter().map(f).fold(0.0, f64::max) as u64
        };
        let records = peers.iter().map(|p| p.records).sum();
        return (
            Some(highest(|p| p.lag_p50_us)),
            Some(highest(|p| p.lag_p99_us)),
            records,
        );
    }
    let lag = members.lag();
    match lag.len() {
        0 => (None, None, 0),
        n => (
            Some(lag.value_at_quantile(0.5)),
            Some(lag.value_at_quantile(0.99)),
            n,
        ),
    }
}

/// The `--json` document.
#[derive(Clone, Debug, Serialize)]
pub struct KafkaReport {
    /// The command line (the store's password hidden).
    pub command: String,
    /// The topic.
    pub topic: String,
    /// Its partitions.
    pub partitions: i32,
    /// Records produced.
    pub records: u64,
    /// Keys that got records.
    pub keys: usize,
    /// How keys were drawn.
    pub dist: String,
    /// Members per system.
    pub members: usize,
    /// Whether writes were fenced.
    pub fence: bool,
    /// How long producing took, seconds.
    pub produce_s: f64,
    /// Each system's figures.
    pub systems: Vec<SystemReport>,
}

impl KafkaReport {
    /// The run's report.
    pub fn new(
        settings: &Settings,
        produced: &Produced,
        systems: Vec<SystemReport>,
    ) -> KafkaReport {
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

    /// Whether ferry, fenced, applied every record exactly once in order.
    pub fn ferry_failed(&self) -> bool {
        self.fence
            && self.systems.iter().any(|s| {
                s.system == System::Ferry.name() && s.skipped.is_none() && !s.verdict.exact()
            })
    }
}

/// The table. A run stopped by its deadline shows no `lost`: what it
/// had not applied yet is not lost, and its verdict says how far it got.
///
/// ```
/// let table = ferry_bench::sources::kafka::report::table(&[]);
/// assert!(table.starts_with("system"));
/// ```
pub fn table(systems: &[SystemReport]) -> String {
    let mut out = format!(
        "{:<18} {:>9} {:>11} {:>10} {:>10} {:>6} {:>5} {:>8} {:>8} {:>9}  verdict\n",
        "system",
        "records/s",
        "elapsed",
        "lag p50",
        "lag p99",
        "rebal",
        "kills",
        "lost",
        "twice",
        "disorder"
    );
    for s in systems {
        if let Some(why) = &s.skipped {
            out += &format!("{:<18} skipped: {why}\n", s.system);
            continue;
        }
        let v = &s.verdict;
        let verdict = match (v.exact(), s.finished) {
            (true, _) => "exactly once, in order".to_owned(),
            (false, true) => format!("{} keys wrong", thousands(v.keys_wrong)),
            (false, false) => format!(
                "deadline: {} of {} applied",
                thousands(v.applied),
                thousands(v.produced)
            ),
        };
        out += &format!(
            "{:<18} {:>9} {:>10.1}s {:>10} {:>10} {:>6} {:>5} {:>8} {:>8} {:>9}  {verdict}\n",
            s.system,
            thousands(s.records_per_s as u64),
            s.elapsed_s,
            lag(s.lag_p50_us),
            lag(s.lag_p99_us),
            s.rebalances.map_or("-".to_owned(), |n| n.to_string()),
            s.kills,
            match s.finished {
                true => thousands(v.lost),
                false => "-".to_owned(),
            },
            thousands(v.applied_twice),
            thousands(v.out_of_order),
        );
    }
    out
}

fn lag(us: Option<u64>) -> String {
    match us {
        None => "-".to_owned(),
        Some(us) if us >= 1_000_000 => format!("{:.2}s", us as f64 / 1e6),
        Some(us) => format!("{:.1}ms", us as f64 / 1e3),
    }
}
