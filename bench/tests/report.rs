//! The report's table, sections and JSON from made-up results.

use ferry_bench::report::*;

fn run(system: &str, shards: Option<usize>, throughput: f64) -> RunResult {
    RunResult::sample(system, shards, throughput)
}

#[test]
fn engine_figures_are_told_and_carried_in_the_json() {
    let mut total = ferry::ShardStats::default();
    total.batch_size = ferry::Summary {
        count: 3,
        mean: 20,
        p50: 16,
        p90: 40,
        p99: 64,
        max: 64,
    };
    total.queue_time_ns = ferry::Summary {
        p50: 1_500,
        p99: 250_000,
        max: 900_000,
        ..total.batch_size
    };
    let with = RunResult {
        engine: Some(EngineFigures::from_total(&total)),
        ..run("ferry", Some(2), 1.0)
    };
    let told = engine_figures(&[with.clone(), run("unbatched", None, 1.0)]);
    assert!(told.starts_with("stats(), ferry (2 shards): batch size p50 16 p90 40 p99 64 max 64; "));
    assert!(told.contains("queue time p50 1.5 µs"), "{told}");
    assert_eq!(told.lines().count(), 1, "only the engine's run");
    let json = serde_json::to_value(JsonReport {
        command: String::new(),
        store: "sim",
        runs: &[with],
    })
    .unwrap();
    assert_eq!(json["runs"][0]["batch_size_p99"], 64);
    assert_eq!(json["runs"][0]["queue_p99_us"], 250.0);
    assert_eq!(json["runs"][0]["system"], "ferry", "beside the others");
}

#[test]
fn idle_stages_are_told_for_runs_that_count_them() {
    let mut ferry = run("ferry", Some(2), 1.0);
    ferry.dozes_per_s = Some(45_210.4);
    ferry.parks_per_s = Some(0.5);
    let text = idle_stages(&[ferry, run("single-lock", None, 1.0)]);
    assert_eq!(
        text,
        "shards out of work, ferry (2 shards): 45,210 dozes/s, 0.5 parks/s\n"
    );
}

#[test]
fn groups_thousands() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1_000), "1,000");
    assert_eq!(thousands(1_234_567), "1,234,567");
    assert_eq!(micros(12.34), "12.3");
    assert_eq!(micros(12_345.6), "12,346");
}

#[test]
fn the_legend_says_once_what_each_system_is() {
    let legend = legend(&[
        run("ferry", Some(1), 1.0),
        run("ferry", Some(2), 1.0),
        run("batch-aint-one", None, 1.0),
    ]);
    let lines: Vec<&str> = legend.lines().collect();
    assert_eq!(lines.len(), 2, "{legend}");
    assert!(lines[1].starts_with("batch-aint-one: the batching crate"));
    assert!(lines[1].contains("crates.io"), "{legend}");
}

#[test]
fn the_slice_and_lateness_figures_come_with_what_they_mean() {
    let mut ferry = run("ferry", Some(2), 1.0);
    ferry.sched_slice = Some("shard 0 1400 µs, shard 1 100 µs".to_string());
    ferry.runtime = Some("tokio".to_string());
    ferry.runtime_reason = Some("io_uring is turned off".to_string());
    ferry.store_late_p50_us = Some(20.0);
    ferry.store_late_p99_us = Some(100.0);
    ferry.store_late_max_us = Some(900.0);
    let stages = idle_stages(std::slice::from_ref(&ferry));
    assert!(stages.contains("as the kernel reported it"), "{stages}");
    assert!(stages.contains("shard 0 1400 µs"), "{stages}");
    assert!(
        stages.contains("tokio (auto chose it: io_uring is turned off)"),
        "{stages}"
    );
    let timing = store_timing(&[ferry]);
    assert!(
        timing.starts_with("store answers past due: how long"),
        "{timing}"
    );
    assert!(timing.contains("the same for every system"), "{timing}");
}

#[test]
fn every_column_of_the_table_has_a_heading() {
    let table = table(&[run("ferry", Some(2), 1_000.0)]);
    let mut lines = table.lines();
    let (heading, row) = (lines.next().unwrap(), lines.next().unwrap());
    // Right-aligned columns: each heading ends where its values end.
    assert_eq!(heading.chars().count(), row.chars().count(), "{table}");
    assert!(heading.ends_with("cpu µs/in"), "{heading}");
}

