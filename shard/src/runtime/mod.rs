//! Layer 5, the runtime seam: the `Executor` trait and its two
//! implementations (`on_glommio.rs`, `on_tokio.rs`), which one runs
//! (`choice.rs`, `Runtime`), the process's tokio context for glommio
//! shards, the usable CPUs and the thread's time slice.
//!
//! Promise: the only place in the crate that names glommio's or tokio's
//! runtime API (the handle above names the two executor types); it knows
//! nothing of queues or cores.

pub(crate) mod choice;
pub(crate) mod cpus;
pub(crate) mod executor;
pub(crate) mod glommio_needs;
pub(crate) mod on_glommio;
pub(crate) mod on_tokio;
pub(crate) mod slice;
pub(crate) mod tokio_context;
