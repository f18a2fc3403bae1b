//! Where inputs come from: the key distributions, the load's callers that
//! drive a system, and a Kafka topic.

pub mod dist;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod load;