#[test]
fn a_longer_system_name_widens_its_column_for_every_row() {
    let table = table(&[
        run("batcher", Some(2), 1_000.0),
        run("single-lock-fifo", None, 1_000.0),
    ]);
    let widths: Vec<usize> = table.lines().map(|line| line.chars().count()).collect();
    assert_eq!(widths.len(), 3, "{table}");
    assert!(widths.iter().all(|&w| w == widths[0]), "{table}");
    assert!(table.contains("single-lock-fifo "), "{table}");
}

#[test]
fn ratios_use_the_best_run_of_the_reference_system() {
    let runs = [
        run("ferry", Some(1), 100.0),
        run("ferry", Some(2), 300.0),
        run("unbatched", None, 10.0),
    ];
    assert_eq!(
        ratios(&runs, "ferry"),
        "ferry (2 shards) / unbatched: 30.00x throughput\n"
    );
    let unkeyed = [
        run("batcher", Some(2), 200.0),
        run("single-lock-fifo", None, 100.0),
    ];
    assert_eq!(
        ratios(&unkeyed, "batcher"),
        "batcher (2 shards) / single-lock-fifo: 2.00x throughput\n"
    );
}

#[test]
fn with_rounds_each_ratio_is_taken_within_a_round_and_the_median_told() {
    let round = |system, shards, round, throughput| RunResult {
        round: Some(round),
        ..run(system, shards, throughput)
    };
    // Round 2 is slow for every system: within it, the ratio holds.
    let runs = [
        round("ferry", Some(1), 1, 100.0),
        round("ferry", Some(2), 1, 400.0),
        round("multi-key", None, 1, 200.0),
        round("ferry", Some(1), 2, 50.0),
        round("ferry", Some(2), 2, 100.0),
        round("multi-key", None, 2, 50.0),
    ];
    assert_eq!(
        ratios(&runs, "ferry"),
        "ferry (2 shards) / multi-key: 2.00x throughput, the median of 2 rounds (2.00, 2.00)\n"
    );
    let medians = round_medians(&runs);
    assert!(
        medians.contains("ferry (2 shards): 250 (100–400)"),
        "{medians}"
    );
    assert!(medians.contains("multi-key: 125 (50–200)"), "{medians}");
    assert_eq!(round_medians(&[run("ferry", Some(2), 1.0)]), "");
    assert_eq!(runs[3].label(), "ferry (1 shard), round 2");
}

#[test]
fn problems_name_lost_inputs_and_ferry_conflicts_only() {
    let mut lost = run("unbatched", None, 1.0);
    lost.lost = 3;
    let mut conflicted = run("ferry", Some(2), 1.0);
    conflicted.conflicts = 2;
    let mut other_conflicts = run("single-lock", None, 1.0);
    other_conflicts.conflicts = 5;
    let problems = problems(&[
        lost,
        conflicted,
        other_conflicts,
        run("ferry", Some(1), 1.0),
    ]);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("not answered"));
    assert!(problems[1].contains("conflicting writes"));
}

#[test]
fn a_read_back_off_by_a_count_or_a_sum_is_a_problem() {
    let clean = run("batch-aint-one", None, 1.0);
    let mut short = run("single-lock", None, 1.0);
    short.applied = 9;
    let mut swapped = run("ferry", Some(2), 1.0);
    // As many inputs, but not the ones answered (one applied twice, one
    // never).
    swapped.applied_sum = 54;
    let runs = [clean, short, swapped];
    let problems = problems(&runs);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems.iter().all(|p| p.contains("read back")),
        "{problems:?}"
    );
    let told = read_backs(&runs);
    assert_eq!(told.lines().count(), 3, "{told}");
    assert!(told
        .lines()
        .next()
        .unwrap()
        .ends_with("exactly the inputs answered with success"));
    assert!(
        told.contains("ferry (2 shards): 10 inputs summing to 54, NOT"),
        "{told}"
    );
    let mut on_server = run("ferry", Some(1), 1.0);
    on_server.server_cpu_us_per_input = Some(12.5);
    assert_eq!(
        server_cpu(&[on_server, run("unbatched", None, 1.0)]),
        "store server CPU, ferry (1 shard): 12.50 µs per input (0.00 s in all)\n"
    );
}

