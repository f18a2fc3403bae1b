//! `Lanes` against a deliberately plain model, step by step.
//!
//! The model below knows nothing of places, hash tables, epochs or deadline
//! queues: it keeps every waiting input of the shard in one `Vec`, the busy
//! keys in another and the ready line in a third, and answers every question
//! by a linear scan. It is written from the spec (SPEC §1, §2) so that the two
//! can disagree. A proptest drives random sequences of admit, advance time,
//! take, complete, close and next-deadline on both, and compares every
//! observable after every step.

use std::time::Duration;

use ferry_shard::parts::{LaneId, LaneState, Lanes};
use ferry_shard::{LanesConfig, Refused};
use proptest::prelude::*;

/// Time in the test is counted in ticks of one microsecond.
fn at(tick: u64) -> Duration {
    Duration::from_micros(tick)
}

// ---------------------------------------------------------------------------
// The model.
// ---------------------------------------------------------------------------

/// The bounds, as plain numbers (the delay in ticks).
#[derive(Clone, Copy, Debug)]
struct Bounds {
    batch_size_max: usize,
    batch_weight_max: u64,
    queueing_max: usize,
    queued_weight_max: u64,
    delay_ticks: u64,
}

impl Bounds {
    fn to_config(self) -> LanesConfig {
        LanesConfig {
            max_batch_size: self.batch_size_max,
            max_batch_weight: self.batch_weight_max,
            max_batch_delay: at(self.delay_ticks),
            max_queueing: self.queueing_max,
            max_queued_weight: self.queued_weight_max,
            ..LanesConfig::default()
        }
    }
}

/// One admitted input that has not been sent yet.
#[derive(Clone, Debug)]
struct Entry {
    key: u32,
    rank: i64,
    /// Admission order over the whole shard.
    seq: u64,
    arrival: u64,
    weight: u64,
    id: u64,
}

/// What a `take` hands out, reduced to what can be compared.
#[derive(Debug, PartialEq, Eq)]
struct Taken {
    key: u32,
    ids: Vec<u64>,
    weight: u64,
}

#[derive(Debug)]
struct Model {
    bounds: Bounds,
    now: u64,
    seq_next: u64,
    /// Every waiting input of every key, in admission order.
    waiting: Vec<Entry>,
    /// Keys whose batch is in flight.
    busy: Vec<u32>,
    /// Keys in the ready line, front first.
    ready_line: Vec<u32>,
    closed: bool,
}

