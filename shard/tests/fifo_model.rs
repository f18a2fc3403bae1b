//! `Fifo` against a deliberately plain model, step by step, and one readable
//! test per promise of the unkeyed queue
//! (docs/guarantees.md#unkeyed-batching).
//!
//! The model keeps the waiting inputs in a `Vec` and answers every question
//! from the definitions (docs/guarantees.md, "Terms" and "Unkeyed
//! batching") by a linear scan: the oldest input is the smallest arrival in
//! the whole `Vec` (never "the front"), and
//! readiness, due time, expiry and the batch are worked out from what they
//! mean, not from how `Fifo` computes them. A proptest drives random
//! sequences of admit (weights up to too heavy), advance time, take (whole or
//! partly consumed), expire, withdraw and close on both, and compares after
//! every step every observable: admit's result, reason and the item handed
//! back; what a take returns or that it returns nothing; which inputs expire
//! or are withdrawn, in which order; waiting count and weight; `has_ready`;
//! `next_deadline` and `next_expiry` (they take `&self`, so they are simply
//! asked after every step); `is_closed`. Each sequence ends closed and
//! drained: everything admitted came out exactly once, by a batch (in
//! admission order), by expiry or by withdrawal.

use std::cell::RefCell;
use std::time::Duration;

use ferry_shard::parts::{Fifo, FifoBatch};
use ferry_shard::{QueueConfig, Refused};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

/// Time in the test is counted in ticks of one microsecond.
fn at(tick: u64) -> Duration {
    Duration::from_micros(tick)
}

// ---------------------------------------------------------------------------
// The model.
// ---------------------------------------------------------------------------

/// The bounds, as plain numbers (the delay and the queue time in ticks).
#[derive(Clone, Copy, Debug)]
struct Bounds {
    batch_size_max: usize,
    batch_weight_max: u64,
    queueing_max: usize,
    queued_weight_max: u64,
    delay_ticks: u64,
    queue_time_ticks: Option<u64>,
}

impl Bounds {
    fn to_config(self) -> QueueConfig {
        QueueConfig {
            max_batch_size: self.batch_size_max,
            max_batch_weight: self.batch_weight_max,
            max_batch_delay: at(self.delay_ticks),
            max_waiting: self.queueing_max,
            max_waiting_weight: self.queued_weight_max,
            max_queue_time: self.queue_time_ticks.map(at),
            ..QueueConfig::default()
        }
    }
}

/// Which inputs a withdrawal finds gone: those whose id has its bit set in
/// `mask` (ids taken modulo 32).
fn is_gone(mask: u32, id: u64) -> bool {
    (mask >> (id % 32)) & 1 == 1
}

/// One admitted input that has not been taken yet.
#[derive(Clone, Debug)]
struct Entry {
    id: u64,
    weight: u64,
    arrival: u64,
}

/// What a take hands out, reduced to what can be compared.
#[derive(Debug, PartialEq, Eq)]
struct Taken {
    ids: Vec<u64>,
    weight: u64,
}

#[derive(Debug)]
struct Model {
    bounds: Bounds,
    now: u64,
    /// Every waiting input, in admission order.
    waiting: Vec<Entry>,
    closed: bool,
}

