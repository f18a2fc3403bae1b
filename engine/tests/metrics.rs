//! The feature `metrics` end to end: a Prometheus exporter listening on
//! 127.0.0.1, an engine that runs good batches and one failing batch, and
//! one scrape of the endpoint over plain HTTP, which must show the `ferry_`
//! series with the counts `stats()` has, the failing batch among the
//! faults.
//!
//! One test in this file: the recorder is global to the process.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use ferry::{Engine, FerryError};
use metrics_exporter_prometheus::PrometheusBuilder;

/// The key whose batch fails.
const FAILING: u32 = 13;

/// A port on 127.0.0.1 free a moment ago: bound, read, released.
fn free_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("its address")
}

/// One GET of `/metrics`, the whole response body as text.
fn scrape(address: SocketAddr) -> String {
    let mut stream = TcpStream::connect(address).expect("connect to the exporter");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let request = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    stream
        .write_all(request.as_bytes())
        .expect("send the request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the response");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("a header and a body");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// The value of the one series named `name` whose labels include every one
/// of `labels` (`key="value"`), summed over the series that match.
fn value(body: &str, name: &str, labels: &[&str]) -> f64 {
    body.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .filter(|(series, _)| {
            let (series_name, rest) = series.split_once('{').unwrap_or((series, ""));
            series_name == name && labels.iter().all(|label| rest.contains(label))
        })
        .map(|(_, number)| number.parse::<f64>().expect("a number"))
        .sum()
}

/// Twenty inputs on twenty keys over two shards, key `FAILING`'s batch
/// failing; the engine closed and joined, so every shard exported its last
/// round. Its totals.
fn run_batches() -> ferry::ShardStats {
    let engine: Engine<u32, u32, u32, String> = Engine::builder()
        .shards(2)
        .pin(false)
        .start(|_shard| {
            |key: u32, inputs: Vec<u32>| async move {
                if key == FAILING {
                    Err("the store refused the write".to_string())
                } else {
                    Ok(inputs)
                }
            }
        })
        .expect("start");
    for key in 0..20 {
        let outcome = engine.submit_blocking(key, key);
        match (key, outcome) {
            (FAILING, Err(FerryError::Failed(message))) => assert!(message.contains("refused")),
            (FAILING, other) => panic!("the failing key got {other:?}"),
            (_, outcome) => assert_eq!(outcome, Ok(key)),
        }
    }
    engine.close();
    engine.join();
    engine.stats().total()
}

#[test]
fn the_exporter_shows_every_family_and_the_failed_batch() {
    let address = free_port();
    PrometheusBuilder::new()
        .with_http_listener(address)
        .install()
        .expect("install the exporter");
    let total = run_batches();
    assert_eq!(
        (total.answered, total.failed, total.answered_ok),
        (20, 1, 19)
    );
    let body = scrape(address);
    assert_counters(&body, &total);
    assert_histograms(&body, &total);
}

/// The counters and gauges of `body` against the engine's `total`.
fn assert_counters(body: &str, total: &ferry::ShardStats) {
    let failed = value(body, "ferry_answered_total", &[r#"outcome="failed""#]);
    assert_eq!(failed, 1.0, "the failing batch is a fault:\n{body}");
    assert_eq!(
        value(body, "ferry_answered_total", &[r#"outcome="ok""#]),
        19.0
    );
    assert_eq!(
        value(body, "ferry_batches_total", &[]),
        total.batches as f64
    );
    assert_eq!(
        value(body, "ferry_admitted_total", &[r#"shard="0""#])
            + value(body, "ferry_admitted_total", &[r#"shard="1""#]),
        20.0
    );
    assert_eq!(
        value(body, "ferry_batch_size_count", &[]),
        total.batch_size.count as f64
    );
    assert_eq!(value(body, "ferry_queue_time_seconds_count", &[]), 20.0);
    assert_eq!(
        value(body, "ferry_batch_time_seconds_count", &[]),
        total.batches as f64
    );
    assert_eq!(
        value(body, "ferry_stopped", &[]),
        2.0,
        "both shards stopped"
    );
    assert_eq!(
        value(body, "ferry_died", &[]),
        0.0,
        "closed as asked: neither died"
    );
    for family in [
        "ferry_waiting",
        "ferry_in_flight",
        "ferry_longest_lane",
        "ferry_sent_total",
    ] {
        assert!(body.contains(family), "{family} is exported:\n{body}");
    }
    assert!(!body.contains("key=\""), "no series is labelled by key");
}

/// The distributions of `body`, as Prometheus histograms, against `total`.
fn assert_histograms(body: &str, total: &ferry::ShardStats) {
    // Distributions as Prometheus histograms: cumulative buckets whose
    // `+Inf` holds every value, and sizes of one input under `le="1"`.
    let everything = value(body, "ferry_queue_time_seconds_bucket", &[r#"le="+Inf""#]);
    assert_eq!(everything, 20.0, "{body}");
    let ones = value(body, "ferry_batch_size_bucket", &[r#"le="1""#]);
    assert_eq!(
        ones, total.batch_size.count as f64,
        "one input per batch:\n{body}"
    );
    let under_ten_seconds = value(body, "ferry_batch_time_seconds_bucket", &[r#"le="10""#]);
    assert_eq!(under_ten_seconds, total.batches as f64, "{body}");
    // (With no batch delay and an instant store, waits may round to zero.)
    for sum in [
        "ferry_queue_time_seconds_sum",
        "ferry_batch_time_seconds_sum",
    ] {
        assert!(body.contains(sum), "{sum} is exported:\n{body}");
    }
}
