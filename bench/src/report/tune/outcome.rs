//! The points a search measured and which of them won.

use super::{Axis, Plan, Point};
use crate::report::{thousands, RunResult};

/// One point the search measured.
#[derive(Clone, Debug)]
pub struct Tried {
    /// Its settings.
    pub point: Point,
    /// The pass that measured it, from 1.
    pub pass: usize,
    /// The setting whose values that pass was trying (`None`: the start).
    pub varied: Option<Axis>,
    /// The run, or why there was none (the system did not start, the
    /// store failed).
    pub outcome: Result<RunResult, String>,
}

impl Tried {
    /// What is wrong with the run: an error, inputs lost, a read-back that
    /// does not match, conflicts, nothing answered. Empty when it passed.
    pub fn problems(&self) -> Vec<String> {
        let run = match &self.outcome {
            Ok(run) => run,
            Err(error) => return vec![error.clone()],
        };
        let mut problems = Vec::new();
        if run.lost > 0 {
            problems.push(format!("lost {}", thousands(run.lost)));
        }
        if !run.read_back_matches() {
            problems.push("read-back does not match".to_string());
        }
        if run.conflicts > 0 {
            problems.push(format!("{} conflicts", thousands(run.conflicts)));
        }
        if run.completed == 0 {
            problems.push("nothing answered".to_string());
        }
        problems
    }

    /// Whether the run lost nothing, its read-back matched, it never
    /// conflicted and it answered something: whether it may be best.
    pub fn passed(&self) -> bool {
        self.problems().is_empty()
    }

    /// Whether it passed and its p99 is within `budget_us` (when there is
    /// one).
    pub fn within(&self, budget_us: Option<f64>) -> bool {
        self.passed() && budget_us.is_none_or(|budget| self.p99_us() <= budget)
    }

    /// Its throughput, inputs/s (0 without a run).
    pub fn throughput(&self) -> f64 {
        self.outcome.as_ref().map_or(0.0, |run| run.throughput)
    }

    /// Its p99 latency, µs (infinite without a run).
    pub fn p99_us(&self) -> f64 {
        self.outcome
            .as_ref()
            .map_or(f64::INFINITY, |run| run.p99_us)
    }

    /// Its run, if it had one.
    pub fn run(&self) -> Option<&RunResult> {
        self.outcome.as_ref().ok()
    }
}

/// Which point won.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The point (its index among those tried) with the highest throughput
    /// of those that passed their checks and met the budget.
    Best(usize),
    /// Points passed their checks but none met the p99 budget; `closest` is
    /// the one with the lowest p99.
    OverBudget {
        /// Index of the closest point among those tried.
        closest: usize,
    },
    /// No point passed its checks.
    NoneValid,
}

/// The verdict on `tried` under a p99 budget of `budget_us` µs: the
/// highest throughput among the points that passed and met the budget (the
/// earlier on a tie), else the lowest p99 among those that passed.
pub fn verdict(tried: &[Tried], budget_us: Option<f64>) -> Verdict {
    let mut best: Option<usize> = None;
    let mut closest: Option<usize> = None;
    for (index, point) in tried.iter().enumerate() {
        if !point.passed() {
            continue;
        }
        if point.within(budget_us)
            && best.is_none_or(|b| point.throughput() > tried[b].throughput())
        {
            best = Some(index);
        }
        let nearer = |c: usize| {
            let (p99, other) = (point.p99_us(), tried[c].p99_us());
            p99 < other || (p99 == other && point.throughput() > tried[c].throughput())
        };
        if closest.is_none_or(nearer) {
            closest = Some(index);
        }
    }
    match (best, closest) {
        (Some(index), _) => Verdict::Best(index),
        (None, Some(closest)) => Verdict::OverBudget { closest },
        (None, None) => Verdict::NoneValid,
    }
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct Tuning {
    /// What it searched.
    pub plan: Plan,
    /// Every point measured, in order, each once.
    pub tried: Vec<Tried>,
    /// The winner.
    pub verdict: Verdict,
    /// Whether it stopped at `plan.max_points` with points still to try.
    pub cut_short: bool,
    /// Passes begun.
    pub passes: usize,
}

impl Tuning {
    /// The best point, if one met every condition.
    pub fn best(&self) -> Option<&Tried> {
        match self.verdict {
            Verdict::Best(index) => Some(&self.tried[index]),
            _ => None,
        }
    }

    /// The point closest to the budget, when none met it.
    pub fn closest(&self) -> Option<&Tried> {
        match self.verdict {
            Verdict::OverBudget { closest } => Some(&self.tried[closest]),
            _ => None,
        }
    }

    /// The points that failed their checks.
    pub fn failed(&self) -> impl Iterator<Item = (usize, &Tried)> {
        self.tried
            .iter()
            .enumerate()
            .filter(|(_, tried)| !tried.passed())
    }
}
