//! `ferry-shard`: the shard layer of Ferry.
//!
//! - [`Lanes`]: the pure per-key lane core of one shard (no clock, no I/O);
//! - [`Order`]: how a key's waiting inputs are ranked;
//! - [`LanesConfig`]: the bounds a shard keeps, validated into [`ConfigError`];
//! - [`key_hash`]: the one hash of a key, used for routing and lookup;
//! - [`Intake`]: the bounded queue into a shard, with its wake-up and close
//!   protocol;
//! - [`ShardCore`]: the shard's decisions, driven by events, no runtime;
//! - [`spawn_shard`]: the glommio thread that drives a `ShardCore`.
//!
//! The crate `ferry` builds the engine on top of it; most users want that.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod batch_fn;
mod config;
mod core;
mod error;
mod idle;
mod intake;
mod key_hash;
mod lanes;
mod local;
mod order;
mod refused;
mod runtime;
mod shard_id;
mod stats;

pub use crate::core::{BatchOutcome, Dispatch, Outcome, Reply, ShardCore, Submission};
pub use batch_fn::BatchFn;
pub use config::{ConfigError, LanesConfig};
pub use error::FerryError;
pub use idle::DOZE_LOOK_EVERY;
pub use intake::Intake;
pub use key_hash::key_hash;
pub use lanes::{Batch, BatchItems, LaneId, LaneState, Lanes};
pub use local::{local_channel, LocalReceiver, LocalSender, LocalShard, Nudge};
pub use order::{Order, Rank};
pub use refused::{Refusal, Refused};
pub use runtime::{spawn_shard, Inbound, ShardConfig, SharedCore, SpawnTask};
pub use shard_id::ShardId;
pub use stats::{ShardCounters, ShardStats};
