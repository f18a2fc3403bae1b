//! What `ferry-load` shows: the live progress line, the final table (one
//! row per system and shard count), the ratios against ferry (or batcher,
//! unkeyed), and the `--json` file (docs/guarantees.md#ferry-loads-json-file);
//! [`handover`], what a handover run found; (feature `kafka`) `kafka`,
//! what a Kafka run found; the `--plot` picture ([`plot`], on the SVG
//! scaffolding of [`svg`]); and what a search of settings found, as text,
//! JSON and a picture ([`tune`]).

pub mod faults;
pub mod handover;
mod json;
#[cfg(feature = "kafka")]
pub mod kafka;
mod numbers;
pub mod plot;
mod progress;
mod result;
mod sections;
pub mod svg;
mod table;
pub mod tune;

pub use json::JsonReport;
pub use numbers::{micros, thousands};
pub use progress::{progress_line, StderrProgress};
pub use result::{run_label, EngineFigures, OverloadResult, RunResult};
pub use sections::*;
pub use table::{legend, ratios, round_medians, table};
