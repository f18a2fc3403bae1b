//! What `ferry-load` runs: the comparison, the handover between
//! processes, and the search of ferry-trips' settings.

pub mod compare;
pub mod handover;
pub mod tune;
