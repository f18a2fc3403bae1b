//! The overload scenario: waste and recovery counted from the inputs.

use ferry_bench::scenarios::overload::*;
use std::time::{Duration, Instant};

#[test]
fn a_batch_is_wasted_only_if_every_input_was_late() {
    let _ = take_waste();
    watch(true);
    let now = Instant::now();
    let late = input_until(now - Duration::from_millis(5), 1);
    let fresh = input_until(now + Duration::from_secs(60), 2);
    note_sent(&[late, fresh]);
    note_sent(&[late, late]);
    watch(false);
    note_sent(&[late]); // not watched: not counted
    let waste = take_waste();
    assert_eq!(
        waste,
        Waste {
            sent: 4,
            sent_late: 3,
            batches: 2,
            batches_wasted: 1
        }
    );
}

#[test]
fn recovery_is_none_when_goodput_never_comes_back() {
    let mut buckets = vec![10; 10];
    buckets.extend([1; 10]);
    let slow = Slowdown {
        factor: 10,
        after: Duration::from_secs(1),
        length: Duration::from_millis(200),
    };
    let goodput = Goodput::of(&buckets, Duration::ZERO, Duration::from_secs(2), slow);
    assert_eq!(goodput.recovery, None);
    assert_eq!(goodput.before, 100.0);
}
