//! The handover scenario (`ferry-load --handover`): keys moving between
//! service instances that each embed Ferry, against a real store, with the
//! fence of `docs/scale-out.md` and `formal/Handover.tla`, and a read-back
//! that checks what the model checks.
//!
//! - Each owner ([`worker`]) is a process of its own with its own engine;
//!   the coordinator ([`coordinator`]) starts them, holds the partition map
//!   and moves keys, talking to them in lines ([`protocol`]).
//! - A key's row ([`rows`]) holds `version`, `owner_epoch`, `last_seq` and
//!   the seqs applied. An owner assigned a key takes the row (the epoch
//!   raised, `last_seq` returned in one statement) and produces
//!   `last_seq + 1, last_seq + 2, …`.
//! - Its batch function ([`batch`]) reads the row and writes conditionally
//!   on the version and the epoch: a conflict is retried, a fence is final
//!   and its callers get `FerryError::Failed(Fenced)`.
//! - At the end ([`verdict`]) the rows are read back: nothing acknowledged
//!   lost, nothing applied twice, each key in order, and with the fence each
//!   key exactly `1..=last_seq`. [`report`] prints it.
//!
//! With [`Fence::Off`] the write's condition is the version alone: the
//! control, which must show the double application the fence prevents.

pub mod batch;
pub mod coordinator;
pub mod protocol;
pub mod report;
pub mod row;
pub mod rows;
mod rows_pg;
mod rows_redis;
pub mod verdict;
pub mod worker;

pub use coordinator::{run, HandoverReport, MoveReport, Settings};
pub use rows_pg::TABLE as POSTGRES_TABLE;
pub use rows_redis::KEY_PREFIX as REDIS_KEY_PREFIX;
pub use worker::{serve, WorkerSettings};

pub use crate::store::Fence;
