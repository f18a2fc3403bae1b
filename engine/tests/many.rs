//! `submit_many`: many inputs passed in one push per shard, each still
//! answered, bounded and refused on its own
//! (docs/guarantees.md#flush-overload-and-withdrawal).

mod support;

use ferry::{Batcher, Engine, FerryError, Refused, Runtime};
use futures::executor::block_on;
use futures::StreamExt;
use support::on_each_runtime;

type Outcome = Result<u64, FerryError<u64, String>>;

/// An engine whose batch function answers `input + key`; inputs above 100
/// weigh 1,000, more than a batch may carry.
fn engine(runtime: Runtime, shards: usize, intake: usize) -> Engine<u64, u64, u64, String> {
    Engine::builder()
        .runtime(runtime)
        .shards(shards)
        .pin(false)
        .intake_capacity(intake)
        .max_batch_weight(100)
        .weigh(|input: &u64| if *input > 100 { 1_000 } else { 1 })
        .start(|_| {
            |key: u64, inputs: Vec<u64>| async move {
                Ok::<_, String>(inputs.iter().map(|i| i + key).collect())
            }
        })
        .unwrap()
}

fn outcomes(outcomes: ferry::Outcomes<u64, u64, String>) -> Vec<Outcome> {
    block_on(outcomes.all())
}

on_each_runtime!(every_input_is_answered_in_the_order_given);
fn every_input_is_answered_in_the_order_given(runtime: Runtime) {
    let engine = engine(runtime, 2, 65_536);
    let items: Vec<(u64, u64)> = (0..1_000).map(|i| (i % 37, i % 100)).collect();
    let answered = outcomes(engine.submit_many(items.clone()));
    let expected: Vec<Outcome> = items.iter().map(|(key, input)| Ok(input + key)).collect();
    assert_eq!(answered, expected);
    engine.close();
    engine.join();
    let total = engine.stats().total();
    assert_eq!(
        (total.admitted, total.answered, total.refused),
        (1_000, 1_000, 0)
    );
}

on_each_runtime!(an_input_no_batch_could_carry_is_refused_alone);
fn an_input_no_batch_could_carry_is_refused_alone(runtime: Runtime) {
    let engine = engine(runtime, 2, 65_536);
    let answered = outcomes(engine.submit_many([(1, 5), (2, 500), (3, 7)]));
    match &answered[..] {
        [Ok(6), Err(FerryError::Refused {
            input: 500,
            reason: Refused::TooHeavy,
        }), Ok(10)] => {}
        other => panic!("{other:?}"),
    }
}

on_each_runtime!(a_share_the_intake_cannot_take_whole_is_refused_full_each_input_back);
fn a_share_the_intake_cannot_take_whole_is_refused_full_each_input_back(runtime: Runtime) {
    let engine = engine(runtime, 1, 4);
    let answered = outcomes(engine.submit_many((0..10).map(|i| (1, i))));
    for (i, outcome) in answered.into_iter().enumerate() {
        match outcome {
            Err(FerryError::Refused {
                input,
                reason: Refused::Full,
            }) => assert_eq!(input, i as u64),
            other => panic!("input {i}: {other:?}"),
        }
    }
    // A share that fits goes through.
    let fits = outcomes(engine.submit_many((0..4).map(|i| (1, i))));
    assert_eq!(fits, vec![Ok(1), Ok(2), Ok(3), Ok(4)]);
    assert_eq!(engine.stats().total().refused, 10);
}

on_each_runtime!(after_close_every_input_comes_back_closed);
fn after_close_every_input_comes_back_closed(runtime: Runtime) {
    let engine = engine(runtime, 2, 65_536);
    engine.close();
    let answered = outcomes(engine.submit_many((0..6).map(|i| (i, i))));
    for (i, outcome) in answered.into_iter().enumerate() {
        match outcome {
            Err(FerryError::Refused {
                input,
                reason: Refused::Closed,
            }) => assert_eq!(input, i as u64),
            other => panic!("input {i}: {other:?}"),
        }
    }
    engine.join();
}

