//! `ferry-load kafka` (feature `kafka`), the run's side: the
//! topic filled once (by [`crate::sources::kafka::produce`]), then each
//! system in turn, each with its own consumer group and fresh rows: its
//! members started, one killed and replaced when [`KillAt`] comes, the
//! rows watched until every produced record is applied (or the deadline),
//! the members stopped, the rows read back and judged.
//!
//! - [`run`](mod@run): one whole run, and one system's, from the members'
//!   start to the verdict, filling a [`crate::report::kafka::KafkaReport`];
//! - [`members`]: the member processes as the parent holds them, and the
//!   Java parallel-consumer peer's;
//! - [`kill`]: when one member is killed;
//! - [`verdict`]: lost, applied twice, out of order, key by key.

pub mod kill;
pub mod members;
pub mod run;
pub mod verdict;

pub use kill::KillAt;
pub use run::{run, Settings};
