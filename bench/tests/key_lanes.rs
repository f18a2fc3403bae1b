//! single-lock's queue discipline, [`KeyLanes`], step by step: a key's
//! inputs go in the order they came, a key has one batch in flight at
//! most, ready lanes go first come first served, a partial lane waits for
//! its delay, a refusal hands the input back, and a close lets everything
//! waiting go. Then a long random run against a plain model.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use ferry_bench::systems::key_lanes::{Batch, KeyLanes, Limits, Refused};

fn lanes(max_batch_size: usize, max_batch_delay: Duration, max_waiting: usize) -> KeyLanes<u32> {
    KeyLanes::new(Limits {
        max_batch_size,
        max_batch_delay,
        max_waiting,
    })
}

fn batch(key: u64, inputs: &[u32]) -> Option<Batch<u32>> {
    Some(Batch {
        key,
        inputs: inputs.to_vec(),
    })
}

#[test]
fn a_key_s_inputs_go_in_the_order_they_came() {
    let now = Instant::now();
    let mut lanes = lanes(2, Duration::ZERO, 100);
    for input in [1, 2, 3, 4, 5] {
        lanes.admit(7, input, now).unwrap();
    }
    for expected in [&[1, 2][..], &[3, 4], &[5]] {
        assert_eq!(lanes.take(now), batch(7, expected));
        lanes.complete(7, now);
    }
    assert_eq!(lanes.take(now), None);
}

#[test]
fn a_key_has_one_batch_in_flight_at_most() {
    let now = Instant::now();
    let mut lanes = lanes(2, Duration::ZERO, 100);
    lanes.admit(1, 10, now).unwrap();
    assert_eq!(lanes.take(now), batch(1, &[10]));
    // Key 1 is busy: its new inputs wait, full or not, while key 2's go.
    for input in [11, 12, 13] {
        lanes.admit(1, input, now).unwrap();
    }
    lanes.admit(2, 20, now).unwrap();
    assert_eq!(lanes.take(now), batch(2, &[20]));
    assert_eq!(lanes.take(now), None);
    assert_eq!(lanes.waiting(), 3);
    lanes.complete(1, now);
    assert_eq!(lanes.take(now), batch(1, &[11, 12]));
    assert_eq!(lanes.take(now), None, "key 1 is busy again");
}

#[test]
fn ready_lanes_go_first_come_first_served() {
    let now = Instant::now();
    let mut lanes = lanes(2, Duration::ZERO, 100);
    for (key, input) in [(3, 30), (1, 10), (2, 20), (3, 31), (3, 32)] {
        lanes.admit(key, input, now).unwrap();
    }
    assert_eq!(lanes.take(now), batch(3, &[30, 31]));
    // Key 3 completes with an input left: it joins the back of the line.
    lanes.complete(3, now);
    assert_eq!(lanes.take(now), batch(1, &[10]));
    assert_eq!(lanes.take(now), batch(2, &[20]));
    assert_eq!(lanes.take(now), batch(3, &[32]));
}

#[test]
fn a_partial_lane_waits_for_its_delay_and_a_full_one_does_not() {
    let start = Instant::now();
    let delay = Duration::from_millis(5);
    let mut lanes = lanes(3, delay, 100);
    lanes.admit(1, 10, start).unwrap();
    let later = start + Duration::from_millis(1);
    lanes.admit(2, 20, later).unwrap();
    assert_eq!(lanes.take(later), None);
    assert_eq!(lanes.next_due(), Some(start + delay));
    for input in [21, 22] {
        lanes.admit(2, input, later).unwrap();
    }
    assert_eq!(lanes.take(later), batch(2, &[20, 21, 22]), "full");
    assert_eq!(lanes.take(start + delay), batch(1, &[10]), "due");
    assert!(!lanes.has_ready());
}

#[test]
fn a_busy_lane_due_meanwhile_is_ready_once_completed() {
    let start = Instant::now();
    let delay = Duration::from_millis(5);
    let mut lanes = lanes(2, delay, 100);
    lanes.admit(1, 10, start).unwrap();
    lanes.admit(1, 11, start).unwrap();
    assert_eq!(lanes.take(start), batch(1, &[10, 11]));
    lanes.admit(1, 12, start).unwrap();
    let past_due = start + 2 * delay;
    assert_eq!(lanes.take(past_due), None, "busy");
    lanes.complete(1, past_due);
    assert_eq!(lanes.take(past_due), batch(1, &[12]));
}

