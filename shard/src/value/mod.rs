//! Layer 1, the values: what a caller hands a shard and gets back, and the
//! bounds it is given — `BatchFn`, `TripFn`, `Order` and `Rank`, `Hold`,
//! `QueueConfig`, `Refused`, `FerryError` and `Outcome`, `key_hash`,
//! `ShardId`, `Nanos`, the flush `Generations`.
//!
//! Promise: pure. No clock, no thread, no `async`, no shared memory; a
//! point in time is an argument. Nothing here names another layer.

pub(crate) mod batch_fn;
pub(crate) mod config;
pub(crate) mod error;
pub(crate) mod flush;
pub(crate) mod hold;
pub(crate) mod key_hash;
pub(crate) mod nanos;
pub(crate) mod order;
pub(crate) mod refused;
pub(crate) mod shard_id;
pub(crate) mod trip_fn;