impl Model {
    fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            now: 0,
            waiting: Vec::new(),
            closed: false,
        }
    }

    fn weight_waiting(&self) -> u64 {
        self.waiting.iter().map(|e| e.weight).sum()
    }

    fn oldest_arrival(&self) -> Option<u64> {
        self.waiting.iter().map(|e| e.arrival).min()
    }

    fn is_full(&self) -> bool {
        self.waiting.len() >= self.bounds.batch_size_max
            || self.weight_waiting() >= self.bounds.batch_weight_max
    }

    fn is_due(&self) -> bool {
        self.oldest_arrival()
            .is_some_and(|arrival| self.now >= arrival + self.bounds.delay_ticks)
    }

    /// Ready whatever the time: something waits, and the queue is closed,
    /// has no delay, or is full.
    fn has_ready(&self) -> bool {
        !self.waiting.is_empty() && (self.closed || self.bounds.delay_ticks == 0 || self.is_full())
    }

    fn is_ready(&self) -> bool {
        self.has_ready() || (!self.waiting.is_empty() && self.is_due())
    }

    /// The earlier of when the queue becomes due (never once closed or
    /// without a delay: then it does not wait on time) and when its oldest
    /// input expires.
    fn next_deadline(&self) -> Option<u64> {
        let due = if self.closed || self.bounds.delay_ticks == 0 {
            None
        } else {
            self.oldest_arrival()
                .map(|arrival| arrival + self.bounds.delay_ticks)
        };
        match (due, self.next_expiry()) {
            (Some(due), Some(expiry)) => Some(due.min(expiry)),
            (due, expiry) => due.or(expiry),
        }
    }

    /// When the oldest waiting input expires, if inputs expire at all.
    fn next_expiry(&self) -> Option<u64> {
        let queue_time = self.bounds.queue_time_ticks?;
        self.oldest_arrival().map(|arrival| arrival + queue_time)
    }

    /// Every waiting input whose queue time has passed by now, oldest first
    /// (by arrival, ties by admission).
    fn expire(&mut self) -> Vec<u64> {
        let Some(queue_time) = self.bounds.queue_time_ticks else {
            return Vec::new();
        };
        let mut expired: Vec<(u64, usize, u64)> = self
            .waiting
            .iter()
            .enumerate()
            .filter(|(_, e)| e.arrival + queue_time <= self.now)
            .map(|(admission, e)| (e.arrival, admission, e.id))
            .collect();
        expired.sort_unstable();
        let ids: Vec<u64> = expired.into_iter().map(|(_, _, id)| id).collect();
        self.waiting.retain(|e| !ids.contains(&e.id));
        ids
    }

    /// Among the first `scan` waiting inputs in admission order, those the
    /// mask finds gone leave, in that order.
    fn withdraw(&mut self, scan: usize, gone_mask: u32) -> Vec<u64> {
        let ids: Vec<u64> = self
            .waiting
            .iter()
            .take(scan)
            .filter(|e| is_gone(gone_mask, e.id))
            .map(|e| e.id)
            .collect();
        self.waiting.retain(|e| !ids.contains(&e.id));
        ids
    }

    fn admit(&mut self, id: u64, weight: u64) -> Result<(), (u64, Refused)> {
        // u128: the model must not overflow where the real one must not.
        let weight_after = u128::from(self.weight_waiting()) + u128::from(weight);
        if self.closed {
            Err((id, Refused::Closed))
        } else if weight > self.bounds.batch_weight_max {
            Err((id, Refused::TooHeavy))
        } else if self.waiting.len() + 1 > self.bounds.queueing_max
            || weight_after > u128::from(self.bounds.queued_weight_max)
        {
            Err((id, Refused::Full))
        } else {
            self.waiting.push(Entry {
                id,
                weight,
                arrival: self.now,
            });
            Ok(())
        }
    }

    /// The batch, from its definition: the longest front of the queue whose
    /// length and total weight are within the batch bounds, at least one.
    fn take(&mut self) -> Option<Taken> {
        if !self.is_ready() {
            return None;
        }
        let fits = |n: usize| {
            let weight: u64 = self.waiting[..n].iter().map(|e| e.weight).sum();
            n <= self.bounds.batch_size_max && weight <= self.bounds.batch_weight_max
        };
        let len = (1..=self.waiting.len())
            .take_while(|&n| fits(n))
            .last()
            .unwrap_or(1);
        let batch: Vec<Entry> = self.waiting.drain(..len).collect();
        Some(Taken {
            ids: batch.iter().map(|e| e.id).collect(),
            weight: batch.iter().map(|e| e.weight).sum(),
        })
    }
}

