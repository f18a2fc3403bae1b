//! What the engine tells a newcomer, asserted on its key words: a `cpus`
//! list that names a CPU outside the process's set says so even when its
//! length is wrong too; `stats()` tells a shard that ended after `close`
//! (`stopped`) from one that died (`died` as well); `WrongOutputCount`
//! says whose batch it was.

use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use ferry::{Engine, FerryError, Runtime, StartError};
use ferry_shard::usable_cpus;

mod support;
use support::on_each_runtime;

async fn echo(_key: u64, inputs: Vec<u64>) -> Result<Vec<u64>, String> {
    Ok(inputs)
}

/// A CPU this process may not use (far beyond any machine's).
const NO_SUCH_CPU: usize = 99_999;

fn cpus_refusal(shards: Option<usize>, cpus: Vec<usize>) -> String {
    let builder = Engine::<u64, u64, u64, String>::builder();
    let builder = match shards {
        Some(shards) => builder.shards(shards),
        None => builder,
    };
    match builder.cpus(cpus).start(|_| echo) {
        Err(StartError::Config(err)) => {
            assert_eq!(err.field, "cpus");
            err.to_string()
        }
        other => panic!("refused, not {other:?}"),
    }
}

#[test]
fn a_cpu_outside_the_set_is_named_even_when_the_count_is_wrong_too() {
    let usable = usable_cpus();
    let message = cpus_refusal(None, vec![NO_SUCH_CPU]);
    for needle in [format!("CPU {NO_SUCH_CPU}"), format!("{usable:?}")] {
        assert!(message.contains(&needle), "{needle} in: {message}");
    }
    if ferry::default_shards() != 1 {
        // The default count (one shard per usable CPU) is more than one:
        // the list is short as well, and the message says where the count
        // came from.
        for needle in ["one CPU per shard", "is the default", "shards(n)"] {
            assert!(message.contains(needle), "{needle} in: {message}");
        }
    }
}

#[test]
fn a_short_cpu_list_names_its_cpus_and_the_shards() {
    let first = usable_cpus()[0];
    let message = cpus_refusal(Some(2), vec![first]);
    for needle in [
        "must name exactly one CPU per shard".to_string(),
        format!("CPU {first} for 2 shards"),
    ] {
        assert!(message.contains(&needle), "{needle} in: {message}");
    }
    assert!(!message.contains("default"), "2 was asked for: {message}");
}

/// Waits for `reached`, failing after ten seconds.
fn eventually(what: &str, reached: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !reached() {
        assert!(Instant::now() < deadline, "waited for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

on_each_runtime!(a_shard_closed_as_asked_is_stopped_but_not_died);
fn a_shard_closed_as_asked_is_stopped_but_not_died(runtime: Runtime) {
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .shards(2)
        .pin(false)
        .runtime(runtime)
        .start(|_| echo)
        .unwrap_or_else(|err| panic!("on {runtime}: {err}"));
    assert_eq!(engine.submit_blocking(1, 1), Ok(1));
    engine.close();
    engine.join();
    let total = engine.stats().total();
    assert_eq!((total.stopped, total.died), (2, 0), "on {runtime}");
}

/// The key whose comparison panics.
const FATAL: u64 = 13;

/// Every key has one hash, so each is compared with the lanes before it;
/// comparing key `FATAL` panics, on the shard's thread, outside a batch.
#[derive(Clone, Debug)]
struct FragileKey(u64);

impl Hash for FragileKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        0_u64.hash(state);
    }
}

impl PartialEq for FragileKey {
    fn eq(&self, other: &Self) -> bool {
        assert!(self.0 != FATAL && other.0 != FATAL, "key {FATAL} compared");
        self.0 == other.0
    }
}

impl Eq for FragileKey {}

on_each_runtime!(a_shard_whose_thread_dies_is_counted_died);
fn a_shard_whose_thread_dies_is_counted_died(runtime: Runtime) {
    let engine: Engine<FragileKey, u64, u64, String> = Engine::builder()
        .shards(1)
        .pin(false)
        .runtime(runtime)
        .start(|_| {
            |_key: FragileKey, inputs: Vec<u64>| async move {
                // Holds the first key's lane while the fatal key arrives.
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok::<_, String>(inputs)
            }
        })
        .unwrap_or_else(|err| panic!("on {runtime}: {err}"));
    let held = engine.submit(FragileKey(1), 1);
    let shard = || engine.stats().shards[0];
    eventually("the first batch", || shard().in_flight == 1);
    let fatal = engine.submit(FragileKey(FATAL), 2);
    eventually("the shard's death", || shard().died == 1);
    assert_eq!(
        shard().stopped,
        1,
        "on {runtime}: a dead shard is stopped too"
    );
    let outcomes = futures::executor::block_on(futures::future::join(held, fatal));
    assert_eq!(outcomes.0, Err(FerryError::Aborted), "on {runtime}");
    assert!(outcomes.1.is_err(), "on {runtime}");
}

#[test]
fn wrong_output_count_says_it_is_the_callers_own_keys_batch() {
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .shards(1)
        .pin(false)
        .start(|_| |_key: u64, _inputs: Vec<u64>| async move { Ok::<_, String>(vec![]) })
        .expect("starts");
    let err = engine.submit_blocking(5, 1).unwrap_err();
    assert_eq!(
        err,
        FerryError::WrongOutputCount {
            expected: 1,
            got: 0
        }
    );
    let message = err.to_string();
    for needle in [
        "0 outputs where 1 were due",
        "this key's batch",
        "every caller",
    ] {
        assert!(message.contains(needle), "{needle} in: {message}");
    }
}
