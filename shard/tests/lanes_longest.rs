//! The `longest_lane` gauge of `Lanes` against a model: per key, a count of
//! waiting inputs (admissions minus inputs taken), written independently.
//!
//! What the gauge promises: it never reports more than the longest lane
//! holds, and right after a lane grows to be the longest (or the longest
//! lane is taken from and is still the longest), it reports that lane's
//! exact count.

use std::collections::HashMap;
use std::time::Duration;

use ferry_shard::parts::{LaneId, Lanes};
use ferry_shard::QueueConfig;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    /// An input for key `0..KEYS`.
    Admit(u8),
    /// Take the next ready batch.
    Take,
    /// Complete the oldest batch in flight.
    Complete,
}

const KEYS: u8 = 4;

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..KEYS).prop_map(Step::Admit),
        2 => Just(Step::Take),
        1 => Just(Step::Complete),
    ]
}

proptest! {
    #[test]
    fn the_gauge_is_a_lower_bound_exact_after_growth(steps in prop::collection::vec(step(), 1..200)) {
        let now = Duration::ZERO;
        let mut lanes = Lanes::new(QueueConfig { max_batch_size: 3, ..QueueConfig::default() });
        let mut waiting: HashMap<u8, usize> = HashMap::new();
        let mut in_flight: Vec<LaneId> = Vec::new();
        for step in steps {
            let exact_now = match step {
                Step::Admit(key) => {
                    lanes.admit(key, (), 0, 1, now).unwrap();
                    *waiting.entry(key).or_default() += 1;
                    Some(waiting[&key])
                }
                Step::Take => lanes.take(now).map(|batch| {
                    let left = waiting.get_mut(&batch.key).unwrap();
                    *left -= batch.items.len();
                    in_flight.push(batch.lane);
                    *left
                }),
                Step::Complete => {
                    if !in_flight.is_empty() {
                        lanes.complete(in_flight.remove(0), now);
                    }
                    None
                }
            };
            let longest = waiting.values().copied().max().unwrap_or(0);
            prop_assert!(lanes.longest_lane() <= longest, "{} > {longest}", lanes.longest_lane());
            if let Some(count) = exact_now.filter(|&count| count == longest) {
                prop_assert_eq!(lanes.longest_lane(), count);
            }
        }
    }
}
