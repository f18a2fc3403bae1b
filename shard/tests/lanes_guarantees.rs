//! One readable test per promise of `Lanes`, named after it (G1–G10 and
//! the terms of docs/guarantees.md).
//!
//! Time is in microseconds since an arbitrary origin; items are small numbers
//! (or `(key, number)` pairs) so that each batch reads as what was sent.

use std::time::Duration;

use ferry_shard::parts::{LaneState, Lanes};
use ferry_shard::{QueueConfig, Refused};

fn us(micros: u64) -> Duration {
    Duration::from_micros(micros)
}

fn config() -> QueueConfig {
    QueueConfig::default()
}

/// Admits `item` for `key` with rank 0 and weight 1, and expects it admitted.
fn admit<K: std::hash::Hash + Eq + Clone, T: std::fmt::Debug>(
    lanes: &mut Lanes<K, T>,
    key: K,
    item: T,
    now: Duration,
) {
    lanes.admit(key, item, 0, 1, now).expect("admitted");
}

#[test]
fn g1_one_batch_in_flight_per_key() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 2,
        ..config()
    });
    for item in 1..=3 {
        admit(&mut lanes, "a", item, us(0));
    }
    let first = lanes.take(us(0)).expect("a is ready");
    assert_eq!(first.items, [1, 2]);
    assert_eq!(lanes.lane_state(&"a"), Some(LaneState::Busy));

    // New inputs still join the busy lane, and fill it, but it is not taken
    // again before its batch completes.
    admit(&mut lanes, "a", 4, us(1));
    assert!(lanes.take(us(1)).is_none(), "a busy lane is never taken");

    // Another key is served meanwhile.
    admit(&mut lanes, "b", 10, us(1));
    let other = lanes.take(us(1)).expect("b is ready");
    assert_eq!((other.key, other.items), ("b", vec![10]));

    lanes.complete(first.lane, us(2));
    let second = lanes.take(us(2)).expect("a is ready again");
    assert_eq!((second.key, second.items), ("a", vec![3, 4]));
}

#[test]
fn g2_rank_order_with_ties_by_admission() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 10,
        max_batch_delay: us(100),
        ..config()
    });
    // (item, rank): ties at ranks 1 and 3 must keep admission order.
    let inputs = [("p", 3), ("q", 1), ("r", 2), ("s", 1), ("t", 3), ("u", 0)];
    for (item, rank) in inputs {
        lanes.admit("a", item, rank, 1, us(0)).unwrap();
    }
    let batch = lanes.take(us(100)).expect("due");
    assert_eq!(batch.items, ["u", "q", "s", "r", "p", "t"]);
}

#[test]
fn g2_the_default_order_is_admission_order() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 4,
        ..config()
    });
    for item in 1..=4 {
        admit(&mut lanes, "a", item, us(0));
    }
    assert_eq!(lanes.take(us(0)).unwrap().items, [1, 2, 3, 4]);
}

#[test]
fn g3_one_key_per_batch() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 8,
        max_batch_delay: us(10),
        ..config()
    });
    for n in 0..4 {
        for key in ["a", "b", "c"] {
            admit(&mut lanes, key, (key, n), us(n));
        }
    }
    let mut seen = Vec::new();
    while let Some(batch) = lanes.take(us(20)) {
        assert!(
            batch.items.iter().all(|&(key, _)| key == batch.key),
            "batch of {} carries {:?}",
            batch.key,
            batch.items
        );
        assert_eq!(batch.items.len(), 4);
        seen.push(batch.key);
    }
    assert_eq!(seen, ["a", "b", "c"]);
}

