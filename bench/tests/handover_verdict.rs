//! The handover's judging parts, through the public API: the owners' fold
//! (a take, the fence, the runs of seqs a state keeps), a key's state as
//! read back, and the whole-run verdict.

use std::collections::BTreeMap;

use ferry_bench::run::handover::fold::{fold, Fenced, KeyState, Step};
use ferry_bench::run::handover::row::StoredRow;
use ferry_bench::run::handover::verdict;
use ferry_bench::store::Fence;

fn take(epoch: u64) -> Step {
    Step::Take { epoch }
}

fn apply(epoch: u64, seq: u64) -> Step {
    Step::Apply { epoch, seq }
}

#[test]
fn a_take_raises_the_epoch_and_answers_the_last_seq() {
    let fold = fold(Fence::On);
    let mut state = KeyState::default();
    assert_eq!(fold(&mut state, &take(1)), Ok(0));
    assert_eq!(fold(&mut state, &apply(1, 1)), Ok(1));
    assert_eq!(fold(&mut state, &apply(1, 2)), Ok(2));
    assert_eq!(fold(&mut state, &take(2)), Ok(2));
    assert_eq!(fold(&mut state, &take(2)), Ok(2), "again at the same epoch");
    assert_eq!(
        fold(&mut state, &take(1)),
        Err(Fenced { held: 2, epoch: 1 })
    );
    assert_eq!(state.owner_epoch, 2);
}

#[test]
fn the_fence_refuses_a_stale_owner_and_the_control_does_not() {
    let mut state = KeyState::default();
    fold(Fence::On)(&mut state, &take(1)).unwrap();
    fold(Fence::On)(&mut state, &apply(1, 1)).unwrap();
    fold(Fence::On)(&mut state, &take(2)).unwrap();
    let before = state.clone();
    assert_eq!(
        fold(Fence::On)(&mut state, &apply(1, 2)),
        Err(Fenced { held: 2, epoch: 1 })
    );
    assert_eq!(state, before, "a refused input changes nothing");
    // Without the fence the zombie's seq 2 lands after the take, and
    // the new owner, told last_seq 1, applies 2 again.
    let control = fold(Fence::Off);
    assert_eq!(control(&mut state, &apply(1, 2)), Ok(2));
    assert_eq!(control(&mut state, &apply(2, 2)), Ok(2));
    assert_eq!(state.seqs(), vec![1, 2, 2]);
}

#[test]
fn runs_hold_exactly_the_seqs_applied_in_order() {
    let mut state = KeyState::default();
    for seq in [1, 2, 3, 5, 6, 4, 4, 7] {
        state.append(seq);
    }
    assert_eq!(state.applied, vec![[1, 3], [5, 6], [4, 4], [4, 4], [7, 7]]);
    assert_eq!(state.seqs(), vec![1, 2, 3, 5, 6, 4, 4, 7]);
    let json = serde_json::to_string(&state).unwrap();
    assert_eq!(
        json,
        r#"{"owner_epoch":0,"last_seq":0,"applied":[[1,3],[5,6],[4,4],[4,4],[7,7]]}"#
    );
    assert_eq!(serde_json::from_str::<KeyState>(&json).unwrap(), state);
}

#[test]
fn a_take_ranks_before_every_seq() {
    assert!(take(9).rank() < apply(1, 1).rank());
    assert!(apply(1, 1).rank() < apply(1, 2).rank());
}

#[test]
fn a_state_decodes_into_its_seqs() {
    let state = br#"{"owner_epoch":2,"last_seq":5,"applied":[[1,3],[2,2],[5,5]]}"#;
    let row = StoredRow::decode(7, 9, Some(state)).unwrap();
    assert_eq!((row.key, row.version, row.owner_epoch), (7, 9, 2));
    assert_eq!((row.last_seq, row.applied), (5, vec![1, 2, 3, 2, 5]));
    assert!(StoredRow::decode(7, 1, Some(b"12")).is_err());
    assert!(StoredRow::decode(7, 0, None).unwrap().applied.is_empty());
}

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
    let verdict = verdict::check(&rows, &acked(&[(0, &[1, 2, 3, 4]), (1, &[2, 1])]));
    assert_eq!((verdict.applied, verdict.acknowledged), (6, 6));
    assert_eq!(verdict::failures(&verdict, Fence::On), Vec::<String>::new());
    assert_eq!(verdict.anomalies(), 0);
}

#[test]
fn the_unfenced_double_application_is_counted() {
    // The zombie appended 3 and 4 after the new owner took the row at
    // last_seq 2; the new owner then appended 3 again.
    let rows = [row(0, &[1, 2, 3, 4, 3])];
    let verdict = verdict::check(&rows, &acked(&[(0, &[1, 2, 3, 4])]));
    assert_eq!((verdict.applied_twice, verdict.out_of_order), (1, 1));
    assert_eq!(verdict.not_a_prefix, 1);
    assert_eq!(
        verdict::failures(&verdict, Fence::Off),
        Vec::<String>::new()
    );
    assert_eq!(verdict::failures(&verdict, Fence::On).len(), 3);
}

#[test]
fn a_lost_input_fails_either_way_and_a_gap_fails_with_the_fence() {
    let rows = [row(0, &[1, 3])];
    let verdict = verdict::check(&rows, &acked(&[(0, &[1, 2, 3]), (5, &[1])]));
    assert_eq!(verdict.lost, 2, "seq 2 of key 0, and key 5 has no row");
    assert_eq!(verdict.not_a_prefix, 1);
    assert_eq!(verdict::failures(&verdict, Fence::Off).len(), 1);
    assert_eq!(verdict::failures(&verdict, Fence::On).len(), 2);
    let unasked = verdict::check(&[row(0, &[1])], &acked(&[]));
    assert_eq!(unasked.unacknowledged, 1);
    assert!(verdict::failures(&unasked, Fence::On)
        .iter()
        .any(|f| f.contains("no caller")));
}
