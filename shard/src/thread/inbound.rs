//! What enters a shard through its intake, apart from the handle that
//! pushes it so that the loop that pops it does not name the handle.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::answer::gather::ToShard;
use crate::core::shard_core::{Bundled, Submission};
use crate::thread::intake::Intake;

/// A task to start on a shard, sent from any thread.
pub type SpawnTask = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// What enters a shard through its intake.
pub(crate) enum Inbound<K, I, O, E> {
    /// An input to admit.
    Submit(Submission<K, I, O, E>),
    /// Inputs of one `submit_many` call passed together, with their
    /// call's cell: one push, one wake-up.
    Bundle(ToShard<I, O, E>, Vec<Bundled<K, I>>),
    /// A task to run on the shard's thread.
    Spawn(SpawnTask),
    /// A caller of the key of this hash stopped waiting (`withdraw_on_drop`).
    Withdraw(u64),
}

/// A shard's intake, shared by its callers and its loop.
pub(crate) type SharedIntake<K, I, O, E> = Arc<Intake<Inbound<K, I, O, E>>>;
