//! The load's callers: a caller with a timeout gives up on an input not
//! answered in time, and without one an unanswered input is lost.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ferry_bench::sources::dist::{KeyDist, KeySampler};
use ferry_bench::sources::load::{drive, Load, Mode};
use ferry_bench::systems::{BatchCounts, Outcome, System};

/// Answers inputs of even keys at once and never answers the others.
struct HalfDeaf;

impl System for HalfDeaf {
    type Submit = Pin<Box<dyn Future<Output = Outcome> + Send>>;

    fn submit(&self, key: u64, _input: u64) -> Self::Submit {
        if key.is_multiple_of(2) {
            Box::pin(futures::future::ready(Outcome::Done))
        } else {
            Box::pin(futures::future::pending())
        }
    }

    fn batch_counts(&self) -> Option<BatchCounts> {
        None
    }

    fn close(&mut self) {}
}

fn load(timeout: Option<Duration>, mode: Mode) -> Load {
    Load {
        per_call: 1,
        mode,
        generators: 2,
        sampler: Arc::new(KeySampler::new(KeyDist::Uniform, 10).unwrap()),
        warmup: Duration::from_millis(20),
        duration: Duration::from_millis(200),
        drain_timeout: Duration::from_millis(300),
        seed: 3,
        timeout,
        slowdown: None,
    }
}

#[test]
fn callers_give_up_at_their_timeout_and_nothing_is_lost() {
    for mode in [
        Mode::Closed { clients: 8 },
        Mode::Open {
            rate: 2_000.0,
            outstanding_max: 1_000,
        },
    ] {
        let measured = drive(
            &HalfDeaf,
            &load(Some(Duration::from_millis(10)), mode),
            |_| {},
        );
        assert!(
            measured.timed_out > 0 && measured.done > 0,
            "{mode:?}: {measured:?}"
        );
        assert_eq!(
            measured.lost(),
            0,
            "{mode:?}: every input done or timed out"
        );
        assert!(
            !measured.gave_up,
            "{mode:?}: the drain found nothing outstanding"
        );
        let bucketed: u64 = measured.done_buckets.iter().sum();
        assert_eq!(
            bucketed, measured.done,
            "{mode:?}: every answer is in a bucket"
        );
    }
}

#[test]
fn without_a_timeout_an_unanswered_input_is_lost() {
    let measured = drive(&HalfDeaf, &load(None, Mode::Closed { clients: 8 }), |_| {});
    assert_eq!(measured.timed_out, 0);
    assert!(measured.lost() > 0 && measured.gave_up, "{measured:?}");
}
