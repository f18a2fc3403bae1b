//! The thread-per-core fast path: tasks spawned on a shard through the
//! engine submit their own shard's keys directly, and other keys through
//! the ordinary path, with the same guarantees, on each runtime.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ferry::{Engine, FerryError, Refused, Runtime, ShardId};
use futures::channel::oneshot;
use futures::future::join_all;

mod support;
use support::on_each_runtime;

fn engine(runtime: Runtime, shards: usize) -> Engine<u64, u64, u64, String> {
    let engine = Engine::builder()
        .runtime(runtime)
        .shards(shards)
        .pin(false)
        .max_batch_size(8)
        .start(|_| {
            |key: u64, inputs: Vec<u64>| async move {
                Ok::<_, String>(inputs.iter().map(|i| i + key).collect())
            }
        })
        .unwrap();
    assert_eq!(engine.runtime(), runtime, "runs on the runtime asked for");
    engine
}

on_each_runtime!(a_task_on_a_shard_submits_its_own_keys_directly_and_others_through_the_intake);
fn a_task_on_a_shard_submits_its_own_keys_directly_and_others_through_the_intake(runtime: Runtime) {
    let engine = engine(runtime, 2);
    let own: Vec<u64> = (0..400)
        .filter(|k| engine.shard_of(k) == ShardId::new(0))
        .collect();
    let other: Vec<u64> = (0..400)
        .filter(|k| engine.shard_of(k) == ShardId::new(1))
        .collect();
    let (done, outcomes) = oneshot::channel();
    let on_shard = engine.clone();
    let (own_keys, other_keys) = (own.clone(), other.clone());
    engine
        .spawn_on(ShardId::new(0), move || async move {
            let keys = own_keys.iter().chain(other_keys.iter());
            let answers = join_all(keys.map(|&k| on_shard.submit_local(k, 1_000 * k))).await;
            let _ = done.send(answers);
        })
        .unwrap();
    let outcomes = futures::executor::block_on(outcomes).expect("the task ran");
    for (outcome, key) in outcomes.into_iter().zip(own.iter().chain(other.iter())) {
        assert_eq!(outcome, Ok(1_000 * key + key));
    }
    engine.close();
    engine.join();
    let stats = engine.stats();
    assert_eq!(stats.shards[0].admitted_local, own.len() as u64);
    assert_eq!(stats.shards[1].admitted_local, 0);
    assert_eq!(stats.shards[1].admitted, other.len() as u64);
    assert!(stats.is_quiet());
}

on_each_runtime!(off_a_shard_submit_local_takes_the_ordinary_path);
fn off_a_shard_submit_local_takes_the_ordinary_path(runtime: Runtime) {
    let engine = engine(runtime, 1);
    assert_eq!(
        futures::executor::block_on(engine.submit_local(2, 40)),
        Ok(42)
    );
    assert_eq!(engine.stats().total().admitted_local, 0);
}

on_each_runtime!(a_local_submit_after_close_is_refused_with_its_input);
fn a_local_submit_after_close_is_refused_with_its_input(runtime: Runtime) {
    let engine = engine(runtime, 1);
    let (done, outcome) = oneshot::channel();
    let on_shard = engine.clone();
    engine
        .spawn_on(ShardId::new(0), move || async move {
            let before = on_shard.submit_local(1, 4);
            on_shard.close();
            // Refused at once: ready without the shard loop running again.
            let after = on_shard.submit_local(1, 5).await;
            let _ = done.send(after);
            // The shard may exit (dropping this task) once `before` is
            // answered, so its outcome is checked through the stats.
            drop(before);
        })
        .unwrap();
    let after = futures::executor::block_on(outcome).expect("the task ran");
    match after {
        Err(FerryError::Refused {
            input: 5,
            reason: Refused::Closed,
        }) => {}
        other => panic!("{other:?}"),
    }
    engine.join();
    let stats = engine.stats().total();
    assert_eq!(
        (stats.admitted_local, stats.answered, stats.refused),
        (1, 1, 1)
    );
    assert_eq!(
        engine.spawn_on(ShardId::new(0), || async {}),
        Err(Refused::Closed)
    );
}

on_each_runtime!(a_panicking_task_ends_alone);
fn a_panicking_task_ends_alone(runtime: Runtime) {
    let engine = engine(runtime, 1);
    engine
        .spawn_on(ShardId::new(0), || async {
            panic!("a task panicked on purpose")
        })
        .unwrap();
    assert_eq!(engine.submit_blocking(1, 1), Ok(2));
}

on_each_runtime!(a_batch_function_may_submit_to_its_own_shard);
/// A batch function that submits to its own shard, both when it is called
/// and while its future runs: the local admissions are stamped with the
/// shard's clock as they happen, and the shard goes on handing its queue a
/// time that never goes backwards (debug builds assert it in `Lanes`).
fn a_batch_function_may_submit_to_its_own_shard(runtime: Runtime) {
    type Chained = Engine<u64, u64, u64, String>;
    let handle: Arc<OnceLock<Chained>> = Arc::new(OnceLock::new());
    let in_batch = Arc::clone(&handle);
    let engine: Chained = Engine::builder()
        .runtime(runtime)
        .shards(1)
        .pin(false)
        .max_batch_size(4)
        .max_batch_delay(Duration::from_micros(200))
        .start(move |_| {
            let handle = Arc::clone(&in_batch);
            move |key: u64, inputs: Vec<u64>| {
                let engine = handle.get().expect("set before the first submit").clone();
                // Key 0 forwards each input to key 1 while being called.
                let forwarded: Vec<_> = if key == 0 {
                    inputs.iter().map(|&i| engine.submit_local(1, i)).collect()
                } else {
                    Vec::new()
                };
                async move {
                    let mut outputs = Vec::with_capacity(inputs.len());
                    for (n, forwarded) in forwarded.into_iter().enumerate() {
                        // And again while its future runs, to key 2.
                        let again = engine
                            .submit_local(2, inputs[n])
                            .await
                            .map_err(|err| err.to_string())?;
                        outputs.push(forwarded.await.map_err(|err| err.to_string())? + again);
                    }
                    if key != 0 {
                        outputs.extend(inputs.iter().map(|i| i * 10));
                    }
                    Ok::<_, String>(outputs)
                }
            }
        })
        .map_err(|err| err.to_string())
        .and_then(|engine| {
            handle
                .set(engine.clone())
                .map_err(|_| "set twice".to_string())?;
            Ok(engine)
        })
        .unwrap();
    let answers: Vec<_> = (1..=20).map(|i| engine.submit(0, i)).collect();
    for (i, answer) in (1..=20).zip(answers) {
        let out = futures::executor::block_on(answer);
        assert_eq!(out.map_err(|err| err.to_string()), Ok(20 * i), "input {i}");
    }
    let total = engine.stats().total();
    assert_eq!(
        total.admitted_local, 40,
        "every forwarded input went directly"
    );
    // The engine holds itself through the batch function's handle: close
    // it explicitly.
    engine.close();
}