#[test]
fn g5_lane_removed_when_empty_and_idle() {
    let mut lanes = Lanes::new(config());
    admit(&mut lanes, "a", 1, us(0));
    assert_eq!(lanes.lanes(), 1);

    let batch = lanes.take(us(0)).unwrap();
    // Nothing waits, but its batch is in flight: the lane stays (G1 needs it).
    assert_eq!(lanes.waiting(), 0);
    assert_eq!(lanes.lane_state(&"a"), Some(LaneState::Busy));
    assert_eq!(lanes.lanes(), 1);

    lanes.complete(batch.lane, us(1));
    assert_eq!(lanes.lane_state(&"a"), None);
    assert_eq!(lanes.lanes(), 0);

    // A lane that still has inputs when its batch completes is kept.
    admit(&mut lanes, "a", 2, us(2));
    let batch = lanes.take(us(2)).unwrap();
    admit(&mut lanes, "a", 3, us(2));
    lanes.complete(batch.lane, us(3));
    assert_eq!(lanes.lane_state(&"a"), Some(LaneState::Ready));
    assert_eq!(lanes.lanes(), 1);
}

#[test]
fn g6_both_queueing_bounds_refuse_and_hand_the_input_back() {
    // max_waiting counts waiting inputs.
    let mut lanes = Lanes::new(QueueConfig {
        max_waiting: 2,
        ..config()
    });
    admit(&mut lanes, "a", 1, us(0));
    admit(&mut lanes, "b", 2, us(0));
    let refusal = lanes.admit("c", 3, 0, 1, us(0)).unwrap_err();
    assert_eq!((refusal.item, refusal.reason), (3, Refused::Full));
    assert_eq!(lanes.waiting(), 2);
    // Taking a batch frees room: inputs in flight do not count.
    let _batch = lanes.take(us(0)).unwrap();
    admit(&mut lanes, "c", 3, us(1));

    // max_waiting_weight counts their weight.
    let mut lanes = Lanes::new(QueueConfig {
        max_waiting_weight: 5,
        ..config()
    });
    lanes.admit("a", 1, 0, 3, us(0)).unwrap();
    let refusal = lanes.admit("a", 2, 0, 3, us(0)).unwrap_err();
    assert_eq!((refusal.item, refusal.reason), (2, Refused::Full));
    lanes.admit("a", 2, 0, 2, us(0)).unwrap();
    assert_eq!(lanes.waiting_weight(), 5);
}

#[test]
fn refusal_reasons_closed_before_too_heavy_before_full() {
    let mut lanes = Lanes::new(QueueConfig {
        max_waiting: 1,
        max_batch_weight: 4,
        ..config()
    });
    admit(&mut lanes, "a", 1, us(0));
    // Full and too heavy: too heavy says more (it will never fit).
    let refusal = lanes.admit("b", 2, 0, 5, us(0)).unwrap_err();
    assert_eq!((refusal.item, refusal.reason), (2, Refused::TooHeavy));
    let refusal = lanes.admit("b", 3, 0, 4, us(0)).unwrap_err();
    assert_eq!((refusal.item, refusal.reason), (3, Refused::Full));

    lanes.close();
    let refusal = lanes.admit("b", 4, 0, 5, us(0)).unwrap_err();
    assert_eq!((refusal.item, refusal.reason), (4, Refused::Closed));
}

#[test]
fn both_batch_bounds_size_and_weight() {
    // Size: at most max_batch_size inputs per batch.
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 3,
        ..config()
    });
    for item in 1..=7 {
        admit(&mut lanes, "a", item, us(0));
    }
    let mut sizes = Vec::new();
    while let Some(batch) = lanes.take(us(0)) {
        sizes.push(batch.items.len());
        lanes.complete(batch.lane, us(0));
    }
    assert_eq!(sizes, [3, 3, 1]);

    // Weight: a prefix of total weight <= max_batch_weight; it never skips
    // an input to fit a lighter one behind it, and carries at least one.
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 10,
        max_batch_weight: 5,
        ..config()
    });
    for (item, weight) in [("p", 2), ("q", 2), ("r", 2), ("s", 1), ("t", 5)] {
        lanes.admit("a", item, 0, weight, us(0)).unwrap();
    }
    let mut batches = Vec::new();
    while let Some(batch) = lanes.take(us(0)) {
        batches.push((batch.items.clone(), batch.weight));
        lanes.complete(batch.lane, us(0));
    }
    assert_eq!(
        batches,
        [(vec!["p", "q"], 4), (vec!["r", "s"], 3), (vec!["t"], 5)]
    );
}

