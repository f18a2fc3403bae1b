//! ferry's member: a [`ferry::kafka::Consumer`] feeding `ferry::entity`'s
//! entities on a [`PostgresStore`] (table `{prefix}_entities`, see
//! [`super::rows`]). The member's own part is the fold ([`apply`]) over a
//! per-key state holding what the verdict needs (a [`KeyRow`]: records
//! applied, the last seq, how many came out of sequence, the last offset);
//! the library batches each key's records (ranked by offset), carries up to
//! 256 keys' batches in one statement, writes each key on the condition
//! that it is still at the version it was folded from, and resolves a write
//! whose reply was lost by reading the key back.
//!
//! **The offset fence** is the fold's: a record at or below the key's
//! `last_offset` is applied already (read again after a crash or a
//! rebalance, from the partition's last commit), so the fold refuses it
//! ([`Refusal::Duplicate`]), the state unchanged; the consumer counts it
//! answered and commits past it. A member that lost a partition and still
//! writes (a zombie) folded from a version the new owner has moved: its
//! write does not land, the library reads the key again and folds again,
//! and its records are then at or below `last_offset`, refused. So every
//! record is applied once, in offset order, across crashes and rebalances.
//! `--no-fence` ([`Fence::Off`], the control) folds every record, those
//! read again included: the read-back then shows them applied twice.
//!
//! **No owner epoch.** The partition-serial member and the Java peer take
//! each partition at the store in the assignment hook (its epoch raised in
//! `{prefix}_epochs`) and refuse a write of an older epoch; ferry's member
//! does not. With the offset fence and the version condition the epoch
//! adds nothing to exactly-once: a zombie's write either conflicts (and is
//! refolded into refusals, as above) or lands before the new owner's first
//! write of the key, where the records it applies are the very next ones
//! in order, which the new owner then finds applied. The epoch would only
//! stop it sooner; and the library's epoch is one per engine, while a
//! member takes each partition at an epoch of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ferry::entity::{Entities, Failure as StoreFailure, PostgresStore};
use ferry::kafka::{Consumer, Failure, OnFailure, Record};
use ferry::{FerryError, Order, Runtime};

use crate::store::Fence;

use super::consumer::{MemberSettings, Running, Tally};
use super::rows::{entity_table, KeyRow};

/// Keys' batches in one statement at most.
const TRIP_BATCHES: usize = 256;
/// Records of a key in one batch at most.
const BATCH_SIZE: usize = 256;
/// Statements in flight per shard.
const TRIPS_IN_FLIGHT: usize = 2;
/// Times a record whose write failed at the store is sent again.
const STORE_RETRIES: u32 = 20;

/// A record as the fold takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Input {
    /// The key's sequence number, from 1, in produce order.
    pub seq: u64,
    /// Its offset in its partition.
    pub offset: i64,
    /// When it was produced, microseconds since the Unix epoch.
    pub produced_us: i64,
}

/// Why the fold refused a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The record is at or below the key's last applied offset: applied
    /// already.
    Duplicate {
        /// The record's offset.
        offset: i64,
        /// The key's last applied offset.
        last_offset: i64,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Duplicate {
                offset,
                last_offset,
            } => write!(
                f,
                "offset {offset} is applied already (the key's last is {last_offset})"
            ),
        }
    }
}

/// The fold: `input` applied to its key's figures, or, with the fence, a
/// record at or below the key's last applied offset refused (the figures
/// unchanged).
///
/// ```
/// use ferry_bench::sources::kafka::ferry_member::{apply, Input, Refusal};
/// use ferry_bench::sources::kafka::rows::KeyRow;
/// use ferry_bench::store::Fence;
///
/// let first = Input { seq: 1, offset: 0, produced_us: 0 };
/// let second = Input { seq: 2, offset: 5, produced_us: 0 };
/// let mut row = KeyRow::default();
/// assert_eq!(apply(Fence::On, &mut row, &first), Ok(()));
/// assert_eq!(apply(Fence::On, &mut row, &second), Ok(()));
/// // Read again after a crash: refused, nothing changed.
/// assert_eq!(apply(Fence::On, &mut row, &first), Err(Refusal::Duplicate { offset: 0, last_offset: 5 }));
/// assert_eq!(row, KeyRow { applied: 2, last_seq: 2, disorder: 0, last_offset: 5 });
/// // The control applies it again, out of sequence.
/// assert_eq!(apply(Fence::Off, &mut row, &first), Ok(()));
/// assert_eq!(row, KeyRow { applied: 3, last_seq: 1, disorder: 1, last_offset: 0 });
/// ```
pub fn apply(fence: Fence, row: &mut KeyRow, input: &Input) -> Result<(), Refusal> {
    if fence == Fence::On && input.offset <= row.last_offset {
        return Err(Refusal::Duplicate {
            offset: input.offset,
            last_offset: row.last_offset,
        });
    }
    row.applied += 1;
    if input.seq != row.last_seq + 1 {
        row.disorder += 1;
    }
    row.last_seq = input.seq;
    row.last_offset = input.offset;
    Ok(())
}