#[test]
fn a_refusal_hands_the_input_back() {
    let now = Instant::now();
    let mut lanes = lanes(1, Duration::ZERO, 2);
    lanes.admit(1, 10, now).unwrap();
    lanes.admit(2, 20, now).unwrap();
    assert_eq!(lanes.admit(3, 30, now), Err(Refused::Full(30)));
    // What is in flight no longer waits: room for one more.
    assert_eq!(lanes.take(now), batch(1, &[10]));
    lanes.admit(3, 30, now).unwrap();
    assert_eq!(
        lanes.admit(4, 40, now).map_err(Refused::into_input),
        Err(40)
    );
    lanes.close();
    lanes.complete(1, now);
    assert_eq!(lanes.admit(1, 11, now), Err(Refused::Closed(11)));
}

#[test]
fn a_close_lets_everything_waiting_go_and_then_drains() {
    let now = Instant::now();
    let mut lanes = lanes(4, Duration::from_secs(3600), 100);
    for (key, input) in [(2, 20), (1, 10), (3, 30)] {
        lanes.admit(key, input, now).unwrap();
    }
    assert_eq!(lanes.take(now), None, "partial and not due");
    lanes.admit(1, 11, now).unwrap();
    lanes.close();
    assert_eq!(lanes.next_due(), None);
    // First come, first served: in the order each lane's oldest input came.
    assert_eq!(lanes.take(now), batch(2, &[20]));
    assert_eq!(lanes.take(now), batch(1, &[10, 11]));
    assert_eq!(lanes.take(now), batch(3, &[30]));
    assert!(!lanes.is_drained(), "three batches in flight");
    for key in [1, 2, 3] {
        lanes.complete(key, now);
    }
    assert!(lanes.is_drained());
}

/// A random run of admissions, takes, completions and waits, checked
/// against a model of plain lists: every batch is the next inputs of its
/// key in admission order, at most `max_batch_size`; no key is taken while
/// its batch is in flight; nothing is taken only when no idle key is full
/// or due; what waits never passes `max_waiting`; and after a close every
/// input admitted has gone in exactly one batch.
#[test]
fn a_random_run_keeps_every_promise() {
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |below: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % below
    };
    let (size, delay, bound) = (3, Duration::from_millis(2), 20);
    let mut lanes = lanes(size, delay, bound);
    let mut now = Instant::now();
    // Per key, the inputs admitted and not yet taken, oldest first, each
    // with when it was admitted.
    let mut model: BTreeMap<u64, VecDeque<(u32, Instant)>> = BTreeMap::new();
    let mut in_flight: Vec<u64> = Vec::new();
    let (mut admitted, mut sent) = (0_u32, 0_u32);
    for step in 0..20_000 {
        if step == 19_000 {
            lanes.close();
        }
        match next(4) {
            0 | 1 => {
                let key = next(5);
                match lanes.admit(key, admitted, now) {
                    Ok(()) => {
                        model.entry(key).or_default().push_back((admitted, now));
                        admitted += 1;
                    }
                    Err(Refused::Full(_)) => assert_eq!(lanes.waiting(), bound),
                    Err(Refused::Closed(_)) => assert!(step >= 19_000),
                }
            }
            2 => match lanes.take(now) {
                Some(batch) => {
                    assert!(!in_flight.contains(&batch.key), "one batch per key");
                    assert!(batch.inputs.len() <= size);
                    let waiting = model.get_mut(&batch.key).expect("a key with inputs");
                    let expected: Vec<u32> = waiting
                        .drain(..batch.inputs.len())
                        .map(|(input, _)| input)
                        .collect();
                    assert_eq!(batch.inputs, expected, "the key's next inputs");
                    sent += batch.inputs.len() as u32;
                    in_flight.push(batch.key);
                }
                None => {
                    for (key, waiting) in &model {
                        let ready = waiting.len() >= size
                            || waiting.front().is_some_and(|&(_, at)| at + delay <= now);
                        assert!(
                            in_flight.contains(key) || !ready,
                            "key {key} is ready and idle, yet nothing was taken"
                        );
                    }
                }
            },
            _ if !in_flight.is_empty() && next(2) == 0 => {
                let key = in_flight.swap_remove(next(in_flight.len() as u64) as usize);
                lanes.complete(key, now);
            }
            _ => now += Duration::from_micros(next(1_000)),
        }
        let waiting: usize = model.values().map(VecDeque::len).sum();
        assert_eq!(lanes.waiting(), waiting);
        assert!(waiting <= bound);
    }
    // Closed: every lane is ready, so what waits goes, a batch a key at a time.
    while !lanes.is_drained() {
        match lanes.take(now) {
            Some(batch) => {
                sent += batch.inputs.len() as u32;
                lanes.complete(batch.key, now);
            }
            None => {
                let key = in_flight.pop().expect("nothing ready: a batch in flight");
                lanes.complete(key, now);
            }
        }
    }
    assert_eq!(sent, admitted);
    assert!(admitted > 1_000, "the run admitted {admitted}");
}
