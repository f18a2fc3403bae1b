//! An HTTP service of accounts on PostgreSQL, as users build one, in two
//! interchangeable modes on one table:
//!
//! - `--ferry`: `ferry::entity` on a `PostgresStore` (tokio shards): the
//!   fold adds a deposit to its account; Ferry batches each account's
//!   deposits and carries many accounts in one statement (trips), four
//!   trips in flight a shard, one on each of its four connections (their
//!   commits share a flush to disk);
//! - `--pool`: what such a service usually does: a deadpool of
//!   tokio-postgres connections, and per request a read of the account's
//!   version and state, the same fold, and `UPDATE … WHERE key = $1 AND
//!   version = $2` (an `INSERT … ON CONFLICT DO NOTHING` for a new
//!   account), read and tried again when somebody else wrote it first.
//!
//! Both use PostgresStore's table (`key bigint, version bigint, epoch
//! bigint, state bytea`, the state JSON `{"balance":N}`), so a table one
//! mode wrote is read right by the other.
//!
//! The service's own write path — the fold, the routing, both starts and
//! the pool's update — is the part between the markers `==== The write
//! path` and `==== The rest`: 119 lines, blank and comment lines included
//! (`sed -n '/^\/\/ ==== The write path/,/^\/\/ ==== The rest/p'
//! engine/examples/http_accounts.rs | wc -l`, less the two marker lines);
//! Ferry's mode alone is 65 of them. The rest is flags, metrics and the
//! start-up's messages.
//!
//! ```sh
//! cargo run --release -p ferry-engine --features postgres --example http_accounts -- \
//!     --ferry --database postgres://ferry@127.0.0.1:5433/postgres
//! curl -s -XPOST 127.0.0.1:8080/accounts/42/deposit -H 'content-type: application/json' -d '{"amount":5}'
//! # {"balance":5,"id":42}
//! curl -s 127.0.0.1:8080/metrics
//! ```
//!
//! The API:
//!
//! - `POST /accounts/{id}/deposit`, body `{"amount": N}` (JSON; N from 1
//!   to 4,294,967,295; `id` any 64-bit integer): `200 {"id":…,"balance":…}`,
//!   the balance after this deposit; `422` for an amount out of that range
//!   (axum's answer) or a balance that would overflow (the fold's); `503`
//!   if it was not applied (the store failed, the service is full, 64
//!   conflicts in a row): safe to send again; `500` if it may or may not
//!   have been applied (a reply lost): read before sending again. A body
//!   that is not such JSON is axum's `400`/`415`/`422`.
//! - `GET /metrics`: Prometheus text: requests by route and status
//!   (`http_requests_total`), their latency histogram
//!   (`http_request_duration_seconds`), the sum of the amounts answered
//!   `200` (`http_accounts_deposited_amount_total`), Ferry's store and
//!   engine figures (`ferry_*`, with `--ferry`) or the pool's size and
//!   conflicts (`http_accounts_pool_*`, with `--pool`).
//!
//! Flags: `--ferry` or `--pool`; `--listen` (default `127.0.0.1:8080`;
//! port 0 picks one); `--database` (else `$FERRY_POSTGRES_URL`);
//! `--table` (default `http_accounts`); `--shards` (Ferry's; default one
//! per CPU); `--pool-size` (default 16). It prints `listening on
//! http://ADDRESS` once it serves. A start that cannot reach the database
//! says why and exits with status 2. `bench/http-compare.sh` measures the
//! two modes with oha (docs/benchmarks.md, "An HTTP service").
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Parser;
use deadpool_postgres::{Manager, Pool};
use ferry::entity::{Entities, EntityError, Options, PostgresStore, Store};
use ferry::Runtime;
use metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio_postgres::NoTls;

// ==== The write path ========================================================

/// An account as the table keeps it (JSON in its `state` column).
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
struct Account {
    balance: i64,
}

