//! The `--json` file's top level.

use serde::Serialize;

use crate::report::RunResult;

/// The `--json` document.
#[derive(Debug, Serialize)]
pub struct JsonReport<'a> {
    /// The command line that produced it (a store URL's password hidden).
    pub command: String,
    /// `sim`, `postgres` or `redis`.
    pub store: &'a str,
    /// One entry per system and shard count.
    pub runs: &'a [RunResult],
}
