//! What one seed plays: the shard's bounds, the callers' inputs with their
//! arrival times, ranks and weights, and when the shard is closed. The batch
//! function's choices (latency, outcome) are drawn later, as batches start.
//!
//! The overload settings (`max_queue_time`, `withdraw_on_drop`,
//! `max_waiting_per_key` with a hot key) and the moments of flushes,
//! callers dropping and withdrawal notices come from a second generator, so
//! that a seed that draws none of them (a *plain* seed) plays exactly the
//! run it played before they existed.

use std::sync::Arc;

use ferry_shard::QueueConfig;

use super::arrival::{at, Played};
use super::draws::{self, QueueBounds};
use super::rng::Rng;

/// A keyed caller's arrival.
pub type Arrival = super::arrival::Arrival<Input>;

/// One caller's input. `payload` makes "handed back unchanged" mean
/// something more than an equal number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub id: u64,
    pub key: u32,
    pub payload: String,
    /// Shared by every copy of this input: the scenario keeps one, so a
    /// count of one means no one else (the shard, a batch, an answer)
    /// holds the input any more. That is how the simulation sees which
    /// inputs the shard withdrew, whose callers are gone.
    pub copies: Arc<()>,
}

impl Played for Input {
    fn id(&self) -> u64 {
        self.id
    }

    fn output(&self) -> u64 {
        self.id * 7 + u64::from(self.key)
    }

    fn is_held(&self) -> bool {
        Arc::strong_count(&self.copies) > 1
    }
}

/// The overload settings and moments of one seed; all off for a plain seed.
#[derive(Clone, Debug, Default)]
pub struct Overload {
    /// `max_queue_time`, in ticks.
    pub queue_time: Option<u64>,
    pub withdraw_on_drop: bool,
    /// `max_waiting_per_key`.
    pub queueing_per_key_max: Option<usize>,
    /// Percent of inputs that go to the hot key 0, besides its usual share.
    pub hot_percent: u64,
    /// Percent chance that a caller who drops its future sends a withdrawal
    /// notice, which reaches the shard `0..=notice_lag_max` ticks later.
    /// The other drops are only found when their batch is taken.
    pub notice_percent: u64,
    pub notice_lag_max: u64,
    /// When flushes are requested, in ascending order.
    pub flush_ticks: Vec<u64>,
}

impl Overload {
    pub fn is_plain(&self) -> bool {
        self.queue_time.is_none()
            && !self.withdraw_on_drop
            && self.queueing_per_key_max.is_none()
            && self.hot_percent == 0
            && self.notice_percent == 0
            && self.flush_ticks.is_empty()
    }

    /// A quarter of the seeds are plain; the others turn each setting on
    /// or off on their own, so that every mix occurs.
    fn generate(rng: &mut Rng) -> Self {
        if rng.chance(25) {
            return Self::default();
        }
        let queue_time = rng.chance(50).then(|| rng.range(1, 40));
        let withdraw_on_drop = rng.chance(60);
        let queueing_per_key_max = rng.chance(45).then(|| rng.range(1, 8) as usize);
        let hot_percent = if queueing_per_key_max.is_some() || rng.chance(20) {
            rng.range(30, 90)
        } else {
            0
        };
        let notice_percent = if rng.chance(80) {
            rng.range(20, 100)
        } else {
            0
        };
        let flush_ticks = draws::flush_ticks(rng);
        Self {
            queue_time,
            withdraw_on_drop,
            queueing_per_key_max,
            hot_percent,
            notice_percent,
            notice_lag_max: rng.range(0, 10),
            flush_ticks,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub config: QueueConfig,
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
    pub overload: Overload,
}

impl Scenario {
    /// The scenario of a seed: `rng` draws what plain seeds always drew, in
    /// the same order; `extra` draws the overload settings and moments.
    pub fn generate(rng: &mut Rng, extra: &mut Rng) -> Self {
        let overload = Overload::generate(extra);
        let QueueBounds {
            batch_size_max: max_batch_size,
            batch_weight_max: max_batch_weight,
            delay: delay_ticks,
            waiting_max: max_waiting,
            waiting_weight_max: max_waiting_weight,
        } = draws::queue_bounds(rng, 5);
        // Some seeds end with a burst on the hot key, with no bound to stop
        // it, so that its lane grows past what one withdrawal notice looks
        // at, and many of those callers leave.
        let deep = overload.withdraw_on_drop
            && overload.hot_percent > 0
            && overload.queueing_per_key_max.is_none()
            && extra.chance(40);
        let config = QueueConfig {
            max_batch_size,
            max_batch_weight,
            max_batch_delay: at(delay_ticks),
            max_waiting: if deep { 1_000_000 } else { max_waiting },
            max_waiting_weight: if deep { u64::MAX } else { max_waiting_weight },
            max_waiting_per_key: overload.queueing_per_key_max.unwrap_or(usize::MAX),
            max_queue_time: overload.queue_time.map(at),
            withdraw_on_drop: overload.withdraw_on_drop,
            hold: None,
            boundaries: false,
        };
        let slots = rng.range(1, 4) as usize;
        let keys = rng.range(1, 6) as u32;
        let rank_mode = rng.below(3);
        let burst_percent = rng.range(0, 70);
        let gap_max = rng.range(1, 12);
        let count_before_burst = rng.range(10, 150);
        let count = if deep {
            count_before_burst + extra.range(150, 300)
        } else {
            count_before_burst
        };
        let drop_percent = if overload.is_plain() {
            0
        } else if deep {
            40
        } else {
            extra.range(0, 25)
        };

        let mut tick = 0;
        let mut arrivals = Vec::with_capacity(count as usize);
        for id in 0..count {
            let burst = id >= count_before_burst;
            if !burst && !rng.chance(burst_percent) {
                tick += rng.range(1, gap_max);
            }
            // Key 0 is hot: a key that always has more must not starve the
            // others (G7). With `hot_percent`, hotter still.
            let key = if burst || extra.chance(overload.hot_percent) || rng.chance(30) {
                0
            } else {
                rng.below(keys as usize) as u32
            };
            let rank = match rank_mode {
                0 => 0,
                1 => rng.range(0, 4) as i64,
                _ => 50 - rng.range(0, 100) as i64,
            };
            let weight = draws::weight(rng, max_batch_weight);
            arrivals.push(Arrival {
                tick,
                input: Input {
                    id,
                    key,
                    payload: format!("input {id} of key {key}"),
                    copies: Arc::new(()),
                },
                rank,
                weight,
                drops_at_once: rng.chance(5),
                drops_after: extra.chance(drop_percent).then(|| extra.range(0, 40)),
            });
        }
        let close_tick = draws::close_tick(rng, tick);
        Self {
            config,
            delay_ticks,
            slots,
            keys,
            arrivals,
            close_tick,
            drop_percent: rng.range(0, 30),
            latency_max: rng.range(0, 30),
            overload,
        }
    }
}

/// A seed's trip bounds, when it plays with trips: few batches a trip, or
/// many; the weight unbounded, or a few inputs' worth.
pub fn trip_limits(rng: &mut Rng) -> ferry_shard::parts::TripLimits {
    ferry_shard::parts::TripLimits {
        max_batches: if rng.chance(15) {
            64
        } else {
            rng.range(1, 4) as usize
        },
        max_weight: if rng.chance(40) {
            u64::MAX
        } else {
            rng.range(1, 10)
        },
    }
}