#[test]
fn full_lane_goes_at_once_and_partial_lane_waits_for_its_delay() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 2,
        max_batch_weight: 10,
        max_batch_delay: us(50),
        ..config()
    });
    admit(&mut lanes, "partial", 1, us(0));
    admit(&mut lanes, "full", 2, us(0));
    admit(&mut lanes, "full", 3, us(0));
    lanes.admit("heavy", 4, 0, 10, us(0)).unwrap();

    assert_eq!(lanes.lane_state(&"partial"), Some(LaneState::Waiting));
    assert_eq!(lanes.take(us(0)).unwrap().key, "full", "full by count");
    assert_eq!(lanes.take(us(0)).unwrap().key, "heavy", "full by weight");
    assert!(lanes.take(us(49)).is_none(), "partial and not yet due");
    assert_eq!(lanes.next_deadline(), Some(us(50)));
    assert_eq!(lanes.take(us(50)).unwrap().key, "partial");
}

#[test]
fn zero_delay_sends_a_lone_input_at_once() {
    let mut lanes = Lanes::new(config());
    admit(&mut lanes, "a", 1, us(0));
    assert_eq!(lanes.lane_state(&"a"), Some(LaneState::Ready));
    assert_eq!(lanes.next_deadline(), None);
    assert_eq!(lanes.take(us(0)).unwrap().items, [1]);
}

#[test]
fn g7_a_completed_lane_with_more_requeues_at_the_back() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 1,
        ..config()
    });
    for item in 1..=3 {
        admit(&mut lanes, "hot", item, us(0));
    }
    admit(&mut lanes, "b", 10, us(0));
    admit(&mut lanes, "c", 20, us(0));

    let mut served = Vec::new();
    while let Some(batch) = lanes.take(us(0)) {
        served.push(batch.key);
        lanes.complete(batch.lane, us(0));
    }
    // The key that always has more goes behind the others each time.
    assert_eq!(served, ["hot", "b", "c", "hot", "hot"]);
}

#[test]
fn g8_due_time_counts_from_the_oldest_input_by_arrival_whatever_its_rank() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 10,
        max_batch_delay: us(10),
        ..config()
    });
    // The oldest input is ranked last; the lane is due 10 µs after it
    // arrived, not after the input ranked first.
    lanes.admit("a", "old, rank 5", 5, 1, us(0)).unwrap();
    lanes.admit("a", "new, rank 1", 1, 1, us(4)).unwrap();
    assert_eq!(lanes.next_deadline(), Some(us(10)));
    assert!(lanes.take(us(9)).is_none());
    let batch = lanes.take(us(10)).expect("due at 10 µs");
    assert_eq!(batch.items, ["new, rank 1", "old, rank 5"]);
}

#[test]
fn g8_after_a_batch_the_lane_is_due_from_its_oldest_remaining_input() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 2,
        max_batch_delay: us(10),
        ..config()
    });
    // Ranked so that the first batch takes the two newest inputs and leaves
    // the oldest one: it stays due at 0 + 10 µs.
    lanes.admit("a", "t0", 5, 1, us(0)).unwrap();
    lanes.admit("a", "t4", 1, 1, us(4)).unwrap(); // full: ready
    lanes.admit("a", "t6", 0, 1, us(6)).unwrap();
    let first = lanes.take(us(6)).unwrap();
    assert_eq!(first.items, ["t6", "t4"]);
    lanes.complete(first.lane, us(7));
    assert_eq!(lanes.lane_state(&"a"), Some(LaneState::Waiting));
    assert_eq!(lanes.next_deadline(), Some(us(10)));
    assert_eq!(lanes.take(us(10)).unwrap().items, ["t0"]);

    // And the other way round: the oldest goes first, the newest remains.
    lanes.admit("b", "t20", 0, 1, us(20)).unwrap();
    lanes.admit("b", "t24", 9, 1, us(24)).unwrap(); // full: ready
    lanes.admit("b", "t26", 1, 1, us(26)).unwrap();
    let first = lanes.take(us(26)).unwrap();
    assert_eq!(first.items, ["t20", "t26"]);
    lanes.complete(first.lane, us(27));
    assert_eq!(lanes.next_deadline(), Some(us(34)));
    assert!(lanes.take(us(33)).is_none());
    assert_eq!(lanes.take(us(34)).unwrap().items, ["t24"]);
}

