//! The handover run as text: what was run, each move, the whole run, the
//! read-back and the verdict.

use std::time::Duration;

use crate::base::duration::format_duration;
use crate::report::thousands;

use super::coordinator::{HandoverReport, MoveReport, Settings};
use super::Fence;

/// One line saying what is run.
pub fn describe(settings: &Settings) -> String {
    let fence = match settings.fence {
        Fence::On => "fence on (the fold refuses an input of another owner epoch than the key's)",
        Fence::Off => "NO FENCE (the fold ignores the owner epoch; the control)",
    };
    let order = if settings.lag.is_zero() {
        "revoke, flush, then assign".to_string()
    } else {
        format!(
            "assign, then revoke {} later",
            format_duration(settings.lag)
        )
    };
    format!(
        "handover: {} owners of {} shards, {} keys, {} moves in {} ({order}), {} outstanding per key, {fence}, store {}",
        settings.instances,
        settings.shards,
        settings.keys,
        settings.moves,
        format_duration(settings.duration),
        settings.outstanding_per_key,
        settings.store,
    )
}

/// The report, every line, ending with the verdict.
pub fn text(report: &HandoverReport) -> String {
    let mut text = String::new();
    for record in &report.moves {
        text += &move_lines(record);
    }
    let counts = &report.counts;
    let verdict = &report.verdict;
    text += &format!(
        "whole run: {} inputs acknowledged, {} in the store; {} write and {} read requests, {} conflicts, {} lost replies, {} inputs refused Fenced\n",
        thousands(verdict.acknowledged),
        thousands(verdict.applied),
        thousands(counts.writes),
        thousands(counts.reads),
        thousands(counts.conflicts),
        thousands(counts.lost),
        thousands(counts.fenced),
    );
    text += &format!(
        "read back: {} keys; {} lost, {} applied twice, {} out of order, {} keys not exactly 1..=last_seq, {} applied but never acknowledged\n",
        verdict.rows,
        thousands(verdict.lost),
        thousands(verdict.applied_twice),
        thousands(verdict.out_of_order),
        verdict.not_a_prefix,
        thousands(verdict.unacknowledged),
    );
    text + &verdict_line(report) + "\n"
}

/// Whether the run passed: with the fence, every check; without it (the
/// control), nothing acknowledged lost.
pub fn passed(report: &HandoverReport) -> bool {
    report.verdict.failures(report.settings.fence).is_empty()
}

fn move_lines(record: &MoveReport) -> String {
    let callers = &record.callers;
    let old = &record.old_owner;
    let served = match (record.served_us.iter().min(), record.served_us.iter().max()) {
        (Some(first), Some(last)) => format!(
            "served {} of them {}–{} ms after the assignment",
            record.served_us.len(),
            millis(*first),
            millis(*last)
        ),
        _ => "served none of them".to_string(),
    };
    let resubmitted = match record.take_resubmits {
        0 => String::new(),
        n => format!(" ({n} takes submitted again, the library having given up on them)"),
    };
    let late = record.at.saturating_sub(record.due);
    let due = if late > Duration::from_millis(10) {
        format!(" (due at {:.2} s)", record.due.as_secs_f64())
    } else {
        String::new()
    };
    format!(
        "move {} at {:.2} s{due}: {} keys, owner {} to owner {}\n  \
         old owner at the move: {} inputs in flight; its callers then got {} ok, {} Refused(Fenced), {} other errors\n  \
         old owner over the move: {} writes found their key moved on (read again, folded anew), {} inputs refused Fenced\n  \
         new owner took {} keys{resubmitted}, {served}\n",
        record.id,
        record.at.as_secs_f64(),
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
    )
}

fn verdict_line(report: &HandoverReport) -> String {
    let verdict = &report.verdict;
    let failures = verdict.failures(report.settings.fence);
    match report.settings.fence {
        Fence::On if failures.is_empty() => {
            "verdict: PASSED: nothing lost, nothing applied twice, every key exactly 1..=last_seq in order".to_string()
        }
        Fence::Off if failures.is_empty() && verdict.anomalies() > 0 => format!(
            "verdict (control, no fence): the read-back shows what the fence prevents: {} seqs applied twice, {} out of order, {} keys not 1..=last_seq",
            thousands(verdict.applied_twice),
            thousands(verdict.out_of_order),
            verdict.not_a_prefix
        ),
        Fence::Off if failures.is_empty() && report.settings.lag.is_zero() => {
            "verdict (control, no fence): no anomaly, as a graceful handover (revoke, flush, then assign) needs no fence; the fence is for an old owner not told in time (--handover-lag above 0)".to_string()
        }
        Fence::Off if failures.is_empty() => {
            "verdict (control, no fence): NO ANOMALY APPEARED: this run did not show what the fence is for; raise --handover-lag or --moves".to_string()
        }
        _ => format!("verdict: FAILED: {}", failures.join("; ")),
    }
}

fn millis(micros: u64) -> String {
    format!("{:.1}", micros as f64 / 1000.0)
}
