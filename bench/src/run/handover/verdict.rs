//! The whole-run checks, on the keys read back (each state's seqs, in the
//! order applied) and the seqs every owner answered ok: nothing
//! acknowledged is missing, nothing is applied twice, each key's seqs
//! strictly increase, and with the fence on each key holds exactly
//! `1..=last_seq` (the invariants `CommittedApplied`,
//! `AppliedOnce`, `AppliedInOrder` and `AppliedIsPrefix` of
//! `formal/Handover.tla`, checked on a real store).

use std::collections::{BTreeMap, HashSet};

use super::row::StoredRow;
use super::Fence;

/// What the read-back found.
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
    /// Checks `rows` against `acked`, each key's acknowledged seqs.
    pub fn check(rows: &[StoredRow], acked: &BTreeMap<u64, Vec<u64>>) -> Verdict {
        let mut verdict = Verdict {
            rows: rows.len() as u64,
            ..Verdict::default()
        };
        let empty = Vec::new();
        for row in rows {
            verdict.add_row(row, acked.get(&row.key).unwrap_or(&empty));
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

    fn add_row(&mut self, row: &StoredRow, acked: &[u64]) {
        let applied: HashSet<u64> = row.applied.iter().copied().collect();
        let acked_set: HashSet<u64> = acked.iter().copied().collect();
        self.applied += row.applied.len() as u64;
        self.acknowledged += acked_set.len() as u64;
        self.lost += acked_set.difference(&applied).count() as u64;
        self.unacknowledged += applied.difference(&acked_set).count() as u64;
        self.applied_twice += (row.applied.len() - applied.len()) as u64;
        let decreases = row.applied.windows(2).filter(|pair| pair[1] < pair[0]);
        self.out_of_order += decreases.count() as u64;
        let is_prefix = row.applied.iter().copied().eq(1..=row.last_seq);
        if !is_prefix {
            self.not_a_prefix += 1;
        }
    }

    /// The anomalies the control is there to show: seqs applied twice or
    /// out of order.
    pub fn anomalies(&self) -> u64 {
        self.applied_twice + self.out_of_order
    }

    /// The checks that fail the run, as sentences; none means it passed.
    /// Without the fence only a lost input fails it: the control is
    /// expected to apply seqs twice and out of order.
    pub fn failures(&self, fence: Fence) -> Vec<String> {
        let mut failed = Vec::new();
        if self.lost > 0 {
            failed.push(format!(
                "{} acknowledged inputs are not in the store",
                self.lost
            ));
        }
        if self.acknowledged == 0 {
            failed.push("no input was acknowledged: the run checked nothing".to_string());
        }
        if fence == Fence::Off {
            return failed;
        }
        let counts = [
            (self.applied_twice, "seqs were applied twice"),
            (self.out_of_order, "seqs were applied out of order"),
            (self.not_a_prefix, "keys do not hold exactly 1..=last_seq"),
            (
                self.unacknowledged,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: u64, applied: &[u64]) -> StoredRow {
        StoredRow {
            key,
            version: 1,
            owner_epoch: 1,
            last_seq: applied.last().copied().unwrap_or(0),
            applied: applied.to_vec(),
        }
    }

    fn acked(keys: &[(u64, &[u64])]) -> BTreeMap<u64, Vec<u64>> {
        keys.iter()
            .map(|(key, seqs)| (*key, seqs.to_vec()))
            .collect()
    }

    #[test]
    fn a_clean_handover_passes_with_the_fence_on() {
        let rows = [row(0, &[1, 2, 3, 4]), row(1, &[1, 2])];
        let verdict = Verdict::check(&rows, &acked(&[(0, &[1, 2, 3, 4]), (1, &[2, 1])]));
        assert_eq!((verdict.applied, verdict.acknowledged), (6, 6));
        assert_eq!(verdict.failures(Fence::On), Vec::<String>::new());
        assert_eq!(verdict.anomalies(), 0);
    }

    #[test]
    fn the_unfenced_double_application_is_counted() {
        // The zombie appended 3 and 4 after the new owner took the row at
        // last_seq 2; the new owner then appended 3 again.
        let rows = [row(0, &[1, 2, 3, 4, 3])];
        let verdict = Verdict::check(&rows, &acked(&[(0, &[1, 2, 3, 4])]));
        assert_eq!((verdict.applied_twice, verdict.out_of_order), (1, 1));
        assert_eq!(verdict.not_a_prefix, 1);
        assert_eq!(verdict.failures(Fence::Off), Vec::<String>::new());
        assert_eq!(verdict.failures(Fence::On).len(), 3);
    }

    #[test]
    fn a_lost_input_fails_either_way_and_a_gap_fails_with_the_fence() {
        let rows = [row(0, &[1, 3])];
        let verdict = Verdict::check(&rows, &acked(&[(0, &[1, 2, 3]), (5, &[1])]));
        assert_eq!(verdict.lost, 2, "seq 2 of key 0, and key 5 has no row");
        assert_eq!(verdict.not_a_prefix, 1);
        assert_eq!(verdict.failures(Fence::Off).len(), 1);
        assert_eq!(verdict.failures(Fence::On).len(), 2);
        let unasked = Verdict::check(&[row(0, &[1])], &acked(&[]));
        assert_eq!(unasked.unacknowledged, 1);
        assert!(unasked
            .failures(Fence::On)
            .iter()
            .any(|f| f.contains("no caller")));
    }
}
