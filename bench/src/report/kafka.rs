//! What a Kafka run found (`ferry-load --source kafka`), as the run fills
//! it in: per system its throughput, lag, rebalances, kills and verdict,
//! as a table and as `--json`.

use serde::Serialize;

use crate::sources::kafka::System;

use super::thousands;

/// What the rows say, summed over the keys: lost = produced − applied
/// (when above 0), applied twice = applied − produced (when above 0), out
/// of order = the keys' `disorder`, and the keys whose last record is not
/// the last applied (`tail_short`). Exactly once and in order iff all four
/// are 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Records produced.
    pub produced: u64,
    /// Records applied, duplicates included.
    pub applied: u64,
    /// Records produced and not applied (of a run stopped by its
    /// deadline: not reached, or lost).
    pub lost: u64,
    /// Records applied beyond what was produced.
    pub applied_twice: u64,
    /// Records applied out of sequence.
    pub out_of_order: u64,
    /// Keys whose last applied seq is not their last produced one.
    pub tail_short: u64,
    /// Keys with any of the above.
    pub keys_wrong: u64,
}

impl Verdict {
    /// Every record applied exactly once, every key in order.
    ///
    /// ```
    /// use ferry_bench::report::kafka::Verdict;
    ///
    /// assert!(Verdict { produced: 3, applied: 3, ..Verdict::default() }.exact());
    /// assert!(!Verdict { produced: 3, applied: 4, applied_twice: 1, ..Verdict::default() }.exact());
    /// ```
    pub fn exact(&self) -> bool {
        self.lost + self.applied_twice + self.out_of_order + self.tail_short == 0
    }
}

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
/// let table = ferry_bench::report::kafka::table(&[]);
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
        out += &match &s.skipped {
            Some(why) => format!("{:<18} skipped: {why}\n", s.system),
            None => row(s),
        };
    }
    out
}

/// The table's row of a system that ran.
fn row(s: &SystemReport) -> String {
    let v = &s.verdict;
    format!(
        "{:<18} {:>9} {:>10.1}s {:>10} {:>10} {:>6} {:>5} {:>8} {:>8} {:>9}  {}\n",
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
        verdict_cell(s),
    )
}

/// The verdict column: exact, how many keys are wrong, or how far a run
/// stopped by its deadline got.
fn verdict_cell(s: &SystemReport) -> String {
    let v = &s.verdict;
    match (v.exact(), s.finished) {
        (true, _) => "exactly once, in order".to_owned(),
        (false, true) => format!("{} keys wrong", thousands(v.keys_wrong)),
        (false, false) => format!(
            "deadline: {} of {} applied",
            thousands(v.applied),
            thousands(v.produced)
        ),
    }
}

fn lag(us: Option<u64>) -> String {
    match us {
        None => "-".to_owned(),
        Some(us) if us >= 1_000_000 => format!("{:.2}s", us as f64 / 1e6),
        Some(us) => format!("{:.1}ms", us as f64 / 1e3),
    }
}
