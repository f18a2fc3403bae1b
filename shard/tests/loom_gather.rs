//! Model check of the shared answer cell of a `submit_many` call
//! (`src/gather.rs`) with loom: two shard threads answer inputs of one call
//! and hand them over at the end of their rounds (one of them drops a
//! reply unsent, as a shard that stops with the batch in flight does),
//! while the caller reads the stream and sleeps whenever it finds nothing,
//! up to a preemption bound.
//!
//! Checked in every interleaving:
//! - no lost wake-up: only the delivery that finds the cell empty wakes
//!   the caller, and the caller is never left asleep while an outcome
//!   waits (loom reports a deadlock if it is);
//! - every input comes out exactly once, with its own outcome, and then the
//!   stream ends.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p ferry-shard --release --test loom_gather
//! ```
#![cfg(loom)]

mod loom_support;

use std::pin::Pin;
use std::task::{Context, Poll};

use ferry_shard::parts::{Deliveries, ToShard};
use ferry_shard::{FerryError, Outcome, Outcomes};
use futures::Stream;
use loom::thread;
use loom_support::{model, Parking};

/// Reads `outcomes` to its end, sleeping whenever nothing is there.
fn read_all(
    mut outcomes: Outcomes<u32, u32, ()>,
) -> Vec<(usize, Result<u32, FerryError<u32, ()>>)> {
    let (parking, waker) = Parking::new();
    let mut cx = Context::from_waker(&waker);
    let mut seen = Vec::new();
    loop {
        match Pin::new(&mut outcomes).poll_next(&mut cx) {
            Poll::Ready(Some(next)) => seen.push(next),
            Poll::Ready(None) => return seen,
            Poll::Pending => parking.park(),
        }
    }
}

/// One shard's round: answers `answers` (index, outcome; `None`: the reply
/// is dropped unsent), then hands them over.
fn shard_round(to: ToShard<u32, u32, ()>, answers: Vec<(usize, Option<Outcome<u32, u32, ()>>)>) {
    let deliveries = Deliveries::default();
    let gathering = deliveries.gathering(to, answers.len());
    for (index, outcome) in answers {
        let reply = gathering.reply(index);
        match outcome {
            Some(outcome) => reply.send(outcome),
            None => drop(reply),
        }
    }
    deliveries.deliver();
}

#[test]
fn two_shards_answering_one_call_never_leave_the_caller_asleep() {
    model(|| {
        let mut outcomes = Outcomes::<u32, u32, ()>::new();
        let (a, b, c) = (outcomes.add(), outcomes.add(), outcomes.add());
        let first = {
            let to = outcomes.to_shard();
            // c's batch is dropped with its shard: Aborted.
            thread::spawn(move || shard_round(to, vec![(a, Some(Ok(10))), (c, None)]))
        };
        let second = {
            let to = outcomes.to_shard();
            thread::spawn(move || shard_round(to, vec![(b, Some(Ok(20)))]))
        };
        let mut seen = read_all(outcomes);
        first.join().unwrap();
        second.join().unwrap();
        seen.sort_by_key(|(index, _)| *index);
        assert_eq!(
            seen,
            vec![(0, Ok(10)), (1, Ok(20)), (2, Err(FerryError::Aborted))],
            "every input comes out once, with its own outcome"
        );
    });
}

#[test]
fn rounds_before_and_after_the_caller_first_looks_all_come_out() {
    model(|| {
        let mut outcomes = Outcomes::<u32, u32, ()>::new();
        let (a, b) = (outcomes.add(), outcomes.add());
        shard_round(outcomes.to_shard(), vec![(a, Some(Ok(1)))]); // there at the first look
        let late = {
            let to = outcomes.to_shard();
            thread::spawn(move || shard_round(to, vec![(b, Some(Ok(2)))]))
        };
        let mut seen = read_all(outcomes);
        late.join().unwrap();
        seen.sort_by_key(|(index, _)| *index);
        assert_eq!(seen, vec![(0, Ok(1)), (1, Ok(2))]);
    });
}
