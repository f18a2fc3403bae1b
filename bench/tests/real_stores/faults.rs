//! Faults at a real store during a run (`--fault`, see
//! `ferry_bench::scenarios::faults`): a restart (the private server stopped hard and
//! started again in place, by the script `servers.rs` writes), every client
//! connection ended by the server, and the traffic stalled by the tool's
//! proxy. Each fault on its own, for ferry, ferry-trips and single-lock
//! (whose pooled connections come back as ferry's shards' do); then the
//! command line with all three in one run.
//!
//! What is checked, per run: every input answered (0 lost); the read-back
//! verdict: every success applied, and nothing applied beyond the
//! successes and the unknown outcomes (so nothing applied twice); and the
//! system serving again after the fault (a success after the store's
//! return).

use std::process::Command;
use std::time::Duration;

use ferry_bench::report::{problems, RunResult};
use ferry_bench::run::compare::run_with_faults;
use ferry_bench::run::faults::Faults;
use ferry_bench::scenarios::faults::{Fault, FaultKind};
use ferry_bench::sources::load::Load;
use ferry_bench::store::{Fence, Store, StoreAddress};
use ferry_bench::systems::{Settings, SystemKind};

use crate::servers::Private;
use crate::{load, settings, KEYS, SHARDS, SLOTS};

/// The systems each fault is tried on: ferry with and without trips, and
/// a baseline sharing a pool of connections.
const SYSTEMS: [SystemKind; 3] = [
    SystemKind::Ferry,
    SystemKind::FerryTrips,
    SystemKind::SingleLock,
];

/// Each fault on its own, 300 ms into the window, for each of [`SYSTEMS`].
pub fn each_fault_on_each_system(server: &Private) {
    let address: StoreAddress = server.url.parse().expect("the server's URL parses");
    let store = Store::open(&address, KEYS, Duration::ZERO)
        .unwrap_or_else(|problem| panic!("{problem}\n{}", server.log()));
    for fault in [
        "restart@300ms",
        "kill-connections@300ms",
        "stall:300ms@300ms",
    ] {
        let fault: Fault = fault.parse().expect("a fault");
        let faults = Faults::prepare(vec![fault], server.restart_command.clone(), store)
            .expect("the faults are ready")
            .expect("one fault");
        // A restart takes PostgreSQL over a second (`pg_ctl` polls), and
        // over three on a machine busy with other work: the window leaves
        // room to serve after it.
        let load = Load {
            duration: match fault.kind {
                FaultKind::Restart => Duration::from_secs(6),
                _ => Duration::from_millis(1_500),
            },
            ..load()
        };
        for kind in SYSTEMS {
            let result = run_with_faults(
                kind,
                Some(SHARDS),
                SLOTS * SHARDS,
                &settings(),
                store,
                &load,
                Some(&faults),
                |_| {},
            )
            .unwrap_or_else(|problem| {
                panic!(
                    "{kind} on {} with {fault}: {problem}\n{}",
                    store.kind(),
                    server.log()
                )
            });
            assert_survived(store, fault, &result);
        }
    }
    store.stop().expect("the store cleans up");
}

/// Nothing lost, the read-back's verdict, and serving again after the
/// fault.
fn assert_survived(store: Store, fault: Fault, result: &RunResult) {
    let on = format!("{} on {} with {fault}", result.label(), store.kind());
    assert_eq!(result.lost, 0, "{on}: {result:?}");
    assert!(result.completed > 0, "{on}: {result:?}");
    assert!(
        result.read_back_matches(),
        "{on}: the store holds {} inputs summing to {}; {} summing to {} were answered with success, {} summing to {} with an unknown outcome",
        result.applied,
        result.applied_sum,
        result.completed,
        result.completed_sum,
        result.unknown,
        result.unknown_sum
    );
    assert!(
        result.applied - result.completed <= result.unknown,
        "{on}: applied twice: {result:?}"
    );
    assert!(
        problems(std::slice::from_ref(result)).is_empty(),
        "{on}: {:?}",
        problems(std::slice::from_ref(result))
    );
    let [seen] = &result.faults[..] else {
        panic!("{on}: one fault injected: {:?}", result.faults);
    };
    assert!(
        seen.first_success_after_return_ms.is_some(),
        "{on}: not serving again after the fault: {seen:?}"
    );
    match fault.kind {
        FaultKind::Restart => assert!(
            result.failed + result.unknown + result.resolutions.total() > 0,
            "{on}: the server went away, and no input failed nor had its write resolved: {result:?}"
        ),
        FaultKind::KillConnections => assert!(
            !seen.what.starts_with("0 "),
            "{on}: no connection was ended: {seen:?}"
        ),
        FaultKind::Stall(length) => {
            let held = length.as_secs_f64() * 1e3;
            assert!(
                seen.back_after_ms >= held && seen.first_success_ms.is_some_and(|ms| ms >= held),
                "{on}: a success came within the stall: {seen:?}"
            );
        }
        FaultKind::LoseReplies => assert!(
            result.resolutions.total() + result.unknown + result.failed > 0,
            "{on}: replies were lost, and no input noticed: {result:?}"
        ),
    }
}

