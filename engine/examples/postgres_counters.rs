//! A small service on PostgreSQL: many tokio tasks add amounts to accounts,
//! Ferry batches each account's additions, and carries the batches of many
//! accounts in one trip: one statement through its shard's own connection,
//! writing each account on its own condition.
//!
//! Each shard connects in `try_start_trips`'s factory, on the shard's own
//! thread, and the shards run on `Runtime::Tokio`, so that the
//! connection's I/O stays on that thread too. (On glommio, which the
//! default picks where it can start, tokio-postgres works as well, its I/O
//! driven by the process's `ferry-tokio` thread; the connection would then
//! be driven with `tokio::spawn` instead of `spawn_local`.) The shard
//! remembers each account's version: it is the only writer of its accounts (an account is routed to
//! one shard, which has it in at most one trip at a time), so after a first
//! read a trip is just `UPDATE … FROM unnest(…) WHERE version =
//! remembered`, one commit for every account in it. An account whose write
//! finds another version (someone else wrote) is not updated: the shard
//! reads it again and retries it, alone of the others.
//!
//! The shard's connection is held by a `ferry::Reconnect`: a trip that finds
//! it dead says so, and the next trip connects again (with backoff, failing
//! at once meanwhile), so a restart of the server costs errors, not the
//! engine. A failed addition says whether it was applied: `NotApplied`
//! (safe to submit again) or `Unknown` (the write was sent and the
//! connection died: read the account back, or retry only with a fenced
//! write).
//!
//! ```sh
//! FERRY_POSTGRES_URL=postgres://ferry@127.0.0.1:5433/postgres \
//!     cargo run -p ferry-engine --example postgres_counters
//! ```
//!
//! Without the variable, or with a server that cannot be reached, it says
//! how to start a private one and exits with status 2.
use std::cell::RefCell;
use std::collections::HashMap;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::future::Future;
use std::pin::Pin;

use ferry::{Engine, Reconnect, Runtime};
use tokio_postgres::{Config, NoTls};

const ACCOUNTS: i64 = 100;
const ADDITIONS: i64 = 20_000;
/// A batch whose write keeps finding another version gives up after this.
const WRITE_ATTEMPTS_MAX: u32 = 10;
const TABLE: &str = "ferry_example_accounts";
const READ: &str = "SELECT account, version FROM ferry_example_accounts WHERE account = ANY($1)";
/// Each account of the trip written on its own condition: its remembered
/// version. The accounts returned are those written.
const WRITE: &str = "UPDATE ferry_example_accounts AS a \
                     SET balance = a.balance + t.total, version = a.version + 1 \
                     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS t(account, expected, total) \
                     WHERE a.account = t.account AND a.version = t.expected \
                     RETURNING a.account, a.balance";

const HOW_TO: &str = "\
postgres_counters needs a PostgreSQL server. Set FERRY_POSTGRES_URL, e.g.
  FERRY_POSTGRES_URL=postgres://ferry@127.0.0.1:5433/postgres cargo run -p ferry-engine --example postgres_counters
A private server on 127.0.0.1 only, in a directory of its own (on Debian the
programs are in /usr/lib/postgresql/<version>/bin):
  initdb -D /tmp/ferry-pg -U ferry --auth=trust
  pg_ctl -D /tmp/ferry-pg -l /tmp/ferry-pg/log -o \"-c listen_addresses=127.0.0.1 -p 5433 -k /tmp/ferry-pg\" start
  ... and afterwards: pg_ctl -D /tmp/ferry-pg stop
PostgreSQL refuses to run as root: as root, make the directory another user's
(mkdir /tmp/ferry-pg; chown nobody /tmp/ferry-pg) and run both through
`setpriv --reuid=nobody --regid=nogroup --clear-groups --`.";

/// What the shards count for the report.
#[derive(Default)]
struct Counts {
    reads: AtomicU64,
    conflicts: AtomicU64,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let Ok(url) = std::env::var("FERRY_POSTGRES_URL") else {
        eprintln!("{HOW_TO}");
        return ExitCode::from(2);
    };
    let mut config: Config = match url.parse() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("FERRY_POSTGRES_URL is not a PostgreSQL URL: {err}\n\n{HOW_TO}");
            return ExitCode::from(2);
        }
    };
    config.connect_timeout(Duration::from_secs(3));
    let setup = match set_up(&config).await {
        Ok(client) => client,
        Err(err) => {
            eprintln!("could not use the server of FERRY_POSTGRES_URL: {err}\n\n{HOW_TO}");
            return ExitCode::from(2);
        }
    };
    let served = match serve(config).await {
        Ok(served) => served,
        Err(err) => {
            eprintln!("postgres_counters: {err}");
            return ExitCode::FAILURE;
        }
    };
    match check_and_clean_up(&setup, served).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("postgres_counters: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Connects from the service's runtime, with its I/O there.
async fn connect(config: &Config) -> Result<tokio_postgres::Client, String> {
    let (client, connection) = config.connect(NoTls).await.map_err(|err| describe(&err))?;
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            eprintln!(
                "postgres_counters: the connection broke: {}",
                describe(&err)
            );
        }
    });
    Ok(client)
}