impl Model {
    fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            now: 0,
            seq_next: 0,
            waiting: Vec::new(),
            busy: Vec::new(),
            ready_line: Vec::new(),
            closed: false,
        }
    }

    /// A key's waiting inputs in the order they will be sent: by rank, ties
    /// by admission.
    fn inputs_of(&self, key: u32) -> Vec<Entry> {
        let mut inputs: Vec<Entry> = self
            .waiting
            .iter()
            .filter(|e| e.key == key)
            .cloned()
            .collect();
        inputs.sort_by_key(|e| (e.rank, e.seq));
        inputs
    }

    fn weight_of(&self, key: u32) -> u64 {
        self.waiting
            .iter()
            .filter(|e| e.key == key)
            .map(|e| e.weight)
            .sum()
    }

    /// The key's oldest waiting input by arrival, ties by admission.
    fn oldest_of(&self, key: u32) -> Option<&Entry> {
        self.waiting
            .iter()
            .filter(|e| e.key == key)
            .min_by_key(|e| (e.arrival, e.seq))
    }

    fn due_time_of(&self, key: u32) -> Option<u64> {
        self.oldest_of(key)
            .map(|e| e.arrival + self.bounds.delay_ticks)
    }

    fn is_full(&self, key: u32) -> bool {
        self.inputs_of(key).len() >= self.bounds.batch_size_max
            || self.weight_of(key) >= self.bounds.batch_weight_max
    }

    fn is_due(&self, key: u32) -> bool {
        self.due_time_of(key).is_some_and(|due| due <= self.now)
    }

    fn state_of(&self, key: u32) -> Option<LaneState> {
        if self.busy.contains(&key) {
            Some(LaneState::Busy)
        } else if self.ready_line.contains(&key) {
            Some(LaneState::Ready)
        } else if self.waiting.iter().any(|e| e.key == key) {
            Some(LaneState::Waiting)
        } else {
            None
        }
    }

    /// Keys that have a lane, each once.
    fn keys_alive(&self) -> Vec<u32> {
        let mut keys: Vec<u32> = self
            .waiting
            .iter()
            .map(|e| e.key)
            .chain(self.busy.iter().copied())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Keys whose lane is waiting, oldest waiting input first.
    fn keys_waiting_oldest_first(&self) -> Vec<u32> {
        let mut keys: Vec<u32> = self
            .keys_alive()
            .into_iter()
            .filter(|&k| self.state_of(k) == Some(LaneState::Waiting))
            .collect();
        keys.sort_by_key(|&k| {
            let oldest = self.oldest_of(k).expect("a waiting lane has inputs");
            (oldest.arrival, oldest.seq)
        });
        keys
    }

    fn admit(&mut self, key: u32, id: u64, rank: i64, weight: u64) -> Result<(), (u64, Refused)> {
        let count: usize = self.waiting.len();
        let weight_waiting: u64 = self.waiting.iter().map(|e| e.weight).sum();
        if self.closed {
            return Err((id, Refused::Closed));
        }
        if weight > self.bounds.batch_weight_max {
            return Err((id, Refused::TooHeavy));
        }
        if count + 1 > self.bounds.queueing_max
            || weight_waiting + weight > self.bounds.queued_weight_max
        {
            return Err((id, Refused::Full));
        }
        self.promote_due();
        self.waiting.push(Entry {
            key,
            rank,
            seq: self.seq_next,
            arrival: self.now,
            weight,
            id,
        });
        self.seq_next += 1;
        // An idle lane is ready at once without a delay, or as soon as it is
        // full; a busy lane waits for its batch to complete first.
        if self.state_of(key) == Some(LaneState::Waiting)
            && (self.bounds.delay_ticks == 0 || self.is_full(key))
        {
            self.ready_line.push(key);
        }
        Ok(())
    }

    /// Waiting lanes that are due join the line, in the order they became
    /// due: by their oldest input's arrival, ties by its admission. Every
    /// step that can change the line does this first, so a lane that fell
    /// due is never passed by one that became ready later (G7).
    fn promote_due(&mut self) {
        for key in self.keys_waiting_oldest_first() {
            if self.is_due(key) {
                self.ready_line.push(key);
            }
        }
    }

    fn take(&mut self) -> Option<Taken> {
        self.promote_due();
        if self.ready_line.is_empty() {
            return None;
        }
        let key = self.ready_line.remove(0);
        let mut ids = Vec::new();
        let mut weight = 0;
        for input in self.inputs_of(key) {
            let fits = ids.is_empty() || weight + input.weight <= self.bounds.batch_weight_max;
            if ids.len() == self.bounds.batch_size_max || !fits {
                break;
            }
            ids.push(input.id);
            weight += input.weight;
        }
        self.waiting.retain(|e| !ids.contains(&e.id));
        self.busy.push(key);
        Some(Taken { key, ids, weight })
    }

    fn complete(&mut self, key: u32) {
        self.promote_due();
        let at = self
            .busy
            .iter()
            .position(|&k| k == key)
            .expect("completing a busy key");
        self.busy.remove(at);
        if !self.waiting.iter().any(|e| e.key == key) {
            return; // The lane is gone.
        }
        if self.closed || self.bounds.delay_ticks == 0 || self.is_due(key) || self.is_full(key) {
            self.ready_line.push(key);
        }
    }

    fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        for key in self.keys_waiting_oldest_first() {
            self.ready_line.push(key);
        }
    }

    fn lanes(&self) -> usize {
        self.keys_alive().len()
    }

    fn waiting_weight(&self) -> u64 {
        self.waiting.iter().map(|e| e.weight).sum()
    }
}

// ---------------------------------------------------------------------------
// The operations and the harness.
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Admit {
        key: u32,
        rank: i64,
        weight: u64,
    },
    Advance(u64),
    Take,
    /// Completes the busy lane at this index (modulo their number), if any.
    Complete(usize),
    Close,
    NextDeadline,
}

#[derive(Clone, Debug)]
struct Case {
    bounds: Bounds,
    keys: u32,
    /// Ask for the next deadline after every step too. It drops stale
    /// entries, so half of the cases leave them for `take` to meet.
    probe_deadline_every_step: bool,
    ops: Vec<Op>,
}

