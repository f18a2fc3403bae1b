//! Per-key batching in about twenty lines: many threads add to a few
//! counters; each key's additions are applied in batches, one batch per key
//! at a time, and every caller gets its own running total back.
use ferry::Engine;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine: Engine<u32, u64, u64, String> = Engine::builder()
        .shards(2)
        .pin(false)
        .max_batch_size(64)
        .max_batch_delay(Duration::from_micros(100))
        .start(|_shard| {
            // One state per shard, reached only from that shard's thread.
            let totals =
                std::rc::Rc::new(std::cell::RefCell::new(std::collections::HashMap::new()));
            move |counter: u32, additions: Vec<u64>| {
                let totals = totals.clone();
                async move {
                    let mut totals = totals.borrow_mut();
                    let total: &mut u64 = totals.entry(counter).or_default();
                    Ok(additions
                        .iter()
                        .map(|n| {
                            *total += n;
                            *total
                        })
                        .collect())
                }
            }
        })?;
    let callers: Vec<_> = (0..4)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                (0..1000)
                    .map(|i| engine.submit_blocking(i % 3, 1 + t).unwrap())
                    .max()
            })
        })
        .collect();
    let highest: Vec<_> = callers.into_iter().map(|c| c.join().unwrap()).collect();
    engine.close();
    engine.join();
    println!("highest running totals seen by each thread: {highest:?}");
    println!("stats: {:?}", engine.stats().total());
    Ok(())
}
