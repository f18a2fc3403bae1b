//! `--plot`: the results of one `ferry-load` run as one SVG picture.
//!
//! The first panel holds one latency curve per system and shard count, read
//! from the run's latency histogram: latency (µs, log scale) against the
//! percentile, placed at log10(1/(1−p)) so that each further nine (90%,
//! 99%, 99.9%, …) takes the same width and the tail is as visible as the
//! median. A curve ends at the percentile its own inputs can tell,
//! 1 − 1/inputs. When some system ran at two or more shard counts
//! (`--sweep-shards`), a second panel below holds throughput against shards:
//! a line per system with shards, a dashed level for each without.
//!
//! Drawing is pure, results in and SVG text out ([`render_svg`]);
//! [`write_svg`] only adds the file. The page, the axes and the colours are
//! [`super::svg`]'s.
//!
//! ```
//! use ferry_bench::report::plot::{percentile_label, percentile_x, quantile_at};
//!
//! // 99% is two nines along, 99.9% three.
//! assert!((percentile_x(0.99) - 2.0).abs() < 1e-9);
//! assert_eq!(percentile_label(quantile_at(3.0)), "99.9%");
//! ```

use std::ops::Range;
use std::path::Path;

use hdrhistogram::Histogram;
use plotters::backend::SVGBackend;
use plotters::chart::ChartContext;
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::element::{Circle, DashedPathElement, PathElement, Text};
use plotters::series::LineSeries;
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::{Color, RGBColor};

use super::svg::{self, DrawError, LogAxis, Panel};
use super::{thousands, RunResult};

/// Width of the picture, px.
const WIDTH_PX: u32 = 1300;
/// Width of the room for the legend, right of each chart, px.
const LEGEND_WIDTH_PX: u32 = 250;
/// Where the legend's first line is, from the panel's top, px: level with
/// the top of the chart, below its caption.
const LEGEND_TOP_PX: i32 = 60;
/// Height of one line of the legend, px.
const LEGEND_ROW_PX: i32 = 26;
/// Length of the coloured line before each name, px.
const LEGEND_LINE_PX: i32 = 30;
/// Size of the legend's names, px (as plotters takes a font size).
const LEGEND_FONT_PX: u32 = 18;
/// Height of the heading above the panels, px.
const HEADING_HEIGHT_PX: u32 = 40;
/// Height of the latency panel, px.
const LATENCY_PANEL_HEIGHT_PX: u32 = 620;
/// Height of the throughput panel, when drawn, px.
const THROUGHPUT_PANEL_HEIGHT_PX: u32 = 420;

/// Distance between the points of a latency curve along the percentile
/// axis, in nines: 100 points from 0% to 90%, 100 more to 99%, and so on.
const CURVE_STEP_NINES: f64 = 0.01;
/// The percentile axis ends at this many nines at most (99.999999%), where
/// a percentile still prints exactly with six decimals.
const NINES_MAX: f64 = 8.0;

/// One colour per system, in the order the systems ran.
const SYSTEM_COLORS: [RGBColor; 6] = [
    svg::BLUE,
    svg::ORANGE,
    svg::GREEN,
    svg::RED,
    svg::PURPLE,
    svg::BROWN,
];
/// How far towards white the curve of a system's fewest shards is drawn;
/// its most shards get the full colour, the counts between are spread out.
const FEWEST_SHARDS_LIGHTNESS: f64 = 0.55;

/// Where quantile `quantile` (0 ≤ q < 1) sits on the percentile axis:
/// log10(1/(1 − q)), its count of nines. 50% is at 0.30, 90% at 1, 99% at 2.
pub fn percentile_x(quantile: f64) -> f64 {
    debug_assert!((0.0..1.0).contains(&quantile), "quantile {quantile}");
    -(1.0 - quantile).log10()
}

/// The quantile at position `x` of the percentile axis: 1 − 10^−x, the
/// inverse of [`percentile_x`].
pub fn quantile_at(x: f64) -> f64 {
    1.0 - 10f64.powf(-x)
}

