//! Each fault of a run as the run saw it: when the store was back, and when
//! the first success came after it.

use std::time::Duration;

use serde::Serialize;

use crate::scenarios::faults::Injected;
use crate::sources::load::{Measured, TICK};

/// A fault as one run saw it, for the report and the JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultSeen {
    /// The fault as asked for, `restart@2s`.
    pub fault: String,
    /// When it began, from the measured window's start, seconds.
    pub injected_at_s: f64,
    /// What it did.
    pub what: String,
    /// From its start to the store's return, ms: the restart and the
    /// server's recovery, the connections' end, the stall.
    pub back_after_ms: f64,
    /// From its start to the first input answered with success after the
    /// store's return, ms (`None`: none before the run ended).
    pub first_success_ms: Option<f64>,
    /// From the store's return to that success, ms: an upper bound, to
    /// within two [`TICK`]s (the first tick wholly after the return that
    /// holds a success, to its end).
    pub first_success_after_return_ms: Option<f64>,
}

impl FaultSeen {
    /// Each fault of `injected`, seen against `measured`'s answers, its
    /// times from the window that starts `warmup` into the run.
    pub fn of(injected: &[Injected], measured: &Measured, warmup: Duration) -> Vec<FaultSeen> {
        let window_start = measured.started + warmup;
        injected
            .iter()
            .map(|injected| {
                let at = injected.at.saturating_duration_since(measured.started);
                let back = injected.back.saturating_duration_since(measured.started);
                let first = first_success_after(&measured.done_ticks, back);
                let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
                FaultSeen {
                    fault: injected.fault.to_string(),
                    injected_at_s: (injected
                        .at
                        .saturating_duration_since(window_start)
                        .as_secs_f64()
                        * 1e3)
                        .round()
                        / 1e3,
                    what: injected.what.clone(),
                    back_after_ms: ms(back.saturating_sub(at)),
                    first_success_ms: first.map(|first| ms(first.saturating_sub(at))),
                    first_success_after_return_ms: first
                        .map(|first| ms(first.saturating_sub(back))),
                }
            })
            .collect()
    }

    /// One line of the report.
    pub fn describe(&self) -> String {
        let first = match (self.first_success_ms, self.first_success_after_return_ms) {
            (Some(after_fault), Some(after_return)) => format!(
                "first success within {} ms of the store's return ({} ms after the fault)",
                after_return.round(),
                after_fault.round()
            ),
            _ => "no success after it before the run ended".to_string(),
        };
        format!(
            "{} at {:.2} s: {}; store back {} ms after it; {first}",
            self.fault,
            self.injected_at_s,
            self.what,
            self.back_after_ms.round()
        )
    }
}

/// The end of the first [`TICK`] wholly after `at` (from the run's start)
/// in which an input was answered with success: the tick `at` falls in may
/// hold answers from before it.
pub fn first_success_after(ticks: &[u64], at: Duration) -> Option<Duration> {
    let from = (at.as_nanos() / TICK.as_nanos()) as usize + 1;
    let index = ticks
        .iter()
        .enumerate()
        .skip(from)
        .find(|(_, &done)| done > 0)?
        .0;
    Some(TICK * (index as u32 + 1))
}