#[test]
fn unknown_outcomes_bound_what_the_read_back_may_hold_beyond_the_successes() {
    // 10 successes summing to 55, and 4 unknown outcomes summing to 40.
    let mut two_landed = run("ferry", Some(2), 1.0);
    two_landed.unknown = 4;
    two_landed.unknown_sum = 40;
    two_landed.applied = 12;
    two_landed.applied_sum = 55 + 21;
    assert!(two_landed.read_back_matches());
    let told = read_backs(std::slice::from_ref(&two_landed));
    assert_eq!(
        told,
        "read back, ferry (2 shards): 12 inputs summing to 76; every success applied, \
         2 of 4 unknown outcomes applied, nothing applied twice\n"
    );
    let twice = RunResult {
        applied: 15,
        applied_sum: 55 + 40,
        ..two_landed.clone()
    };
    let missing = RunResult {
        applied: 9,
        applied_sum: 50,
        ..two_landed.clone()
    };
    let sums_off = RunResult {
        applied_sum: 55 + 41,
        ..two_landed.clone()
    };
    for wrong in [&twice, &missing, &sums_off] {
        assert!(!wrong.read_back_matches(), "{wrong:?}");
        assert_eq!(problems(std::slice::from_ref(wrong)).len(), 1);
    }
    assert!(read_backs(&[twice]).contains("applied twice, or applied though answered as failed"));
    assert!(read_backs(&[missing]).contains("NOT every success applied: 1 fewer"));
    let json = serde_json::to_value(JsonReport {
        command: String::new(),
        store: "postgres",
        runs: &[two_landed],
    })
    .unwrap();
    assert_eq!(json["runs"][0]["unknown"], 4);
    assert!(
        json["runs"][0].get("faults").is_none(),
        "no faults, no field"
    );
}

#[test]
fn the_first_error_of_failed_inputs_is_told_and_carried_in_the_json() {
    let clean = run("multi-key", None, 1_000.0);
    assert!(!read_backs(std::slice::from_ref(&clean)).contains("answered with an error"));
    let json = serde_json::to_value(&clean).expect("a run serializes");
    assert!(json.get("first_failure").is_none(), "{json}");

    let failed = RunResult {
        completed: 7,
        completed_sum: 7,
        applied: 7,
        applied_sum: 7,
        failed: 3,
        first_failure: Some("deadlock detected".into()),
        ..clean
    };
    let told = read_backs(std::slice::from_ref(&failed));
    assert!(
        told.contains("  3 inputs answered with an error, the first: deadlock detected"),
        "{told}"
    );
    let json = serde_json::to_value(&failed).expect("a run serializes");
    assert_eq!(json["first_failure"], "deadlock detected", "{json}");
}

#[test]
fn json_has_the_spec_fields() {
    let runs = [run("ferry", Some(2), 1.0)];
    let json = serde_json::to_value(JsonReport {
        command: "ferry-load".to_string(),
        store: "sim",
        runs: &runs,
    })
    .unwrap();
    let entry = &json["runs"][0];
    for field in [
        "system",
        "shards",
        "throughput",
        "mean_batch",
        "p50_us",
        "p90_us",
        "p99_us",
        "p999_us",
        "max_us",
        "conflicts",
        "refused",
        "lost",
        "submitted",
        "completed",
    ] {
        assert!(!entry[field].is_null(), "missing {field}");
    }
    // The histogram is for `--plot` only; a round only with `--rounds`.
    assert!(entry.get("latency").is_none(), "{entry}");
    assert!(entry.get("round").is_none(), "{entry}");
    let rounds = [RunResult {
        round: Some(2),
        ..run("ferry", Some(2), 1.0)
    }];
    let json = serde_json::to_value(&rounds[0]).unwrap();
    assert_eq!(json["round"], 2, "{json}");
}
