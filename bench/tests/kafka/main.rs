//! `ferry-load kafka` against a private Kafka broker (one KRaft
//! node from the jars `.ci/kafka-jars` fetches) and a private PostgreSQL,
//! both from [`ferry_bench::servers`]. Feature `kafka`.
//!
//! What is asserted, on 20,000 records over 500 keys in 4 partitions, 2
//! members, one of them killed with SIGKILL once 30% of the records are
//! applied and a new one started:
//!
//! - with the fence, for ferry and for partition-serial: every record
//!   applied, none lost, none applied twice, none out of order, every
//!   key's last record the last applied; one kill each; exit 0;
//! - without the fence (the control), for ferry: nothing lost and every
//!   key's last record applied (redelivery is at least once), and the
//!   counts add up (applied = produced + applied twice). That the control
//!   applies some record twice is not asserted: it needs the kill to land
//!   between a write and the commit after it, which the timing decides
//!   (most runs show thousands; the figures are in docs/kafka-figures.md).

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use ferry_bench::servers::{self, Kind, Private};
use serde_json::Value;

const RECORDS: u64 = 20_000;

/// The runs take turns: two at once would share two cores six ways.
static ONE_RUN_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The broker of this test run, started by the first test that asks (it
/// takes seconds); it stops when the tests' process exits.
fn broker() -> &'static Private {
    static BROKER: OnceLock<Private> = OnceLock::new();
    BROKER.get_or_init(|| {
        Private::start_for(Kind::Kafka).unwrap_or_else(|problem| panic!("{problem}"))
    })
}

/// Runs `ferry-load kafka` with `extra`; answers its JSON.
fn run(name: &str, extra: &[&str]) -> Value {
    let _turn = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let broker = broker();
    let postgres = servers::postgres().unwrap_or_else(|problem| panic!("{problem}"));
    let json = std::env::temp_dir().join(format!("ferry-kafka-{name}-{}.json", std::process::id()));
    let topic = format!("ferry-load-test-{name}-{}", std::process::id());
    let output = Command::new(env!("CARGO_BIN_EXE_ferry-load"))
        .args(["kafka", "--kafka-bootstrap", &broker.url])
        .args(["--store", &postgres.url, "--topic", &topic])
        .args([
            "--records",
            &RECORDS.to_string(),
            "--keys",
            "500",
            "--partitions",
            "4",
        ])
        .args([
            "--members",
            "2",
            "--kill-member-at",
            "30%",
            "--duration-limit",
            "240s",
        ])
        .arg("--json")
        .arg(&json)
        .args(extra)
        .output()
        .expect("ferry-load runs");
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "ferry-load failed ({}):\n{said}",
        output.status
    );
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|err| panic!("{}: {err}\n{said}", json.display()));
    let _ = std::fs::remove_file(PathBuf::from(&json));
    let report: Value = serde_json::from_str(&text).expect("the JSON parses");
    eprintln!("{said}");
    report
}

/// The figures of `system` in `report`.
fn system<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["systems"]
        .as_array()
        .and_then(|systems| systems.iter().find(|s| s["system"] == name))
        .unwrap_or_else(|| panic!("no {name} in {report:#}"))
}

fn count(figures: &Value, path: &[&str]) -> u64 {
    let value = path.iter().fold(figures, |value, step| &value[step]);
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{path:?} is not a count in {figures:#}"))
}

#[test]
fn with_the_fence_a_killed_member_loses_nothing_and_applies_nothing_twice() {
    let report = run("fenced", &["--systems", "ferry,partition-serial"]);
    for name in ["ferry", "partition-serial"] {
        let figures = system(&report, name);
        assert_eq!(figures["finished"], true, "{figures:#}");
        assert_eq!(count(figures, &["kills"]), 1, "{figures:#}");
        assert_eq!(
            count(figures, &["verdict", "produced"]),
            RECORDS,
            "{figures:#}"
        );
        assert_eq!(
            count(figures, &["verdict", "applied"]),
            RECORDS,
            "{figures:#}"
        );
        for anomaly in [
            "lost",
            "applied_twice",
            "out_of_order",
            "tail_short",
            "keys_wrong",
        ] {
            assert_eq!(
                count(figures, &["verdict", anomaly]),
                0,
                "{name} {anomaly}: {figures:#}"
            );
        }
    }
}

#[test]
fn without_the_fence_redelivery_is_at_least_once_and_counted() {
    let report = run("unfenced", &["--systems", "ferry", "--no-fence"]);
    let figures = system(&report, "ferry");
    assert_eq!(report["fence"], false, "{report:#}");
    assert_eq!(figures["finished"], true, "{figures:#}");
    assert_eq!(count(figures, &["kills"]), 1, "{figures:#}");
    assert_eq!(count(figures, &["verdict", "lost"]), 0, "{figures:#}");
    assert_eq!(count(figures, &["verdict", "tail_short"]), 0, "{figures:#}");
    assert_eq!(
        count(figures, &["verdict", "applied"]),
        RECORDS + count(figures, &["verdict", "applied_twice"]),
        "{figures:#}"
    );
}
