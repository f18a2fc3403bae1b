//! The draws both scenarios make alike, each from the generator and in the
//! order its scenario has always drawn them, so that a seed plays the same
//! run whichever file draws it.

use super::rng::Rng;

/// A seed's batch and queueing bounds, in ticks and weights.
pub struct QueueBounds {
    pub batch_size_max: usize,
    pub batch_weight_max: u64,
    pub delay: u64,
    pub waiting_max: usize,
    pub waiting_weight_max: u64,
}

/// The bounds of a seed: batches of up to `size_most - 1` inputs, or 64;
/// weight unbounded or a few inputs' worth; often no delay; queueing
/// bounds often far off.
pub fn queue_bounds(rng: &mut Rng, size_most: u64) -> QueueBounds {
    let batch_size_max = if rng.chance(10) {
        64
    } else {
        rng.range(1, size_most) as usize
    };
    let batch_weight_max = if rng.chance(50) {
        u64::MAX
    } else {
        rng.range(2, 8)
    };
    let delay = if rng.chance(40) { 0 } else { rng.range(1, 20) };
    let waiting_max = if rng.chance(50) {
        1_000_000
    } else {
        rng.range(1, 30) as usize
    };
    let waiting_weight_max = if rng.chance(70) {
        u64::MAX
    } else {
        rng.range(3, 40)
    };
    QueueBounds {
        batch_size_max,
        batch_weight_max,
        delay,
        waiting_max,
        waiting_weight_max,
    }
}

/// When flushes are requested, in ascending order: none, or a few.
pub fn flush_ticks(rng: &mut Rng) -> Vec<u64> {
    if !rng.chance(60) {
        return Vec::new();
    }
    let count = rng.range(1, 8);
    let mut ticks: Vec<u64> = (0..count).map(|_| rng.range(0, 400)).collect();
    ticks.sort_unstable();
    ticks
}

/// An input's weight: now and then too heavy for any batch.
pub fn weight(rng: &mut Rng, batch_weight_max: u64) -> u64 {
    if batch_weight_max != u64::MAX && rng.chance(4) {
        batch_weight_max + 1
    } else {
        rng.range(1, 3)
    }
}

/// When the shard is closed, the last arrival being at `last_tick`; `None`
/// (only once nothing else is left to happen) for a tenth of the seeds.
pub fn close_tick(rng: &mut Rng, last_tick: u64) -> Option<u64> {
    if rng.chance(10) {
        None
    } else {
        Some(rng.range(0, last_tick + 40))
    }
}
