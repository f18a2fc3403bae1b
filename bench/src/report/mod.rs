//! What `ferry-load` shows: the live progress line, the final table (one
//! row per system and shard count), the ratios against ferry (or batcher,
//! unkeyed), and the `--json` file (docs/guarantees.md#ferry-loads-json-file).

pub mod faults;
mod json;
mod numbers;
mod result;
mod sections;
mod table;

pub use json::JsonReport;
pub use numbers::{micros, thousands};
pub use result::{EngineFigures, OverloadResult, RunResult};
pub use sections::*;
pub use table::{legend, ratios, table};
