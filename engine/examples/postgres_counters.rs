//! A small service on PostgreSQL: many tokio tasks deposit to accounts and
//! withdraw from them. The service's own part is the fold (what a deposit
//! or a withdrawal does to an account), a table name and a connection
//! string; `ferry::entity` does the rest: it batches each account's
//! operations, carries many accounts in one statement, writes each on its
//! own condition, and resolves a write whose reply was lost.
//!
//! ```sh
//! FERRY_POSTGRES_URL=postgres://ferry@127.0.0.1:5433/postgres \
//!     cargo run -p ferry-engine --features postgres --example postgres_counters
//! ```
//!
//! Without the variable, or with a server that cannot be reached, it says
//! how to start a private one and exits with status 2.
use std::process::ExitCode;

use ferry::entity::{Entities, EntityError, PostgresStore};
use ferry::Runtime;
use futures::future::join_all;

// ---- The service's own part ------------------------------------------------

/// An account as the table keeps it (JSON in its `state` column).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Account {
    balance: i64,
}

/// What one operation does to an account: a withdrawal that would overdraw
/// it is refused, and the account stays as it was.
fn apply(account: &mut Account, amount: &i64) -> Result<i64, String> {
    if account.balance + amount < 0 {
        return Err(format!("{} would overdraw {}", -amount, account.balance));
    }
    account.balance += amount;
    Ok(account.balance)
}

const TABLE: &str = "ferry_example_accounts";

fn start(url: &str) -> Result<Entities<i64, i64, i64, String>, String> {
    let store = PostgresStore::new(url, TABLE).map_err(|err| err.to_string())?;
    Entities::builder()
        .shards(2)
        .pin(false)
        // tokio-postgres's I/O on each shard's own thread.
        .runtime(Runtime::Tokio)
        .start_entities(store, apply)
        .map_err(|err| err.to_string())
}

// ---- Driving it ---------------------------------------------------------------

const ACCOUNTS: i64 = 100;
const OPERATIONS: i64 = 20_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let Ok(url) = std::env::var("FERRY_POSTGRES_URL") else {
        eprintln!("{HOW_TO}");
        return ExitCode::from(2);
    };
    if let Err(err) = table(
        &url,
        &format!("DROP TABLE IF EXISTS {TABLE}, {TABLE}_events"),
    )
    .await
    {
        eprintln!("could not use the server of FERRY_POSTGRES_URL: {err}\n\n{HOW_TO}");
        return ExitCode::from(2);
    }
    let accounts = match start(&url) {
        Ok(accounts) => accounts,
        Err(err) => {
            eprintln!("could not use the server of FERRY_POSTGRES_URL: {err}\n\n{HOW_TO}");
            return ExitCode::from(2);
        }
    };
    // Half the operations go to five busy accounts; one in seven withdraws.
    let operations: Vec<(i64, i64)> = (0..OPERATIONS)
        .map(|n| {
            let account = if n % 2 == 0 {
                n % 5
            } else {
                (n / 2) % ACCOUNTS
            };
            let amount = if n % 7 == 6 { -(n % 40) } else { n % 10 + 1 };
            (account, amount)
        })
        .collect();
    let answers = join_all(operations.iter().map(|&(account, amount)| {
        let accounts = accounts.clone();
        tokio::spawn(async move { accounts.submit(account, amount).await })
    }))
    .await;
    let (mut applied, mut refused, mut failed, mut sum) = (0, 0, 0, 0);
    for (answer, (_, amount)) in answers.into_iter().zip(&operations) {
        match answer.expect("the task ran") {
            Ok(_) => (applied, sum) = (applied + 1, sum + amount),
            Err(EntityError::Refused(_)) => refused += 1,
            Err(err) => {
                failed += 1;
                eprintln!("postgres_counters: {err}");
            }
        }
    }
    let stats = accounts.store_stats();
    println!(
        "{applied} operations applied, {refused} refused (would overdraw), {failed} failed; \
         {} statements for {} accounts' batches",
        stats.requests(),
        accounts.stats().total().batches
    );
    accounts.close();
    accounts.join();
    let held = table(&url, &format!("SELECT sum((convert_from(state, 'UTF8')::jsonb->>'balance')::bigint)::bigint FROM {TABLE}")).await;
    println!("the table holds {held:?} in all; the operations applied add up to {sum}");
    if failed == 0 && matches!(held, Ok(Some(total)) if total == sum) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs `sql` on a connection of its own: its one value, if it has one.
async fn table(url: &str, sql: &str) -> Result<Option<i64>, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let rows = client.simple_query(sql).await?;
    Ok(rows.iter().find_map(|row| match row {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).and_then(|v| v.parse().ok()),
        _ => None,
    }))
}

const HOW_TO: &str = "\
postgres_counters needs a PostgreSQL server. Set FERRY_POSTGRES_URL, e.g.
  FERRY_POSTGRES_URL=postgres://ferry@127.0.0.1:5433/postgres cargo run -p ferry-engine --features postgres --example postgres_counters
A private server on 127.0.0.1 only, in a directory of its own (on Debian the
programs are in /usr/lib/postgresql/<version>/bin):
  initdb -D /tmp/ferry-pg -U ferry --auth=trust
  pg_ctl -D /tmp/ferry-pg -l /tmp/ferry-pg/log -o \"-c listen_addresses=127.0.0.1 -p 5433 -k /tmp/ferry-pg\" start
  ... and afterwards: pg_ctl -D /tmp/ferry-pg stop
PostgreSQL refuses to run as root: as root, make the directory another user's
(mkdir /tmp/ferry-pg; chown nobody /tmp/ferry-pg) and run both through
`setpriv --reuid=nobody --regid=nogroup --clear-groups --`.";
