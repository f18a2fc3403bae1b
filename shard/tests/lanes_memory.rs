//! G5: memory follows waiting work, not the number of keys ever seen.
//!
//! Waves of distinct keys (1,000,000 in all, none seen twice) go through
//! admit, take and complete until every lane is quiet. After each wave the
//! structure holds no lane and no waiting input, and what it keeps allocated
//! (lane places, deadline entries) is the same after the last wave as after
//! the first: it is sized by the peak of live lanes, not by the keys seen.

use std::time::Duration;

use ferry_shard::parts::{LaneId, Lanes};
use ferry_shard::QueueConfig;

const WAVES: u64 = 4;
const KEYS_PER_WAVE: u64 = 250_000;
/// Keys in flight at once inside a wave: the peak of live lanes.
const KEYS_LIVE_MAX: u64 = 1_000;
const INPUTS_PER_KEY: u64 = 3;

/// Sends every key of `keys` through: each gets a few inputs with mixed
/// ranks, at most `KEYS_LIVE_MAX` keys hold a lane at once, and the wave
/// ends when everything was taken and completed. Returns the time reached.
fn run_wave(lanes: &mut Lanes<u64, u64>, keys: std::ops::Range<u64>, mut now_us: u64) -> u64 {
    let mut busy: Vec<LaneId> = Vec::new();
    let mut admitted = 0_u64;
    let mut sent = 0_u64;
    let mut next_key = keys.start;
    loop {
        // Admit the next chunk of keys, each with a few inputs.
        let chunk_end = (next_key + KEYS_LIVE_MAX).min(keys.end);
        for key in next_key..chunk_end {
            for n in 0..INPUTS_PER_KEY {
                let rank = ((key + n) % 3) as i64;
                lanes
                    .admit(
                        key,
                        key * INPUTS_PER_KEY + n,
                        rank,
                        1,
                        Duration::from_micros(now_us),
                    )
                    .expect("within bounds");
                admitted += 1;
            }
        }
        next_key = chunk_end;
        now_us += 10;

        // Drain: take every ready lane, then complete all of them. Partial
        // lanes become due within the delay, so time moves on meanwhile.
        while lanes.lanes() > 0 {
            let now = Duration::from_micros(now_us);
            while let Some(batch) = lanes.take(now) {
                sent += batch.items.len() as u64;
                busy.push(batch.lane);
            }
            for lane in busy.drain(..) {
                lanes.complete(lane, now);
            }
            now_us += 10;
        }
        if next_key == keys.end {
            break;
        }
    }
    assert_eq!(sent, admitted, "every admitted input was sent once");
    now_us
}

#[test]
fn g5_a_million_distinct_keys_leave_no_lane_and_no_growth() {
    let mut lanes: Lanes<u64, u64> = Lanes::new(QueueConfig {
        // Smaller than the inputs per key, so a lane is taken more than
        // once and sometimes waits for its deadline after a batch.
        max_batch_size: 2,
        max_batch_delay: Duration::from_micros(20),
        max_waiting: (KEYS_LIVE_MAX * INPUTS_PER_KEY) as usize,
        ..QueueConfig::default()
    });
    let mut now_us = 0;
    let mut after_first_wave = None;
    for wave in 0..WAVES {
        let keys = wave * KEYS_PER_WAVE..(wave + 1) * KEYS_PER_WAVE;
        now_us = run_wave(&mut lanes, keys, now_us);

        assert_eq!(lanes.lanes(), 0, "wave {wave}: no lane once quiet");
        assert_eq!(lanes.waiting(), 0, "wave {wave}");
        assert_eq!(lanes.waiting_weight(), 0, "wave {wave}");
        assert_eq!(lanes.busy(), 0, "wave {wave}");
        assert_eq!(lanes.ready(), 0, "wave {wave}");
        assert_eq!(lanes.next_deadline(), None, "wave {wave}");
        let kept = (lanes.places_allocated(), lanes.deadlines_queued());
        assert!(
            kept.0 <= KEYS_LIVE_MAX as usize,
            "wave {wave}: {} places for at most {KEYS_LIVE_MAX} live lanes",
            kept.0
        );
        match after_first_wave {
            None => after_first_wave = Some(kept),
            Some(first) => assert_eq!(kept, first, "wave {wave}: places and deadline entries kept"),
        }
    }
    assert_eq!(WAVES * KEYS_PER_WAVE, 1_000_000);
}