/// `quantile` as a percentile label: `50%`, `99.9%`, with no more digits
/// than it has (to six decimals).
pub fn percentile_label(quantile: f64) -> String {
    let digits = format!("{:.6}", quantile * 100.0);
    let trimmed = digits.trim_end_matches('0').trim_end_matches('.');
    format!("{trimmed}%")
}

/// The labelled positions of a percentile axis `nines_end` long: 0%, 50%,
/// then every whole nine, 90%, 99%, … up to the end.
pub fn percentile_ticks(nines_end: f64) -> Vec<f64> {
    let mut ticks = vec![0.0, percentile_x(0.5)];
    let mut nines = 1.0;
    while nines <= nines_end + 1e-9 {
        ticks.push(nines);
        nines += 1.0;
    }
    ticks
}

/// The points of one latency curve, (position on the percentile axis,
/// latency in µs), from 0% to the last percentile that `latency` (in ns)
/// can tell: 1 − 1/count, or `NINES_MAX` (8) nines. Empty without inputs.
pub fn latency_curve(latency: &Histogram<u64>) -> Vec<(f64, f64)> {
    if latency.is_empty() {
        return Vec::new();
    }
    let nines_last = (latency.len() as f64).log10().min(NINES_MAX);
    let micros_at = |x: f64| latency.value_at_quantile(quantile_at(x)) as f64 / 1_000.0;
    let steps = (nines_last / CURVE_STEP_NINES).floor() as usize;
    let mut points: Vec<(f64, f64)> = (0..=steps)
        .map(|step| step as f64 * CURVE_STEP_NINES)
        .map(|x| (x, micros_at(x)))
        .collect();
    if points.last().is_some_and(|&(x, _)| x < nines_last) {
        points.push((nines_last, micros_at(nines_last)));
    }
    points
}

