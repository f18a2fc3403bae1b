//! What a run does to the systems beyond load: store faults, overload
//! (a store slowing down, callers giving up) and event time (inputs out of
//! order). Each marks its inputs or counts what the systems report, so the
//! systems call into it; it knows no system.

pub mod event_time;
pub mod faults;
pub mod overload;
pub mod proxy;
