//! `ferry-load unkeyed` briefly, end to end: the binary runs all three
//! unkeyed systems and each answers inputs and loses none; the binary
//! refuses a per-key system there with a message naming the right one; and
//! under a store with a round trip, each system batches, never conflicts,
//! and the store applied exactly the inputs answered with success.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use ferry_bench::report::{problems, RunResult};
use ferry_bench::run::compare::run_unkeyed;
use ferry_bench::sources::dist::{KeyDist, KeySampler};
use ferry_bench::sources::load::{Load, Mode};
use ferry_bench::store::Store;
use ferry_bench::systems::{Settings, UnkeyedKind};

mod support;

fn ferry_load(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferry-load"))
        .args(args)
        .output()
        .expect("ferry-load runs")
}

fn json_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ferry-load-{name}-{}.json", std::process::id()))
}

#[test]
fn the_binary_runs_every_unkeyed_system_and_loses_nothing() {
    let json = json_path("unkeyed");
    let output = ferry_load(&[
        "unkeyed",
        "--duration",
        "300ms",
        "--warmup",
        "100ms",
        "--store-rtt",
        "0",
        "--clients",
        "200",
        "--max-in-flight-batches",
        "8",
        "--no-pin",
        "--json",
        json.to_str().expect("a UTF-8 temporary path"),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}\n{stderr}", output.status);

    let text = std::fs::read_to_string(&json).expect("the JSON was written");
    let _ = std::fs::remove_file(&json);
    let report: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let runs = report["runs"].as_array().expect("a list of runs");
    let systems: Vec<&str> = runs
        .iter()
        .map(|run| run["system"].as_str().unwrap())
        .collect();
    assert_eq!(systems, ["batcher", "batch-aint-one", "single-lock-fifo"]);
    for run in runs {
        let count = |field: &str| run[field].as_u64().unwrap_or_else(|| panic!("{field}"));
        assert!(count("completed") > 0, "nothing answered: {run}");
        assert_eq!(count("lost"), 0, "{run}");
        assert_eq!(count("failed"), 0, "{run}");
        assert_eq!(count("conflicts"), 0, "{run}");
        assert_eq!(count("applied"), count("completed"), "{run}");
    }

    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("batcher (") && line.contains(" / single-lock-fifo: ")),
        "the ratios are against batcher: {stdout}"
    );
}

#[test]
fn the_binary_refuses_a_per_key_system_in_unkeyed_mode() {
    let output = ferry_load(&["unkeyed", "--compare", "ferry"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`ferry` is not an unkeyed system") && stderr.contains("`batcher`"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing was run");
}

const CLIENTS: usize = 64;
const SLOTS: usize = 8;

fn measure(kind: UnkeyedKind, rtt: Duration, delay: Duration) -> RunResult {
    let settings = Settings {
        max_batch_delay: delay,
        max_in_flight_batches: SLOTS,
        ..support::settings()
    };
    let load = Load {
        sampler: Arc::new(KeySampler::new(KeyDist::Uniform, 10).unwrap()),
        duration: Duration::from_millis(300),
        ..support::load(Mode::Closed { clients: CLIENTS })
    };
    let store = Store::sim(10, rtt).unwrap();
    let result = run_unkeyed(kind, Some(1), SLOTS, &settings, store, &load, |_| {}).unwrap();
    store.stop().unwrap();
    result
}

fn assert_clean(kind: UnkeyedKind, result: &RunResult) {
    assert_eq!(result.system, kind.name());
    assert!(result.completed > 0, "nothing was answered: {result:?}");
    assert_eq!(result.lost, 0, "{result:?}");
    assert_eq!(result.failed, 0, "{result:?}");
    assert_eq!(result.conflicts, 0, "{result:?}");
    assert_eq!(result.applied, result.completed, "{result:?}");
    assert_eq!(result.applied_sum, result.completed_sum, "{result:?}");
    assert!(
        problems(std::slice::from_ref(result)).is_empty(),
        "{result:?}"
    );
}

#[test]
fn with_a_round_trip_every_unkeyed_system_batches_and_applies_what_it_answered() {
    for kind in UnkeyedKind::ALL {
        let result = measure(kind, Duration::from_micros(200), Duration::ZERO);
        assert_clean(kind, &result);
        // 64 clients over 8 slots of 400 µs each: inputs must share batches.
        assert!(result.mean_batch > 1.0, "{result:?}");
    }
}

#[test]
fn with_a_batch_delay_every_unkeyed_system_still_answers_everything() {
    for kind in UnkeyedKind::ALL {
        let result = measure(kind, Duration::ZERO, Duration::from_micros(500));
        assert_clean(kind, &result);
        // 64 clients and answers at once: batches fill before the delay
        // is up (batch-aint-one's `Immediate` policy has no delay).
        assert!(result.mean_batch > 1.0, "{result:?}");
    }
}
