//! The HTTP service of `engine/examples/http_accounts.rs` on a private
//! PostgreSQL, in both its modes, one after the other on one table.
//!
//! The test builds the example (`cargo build -p ferry-engine --features
//! postgres --example http_accounts`, into this test's own target
//! directory and profile), starts it on a free port of 127.0.0.1, and sends
//! deposits from many threads at once, each over its own keep-alive
//! connection, to few accounts, so that an account's deposits overlap.
//!
//! What is checked, after each phase (ferry, then pool, then ferry again,
//! each going on from the balances the one before left):
//!
//! - every deposit is answered 200 with its account's new balance;
//! - for each account, the balances answered are all distinct, and in
//!   their order each is the one before plus its own deposit's amount: the
//!   deposits were applied one at a time, each exactly once, in the order
//!   their answers tell; the last answered is the account's balance;
//! - the table read back holds, for each account, the sum of every deposit
//!   answered 200 (over all phases so far), and a version equal to their
//!   count;
//! - the service's `/metrics` counts as many 200 answers, and the same sum
//!   of amounts;
//! - a deposit of 0 is refused (422) and changes nothing;
//!
//! and, before all that, that a start against a server that is not there
//! exits with status 2 and says why.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::servers::{self, Private};

/// Threads sending at once, each one request at a time.
const SENDERS: u64 = 32;
/// Requests per thread and phase.
const REQUESTS: u64 = 100;
/// Accounts the requests go to: few, so that deposits of one account overlap.
const ACCOUNTS: u64 = 40;
const TABLE: &str = "http_accounts_test";

#[test]
fn the_http_service_in_both_modes_on_a_private_postgres() {
    let _turn = super::ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let binary = build_the_example();
    a_start_without_a_server_exits_2(&binary);
    let server = servers::postgres();
    let mut applied = Applied::default();
    for (phase, mode) in ["ferry", "pool", "ferry"].into_iter().enumerate() {
        let service = Service::start(&binary, mode, &server);
        let answers = send_deposits(&service.address, phase as u64);
        check_answers(mode, &answers, &applied);
        applied.add(&answers);
        a_deposit_of_0_is_refused(&service.address);
        check_metrics(mode, &service.address, &answers);
        drop(service);
        check_table(mode, &server, &applied);
    }
}

/// The example's binary, built as this test was (debug or release) into
/// the same target directory.
fn build_the_example() -> PathBuf {
    let test = std::env::current_exe().expect("the test's own path");
    // target/<profile>/deps/real_stores-…
    let profile_dir = test
        .parent()
        .and_then(Path::parent)
        .expect("the test binary is in <target>/<profile>/deps");
    let target_dir = profile_dir.parent().expect("<target>/<profile>");
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ is in the workspace");
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .current_dir(workspace)
        .env("CARGO_TARGET_DIR", target_dir)
        .args(["build", "-p", "ferry-engine", "--features", "postgres"])
        .args(["--example", "http_accounts"]);
    if profile_dir
        .file_name()
        .is_some_and(|name| name == "release")
    {
        cargo.arg("--release");
    }
    let output = cargo.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "building the example failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let binary = profile_dir.join("examples").join("http_accounts");
    assert!(binary.is_file(), "no {}", binary.display());
    binary
}

fn a_start_without_a_server_exits_2(binary: &Path) {
    for mode in ["--ferry", "--pool"] {
        let started = Instant::now();
        let output = Command::new(binary)
            .args([mode, "--listen", "127.0.0.1:0"])
            // Port 1 on loopback: nothing listens there.
            .args(["--database", "postgres://ferry@127.0.0.1:1/postgres"])
            .output()
            .expect("the example runs");
        let said = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{mode}: {said}");
        assert!(said.contains("could not connect to"), "{mode}: {said}");
        assert!(started.elapsed() < Duration::from_secs(20), "{mode}");
    }
}

/// The service running, killed when dropped.
struct Service {
    child: Child,
    address: String,
}

