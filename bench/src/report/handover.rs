//! What a handover run found (`ferry-load handover`), as the run fills
//! it in, and as text: each move, the whole run, the read-back and the
//! verdict.

use std::time::Duration;

use ferry::entity::StoreStats;

use crate::store::Fence;

use super::thousands;

/// A move's number in the run, from 1.
pub type MoveId = u32;

/// What the stale owner's callers got, from the move on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallerOutcomes {
    /// Inputs submitted and not yet answered when the move happened.
    pub in_flight_at_move: u64,
    /// Answered ok after the move.
    pub ok: u64,
    /// Answered `Refused(Fenced)` (all of them come after the move).
    pub fenced: u64,
    /// Answered any other error.
    pub failed: u64,
}

/// An owner's figures read at one moment: what its engine's shards did at
/// the store (the library's counts) and what its fold refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnerCounts {
    /// Read requests (each for many keys).
    pub reads: u64,
    /// Write requests (each for many keys).
    pub writes: u64,
    /// Keys' writes that found the key written by somebody else (a take,
    /// or the other owner's write): read again and folded anew.
    pub conflicts: u64,
    /// Keys' writes whose reply was lost (then looked for).
    pub lost: u64,
    /// Inputs answered `Refused(Fenced)`.
    pub fenced: u64,
}

impl OwnerCounts {
    /// The library's `store` counts, and `fenced` refusals.
    pub fn of(store: &StoreStats, fenced: u64) -> OwnerCounts {
        OwnerCounts {
            reads: store.reads,
            writes: store.writes,
            conflicts: store.conflicts,
            lost: store.lost,
            fenced,
        }
    }

    /// What was counted between `earlier` and `self`.
    pub fn since(&self, earlier: &OwnerCounts) -> OwnerCounts {
        OwnerCounts {
            reads: self.reads - earlier.reads,
            writes: self.writes - earlier.writes,
            conflicts: self.conflicts - earlier.conflicts,
            lost: self.lost - earlier.lost,
            fenced: self.fenced - earlier.fenced,
        }
    }

    /// Both added.
    pub fn plus(&self, other: &OwnerCounts) -> OwnerCounts {
        OwnerCounts {
            reads: self.reads + other.reads,
            writes: self.writes + other.writes,
            conflicts: self.conflicts + other.conflicts,
            lost: self.lost + other.lost,
            fenced: self.fenced + other.fenced,
        }
    }
}

/// One move, as the owners reported it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MoveReport {
    /// From 1.
    pub id: MoveId,
    /// When it was due, from the start of the run.
    pub due: Duration,
    /// When it began: later than due when the coordinator did not get the
    /// CPU in time, or the previous move's revoke took that long.
    pub at: Duration,
    /// The old owner.
    pub from: usize,
    /// The new owner.
    pub to: usize,
    /// The keys moved.
    pub keys: Vec<u64>,
    /// The keys the new owner took (it reported `took`).
    pub taken: usize,
    /// Takes the new owner submitted again, the library having given up
    /// on them while the old owner kept writing their keys.
    pub take_resubmits: u64,
    /// What the old owner's callers got, from the move on.
    pub callers: CallerOutcomes,
    /// The old owner's counts over the move (its conflicts and fences).
    pub old_owner: OwnerCounts,
    /// Per moved key the new owner served, microseconds from its
    /// assignment to its first input answered ok.
    pub served_us: Vec<u64>,
    /// Whether the old owner's revoke was reported.
    pub revoked: bool,
}

/// What the read-back found, over every key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Keys read back.
    pub rows: u64,
    /// Seqs in the store, counting each time it was appended.
    pub applied: u64,
    /// Distinct seqs answered ok to some caller.
    pub acknowledged: u64,
    /// Acknowledged, and not in the store.
    pub lost: u64,
    /// Appends of a seq already appended before.
    pub applied_twice: u64,
    /// Places where a key's seq is lower than the one appended before it.
    pub out_of_order: u64,
    /// Keys whose seqs are not exactly `1, 2, …, last_seq`, in that order
    /// (a gap, a repeat, or a `last_seq` that is not the highest seq).
    pub not_a_prefix: u64,
    /// In the store, and never answered ok to anyone.
    pub unacknowledged: u64,
}

impl Verdict {
    /// The anomalies the control is there to show: seqs applied twice or
    /// out of order.
    pub fn anomalies(&self) -> u64 {
        self.applied_twice + self.out_of_order
    }
}

/// What a handover run found.
#[derive(Clone, Debug)]
pub struct HandoverReport {
    /// Whether the fold refused an input of another owner epoch.
    pub fence: Fence,
    /// From a new owner's assignment to the old owner's revoke.
    pub lag: Duration,
    /// Each move.
    pub moves: Vec<MoveReport>,
    /// Every owner's counts, added.
    pub counts: OwnerCounts,
    /// The read-back.
    pub verdict: Verdict,
    /// The checks that failed, as sentences; none: the run passed.
    pub failures: Vec<String>,
}

