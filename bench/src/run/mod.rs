//! What `ferry-load` runs: the comparison, and the handover between
//! processes.

pub mod compare;
pub mod faults;
pub mod handover;
