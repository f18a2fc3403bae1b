//! What `ferry-load` runs: the comparison, the handover between
//! processes, and (feature `kafka`) a Kafka topic consumed by a group of
//! member processes.

pub mod compare;
pub mod faults;
pub mod handover;
#[cfg(feature = "kafka")]
pub mod kafka;
