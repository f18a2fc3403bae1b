//! How a load in flight ends, as the simulated batch or trip function
//! decides, and what each of its callers must then be told.

use super::rng::Rng;

/// How a batch ends, as the batch function decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    Ok,
    Fail,
    Panic,
    /// Returns this many outputs, never the right number.
    WrongCount(usize),
    /// Does not finish before the shard is closed.
    HangUntilClose,
}

impl Plan {
    /// The batch function's choice for a batch of `len` inputs.
    pub fn draw(rng: &mut Rng, len: usize) -> Self {
        match rng.below(100) {
            0..=69 => Plan::Ok,
            70..=77 => Plan::Fail,
            78..=85 => Plan::Panic,
            86..=92 => {
                let got = rng.range(0, len as u64 + 2) as usize;
                Plan::WrongCount(if got == len { len + 1 } else { got })
            }
            _ => Plan::HangUntilClose,
        }
    }
}

/// How a load in flight ends: a trip, as the trip function decides, or a
/// batch (a load of one), as the batch function does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TripPlan {
    /// One result per batch, each as its plan says (`Ok`, `Fail` or
    /// `WrongCount`).
    Results(Vec<Plan>),
    /// Panics, when called or while running: every batch fails.
    Panic,
    /// Returns this many results, never one per batch.
    WrongResults(usize),
}

impl TripPlan {
    /// A batch's plan as the plan of a load of one batch, and whether the
    /// load hangs until close.
    pub fn of_batch(plan: Plan) -> (Self, bool) {
        match plan {
            Plan::Panic => (TripPlan::Panic, false),
            Plan::HangUntilClose => (TripPlan::Results(vec![Plan::Ok]), true),
            plan => (TripPlan::Results(vec![plan]), false),
        }
    }

    /// The trip function's choice for a trip of batches of `lens` inputs,
    /// and whether the trip hangs until close.
    pub fn draw(rng: &mut Rng, lens: &[usize]) -> (Self, bool) {
        let plan = match rng.below(100) {
            0..=7 => TripPlan::Panic,
            8..=13 => {
                let got = rng.range(0, lens.len() as u64 + 2) as usize;
                TripPlan::WrongResults(if got == lens.len() {
                    lens.len() + 1
                } else {
                    got
                })
            }
            _ => TripPlan::Results(
                lens.iter()
                    .map(|&len| match rng.below(100) {
                        0..=79 => Plan::Ok,
                        80..=89 => Plan::Fail,
                        _ => {
                            let got = rng.range(0, len as u64 + 2) as usize;
                            Plan::WrongCount(if got == len { len + 1 } else { got })
                        }
                    })
                    .collect(),
            ),
        };
        (plan, rng.chance(7))
    }
}

/// What a caller of a batch must be told, by how its load ended.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    Output,
    Failed(u64),
    Panicked,
    WrongCount { expected: usize, got: usize },
}

impl TripPlan {
    /// What each caller of the `index`th of `lens.len()` batches (of
    /// `lens` inputs), numbered `batch`, must be told.
    pub fn expect(&self, index: usize, batch: u64, lens: &[usize]) -> Expect {
        match self {
            TripPlan::Panic => Expect::Panicked,
            TripPlan::WrongResults(got) => Expect::WrongCount {
                expected: lens.len(),
                got: *got,
            },
            TripPlan::Results(plans) => match plans[index] {
                Plan::Ok | Plan::HangUntilClose => Expect::Output,
                Plan::Fail => Expect::Failed(batch),
                Plan::WrongCount(got) => Expect::WrongCount {
                    expected: lens[index],
                    got,
                },
                Plan::Panic => Expect::Panicked,
            },
        }
    }
}
