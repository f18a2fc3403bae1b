//! Layer 4, the core: `ShardCore<Q>`, a queue with slots, replies and
//! counts around it, generic over the discipline; how a slot is filled
//! (`Carry`) and a batch's future is kept (`batch_run.rs`); and what the
//! core records (`observe.rs`, `stats.rs`, `histogram.rs`, and the
//! features' `metrics.rs` and `trace.rs`).
//!
//! Promise: still no runtime and no clock — `now` is an argument, futures
//! are polled by whoever runs the core. An admitted input's reply is used
//! exactly once; batches in flight never pass the slots.

pub(crate) mod batch_run;
pub(crate) mod carry;
pub(crate) mod ended;
pub(crate) mod farewell;
pub(crate) mod histogram;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod observe;
pub(crate) mod shard_core;
pub(crate) mod stats;
pub(crate) mod trace;
