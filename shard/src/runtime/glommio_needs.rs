//! What glommio needs to start (locked memory, io_uring) and what a user
//! whose glommio could not start is told, shared by the choice of runtime
//! and the glommio executor.

use std::fmt;

/// The locked memory glommio needs per shard: its registered I/O buffers
/// (`IO_MEMORY` in `on_glommio.rs`) and room for its rings.
pub(crate) const GLOMMIO_MEMLOCK_PER_SHARD: u64 = 512 << 10;

/// What to tell a user whose glommio executor failed to start with `err`.
pub(crate) fn glommio_failure(err: &dyn fmt::Display) -> String {
    format!(
        "glommio could not start: {err}. It needs io_uring, which Docker's and containerd's \
         default seccomp profiles refuse (run with a profile that allows io_uring_setup, \
         io_uring_enter and io_uring_register) and which kernel.io_uring_disabled turns off, \
         and {} KiB of locked memory per shard (`ulimit -l`); or use Runtime::Tokio \
         (Runtime::Auto does so by itself)",
        GLOMMIO_MEMLOCK_PER_SHARD >> 10
    )
}
