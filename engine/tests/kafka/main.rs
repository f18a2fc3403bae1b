//! `ferry::kafka` against a real Apache Kafka broker (one KRaft node on
//! 127.0.0.1, started by these tests: `broker.rs`), applying keyed records
//! to an in-memory store that checks each key's order (`ledger.rs`).
//!
//! Needs the broker's jars: `.ci/kafka-jars` fetches them (Maven Central),
//! and Java 17 or later. Run with `cargo test -p ferry-engine --features
//! kafka --test kafka`.

mod broker;
mod ledger;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry::kafka::{Consumer, ConsumerBuilder, Error, Failure, OnFailure, Progress, Record};
use ferry::{Engine, FerryError};

use broker::Broker;
use ledger::{Input, Ledger};

/// How long a test waits for what it expects before failing.
const WITHIN: Duration = Duration::from_secs(120);

/// A consumer of `topic` in `group` feeding `engine`, as every test starts
/// it: from the earliest record, committing often, short sessions.
fn consumer(
    broker: &Broker,
    engine: Engine<String, Input, (), String>,
    group: &str,
    topic: &str,
) -> ConsumerBuilder<String, Input, (), String> {
    configured(
        Consumer::builder(engine, ledger::decode),
        broker,
        group,
        topic,
    )
}

/// The settings every test's consumer has.
fn configured(
    builder: ConsumerBuilder<String, Input, (), String>,
    broker: &Broker,
    group: &str,
    topic: &str,
) -> ConsumerBuilder<String, Input, (), String> {
    builder
        .bootstrap_servers(&broker.bootstrap)
        .group_id(group)
        .topic(topic)
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "10000")
        .set("heartbeat.interval.ms", "500")
        .commit_interval(Duration::from_millis(100))
}

/// Waits until `records` records are applied and `topic`'s commits in
/// `group` reach its end, then closes `consumer`; its progress then.
fn drain(
    broker: &Broker,
    ledger: &Ledger,
    consumer: Consumer,
    (group, topic, partitions): (&str, &str, i32),
    records: usize,
) -> Progress {
    wait_until(
        "every record applied",
        || ledger.applied() == records as u64,
        || format!("{} applied; {:?}", ledger.applied(), consumer.progress()),
    );
    wait_for_commits(broker, group, topic, &ends(broker, topic, partitions));
    let progress = consumer.progress();
    consumer.close().expect("the consumer closes cleanly");
    progress
}

/// Waits until `done` holds, failing with `what` and the state it shows.
fn wait_until(what: &str, mut done: impl FnMut() -> bool, state: impl Fn() -> String) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < WITHIN,
            "not {what} within {WITHIN:?}: {}",
            state()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `group`'s commits, read back from the broker, reach
