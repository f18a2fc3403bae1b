//! What one seed plays: the shard's bounds, the callers' inputs with their
//! arrival times, ranks and weights, and when the shard is closed. The batch
//! function's choices (latency, outcome) are drawn later, as batches start.

use std::time::Duration;

use ferry_shard::LanesConfig;

use super::rng::Rng;

/// Simulated time is counted in ticks of one microsecond.
pub fn at(tick: u64) -> Duration {
    Duration::from_micros(tick)
}

/// One caller's input. `payload` makes "handed back unchanged" mean
/// something more than an equal number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub id: u64,
    pub key: u32,
    pub payload: String,
}

impl Input {
    /// The output the simulated store gives for this input.
    pub fn output(&self) -> u64 {
        self.id * 7 + u64::from(self.key)
    }
}

#[derive(Clone, Debug)]
pub struct Arrival {
    pub tick: u64,
    pub input: Input,
    pub rank: i64,
    pub weight: u64,
    /// The caller drops its future right after submitting.
    pub drops_at_once: bool,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub config: LanesConfig,
    pub delay_ticks: u64,
    pub slots: usize,
    pub keys: u32,
    pub arrivals: Vec<Arrival>,
    /// `None`: closed only once nothing else is left to happen.
    pub close_tick: Option<u64>,
    /// Percent chance, at each quiet moment, that one waiting caller drops
    /// its future.
    pub drop_percent: u64,
    /// Latest batch latency, in ticks.
    pub latency_max: u64,
}

/// How a batch ends, as the batch function decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    Ok,
    Fail,
    Panic,
    /// Returns this many outputs, never the right number.
    WrongCount(usize),
    /// Does not finish before the shard is closed.
    HangUntilClose,
}

impl Scenario {
    pub fn generate(rng: &mut Rng) -> Self {
        let max_batch_size = if rng.chance(10) {
            64
        } else {
            rng.range(1, 5) as usize
        };
        let max_batch_weight = if rng.chance(50) {
            u64::MAX
        } else {
            rng.range(2, 8)
        };
        let delay_ticks = if rng.chance(40) { 0 } else { rng.range(1, 20) };
        let max_queueing = if rng.chance(50) {
            1_000_000
        } else {
            rng.range(1, 30) as usize
        };
        let max_queued_weight = if rng.chance(70) {
            u64::MAX
        } else {
            rng.range(3, 40)
        };
        let config = LanesConfig {
            max_batch_size,
            max_batch_weight,
            max_batch_delay: at(delay_ticks),
            max_queueing,
            max_queued_weight,
            ..LanesConfig::default()
        };
        let slots = rng.range(1, 4) as usize;
        let keys = rng.range(1, 6) as u32;
        let rank_mode = rng.below(3);
        let burst_percent = rng.range(0, 70);
        let gap_max = rng.range(1, 12);
        let count = rng.range(10, 150);

        let mut tick = 0;
        let mut arrivals = Vec::with_capacity(count as usize);
        for id in 0..count {
            if !rng.chance(burst_percent) {
                tick += rng.range(1, gap_max);
            }
            // Key 0 is hot: a key that always has more must not starve the
            // others (G7).
            let key = if rng.chance(30) {
                0
            } else {
                rng.below(keys as usize) as u32
            };
            let rank = match rank_mode {
                0 => 0,
                1 => rng.range(0, 4) as i64,
                _ => 50 - rng.range(0, 100) as i64,
            };
            let weight = if max_batch_weight != u64::MAX && rng.chance(4) {
                max_batch_weight + 1
            } else {
                rng.range(1, 3)
            };
            arrivals.push(Arrival {
                tick,
                input: Input {
                    id,
                    key,
                    payload: format!("input {id} of key {key}"),
                },
                rank,
                weight,
                drops_at_once: rng.chance(5),
            });
        }
        let close_tick = if rng.chance(10) {
            None
        } else {
            Some(rng.range(0, tick + 40))
        };
        Self {
            config,
            delay_ticks,
            slots,
            keys,
            arrivals,
            close_tick,
            drop_percent: rng.range(0, 30),
            latency_max: rng.range(0, 30),
        }
    }
}

impl Plan {
    /// The batch function's choice for a batch of `len` inputs.
    pub fn draw(rng: &mut Rng, len: usize) -> Self {
        match rng.below(100) {
            0..=69 => Plan::Ok,
            70..=77 => Plan::Fail,
            78..=85 => Plan::Panic,
            86..=92 => {
                let got = rng.range(0, len as u64 + 2) as usize;
                Plan::WrongCount(if got == len { len + 1 } else { got })
            }
            _ => Plan::HangUntilClose,
        }
    }
}
