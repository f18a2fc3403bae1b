//! What `ferry-load` runs: the comparison, the handover between
//! processes, (feature `kafka`) a Kafka topic consumed by a group of
//! member processes, and the search of ferry-trips' settings.

pub mod compare;
pub mod faults;
pub mod handover;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod tune;
