//! The drawing that `--plot` and the tune picture share: logarithmic
//! ticks and labels, the palette, the page and its file.

use ferry_bench::report::svg::{decimal_label, log_ticks, pick, render, write, BLUE, ORANGE, RED};
use plotters::style::text_anchor::{HPos, VPos};

#[test]
fn log_ticks_stay_inside_the_range_and_climb_by_decades() {
    assert_eq!(log_ticks(1.0, 100.0, &[1.0]), [1.0, 10.0]);
    // The top is left out, the bottom kept.
    assert_eq!(log_ticks(10.0, 10.0, &[1.0]), Vec::<f64>::new());
    assert_eq!(
        log_ticks(0.3, 30.0, &[1.0, 2.0, 5.0]),
        [0.5, 1.0, 2.0, 5.0, 10.0, 20.0]
    );
    let light = log_ticks(
        100.0,
        1_000.0,
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
    );
    assert_eq!(light.len(), 9);
    assert!(light.windows(2).all(|pair| pair[0] < pair[1]), "{light:?}");
}

#[test]
fn labels_group_thousands_and_keep_small_digits() {
    assert_eq!(decimal_label(1.0), "1");
    assert_eq!(decimal_label(1_000_000.0), "1,000,000");
    assert_eq!(decimal_label(0.02), "0.02");
    assert_eq!(decimal_label(0.125), "0.125");
    assert_eq!(decimal_label(0.1), "0.1");
}

#[test]
fn the_palette_goes_round_past_its_end() {
    let palette = [BLUE, ORANGE, RED];
    assert_eq!(pick(&palette, 0), BLUE);
    assert_eq!(pick(&palette, 2), RED);
    assert_eq!(pick(&palette, 3), BLUE);
    assert_eq!(pick(&palette, 7), ORANGE);
}

#[test]
fn a_page_is_svg_of_its_size_with_what_each_panel_drew() {
    let svg = render((640, 480), 40, |heading, rest| {
        heading.draw_text(
            "the heading",
            &ferry_bench::report::svg::bold(18, HPos::Left, VPos::Top),
            (10, 10),
        )?;
        let (_, height) = rest.dim_in_pixel();
        assert_eq!(height, 440, "the rest is the page below the heading");
        rest.draw_text(
            "below",
            &ferry_bench::report::svg::text(16, HPos::Left, VPos::Top),
            (10, 10),
        )
    })
    .unwrap();
    assert!(svg.starts_with("<svg"), "{svg:.60}");
    assert!(svg.contains("width=\"640\""), "{svg:.200}");
    assert!(svg.contains("height=\"480\""), "{svg:.200}");
    assert!(svg.contains("the heading") && svg.contains("below"));
    assert!(svg.trim_end().ends_with("</svg>"));
}

#[test]
fn a_drawing_error_and_an_unwritable_file_are_said() {
    let err = render((100, 100), 10, |_, _| {
        Err(plotters::drawing::DrawingAreaErrorKind::LayoutError)
    })
    .unwrap_err();
    assert!(err.starts_with("could not draw the plot"), "{err}");
    let path = std::env::temp_dir()
        .join("ferry-no-such-dir-for-svg")
        .join("plot.svg");
    let err = write(&path, "<svg/>").unwrap_err();
    assert!(err.contains("ferry-no-such-dir-for-svg"), "{err}");
}
