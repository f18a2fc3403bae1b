//! Model check of the answer cell of an input submitted on its own
//! (`src/answer_cell.rs`) with loom: a shard thread answers (or drops the
//! reply unsent, or sees the caller gone), while the caller polls, changes
//! its waker, sleeps whenever it finds nothing, or stops waiting, up to a
//! preemption bound.
//!
//! Checked in every interleaving:
//! - no lost wake-up: a caller is never left asleep once the outcome is
//!   there or the reply is gone (loom reports a deadlock if it is);
//! - the caller gets exactly what was sent, or `Unsent`;
//! - the two ends never touch the waker or the outcome at once (loom's
//!   cells report a race);
//! - the cell is given back once, with the outcome in it dropped exactly
//!   once (taken or not): the outcome holds a loom `Arc`, which loom
//!   reports if it leaks.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p ferry-shard --release --test loom_answer_cell
//! ```
#![cfg(loom)]

mod loom_support;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use ferry_shard::parts::{answer_cell, Receiver, Unsent};
use loom::sync::Arc;
use loom::thread;
use loom_support::{model, Parking};

/// Polls `receiver` until it answers, sleeping whenever it is not there.
fn wait<T>(mut receiver: Receiver<T>) -> Result<T, Unsent> {
    let (parking, waker) = Parking::new();
    let mut cx = Context::from_waker(&waker);
    loop {
        match Pin::new(&mut receiver).poll(&mut cx) {
            Poll::Ready(outcome) => return outcome,
            Poll::Pending => parking.park(),
        }
    }
}

#[test]
fn a_sent_outcome_always_reaches_a_sleeping_caller() {
    model(|| {
        let (sender, receiver) = answer_cell::<u32>();
        let shard = thread::spawn(move || sender.send(7));
        assert_eq!(wait(receiver), Ok(7));
        shard.join().unwrap();
    });
}

#[test]
fn a_reply_dropped_unsent_always_wakes_the_caller_with_unsent() {
    model(|| {
        let (sender, receiver) = answer_cell::<u32>();
        let shard = thread::spawn(move || drop(sender));
        assert_eq!(wait(receiver), Err(Unsent));
        shard.join().unwrap();
    });
}

#[test]
fn a_caller_that_changes_its_waker_is_woken_through_the_new_one() {
    model(|| {
        let (sender, mut receiver) = answer_cell::<u32>();
        let shard = thread::spawn(move || sender.send(3));
        // A first poll with another task's waker, as after a move between
        // executors; the wait below must still be woken.
        let (_elsewhere, other) = Parking::new();
        if let Poll::Ready(outcome) = Pin::new(&mut receiver).poll(&mut Context::from_waker(&other))
        {
            assert_eq!(outcome, Ok(3));
        } else {
            assert_eq!(wait(receiver), Ok(3));
        }
        shard.join().unwrap();
    });
}

#[test]
fn an_outcome_is_dropped_once_whoever_lets_go_of_the_cell_last() {
    model(|| {
        let value = Arc::new(());
        let (sender, mut receiver) = answer_cell::<Arc<()>>();
        let sent = Arc::clone(&value);
        let shard = thread::spawn(move || {
            if !sender.is_closed() {
                sender.send(sent);
            }
        });
        // The caller looks once, then stops waiting.
        let waker = futures::task::noop_waker();
        let seen = Pin::new(&mut receiver).poll(&mut Context::from_waker(&waker));
        receiver.close();
        drop(receiver);
        drop(seen);
        shard.join().unwrap();
        // Every copy but this one was dropped: taken, left in the cell, or
        // never sent.
        assert_eq!(Arc::strong_count(&value), 1);
    });
}
