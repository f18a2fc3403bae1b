//! The list right of the search's chart: a row per point tried, its mark,
//! number, settings, throughput and p99 and what it came to; under it, what
//! the colours and marks mean.

use plotters::element::{Circle, Cross, Text};
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::{Color, TextStyle};

use super::picture::{shard_color, FAILED_COLOR};
use super::{millis, Tried, Tuning, Verdict};
use crate::report::svg::{self, DrawError, Panel};
use crate::report::thousands;

/// Where the list's first row is, from the panel's top, px.
const TOP_PX: i32 = 70;
/// Height of one row of the list, px.
const ROW_PX: i32 = 22;
/// Size of the list's text (as plotters takes a font size).
const FONT_PX: u32 = 16;
/// Where the list's marks are centred, from its left, px.
const MARK_X_PX: i32 = 16;
/// Radius of a mark, px.
const MARK_PX: i32 = 5;
/// Where the note of each row starts, from the list's left, px.
const NOTE_X_PX: i32 = 455;
/// The columns of figures: each one's right edge, px, and name.
const COLUMNS: [(i32, &str); 6] = [
    (62, "#"),
    (120, "shards"),
    (170, "slots"),
    (270, "trip batches"),
    (375, "inputs/s"),
    (445, "p99 ms"),
];

/// The list's height, px: its header, a row per point and two of key.
pub(super) fn height_px(tuning: &Tuning) -> u32 {
    TOP_PX as u32 + ROW_PX as u32 * (tuning.tried.len() as u32 + 3) + 20
}

/// The list: its header, a row per point, then the key.
pub(super) fn draw_list(area: &Panel<'_>, tuning: &Tuning) -> Result<(), DrawError> {
    let right = svg::text(FONT_PX, HPos::Right, VPos::Center);
    for (x, name) in COLUMNS {
        area.draw(&Text::new(name, (x, TOP_PX - ROW_PX), right.clone()))?;
    }
    for (row, (index, tried)) in (0i32..).zip(tuning.tried.iter().enumerate()) {
        let y = TOP_PX + row * ROW_PX;
        draw_mark(area, tuning, tried, y)?;
        draw_cells(area, index, tried, y)?;
        draw_note(area, tuning, index, y)?;
    }
    draw_key(area, tuning)
}

/// A point's mark: its shard count's dot (hollow over the budget), or a
/// red cross when it failed.
fn draw_mark(area: &Panel<'_>, tuning: &Tuning, tried: &Tried, y: i32) -> Result<(), DrawError> {
    let at = (MARK_X_PX, y);
    let color = shard_color(&tuning.plan.grid, tried.point.shards);
    if !tried.passed() {
        area.draw(&Cross::new(at, MARK_PX, FAILED_COLOR.stroke_width(3)))
    } else if tried.within(tuning.plan.p99_budget_us()) {
        area.draw(&Circle::new(at, MARK_PX, color.filled()))
    } else {
        area.draw(&Circle::new(at, MARK_PX, color.stroke_width(2)))
    }
}

/// A point's figures under the columns.
fn draw_cells(area: &Panel<'_>, index: usize, tried: &Tried, y: i32) -> Result<(), DrawError> {
    let right = svg::text(FONT_PX, HPos::Right, VPos::Center);
    let (per_s, p99) = match tried.run() {
        Some(run) => (thousands(run.throughput.round() as u64), millis(run.p99_us)),
        None => ("-".to_string(), "-".to_string()),
    };
    let cells = [
        format!("#{}", index + 1),
        tried.point.shards.to_string(),
        tried.point.slots.to_string(),
        tried.point.trip_batches.to_string(),
        per_s,
        p99,
    ];
    for ((x, _), cell) in COLUMNS.iter().zip(cells) {
        area.draw(&Text::new(cell, (*x, y), right.clone()))?;
    }
    Ok(())
}

/// What a point came to, past the figures: `FAILED` in red, `BEST` or
/// `closest` in bold, `over budget`, or nothing.
fn draw_note(area: &Panel<'_>, tuning: &Tuning, index: usize, y: i32) -> Result<(), DrawError> {
    let tried = &tuning.tried[index];
    let within = tried.within(tuning.plan.p99_budget_us());
    let chosen = matches!(tuning.verdict, Verdict::Best(i) | Verdict::OverBudget { closest: i } if i == index);
    let left = svg::text(FONT_PX, HPos::Left, VPos::Center);
    let (note, style): (&str, TextStyle<'_>) = if !tried.passed() {
        ("FAILED", left.color(&FAILED_COLOR))
    } else if chosen && within {
        ("BEST", svg::bold(FONT_PX, HPos::Left, VPos::Center))
    } else if chosen {
        ("closest", svg::bold(FONT_PX, HPos::Left, VPos::Center))
    } else if !within {
        ("over budget", left)
    } else {
        ("", left)
    };
    area.draw(&Text::new(note, (NOTE_X_PX, y), style))
}

/// Under the list: what the colours and marks mean.
fn draw_key(area: &Panel<'_>, tuning: &Tuning) -> Result<(), DrawError> {
    let left = svg::text(FONT_PX, HPos::Left, VPos::Center);
    let key_y = TOP_PX + (tuning.tried.len() as i32 + 1) * ROW_PX;
    let mut x = 10;
    area.draw(&Text::new("colour: shards", (x, key_y), left.clone()))?;
    x += 120;
    for &shards in &tuning.plan.grid.shards {
        let color = shard_color(&tuning.plan.grid, shards);
        area.draw(&Circle::new((x + 6, key_y), MARK_PX, color.filled()))?;
        area.draw(&Text::new(
            shards.to_string(),
            (x + 16, key_y),
            left.clone(),
        ))?;
        x += 46;
    }
    let legend = if tuning.plan.p99_budget.is_some() {
        "hollow: over the p99 budget;  red cross: failed its checks"
    } else {
        "red cross: failed its checks (lost inputs, read-back)"
    };
    area.draw(&Text::new(legend, (10, key_y + ROW_PX), left))
}
