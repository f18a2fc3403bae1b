//! Model check of the shared answer cell of a `submit_many` call
//! (`src/gather.rs`) with loom: two shard threads answer inputs of one call
//! (one of them drops a sender unsent, as a shard that stops with the batch
//! in flight does) while the caller reads the stream and sleeps whenever it
//! finds nothing, up to a preemption bound.
//!
//! Checked in every interleaving:
//! - no lost wake-up: only the push that finds the cell empty wakes the
//!   caller, and the caller is never left asleep while an outcome waits
//!   (loom reports a deadlock if it is);
//! - every input comes out exactly once, with its own outcome, and then the
//!   stream ends.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p ferry-shard --release --test loom_gather
//! ```
#![cfg(loom)]

use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use ferry_shard::{FerryError, Outcomes};
use futures::Stream;
use loom::sync::Notify;
use loom::thread;

/// The caller's parking spot: a wake before it sleeps is kept, so the next
/// sleep returns at once.
struct Parking(Notify);

impl Wake for Parking {
    fn wake(self: StdArc<Self>) {
        self.0.notify();
    }
}

fn model(test: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(test);
}

/// Reads `outcomes` to its end, sleeping whenever nothing is there.
fn read_all(
    mut outcomes: Outcomes<u32, u32, ()>,
) -> Vec<(usize, Result<u32, FerryError<u32, ()>>)> {
    let parking = StdArc::new(Parking(Notify::new()));
    let waker = Waker::from(parking.clone());
    let mut cx = Context::from_waker(&waker);
    let mut seen = Vec::new();
    loop {
        match Pin::new(&mut outcomes).poll_next(&mut cx) {
            Poll::Ready(Some(next)) => seen.push(next),
            Poll::Ready(None) => return seen,
            Poll::Pending => parking.0.wait(),
        }
    }
}

#[test]
fn two_shards_answering_one_call_never_leave_the_caller_asleep() {
    model(|| {
        let mut outcomes = Outcomes::<u32, u32, ()>::new();
        let (a, b, c) = (outcomes.sender(), outcomes.sender(), outcomes.sender());
        let first = thread::spawn(move || {
            a.send(Ok(10));
            drop(c); // its batch dropped with the shard: Aborted
        });
        let second = thread::spawn(move || b.send(Ok(20)));
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
fn answers_before_and_after_the_caller_first_looks_all_come_out() {
    model(|| {
        let mut outcomes = Outcomes::<u32, u32, ()>::new();
        let (a, b) = (outcomes.sender(), outcomes.sender());
        a.send(Ok(1)); // already there at the first look
        let late = thread::spawn(move || b.send(Ok(2)));
        let mut seen = read_all(outcomes);
        late.join().unwrap();
        seen.sort_by_key(|(index, _)| *index);
        assert_eq!(seen, vec![(0, Ok(1)), (1, Ok(2))]);
    });
}
