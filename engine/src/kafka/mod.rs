//! A Kafka consumer group applied to a store through an
//! [`Engine`](crate::Engine) (Cargo feature `kafka`).
//!
//! A [`Consumer`] joins a group with cooperative rebalancing and submits
//! each record to the engine, key and input decoded from the record; the
//! engine batches each key's records, one batch in flight per key, in
//! offset order. Kafka assigns each partition to one member, and each key
//! lives in one partition, so the engine's guarantees hold per key across
//! the whole group. What the consumer keeps:
//!
//! - **Commits follow answers.** Per partition it commits the highest
//!   offset below which every record is answered (or settled by the failure
//!   policy), however the keys' answers interleave.
//! - **Bounded work.** A partition is paused when its records in the engine
//!   reach a bound (its own, or all partitions' together), or when the
//!   engine refuses one (held and sent again first); it resumes as they
//!   drain.
//! - **Rebalances hand over cleanly.** A revoked partition stops being fed;
//!   its records in the engine are waited for (bounded), it is committed,
//!   then let go. An assigned partition's hook runs before it is fed: take
//!   the partition's owner epoch at the store there, and write with a
//!   condition on that epoch and on the key's last applied offset, so that
//!   a record a revoked member still applies late, or one read again after
//!   a crash, is refused instead of applied twice (`docs/scale-out.md`).
//! - **Nothing is skipped silently.** A record answered with an error, or
//!   that cannot be decoded, goes to the failure policy: retry it, give it
//!   up to a dead letter, or stop its partition.
//!
//! ```no_run
//! use std::time::Duration;
//! use ferry::kafka::{Consumer, Failure, OnFailure};
//! use ferry::Engine;
//!
//! let engine: Engine<String, i64, (), String> = Engine::builder()
//!     .start(|_shard| |_account: String, amounts: Vec<i64>| async move {
//!         // One round trip: apply the account's amounts, conditionally.
//!         Ok::<_, String>(vec![(); amounts.len()])
//!     })?;
//! let consumer = Consumer::builder(engine, |record| {
//!     let account = record.key_str().ok_or("a record without a key")?.to_owned();
//!     let amount = record.payload_str().and_then(|p| p.parse().ok()).ok_or("not an amount")?;
//!     Ok((account, amount))
//! })
//! .bootstrap_servers("127.0.0.1:9092")
//! .group_id("ledger-writer")
//! .topic("ledger")
//! .set("auto.offset.reset", "earliest")
//! .on_assign(|partitions| {
//!     // Take each partition's owner epoch at the store.
//!     Ok(())
//! })
//! .on_failure(|failed| match failed.failure {
//!     Failure::Answered(_) if failed.attempt < 3 => OnFailure::Retry,
//!     _ => OnFailure::Stop,
//! })
//! .start()?;
//!
//! std::thread::sleep(Duration::from_secs(60));
//! println!("{:?}", consumer.progress());
//! consumer.close()?; // drains, commits, leaves the group
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod answers;
mod builder;
mod consumer;
mod error;
mod failure;
mod feed;
mod offset_tracker;
mod partition_feed;
mod progress;
mod rebalance;
mod record;

pub use builder::{
    ConsumerBuilder, DEFAULT_COMMIT_INTERVAL, DEFAULT_MAX_UNANSWERED,
    DEFAULT_MAX_UNANSWERED_PER_PARTITION, DEFAULT_REVOKE_TIMEOUT,
};
pub use consumer::Consumer;
pub use error::Error;
pub use failure::{Failed, Failure, OnFailure};
pub use progress::{PartitionProgress, Progress};
pub use record::{Partition, Record};

use offset_tracker::OffsetTracker;