// ---------------------------------------------------------------------------
// The operations and the harness.
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Admit(u64),
    Advance(u64),
    Take,
    /// `take_with`, taking at most this many items and dropping the rest.
    TakePart(usize),
    /// `expire_with` at the current time.
    Expire,
    /// `withdraw_with` over the first `scan` waiting inputs, the inputs
    /// `is_gone(gone_mask, id)` marks being the gone ones.
    Withdraw {
        scan: usize,
        gone_mask: u32,
    },
    Close,
}

#[derive(Clone, Debug)]
struct Case {
    bounds: Bounds,
    ops: Vec<Op>,
}

fn bounds() -> impl Strategy<Value = Bounds> {
    (
        1..=4_usize,
        prop_oneof![Just(u64::MAX), 1..=5_u64],
        1..=12_usize,
        prop_oneof![Just(u64::MAX), 1..=20_u64],
        prop_oneof![1 => Just(0_u64), 3 => 1..=4_u64],
        prop_oneof![Just(None), (1..=8_u64).prop_map(Some)],
    )
        .prop_map(
            |(
                batch_size_max,
                batch_weight_max,
                queueing_max,
                queued_weight_max,
                delay_ticks,
                queue_time_ticks,
            )| {
                Bounds {
                    batch_size_max,
                    batch_weight_max,
                    queueing_max,
                    queued_weight_max,
                    delay_ticks,
                    queue_time_ticks,
                }
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        // Weight 0 is allowed; 5..=7 is often above `max_batch_weight`.
        200 => prop_oneof![1 => Just(0_u64), 8 => 1..=4_u64, 1 => 5..=7_u64].prop_map(Op::Admit),
        100 => (0..=3_u64).prop_map(Op::Advance),
        80 => Just(Op::Take),
        40 => (0..=3_usize).prop_map(Op::TakePart),
        40 => Just(Op::Expire),
        40 => (0..=5_usize, prop_oneof![Just(u32::MAX), any::<u32>()])
            .prop_map(|(scan, gone_mask)| Op::Withdraw { scan, gone_mask }),
        // Rare, so that most sequences run open (every one is closed and
        // drained at its end anyway).
        3 => Just(Op::Close),
    ]
}

/// Operations per generated sequence: enough to fill and drain the queue a
/// few times, few enough for 10,000 cases in a debug build.
const OPS_PER_CASE_MAX: usize = 100;

fn case() -> impl Strategy<Value = Case> {
    (bounds(), prop::collection::vec(op(), 1..=OPS_PER_CASE_MAX))
        .prop_map(|(bounds, ops)| Case { bounds, ops })
}

/// Compares every observable that does not change the queue.
fn check_gauges(fifo: &Fifo<u64>, model: &Model, step: usize) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        fifo.waiting(),
        model.waiting.len(),
        "step {}: waiting",
        step
    );
    prop_assert_eq!(
        fifo.waiting_weight(),
        model.weight_waiting(),
        "step {}: waiting_weight",
        step
    );
    prop_assert_eq!(
        fifo.has_ready(),
        model.has_ready(),
        "step {}: has_ready",
        step
    );
    prop_assert_eq!(
        fifo.next_deadline(),
        model.next_deadline().map(at),
        "step {}: next_deadline",
        step
    );
    prop_assert_eq!(
        fifo.next_expiry(),
        model.next_expiry().map(at),
        "step {}: next_expiry",
        step
    );
    prop_assert_eq!(fifo.is_closed(), model.closed, "step {}: is_closed", step);
    Ok(())
}

/// What the real queue let out, for the end-of-run check.
#[derive(Default)]
struct Sent {
    /// Ids seen leaving in batches, in the order they left.
    ids: Vec<u64>,
    /// Items of partly consumed batches that were dropped unseen.
    dropped: usize,
    /// Ids that left by expiry or withdrawal.
    removed: Vec<u64>,
}

