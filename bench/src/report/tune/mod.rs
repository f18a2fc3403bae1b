//! What a `ferry-load tune` search of ferry-trips' settings is and what it
//! found, and how that is shown.
//!
//! The search varies three settings, each an [`Axis`]: the shard count, the
//! slots (trips in flight per shard, `max_in_flight_trips`) and the keys'
//! batches per trip (`max_trip_batches`). A [`Plan`] holds the [`Grid`] of
//! values each may take, the start [`Point`], a point budget and a p99
//! budget; every point measured is [`Tried`], and the [`Tuning`] holds them
//! all with the [`Verdict`]: the highest throughput among the points that
//! lost nothing, whose read-back matched (and, ferry being ferry, never
//! conflicted) and, with a latency budget, whose p99 is within it.
//!
//! Shown as: the [`header`], the [`table`] of every point and the
//! [`conclusion`] on stdout; the [`json`] document of `--json`; the picture
//! of `--plot` ([`render_svg`]), throughput against p99 beside the list of
//! the points.
//!
//! ```
//! use ferry_bench::report::tune::{Grid, Plan, Point};
//!
//! let start = Point { shards: 2, slots: 4, trip_batches: 256 };
//! let grid = Grid { shards: vec![1, 2], slots: vec![1, 8], trip_batches: vec![64] };
//! let plan = Plan::new(grid, start, 10, None).unwrap();
//! // The start's values join the grid.
//! assert_eq!(plan.grid.slots, [1, 4, 8]);
//! assert_eq!(plan.grid.size(), 2 * 3 * 2);
//! assert_eq!(start.flags(), "--shards 2 --max-in-flight-trips 4 --max-trip-batches 256");
//! ```

use std::time::Duration;

use serde::Serialize;

mod json;
mod list;
mod outcome;
mod picture;
mod text;

pub use json::json;
pub use outcome::{verdict, Tried, Tuning, Verdict};
pub use picture::{render_svg, write_svg};
pub use text::{conclusion, header, millis, table};

/// The name of the search, as the header and the JSON give it.
pub const SEARCH_NAME: &str = "coordinate search";

/// One setting of ferry-trips that the search varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Axis {
    /// The shard count (`--shards`).
    Shards,
    /// Trips in flight per shard (`--max-in-flight-trips`).
    Slots,
    /// Keys' batches per trip at most (`--max-trip-batches`).
    TripBatches,
}

impl Axis {
    /// The settings in the order a pass varies them.
    pub const ALL: [Axis; 3] = [Axis::Shards, Axis::Slots, Axis::TripBatches];

    /// `shards`, `slots` or `trip batches`.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Shards => "shards",
            Axis::Slots => "slots",
            Axis::TripBatches => "trip batches",
        }
    }
}

/// One setting of all three: a point of the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Point {
    /// Shards.
    pub shards: usize,
    /// Trips in flight per shard (`max_in_flight_trips`).
    pub slots: usize,
    /// Keys' batches per trip at most (`max_trip_batches`).
    pub trip_batches: usize,
}

impl Point {
    /// The point as `ferry-load` flags: `--shards 2 --max-in-flight-trips 4
    /// --max-trip-batches 256`.
    pub fn flags(self) -> String {
        format!(
            "--shards {} --max-in-flight-trips {} --max-trip-batches {}",
            self.shards, self.slots, self.trip_batches
        )
    }

    /// The point in short, shards/slots/trip batches: `2/4/256`.
    pub fn short(self) -> String {
        format!("{}/{}/{}", self.shards, self.slots, self.trip_batches)
    }

    /// The value of `axis`.
    pub fn get(self, axis: Axis) -> usize {
        match axis {
            Axis::Shards => self.shards,
            Axis::Slots => self.slots,
            Axis::TripBatches => self.trip_batches,
        }
    }

    /// This point with `axis` at `value`.
    pub fn with(self, axis: Axis, value: usize) -> Point {
        let mut point = self;
        match axis {
            Axis::Shards => point.shards = value,
            Axis::Slots => point.slots = value,
            Axis::TripBatches => point.trip_batches = value,
        }
        point
    }
}

/// The values each setting may take, each list ascending, without
/// repeats.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Grid {
    /// Shard counts.
    pub shards: Vec<usize>,
    /// Slots.
    pub slots: Vec<usize>,
    /// Keys' batches per trip.
    pub trip_batches: Vec<usize>,
}

impl Grid {
    /// The values of `axis`.
    pub fn values(&self, axis: Axis) -> &[usize] {
        match axis {
            Axis::Shards => &self.shards,
            Axis::Slots => &self.slots,
            Axis::TripBatches => &self.trip_batches,
        }
    }

    fn values_mut(&mut self, axis: Axis) -> &mut Vec<usize> {
        match axis {
            Axis::Shards => &mut self.shards,
            Axis::Slots => &mut self.slots,
            Axis::TripBatches => &mut self.trip_batches,
        }
    }

    /// The points of the full grid.
    pub fn size(&self) -> usize {
        Axis::ALL
            .iter()
            .map(|&axis| self.values(axis).len())
            .product()
    }

    /// Whether `point` is on the grid.
    pub fn contains(&self, point: Point) -> bool {
        Axis::ALL
            .iter()
            .all(|&axis| self.values(axis).contains(&point.get(axis)))
    }
}

/// What to search: the grid, where to start, how many points at most, and
/// the latency budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The values tried, the start's among them.
    pub grid: Grid,
    /// The first point measured, the first centre.
    pub start: Point,
    /// Points measured at most (at least 1).
    pub max_points: usize,
    /// The best must have its p99 at or below this (`None`: no budget).
    pub p99_budget: Option<Duration>,
}

impl Plan {
    /// A plan over `grid` (each list sorted and its repeats dropped, the
    /// start's value added where missing), or why not: an empty list, a
    /// value of 0, no points allowed.
    pub fn new(
        grid: Grid,
        start: Point,
        max_points: usize,
        p99_budget: Option<Duration>,
    ) -> Result<Plan, String> {
        let mut grid = grid;
        for axis in Axis::ALL {
            let values = grid.values_mut(axis);
            if values.is_empty() {
                return Err(format!("tune: no {} to try", axis.name()));
            }
            values.push(start.get(axis));
            values.sort_unstable();
            values.dedup();
            if values[0] == 0 {
                return Err(format!("tune: {} must be at least 1", axis.name()));
            }
        }
        if max_points == 0 {
            return Err("--tune-points must be at least 1".to_string());
        }
        Ok(Plan {
            grid,
            start,
            max_points,
            p99_budget,
        })
    }

    /// The budget in µs, as [`crate::report::RunResult::p99_us`] counts.
    pub fn p99_budget_us(&self) -> Option<f64> {
        self.p99_budget.map(|budget| budget.as_secs_f64() * 1e6)
    }
}
