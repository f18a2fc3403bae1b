//! A search as the `--plot` picture: throughput against p99, a dot per
//! point tried, beside the list of the points ([`super::list`]).

use std::path::Path;

use plotters::backend::SVGBackend;
use plotters::chart::ChartContext;
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::types::RangedCoordf64;
use plotters::element::{Circle, Cross, EmptyElement, Text};
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::{Color, RGBColor, BLACK};

use super::{list, Grid, Tried, Tuning, Verdict, SEARCH_NAME};
use crate::base::duration::format_duration;
use crate::report::svg::{self, DrawError, LogAxis, Panel};
use crate::report::thousands;

/// Width of the picture, px.
const WIDTH_PX: u32 = 1500;
/// Width of the list of points, right of the chart, px.
const LIST_WIDTH_PX: u32 = 560;
/// Height of one line of the heading, px.
const HEADING_LINE_PX: u32 = 24;
/// Height of the chart at least, px.
const CHART_HEIGHT_MIN_PX: u32 = 680;
/// Radius of a point's dot, px.
const DOT_PX: i32 = 6;
/// Radius of the ring around the best point, px.
const BEST_RING_PX: i32 = 13;
/// Characters on one line of the heading at most.
const HEADING_LINE_CHARS: usize = 150;

/// One colour per shard count, in the grid's order (red is kept for
/// failed points and the budget).
const SHARD_COLORS: [RGBColor; 7] = [
    svg::BLUE,
    svg::ORANGE,
    svg::GREEN,
    svg::PURPLE,
    svg::BROWN,
    svg::TEAL,
    svg::PINK,
];
/// Failed points and the budget line: a deeper red than [`svg::RED`].
pub(super) const FAILED_COLOR: RGBColor = RGBColor(200, 30, 30);

/// The colour of `shards`' points.
pub(super) fn shard_color(grid: &Grid, shards: usize) -> RGBColor {
    let place = grid.shards.iter().position(|&n| n == shards).unwrap_or(0);
    svg::pick(&SHARD_COLORS, place)
}

/// `text` broken at its `, ` into lines of at most `width` characters
/// (a longer part stays whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for part in text.split(", ") {
        if !line.is_empty() && line.chars().count() + 2 + part.chars().count() > width {
            lines.push(std::mem::take(&mut line) + ",");
        }
        if !line.is_empty() {
            line += ", ";
        }
        line += part;
    }
    lines.push(line);
    lines
}

/// The picture of the search as SVG text: throughput against p99, a dot
/// per point tried (coloured by its shard count, hollow when over the
/// budget, a red cross when it failed), numbered as in the table, the best
/// ringed; right of it, the list of the points and their settings.
/// `heading` says what load it was.
pub fn render_svg(heading: &str, tuning: &Tuning) -> Result<String, String> {
    let mut heading_lines = wrap(
        &format!(
            "ferry-load tune: ferry-trips by {SEARCH_NAME}, {} points",
            tuning.tried.len()
        ),
        HEADING_LINE_CHARS,
    );
    heading_lines.extend(wrap(heading, HEADING_LINE_CHARS));
    let heading_px = HEADING_LINE_PX * heading_lines.len() as u32 + 12;
    let height = heading_px + CHART_HEIGHT_MIN_PX.max(list::height_px(tuning));
    svg::render((WIDTH_PX, height), heading_px, |top, panel| {
        draw_heading(top, &heading_lines)?;
        let (width_px, _) = panel.dim_in_pixel();
        let (chart_area, list_area) = panel.split_horizontally(width_px - LIST_WIDTH_PX);
        draw_chart(&chart_area, tuning)?;
        list::draw_list(&list_area, tuning)
    })
}

/// Writes the picture of the search (see [`render_svg`]) to `path`.
pub fn write_svg(path: &Path, heading: &str, tuning: &Tuning) -> Result<(), String> {
    svg::write(path, &render_svg(heading, tuning)?)
}

/// The heading's lines, left, top down.
fn draw_heading(top: &Panel<'_>, lines: &[String]) -> Result<(), DrawError> {
    let font = svg::text(svg::HEADING_FONT_PX, HPos::Left, VPos::Top);
    for (row, line) in (0i32..).zip(lines) {
        top.draw(&Text::new(
            line.as_str(),
            (16, 8 + row * HEADING_LINE_PX as i32),
            font.clone(),
        ))?;
    }
    Ok(())
}

/// A point drawn on the chart: its number, what was tried, and where
/// (p99 ms, inputs/s).
type Drawn<'a> = (usize, &'a Tried, (f64, f64));

/// The chart's plotting area, in its coordinates.
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogAxis, RangedCoordf64>>;

/// Throughput against p99, a dot per point that has a run.
fn draw_chart(area: &Panel<'_>, tuning: &Tuning) -> Result<(), DrawError> {
    let budget_ms = tuning.plan.p99_budget_us().map(|us| us / 1_000.0);
    let drawn: Vec<Drawn<'_>> = tuning
        .tried
        .iter()
        .enumerate()
        .filter_map(|(index, tried)| {
            let run = tried.run()?;
            (run.p99_us > 0.0).then_some((index, tried, (run.p99_us / 1_000.0, run.throughput)))
        })
        .collect();
    let ((ms_low, ms_high), (per_s_low, per_s_top)) = chart_ranges(&drawn, budget_ms);
    let mut chart = svg::chart(
        area,
        "Throughput against p99, a point per setting tried: #number shards/slots/trip batches",
    )
    .margin_right(40)
    .y_label_area_size(100)
    .build_cartesian_2d(svg::log_axis(ms_low, ms_high), per_s_low..per_s_top)?;
    svg::draw_axes(
        &mut chart,
        ("p99 latency, ms (log scale)", "inputs/s"),
        &|ms| svg::decimal_label(*ms),
        &|per_s| thousands(per_s.max(0.0).round() as u64),
    )?;
    draw_budget(&mut chart, tuning, budget_ms, (per_s_low, per_s_top))?;
    draw_points(&mut chart, tuning, &drawn)?;
    draw_chosen(&mut chart, tuning, &drawn)
}

