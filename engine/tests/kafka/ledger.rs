//! The store the Kafka tests apply records to: in memory, one log per key
//! of the sequence numbers applied, written the way a real store would be
//! with a condition on the key's last applied offset: a record at or below
//! it is refused as stale (counted, not applied). Records whose value says
//! so fail: `poison` always, `flaky` on its first attempt; `heavy` ones
//! weigh more than a batch may carry, so the engine refuses them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry::kafka::Record;
use ferry::Engine;

/// A record's input: where it came from and what it carries.
#[derive(Clone, Debug)]
pub struct Input {
    pub offset: i64,
    /// The record's number among its key's records, from 0.
    pub seq: u64,
    pub kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Plain,
    /// Fails on its first attempt, then applies.
    Flaky,
    /// Always fails.
    Poison,
    /// Weighs more than a batch may carry: always refused.
    Heavy,
}

/// Key and input of a record whose value is `seq` or `seq:flaky`,
/// `seq:poison`, `seq:heavy`.
pub fn decode(record: &Record) -> Result<(String, Input), String> {
    let key = record
        .key_str()
        .ok_or("a record without a UTF-8 key")?
        .to_owned();
    let value = record
        .payload_str()
        .ok_or("a record without a UTF-8 value")?;
    let (seq, kind) = match value.split_once(':') {
        None => (value, Kind::Plain),
        Some((seq, "flaky")) => (seq, Kind::Flaky),
        Some((seq, "poison")) => (seq, Kind::Poison),
        Some((seq, "heavy")) => (seq, Kind::Heavy),
        Some((_, other)) => return Err(format!("unknown kind {other:?}")),
    };
    let seq = seq
        .parse()
        .map_err(|err| format!("sequence {seq:?}: {err}"))?;
    Ok((
        key,
        Input {
            offset: record.offset,
            seq,
            kind,
        },
    ))
}

/// `keys` keys of `per_key` records each, interleaved: key `{prefix}{k}`,
/// values `0`, `1`, ...
pub fn records(prefix: &str, keys: usize, per_key: u64) -> Vec<(String, String)> {
    (0..per_key)
        .flat_map(|seq| (0..keys).map(move |k| (format!("{prefix}{k}"), seq.to_string())))
        .collect()
}

#[derive(Default)]
struct KeyLog {
    /// Sequence numbers applied, in the order applied.
    applied: Vec<u64>,
    last_offset: Option<i64>,
}

/// The store.
#[derive(Default)]
pub struct Ledger {
    keys: Mutex<HashMap<String, KeyLog>>,
    /// Attempts per (key, offset) of the records that fail.
    attempts: Mutex<HashMap<(String, i64), u32>>,
    applied: AtomicU64,
    stale: AtomicU64,
}

impl Ledger {
    /// Applies one key's batch in one step (as one conditional write would):
    /// all of it, or, if a record in it fails, none of it.
    pub fn apply(&self, key: &str, inputs: &[Input]) -> Result<Vec<()>, String> {
        for input in inputs {
            let attempt = {
                let mut attempts = self.attempts.lock().unwrap();
                let attempt = attempts.entry((key.to_owned(), input.offset)).or_insert(0);
                *attempt += 1;
                *attempt
            };
            match input.kind {
                Kind::Poison => return Err(format!("{key}@{}: poison", input.offset)),
                Kind::Flaky if attempt == 1 => {
                    return Err(format!("{key}@{}: flaky, first attempt", input.offset))
                }
                _ => {}
            }
        }
        let mut keys = self.keys.lock().unwrap();
        let log = keys.entry(key.to_owned()).or_default();
        for input in inputs {
            if log.last_offset.is_some_and(|last| input.offset <= last) {
                self.stale.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            log.last_offset = Some(input.offset);
            log.applied.push(input.seq);
            self.applied.fetch_add(1, Ordering::Relaxed);
        }
        Ok(vec![(); inputs.len()])
    }

    /// Records applied so far.
    pub fn applied(&self) -> u64 {
        self.applied.load(Ordering::Relaxed)
    }

    /// Writes refused because their offset was at or below the key's last.
    pub fn stale(&self) -> u64 {
        self.stale.load(Ordering::Relaxed)
    }

    /// How often the record at `offset` of `key` was attempted.
    pub fn attempts(&self, key: &str, offset: i64) -> u32 {
        let attempts = self.attempts.lock().unwrap();
        attempts
            .get(&(key.to_owned(), offset))
            .copied()
            .unwrap_or(0)
    }

    /// The sequence numbers applied per key, in the order applied.
    pub fn logs(&self) -> BTreeMap<String, Vec<u64>> {
        let keys = self.keys.lock().unwrap();
        keys.iter()
            .map(|(key, log)| (key.clone(), log.applied.clone()))
            .collect()
    }

    /// Every key of `expected` (key, records) has exactly its records
    /// applied, each once, in order; no other key has any.
    pub fn assert_each_applied_once_in_order(&self, expected: &BTreeMap<String, u64>) {
        let logs = self.logs();
        for (key, count) in expected {
            let applied = logs.get(key).map(Vec::as_slice).unwrap_or_default();
            let wanted: Vec<u64> = (0..*count).collect();
            assert_eq!(applied, wanted, "key {key}: applied in this order");
        }
        let unexpected: Vec<&String> = logs
            .keys()
            .filter(|key| !expected.contains_key(*key))
            .collect();
        assert!(
            unexpected.is_empty(),
            "keys applied that should not be: {unexpected:?}"
        );
    }
}

/// Keys and their record counts, from the records produced.
pub fn counts(records: &[(String, String)]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for (key, _) in records {
        *counts.entry(key.clone()).or_insert(0) += 1;
    }
    counts
}

/// An engine writing to `ledger`, each batch taking `batch_time` (a store's
/// round trip, so that records are in flight when a rebalance comes).
pub fn engine(ledger: &Arc<Ledger>, batch_time: Duration) -> Engine<String, Input, (), String> {
    engine_intake(ledger, batch_time, 65_536)
}

/// As [`engine`], each shard's intake queue holding `intake` inputs: past
/// it, a submission is refused `Full` at once, on the caller's thread.
pub fn engine_intake(
    ledger: &Arc<Ledger>,
    batch_time: Duration,
    intake: usize,
) -> Engine<String, Input, (), String> {
    let ledger = ledger.clone();
    Engine::builder()
        .shards(2)
        .pin(false)
        .intake_capacity(intake)
        .max_batch_size(16)
        .weigh(|input: &Input| if input.kind == Kind::Heavy { 1_000 } else { 1 })
        .max_batch_weight(100)
        .start(move |_shard| {
            let ledger = ledger.clone();
            move |key: String, inputs: Vec<Input>| {
                let ledger = ledger.clone();
                async move {
                    if !batch_time.is_zero() {
                        std::thread::sleep(batch_time);
                    }
                    ledger.apply(&key, &inputs)
                }
            }
        })
        .expect("the engine starts")
}
