//! A batch function written for tokio works on every runtime the default
//! (`Runtime::Auto`) may pick: it may await tokio's timers, talk through
//! tokio sockets (as tokio-postgres and redis clients do) and spawn tokio
//! tasks, on a glommio shard as on a tokio one. A glommio shard's thread
//! runs in the process's tokio context for that; without it, each such
//! batch panicked ("there is no reactor running") and its callers got
//! `Panicked`.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use ferry::{Engine, Runtime, StartError};
use futures::future::join_all;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

mod support;
use support::on_each_runtime;

type TokioEngine = Engine<u64, u64, u64, String>;

/// A batch function that waits on tokio's timer, then answers each input
/// with itself plus one.
async fn sleepy(_key: u64, inputs: Vec<u64>) -> Result<Vec<u64>, String> {
    tokio::time::sleep(Duration::from_millis(1)).await;
    Ok(inputs.iter().map(|input| input + 1).collect())
}

/// Submits 200 inputs over 20 keys and checks every answer.
fn every_input_is_answered(engine: &TokioEngine) {
    let answers: Vec<_> = (0..200).map(|n| engine.submit(n % 20, n)).collect();
    let outcomes = futures::executor::block_on(join_all(answers));
    for (n, outcome) in outcomes.into_iter().enumerate() {
        assert_eq!(outcome, Ok(n as u64 + 1), "on {}", engine.runtime());
    }
    let total = engine.stats().total();
    assert_eq!(total.panicked, 0, "on {}", engine.runtime());
}

#[test]
fn a_batch_function_on_tokio_timers_works_with_the_default_builder() {
    let engine: TokioEngine = Engine::builder()
        .start(|_shard| sleepy)
        .expect("the default builder starts");
    // Glommio wherever it can start; where it cannot, the engine says why.
    match engine.runtime() {
        Runtime::Glommio => assert_eq!(engine.runtime_reason(), None),
        other => {
            assert_eq!(other, Runtime::Tokio);
            let why = engine.runtime_reason().expect("why auto chose tokio");
            assert!(why.contains("glommio"), "{why}");
        }
    }
    every_input_is_answered(&engine);
}

#[test]
fn a_batch_function_on_tokio_timers_works_on_glommio_asked_for() {
    let started: Result<TokioEngine, StartError> = Engine::builder()
        .pin(false)
        .runtime(Runtime::Glommio)
        .start(|_shard| sleepy);
    match started {
        Ok(engine) => {
            assert_eq!(engine.runtime(), Runtime::Glommio);
            every_input_is_answered(&engine);
        }
        // A host where glommio cannot run: the error names the way out.
        Err(StartError::Runtime { reason, .. }) => {
            assert!(reason.contains("Runtime::Tokio"), "{reason}");
        }
        Err(other) => panic!("{other}"),
    }
}

/// An echo server on 127.0.0.1, one line per connection answered with the
/// same line: a stand-in for a store spoken to through a tokio client.
fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
    let address = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut line = String::new();
            let mut reader = BufReader::new(&stream);
            if reader.read_line(&mut line).is_ok() {
                let _ = (&stream).write_all(line.as_bytes());
            }
        }
    });
    address
}

/// One round trip through a tokio `TcpStream`: the client's I/O needs the
/// tokio reactor of the thread it runs on.
async fn echo(address: SocketAddr, value: u64) -> Result<u64, String> {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|err| format!("connect: {err}"))?;
    let (read, mut write) = stream.into_split();
    write
        .write_all(format!("{value}\n").as_bytes())
        .await
        .map_err(|err| format!("write: {err}"))?;
    let mut line = String::new();
    tokio::io::BufReader::new(read)
        .read_line(&mut line)
        .await
        .map_err(|err| format!("read: {err}"))?;
    line.trim().parse().map_err(|err| format!("parse: {err}"))
}

on_each_runtime!(tokio_sockets_timeouts_and_tasks_work_in_a_batch_function);
fn tokio_sockets_timeouts_and_tasks_work_in_a_batch_function(runtime: Runtime) {
    let address = echo_server();
    let engine: TokioEngine = Engine::builder()
        .shards(2)
        .pin(false)
        .runtime(runtime)
        .start(move |_shard| {
            move |_key: u64, inputs: Vec<u64>| async move {
                assert_eq!(Runtime::current(), Some(runtime), "the shard's own runtime");
                let total: u64 = inputs.iter().sum();
                let echoed = tokio::time::timeout(Duration::from_secs(10), echo(address, total))
                    .await
                    .map_err(|_| "the echo timed out".to_string())??;
                // A task on tokio beside the batch (the way a tokio-postgres
                // connection is driven).
                let doubled = tokio::spawn(async move { echoed * 2 })
                    .await
                    .map_err(|err| err.to_string())?;
                Ok(inputs.iter().map(|_| doubled).collect())
            }
        })
        .unwrap_or_else(|err| panic!("on {runtime}: {err}"));
    assert_eq!(engine.runtime(), runtime);
    assert_eq!(engine.submit_blocking(7, 21), Ok(42), "on {runtime}");
    let outcomes = futures::executor::block_on(join_all((0..50).map(|n| engine.submit(n, n))));
    for (n, outcome) in outcomes.into_iter().enumerate() {
        // One input per key: its batch's sum is the input.
        assert_eq!(outcome, Ok(2 * n as u64), "on {runtime}");
    }
    assert_eq!(
        Runtime::current(),
        None,
        "the test's own thread is no shard"
    );
}
