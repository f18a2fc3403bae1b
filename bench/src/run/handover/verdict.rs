//! The whole-run checks, on the keys read back (each state's seqs, in the
//! order applied) and the seqs every owner answered ok: nothing
//! acknowledged is missing, nothing is applied twice, each key's seqs
//! strictly increase, and with the fence on each key holds exactly
//! `1..=last_seq` (the invariants `CommittedApplied`,
//! `AppliedOnce`, `AppliedInOrder` and `AppliedIsPrefix` of
//! `formal/Handover.tla`, checked on a real store).

use std::collections::{BTreeMap, HashSet};

pub use crate::report::handover::Verdict;
use crate::store::Fence;

use super::row::StoredRow;

/// Checks `rows` against `acked`, each key's acknowledged seqs.
pub fn check(rows: &[StoredRow], acked: &BTreeMap<u64, Vec<u64>>) -> Verdict {
    let mut verdict = Verdict {
        rows: rows.len() as u64,
        ..Verdict::default()
    };
    let empty = Vec::new();
    for row in rows {
        add_row(&mut verdict, row, acked.get(&row.key).unwrap_or(&empty));
    }
    let stored: HashSet<u64> = rows.iter().map(|row| row.key).collect();
    for (key, seqs) in acked {
        if !stored.contains(key) {
            verdict.acknowledged += seqs.len() as u64;
            verdict.lost += seqs.len() as u64;
        }
    }
    verdict
}

/// Adds one key's figures.
fn add_row(verdict: &mut Verdict, row: &StoredRow, acked: &[u64]) {
    let applied: HashSet<u64> = row.applied.iter().copied().collect();
    let acked_set: HashSet<u64> = acked.iter().copied().collect();
    verdict.applied += row.applied.len() as u64;
    verdict.acknowledged += acked_set.len() as u64;
    verdict.lost += acked_set.difference(&applied).count() as u64;
    verdict.unacknowledged += applied.difference(&acked_set).count() as u64;
    verdict.applied_twice += (row.applied.len() - applied.len()) as u64;
    let decreases = row.applied.windows(2).filter(|pair| pair[1] < pair[0]);
    verdict.out_of_order += decreases.count() as u64;
    let is_prefix = row.applied.iter().copied().eq(1..=row.last_seq);
    if !is_prefix {
        verdict.not_a_prefix += 1;
    }
}

/// The checks of `verdict` that fail the run, as sentences; none means it
/// passed. Without the fence only a lost input fails it: the control is
/// expected to apply seqs twice and out of order.
pub fn failures(verdict: &Verdict, fence: Fence) -> Vec<String> {
    let mut failed = Vec::new();
    if verdict.lost > 0 {
        failed.push(format!(
            "{} acknowledged inputs are not in the store",
            verdict.lost
        ));
    }
    if verdict.acknowledged == 0 {
        failed.push("no input was acknowledged: the run checked nothing".to_string());
    }
    if fence == Fence::Off {
        return failed;
    }
    let counts = [
        (verdict.applied_twice, "seqs were applied twice"),
        (verdict.out_of_order, "seqs were applied out of order"),
        (
            verdict.not_a_prefix,
            "keys do not hold exactly 1..=last_seq",
        ),
        (
            verdict.unacknowledged,
            "seqs are in the store that no caller was told were applied",
        ),
    ];
    for (count, what) in counts {
        if count > 0 {
            failed.push(format!("{count} {what}"));
        }
    }
    failed
}