/// A fresh table of accounts, each at balance 0 and version 0.
async fn set_up(config: &Config) -> Result<tokio_postgres::Client, String> {
    let client = connect(config).await?;
    let create = format!(
        "DROP TABLE IF EXISTS {TABLE}; \
         CREATE TABLE {TABLE} (account bigint PRIMARY KEY, balance bigint NOT NULL, version bigint NOT NULL); \
         INSERT INTO {TABLE} SELECT a, 0, 0 FROM generate_series(0, {}) AS a",
        ACCOUNTS - 1
    );
    client
        .batch_execute(&create)
        .await
        .map_err(|err| describe(&err))?;
    Ok(client)
}

/// What the service applied: the sum of the additions answered, and the
/// batches (one write of one account each) it took.
#[derive(Clone, Copy, Debug)]
struct Served {
    applied: i64,
    batches: u64,
}

/// One trip's batches: each account with its amounts.
type Trip = Vec<(i64, Vec<i64>)>;

async fn serve(config: Config) -> Result<Served, String> {
    let counts = Arc::new(Counts::default());
    let shard_counts = Arc::clone(&counts);
    let engine: Engine<i64, i64, i64, CountError> = Engine::builder()
        .shards(2)
        .pin(false)
        .runtime(Runtime::Tokio)
        .max_batch_size(256)
        .max_trip_batches(256)
        .max_in_flight_batches(4)
        .try_start_trips(move |shard| {
            let (config, counts) = (config.clone(), Arc::clone(&shard_counts));
            async move {
                // On the shard's own thread: its connection, its I/O on the
                // shard's tokio runtime; made again if it breaks.
                let connect: Connect = Box::new(move || Box::pin(Connected::to(config.clone())));
                let link = Reconnect::start(connect)
                    .await
                    .map_err(|err| format!("{shard} could not connect: {err}"))?;
                let shard = Rc::new(Shard {
                    link,
                    versions: RefCell::new(HashMap::new()),
                    counts,
                });
                Ok::<_, String>(move |trip: Trip| Rc::clone(&shard).add(trip))
            }
        })
        .map_err(|err| format!("the engine did not start: {err}"))?;

    let started = Instant::now();
    let tasks: Vec<_> = (0..ADDITIONS)
        .map(|n| {
            let engine = engine.clone();
            tokio::spawn(async move {
                // Half the additions to five busy accounts, the rest
                // spread over all of them.
                let account = if n % 2 == 0 {
                    n % 5
                } else {
                    (n / 2) % ACCOUNTS
                };
                let amount = n % 10 + 1;
                engine.submit(account, amount).await.map(|_| amount)
            })
        })
        .collect();
    let mut applied = 0_i64;
    for task in tasks {
        match task.await {
            Ok(Ok(amount)) => applied += amount,
            Ok(Err(err)) => return Err(format!("an addition failed: {err}")),
            Err(err) => return Err(format!("a task failed: {err}")),
        }
    }
    let took = started.elapsed();
    let stats = engine.stats();
    let total = stats.total();
    println!("applied {ADDITIONS} additions ({applied} in all) to {ACCOUNTS} accounts in {took:?}");
    println!(
        "{} batches, mean {:.1} additions each, in {} trips of {:.1} accounts: {} write statements \
         instead of {ADDITIONS} (and {} first reads of an account's version, {} accounts' writes retried)",
        total.batches,
        total.sent as f64 / total.batches.max(1) as f64,
        total.trips,
        total.batches as f64 / total.trips.max(1) as f64,
        total.trips,
        counts.reads.load(Ordering::Relaxed),
        counts.conflicts.load(Ordering::Relaxed),
    );
    println!("stats: {total:?}");
    engine.close();
    tokio::task::spawn_blocking(move || engine.join())
        .await
        .map_err(|err| format!("joining the shards: {err}"))?;
    Ok(Served {
        applied,
        batches: total.batches,
    })
}