/// The fold: what a deposit does to an account; its answer is the balance.
fn deposit(account: &mut Account, amount: &i64) -> Result<i64, String> {
    let sum = account.balance.checked_add(*amount);
    account.balance = sum.ok_or("the balance would overflow")?;
    Ok(account.balance)
}

/// A request's body: an amount from 1 to 2^32 - 1 (else axum answers 422).
#[derive(serde::Deserialize)]
struct Deposit {
    amount: NonZeroU32,
}

/// Where deposits go: the entity engine, or the pool and its statements.
enum Writer {
    Ferry(Entities<i64, i64, i64, String>),
    Pool(Pool, [String; 3]),
}

type Failed = (StatusCode, String);

async fn post_deposit(
    State(writer): State<Arc<Writer>>,
    Path(id): Path<i64>,
    Json(body): Json<Deposit>,
) -> Result<Json<serde_json::Value>, Failed> {
    let amount = i64::from(body.amount.get());
    let balance = match &*writer {
        Writer::Ferry(accounts) => accounts.submit(id, amount).await.map_err(refusal)?,
        Writer::Pool(pool, sql) => pooled_deposit(pool, sql, id, amount).await?,
    };
    counter!("http_accounts_deposited_amount_total").increment(amount.unsigned_abs());
    Ok(Json(serde_json::json!({ "id": id, "balance": balance })))
}

fn routes(writer: Writer) -> Router {
    let deposit = post(post_deposit).with_state(Arc::new(writer));
    Router::new().route("/accounts/{id}/deposit", deposit)
}

/// 422: the fold refused it; 503: not applied; 500: applied or not, unknown.
fn refusal(err: EntityError<i64, String>) -> Failed {
    let status = match &err {
        EntityError::Refused(_) => StatusCode::UNPROCESSABLE_ENTITY,
        err if err.was_not_applied() => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, err.to_string())
}

type Fallible<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;
fn start_ferry(url: &str, table: &str, shards: usize) -> Fallible<Writer> {
    let store = PostgresStore::new(url, table)?;
    let builder = Entities::builder().shards(shards).pin(false);
    let builder = builder.runtime(Runtime::Tokio).max_in_flight_batches(4);
    let options = Options::default().connections(4); // trips' commits share a flush
    let accounts = builder.start_entities_with(store, deposit, options)?;
    Ok(Writer::Ferry(accounts))
}

/// The pool's statements on PostgresStore's table `{t}`.
const POOL_SQL: [&str; 3] = [
    "SELECT version, state FROM {t} WHERE key = $1",
    "UPDATE {t} SET version = version + 1, state = $3 WHERE key = $1 AND version = $2",
    "INSERT INTO {t} (key, version, epoch, state) VALUES ($1, 1, 0, $2) ON CONFLICT DO NOTHING",
];

/// PostgresStore connects first: it checks the name, creates the table, finds the server.
async fn start_pool(url: &str, table: &str, size: usize) -> Fallible<Writer> {
    Store::<i64>::connect(&PostgresStore::new(url, table)?).await?;
    let mut config: tokio_postgres::Config = url.parse()?;
    config.connect_timeout(Duration::from_secs(5));
    let manager = Manager::new(config, NoTls); // recycled connections are checked, not reset
    let sql = POOL_SQL.map(|sql| sql.replace("{t}", &format!("\"{table}\"")));
    let pool = Pool::builder(manager).max_size(size).build()?;
    Ok(Writer::Pool(pool, sql))
}