#[test]
fn late_input_goes_in_the_next_batch_at_its_rank() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 10,
        ..config()
    });
    lanes.admit("a", "day 10", 10, 1, us(0)).unwrap();
    let first = lanes.take(us(0)).unwrap();
    assert_eq!(first.items, ["day 10"]);

    // Ranked below what was already sent: neither held nor refused.
    lanes.admit("a", "day 12", 12, 1, us(1)).unwrap();
    lanes.admit("a", "day 7 (late)", 7, 1, us(2)).unwrap();
    assert!(lanes.take(us(2)).is_none(), "still one batch at a time");
    lanes.complete(first.lane, us(3));
    let next = lanes.take(us(3)).unwrap();
    assert_eq!(next.items, ["day 7 (late)", "day 12"]);
}

#[test]
fn a_lane_completed_before_its_deadline_still_becomes_due() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 2,
        max_batch_delay: us(10),
        ..config()
    });
    admit(&mut lanes, "a", 1, us(0));
    admit(&mut lanes, "a", 2, us(0));
    let first = lanes.take(us(0)).unwrap();
    // Admitted while the lane is busy; asking for the next deadline then
    // must not forget this input's.
    admit(&mut lanes, "a", 3, us(2));
    assert_eq!(lanes.next_deadline(), Some(us(12)));
    lanes.complete(first.lane, us(3));
    assert_eq!(lanes.lane_state(&"a"), Some(LaneState::Waiting));
    assert_eq!(lanes.next_deadline(), Some(us(12)));
    assert!(lanes.take(us(11)).is_none());
    assert_eq!(lanes.take(us(12)).expect("due at 12 µs").items, [3]);
}

#[test]
fn due_lanes_are_served_in_the_order_they_became_due() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 2,
        max_batch_delay: us(10),
        ..config()
    });
    admit(&mut lanes, "a", 1, us(0));
    admit(&mut lanes, "a", 2, us(0));
    let first = lanes.take(us(0)).unwrap();
    admit(&mut lanes, "b", 3, us(3)); // due at 13 µs
    admit(&mut lanes, "a", 4, us(5)); // due at 15 µs
    lanes.complete(first.lane, us(5));

    // Taken late (say every slot was busy until then): b was due first, and
    // a's inputs already sent do not move a ahead of it.
    let order: Vec<_> = std::iter::from_fn(|| lanes.take(us(20)).map(|b| b.key)).collect();
    assert_eq!(order, ["b", "a"]);
}

#[test]
fn g9_close_refuses_new_inputs_and_sends_everything_waiting_oldest_first() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 2,
        max_batch_delay: us(1_000),
        ..config()
    });
    // a's place comes first, but after its first batch its oldest waiting
    // input is newer than b's.
    admit(&mut lanes, "a", 1, us(0));
    admit(&mut lanes, "a", 2, us(0));
    let first = lanes.take(us(0)).unwrap();
    admit(&mut lanes, "b", 3, us(1));
    admit(&mut lanes, "a", 4, us(2));
    lanes.complete(first.lane, us(2));
    assert_eq!(lanes.lane_state(&"a"), Some(LaneState::Waiting));
    assert_eq!(lanes.lane_state(&"b"), Some(LaneState::Waiting));

    lanes.close();
    assert!(lanes.is_closed());
    let refusal = lanes.admit("c", 5, 0, 1, us(3)).unwrap_err();
    assert_eq!((refusal.item, refusal.reason), (5, Refused::Closed));
    assert_eq!(
        lanes.next_deadline(),
        None,
        "the delay is ignored once closed"
    );

    let mut sent = Vec::new();
    while let Some(batch) = lanes.take(us(3)) {
        sent.push((batch.key, batch.items));
        lanes.complete(batch.lane, us(3));
    }
    assert_eq!(sent, [("b", vec![3]), ("a", vec![4])]);
    assert_eq!(lanes.lanes(), 0);
}

