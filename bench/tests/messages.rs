//! What `ferry-load` tells a newcomer, asserted on its key words: durations
//! with decimals are read, a negative one or a missing one is refused
//! saying so; a glommio that cannot start is refused naming the flag that
//! lifts it; when `--runtime auto` takes tokio the report says why; the
//! report's time slices and store lateness come with what they mean, and
//! each system with a line on what it is; `-h` is short, `--help` whole,
//! for `ferry-load` and for its subcommands.

use std::process::{Command, Output};

/// `ferry-load` with `args`, its locked-memory limit lowered to 64 KiB
/// (a container's common default, too little for glommio) when `low_memlock`.
fn ferry_load(args: &[&str], low_memlock: bool) -> Output {
    let program = env!("CARGO_BIN_EXE_ferry-load");
    let mut command = if low_memlock {
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg("ulimit -l 64 && exec \"$0\" \"$@\"")
            .arg(program);
        shell
    } else {
        Command::new(program)
    };
    command.args(args).output().expect("ferry-load runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A short run of ferry alone on the sim: a fraction of a second.
const SHORT: [&str; 10] = [
    "--compare",
    "ferry",
    "--duration",
    "200ms",
    "--warmup",
    "100ms",
    "--clients",
    "50",
    "--shards",
    "1",
];

#[test]
fn a_decimal_duration_is_read() {
    // Refused for another flag, after the durations were read.
    let output = ferry_load(
        &["--duration", "1.5s", "--warmup", "0.5s", "--per-call", "0"],
        false,
    );
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("--per-call must be at least 1"), "{said}");
}

#[test]
fn a_negative_or_missing_duration_is_refused_saying_why() {
    let negative = ferry_load(&["--duration", "-1s"], false);
    let said = stderr(&negative);
    assert!(!negative.status.success());
    assert!(
        said.contains("`-1s`: a duration cannot be negative"),
        "{said}"
    );
    let missing = ferry_load(&["--warmup", "1s", "--duration", "--no-pin"], false);
    let said = stderr(&missing);
    assert!(!missing.status.success());
    assert!(
        said.contains("`--no-pin`: is a flag, not a duration"),
        "{said}"
    );
}

#[test]
fn glommio_that_cannot_start_is_refused_naming_the_runtime_flag() {
    let mut args = vec!["--runtime", "glommio"];
    args.extend(SHORT);
    let output = ferry_load(&args, true);
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("the locked-memory limit is 64 KiB"), "{said}");
    assert!(said.contains("`--runtime tokio`"), "{said}");
    assert!(
        !said.contains("Runtime::"),
        "in the command line's words: {said}"
    );
}

#[test]
fn the_report_says_why_auto_chose_tokio_and_what_its_figures_mean() {
    let output = ferry_load(&SHORT, true);
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}\n{report}", stderr(&output));
    let runtime = report
        .lines()
        .find(|line| line.starts_with("shards' runtime, ferry (1 shard): "))
        .unwrap_or_else(|| panic!("a runtime line in: {report}"));
    assert!(
        runtime.contains("tokio (auto chose it: the locked-memory limit is 64 KiB"),
        "{runtime}"
    );
    assert!(runtime.contains("`--runtime tokio`"), "{runtime}");
    for needle in [
        "store answers past due: how long after its round trip was up",
        "ferry: this engine",
    ] {
        assert!(report.contains(needle), "{needle} in: {report}");
    }
}

#[test]
fn the_help_says_where_shards_are_pinned_and_what_batch_aint_one_is() {
    let output = ferry_load(&["--help"], false);
    // Read as one line: the help is wrapped to the terminal.
    let help = String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(output.status.success());
    assert!(!help.contains("CPUs 0..N"), "{help}");
    assert!(help.contains("affinity set"), "{help}");
    assert!(help.contains("batch-aint-one (a batching crate"), "{help}");
}

#[test]
fn short_help_has_the_common_flags_and_long_help_every_one() {
    let text = |args: &[&str]| {
        let output = ferry_load(args, false);
        assert!(output.status.success());
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let (short, long) = (text(&["-h"]), text(&["--help"]));
    assert!(short.lines().count() < 70, "-h is short:\n{short}");
    for common in [
        "--duration",
        "--store",
        "--runtime",
        "--compare",
        "--shards",
    ] {
        assert!(short.contains(common), "-h shows {common}");
    }
    assert!(short.contains("see more with '--help'"), "{short}");
    for rare in ["--spin-before-park", "--seed"] {
        assert!(!short.contains(rare), "-h leaves out {rare}");
        assert!(long.contains(rare), "--help shows {rare}");
    }
    let (short, long) = (text(&["tune", "-h"]), text(&["tune", "--help"]));
    assert!(short.contains("--tune-p99"), "tune -h shows --tune-p99");
    assert!(
        !short.contains("--tune-slots"),
        "tune -h leaves out --tune-slots"
    );
    assert!(
        long.contains("--tune-slots"),
        "tune --help shows --tune-slots"
    );
}