/// `expected` for each partition.
fn wait_for_commits(broker: &Broker, group: &str, topic: &str, expected: &[Option<i64>]) {
    let partitions = expected.len() as i32;
    let started = Instant::now();
    loop {
        let last = broker.committed(group, topic, partitions);
        if last == expected {
            return;
        }
        assert!(
            started.elapsed() < WITHIN,
            "{group}'s commits on {topic} are {last:?}, not {expected:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn ends(broker: &Broker, topic: &str, partitions: i32) -> Vec<Option<i64>> {
    broker
        .end_offsets(topic, partitions)
        .into_iter()
        .map(Some)
        .collect()
}

/// Inputs admitted to the engine and not yet answered, over its shards.
fn in_engine(engine: &Engine<String, Input, (), String>) -> u64 {
    let total = engine.stats().total();
    total.admitted - total.answered
}

#[test]
fn every_record_is_applied_once_in_order_and_commits_reach_the_end() {
    let broker = broker::shared();
    let (topic, group, partitions) = ("applied-once", "applied-once-group", 4);
    broker.create_topic(topic, partitions);
    let records = ledger::records("account-", 40, 50);
    broker.produce(topic, &records);

    let ledger = Arc::new(Ledger::default());
    let engine = ledger::engine(&ledger, Duration::from_micros(300));
    let bound = 25;
    // The assignment hook runs before any record of its partitions is
    // decoded (and so submitted).
    let hooked = Arc::new(Mutex::new(BTreeSet::new()));
    let (assigned, seen) = (hooked.clone(), hooked.clone());
    let before_hook = Arc::new(AtomicU64::new(0));
    let early = before_hook.clone();
    let decode = move |record: &Record| {
        if !seen.lock().unwrap().contains(&record.partition) {
            early.fetch_add(1, Ordering::Relaxed);
        }
        ledger::decode(record)
    };
    let consumer = configured(
        Consumer::builder(engine.clone(), decode),
        broker,
        group,
        topic,
    )
    .max_unanswered_per_partition(bound)
    .on_assign(move |partitions| {
        let mut assigned = assigned.lock().unwrap();
        assigned.extend(partitions.iter().map(|p| p.partition));
        Ok(())
    })
    .start()
    .expect("the consumer starts");

    // The bound holds all along: never more records in the engine than
    // the partitions' bounds together.
    let mut most_in_engine = 0;
    wait_until(
        "every record applied",
        || {
            most_in_engine = most_in_engine.max(in_engine(&engine));
            ledger.applied() == records.len() as u64
        },
        || format!("{} applied; {:?}", ledger.applied(), consumer.progress()),
    );
    assert!(
        most_in_engine <= (bound * partitions as usize) as u64,
        "{most_in_engine} records in the engine at once, over {partitions} partitions' bound of {bound}"
    );
    wait_for_commits(broker, group, topic, &ends(broker, topic, partitions));

    let progress = consumer.progress();
    consumer.close().expect("the consumer closes cleanly");
    assert_eq!(progress.submitted, records.len() as u64, "{progress:?}");
    assert_eq!(progress.answered, records.len() as u64, "{progress:?}");
    assert_eq!(progress.unanswered(), 0, "{progress:?}");
    assert_eq!(
        progress.partitions.len(),
        partitions as usize,
        "one member has them all"
    );
    assert_eq!(
        *hooked.lock().unwrap(),
        (0..partitions).collect(),
        "each partition hooked"
    );
    assert_eq!(
        before_hook.load(Ordering::Relaxed),
        0,
        "records decoded before their hook"
    );
    ledger.assert_each_applied_once_in_order(&ledger::counts(&records));
    assert_eq!(ledger.stale(), 0, "no record was read twice");
    wait_for_commits(broker, group, topic, &ends(broker, topic, partitions));
}

#[test]
fn a_partition_the_engine_refuses_is_paused_and_loses_nothing() {
    let broker = broker::shared();
    let (topic, group, partitions) = ("refused", "refused-group", 3);
    broker.create_topic(topic, partitions);
    let records = ledger::records("meter-", 30, 40);
    broker.produce(topic, &records);

    // Each shard's intake queue holds 8 inputs, far fewer than the
    // consumer submits while a batch keeps the shard busy: the engine
    // refuses, again and again.
    let ledger = Arc::new(Ledger::default());
    let engine = ledger::engine_intake(&ledger, Duration::from_millis(1), 8);
    let consumer = consumer(broker, engine, group, topic)
        .start()
        .expect("the consumer starts");
    let progress = drain(
        broker,
        &ledger,
        consumer,
        (group, topic, partitions),
        records.len(),
    );

    assert!(
        progress.refused > 0,
        "the engine never refused: {progress:?}"
    );
    assert_eq!(
        progress.refused_by_shard, 0,
        "refused at once, never after admission"
    );
    assert_eq!(progress.answered, records.len() as u64, "{progress:?}");
    assert_eq!(
        progress.submitted,
        records.len() as u64,
        "a refused record is not counted as submitted: {progress:?}"
    );
    ledger.assert_each_applied_once_in_order(&ledger::counts(&records));
    assert_eq!(ledger.stale(), 0);
}

#[test]
fn a_member_joining_then_leaving_loses_nothing_and_keeps_each_key_in_order() {
    let broker = broker::shared();
    let (topic, group, partitions) = ("handover", "handover-group", 6);
    broker.create_topic(topic, partitions);
    let records = ledger::records("stream-", 60, 100);
    broker.produce(topic, &records);
    let total = records.len() as u64;

    // One store, two members, each with its own engine (two instances of
    // a service); a batch takes 10 ms, so records are in flight when the
    // partitions move. The first member commits only when partitions are
    // taken from it: whatever the second reads is what that commit said.
    let ledger = Arc::new(Ledger::default());
    let batch_time = Duration::from_millis(10);
    let first = consumer(broker, ledger::engine(&ledger, batch_time), group, topic)
        .max_unanswered_per_partition(50)
        .commit_interval(Duration::from_secs(600))
        .start()
        .expect("the first member starts");
    wait_until(
        "a quarter applied by the first member",
        || ledger.applied() >= total / 4,
        || format!("{} applied; {:?}", ledger.applied(), first.progress()),
    );

    let second = consumer(broker, ledger::engine(&ledger, batch_time), group, topic)
        .max_unanswered_per_partition(50)
        .start()
        .expect("the second member starts");
    wait_until(
        "the partitions shared between the members",
        || !second.progress().partitions.is_empty() && first.progress().revoked > 0,
        || {
            format!(
                "first {:?}; second {:?}",
                first.progress(),
                second.progress()
            )
        },
    );
    let shared = (first.progress(), second.progress());
    assert_eq!(
        shared.0.partitions.len() + shared.1.partitions.len(),
        partitions as usize,
        "every partition has one owner: {shared:?}"
    );
    let applied_when_shared = ledger.applied();
    assert!(
        applied_when_shared < total,
        "the handover came too late to test anything"
    );

    wait_until(
        "more applied while shared",
        || ledger.applied() >= applied_when_shared + total / 8 || ledger.applied() == total,
        || format!("{} applied", ledger.applied()),
    );
    first.close().expect("the first member leaves cleanly");
    wait_until(
        "every record applied",
        || ledger.applied() == total,
        || {
            format!(
                "{} applied; second {:?}",
                ledger.applied(),
                second.progress()
            )
        },
    );
    wait_for_commits(broker, group, topic, &ends(broker, topic, partitions));

    let progress = second.progress();
    assert_eq!(
        progress.partitions.len(),
        partitions as usize,
        "the second member took them all"
    );
    assert!(
        progress.assigned >= 2,
        "assigned on joining, then on the first leaving: {progress:?}"
    );
    second.close().expect("the second member leaves cleanly");
    ledger.assert_each_applied_once_in_order(&ledger::counts(&records));
    assert_eq!(
        ledger.stale(),
        0,
        "a handover that drains and commits reads nothing twice"
    );
}

#[test]
fn failed_records_are_retried_or_dead_lettered_never_skipped() {
    let broker = broker::shared();
    let (topic, group, partitions) = ("failures", "failures-group", 2);
    broker.create_topic(topic, partitions);
    let mut records = ledger::records("plain-", 20, 20);
    let flaky: Vec<(String, String)> = (0..5)
        .map(|i| (format!("flaky-{i}"), "0:flaky".to_owned()))
        .collect();
    let poison: Vec<(String, String)> = (0..3)
        .map(|i| (format!("poison-{i}"), "0:poison".to_owned()))
        .collect();
    // Refused by the engine every time, and not decodable at all: given
    // up at once.
    let heavy = ("heavy-0".to_owned(), "0:heavy".to_owned());
    let undecodable = ("bogus-0".to_owned(), "0:bogus".to_owned());
    records.extend(flaky.iter().cloned());
    records.extend(poison.iter().cloned());
    records.extend([heavy.clone(), undecodable.clone()]);
    broker.produce(topic, &records);

    let ledger = Arc::new(Ledger::default());
    let dead_letters = Arc::new(Mutex::new(Vec::new()));
    let kept = dead_letters.clone();
    let consumer = consumer(
        broker,
        ledger::engine(&ledger, Duration::ZERO),
        group,
        topic,
    )
    .on_failure(move |failed| match failed.failure {
        Failure::Answered(FerryError::Failed(_)) if failed.attempt < 3 => OnFailure::Retry,
        failure => {
            let record = failed.record;
            let key = record.key_str().unwrap_or_default().to_owned();
            kept.lock()
                .unwrap()
                .push((key, record.offset, failed.attempt, failure.to_string()));
            OnFailure::DeadLetter
        }
    })
    .start()
    .expect("the consumer starts");

    let given_up = poison.len() + 2;
    let applicable = (records.len() - given_up) as u64;
    wait_until(
        "every applicable record applied, every other dead-lettered",
        || ledger.applied() == applicable && dead_letters.lock().unwrap().len() == given_up,
        || format!("{} applied; {:?}", ledger.applied(), consumer.progress()),
    );
    wait_for_commits(broker, group, topic, &ends(broker, topic, partitions));
    let progress: Progress = consumer.progress();
    consumer.close().expect("the consumer closes cleanly");

    let mut expected = ledger::counts(&records);
    for (key, _) in poison.iter().chain([&heavy, &undecodable]) {
        expected.remove(key);
    }
    ledger.assert_each_applied_once_in_order(&expected);
    for (key, _) in &flaky {
        let offset = offset_of(&ledger, key);
        assert_eq!(
            ledger.attempts(key, offset),
            2,
            "{key}: failed once, retried once"
        );
    }
    let dead: BTreeMap<String, (u32, String)> = dead_letters
        .lock()
        .unwrap()
        .iter()
        .map(|(key, _, attempt, failure)| (key.clone(), (*attempt, failure.clone())))
        .collect();
    assert_eq!(dead.len(), given_up, "each dead-lettered once: {dead:?}");
    for (key, _) in &poison {
        let (attempt, failure) = &dead[key];
        assert_eq!(*attempt, 3, "{key}: dead-lettered on its third attempt");
        assert!(
            failure.contains("poison"),
            "{key}: the batch's own error is shown: {failure}"
        );
    }
    assert_eq!(
        progress.retried,
        flaky.len() as u64 + 2 * poison.len() as u64,
        "{progress:?}"
    );
    for ((key, _), shown) in [
        (&heavy, "max_batch_weight"),
        (&undecodable, "could not be decoded"),
    ] {
        let (attempt, failure) = &dead[key];
        assert_eq!(*attempt, 1, "{key}: given up on its first attempt");
        assert!(
            failure.contains(shown),
            "{key}: the failure says why: {failure}"
        );
    }
    assert_eq!(progress.dead_lettered, given_up as u64, "{progress:?}");
    assert_eq!(progress.answered, applicable, "{progress:?}");
}

/// A key with records behind its failed one: with one record of a
/// partition in the engine at a time, the failed record is retried before
/// any later record of its key is fed, so the key's records all apply, once
/// and in order (the remedy `OnFailure`'s docs give; with more in the
/// engine, a later record may apply first and the fence then refuses the
/// retried one).
#[test]
fn one_record_per_partition_in_the_engine_retries_a_failed_record_before_its_key_goes_on() {
    let broker = broker::shared();
    let (topic, group, partitions) = ("retry-in-order", "retry-in-order-group", 1);
    broker.create_topic(topic, partitions);
    let (keys, per_key) = (2, 8);
    let flaky_seqs = [2, 5];
    let records: Vec<(String, String)> = ledger::records("hot-", keys, per_key)
        .into_iter()
        .map(|(key, seq)| {
            let flaky = flaky_seqs.iter().any(|flaky| flaky.to_string() == seq);
            let value = if flaky { format!("{seq}:flaky") } else { seq };
            (key, value)
        })
        .collect();
    broker.produce(topic, &records);

    let ledger = Arc::new(Ledger::default());
    let consumer = consumer(
        broker,
        ledger::engine(&ledger, Duration::from_millis(5)),
        group,
        topic,
    )
    .max_unanswered_per_partition(1)
    .on_failure(|failed| match failed.failure {
        Failure::Answered(FerryError::Failed(_)) if failed.attempt < 3 => OnFailure::Retry,
        _ => OnFailure::Stop,
    })
    .start()
    .expect("the consumer starts");
    let progress = drain(
        broker,
        &ledger,
        consumer,
        (group, topic, partitions),
        records.len(),
    );

    ledger.assert_each_applied_once_in_order(&ledger::counts(&records));
    assert_eq!(ledger.stale(), 0, "no retried record refused as stale");
    let flaky = (keys * flaky_seqs.len()) as u64;
    assert_eq!(
        progress.retried, flaky,
        "each flaky record retried once: {progress:?}"
    );
}

/// The offset a key's only record was read at (its attempts are recorded
/// by offset).
fn offset_of(ledger: &Ledger, key: &str) -> i64 {
    (0..100_000)
        .find(|offset| ledger.attempts(key, *offset) > 0)
        .unwrap_or_else(|| panic!("{key} was never attempted"))
}

#[test]
fn a_stopped_partition_is_never_committed_past_its_failed_record() {
    let broker = broker::shared();
    let (topic, group, partitions) = ("stops", "stops-group", 2);
    broker.create_topic(topic, partitions);
    let mut records = ledger::records("plain-", 10, 20);
    let after = records.split_off(100);
    records.push(("poison-0".to_owned(), "0:poison".to_owned()));
    records.extend(after);
    broker.produce(topic, &records);

    // The policy stops the partition on the poison record.
    let ledger = Arc::new(Ledger::default());
    let stopped_on = Arc::new(Mutex::new(None));
    let seen = stopped_on.clone();
    let consumer_a = consumer(
        broker,
        ledger::engine(&ledger, Duration::ZERO),
        group,
        topic,
    )
    .on_failure(move |failed| {
        *seen.lock().unwrap() = Some((failed.record.partition, failed.record.offset));
        OnFailure::Stop
    })
    .start()
    .expect("the consumer starts");
    wait_until(
        "a partition stopped, and its commit at the poison",
        || {
            let progress = consumer_a.progress();
            let Some((partition, offset)) = *stopped_on.lock().unwrap() else {
                return false;
            };
            progress.partitions.iter().any(|(p, figures)| {
                p.partition == partition && figures.stopped && figures.committed == Some(offset)
            })
        },
        || format!("{:?}", consumer_a.progress()),
    );
    let (stopped, poison_offset) = stopped_on.lock().unwrap().expect("seen above");
    let ends_now = ends(broker, topic, partitions);
    let mut expected = ends_now.clone();
    expected[stopped as usize] = Some(poison_offset);
    wait_for_commits(broker, group, topic, &expected);
    consumer_a.close().expect("the consumer closes cleanly");
    // Closing commits nothing past the poison either.
    assert_eq!(broker.committed(group, topic, partitions), expected);

    // Started again with a policy that gives the poison up: the stopped
    // partition is read again from the poison; records after it that the
    // first run applied are refused as stale by the store's condition on
    // the key's last applied offset, never applied twice.
    let dead = Arc::new(Mutex::new(Vec::new()));
    let kept = dead.clone();
    let consumer_b = consumer(
        broker,
        ledger::engine(&ledger, Duration::ZERO),
        group,
        topic,
    )
    .on_failure(move |failed| {
        kept.lock().unwrap().push(failed.record.offset);
        OnFailure::DeadLetter
    })
    .start()
    .expect("the consumer starts again");
    let applicable = records.len() as u64 - 1;
    wait_until(
        "every record but the poison applied",
        || ledger.applied() == applicable && !dead.lock().unwrap().is_empty(),
        || format!("{} applied; {:?}", ledger.applied(), consumer_b.progress()),
    );
    wait_for_commits(broker, group, topic, &ends_now);
    consumer_b.close().expect("the consumer closes cleanly");
    assert_eq!(
        *dead.lock().unwrap(),
        vec![poison_offset],
        "the poison, read again, given up once"
    );
    let mut counts = ledger::counts(&records);
    counts.remove("poison-0");
    ledger.assert_each_applied_once_in_order(&counts);
}

#[test]
fn a_failed_assignment_hook_feeds_nothing_and_stops_the_consumer() {
    let broker = broker::shared();
    let (topic, group, partitions) = ("hook-fails", "hook-fails-group", 2);
    broker.create_topic(topic, partitions);
    let records = ledger::records("device-", 5, 10);
    broker.produce(topic, &records);

    let ledger = Arc::new(Ledger::default());
    let consumer = consumer(
        broker,
        ledger::engine(&ledger, Duration::ZERO),
        group,
        topic,
    )
    .on_assign(|_| Err("the store is unreachable".to_owned()))
    .start()
    .expect("the consumer starts");
    wait_until(
        "the consumer stopped",
        || consumer.is_finished(),
        || format!("{:?}", consumer.progress()),
    );
    match consumer.close() {
        Err(Error::AssignHook {
            partitions: hooked,
            reason,
        }) => {
            assert_eq!(hooked.len(), partitions as usize, "{hooked:?}");
            assert_eq!(reason, "the store is unreachable");
        }
        other => panic!("closed with {other:?}, not the hook's error"),
    }
    assert_eq!(ledger.applied(), 0, "nothing fed");
    assert_eq!(
        broker.committed(group, topic, partitions),
        vec![None; partitions as usize],
        "nothing committed"
    );
}

#[test]
fn an_engine_closed_under_the_consumer_stops_it_with_every_commit_true() {
    let broker = broker::shared();
    let (topic, group, partitions) = ("engine-closed", "engine-closed-group", 2);
    broker.create_topic(topic, partitions);
    let records = ledger::records("sensor-", 20, 40);
    broker.produce(topic, &records);

    let ledger = Arc::new(Ledger::default());
    let engine = ledger::engine(&ledger, Duration::from_millis(2));
    let consumer = consumer(broker, engine.clone(), group, topic)
        .max_unanswered_per_partition(20)
        .start()
        .expect("the consumer starts");
    wait_until(
        "some records applied",
        || ledger.applied() >= 50,
        || format!("{:?}", consumer.progress()),
    );
    engine.close();
    wait_until(
        "the consumer stopped",
        || consumer.is_finished(),
        || format!("{:?}", consumer.progress()),
    );
    let closed = consumer.close();
    assert!(matches!(closed, Err(Error::EngineClosed)), "{closed:?}");

    // Every record admitted was answered before the commits, and none after
    // a refused one was submitted: the commits (offsets from 0, one per
    // record) add up to exactly the records applied.
    let committed: i64 = broker
        .committed(group, topic, partitions)
        .into_iter()
        .map(|offset| offset.unwrap_or(0))
        .sum();
    assert!(
        ledger.applied() < records.len() as u64,
        "closed too late to test anything"
    );
    assert_eq!(
        committed,
        ledger.applied() as i64,
        "committed exactly what was applied"
    );
    // Each key's records applied are its first ones, each once, in order.
    let applied: BTreeMap<String, u64> = ledger
        .logs()
        .into_iter()
        .map(|(key, log)| (key, log.len() as u64))
        .collect();
    ledger.assert_each_applied_once_in_order(&applied);
}