#[test]
#[should_panic(expected = "not busy")]
fn completing_a_batch_twice_is_refused_loudly() {
    let mut lanes = Lanes::new(config());
    admit(&mut lanes, "a", 1, us(0));
    let batch = lanes.take(us(0)).unwrap();
    lanes.complete(batch.lane, us(0));
    lanes.complete(batch.lane, us(0));
}

#[test]
#[should_panic(expected = "not busy")]
fn a_stale_lane_id_cannot_complete_the_next_lane_in_its_place() {
    let mut lanes = Lanes::new(config());
    admit(&mut lanes, "a", 1, us(0));
    let old = lanes.take(us(0)).unwrap();
    lanes.complete(old.lane, us(0));
    // "b" reuses a's place; the old id must not release b's batch.
    admit(&mut lanes, "b", 2, us(1));
    let _new = lanes.take(us(1)).unwrap();
    lanes.complete(old.lane, us(1));
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "time went backwards")]
fn time_going_backwards_is_caught_in_debug_builds() {
    let mut lanes = Lanes::new(config());
    admit(&mut lanes, "a", 1, us(5));
    let _ = lanes.take(us(4));
}

/// Terms (docs/guarantees.md#terms) and G7: a lane is ready when full, due
/// or closing, and ready lanes are served first come, first served. A lane
/// whose inputs all
/// expired while it stood in the ready line is gone (G5); an input that
/// comes for its key afterwards starts a new lane, which waits for its
/// delay like any other, and must not take the old lane's place in line,
/// ahead of a lane that was ready before that input even arrived.
#[test]
fn g7_a_lane_emptied_in_the_ready_line_and_given_a_new_input_does_not_keep_its_place() {
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_size: 2,
        max_batch_delay: us(100),
        max_queue_time: Some(us(10)),
        ..config()
    });
    // "a" is full, in line (every slot of the shard is busy, say); both of
    // its inputs then expire.
    admit(&mut lanes, "a", 1, us(0));
    admit(&mut lanes, "a", 2, us(0));
    let mut expired = Vec::new();
    lanes.expire_with(us(10), |item| expired.push(item));
    assert_eq!(expired, [1, 2]);
    // "b" is full at 11: ready from then on.
    admit(&mut lanes, "b", 3, us(11));
    admit(&mut lanes, "b", 4, us(11));
    // A lone input for "a" at 12: partial, due at 112.
    admit(&mut lanes, "a", 5, us(12));
    let first = lanes.take(us(12)).expect("b is ready");
    assert_eq!(
        (first.key, first.items),
        ("b", vec![3, 4]),
        "b was ready since 11; a's only input came at 12 (G7)"
    );
    assert_eq!(
        lanes.lane_state(&"a"),
        Some(LaneState::Waiting),
        "one input, not due before 112: waiting (docs/guarantees.md#terms)"
    );
    assert!(lanes.take(us(111)).is_none(), "a is not due yet");
    assert_eq!(lanes.take(us(112)).expect("a is due").items, [5]);
}

/// An input that leaves by expiry or withdrawal leaves the longest-lane
/// gauge too: it never counts more than a lane holds.
#[test]
fn longest_lane_follows_expiry_and_withdrawal() {
    let t = Duration::from_millis;
    let mut lanes = Lanes::new(QueueConfig {
        max_batch_delay: t(100),
        max_queue_time: Some(t(10)),
        ..QueueConfig::default()
    });
    for item in 0..3 {
        lanes.admit("hot", item, 0, 1, t(0)).unwrap();
    }
    lanes.admit("cold", 9, 0, 1, t(5)).unwrap();
    assert_eq!(lanes.longest_lane(), 3);
    let hash = ferry_shard::key_hash(&"hot");
    assert_eq!(lanes.withdraw_with(hash, 8, |&item| item == 0, |_| ()), 1);
    assert_eq!(lanes.longest_lane(), 2, "a withdrawal shrinks the hot lane");
    assert_eq!(lanes.expire_with(t(10), |_| ()), 2);
    assert!(
        lanes.longest_lane() <= 1,
        "the hot lane is gone: {}",
        lanes.longest_lane()
    );
}
