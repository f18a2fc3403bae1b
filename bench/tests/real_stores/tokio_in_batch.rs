//! A service's batch function as most are written, for tokio: a
//! tokio-postgres client made in the shard's factory, its connection driven
//! by `tokio::spawn`, and a `tokio::time::sleep` in each batch, on an
//! engine of the default builder. Where glommio can start, the default is
//! glommio, and this runs there; where it cannot, the engine runs on tokio
//! and says why.

use std::rc::Rc;
use std::time::Duration;

use ferry::{Engine, Runtime, StartError};
use futures::future::join_all;
use tokio_postgres::NoTls;

use crate::servers::Private;

/// Each key's batch asks the server for the key plus the sum of its inputs,
/// after a pause on tokio's timer; each input is answered that figure.
pub fn a_tokio_postgres_batch_function_runs_with_the_default_builder(server: &Private) {
    let url = server.url.clone();
    let engine: Engine<i64, i64, i64, String> = Engine::builder()
        .try_start(move |_shard| {
            let url = url.clone();
            async move {
                let (client, connection) = tokio_postgres::connect(&url, NoTls)
                    .await
                    .map_err(|err| format!("connect: {err}"))?;
                tokio::spawn(connection);
                let client = Rc::new(client);
                Ok::<_, String>(move |key: i64, inputs: Vec<i64>| {
                    let client = Rc::clone(&client);
                    async move {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        let sum: i64 = inputs.iter().sum();
                        let row = client
                            .query_one("SELECT $1::bigint + $2::bigint", &[&key, &sum])
                            .await
                            .map_err(|err| format!("query: {err}"))?;
                        let total: i64 = row.get(0);
                        Ok(inputs.iter().map(|_| total).collect())
                    }
                })
            }
        })
        .unwrap_or_else(|err: StartError<String>| panic!("{err}\n{}", server.log()));
    eprintln!("the default builder's shards run on {}", engine.runtime());
    match engine.runtime() {
        Runtime::Glommio => assert_eq!(engine.runtime_reason(), None),
        _ => {
            let why = engine.runtime_reason().expect("why auto chose tokio");
            eprintln!("glommio cannot start here, the engine runs on tokio: {why}");
        }
    }
    // One input per key: each is answered its key plus itself.
    let answers = (0..40).map(|n| engine.submit(n, n * 10));
    let outcomes = futures::executor::block_on(join_all(answers));
    for (n, outcome) in (0_i64..).zip(outcomes) {
        assert_eq!(outcome, Ok(n + n * 10), "on {}", engine.runtime());
    }
    assert_eq!(engine.stats().total().panicked, 0);
}