fn bounds() -> impl Strategy<Value = Bounds> {
    (
        1..=4_usize,
        prop_oneof![Just(u64::MAX), 1..=5_u64],
        1..=12_usize,
        prop_oneof![Just(u64::MAX), 1..=20_u64],
        prop_oneof![1 => Just(0_u64), 3 => 1..=4_u64],
    )
        .prop_map(
            |(batch_size_max, batch_weight_max, queueing_max, queued_weight_max, delay_ticks)| {
                Bounds {
                    batch_size_max,
                    batch_weight_max,
                    queueing_max,
                    queued_weight_max,
                    delay_ticks,
                }
            },
        )
}

fn op(keys: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        200 => (0..keys, 0..3_i64, 1..=3_u64)
            .prop_map(|(key, rank, weight)| Op::Admit { key, rank, weight }),
        100 => (0..=3_u64).prop_map(Op::Advance),
        120 => Just(Op::Take),
        100 => (0..4_usize).prop_map(Op::Complete),
        20 => Just(Op::NextDeadline),
        // Rare, so that most sequences run open (every one is closed and
        // drained at its end anyway).
        2 => Just(Op::Close),
    ]
}

/// Operations per generated sequence: long enough to fill, drain and refill
/// a few lanes, short enough for 10,000 cases in a debug build.
const OPS_PER_CASE_MAX: usize = 80;

fn case() -> impl Strategy<Value = Case> {
    (bounds(), 2..=4_u32, any::<bool>()).prop_flat_map(|(bounds, keys, probe)| {
        prop::collection::vec(op(keys), 1..=OPS_PER_CASE_MAX).prop_map(move |ops| Case {
            bounds,
            keys,
            probe_deadline_every_step: probe,
            ops,
        })
    })
}

/// Checks `Lanes::next_deadline` against the model.
///
/// It is exact while every lane that holds inputs is waiting. A lane that is
/// busy or ready may keep its oldest input's deadline pending (it may wait
/// again after its batch), so then the answer may come earlier than the
/// earliest waiting lane's due time, but never before the earliest due time
/// of any lane that holds inputs, and never later than a waiting lane's.
fn check_next_deadline(lanes: &mut Lanes<u32, u64>, model: &Model) -> Result<(), TestCaseError> {
    let got = lanes.next_deadline();
    let due_any = model
        .keys_alive()
        .into_iter()
        .filter_map(|k| model.due_time_of(k))
        .min();
    let due_waiting = model
        .keys_waiting_oldest_first()
        .into_iter()
        .filter_map(|k| model.due_time_of(k))
        .min();
    let all_holding_inputs_wait = model
        .keys_alive()
        .into_iter()
        .filter(|&k| model.due_time_of(k).is_some())
        .all(|k| model.state_of(k) == Some(LaneState::Waiting));

    if model.closed || model.bounds.delay_ticks == 0 || due_any.is_none() {
        prop_assert_eq!(got, None, "no lane can become due");
        return Ok(());
    }
    let due_any = at(due_any.expect("checked above"));
    match due_waiting.map(at) {
        Some(due_waiting) if all_holding_inputs_wait => {
            prop_assert_eq!(
                got,
                Some(due_waiting),
                "the earliest waiting lane's due time"
            );
        }
        Some(due_waiting) => {
            let got = got.expect("a waiting lane must have a deadline");
            prop_assert!(
                got <= due_waiting,
                "{got:?} is later than a waiting lane's due time {due_waiting:?}"
            );
            prop_assert!(
                got >= due_any,
                "{got:?} is earlier than every lane's due time {due_any:?}"
            );
        }
        None => {
            if let Some(got) = got {
                prop_assert!(
                    got >= due_any,
                    "{got:?} is earlier than every lane's due time {due_any:?}"
                );
            }
        }
    }
    Ok(())
}

