//! Layer 3, the answers' way back: the answer cell of an input submitted
//! on its own (`answer_cell.rs`, its blocks in `pool.rs`) and the one cell
//! a `submit_many` call shares among its inputs (`gather.rs`).
//!
//! Promise: each input is answered exactly once, or `Aborted` when its
//! reply is dropped unsent. This is where the memory the two ends share is
//! handled with `unsafe`, and it stays here: what leaves the folder is the
//! safe ends (`Sender`, `Receiver`, `GatherReply`, `Outcomes`, ...). The
//! wake-up protocols are model-checked by `tests/loom_answer_cell.rs` and
//! `tests/loom_gather.rs`.

pub(crate) mod answer_cell;
pub(crate) mod gather;
pub(crate) mod pool;
