//! What `ferry-load` shows: the live progress line, the final table (one
//! row per system and shard count), the ratios against ferry (or batcher,
//! unkeyed), and the `--json` file (docs/guarantees.md#ferry-loads-json-file);
//! [`handover`], what a handover run found, and (feature `kafka`) `kafka`,
//! what a Kafka run found.

pub mod faults;
pub mod handover;
mod json;
#[cfg(feature = "kafka")]
pub mod kafka;
mod numbers;
mod result;
mod sections;
mod table;

pub use json::JsonReport;
pub use numbers::{micros, thousands};
pub use result::{EngineFigures, OverloadResult, RunResult};
pub use sections::*;
pub use table::{legend, ratios, table};
