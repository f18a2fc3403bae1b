//! The handover of `docs/scale-out.md` against each private server: two
//! owner processes, each an entity engine of `ferry::entity`, keys moving
//! between them while the old owner still has batches in flight.
//!
//! - With the fence, the read-back holds every acknowledged seq, none
//!   twice, each key exactly `1..=last_seq`; the stale owner's callers
//!   were told (`Refused(Fenced)`), and the new owner served every moved
//!   key.
//! - Without it (the control), the read-back finds seqs applied twice or
//!   out of order: the check can see what the fence prevents. A zombie
//!   that happens not to write in the lag would hide it, so the control is
//!   given up to [`CONTROL_ATTEMPTS`] runs.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use ferry_bench::report::handover::{self as handover_report, HandoverReport};
use ferry_bench::run::handover::{self, verdict, Fence, Settings};

use crate::servers::Private;

/// Runs of the control before it must have shown an anomaly.
const CONTROL_ATTEMPTS: usize = 3;

const KEYS: u64 = 16;
const MOVES: usize = 3;

fn settings(server: &Private, fence: Fence) -> Settings {
    Settings {
        store: server.url.parse().expect("the server's URL parses"),
        worker_program: PathBuf::from(env!("CARGO_BIN_EXE_ferry-load")),
        instances: 2,
        keys: KEYS,
        moves: MOVES,
        duration: Duration::from_secs(2),
        // Long enough that the new owner takes the key well inside it, on
        // a debug build sharing two cores with the server.
        lag: Duration::from_millis(100),
        fence,
        shards: 2,
        max_batch_size: 16,
        max_in_flight_batches: 16,
        outstanding_per_key: 4,
    }
}

/// The fenced run's whole-run checks, and what each move reported.
pub fn fenced_handover_holds(server: &Private) {
    let report = handover::run(&settings(server, Fence::On))
        .unwrap_or_else(|why| panic!("{why}\n{}", server.log()));
    let text = handover_report::text(&report);
    let verdict = &report.verdict;
    assert!(handover_report::passed(&report), "{text}");
    assert_eq!(
        verdict::failures(verdict, Fence::On),
        Vec::<String>::new(),
        "{text}"
    );
    assert_eq!(
        (verdict.rows, verdict.lost, verdict.anomalies()),
        (KEYS, 0, 0),
        "{text}"
    );
    assert_eq!(verdict.not_a_prefix + verdict.unacknowledged, 0, "{text}");
    assert!(verdict.acknowledged > 100, "{text}");
    assert_eq!(verdict.acknowledged, verdict.applied, "{text}");
    assert_eq!(report.counts.lost, 0, "{text}");
    assert_eq!(report.moves.len(), MOVES, "{text}");
    for record in &report.moves {
        assert!(record.revoked && !record.keys.is_empty(), "{text}");
        assert_eq!(record.taken, record.keys.len(), "{text}");
        assert_eq!(record.served_us.len(), record.keys.len(), "{text}");
        assert_eq!(record.callers.failed, 0, "{text}");
    }
    let fenced_callers: u64 = report.moves.iter().map(|m| m.callers.fenced).sum();
    let fenced_inputs: u64 = report.moves.iter().map(|m| m.old_owner.fenced).sum();
    assert!(
        fenced_callers > 0 && fenced_inputs > 0,
        "no zombie met the fence:\n{text}"
    );
    assert_eq!(
        report.counts.fenced, fenced_callers,
        "only the moved keys' callers are fenced:\n{text}"
    );
}

/// The control shows duplicates or disorder, and does not fail the run.
pub fn the_unfenced_control_shows_the_double_application(server: &Private) {
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..CONTROL_ATTEMPTS {
        let report: HandoverReport = handover::run(&settings(server, Fence::Off))
            .unwrap_or_else(|why| panic!("{why}\n{}", server.log()));
        let text = handover_report::text(&report);
        assert!(handover_report::passed(&report), "{text}");
        assert_eq!(report.verdict.lost, 0, "{text}");
        assert_eq!(
            report.counts.fenced, 0,
            "nothing is fenced without the fence:\n{text}"
        );
        if report.verdict.anomalies() > 0 {
            assert!(
                text.contains("verdict (control, no fence): the read-back shows"),
                "{text}"
            );
            return;
        }
        seen.push(text);
    }
    panic!(
        "{CONTROL_ATTEMPTS} unfenced runs and no seq applied twice or out of order:\n{}",
        seen.join("\n")
    );
}

/// `ferry-load handover` from the command line exits 0 and prints the
/// verdict, and leaves nothing behind (`left_behind` must be false).
pub fn the_command_line_passes_and_leaves_nothing(server: &Private, left_behind: fn(&str) -> bool) {
    let output = Command::new(env!("CARGO_BIN_EXE_ferry-load"))
        .args(["handover", "--store", &server.url])
        .args([
            "--keys",
            "8",
            "--moves",
            "2",
            "--duration",
            "1s",
            "--handover-lag",
            "50ms",
        ])
        .output()
        .expect("ferry-load runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{}:\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("verdict: PASSED"), "{stdout}");
    let moves = stdout.lines().filter(|line| line.starts_with("move "));
    assert_eq!(moves.count(), 2, "{stdout}");
    assert!(
        !left_behind(&server.url),
        "the handover left its rows on {}",
        server.url
    );
}

/// Whether either of the handover's tables (the library's, and its
/// events table) is still on the PostgreSQL server at `url`.
pub fn postgres_rows_left(url: &str) -> bool {
    crate::one_off(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(connection);
        let mut left = false;
        for table in [handover::POSTGRES_TABLE, handover::POSTGRES_EVENTS_TABLE] {
            let row = client
                .query_one("SELECT to_regclass($1)::text", &[&table])
                .await
                .expect("query");
            left |= row.get::<_, Option<String>>(0).is_some();
        }
        left
    })
}

/// Whether any of the handover's keys are still on the Redis server at `url`.
pub fn redis_rows_left(url: &str) -> bool {
    crate::one_off(async {
        let client = redis::Client::open(url).expect("URL");
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .expect("connect");
        let found: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", handover::REDIS_PREFIX))
            .query_async(&mut connection)
            .await
            .expect("KEYS");
        !found.is_empty()
    })
}