/// Starts the entities and joins the group.
pub fn start(settings: &MemberSettings, tally: Arc<Tally>) -> Result<Box<dyn Running>, String> {
    let refused = Arc::new(AtomicU64::new(0));
    let entities = start_entities(settings, tally, refused.clone())?;
    let consumer = Consumer::builder(entities.engine().clone(), decode)
        .bootstrap_servers(&settings.bootstrap)
        .group_id(&settings.group)
        .topic(&settings.topic)
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "1500")
        .set("client.id", &format!("ferry-member-{}", settings.index))
        .on_failure(|failed| match failed.failure {
            // Not applied, or unknown whether: sent again, and if it had
            // landed the fold refuses it.
            Failure::Answered(FerryError::Failed(
                StoreFailure::NotApplied(_) | StoreFailure::Unknown(_),
            )) if failed.attempt < STORE_RETRIES => OnFailure::Retry,
            other => {
                eprintln!(
                    "ferry member: stopping {}: {other}",
                    failed.record.partition()
                );
                OnFailure::Stop
            }
        })
        .start();
    let consumer = match consumer {
        Ok(consumer) => consumer,
        Err(err) => {
            entities.close();
            entities.join();
            return Err(format!("the consumer did not start: {err}"));
        }
    };
    Ok(Box::new(Member {
        consumer,
        entities,
        refused,
        index: settings.index,
    }))
}

struct Member {
    consumer: Consumer,
    entities: Entities<String, Input, (), Refusal>,
    /// Records the fold refused as applied already.
    refused: Arc<AtomicU64>,
    index: usize,
}

impl Running for Member {
    fn rebalances(&self) -> u64 {
        let progress = self.consumer.progress();
        progress.assigned + progress.revoked
    }

    fn partitions(&self) -> usize {
        self.consumer.progress().partitions.len()
    }

    /// Closes the consumer (it drains, commits, leaves the group), then
    /// the entities; says what the store saw.
    fn close(self: Box<Self>) -> Result<(), String> {
        let closed = self.consumer.close().map_err(|err| err.to_string());
        self.entities.close();
        self.entities.join();
        let store = self.entities.store_stats();
        eprintln!(
            "ferry member {}: {} records refused as applied already; {} reads, {} writes, \
             {} conflicts, {} lost replies ({} found landed, {} absent, {} unknown)",
            self.index,
            self.refused.load(Ordering::Relaxed),
            store.reads,
            store.writes,
            store.conflicts,
            store.lost,
            store.found_landed,
            store.found_absent,
            store.unknown
        );
        closed
    }
}

/// A record's key and input: `"<seq> <produced_us>"`, and its offset.
fn decode(record: &Record) -> Result<(String, Input), String> {
    let key = record.key_str().ok_or("a record without a UTF-8 key")?;
    let (seq, produced_us) = super::parse_value(record.payload_str())?;
    let seq = u64::try_from(seq).map_err(|_| format!("a record whose seq {seq} is below 0"))?;
    let input = Input {
        seq,
        offset: record.offset,
        produced_us,
    };
    Ok((key.to_owned(), input))
}

/// The entities: shards on tokio (tokio-postgres's I/O), each with its own
/// connection; a key's records ranked by offset, so a retried one goes
/// before later ones. A record applied has its lag recorded as it is
/// folded, one statement before its write is answered.
fn start_entities(
    settings: &MemberSettings,
    tally: Arc<Tally>,
    refused: Arc<AtomicU64>,
) -> Result<Entities<String, Input, (), Refusal>, String> {
    let config = super::pg_config(&settings.store)?;
    let table = entity_table(&settings.prefix);
    let store = PostgresStore::from_config(config, &table)
        .map_err(|err| format!("table {table}: {err}"))?;
    let fence = settings.fence;
    let fold = move |row: &mut KeyRow, input: &Input| {
        let applied = apply(fence, row, input);
        match applied {
            Ok(()) => tally.answered_one(input.produced_us),
            Err(Refusal::Duplicate { .. }) => {
                refused.fetch_add(1, Ordering::Relaxed);
            }
        }
        applied
    };
    Entities::builder()
        .shards(settings.shards)
        .pin(false)
        .runtime(Runtime::Tokio)
        .order(Order::by(|input: &Input| input.offset))
        .max_batch_size(BATCH_SIZE)
        .max_trip_batches(TRIP_BATCHES)
        .max_in_flight_batches(TRIPS_IN_FLIGHT)
        .start_entities(store, fold)
        .map_err(|err| format!("the entities did not start: {err}"))
}
