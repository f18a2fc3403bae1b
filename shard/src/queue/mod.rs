//! Layer 2, the disciplines: what waits, what is ready and what a batch
//! holds. `Lanes` (one lane per key), `Fifo` (one stream in admission
//! order) and the `Queue` seam the core reaches both through.
//!
//! Promise: pure, like the values below (no clock, no thread, no `async`;
//! `now` is an argument and never goes backwards). Slots, replies and
//! counts are not here: they are the core's.

pub(crate) mod fifo;
pub(crate) mod items;
pub(crate) mod lane_index;
pub(crate) mod lanes;
pub(crate) mod longest;
pub(crate) mod seam;
pub(crate) mod taken;