/// The chart's ranges: p99 (ms, log scale, with room either side) and
/// inputs/s (from zero unless every point is near the top).
fn chart_ranges(drawn: &[Drawn<'_>], budget_ms: Option<f64>) -> ((f64, f64), (f64, f64)) {
    let (mut ms_low, mut ms_high) = drawn
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(low, high), (_, _, (ms, _))| {
            (low.min(*ms), high.max(*ms))
        });
    if let Some(budget) = budget_ms.filter(|&ms| ms > 0.0) {
        ms_low = ms_low.min(budget);
        ms_high = ms_high.max(budget);
    }
    if !ms_low.is_finite() {
        (ms_low, ms_high) = (1.0, 10.0);
    }
    // Room either side on the log scale, and at least a factor of 4 across.
    let middle = (ms_low * ms_high).sqrt();
    let spread = (ms_high / ms_low).max(4.0).sqrt() * 1.3;
    let (ms_low, ms_high) = (middle / spread, middle * spread);
    let (per_s_low, per_s_high) = drawn.iter().fold(
        (f64::INFINITY, 0.0f64),
        |(low, high), (_, _, (_, per_s))| (low.min(*per_s), high.max(*per_s)),
    );
    let per_s_high = per_s_high.max(1.0);
    // From zero unless every point is in the top part, where zero would
    // squeeze the differences the search is about into a thin band.
    let per_s_low = if per_s_low.is_finite() && per_s_low > 0.5 * per_s_high {
        per_s_low - 0.15 * (per_s_high - per_s_low).max(0.05 * per_s_high)
    } else {
        0.0
    };
    let per_s_top = per_s_high + 0.12 * (per_s_high - per_s_low);
    ((ms_low, ms_high), (per_s_low, per_s_top))
}

/// The p99 budget as a dashed line, if there is one.
fn draw_budget(
    chart: &mut Plot<'_, '_>,
    tuning: &Tuning,
    budget_ms: Option<f64>,
    (per_s_low, per_s_top): (f64, f64),
) -> Result<(), DrawError> {
    let (Some(budget), Some(written)) = (budget_ms.filter(|&ms| ms > 0.0), tuning.plan.p99_budget)
    else {
        return Ok(());
    };
    chart.draw_series(svg::dashed(
        [(budget, per_s_low), (budget, per_s_top)],
        FAILED_COLOR,
    ))?;
    let font = svg::text(16, HPos::Left, VPos::Top).color(&FAILED_COLOR);
    let label = Text::new(
        format!("p99 budget {}", format_duration(written)),
        (6, 4),
        font,
    );
    chart.draw_series(std::iter::once(
        EmptyElement::at((budget, per_s_top)) + label,
    ))?;
    Ok(())
}

/// A dot per point (hollow over the budget), a cross per failed one.
fn draw_points(
    chart: &mut Plot<'_, '_>,
    tuning: &Tuning,
    drawn: &[Drawn<'_>],
) -> Result<(), DrawError> {
    let budget_us = tuning.plan.p99_budget_us();
    let number_font = svg::text(15, HPos::Left, VPos::Bottom);
    for &(index, tried, at) in drawn {
        let number = Text::new(
            format!("#{} {}", index + 1, tried.point.short()),
            (7, -5),
            number_font.clone(),
        );
        if !tried.passed() {
            let cross = Cross::new((0, 0), DOT_PX, FAILED_COLOR.stroke_width(3));
            chart.draw_series(std::iter::once(EmptyElement::at(at) + cross + number))?;
            continue;
        }
        let color = shard_color(&tuning.plan.grid, tried.point.shards);
        let style = if tried.within(budget_us) {
            color.filled()
        } else {
            color.stroke_width(2)
        };
        let dot = Circle::new((0, 0), DOT_PX, style);
        chart.draw_series(std::iter::once(EmptyElement::at(at) + dot + number))?;
    }
    Ok(())
}

/// The best point (or the closest to the budget) ringed and named.
fn draw_chosen(
    chart: &mut Plot<'_, '_>,
    tuning: &Tuning,
    drawn: &[Drawn<'_>],
) -> Result<(), DrawError> {
    let (index, word) = match tuning.verdict {
        Verdict::Best(index) => (index, "best"),
        Verdict::OverBudget { closest } => (closest, "closest"),
        Verdict::NoneValid => return Ok(()),
    };
    let Some(&(_, _, at)) = drawn.iter().find(|(i, _, _)| *i == index) else {
        return Ok(());
    };
    let ring = Circle::new((0, 0), BEST_RING_PX, BLACK.stroke_width(3));
    let label = Text::new(word, (10, 10), svg::bold(18, HPos::Left, VPos::Top));
    chart.draw_series(std::iter::once(EmptyElement::at(at) + ring + label))?;
    Ok(())
}
