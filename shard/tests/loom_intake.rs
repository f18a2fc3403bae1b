//! Model check of the intake's wake-up and close protocol (`src/intake.rs`)
//! with loom: every interleaving of a few callers pushing, a thread closing,
//! a thread ringing the bell (a batch answered elsewhere), and the shard
//! draining and going to sleep, up to a preemption bound.
//!
//! Checked in every interleaving:
//! - no lost wake-up: the shard never sleeps forever while an input waits, a
//!   ring is untaken or a close it has not seen is pending (loom reports a
//!   deadlock if it does);
//! - nothing is accepted after the shard finished draining: every push that
//!   returned `Ok` was popped by the shard before it stopped;
//! - no caller is left waiting: every push returns, with `Ok` or with its
//!   own input handed back (`Closed` or `Full`).
//!
//! The shard thread runs the same steps as the loop in `src/thread/shard_loop.rs`:
//! look for close and seal, drain, stop once sealed and empty, else
//! `prepare_sleep` and park until woken, then `awake`.
//!
//! Loom treats a `SeqCst` load or store much like `AcqRel` (see its README),
//! and the queue here is loom's stand-in for crossbeam's (a mutex around a
//! `VecDeque`), so the check is of the protocol, not of crossbeam.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p ferry-shard --release --test loom_intake
//! ```
#![cfg(loom)]

mod loom_support;

use std::collections::BTreeSet;

use ferry_shard::parts::Intake;
use ferry_shard::Refused;
use loom::sync::Arc;
use loom::thread;
use loom_support::{model, Parking};

/// The shard's side: drains until, after a close, the intake is sealed and
/// empty; or, with `until` set and no close, until that many items arrived.
/// Returns every item popped.
fn shard(intake: &Intake<u32>, until: Option<usize>) -> Vec<u32> {
    let (parking, waker) = Parking::new();
    let mut popped = Vec::new();
    let mut close_seen = false;
    let mut sealed = false;
    loop {
        if !close_seen && intake.is_closed() {
            close_seen = true;
        }
        if close_seen && !sealed && intake.is_sealed() {
            sealed = true;
        }
        while let Some(item) = intake.pop() {
            popped.push(item);
        }
        if sealed && intake.is_empty() {
            return popped;
        }
        if !close_seen && until.is_some_and(|n| popped.len() >= n) {
            return popped;
        }
        if intake.prepare_sleep(&waker, close_seen, close_seen && !sealed) {
            parking.park();
        }
        intake.awake();
    }
}

/// A caller pushing `item`: `Some(item)` if it was accepted; otherwise the
/// input must come back unchanged, for a reason the setting allows.
fn push(intake: &Intake<u32>, item: u32, full_allowed: bool) -> Option<u32> {
    match intake.push(item) {
        Ok(()) => Some(item),
        Err(refusal) => {
            assert_eq!(refusal.item, item, "a refused input comes back unchanged");
            assert!(
                refusal.reason == Refused::Closed
                    || (full_allowed && refusal.reason == Refused::Full),
                "refused as {:?}",
                refusal.reason
            );
            None
        }
    }
}

/// Two callers push while another thread closes: everything accepted is
/// drained before the shard stops, and the shard is never left asleep.
fn pushes_racing_close(capacity: usize) {
    model(move || {
        let intake = Arc::new(Intake::new(capacity));
        let pushers: Vec<_> = (1..=2)
            .map(|item| {
                let intake = intake.clone();
                thread::spawn(move || push(&intake, item, capacity < 2))
            })
            .collect();
        let closer = {
            let intake = intake.clone();
            thread::spawn(move || intake.close())
        };
        let popped = shard(&intake, None);
        let accepted: BTreeSet<u32> = pushers
            .into_iter()
            .filter_map(|pusher| pusher.join().unwrap())
            .collect();
        closer.join().unwrap();
        let popped_set: BTreeSet<u32> = popped.iter().copied().collect();
        assert_eq!(popped.len(), popped_set.len(), "an item popped twice");
        assert_eq!(
            popped_set, accepted,
            "the shard stopped without every accepted input (accepted after it finished?)"
        );
        assert!(intake.is_empty() && intake.is_sealed());
        assert!(
            intake.push(9).is_err(),
            "a push after the shard finished is refused"
        );
    });
}

#[test]
fn no_lost_wake_up_and_nothing_accepted_after_the_drain() {
    pushes_racing_close(2);
}

#[test]
fn a_full_intake_refuses_with_the_input_while_closing() {
    pushes_racing_close(1);
}

/// Without close: two callers push and the shard, sleeping whenever it finds
/// nothing, still receives both.
#[test]
fn every_push_wakes_a_sleeping_shard() {
    model(|| {
        let intake = Arc::new(Intake::new(2));
        let pushers: Vec<_> = (1..=2)
            .map(|item| {
                let intake = intake.clone();
                thread::spawn(move || push(&intake, item, false))
            })
            .collect();
        let mut popped = shard(&intake, Some(2));
        for pusher in pushers {
            assert!(pusher.join().unwrap().is_some());
        }
        popped.sort_unstable();
        assert_eq!(popped, vec![1, 2]);
    });
}

/// A batch answered on another thread rings the intake while a caller
/// pushes and the shard goes to sleep whenever it finds nothing: the shard
/// always comes back to see both, and a ring it took is not seen again.
#[test]
fn a_ring_is_never_lost() {
    model(|| {
        let intake = Arc::new(Intake::new(2));
        let ringer = {
            let intake = intake.clone();
            thread::spawn(move || intake.ring())
        };
        let pusher = {
            let intake = intake.clone();
            thread::spawn(move || push(&intake, 1, false))
        };
        let (parking, waker) = Parking::new();
        let mut rung = false;
        let mut popped = Vec::new();
        loop {
            rung |= intake.take_rung();
            while let Some(item) = intake.pop() {
                popped.push(item);
            }
            if rung && !popped.is_empty() {
                break;
            }
            if intake.prepare_sleep(&waker, false, false) {
                parking.park();
            }
            intake.awake();
        }
        ringer.join().unwrap();
        assert_eq!(pusher.join().unwrap(), Some(1));
        assert_eq!(popped, vec![1]);
        assert!(!intake.take_rung(), "one ring, taken once");
    });
}
