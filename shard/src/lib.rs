//! `ferry-shard`: the shard layer of Ferry.
//!
//! - [`Lanes`]: the pure per-key lane core of one shard (no clock, no I/O);
//! - [`Order`]: how a key's waiting inputs are ranked;
//! - [`LanesConfig`]: the bounds a shard keeps, validated into [`ConfigError`];
//! - [`key_hash`]: the one hash of a key, used for routing and lookup.
//!
//! The crate `ferry` builds the engine on top of it; most users want that.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod key_hash;
mod lanes;
mod order;
mod refused;

pub use config::{ConfigError, LanesConfig};
pub use key_hash::key_hash;
pub use lanes::{Batch, LaneId, LaneState, Lanes};
pub use order::{Order, Rank};
pub use refused::{Refusal, Refused};
