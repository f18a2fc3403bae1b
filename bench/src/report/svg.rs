//! What `ferry-load`'s SVG pictures share ([`super::plot`]'s latency curves
//! and [`super::tune`]'s search): the page with its heading, a chart's
//! frame and axes, logarithmic axes labelled at 1, 2 and 5 of each decade,
//! the named colours, the fonts, dashed levels, and the file.
//!
//! Drawing is pure, [`render`] hands back SVG text and [`write()`] only adds
//! the file.
//!
//! ```
//! use ferry_bench::report::svg::{decimal_label, log_ticks};
//!
//! assert_eq!(log_ticks(150.0, 2_500.0, &[1.0, 2.0, 5.0]), [200.0, 500.0, 1_000.0, 2_000.0]);
//! assert_eq!(decimal_label(0.5), "0.5");
//! assert_eq!(decimal_label(2_000.0), "2,000");
//! ```

use std::path::Path;

use plotters::backend::SVGBackend;
use plotters::chart::{ChartBuilder, ChartContext};
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::combinators::{BindKeyPoints, IntoLogRange, LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, DrawingAreaErrorKind, IntoDrawingArea};
use plotters::series::DashedLineSeries;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{Color, FontStyle, IntoFont, RGBColor, TextStyle, WHITE};

use super::thousands;

/// The error of a drawing on the SVG backend.
pub type DrawError = DrawingAreaErrorKind<std::io::Error>;

/// A part of the picture: the heading, a panel, a chart's or a legend's
/// room.
pub type Panel<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A logarithmic axis labelled at chosen values ([`log_axis`]).
pub type LogAxis = WithKeyPoints<LogCoord<f64>>;

/// The typeface of all text.
pub const FONT: &str = "sans-serif";
/// Size of the heading's text, px, as plotters takes a font size (it draws
/// text at 1/1.24 of it, and so are the sizes below).
pub const HEADING_FONT_PX: u32 = 18;
/// Size of a chart's caption, px.
pub const CAPTION_FONT_PX: u32 = 22;
/// Size of the values along the axes, px.
pub const AXIS_LABEL_FONT_PX: u32 = 16;
/// Size of the axes' names, px.
pub const AXIS_NAME_FONT_PX: u32 = 17;

/// Blue, the first colour of every palette.
pub const BLUE: RGBColor = RGBColor(31, 100, 180);
/// Orange.
pub const ORANGE: RGBColor = RGBColor(230, 120, 20);
/// Green.
pub const GREEN: RGBColor = RGBColor(40, 150, 60);
/// Red.
pub const RED: RGBColor = RGBColor(200, 40, 40);
/// Purple.
pub const PURPLE: RGBColor = RGBColor(130, 80, 170);
/// Brown.
pub const BROWN: RGBColor = RGBColor(120, 85, 60);
/// Teal.
pub const TEAL: RGBColor = RGBColor(20, 160, 170);
/// Pink.
pub const PINK: RGBColor = RGBColor(210, 90, 170);

/// The colour at `place` of `palette`, round again past its end.
pub fn pick(palette: &[RGBColor], place: usize) -> RGBColor {
    palette[place % palette.len()]
}

/// A picture `size` px large as SVG text: a white page, its top
/// `heading_px` drawn by `draw` into the first panel and the rest into the
/// second.
pub fn render(
    size: (u32, u32),
    heading_px: u32,
    draw: impl FnOnce(&Panel<'_>, &Panel<'_>) -> Result<(), DrawError>,
) -> Result<String, String> {
    let mut svg = String::new();
    page(&mut svg, size, heading_px, draw)
        .map_err(|err| format!("could not draw the plot: {err}"))?;
    debug_assert!(svg.starts_with("<svg"), "{svg:.40}");
    Ok(svg)
}

/// The page of [`render`], drawn into `svg`.
fn page(
    svg: &mut String,
    size: (u32, u32),
    heading_px: u32,
    draw: impl FnOnce(&Panel<'_>, &Panel<'_>) -> Result<(), DrawError>,
) -> Result<(), DrawError> {
    let root = SVGBackend::with_string(svg, size).into_drawing_area();
    root.fill(&WHITE)?;
    let (heading, rest) = root.split_vertically(heading_px);
    draw(&heading, &rest)?;
    root.present()
}

/// Writes `svg` to `path`; the error names the path.
pub fn write(path: &Path, svg: &str) -> Result<(), String> {
    std::fs::write(path, svg).map_err(|err| format!("could not write {}: {err}", path.display()))
}

/// A chart on `area` with its caption and room for the axes' labels: 90
/// px left of it for the values up, 50 below for those across.
pub fn chart<'a, 'b>(area: &'a Panel<'b>, caption: &str) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(caption, (FONT, CAPTION_FONT_PX))
        .margin_left(16)
        .margin_right(16)
        .margin_bottom(10)
        .x_label_area_size(50)
        .y_label_area_size(90);
    builder
}

/// The grid and the two axes of `chart`: their `names` (across, up) and
/// their values as `x_label` and `y_label` write them.
pub fn draw_axes<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    (x_name, y_name): (&str, &str),
    x_label: &dyn Fn(&X::ValueType) -> String,
    y_label: &dyn Fn(&Y::ValueType) -> String,
) -> Result<(), DrawError>
where
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
{
    chart
        .configure_mesh()
        .x_desc(x_name)
        .y_desc(y_name)
        .x_label_formatter(x_label)
        .y_label_formatter(y_label)
        .label_style((FONT, AXIS_LABEL_FONT_PX))
        .axis_desc_style((FONT, AXIS_NAME_FONT_PX))
        .draw()
}

/// A logarithmic axis from `low` to `high`, labelled (with a bold grid
/// line) at 1, 2 and 5 of each decade, a light grid line at each of 1 to 9.
pub fn log_axis(low: f64, high: f64) -> LogAxis {
    (low..high)
        .log_scale()
        .with_key_points(log_ticks(low, high, &[1.0, 2.0, 5.0]))
        .with_light_points(log_ticks(
            low,
            high,
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        ))
}

/// The values from `low` up to (not at) `high` that are one of `steps`
/// times a power of ten: with `steps` 1, 2, 5, the labels of a logarithmic
/// axis.
pub fn log_ticks(low: f64, high: f64, steps: &[f64]) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = 10f64.powf(low.log10().floor());
    while decade <= high {
        ticks.extend(
            steps
                .iter()
                .map(|step| step * decade)
                .filter(|value| (low..high).contains(value)),
        );
        decade *= 10.0;
    }
    ticks
}

/// A value on a logarithmic axis: whole and grouped from 1 up (`2`,
/// `1,000`), with the digits it has below (`0.5`, `0.02`, to three).
pub fn decimal_label(value: f64) -> String {
    if value >= 1.0 {
        return thousands(value.round() as u64);
    }
    let digits = format!("{value:.3}");
    digits
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// Text `px` large, placed by its side `h` and its `v` edge.
pub fn text(px: u32, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle::from((FONT, px).into_font()).pos(Pos::new(h, v))
}

/// Bold text `px` large, placed as [`text`] places it.
pub fn bold(px: u32, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle::from((FONT, px).into_font().style(FontStyle::Bold)).pos(Pos::new(h, v))
}

/// A dashed line of `color` through two points of a chart: a level, or a
/// limit across.
pub fn dashed(
    ends: [(f64, f64); 2],
    color: RGBColor,
) -> DashedLineSeries<std::array::IntoIter<(f64, f64), 2>, i32> {
    DashedLineSeries::new(ends, 8, 6, color.stroke_width(2))
}