/// A linear axis with labels and grid lines at the given places only:
/// the percentile axis at 0%, 50% and each nine, the shards axis at each
/// shard count measured. (plotters' own f64 axis picks round places of its
/// own, and its key-point wrapper takes no label formatter.)
#[derive(Clone, Debug)]
pub struct TickedAxis {
    /// The values at the axis' two ends.
    pub range: Range<f64>,
    /// Where the labels go, inside `range`.
    pub ticks: Vec<f64>,
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        debug_assert!(self.range.end > self.range.start, "{:?}", self.range);
        let share = (value - self.range.start) / (self.range.end - self.range.start);
        limit.0 + (share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Bold grid lines at the ticks, no light ones between.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// The picture of `runs` as SVG text, headed by `heading` (what was run).
pub fn render_svg(heading: &str, runs: &[RunResult]) -> Result<String, String> {
    let swept = swept(runs);
    let height = HEADING_HEIGHT_PX
        + LATENCY_PANEL_HEIGHT_PX
        + if swept { THROUGHPUT_PANEL_HEIGHT_PX } else { 0 };
    svg::render((WIDTH_PX, height), HEADING_HEIGHT_PX, |top, panels| {
        top.titled(heading, (svg::FONT, svg::HEADING_FONT_PX))?;
        let (latency, throughput) = panels.split_vertically(LATENCY_PANEL_HEIGHT_PX);
        draw_latency(&latency, runs)?;
        if swept {
            draw_throughput(&throughput, runs)?;
        }
        Ok(())
    })
}

/// Writes the picture of `runs` (see [`render_svg`]) to `path`.
pub fn write_svg(path: &Path, heading: &str, runs: &[RunResult]) -> Result<(), String> {
    svg::write(path, &render_svg(heading, runs)?)
}

/// One line of a panel's legend.
struct LegendEntry {
    name: String,
    color: RGBColor,
    /// Drawn dashed, as a system without shards is in the throughput panel.
    dashed: bool,
}

/// Latency against percentile, one curve per run.
fn draw_latency(panel: &Panel<'_>, runs: &[RunResult]) -> Result<(), DrawError> {
    let curves: Vec<(&RunResult, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|run| (run, latency_curve(&run.latency)))
        .filter(|(_, curve)| !curve.is_empty())
        .collect();
    let nines_end = curves
        .iter()
        .filter_map(|(_, curve)| curve.last().map(|&(x, _)| x.ceil()))
        .fold(1.0, f64::max);
    let (us_low, us_high) = latency_bounds(curves.iter().flat_map(|(_, curve)| curve));
    let (chart_area, legend_area) = beside_legend(panel);
    let mut chart = latency_chart(&chart_area, nines_end, us_low..us_high)?;
    let mut legend = Vec::new();
    for (run, curve) in curves {
        let color = run_color(runs, run);
        chart.draw_series(LineSeries::new(curve, color.stroke_width(2)))?;
        legend.push(LegendEntry {
            name: run.label(),
            color,
            dashed: false,
        });
    }
    draw_legend(&legend_area, &legend)
}

/// The latency chart of [`draw_latency`].
type LatencyChart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<TickedAxis, LogAxis>>;

/// The latency panel's chart and axes: percentiles to `nines_end` nines
/// across, latency over `us` up (labelled at 1, 2 and 5 of each decade).
fn latency_chart<'a, 'b>(
    area: &'a Panel<'b>,
    nines_end: f64,
    us: Range<f64>,
) -> Result<LatencyChart<'a, 'b>, DrawError> {
    let percentiles = TickedAxis {
        range: 0.0..nines_end,
        ticks: percentile_ticks(nines_end),
    };
    let mut chart = svg::chart(area, "Latency by percentile (inputs answered with success)")
        .build_cartesian_2d(percentiles, svg::log_axis(us.start, us.end))?;
    svg::draw_axes(
        &mut chart,
        (
            "percentile (log scale of 1/(1 − p))",
            "latency, µs (log scale)",
        ),
        &|x| percentile_label(quantile_at(*x)),
        &|us| svg::decimal_label(*us),
    )?;
    Ok(chart)
}

/// The latency axis' ends, µs: a little beyond the lowest and highest
/// point, never at or below zero (the axis is logarithmic).
fn latency_bounds<'a>(points: impl Iterator<Item = &'a (f64, f64)>) -> (f64, f64) {
    let (low, high) = points.fold((f64::INFINITY, 0.0f64), |(low, high), &(_, us)| {
        (low.min(us), high.max(us))
    });
    if !low.is_finite() {
        return (1.0, 10.0);
    }
    let low = (low / 1.5).max(0.001);
    (low, (high * 1.5).max(low * 10.0))
}

/// Throughput against shards: a line through the shard counts of each
/// system with shards, a dashed level for each system without.
fn draw_throughput(panel: &Panel<'_>, runs: &[RunResult]) -> Result<(), DrawError> {
    let counts = shard_counts(runs);
    let (Some(&fewest), Some(&most)) = (counts.first(), counts.last()) else {
        return Ok(());
    };
    let shards = (fewest as f64 - 0.25)..(most as f64 + 0.25);
    let top = runs.iter().map(|run| run.throughput).fold(1.0, f64::max) * 1.15;
    let (chart_area, legend_area) = beside_legend(panel);
    let across = TickedAxis {
        range: shards.clone(),
        ticks: counts.iter().map(|&n| n as f64).collect(),
    };
    let mut chart = svg::chart(&chart_area, "Throughput by shard count")
        .build_cartesian_2d(across, 0.0..top)?;
    svg::draw_axes(
        &mut chart,
        ("shards", "inputs/s"),
        &|x| format!("{x:.0}"),
        &|per_s| thousands(per_s.round() as u64),
    )?;
    let mut legend = Vec::new();
    for system in systems(runs) {
        let of_system: Vec<&RunResult> = runs.iter().filter(|run| run.system == system).collect();
        let entry = throughput_series(&mut chart, &of_system, system_color(runs, system), &shards)?;
        legend.push(entry);
    }
    draw_legend(&legend_area, &legend)
}

/// The throughput chart of [`draw_throughput`].
type ThroughputChart<'a> =
    ChartContext<'a, SVGBackend<'a>, Cartesian2d<TickedAxis, RangedCoordf64>>;

/// One system's throughput: a line with a point per shard count, or, for a
/// system without shards, a dashed level across `shards`.
fn throughput_series(
    chart: &mut ThroughputChart<'_>,
    of_system: &[&RunResult],
    color: RGBColor,
    shards: &Range<f64>,
) -> Result<LegendEntry, DrawError> {
    let system = &of_system[0].system;
    let mut points: Vec<(f64, f64)> = of_system
        .iter()
        .filter_map(|run| Some((run.shards? as f64, run.throughput)))
        .collect();
    if points.len() < of_system.len() {
        let level = of_system[0].throughput;
        chart.draw_series(svg::dashed(
            [(shards.start, level), (shards.end, level)],
            color,
        ))?;
        return Ok(LegendEntry {
            name: format!("{system} (no shards)"),
            color,
            dashed: true,
        });
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    chart.draw_series(points.iter().map(|&at| Circle::new(at, 4, color.filled())))?;
    chart.draw_series(LineSeries::new(points, color.stroke_width(2)))?;
    Ok(LegendEntry {
        name: system.clone(),
        color,
        dashed: false,
    })
}

/// A panel split into the chart's room and the legend's, right of it, where
/// no curve can run under the legend.
fn beside_legend<'a>(panel: &Panel<'a>) -> (Panel<'a>, Panel<'a>) {
    let (width_px, _) = panel.dim_in_pixel();
    panel.split_horizontally(width_px.saturating_sub(LEGEND_WIDTH_PX))
}

/// The legend, one line of colour and one name per entry, top down from
/// the height of the chart's top.
fn draw_legend(area: &Panel<'_>, entries: &[LegendEntry]) -> Result<(), DrawError> {
    let font = svg::text(LEGEND_FONT_PX, HPos::Left, VPos::Center);
    for (row, entry) in (0i32..).zip(entries) {
        let y = LEGEND_TOP_PX + row * LEGEND_ROW_PX;
        let line = [(0, y), (LEGEND_LINE_PX, y)];
        let style = entry.color.stroke_width(3);
        if entry.dashed {
            area.draw(&DashedPathElement::new(line, 7, 5, style))?;
        } else {
            area.draw(&PathElement::new(line, style))?;
        }
        area.draw(&Text::new(
            entry.name.as_str(),
            (LEGEND_LINE_PX + 10, y),
            font.clone(),
        ))?;
    }
    Ok(())
}

/// Whether some system ran at two or more shard counts.
fn swept(runs: &[RunResult]) -> bool {
    systems(runs).into_iter().any(|system| {
        let mut counts: Vec<usize> = runs
            .iter()
            .filter(|run| run.system == system)
            .filter_map(|run| run.shards)
            .collect();
        counts.sort_unstable();
        counts.dedup();
        counts.len() >= 2
    })
}

/// The shard counts measured, ascending, each once.
fn shard_counts(runs: &[RunResult]) -> Vec<usize> {
    let mut counts: Vec<usize> = runs.iter().filter_map(|run| run.shards).collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// The systems of `runs`, each once, in the order they ran.
fn systems(runs: &[RunResult]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for run in runs {
        if !names.contains(&run.system.as_str()) {
            names.push(&run.system);
        }
    }
    names
}

/// The colour of `system`: its place among the systems that ran.
fn system_color(runs: &[RunResult], system: &str) -> RGBColor {
    let place = systems(runs)
        .iter()
        .position(|&name| name == system)
        .unwrap_or(0);
    svg::pick(&SYSTEM_COLORS, place)
}

/// The colour of `run`'s curve among `runs`: its system's, lighter the
/// fewer shards it had among that system's runs.
pub fn run_color(runs: &[RunResult], run: &RunResult) -> RGBColor {
    let RGBColor(red, green, blue) = system_color(runs, &run.system);
    let mut counts: Vec<Option<usize>> = runs
        .iter()
        .filter(|other| other.system == run.system)
        .map(|other| other.shards)
        .collect();
    counts.sort_unstable();
    counts.dedup();
    let rank = counts.iter().position(|&n| n == run.shards).unwrap_or(0);
    let lightness = match counts.len() {
        0 | 1 => 0.0,
        n => FEWEST_SHARDS_LIGHTNESS * (n - 1 - rank) as f64 / (n - 1) as f64,
    };
    let lighten = |channel: u8| channel + ((255 - channel) as f64 * lightness).round() as u8;
    RGBColor(lighten(red), lighten(green), lighten(blue))
}