on_each_runtime!(a_batcher_hands_many_over_at_once);
fn a_batcher_hands_many_over_at_once(runtime: Runtime) {
    let batcher: Batcher<u64, u64, String> = Batcher::builder()
        .runtime(runtime)
        .shards(2)
        .pin(false)
        .max_batch_size(16)
        .start(|_| |inputs: Vec<u64>| async move { Ok::<_, String>(inputs) })
        .unwrap();
    let answered = block_on(batcher.submit_many(0..300).all());
    assert_eq!(answered, (0..300).map(Ok).collect::<Vec<_>>());
    batcher.close();
    batcher.join();
    let total = batcher.stats().total();
    assert_eq!(
        (total.admitted, total.sent, total.answered),
        (300, 300, 300)
    );
    assert!(
        total.batches < 300,
        "inputs handed over together batch together"
    );
}

on_each_runtime!(the_stream_yields_each_input_once_as_it_is_answered);
fn the_stream_yields_each_input_once_as_it_is_answered(runtime: Runtime) {
    let engine = engine(runtime, 2, 65_536);
    let items: Vec<(u64, u64)> = (0..2_000).map(|i| (i % 101, i % 100)).collect();
    let mut outcomes = engine.submit_many(items.clone());
    assert_eq!(outcomes.len(), 2_000);
    let mut seen = vec![false; items.len()];
    block_on(async {
        while let Some((index, outcome)) = outcomes.next().await {
            let (key, input) = items[index];
            assert_eq!(outcome, Ok(input + key), "input {index}");
            assert!(
                !std::mem::replace(&mut seen[index], true),
                "input {index} twice"
            );
        }
    });
    assert!(seen.iter().all(|&s| s), "every input comes out");
    assert!(outcomes.is_empty());
    assert_eq!(block_on(outcomes.next()), None, "and then the stream ends");
}

on_each_runtime!(refusals_come_out_in_their_place_among_the_answers);
fn refusals_come_out_in_their_place_among_the_answers(runtime: Runtime) {
    let engine = engine(runtime, 2, 65_536);
    let mut outcomes = engine.submit_many([(1, 500), (2, 3)]);
    let mut got: Vec<(usize, Outcome)> = block_on((&mut outcomes).collect());
    got.sort_by_key(|(index, _)| *index);
    let refused = Err(FerryError::Refused {
        input: 500,
        reason: Refused::TooHeavy,
    });
    assert_eq!(got, vec![(0, refused), (1, Ok(5))]);
}

on_each_runtime!(a_call_is_read_from_a_task_on_a_multi_threaded_runtime);
fn a_call_is_read_from_a_task_on_a_multi_threaded_runtime(runtime: Runtime) {
    let engine = engine(runtime, 2, 65_536);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    // `Outcomes` is `Send`: the call is made here and read on any worker.
    let outcomes = engine.submit_many((0..200).map(|i| (i % 11, i % 50)));
    let all = tokio.block_on(async { tokio::spawn(outcomes.all()).await.unwrap() });
    let expected: Vec<Outcome> = (0..200).map(|i| Ok(i % 50 + i % 11)).collect();
    assert_eq!(all, expected);
}

on_each_runtime!(a_task_on_a_shard_reads_its_own_call);
/// A task on a shard makes a call whose inputs go to its own shard and to
/// the other, and reads every outcome: the shard wakes it through the
/// call's cell, on its own thread.
fn a_task_on_a_shard_reads_its_own_call(runtime: Runtime) {
    let engine = engine(runtime, 2, 65_536);
    let items: Vec<(u64, u64)> = (0..500).map(|i| (i % 41, i % 100)).collect();
    let expected: Vec<Outcome> = items.iter().map(|(key, input)| Ok(input + key)).collect();
    let (done, answered) = futures::channel::oneshot::channel();
    let on_shard = engine.clone();
    engine
        .spawn_on(ferry::ShardId::new(0), move || async move {
            let mut seen = Vec::new();
            for _ in 0..20 {
                seen.push(on_shard.submit_many(items.clone()).all().await);
            }
            let _ = done.send(seen);
        })
        .unwrap();
    let seen = block_on(answered).unwrap();
    assert_eq!(seen.len(), 20);
    assert!(seen.iter().all(|call| *call == expected));
    engine.close();
    engine.join();
}
