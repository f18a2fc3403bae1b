//! The handover scenario (`ferry-load handover`): keys moving between
//! service instances that each embed Ferry, against a real store, with the
//! fence of `docs/scale-out.md` and `formal/Handover.tla`, and a read-back
//! that checks what the model checks.
//!
//! - Each owner ([`worker`]) is a process of its own with its own entity
//!   engine (`ferry::entity`); the coordinator ([`coordinator`]) starts
//!   them, holds the partition map and moves keys, talking to them in
//!   lines ([`protocol`]).
//! - The owners write only through the library: `PostgresStore` (table
//!   `ferry_handover`) or `RedisStore` (rows `ferry-handover:{k}`), see
//!   [`rows`]. Each key's state ([`fold::KeyState`], JSON) holds its
//!   `owner_epoch`, its `last_seq` and the seqs applied, in order; the
//!   library keeps its version beside it and writes each key on the
//!   condition that the version is still the one folded from.
//! - The owner epoch is per key (each take raises that key's), so it lives
//!   in the state, not in the library's engine-wide `Epoch`, which every
//!   owner leaves at 0. An owner assigned a key submits a take
//!   ([`fold::Step::Take`]: the state's epoch raised, `last_seq`
//!   answered), a write like any other, then the seqs `last_seq + 1,
//!   last_seq + 2, …` ([`fold::Step::Apply`]).
//! - The fold ([`fold`]) refuses a take older than the state's epoch and,
//!   with the fence, a seq of another epoch than the state's: `Refused(
//!   Fenced)`, nothing applied. A stale owner's write in flight at the take
//!   expects the version before it, so it does not land; the library reads
//!   the key again and folds anew, and the fold fences it. Its later
//!   batches read the key (the owners remember no key,
//!   [`rows::REMEMBER`], so that a take and a zombie race on equal terms)
//!   and are fenced at once.
//! - At the end ([`verdict`]) the keys are read back and their states
//!   decoded: nothing acknowledged lost, nothing applied twice, each key in
//!   order, and with the fence each key exactly `1..=last_seq`. The run
//!   fills a [`HandoverReport`], which [`crate::report::handover`] prints.
//! - [`settings`]: what a run is given, its one-line description, and the
//!   owners' command lines; the owners are started, told and listened to
//!   through [`crate::base::children`].
//!
//! With [`crate::store::Fence::Off`] an apply ignores the epoch (a take still checks
//! it): the control, which must show the double application the fence
//! prevents, a stale owner's seqs folded after the take.

pub mod coordinator;
pub mod fold;
pub mod protocol;
pub mod row;
pub mod rows;
pub mod settings;
pub mod verdict;
pub mod worker;

pub use crate::report::handover::{HandoverReport, MoveReport};
pub use crate::store::Fence;
pub use coordinator::run;
pub use rows::{
    EVENTS_TABLE as POSTGRES_EVENTS_TABLE, PREFIX as REDIS_PREFIX, TABLE as POSTGRES_TABLE,
};
pub use settings::{describe, Settings};
pub use worker::{serve, WorkerSettings};
