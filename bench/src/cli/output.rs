//! The output options shared by the runs that report systems' results
//! (`compare`, `unkeyed`, `tune`): the results as JSON, and as a picture.

use std::path::PathBuf;

use clap::Args;

use crate::report::{JsonReport, RunResult};
use crate::store::{Store, StoreAddress};

/// Where the results also go, beside the printed report.
#[derive(Clone, Debug, Default, Args)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Also write the results as JSON to this file
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,

    /// Also draw the results as one SVG picture at this path
    ///
    /// Latency by percentile, a curve per system and shard count; with --sweep-shards
    /// of two or more counts, throughput by shards below it
    #[arg(long, value_name = "PATH.svg")]
    pub plot: Option<PathBuf>,
}

impl OutputArgs {
    /// `--json` and `--plot`: both files tried, whichever fails; the
    /// first problem, if any.
    pub fn write(&self, store: Store, heading: &str, runs: &[RunResult]) -> Result<(), String> {
        let json = self.write_json(store, runs);
        let plot = self.write_plot(heading, runs);
        json.and(plot)
    }

    /// `--json`: the results as a file, with the command line that made
    /// them (a store URL's password hidden).
    fn write_json(&self, store: Store, runs: &[RunResult]) -> Result<(), String> {
        let Some(path) = &self.json else {
            return Ok(());
        };
        let json = serde_json::to_string_pretty(&JsonReport {
            command: StoreAddress::shown_command_line(),
            store: store.kind(),
            runs,
        })
        .map_err(|err| format!("could not encode the results: {err}"))?;
        std::fs::write(path, json + "\n")
            .map_err(|err| format!("could not write {}: {err}", path.display()))?;
        eprintln!("ferry-load: wrote {}", path.display());
        Ok(())
    }

    /// `--plot`: the results as an SVG picture, headed by what was run.
    fn write_plot(&self, heading: &str, runs: &[RunResult]) -> Result<(), String> {
        let Some(path) = &self.plot else {
            return Ok(());
        };
        crate::report::plot::write_svg(path, heading, runs)?;
        eprintln!("ferry-load: wrote {}", path.display());
        Ok(())
    }
}
