//! The verdict of a Kafka run, from the rows read back against what was
//! produced, key by key: lost = produced − applied (when above 0), applied
//! twice = applied − produced (when above 0), out of order = `disorder`.
//! The rows count, they do not list, so a lost record and a duplicate of
//! one key would cancel in `applied`; each also breaks the key's sequence,
//! so `disorder` shows it, and a key whose last record is missing shows
//! in `last_seq` (counted as `tail_short`). Exactly once and in order iff
//! all four are 0.

use std::collections::BTreeMap;

pub use crate::report::kafka::Verdict;
use crate::sources::kafka::produce::Produced;
use crate::sources::kafka::rows::KeyRow;

/// Judges `rows` against `produced`.
///
/// ```
/// use std::collections::BTreeMap;
/// use ferry_bench::run::kafka::verdict;
/// use ferry_bench::sources::kafka::produce::Produced;
/// use ferry_bench::sources::kafka::rows::KeyRow;
///
/// let produced = Produced { per_key: BTreeMap::from([("k000001".into(), 3)]), total: 3, ..Default::default() };
/// let twice = KeyRow { applied: 4, last_seq: 3, disorder: 1, last_offset: 3 };
/// let verdict = verdict::check(&produced, &BTreeMap::from([("k000001".into(), twice)]));
/// assert_eq!((verdict.lost, verdict.applied_twice, verdict.out_of_order), (0, 1, 1));
/// assert!(!verdict.exact());
/// ```
pub fn check(produced: &Produced, rows: &BTreeMap<String, KeyRow>) -> Verdict {
    let mut verdict = Verdict {
        produced: produced.total,
        ..Verdict::default()
    };
    for (key, &count) in &produced.per_key {
        let row = rows.get(key).copied().unwrap_or_default();
        add_key(&mut verdict, count, &row);
    }
    verdict
}

/// Adds one key's figures: `produced` records, `row` read back.
fn add_key(verdict: &mut Verdict, produced: u64, row: &KeyRow) {
    let lost = produced.saturating_sub(row.applied);
    let twice = row.applied.saturating_sub(produced);
    let short = u64::from(row.last_seq != produced);
    verdict.applied += row.applied;
    verdict.lost += lost;
    verdict.applied_twice += twice;
    verdict.out_of_order += row.disorder;
    verdict.tail_short += short;
    verdict.keys_wrong += u64::from(lost + twice + row.disorder + short > 0);
}

/// Whether every key's last produced record is applied, and as many
/// records as produced: the run can stop.
pub fn complete(produced: &Produced, rows: &BTreeMap<String, KeyRow>) -> bool {
    produced.per_key.iter().all(|(key, &count)| {
        rows.get(key)
            .is_some_and(|row| row.last_seq == count && row.applied >= count)
    })
}

/// Records applied so far, duplicates included.
pub fn applied(rows: &BTreeMap<String, KeyRow>) -> u64 {
    rows.values().map(|row| row.applied).sum()
}
