//! Layer 6, the shard's thread: the `Intake` other threads push into, how
//! an idle shard waits (`idle.rs`), the clock, the thread-local fast path,
//! the flush door, the round (`shard_loop.rs`) and the `Shard` handle that
//! starts it all on an executor (`handle.rs`).
//!
//! Promise: one task on one thread owns the core; other threads reach it
//! only through the intake, the flush door and the answer cells, and
//! nothing is accepted after the shard has drained.

pub(crate) mod clock;
pub(crate) mod flush_door;
pub(crate) mod handle;
pub(crate) mod idle;
pub(crate) mod inbound;
pub(crate) mod intake;
pub(crate) mod local;
pub(crate) mod shard_loop;