/// A partly consumed `take_with`: the batch's length and weight as lent,
/// the ids taken, and the length left after taking them.
type Part = (usize, u64, Vec<u64>, usize);

fn take_part(
    fifo: &mut Fifo<u64>,
    model: &mut Model,
    keep: usize,
    sent: &mut Sent,
    step: usize,
) -> Result<(), TestCaseError> {
    let got: Option<Part> = fifo.take_with(at(model.now), |mut items| {
        let (len, weight) = (items.len(), items.weight());
        let kept: Vec<u64> = items.by_ref().take(keep).collect();
        (len, weight, kept, items.len())
    });
    match (got, model.take()) {
        (None, None) => {}
        (Some((len, weight, kept, left)), Some(want)) => {
            prop_assert_eq!(len, want.ids.len(), "step {}: take_with len", step);
            prop_assert_eq!(weight, want.weight, "step {}: take_with weight", step);
            let kept_want = &want.ids[..keep.min(len)];
            prop_assert_eq!(&kept[..], kept_want, "step {}: take_with items", step);
            prop_assert_eq!(left, len - kept.len(), "step {}: exact size", step);
            sent.ids.extend(kept);
            sent.dropped += left;
        }
        (got, want) => {
            prop_assert!(
                false,
                "step {step}: take_with gave {got:?}, the model {want:?}"
            );
        }
    }
    Ok(())
}

fn take(
    fifo: &mut Fifo<u64>,
    model: &mut Model,
    sent: &mut Sent,
    step: usize,
) -> Result<Option<usize>, TestCaseError> {
    let got = fifo.take(at(model.now)).map(|b| Taken {
        ids: b.items,
        weight: b.weight,
    });
    let want = model.take();
    prop_assert_eq!(&got, &want, "step {}: take", step);
    Ok(got.map(|got| {
        let len = got.ids.len();
        sent.ids.extend(got.ids);
        len
    }))
}

fn run(case: &Case, reached: &mut Reached) -> Result<(), TestCaseError> {
    let mut fifo: Fifo<u64> = Fifo::new(case.bounds.to_config());
    let mut model = Model::new(case.bounds);
    let mut sent = Sent::default();
    let mut admitted = 0_usize;
    let mut id_next = 0_u64;

    for (step, op) in case.ops.iter().enumerate() {
        match *op {
            Op::Admit(weight) => {
                let id = id_next;
                id_next += 1;
                let got = fifo
                    .admit(id, weight, at(model.now))
                    .map_err(|refusal| (refusal.item, refusal.reason));
                let want = model.admit(id, weight);
                prop_assert_eq!(got, want, "step {}: admit weight {}", step, weight);
                admitted += usize::from(want.is_ok());
            }
            Op::Advance(ticks) => model.now += ticks,
            Op::Take => {
                take(&mut fifo, &mut model, &mut sent, step)?;
            }
            Op::TakePart(keep) => take_part(&mut fifo, &mut model, keep, &mut sent, step)?,
            Op::Expire => {
                let mut got = Vec::new();
                let count = fifo.expire_with(at(model.now), |id| got.push(id));
                let want = model.expire();
                prop_assert_eq!(&got, &want, "step {}: expire_with", step);
                prop_assert_eq!(count, got.len(), "step {}: expire_with's count", step);
                reached.expired += got.len() as u64;
                reached.expired_closed += u64::from(model.closed && !got.is_empty());
                sent.removed.extend(got);
            }
            Op::Withdraw { scan, gone_mask } => {
                let mut got = Vec::new();
                let count =
                    fifo.withdraw_with(scan, |&id| is_gone(gone_mask, id), |id| got.push(id));
                let scanned = model.waiting.len().min(scan);
                let want = model.withdraw(scan, gone_mask);
                prop_assert_eq!(&got, &want, "step {}: withdraw_with scan {}", step, scan);
                prop_assert_eq!(count, got.len(), "step {}: withdraw_with's count", step);
                reached.withdrawn += got.len() as u64;
                reached.withdrawn_past_a_kept_one +=
                    u64::from(!got.is_empty() && got.len() < scanned);
                sent.removed.extend(got);
            }
            Op::Close => {
                fifo.close();
                model.closed = true;
            }
        }
        let expiry_first = match (model.next_expiry(), model.oldest_arrival()) {
            (Some(expiry), Some(oldest)) => {
                !model.closed
                    && model.bounds.delay_ticks > 0
                    && expiry < oldest + model.bounds.delay_ticks
            }
            _ => false,
        };
        reached.expiry_before_due += u64::from(expiry_first);
        check_gauges(&fifo, &model, step)?;
    }

    // Closed, everything goes at once, whatever the time.
    fifo.close();
    model.closed = true;
    let step = case.ops.len();
    while take(&mut fifo, &mut model, &mut sent, step)?.is_some() {
        check_gauges(&fifo, &model, step)?;
    }
    check_gauges(&fifo, &model, step)?;
    prop_assert_eq!(fifo.waiting(), 0, "drained");

    // Exactly once, in admission order: ids are admitted in increasing order,
    // so what was seen leaving in batches increases strictly, and with what
    // was dropped, expired and withdrawn it accounts for every admitted
    // input, none twice.
    prop_assert!(sent.ids.windows(2).all(|w| w[0] < w[1]), "{:?}", sent.ids);
    let mut seen: Vec<u64> = sent.ids.iter().chain(&sent.removed).copied().collect();
    seen.sort_unstable();
    prop_assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "an id left twice: {:?}",
        seen
    );
    prop_assert_eq!(seen.len() + sent.dropped, admitted, "every input left once");
    Ok(())
}