/// Compares every observable that does not change the structure.
fn check_gauges(lanes: &Lanes<u32, u64>, model: &Model, keys: u32) -> Result<(), TestCaseError> {
    prop_assert_eq!(lanes.lanes(), model.lanes(), "lanes");
    prop_assert_eq!(lanes.waiting(), model.waiting.len(), "waiting");
    prop_assert_eq!(
        lanes.waiting_weight(),
        model.waiting_weight(),
        "waiting_weight"
    );
    prop_assert_eq!(lanes.busy(), model.busy.len(), "busy");
    prop_assert_eq!(lanes.ready(), model.ready_line.len(), "ready");
    prop_assert_eq!(lanes.has_ready(), !model.ready_line.is_empty(), "has_ready");
    prop_assert_eq!(lanes.is_closed(), model.closed, "is_closed");
    for key in 0..keys {
        prop_assert_eq!(
            lanes.lane_state(&key),
            model.state_of(key),
            "lane_state of key {}",
            key
        );
    }
    Ok(())
}

fn run(case: &Case) -> Result<(), TestCaseError> {
    let mut lanes: Lanes<u32, u64> = Lanes::new(case.bounds.to_config());
    let mut model = Model::new(case.bounds);
    // The lane id of each busy key, as `take` handed it out.
    let mut lane_ids: Vec<(u32, LaneId)> = Vec::new();
    let mut id_next = 0_u64;

    for (step, op) in case.ops.iter().enumerate() {
        let now = at(model.now);
        match *op {
            Op::Admit { key, rank, weight } => {
                let id = id_next;
                id_next += 1;
                let got = lanes
                    .admit(key, id, rank, weight, now)
                    .map_err(|refusal| (refusal.item, refusal.reason));
                let want = model.admit(key, id, rank, weight);
                prop_assert_eq!(got, want, "step {}: admit", step);
            }
            Op::Advance(ticks) => model.now += ticks,
            Op::Take => {
                let got = lanes.take(now);
                let want = model.take();
                match (got, want) {
                    (None, None) => {}
                    (Some(batch), Some(want)) => {
                        let got = Taken {
                            key: batch.key,
                            ids: batch.items,
                            weight: batch.weight,
                        };
                        prop_assert_eq!(&got, &want, "step {}: take", step);
                        prop_assert!(
                            lane_ids.iter().all(|&(_, id)| id != batch.lane),
                            "step {}: a lane id handed out twice",
                            step
                        );
                        lane_ids.push((batch.key, batch.lane));
                    }
                    (got, want) => {
                        let got = got.map(|b| (b.key, b.items));
                        prop_assert!(
                            false,
                            "step {}: take gave {:?}, the model {:?}",
                            step,
                            got,
                            want
                        );
                    }
                }
            }
            Op::Complete(index) => {
                if !model.busy.is_empty() {
                    let key = model.busy[index % model.busy.len()];
                    let at_index = lane_ids
                        .iter()
                        .position(|&(k, _)| k == key)
                        .expect("busy key has a lane id");
                    let (_, lane) = lane_ids.remove(at_index);
                    lanes.complete(lane, now);
                    model.complete(key);
                }
            }
            Op::Close => {
                lanes.close();
                model.close();
            }
            Op::NextDeadline => check_next_deadline(&mut lanes, &model)?,
        }
        check_gauges(&lanes, &model, case.keys)?;
        if case.probe_deadline_every_step {
            check_next_deadline(&mut lanes, &model)?;
        }
    }

    // Closing and draining answers everything: nothing admitted is lost.
    lanes.close();
    model.close();
    let mut sent = 0;
    loop {
        while let Some((key, lane)) = lane_ids.pop() {
            lanes.complete(lane, at(model.now));
            model.complete(key);
        }
        let (got, want) = (lanes.take(at(model.now)), model.take());
        match (got, want) {
            (None, None) => break,
            (Some(batch), Some(want)) => {
                prop_assert_eq!(batch.key, want.key, "drain: key");
                prop_assert_eq!(&batch.items, &want.ids, "drain: items");
                sent += batch.items.len();
                lane_ids.push((batch.key, batch.lane));
            }
            (got, want) => {
                let got = got.map(|b| (b.key, b.items));
                prop_assert!(false, "drain: take gave {:?}, the model {:?}", got, want);
            }
        }
        check_gauges(&lanes, &model, case.keys)?;
    }
    prop_assert!(sent <= id_next as usize);
    prop_assert_eq!(lanes.lanes(), 0, "every lane is gone once drained");
    prop_assert_eq!(lanes.waiting(), 0);
    prop_assert_eq!(lanes.next_deadline(), None);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 10_000,
        // A failure prints its shrunk case; nothing is written to the tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn lanes_match_the_model_step_by_step(case in case()) {
        run(&case)?;
    }
}
