//! `--plot`'s picture: each nine of the percentile axis one step along,
//! latency labelled at 1, 2 and 5 of each decade, a curve to the last
//! percentile its inputs can tell, every run named in the legend, a sweep's
//! throughput panel, and the file written or its path named in the error.

use ferry_bench::report::plot::{
    latency_curve, percentile_label, percentile_ticks, percentile_x, quantile_at, render_svg,
    run_color, write_svg, TickedAxis,
};
use ferry_bench::report::svg::{decimal_label, log_ticks};
use ferry_bench::report::RunResult;
use ferry_bench::store::new_histogram;
use plotters::coord::ranged1d::Ranged;

/// A result whose latency histogram holds `inputs` inputs spread evenly
/// over 1..=`inputs` ms.
fn run(system: &str, shards: Option<usize>, throughput: f64, inputs: u64) -> RunResult {
    let mut latency = new_histogram();
    for ms in 1..=inputs {
        latency.record(ms * 1_000_000).unwrap();
    }
    RunResult {
        submitted: inputs,
        completed: inputs,
        applied: inputs,
        completed_sum: 0,
        applied_sum: 0,
        latency,
        ..RunResult::sample(system, shards, throughput)
    }
}

/// Whether `svg` has a text element that reads `text` (the SVG backend
/// puts each element's text on a line of its own).
fn has_text(svg: &str, text: &str) -> bool {
    svg.lines().any(|line| line.trim() == text)
}

#[test]
fn each_nine_is_one_step_along_the_percentile_axis() {
    let cases = [
        (0.0, 0.0, "0%"),
        (0.5, 2f64.log10(), "50%"),
        (0.9, 1.0, "90%"),
        (0.99, 2.0, "99%"),
        (0.999, 3.0, "99.9%"),
        (0.9999, 4.0, "99.99%"),
        (0.99999, 5.0, "99.999%"),
    ];
    for (quantile, x, label) in cases {
        assert!((percentile_x(quantile) - x).abs() < 1e-9, "{quantile}");
        assert!((quantile_at(x) - quantile).abs() < 1e-12, "{x}");
        assert_eq!(percentile_label(quantile_at(x)), label);
    }
    let ticks: Vec<String> = percentile_ticks(4.0)
        .into_iter()
        .map(|x| percentile_label(quantile_at(x)))
        .collect();
    assert_eq!(ticks, ["0%", "50%", "90%", "99%", "99.9%", "99.99%"]);
    let axis = TickedAxis {
        range: 0.0..4.0,
        ticks: percentile_ticks(4.0),
    };
    let pixel = |quantile: f64| axis.map(&percentile_x(quantile), (100, 900));
    assert_eq!([pixel(0.0), pixel(0.9), pixel(0.99)], [100, 300, 500]);
    assert_eq!([pixel(0.999), pixel(0.9999)], [700, 900]);
}

#[test]
fn latency_is_labelled_at_one_two_and_five() {
    let ticks = log_ticks(150.0, 2_500.0, &[1.0, 2.0, 5.0]);
    assert_eq!(ticks, [200.0, 500.0, 1_000.0, 2_000.0]);
    let labels: Vec<String> = [0.02, 0.5, 1.0, 50.0, 2_000.0]
        .into_iter()
        .map(decimal_label)
        .collect();
    assert_eq!(labels, ["0.02", "0.5", "1", "50", "2,000"]);
}

#[test]
fn a_curve_rises_to_the_last_percentile_its_inputs_tell() {
    let latency = run("ferry", Some(1), 1.0, 1_000).latency;
    let curve = latency_curve(&latency);
    let (x_last, us_last) = *curve.last().unwrap();
    assert!(
        (x_last - 3.0).abs() < 1e-9,
        "1,000 inputs tell 99.9%: {x_last}"
    );
    assert!((us_last - 999_000.0).abs() / 999_000.0 < 0.01, "{us_last}");
    let (_, us_first) = curve[0];
    assert!((us_first - 1_000.0).abs() / 1_000.0 < 0.01, "{us_first}");
    assert!(curve
        .windows(2)
        .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    assert!(latency_curve(&new_histogram()).is_empty());
}

#[test]
fn the_picture_names_every_run_in_its_legend() {
    let runs = [
        run("ferry", Some(2), 1_000.0, 500),
        run("single-lock", None, 800.0, 400),
        run("unbatched", None, 10.0, 20),
    ];
    let svg = render_svg("1,000 keys", &runs).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    for name in ["ferry (2 shards)", "single-lock", "unbatched", "99.9%"] {
        assert!(has_text(&svg, name), "no {name}");
    }
    assert!(!svg.contains("Throughput"), "no sweep, no throughput panel");
}

#[test]
fn a_sweep_adds_the_throughput_panel() {
    let runs = [
        run("ferry", Some(1), 1_000.0, 500),
        run("ferry", Some(2), 1_500.0, 500),
        run("batch-aint-one", None, 700.0, 300),
    ];
    let svg = render_svg("sweep", &runs).unwrap();
    assert!(svg.contains("Throughput by shard count"));
    for name in [
        "ferry (1 shard)",
        "ferry (2 shards)",
        "ferry",
        "batch-aint-one (no shards)",
    ] {
        assert!(has_text(&svg, name), "no {name}");
    }
    assert_ne!(run_color(&runs, &runs[0]), run_color(&runs, &runs[1]));
}

#[test]
fn the_file_is_written_or_the_error_names_its_path() {
    let dir = std::env::temp_dir().join(format!("ferry-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("latency.svg");
    let runs = [run("ferry", Some(1), 1_000.0, 100)];
    write_svg(&path, "one run", &runs).unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.len() > 1_000 && has_text(&written, "ferry (1 shard)"));
    let nowhere = dir.join("no-such-dir").join("latency.svg");
    let problem = write_svg(&nowhere, "one run", &runs).unwrap_err();
    assert!(
        problem.contains(&nowhere.display().to_string()),
        "{problem}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