/// Replies lost on purpose (`lose-replies`, four times in the window),
/// so that writes land and their batches cannot know it: ferry's batches,
/// with and without trips, resolve each such write by the fence (the
/// key's version tells whether it landed), so no caller gets an unknown
/// outcome and the read-back is exact; with the fence off the same faults
/// make them send landed writes again, and the read-back counts inputs
/// applied twice, which the fence is there to prevent.
pub fn lost_replies_are_resolved_by_the_fence(server: &Private) {
    let address: StoreAddress = server.url.parse().expect("the server's URL parses");
    let store = Store::open(&address, KEYS, Duration::ZERO)
        .unwrap_or_else(|problem| panic!("{problem}\n{}", server.log()));
    let faults: Vec<Fault> = ["200ms", "500ms", "800ms", "1100ms"]
        .iter()
        .map(|at| format!("lose-replies@{at}").parse().expect("a fault"))
        .collect();
    let faults = Faults::prepare(faults, None, store)
        .expect("the faults are ready")
        .expect("four faults");
    let load = Load {
        duration: Duration::from_millis(1_500),
        ..load()
    };
    let mut applied_twice = 0;
    for kind in [SystemKind::Ferry, SystemKind::FerryTrips] {
        for fence in [Fence::On, Fence::Off] {
            let settings = Settings {
                fence,
                ..settings()
            };
            let result = run_with_faults(
                kind,
                Some(SHARDS),
                SLOTS * SHARDS,
                &settings,
                store,
                &load,
                Some(&faults),
                |_| {},
            )
            .unwrap_or_else(|problem| {
                panic!("{kind} on {}: {problem}\n{}", store.kind(), server.log())
            });
            let on = format!(
                "{} on {} with the fence {fence:?}",
                result.label(),
                store.kind()
            );
            let resolved = result.resolutions;
            assert_eq!(result.lost, 0, "{on}: {result:?}");
            assert!(
                result.applied >= result.completed,
                "{on}: a success was not applied: {result:?}"
            );
            match fence {
                Fence::On => {
                    assert!(
                        resolved.landed + resolved.sent > 0,
                        "{on}: no write's reply was lost, so the fence was never tried: {result:?}"
                    );
                    assert_eq!(resolved.resent_blind, 0, "{on}");
                    assert_eq!(
                        result.unknown, 0,
                        "{on}: every lost write resolved: {result:?}"
                    );
                    assert!(result.read_back_matches(), "{on}: {result:?}");
                    assert_eq!(
                        result.applied_beyond(),
                        0,
                        "{on}: applied twice: {result:?}"
                    );
                }
                Fence::Off => {
                    assert!(
                        resolved.resent_blind > 0,
                        "{on}: nothing resent: {result:?}"
                    );
                    assert_eq!(resolved.landed + resolved.sent, 0, "{on}");
                    applied_twice += result.applied_beyond();
                }
            }
        }
    }
    assert!(
        applied_twice > 0,
        "on {}: without the fence, writes resent after their replies were lost were never applied twice",
        store.kind()
    );
    store.stop().expect("the store cleans up");
}

/// `ferry-load --fault` with a restart, a connection kill and a stall in
/// one run of ferry and single-lock: it passes its read-backs, exits 0,
/// tells each fault, and says so in the JSON.
pub fn the_command_line_injects_every_fault(server: &Private, left_behind: fn(&str) -> bool) {
    let json = server.dir().join("faults.json");
    let restart = server
        .restart_command
        .as_deref()
        .expect("a restartable server");
    let output = Command::new(env!("CARGO_BIN_EXE_ferry-load"))
        .args(["--store", &server.url])
        .args(["--keys", &KEYS.to_string(), "--clients", "200"])
        .args(["--duration", "4s", "--warmup", "200ms", "--shards"])
        .arg(SHARDS.to_string())
        .args(["--max-in-flight-batches", &SLOTS.to_string()])
        .args(["--compare", "ferry,single-lock"])
        .args([
            "--fault",
            "restart@500ms",
            "--fault",
            "kill-connections@2500ms",
        ])
        .args(["--fault", "stall:300ms@3s", "--restart-command", restart])
        .arg("--json")
        .arg(&json)
        .output()
        .expect("ferry-load runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        output.status.success(),
        "ferry-load --fault on {} failed ({}):\n{stdout}\n{stderr}\n{}",
        server.url,
        output.status,
        server.log()
    );
    for label in ["ferry (2 shards)", "single-lock"] {
        assert!(
            stdout.contains(&format!("faults, {label}: 3 injected; ")),
            "{stdout}"
        );
        let read_back = stdout
            .lines()
            .find(|line| line.starts_with(&format!("read back, {label}: ")))
            .unwrap_or_else(|| panic!("no read-back for {label}:\n{stdout}"));
        assert!(
            read_back.ends_with("exactly the inputs answered with success")
                || read_back.contains("every success applied")
                    && read_back.ends_with("nothing applied twice"),
            "{read_back}"
        );
    }
    assert_eq!(
        stdout.matches("no success after it").count(),
        0,
        "every system serves again after every fault:\n{stdout}"
    );
    let written = std::fs::read_to_string(&json).expect("the JSON was written");
    let report: serde_json::Value = serde_json::from_str(&written).expect("JSON");
    for run in report["runs"].as_array().expect("runs") {
        assert!(run["unknown"].is_u64(), "{run}");
        assert_eq!(run["lost"], 0, "{run}");
        assert_eq!(run["faults"].as_array().map(Vec::len), Some(3), "{run}");
    }
    assert!(
        !left_behind(&server.url),
        "ferry-load left its table or keys on {}",
        server.url
    );
}
