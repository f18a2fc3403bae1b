//! The simulated store: a batch applies its inputs, answers come no sooner than a round trip, racing batches conflict and retry.

use std::time::{Duration, Instant};

use ferry_bench::store::sim::*;
use ferry_bench::store::{Contents, StoreError};
use futures::executor::block_on;

#[test]
fn a_batch_applies_its_inputs_and_answers_the_version_it_started_from() {
    let store = SimStore::start(4, Duration::ZERO).unwrap();
    assert_eq!(block_on(store.apply(2, 5, 15)), Ok(0));
    assert_eq!(block_on(store.apply(2, 3, 6)), Ok(5));
    assert_eq!(block_on(store.read(2)), Ok(8));
    assert_eq!(store.contents(), Contents { inputs: 8, sum: 21 });
    assert_eq!(store.conflicts(), 0);
}

#[test]
fn unkeyed_batches_overlap_without_conflicts_and_get_distinct_positions() {
    for rtt in [Duration::ZERO, Duration::from_micros(100)] {
        let store = SimStore::start(1, rtt).unwrap();
        let batches = (0..8).map(|_| store.apply_unkeyed(3, 1));
        let starts = block_on(futures::future::join_all(batches));
        let mut starts: Vec<u64> = starts.into_iter().map(Result::unwrap).collect();
        starts.sort_unstable();
        assert_eq!(starts, vec![0, 3, 6, 9, 12, 15, 18, 21], "rtt {rtt:?}");
        assert_eq!(store.contents(), Contents { inputs: 24, sum: 8 });
        assert_eq!(store.conflicts(), 0);
        store.stop();
    }
}

#[test]
fn two_overlapping_writes_from_one_version_conflict_once() {
    for rtt in [Duration::ZERO, Duration::from_micros(200)] {
        let store = SimStore::start(1, rtt).unwrap();
        // Two batches of key 0 both read version 0 ...
        let first = block_on(store.read(0)).unwrap();
        let second = block_on(store.read(0)).unwrap();
        assert_eq!((first, second), (0, 0));
        // ... and both write on that condition: one wins, one conflicts.
        let (a, b) = block_on(futures::future::join(
            store.write(0, first, 1, 10),
            store.write(0, second, 1, 20),
        ));
        assert_eq!(a, Ok(1));
        assert_eq!(
            b,
            Err(StoreError::Conflict {
                key: 0,
                expected: 0,
                current: 1
            })
        );
        assert_eq!(store.conflicts(), 1, "rtt {rtt:?}");
        // Only the write that won added its value.
        assert_eq!(store.contents(), Contents { inputs: 1, sum: 10 });
        store.stop();
    }
}

#[test]
fn racing_batches_retry_until_every_input_is_applied() {
    let store = SimStore::start(1, Duration::from_micros(100)).unwrap();
    let batches = (0..8).map(|_| store.apply(0, 2, 5));
    let versions = block_on(futures::future::join_all(batches));
    let mut starts: Vec<u64> = versions.into_iter().map(Result::unwrap).collect();
    starts.sort_unstable();
    assert_eq!(starts, vec![0, 2, 4, 6, 8, 10, 12, 14]);
    assert_eq!(
        store.contents(),
        Contents {
            inputs: 16,
            sum: 40
        }
    );
    assert!(store.conflicts() >= 7, "all eight read version 0 at first");
    store.stop();
}

#[test]
fn answers_come_back_no_sooner_than_one_rtt_after_they_were_sent() {
    let rtt = Duration::from_millis(2);
    let store = SimStore::start(1, rtt).unwrap();
    for _ in 0..20 {
        let sent = Instant::now();
        block_on(store.read(0)).unwrap();
        let took = sent.elapsed();
        // Only the lower bound is the store's to keep: how late an
        // answer comes depends on what else the machine runs (the
        // lateness it records goes into the report, not into a test).
        assert!(took >= rtt, "answered early: {took:?}");
    }
    assert_eq!(store.take_lateness().len(), 20);
    assert_eq!(store.take_lateness().len(), 0);
    store.stop();
    assert_eq!(block_on(store.read(0)), Err(StoreError::Stopped));
}

#[test]
fn a_trip_writes_each_key_from_its_own_version() {
    let store = SimStore::start(8, Duration::ZERO).unwrap();
    assert_eq!(block_on(store.apply(5, 2, 2)), Ok(0));
    let writes = [(1, 3, 30), (5, 1, 7), (7, 4, 4)]
        .map(|(key, count, sum)| ferry_bench::store::Write { key, count, sum });
    let started = block_on(store.apply_many(writes.to_vec()));
    assert_eq!(started, vec![Ok(0), Ok(2), Ok(0)]);
    assert_eq!(block_on(store.read(5)), Ok(3));
    assert_eq!(block_on(store.read(7)), Ok(4));
    assert_eq!(
        store.contents(),
        Contents {
            inputs: 10,
            sum: 43
        }
    );
    assert_eq!(store.conflicts(), 0);
}

#[test]
fn the_stream_is_read_and_appended_to_at_positions_of_its_own() {
    let store = SimStore::start(1, Duration::ZERO).unwrap();
    assert_eq!(block_on(store.read_stream()), Ok(0));
    assert_eq!(block_on(store.append(4, 10)), Ok(0));
    assert_eq!(block_on(store.append(2, 1)), Ok(4));
    assert_eq!(block_on(store.read_stream()), Ok(6));
    assert_eq!(store.contents(), Contents { inputs: 6, sum: 11 });
}

#[test]
fn the_key_cost_is_kept_and_a_slowdown_lengthens_round_trips_inside_its_window() {
    let rtt = Duration::from_millis(1);
    let store = SimStore::start(2, rtt).unwrap();
    assert_eq!(store.key_cost(), Duration::ZERO);
    store.set_key_cost(Duration::from_micros(3));
    assert_eq!(store.key_cost(), Duration::from_micros(3));
    store.set_key_cost(Duration::ZERO);
    // Twenty times as long for the next second: a batch's two round trips
    // take at least 40 ms (a lower bound only: a busy machine is slower).
    let now = Instant::now();
    store.slow_down(now, now + Duration::from_secs(1), 20);
    let sent = Instant::now();
    assert_eq!(block_on(store.apply(0, 1, 1)), Ok(0));
    assert!(sent.elapsed() >= 40 * rtt, "{:?}", sent.elapsed());
    // A window already over slows nothing: the batch is answered, and its
    // version follows.
    store.slow_down(now, now, 20);
    assert_eq!(block_on(store.apply(0, 1, 1)), Ok(1));
    store.stop();
}
