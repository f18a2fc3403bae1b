//! The Kafka run's verdict, key by key, and its members' lag lines (with
//! the `kafka` feature: no broker needed).
#![cfg(feature = "kafka")]

use std::collections::BTreeMap;

use ferry_bench::run::kafka::verdict::{applied, check, complete};
use ferry_bench::sources::kafka::lines::Line;
use ferry_bench::sources::kafka::produce::{key_name, Produced};
use ferry_bench::sources::kafka::rows::{check_prefix, KeyRow};
use hdrhistogram::Histogram;

/// Three keys of 4, 2 and 5 records.
fn produced() -> Produced {
    Produced {
        per_key: BTreeMap::from([(key_name(1), 4), (key_name(2), 2), (key_name(3), 5)]),
        total: 11,
        ..Default::default()
    }
}

/// A key's row of `applied` records in order, the last of seq `last`.
fn row(applied: u64, last_seq: u64, disorder: u64) -> KeyRow {
    KeyRow {
        applied,
        last_seq,
        disorder,
        last_offset: last_seq as i64,
    }
}

#[test]
fn every_record_once_in_order_is_exact_and_complete() {
    let rows = BTreeMap::from([
        (key_name(1), row(4, 4, 0)),
        (key_name(2), row(2, 2, 0)),
        (key_name(3), row(5, 5, 0)),
    ]);
    let verdict = check(&produced(), &rows);
    assert!(verdict.exact(), "{verdict:?}");
    assert_eq!((verdict.produced, verdict.applied), (11, 11));
    assert_eq!(verdict.keys_wrong, 0);
    assert!(complete(&produced(), &rows));
    assert_eq!(applied(&rows), 11);
}

#[test]
fn a_lost_record_a_duplicate_and_a_missing_key_each_show() {
    let rows = BTreeMap::from([
        // One of key 1's records lost in the middle: its sequence breaks.
        (key_name(1), row(3, 4, 1)),
        // One of key 2's applied twice.
        (key_name(2), row(3, 2, 1)),
        // Key 3 never applied: no row at all.
    ]);
    let verdict = check(&produced(), &rows);
    assert_eq!(verdict.lost, 1 + 5, "{verdict:?}");
    assert_eq!(verdict.applied_twice, 1, "{verdict:?}");
    assert_eq!(verdict.out_of_order, 2, "{verdict:?}");
    assert_eq!(verdict.tail_short, 1, "key 3's last record: {verdict:?}");
    assert_eq!(verdict.keys_wrong, 3, "{verdict:?}");
    assert!(!verdict.exact());
    assert!(!complete(&produced(), &rows), "key 3 is not there yet");
    assert_eq!(applied(&rows), 6);
}

#[test]
fn a_lost_record_and_a_duplicate_of_one_key_do_not_cancel() {
    // As many applied as produced, but the sequence broke once and came
    // back once: the disorder count holds what the count alone hides.
    let rows = BTreeMap::from([
        (key_name(1), row(4, 4, 2)),
        (key_name(2), row(2, 2, 0)),
        (key_name(3), row(5, 5, 0)),
    ]);
    let verdict = check(&produced(), &rows);
    assert_eq!((verdict.lost, verdict.applied_twice), (0, 0));
    assert_eq!(verdict.out_of_order, 2);
    assert_eq!(verdict.keys_wrong, 1);
    assert!(!verdict.exact());
    // Complete all the same: the run may stop and report it.
    assert!(complete(&produced(), &rows));
}

#[test]
fn a_members_lag_line_carries_its_histogram_whole() {
    let mut lag = Histogram::<u64>::new(3).unwrap();
    for micros in [120, 120, 450, 9_000, 9_000, 9_000] {
        lag.record(micros).unwrap();
    }
    let line = Line::lag_of(&lag);
    let read: Line = line.to_string().parse().unwrap();
    assert_eq!(read, line);
    let Line::Lag(pairs) = read else {
        panic!("a lag line reads back as one: {line}");
    };
    let mut merged = Histogram::<u64>::new(3).unwrap();
    Line::add_lag(&pairs, &mut merged);
    Line::add_lag(&pairs, &mut merged);
    assert_eq!(merged.len(), 12, "two members' lines add up");
    assert_eq!(merged.max(), lag.max());
    assert_eq!(merged.value_at_quantile(0.5), lag.value_at_quantile(0.5));
    let failed: Line = Line::Failed("the broker is away".into())
        .to_string()
        .parse()
        .unwrap();
    assert_eq!(failed, Line::Failed("the broker is away".into()));
    assert!("lag 1:x".parse::<Line>().is_err());
}

#[test]
fn a_table_prefix_must_be_a_plain_identifier_of_at_most_40() {
    for good in ["_", "ferry_kafka", "t1", &"a".repeat(40)] {
        assert!(check_prefix(good).is_ok(), "{good}");
    }
    for bad in ["", "1table", "Ferry", "a-b", "a b", &"a".repeat(41)] {
        let err = check_prefix(bad).unwrap_err();
        assert!(err.contains("--table-prefix"), "{err}");
    }
}