/// Read the version and state, fold, write on the version; on a conflict, again (64 times).
async fn pooled_deposit(pool: &Pool, sql: &[String], id: i64, amount: i64) -> Result<i64, Failed> {
    let client = pool.get().await.map_err(unavailable)?;
    let read = client.prepare_cached(&sql[0]).await.map_err(unavailable)?;
    let update = client.prepare_cached(&sql[1]).await.map_err(unavailable)?;
    let insert = client.prepare_cached(&sql[2]).await.map_err(unavailable)?;
    for _ in 0..64 {
        let row = client.query_opt(&read, &[&id]).await.map_err(unavailable)?;
        let (version, state): (i64, Option<Vec<u8>>) =
            row.map_or((0, None), |row| (row.get(0), row.get(1)));
        let json = state.as_deref().unwrap_or(b"{}");
        let mut account: Account = serde_json::from_slice(json).map_err(unavailable)?;
        let balance = deposit(&mut account, &amount)
            .map_err(|why| (StatusCode::UNPROCESSABLE_ENTITY, why))?;
        let state = serde_json::to_vec(&account).map_err(unavailable)?;
        let written = match version {
            0 => client.execute(&insert, &[&id, &state]).await,
            _ => client.execute(&update, &[&id, &version, &state]).await,
        };
        match written {
            Ok(1) => return Ok(balance),
            Ok(_) => counter!("http_accounts_pool_conflicts_total").increment(1),
            Err(err) if err.as_db_error().is_some() => return Err(unavailable(err)),
            Err(err) => return Err((StatusCode::INTERNAL_SERVER_ERROR, err.to_string())),
        }
    }
    Err(unavailable("64 conflicts in a row on the account"))
}

fn unavailable(why: impl ToString) -> Failed {
    (StatusCode::SERVICE_UNAVAILABLE, why.to_string())
}

// ==== The rest: flags, metrics, start-up ====================================

/// The service's flags.
#[derive(Parser, Debug)]
#[command(about = "Accounts over HTTP on PostgreSQL: Ferry's entity store, or a connection pool")]
struct Flags {
    /// The entity store: Ferry's shards, batches and trips.
    #[arg(long, conflicts_with = "pool", required_unless_present = "pool")]
    ferry: bool,
    /// The usual design: a pool of connections, a conditional update per request.
    #[arg(long)]
    pool: bool,
    /// The address to serve on (port 0: a free one).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The database, postgres://user@host:port/database (default: $FERRY_POSTGRES_URL).
    #[arg(long)]
    database: Option<String>,
    /// The accounts' table (PostgresStore's layout; created if missing).
    #[arg(long, default_value = "http_accounts")]
    table: String,
    /// Ferry's shards (default: one per CPU this process may use).
    #[arg(long, default_value_t = ferry::default_shards())]
    shards: usize,
    /// The pool's connections at most.
    #[arg(long, default_value_t = 16)]
    pool_size: usize,
}

