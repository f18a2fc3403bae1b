//! The live progress line of a run, and where it goes: stderr, rewritten
//! in place on a terminal, one line per report otherwise.

use std::io::{IsTerminal, Write};

use crate::report::{micros, thousands};
use crate::sources::load::{Phase, Progress};

/// The live progress line of one run.
pub fn progress_line(label: &str, progress: &Progress) -> String {
    let phase = match progress.phase {
        Phase::Warmup => "warm-up",
        Phase::Measuring => "measuring",
        Phase::Draining => "draining",
    };
    let p99 = progress
        .p99_ns
        .map_or("-".to_string(), |ns| micros(ns as f64 / 1_000.0));
    format!(
        "{label:<24} {:>3}s {phase:<9} {:>11} inputs/s   p99 {p99:>9} µs   in flight {:>7}",
        progress.elapsed.as_secs(),
        thousands(progress.inputs_per_s.round() as u64),
        thousands(progress.in_flight),
    )
}

/// The progress lines of runs on stderr.
#[derive(Clone, Copy, Debug)]
pub struct StderrProgress {
    /// stderr is a terminal: each line overwrites the last.
    live: bool,
}

impl StderrProgress {
    /// Progress on this process's stderr, live if it is a terminal.
    pub fn open() -> StderrProgress {
        StderrProgress {
            live: std::io::stderr().is_terminal(),
        }
    }

    /// Shows `progress` of the run labelled `label`.
    pub fn show(&self, label: &str, progress: &Progress) {
        let line = progress_line(label, progress);
        if self.live {
            eprint!("\r{line}\x1b[K");
            let _ = std::io::stderr().flush();
        } else {
            eprintln!("{line}");
        }
    }

    /// Clears the live line once the run is over, for what follows it.
    pub fn clear(&self) {
        if self.live {
            eprint!("\r\x1b[K");
        }
    }
}