/// How often a run met each case expiry and withdrawal are about, summed
/// over cases: the test fails if one is never met.
#[derive(Debug, Default)]
struct Reached {
    expired: u64,
    /// Expiries after close (closing does not stop inputs expiring).
    expired_closed: u64,
    withdrawn: u64,
    /// Withdrawals that kept an input they looked at and went on past it.
    withdrawn_past_a_kept_one: u64,
    /// Steps after which the next expiry came before the queue was due.
    expiry_before_due: u64,
}

#[test]
fn fifo_matches_the_model_step_by_step() {
    let config = ProptestConfig {
        cases: 10_000,
        // A failure prints its shrunk case; nothing is written to the tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let reached = RefCell::new(Reached::default());
    let mut runner = TestRunner::new(config);
    if let Err(failure) = runner.run(&case(), |case| run(&case, &mut reached.borrow_mut())) {
        panic!("{failure}");
    }
    let reached = reached.into_inner();
    eprintln!("fifo model: {reached:?}");
    let counts = [
        ("expired inputs", reached.expired),
        ("expiry after close", reached.expired_closed),
        ("withdrawn inputs", reached.withdrawn),
        (
            "withdrawal past a kept input",
            reached.withdrawn_past_a_kept_one,
        ),
        ("an expiry before the due time", reached.expiry_before_due),
    ];
    for (what, count) in counts {
        assert!(count > 0, "no case reached {what}: {reached:?}");
    }
}

// ---------------------------------------------------------------------------
// One test per promise.
// ---------------------------------------------------------------------------

fn ids(batch: Option<FifoBatch<u32>>) -> Vec<u32> {
    batch.expect("a batch is ready").items
}

#[test]
fn a_zero_delay_sends_whatever_is_waiting() {
    let mut fifo = Fifo::new(QueueConfig::default());
    fifo.admit(1, 1, at(0)).unwrap();
    assert!(fifo.has_ready());
    assert_eq!(
        fifo.next_deadline(),
        None,
        "readiness does not wait on time"
    );
    assert_eq!(ids(fifo.take(at(0))), [1]);

    // Batches grow only with what waits when a take comes.
    for item in 2..=4 {
        fifo.admit(item, 1, at(1)).unwrap();
    }
    assert_eq!(ids(fifo.take(at(1))), [2, 3, 4]);
    assert!(fifo.take(at(1)).is_none(), "nothing waits");
}

#[test]
fn a_partial_batch_waits_at_most_the_delay_from_its_oldest_input() {
    let mut fifo = Fifo::new(QueueConfig {
        max_batch_size: 10,
        max_batch_delay: at(100),
        ..QueueConfig::default()
    });
    fifo.admit(1, 1, at(10)).unwrap();
    fifo.admit(2, 1, at(60)).unwrap();
    assert!(!fifo.has_ready());
    assert_eq!(fifo.next_deadline(), Some(at(110)));
    assert!(fifo.take(at(109)).is_none(), "not due yet");
    assert_eq!(ids(fifo.take(at(110))), [1, 2], "due from the oldest input");
}

#[test]
fn after_a_take_the_deadline_follows_the_new_oldest_input() {
    let mut fifo = Fifo::new(QueueConfig {
        max_batch_size: 2,
        max_batch_delay: at(100),
        ..QueueConfig::default()
    });
    for (item, arrival) in [(1, 0), (2, 5), (3, 40)] {
        fifo.admit(item, 1, at(arrival)).unwrap();
    }
    assert_eq!(ids(fifo.take(at(40))), [1, 2], "full");
    assert_eq!(fifo.next_deadline(), Some(at(140)));
    assert!(fifo.take(at(139)).is_none());
    assert_eq!(ids(fifo.take(at(140))), [3]);
}

#[test]
fn a_full_queue_goes_at_once_by_count_or_by_weight() {
    let mut by_count = Fifo::new(QueueConfig {
        max_batch_size: 2,
        max_batch_delay: at(100),
        ..QueueConfig::default()
    });
    by_count.admit(1, 1, at(0)).unwrap();
    by_count.admit(2, 1, at(0)).unwrap();
    assert_eq!(ids(by_count.take(at(0))), [1, 2]);

    let mut by_weight = Fifo::new(QueueConfig {
        max_batch_weight: 5,
        max_batch_delay: at(100),
        ..QueueConfig::default()
    });
    by_weight.admit(1, 2, at(0)).unwrap();
    assert!(by_weight.take(at(0)).is_none(), "weight 2 of 5");
    by_weight.admit(2, 3, at(0)).unwrap();
    let batch = by_weight.take(at(0)).expect("weight 5 of 5 is full");
    assert_eq!((batch.items, batch.weight), (vec![1, 2], 5));
}

#[test]
fn a_batch_is_the_front_in_admission_order_within_both_bounds() {
    let mut fifo = Fifo::new(QueueConfig {
        max_batch_size: 3,
        max_batch_weight: 4,
        ..QueueConfig::default()
    });
    for (item, weight) in [(1, 1), (2, 1), (3, 1), (4, 1), (5, 3), (6, 4), (7, 0)] {
        fifo.admit(item, weight, at(0)).unwrap();
    }
    assert_eq!(ids(fifo.take(at(0))), [1, 2, 3], "by size");
    assert_eq!(ids(fifo.take(at(0))), [4, 5], "by weight: 1 + 3");
    assert_eq!(ids(fifo.take(at(0))), [6, 7], "4 + 0 still fits");
}

#[test]
fn several_batches_may_be_out_at_once() {
    let mut fifo = Fifo::new(QueueConfig {
        max_batch_size: 1,
        ..QueueConfig::default()
    });
    for item in 1..=3 {
        fifo.admit(item, 1, at(0)).unwrap();
    }
    // Nothing is busy: the caller counts its slots, not the queue.
    let out: Vec<Vec<u32>> = (0..3).map(|_| ids(fifo.take(at(0)))).collect();
    assert_eq!(out, [[1], [2], [3]]);
}

#[test]
fn close_makes_everything_ready() {
    let mut fifo = Fifo::new(QueueConfig {
        max_batch_size: 2,
        max_batch_delay: at(1_000),
        ..QueueConfig::default()
    });
    for item in 1..=3 {
        fifo.admit(item, 1, at(0)).unwrap();
    }
    assert_eq!(ids(fifo.take(at(0))), [1, 2]);
    assert!(fifo.take(at(1)).is_none(), "3 waits for its delay");

    fifo.close();
    assert!(fifo.has_ready());
    assert_eq!(fifo.next_deadline(), None);
    let refusal = fifo.admit(4, 1, at(1)).unwrap_err();
    assert_eq!((refusal.item, refusal.reason), (4, Refused::Closed));
    assert_eq!(ids(fifo.take(at(1))), [3], "delay ignored");
    assert!(fifo.take(at(1)).is_none());
}

#[test]
fn refusal_reasons_closed_before_too_heavy_before_full() {
    let mut fifo = Fifo::new(QueueConfig {
        max_batch_weight: 5,
        max_waiting: 1,
        ..QueueConfig::default()
    });
    fifo.admit(1, 1, at(0)).unwrap();
    let reason = |fifo: &mut Fifo<u32>, weight| fifo.admit(9, weight, at(0)).unwrap_err();
    assert_eq!(reason(&mut fifo, 1).reason, Refused::Full);
    assert_eq!(reason(&mut fifo, 6).reason, Refused::TooHeavy);
    fifo.close();
    assert_eq!(reason(&mut fifo, 6).reason, Refused::Closed);
}

#[test]
fn both_queueing_bounds_refuse_and_hand_the_input_back() {
    let mut by_count = Fifo::new(QueueConfig {
        max_waiting: 2,
        max_batch_delay: at(10),
        ..QueueConfig::default()
    });
    by_count.admit("a", 1, at(0)).unwrap();
    by_count.admit("b", 1, at(0)).unwrap();
    let refusal = by_count.admit("c", 1, at(0)).unwrap_err();
    assert_eq!((refusal.item, refusal.reason), ("c", Refused::Full));
    assert_eq!(by_count.waiting(), 2);

    let mut by_weight = Fifo::new(QueueConfig {
        max_waiting_weight: 10,
        max_batch_delay: at(10),
        ..QueueConfig::default()
    });
    by_weight.admit("a", 7, at(0)).unwrap();
    let refusal = by_weight.admit("b", 4, at(0)).unwrap_err();
    assert_eq!((refusal.item, refusal.reason), ("b", Refused::Full));
    by_weight.admit("c", 3, at(0)).unwrap();
    assert_eq!(by_weight.waiting_weight(), 10, "exactly at the bound");
}

#[test]
fn a_panic_while_consuming_loses_only_that_batch() {
    let mut fifo = Fifo::new(QueueConfig {
        max_batch_size: 2,
        ..QueueConfig::default()
    });
    for item in 1..=3 {
        fifo.admit(item, 1, at(0)).unwrap();
    }
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        fifo.take_with(at(0), |_items| panic!("consumer failed"))
    }));
    assert!(panicked.is_err());
    assert_eq!((fifo.waiting(), fifo.waiting_weight()), (1, 1));
    assert_eq!(ids(fifo.take(at(0))), [3]);
}

#[test]
#[should_panic(expected = "max_batch_size")]
fn an_invalid_config_is_refused_loudly() {
    let _ = Fifo::<u32>::new(QueueConfig {
        max_batch_size: 0,
        ..QueueConfig::default()
    });
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "time went backwards")]
fn time_going_backwards_is_caught_in_debug_builds() {
    let mut fifo = Fifo::new(QueueConfig::default());
    fifo.admit(1, 1, at(5)).unwrap();
    let _ = fifo.take(at(4));
}
