//! What a caller brings, as every simulation plays it: an input of the
//! discipline's own type, when it arrives, with its rank and weight, and
//! when its caller leaves.

use std::time::Duration;

/// Simulated time is counted in ticks of one microsecond.
pub fn at(tick: u64) -> Duration {
    Duration::from_micros(tick)
}

/// An input as the simulation reads it, whatever else it carries.
pub trait Played: Clone + std::fmt::Debug + PartialEq {
    /// Its number: the index of its arrival in the scenario.
    fn id(&self) -> u64;
    /// The output the simulated store gives for it.
    fn output(&self) -> u64;
    /// Whether some copy besides the scenario's own is still alive: the
    /// scenario keeps one, so a count of one means no one else (the shard,
    /// a batch, an answer) holds the input any more.
    fn is_held(&self) -> bool;
}

#[derive(Clone, Debug)]
pub struct Arrival<I> {
    pub tick: u64,
    pub input: I,
    /// Its rank (0 where the discipline has none).
    pub rank: i64,
    pub weight: u64,
    /// The caller drops its future right after submitting.
    pub drops_at_once: bool,
    /// The caller drops its future this many ticks after submitting.
    pub drops_after: Option<u64>,
}