#[tokio::main]
async fn main() -> ExitCode {
    let flags = Flags::parse();
    let metrics = match install_metrics() {
        Ok(handle) => handle,
        Err(err) => return fail(&format!("could not set up the metrics: {err}")),
    };
    // Phase 1: the write path, which proves the database is reachable.
    let mode = if flags.ferry { "ferry" } else { "pool" };
    let from_env = || std::env::var("FERRY_POSTGRES_URL").ok();
    let Some(url) = flags.database.clone().or_else(from_env) else {
        return fail("which database? Give --database postgres://… or set FERRY_POSTGRES_URL");
    };
    let writer = if flags.ferry {
        let (url, table, shards) = (url.clone(), flags.table.clone(), flags.shards);
        // The shards connect in their own threads; the start waits for them.
        tokio::task::spawn_blocking(move || start_ferry(&url, &table, shards))
            .await
            .unwrap_or_else(|err| Err(err.into()))
    } else {
        start_pool(&url, &flags.table, flags.pool_size).await
    };
    let writer = match writer {
        Ok(writer) => writer,
        Err(why) => {
            return fail(&format!("could not start the {mode} mode: {why}"));
        }
    };
    // Phase 2: the routes, with /metrics and the request figures.
    let figures = Figures::of(&writer);
    let app = routes(writer)
        .route(
            "/metrics",
            get(move || scrape(metrics.clone(), figures.clone())),
        )
        .layer(middleware::from_fn(count_request));
    // Phase 3: serve.
    let listener = match tokio::net::TcpListener::bind(flags.listen).await {
        Ok(listener) => listener,
        Err(err) => return fail(&format!("could not listen on {}: {err}", flags.listen)),
    };
    let address = listener.local_addr().unwrap_or(flags.listen);
    println!(
        "http_accounts ({mode}, table {}): listening on http://{address}",
        flags.table
    );
    match axum::serve(listener, app).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("http_accounts: serving stopped: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Says why the service cannot start; status 2.
fn fail(why: &str) -> ExitCode {
    eprintln!("http_accounts: {why}");
    ExitCode::from(2)
}

/// The latency histogram's buckets, in seconds: 100 µs to 5 s.
const LATENCY_BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// The Prometheus recorder, rendered by `GET /metrics`; its upkeep (which
/// drains the histograms) every 5 seconds.
fn install_metrics() -> Result<PrometheusHandle, metrics_exporter_prometheus::BuildError> {
    let matcher = Matcher::Full("http_request_duration_seconds".into());
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(matcher, &LATENCY_BUCKETS)?
        .install_recorder()?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    Ok(handle)
}

/// Every request's count by route and status, and its latency.
async fn count_request(request: Request, next: Next) -> Response {
    let route = if request.uri().path() == "/metrics" {
        "metrics"
    } else {
        "deposit"
    };
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    counter!("http_requests_total", "route" => route, "status" => status).increment(1);
    histogram!("http_request_duration_seconds", "route" => route)
        .record(started.elapsed().as_secs_f64());
    response
}

/// What `/metrics` reads beside the recorder: Ferry's figures, or the
/// pool's.
#[derive(Clone)]
enum Figures {
    Ferry(Entities<i64, i64, i64, String>),
    Pool(Pool),
}

impl Figures {
    fn of(writer: &Writer) -> Figures {
        match writer {
            Writer::Ferry(accounts) => Figures::Ferry(accounts.clone()),
            Writer::Pool(pool, _) => Figures::Pool(pool.clone()),
        }
    }

    /// Sets the gauges and counters of these figures now.
    fn record(&self) {
        match self {
            Figures::Ferry(accounts) => {
                gauge!("http_accounts_mode", "mode" => "ferry").set(1.0);
                let store = accounts.store_stats();
                counter!("ferry_store_reads_total").absolute(store.reads);
                counter!("ferry_store_writes_total").absolute(store.writes);
                counter!("ferry_store_conflicts_total").absolute(store.conflicts);
                counter!("ferry_store_lost_total").absolute(store.lost);
                counter!("ferry_store_unknown_total").absolute(store.unknown);
                let engine = accounts.stats().total();
                counter!("ferry_batches_total").absolute(engine.batches);
                counter!("ferry_trips_total").absolute(engine.trips);
                counter!("ferry_sent_total").absolute(engine.sent);
                counter!("ferry_admitted_total").absolute(engine.admitted);
                gauge!("ferry_waiting").set(engine.waiting as f64);
                gauge!("ferry_in_flight").set(engine.in_flight as f64);
                gauge!("ferry_shards").set(accounts.engine().shards() as f64);
            }
            Figures::Pool(pool) => {
                gauge!("http_accounts_mode", "mode" => "pool").set(1.0);
                let status = pool.status();
                gauge!("http_accounts_pool_max_size").set(status.max_size as f64);
                gauge!("http_accounts_pool_size").set(status.size as f64);
                gauge!("http_accounts_pool_available").set(status.available as f64);
                gauge!("http_accounts_pool_waiting").set(status.waiting as f64);
            }
        }
    }
}

/// `GET /metrics`: the Prometheus text page.
async fn scrape(metrics: PrometheusHandle, figures: Figures) -> impl IntoResponse {
    figures.record();
    (
        [("content-type", "text/plain; version=0.0.4")],
        metrics.render(),
    )
}
