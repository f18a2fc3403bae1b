//! The pieces of the shard simulation: a seeded generator, the scenario a
//! seed plays, and the independent reference it is checked against.

pub mod answer;
pub mod event_time;
pub mod flushes;
pub mod reference;
pub mod rng;
pub mod scenario;
pub mod seeds;
