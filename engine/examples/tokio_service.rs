//! Many tokio tasks submitting to one engine, as a service's request
//! handlers would: each awaits its own input's outcome, while Ferry batches
//! per key on its own shards. The tokio runtime and the shards are separate
//! threads; the submit future is `Send`, so it can live in any task.
use ferry::{Engine, FerryError, Refused};
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Deposit {
    account: u32,
    cents: i64,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine: Engine<u32, Deposit, i64, String> = Engine::builder()
        .shards(2)
        .pin(false)
        .max_batch_size(128)
        .max_in_flight_batches(32)
        .start(|_shard| {
            // A stand-in for one conditional write per batch to a store.
            move |_account: u32, deposits: Vec<Deposit>| async move {
                glommio::timer::sleep(Duration::from_micros(200)).await;
                Ok::<_, String>(deposits.iter().map(|d| d.cents).collect())
            }
        })?;

    let started = Instant::now();
    let tasks: Vec<_> = (0..20_000u32)
        .map(|n| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let deposit = Deposit {
                    account: n % 100,
                    cents: i64::from(n % 7),
                };
                match engine.submit(deposit.account, deposit).await {
                    Ok(_) => Ok(()),
                    Err(FerryError::Refused {
                        input,
                        reason: Refused::Full,
                    }) => Err(input),
                    Err(other) => panic!("deposit failed: {other}"),
                }
            })
        })
        .collect();
    let mut shed = 0;
    for task in tasks {
        if task.await?.is_err() {
            shed += 1;
        }
    }
    let stats = engine.stats().total();
    println!(
        "20000 deposits over 100 accounts in {:?}: {} batches (mean {:.1} per batch), {shed} shed",
        started.elapsed(),
        stats.batches,
        stats.sent as f64 / stats.batches.max(1) as f64,
    );
    engine.close();
    tokio::task::spawn_blocking(move || engine.join()).await?;
    Ok(())
}