/// Why an addition failed, as its caller needs to know it.
#[derive(Clone, Debug)]
enum CountError {
    /// Nothing was applied: the store refused, or was not reached. Safe to
    /// submit again.
    NotApplied(String),
    /// The connection died after the write was sent: applied or not,
    /// unknown. Read the account back (its version tells), or retry only
    /// with a fenced write (docs/scale-out.md), never blindly.
    Unknown(String),
}

impl std::fmt::Display for CountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CountError::NotApplied(why) => write!(f, "not applied: {why}"),
            CountError::Unknown(why) => write!(f, "outcome unknown (the write was sent): {why}"),
        }
    }
}

/// A connection with the trip's statements prepared on it.
struct Connected {
    client: tokio_postgres::Client,
    read: tokio_postgres::Statement,
    write: tokio_postgres::Statement,
}

/// How a shard connects, again after its connection breaks.
type Connect = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<Connected, String>>>>>;

impl Connected {
    /// Connects on this thread (its I/O a task of the shard's runtime) and
    /// prepares the statements.
    async fn to(config: Config) -> Result<Connected, String> {
        let (client, connection) = config.connect(NoTls).await.map_err(|err| describe(&err))?;
        tokio::task::spawn_local(async move {
            let _ = connection.await;
        });
        let read = client.prepare(READ).await.map_err(|err| describe(&err))?;
        let write = client.prepare(WRITE).await.map_err(|err| describe(&err))?;
        Ok(Connected {
            client,
            read,
            write,
        })
    }
}

/// A shard's link to the store and what it remembers of its accounts.
struct Shard {
    link: Reconnect<Connected, Connect>,
    /// Each account's version as this shard last wrote or read it.
    versions: RefCell<HashMap<i64, i64>>,
    counts: Arc<Counts>,
}

impl Shard {
    /// One trip: every account's additions summed into one conditional
    /// write, all in one statement; each addition's output is the balance
    /// just after it. An account whose write found another version is read
    /// again and retried, alone of the others.
    async fn add(self: Rc<Self>, trip: Trip) -> Vec<Result<Vec<i64>, CountError>> {
        let mut results: Vec<Result<Vec<i64>, CountError>> = trip
            .iter()
            .map(|(account, _)| {
                Err(CountError::NotApplied(format!(
                    "account {account}: the write found another version {WRITE_ATTEMPTS_MAX} times"
                )))
            })
            .collect();
        let mut left: Vec<usize> = (0..trip.len()).collect();
        for _ in 0..WRITE_ATTEMPTS_MAX {
            if left.is_empty() {
                break;
            }
            match self.try_write(&trip, &left).await {
                Ok(attempt) => {
                    for (at, balances) in attempt.written {
                        results[at] = Ok(balances);
                    }
                    left = attempt.again;
                }
                Err(err) => {
                    for at in left {
                        results[at] = Err(err.clone());
                    }
                    break;
                }
            }
        }
        results
    }

    /// One attempt at the trip's accounts `left` (places in `trip`).
    async fn try_write(&self, trip: &Trip, left: &[usize]) -> Result<Attempt, CountError> {
        let connected = self
            .link
            .client()
            .await
            .map_err(|away| CountError::NotApplied(away.to_string()))?;
        let accounts: Vec<i64> = left.iter().map(|&at| trip[at].0).collect();
        self.remember_versions(&connected, &accounts).await?;
        // The borrow ends in this block, before any await.
        let expected: Vec<i64> = {
            let versions = self.versions.borrow();
            accounts.iter().map(|account| versions[account]).collect()
        };
        let totals: Vec<i64> = left.iter().map(|&at| trip[at].1.iter().sum()).collect();
        let rows = connected
            .client
            .query(&connected.write, &[&accounts, &expected, &totals])
            .await
            .map_err(|err| self.unknown(&connected, &accounts, &err))?;
        let mut after = HashMap::with_capacity(rows.len());
        for row in rows {
            // Written, but not read as expected: what was applied is unknown.
            let unknown = |err: tokio_postgres::Error| CountError::Unknown(describe(&err));
            let account: i64 = row.try_get(0).map_err(unknown)?;
            after.insert(account, row.try_get::<_, i64>(1).map_err(unknown)?);
        }
        let mut attempt = Attempt::default();
        for (((&at, account), version), total) in
            left.iter().zip(&accounts).zip(expected).zip(totals)
        {
            let mut versions = self.versions.borrow_mut();
            let Some(&balance_after) = after.get(account) else {
                // Another writer moved the version: forget ours, read again.
                self.counts.conflicts.fetch_add(1, Ordering::Relaxed);
                versions.remove(account);
                attempt.again.push(at);
                continue;
            };
            versions.insert(*account, version + 1);
            let mut balance = balance_after - total;
            let balances = trip[at]
                .1
                .iter()
                .map(|amount| {
                    balance += amount;
                    balance
                })
                .collect();
            attempt.written.push((at, balances));
        }
        Ok(attempt)
    }

