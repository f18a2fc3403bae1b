//! Many tokio tasks submitting to one engine, as a service's request
//! handlers would: each awaits its own input's outcome, while Ferry batches
//! per key on its own shards. The tokio runtime and the shards are separate
//! threads; the submit future is `Send`, so it can live in any task.
//!
//! It also shows how to operate one (docs/operating.md): the engine's
//! figures are served for Prometheus on 127.0.0.1 and its spans and events
//! are logged.
//!
//! ```sh
//! cargo run -p ferry-engine --features metrics,tracing --example tokio_service
//! FERRY_METRICS_PORT=9898 FERRY_HOLD_SECONDS=60 RUST_LOG=info,ferry=debug \
//!     cargo run -p ferry-engine --features metrics,tracing --example tokio_service
//! ```
//!
//! `FERRY_METRICS_PORT` picks the port (else a free one, printed);
//! `FERRY_HOLD_SECONDS` keeps the endpoint up that long after the work, to
//! scrape it by hand (`curl http://127.0.0.1:PORT/metrics`; the example
//! says so when it ends without it); `RUST_LOG` filters the log (default
//! `info`: faults; `ferry=debug` adds refusals and a span per batch).
//!
//! The stand-in store refuses account 13 on purpose, so the log shows a
//! `WARN` line (`batch function failed`) for each batch of that account:
//! those are expected, and the example says so before they come. The log
//! is coloured only on a terminal, and never with `NO_COLOR` set.
use ferry::{Engine, FerryError, Refused};
use metrics_exporter_prometheus::PrometheusBuilder;
use std::io::{IsTerminal, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};
use tracing_subscriber::EnvFilter;

#[derive(Debug)]
struct Deposit {
    account: u32,
    cents: i64,
}

/// The address to serve metrics on: `FERRY_METRICS_PORT` on 127.0.0.1, or
/// a port that was free a moment ago.
fn metrics_address() -> std::io::Result<SocketAddr> {
    match std::env::var("FERRY_METRICS_PORT")
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
    {
        Some(port) => Ok(SocketAddr::from(([127, 0, 0, 1], port))),
        None => TcpListener::bind("127.0.0.1:0")?.local_addr(),
    }
}

/// One scrape of the endpoint, as Prometheus would make it.
fn scrape(address: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(address)?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

/// Two shards whose stand-in store takes about a millisecond a batch (on
/// tokio's timer, which works on either runtime of the shards) and refuses
/// account 13's writes.
fn start_engine() -> Result<Engine<u32, Deposit, i64, String>, ferry::StartError> {
    Engine::builder()
        .shards(2)
        .pin(false)
        .max_batch_size(128)
        .max_in_flight_batches(32)
        .start(|_shard| {
            // A stand-in for one conditional write per batch to a store.
            move |account: u32, deposits: Vec<Deposit>| async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                if account == 13 {
                    return Err("account 13 is frozen".to_string());
                }
                Ok::<_, String>(deposits.iter().map(|d| d.cents).collect())
            }
        })
}

/// 20,000 deposits from as many tasks; how many were shed (`Full`) and how
/// many failed.
async fn deposit_all(
    engine: &Engine<u32, Deposit, i64, String>,
) -> Result<(u32, u32), tokio::task::JoinError> {
    let tasks: Vec<_> = (0..20_000u32)
        .map(|n| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let deposit = Deposit {
                    account: n % 100,
                    cents: i64::from(n % 7),
                };
                match engine.submit(deposit.account, deposit).await {
                    Ok(_) => (0, 0),
                    Err(FerryError::Refused {
                        reason: Refused::Full,
                        ..
                    }) => (1, 0),
                    Err(FerryError::Failed(_)) => (0, 1),
                    Err(other) => panic!("deposit failed: {other}"),
                }
            })
        })
        .collect();
    let (mut shed, mut failed) = (0, 0);
    for task in tasks {
        let (s, f) = task.await?;
        (shed, failed) = (shed + s, failed + f);
    }
    Ok((shed, failed))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Colour codes only for a terminal, and never against NO_COLOR: a log
    // written to a file stays plain text.
    let colour = std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_ansi(colour)
        .init();
    // Before the engine starts: each shard registers its series then.
    let address = metrics_address()?;
    PrometheusBuilder::new()
        .with_http_listener(address)
        .install()?;
    println!("metrics at http://{address}/metrics");

    let engine = start_engine()?;
    println!(
        "shards on {}; account 13 is refused on purpose: expect a WARN \"batch function failed\" \
         line per batch of it",
        engine.runtime()
    );
    let started = Instant::now();
    let (shed, failed) = deposit_all(&engine).await?;
    let stats = engine.stats().total();
    println!(
        "20000 deposits over 100 accounts in {:?}: {} batches (mean {:.1} per batch), \
         {shed} shed, {failed} failed",
        started.elapsed(),
        stats.batches,
        stats.sent as f64 / stats.batches.max(1) as f64,
    );
    println!(
        "queue time p50 {} µs, p99 {} µs; batch time p50 {} µs, p99 {} µs",
        stats.queue_time_ns.p50 / 1_000,
        stats.queue_time_ns.p99 / 1_000,
        stats.batch_time_ns.p50 / 1_000,
        stats.batch_time_ns.p99 / 1_000,
    );
    engine.close();
    let closing = engine.clone();
    tokio::task::spawn_blocking(move || closing.join()).await?;

    let response = scrape(address)?;
    println!("scraped, the outcomes:");
    for line in response
        .lines()
        .filter(|l| l.starts_with("ferry_answered_total"))
    {
        println!("  {line}");
    }
    let hold = std::env::var("FERRY_HOLD_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok());
    match hold {
        Some(seconds) => {
            println!("serving metrics for {seconds} s more");
            tokio::time::sleep(Duration::from_secs(seconds)).await;
        }
        None => println!(
            "the endpoint closes now; FERRY_HOLD_SECONDS=60 keeps it up a minute more, \
             to scrape it by hand"
        ),
    }
    Ok(())
}