impl Service {
    /// Starts `mode` on `server`'s table and waits until it listens.
    fn start(binary: &Path, mode: &str, server: &Private) -> Service {
        let mut child = Command::new(binary)
            .arg(format!("--{mode}"))
            .args(["--listen", "127.0.0.1:0", "--table", TABLE])
            .args(["--database", &server.url])
            .args(["--shards", "2", "--pool-size", "8"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the example starts");
        let stdout = child.stdout.take().expect("its stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("a line from the service");
        let Some((_, address)) = line.trim().split_once("listening on http://") else {
            let status = child.wait();
            panic!("{mode}: the service did not start ({status:?}): {line:?}");
        };
        Service {
            address: address.to_string(),
            child,
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One deposit as sent and answered.
#[derive(Clone, Debug)]
struct Answer {
    account: u64,
    amount: i64,
    status: u16,
    /// The balance answered (with status 200).
    balance: Option<i64>,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .new_agent()
}

fn deposit(agent: &ureq::Agent, address: &str, account: u64, amount: i64) -> (u16, String) {
    let url = format!("http://{address}/accounts/{account}/deposit");
    let mut response = agent
        .post(&url)
        .header("content-type", "application/json")
        .send(format!(r#"{{"amount":{amount}}}"#))
        .unwrap_or_else(|err| panic!("POST {url}: {err}"));
    let body = response.body_mut().read_to_string().unwrap_or_default();
    (response.status().as_u16(), body)
}

/// `SENDERS` threads, `REQUESTS` deposits each, to `ACCOUNTS` accounts;
/// amounts from 1 to 13, differing from phase to phase.
fn send_deposits(address: &str, phase: u64) -> Vec<Answer> {
    let senders: Vec<_> = (0..SENDERS)
        .map(|sender| {
            let address = address.to_string();
            std::thread::spawn(move || {
                let agent = agent();
                (0..REQUESTS)
                    .map(|n| {
                        let account = (sender * 7 + n * 3 + phase) % ACCOUNTS;
                        let amount = i64::try_from(1 + (sender + n + phase) % 13).unwrap();
                        let (status, body) = deposit(&agent, &address, account, amount);
                        let balance = (status == 200).then(|| {
                            let json: serde_json::Value = serde_json::from_str(&body)
                                .unwrap_or_else(|err| panic!("{body:?}: {err}"));
                            assert_eq!(json["id"].as_u64(), Some(account), "{body}");
                            json["balance"].as_i64().expect("a balance")
                        });
                        Answer {
                            account,
                            amount,
                            status,
                            balance,
                        }
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    senders
        .into_iter()
        .flat_map(|sender| sender.join().expect("a sender"))
        .collect()
}

/// What the phases so far applied, per account: (deposits, sum).
#[derive(Default)]
struct Applied(BTreeMap<u64, (i64, i64)>);

impl Applied {
    fn add(&mut self, answers: &[Answer]) {
        for answer in answers.iter().filter(|answer| answer.status == 200) {
            let entry = self.0.entry(answer.account).or_default();
            *entry = (entry.0 + 1, entry.1 + answer.amount);
        }
    }
}

fn check_answers(mode: &str, answers: &[Answer], before: &Applied) {
    assert_eq!(answers.len() as u64, SENDERS * REQUESTS);
    let failed: Vec<&Answer> = answers.iter().filter(|a| a.status != 200).collect();
    assert!(
        failed.is_empty(),
        "{mode}: {} deposits not answered 200, the first: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    let mut by_account: BTreeMap<u64, Vec<&Answer>> = BTreeMap::new();
    for answer in answers {
        by_account.entry(answer.account).or_default().push(answer);
    }
    for (account, mut answered) in by_account {
        answered.sort_by_key(|answer| answer.balance);
        // Where the account was before this phase.
        let mut balance = before.0.get(&account).map_or(0, |&(_, sum)| sum);
        for answer in &answered {
            let got = answer.balance.expect("a 200 has a balance");
            assert_eq!(
                got,
                balance + answer.amount,
                "{mode}: account {account}: a deposit of {} answered {got}, after {balance} \
                 (a balance answered twice, skipped or not the sum of its deposits)",
                answer.amount
            );
            balance = got;
        }
    }
}

fn a_deposit_of_0_is_refused(address: &str) {
    let (status, body) = deposit(&agent(), address, 0, 0);
    assert_eq!(status, 422, "{body}");
}

/// The service's own figures: 200 answers and the sum of their amounts.
fn check_metrics(mode: &str, address: &str, answers: &[Answer]) {
    let mut response = agent()
        .get(&format!("http://{address}/metrics"))
        .call()
        .expect("GET /metrics");
    assert_eq!(response.status().as_u16(), 200);
    let text = response.body_mut().read_to_string().expect("the page");
    let figure = |name: &str| -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{mode}: no {name} in /metrics:\n{text}"))
    };
    let sum: i64 = answers.iter().map(|answer| answer.amount).sum();
    assert_eq!(
        figure("http_accounts_deposited_amount_total "),
        sum as f64,
        "{mode}"
    );
    assert_eq!(
        figure(r#"http_requests_total{route="deposit",status="200"} "#),
        answers.len() as f64,
        "{mode}"
    );
    assert_eq!(
        figure(&format!(r#"http_accounts_mode{{mode="{mode}"}} "#)),
        1.0
    );
}

/// Each account's row: its balance is the sum of its deposits answered
/// 200, its version their count.
fn check_table(mode: &str, server: &Private, applied: &Applied) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let rows = runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&server.url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(connection);
        let sql = format!(r#"SELECT key, version, state FROM "{TABLE}" ORDER BY key"#);
        client.query(&sql, &[]).await.expect("read the table")
    });
    let mut held = BTreeMap::new();
    for row in rows {
        let (key, version, state): (i64, i64, Vec<u8>) = (row.get(0), row.get(1), row.get(2));
        let json: serde_json::Value = serde_json::from_slice(&state).expect("JSON state");
        let balance = json["balance"].as_i64().expect("a balance");
        held.insert(u64::try_from(key).unwrap(), (version, balance));
    }
    assert_eq!(
        held, applied.0,
        "{mode}: the table holds (version, balance) per account"
    );
}