    /// Reads, in one statement, the version of each of `accounts` this
    /// shard does not remember.
    async fn remember_versions(
        &self,
        connected: &Rc<Connected>,
        accounts: &[i64],
    ) -> Result<(), CountError> {
        let unknown: Vec<i64> = {
            let versions = self.versions.borrow();
            accounts
                .iter()
                .filter(|a| !versions.contains_key(a))
                .copied()
                .collect()
        };
        if unknown.is_empty() {
            return Ok(());
        }
        self.counts
            .reads
            .fetch_add(unknown.len() as u64, Ordering::Relaxed);
        let rows = connected
            .client
            .query(&connected.read, &[&unknown])
            .await
            .map_err(|err| self.not_applied(connected, &err))?;
        let mut versions = self.versions.borrow_mut();
        for row in rows {
            let not_applied = |err: tokio_postgres::Error| CountError::NotApplied(describe(&err));
            let account: i64 = row.try_get(0).map_err(not_applied)?;
            versions.insert(account, row.try_get(1).map_err(not_applied)?);
        }
        match unknown
            .iter()
            .find(|account| !versions.contains_key(account))
        {
            Some(missing) => Err(CountError::NotApplied(format!(
                "account {missing} has no row"
            ))),
            None => Ok(()),
        }
    }

    /// A failure before the write: nothing applied. A connection that
    /// failed (rather than the server refusing) is made again by the next
    /// trip.
    fn not_applied(&self, connected: &Rc<Connected>, err: &tokio_postgres::Error) -> CountError {
        if err.as_db_error().is_none() {
            self.link.broken(connected);
        }
        CountError::NotApplied(describe(err))
    }

    /// A failure of the write: the server's refusal applied nothing (each
    /// statement is its own transaction); a connection that failed leaves
    /// the outcome unknown, so the accounts' versions are forgotten (read
    /// again next time) and the connection is made again.
    fn unknown(
        &self,
        connected: &Rc<Connected>,
        accounts: &[i64],
        err: &tokio_postgres::Error,
    ) -> CountError {
        if err.as_db_error().is_some() {
            return CountError::NotApplied(describe(err));
        }
        self.link.broken(connected);
        let mut versions = self.versions.borrow_mut();
        for account in accounts {
            versions.remove(account);
        }
        CountError::Unknown(describe(err))
    }
}

/// What one attempt at some of a trip's accounts did: the written ones
/// (their place in the trip and each addition's balance after it), and
/// those to try again.
#[derive(Default)]
struct Attempt {
    written: Vec<(usize, Vec<i64>)>,
    again: Vec<usize>,
}

/// The balances add up to what was applied, written once per batch; then
/// the table goes.
async fn check_and_clean_up(client: &tokio_postgres::Client, served: Served) -> Result<(), String> {
    let row = client
        .query_one(
            &format!("SELECT coalesce(sum(balance), 0)::bigint, coalesce(sum(version), 0)::bigint FROM {TABLE}"),
            &[],
        )
        .await
        .map_err(|err| describe(&err))?;
    let (balances, writes): (i64, i64) = (row.get(0), row.get(1));
    client
        .batch_execute(&format!("DROP TABLE {TABLE}"))
        .await
        .map_err(|err| describe(&err))?;
    if (balances, writes) != (served.applied, served.batches as i64) {
        return Err(format!(
            "the table holds {balances} written {writes} times; {} was applied in {} batches",
            served.applied, served.batches
        ));
    }
    println!("the table holds {balances} in all, written {writes} times: once per batch");
    Ok(())
}

/// tokio-postgres's error with its cause (its own message is one word for
/// every server error).
fn describe(err: &tokio_postgres::Error) -> String {
    match std::error::Error::source(err) {
        Some(cause) => format!("{err}: {cause}"),
        None => err.to_string(),
    }
}
