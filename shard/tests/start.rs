//! `Shard::start` and `Shard::start_trips`, driven as `ferry` drives them:
//! a batch function gets one key's batch a call, a trip function several
//! keys' batches, within `ShardConfig`'s trip bounds, and bounds of zero
//! are refused before any thread starts.

use std::io::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

use ferry_shard::parts::{Lanes, Waiter};
use ferry_shard::{key_hash, Offer, QueueConfig, Runtime, Shard, ShardConfig, ShardId};
use futures::executor::block_on;

type Keyed = Shard<Lanes<u64, Waiter<u32, u32, String>>, u32, u32, String>;

fn config(max_trip_batches: usize, max_trip_weight: u64) -> ShardConfig {
    ShardConfig {
        id: ShardId::new(0),
        engine: 1,
        cpu: None,
        runtime: Runtime::Tokio,
        queue: QueueConfig {
            // Longer than any test: inputs wait until the shard closes,
            // when every waiting input becomes ready at once.
            max_batch_delay: Duration::from_secs(3_600),
            ..QueueConfig::default()
        },
        max_in_flight_batches: 4,
        intake_capacity: 1_024,
        spin_before_park: Duration::ZERO,
        doze_before_park: Duration::ZERO,
        sched_slice: Duration::ZERO,
        max_trip_batches,
        max_trip_weight,
    }
}

/// Submits an input for each of `keys`, closes the shard (which sends every
/// waiting input at once) and waits for the answers and the thread.
fn serve(shard: &Keyed, keys: &[u64]) -> Vec<u32> {
    let answers: Vec<_> = keys
        .iter()
        .map(|&key| {
            let submitted = shard.submit(Offer::new(key_hash(&key), key, key as u32, 0, 1));
            submitted.unwrap_or_else(|refusal| panic!("refused: {:?}", refusal.reason))
        })
        .collect();
    shard.close();
    let outputs = answers
        .into_iter()
        .map(|answer| block_on(answer).expect("answered"))
        .collect();
    shard.join();
    outputs
}

#[test]
fn a_trip_function_carries_many_keys_in_one_call() {
    let (shard, starting) = Keyed::start_trips(
        config(8, u64::MAX),
        Arc::new(|_shard: ShardId| async {
            Ok::<_, String>(|trip: Vec<(u64, Vec<u32>)>| async move {
                trip.into_iter()
                    .map(|(key, inputs)| Ok(inputs.iter().map(|n| n + key as u32).collect()))
                    .collect()
            })
        }),
    )
    .expect("the thread starts");
    starting.wait().expect("the factory made its function");
    assert_eq!(serve(&shard, &[1, 2, 3]), [2, 4, 6]);
    let stats = shard.stats();
    assert_eq!((stats.trips, stats.batches, stats.sent), (1, 3, 3));
}

#[test]
fn a_batch_function_carries_one_key_a_call() {
    let (shard, starting) = Keyed::start(
        config(8, u64::MAX),
        Arc::new(|_shard: ShardId| async {
            Ok::<_, String>(|key: u64, inputs: Vec<u32>| async move {
                Ok::<_, String>(inputs.iter().map(|n| n * key as u32).collect())
            })
        }),
    )
    .expect("the thread starts");
    starting.wait().expect("the factory made its function");
    assert_eq!(serve(&shard, &[1, 2, 3]), [1, 4, 9]);
    let stats = shard.stats();
    assert_eq!((stats.trips, stats.batches, stats.sent), (0, 3, 3));
}

#[test]
fn trip_bounds_of_zero_are_refused() {
    for (batches, weight) in [(0, u64::MAX), (8, 0)] {
        let started = Keyed::start_trips(
            config(batches, weight),
            Arc::new(|_shard: ShardId| async {
                Ok::<_, String>(|trip: Vec<(u64, Vec<u32>)>| async move {
                    trip.into_iter().map(|(_, inputs)| Ok(inputs)).collect()
                })
            }),
        );
        match started {
            Err(err) => {
                assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
                assert!(
                    err.to_string()
                        .contains("max_trip_batches and max_trip_weight must be at least 1"),
                    "{err}"
                );
            }
            Ok(_) => panic!("started with trip bounds ({batches}, {weight})"),
        }
    }
}