/// The report, every line, ending with the verdict.
pub fn text(report: &HandoverReport) -> String {
    let mut text = String::new();
    for record in &report.moves {
        text += &move_lines(record);
    }
    text += &whole_run_line(report);
    text += &read_back_line(&report.verdict);
    text + &verdict_line(report) + "\n"
}

/// Whether the run passed: with the fence, every check; without it (the
/// control), nothing acknowledged lost.
pub fn passed(report: &HandoverReport) -> bool {
    report.failures.is_empty()
}

fn move_lines(record: &MoveReport) -> String {
    let callers = &record.callers;
    let old = &record.old_owner;
    format!(
        "move {} at {:.2} s{}: {} keys, owner {} to owner {}\n  \
         old owner at the move: {} inputs in flight; its callers then got {} ok, {} Refused(Fenced), {} other errors\n  \
         old owner over the move: {} writes found their key moved on (read again, folded anew), {} inputs refused Fenced\n  \
         new owner took {} keys{}, {}\n",
        record.id,
        record.at.as_secs_f64(),
        late_note(record),
        record.keys.len(),
        record.from,
        record.to,
        callers.in_flight_at_move,
        callers.ok,
        callers.fenced,
        callers.failed,
        old.conflicts,
        old.fenced,
        record.taken,
        resubmitted_note(record),
        served_note(record),
    )
}

/// How soon the new owner served the moved keys.
fn served_note(record: &MoveReport) -> String {
    match (record.served_us.iter().min(), record.served_us.iter().max()) {
        (Some(first), Some(last)) => format!(
            "served {} of them {}–{} ms after the assignment",
            record.served_us.len(),
            millis(*first),
            millis(*last)
        ),
        _ => "served none of them".to_string(),
    }
}

/// Takes submitted again, if any.
fn resubmitted_note(record: &MoveReport) -> String {
    match record.take_resubmits {
        0 => String::new(),
        n => format!(" ({n} takes submitted again, the library having given up on them)"),
    }
}

/// When the move was due, if it began noticeably later.
fn late_note(record: &MoveReport) -> String {
    let late = record.at.saturating_sub(record.due);
    if late > Duration::from_millis(10) {
        format!(" (due at {:.2} s)", record.due.as_secs_f64())
    } else {
        String::new()
    }
}

fn whole_run_line(report: &HandoverReport) -> String {
    let counts = &report.counts;
    let verdict = &report.verdict;
    format!(
        "whole run: {} inputs acknowledged, {} in the store; {} write and {} read requests, {} conflicts, {} lost replies, {} inputs refused Fenced\n",
        thousands(verdict.acknowledged),
        thousands(verdict.applied),
        thousands(counts.writes),
        thousands(counts.reads),
        thousands(counts.conflicts),
        thousands(counts.lost),
        thousands(counts.fenced),
    )
}

fn read_back_line(verdict: &Verdict) -> String {
    format!(
        "read back: {} keys; {} lost, {} applied twice, {} out of order, {} keys not exactly 1..=last_seq, {} applied but never acknowledged\n",
        verdict.rows,
        thousands(verdict.lost),
        thousands(verdict.applied_twice),
        thousands(verdict.out_of_order),
        verdict.not_a_prefix,
        thousands(verdict.unacknowledged),
    )
}

fn verdict_line(report: &HandoverReport) -> String {
    let verdict = &report.verdict;
    let passed = report.failures.is_empty();
    match report.fence {
        Fence::On if passed => {
            "verdict: PASSED: nothing lost, nothing applied twice, every key exactly 1..=last_seq in order".to_string()
        }
        Fence::Off if passed && verdict.anomalies() > 0 => format!(
            "verdict (control, no fence): the read-back shows what the fence prevents: {} seqs applied twice, {} out of order, {} keys not 1..=last_seq",
            thousands(verdict.applied_twice),
            thousands(verdict.out_of_order),
            verdict.not_a_prefix
        ),
        Fence::Off if passed && report.lag.is_zero() => {
            "verdict (control, no fence): no anomaly, as a graceful handover (revoke, flush, then assign) needs no fence; the fence is for an old owner not told in time (--handover-lag above 0)".to_string()
        }
        Fence::Off if passed => {
            "verdict (control, no fence): NO ANOMALY APPEARED: this run did not show what the fence is for; raise --handover-lag or --moves".to_string()
        }
        _ => format!("verdict: FAILED: {}", report.failures.join("; ")),
    }
}

fn millis(micros: u64) -> String {
    format!("{:.1}", micros as f64 / 1000.0)
}
