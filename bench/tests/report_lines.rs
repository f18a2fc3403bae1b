//! The report's per-run lines: the CPU split, the store server's CPU and
//! the live progress line.

use std::time::Duration;

use ferry_bench::base::cpu::CpuSplitPerInput;
use ferry_bench::report::{cpu_split, progress_line, server_cpu, RunResult};
use ferry_bench::sources::load::{Phase, Progress};

#[test]
fn the_cpu_split_names_each_run_by_its_label() {
    let mut ferry = RunResult::sample("ferry", Some(2), 100.0);
    ferry.cpu_split = CpuSplitPerInput {
        system_us: 1.5,
        load_us: 0.25,
        store_us: 0.125,
    };
    let unbatched = RunResult::sample("unbatched", None, 50.0);
    let text = cpu_split(&[ferry, unbatched]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "cpu per input, ferry (2 shards): 1.50 µs the system's threads, 0.25 µs the load's, 0.12 µs the store's",
            "cpu per input, unbatched: 0.00 µs the system's threads, 0.00 µs the load's, 0.00 µs the store's",
        ]
    );
    assert_eq!(cpu_split(&[]), "");
}

#[test]
fn the_server_cpu_is_told_only_for_runs_that_read_it() {
    let mut on_postgres = RunResult::sample("ferry-trips", Some(1), 100.0);
    on_postgres.server_cpu_us_per_input = Some(8.0);
    on_postgres.completed = 250_000;
    let on_sim = RunResult::sample("multi-key", None, 100.0);
    let text = server_cpu(&[on_sim, on_postgres]);
    // 8 µs for each of 250,000 inputs: 2 s of the server's CPU.
    assert_eq!(
        text,
        "store server CPU, ferry-trips (1 shard): 8.00 µs per input (2.00 s in all)\n"
    );
}

#[test]
fn the_progress_line_says_phase_rate_p99_and_inputs_in_flight() {
    let progress = |phase, p99_ns| Progress {
        elapsed: Duration::from_millis(3_400),
        phase,
        inputs_per_s: 123_456.6,
        p99_ns,
        in_flight: 2_000,
    };
    let measuring = progress_line("ferry", &progress(Phase::Measuring, Some(1_500_000)));
    assert!(measuring.starts_with("ferry "), "{measuring}");
    for part in [
        "3s measuring",
        "123,457 inputs/s",
        "p99",
        "1,500 µs",
        "in flight   2,000",
    ] {
        assert!(measuring.contains(part), "{part:?} in {measuring:?}");
    }
    let warmup = progress_line("ferry", &progress(Phase::Warmup, None));
    assert!(warmup.contains("warm-up"), "{warmup}");
    assert!(warmup.contains("p99         - µs"), "no p99 yet: {warmup}");
    let draining = progress_line(
        "a-rather-long-system-name-here",
        &progress(Phase::Draining, None),
    );
    assert!(
        draining.starts_with("a-rather-long-system-name-here "),
        "{draining}"
    );
    assert!(draining.contains("draining"), "{draining}");
    // Every phase's line has its figures in the same columns.
    assert_eq!(
        measuring.find("inputs/s"),
        progress_line("ferry", &progress(Phase::Warmup, Some(1))).find("inputs/s")
    );
}
