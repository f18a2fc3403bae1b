//! What one seed of the unkeyed simulation plays: the shard's bounds, the
//! callers' inputs with their arrival times and weights (some too heavy for
//! any batch), and when the shard is closed. The overload settings and the
//! moments of flushes, callers dropping and withdrawal notices come from a
//! second generator, so that a seed that draws none of them (a *plain*
//! seed) plays exactly the run it played before they existed.

use std::sync::Arc;

use ferry_shard::QueueConfig;

use super::arrival::{at, Played};
use super::draws::{self, QueueBounds};
use super::rng::Rng;
use super::unkeyed_reference::Bounds;

/// An unkeyed caller's arrival (rank 0: the queue keeps admission order).
pub type Arrival = super::arrival::Arrival<Input>;

/// One caller's input. `payload` makes "handed back unchanged" mean more
/// than an equal number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub id: u64,
    pub payload: String,
    /// Shared by every copy of this input: the scenario keeps one, so a
    /// count of one means no one else (the core, a batch, an answer) holds
    /// the input any more.
    pub copies: Arc<()>,
}

impl Played for Input {
    fn id(&self) -> u64 {
        self.id
    }

    fn output(&self) -> u64 {
        self.id * 7 + 3
    }

    fn is_held(&self) -> bool {
        Arc::strong_count(&self.copies) > 1
    }
}

/// The overload settings and moments of one seed, drawn from a generator
/// of their own so that a seed with none of them (a *plain* seed) plays
/// exactly the run it played before they existed.
#[derive(Clone, Debug, Default)]
pub struct Overload {
    /// `max_queue_time`, in ticks.
    pub queue_time: Option<u64>,
    pub withdraw_on_drop: bool,
    /// Percent chance that a caller who drops its receiver sends a
    /// withdrawal notice, which reaches the shard `0..=notice_lag_max`
    /// ticks later. The other drops are only found when their batch is
    /// formed.
    pub notice_percent: u64,
    pub notice_lag_max: u64,
    /// Percent of callers who drop their receivers some time after
    /// submitting.
    pub drop_percent: u64,
    /// When flushes are requested, in ascending order.
    pub flush_ticks: Vec<u64>,
}

impl Overload {
    pub fn is_plain(&self) -> bool {
        self.queue_time.is_none()
            && !self.withdraw_on_drop
            && self.notice_percent == 0
            && self.drop_percent == 0
            && self.flush_ticks.is_empty()
    }

    /// A quarter of the seeds are plain; the others turn each setting on
    /// or off on their own.
    fn generate(rng: &mut Rng) -> Self {
        if rng.chance(25) {
            return Self::default();
        }
        let flush_ticks = draws::flush_ticks(rng);
        Self {
            queue_time: rng.chance(50).then(|| rng.range(1, 40)),
            withdraw_on_drop: rng.chance(60),
            notice_percent: if rng.chance(80) {
                rng.range(20, 100)
            } else {
                0
            },
            notice_lag_max: rng.range(0, 10),
            drop_percent: rng.range(1, 30),
            flush_ticks,
        }
    }
}

/// What one seed plays.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub config: QueueConfig,
    pub bounds: Bounds,
    pub arrivals: Vec<Arrival>,
    /// `None`: closed only once nothing else is left to happen.
    pub close_tick: Option<u64>,
    /// Percent chance, at each quiet moment, that one waiting caller drops
    /// its answer receiver.
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
            batch_size_max,
            batch_weight_max,
            delay,
            waiting_max: queueing_max,
            waiting_weight_max: queued_weight_max,
        } = draws::queue_bounds(rng, 6);
        // Some seeds end with a burst and no bound to stop it, so that the
        // queue grows past what one withdrawal notice looks at, and many of
        // those callers leave.
        let deep = overload.withdraw_on_drop && extra.chance(30);
        let (queueing_max, queued_weight_max) = if deep {
            (1_000_000, u64::MAX)
        } else {
            (queueing_max, queued_weight_max)
        };
        let bounds = Bounds {
            batch_size_max,
            batch_weight_max,
            queueing_max,
            queued_weight_max,
            delay,
            slots: rng.range(1, 4) as usize,
            queue_time: overload.queue_time,
        };
        let config = QueueConfig {
            max_batch_size: batch_size_max,
            max_batch_weight: batch_weight_max,
            max_batch_delay: at(delay),
            max_waiting: queueing_max,
            max_waiting_weight: queued_weight_max,
            max_queue_time: overload.queue_time.map(at),
            withdraw_on_drop: overload.withdraw_on_drop,
            ..QueueConfig::default()
        };
        let burst_percent = rng.range(0, 70);
        let gap_max = rng.range(1, 12);
        let count_before_burst = rng.range(10, 150);
        let count = if deep {
            count_before_burst + extra.range(150, 300)
        } else {
            count_before_burst
        };
        let drop_percent = if deep { 40 } else { overload.drop_percent };
        let mut tick = 0;
        let mut arrivals = Vec::with_capacity(count as usize);
        for id in 0..count {
            if id < count_before_burst && !rng.chance(burst_percent) {
                tick += rng.range(1, gap_max);
            }
            let weight = draws::weight(rng, batch_weight_max);
            arrivals.push(Arrival {
                tick,
                input: Input {
                    id,
                    payload: format!("input {id} of weight {weight}"),
                    copies: Arc::new(()),
                },
                rank: 0,
                weight,
                drops_at_once: rng.chance(5),
                drops_after: extra.chance(drop_percent).then(|| extra.range(0, 40)),
            });
        }
        let close_tick = draws::close_tick(rng, tick);
        Self {
            config,
            bounds,
            arrivals,
            close_tick,
            drop_percent: rng.range(0, 30),
            latency_max: rng.range(0, 30),
            overload,
        }
    }
}
