//! What a handover run is given, how it is described, and the command
//! line each owner is started with.

use std::path::PathBuf;
use std::time::Duration;

use crate::base::duration::format_duration;
use crate::store::{Fence, StoreAddress};

/// A handover run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The store (PostgreSQL or Redis).
    pub store: StoreAddress,
    /// The program run as each owner (this binary, `handover --handover-worker`).
    pub worker_program: PathBuf,
    /// Owners, each a process with its own engine.
    pub instances: usize,
    /// Keys `0..keys`.
    pub keys: u64,
    /// Moves during the run.
    pub moves: usize,
    /// How long the run lasts.
    pub duration: Duration,
    /// From the new owner's assignment to the old owner's revoke.
    pub lag: Duration,
    /// Whether the fold refuses an input of another owner epoch.
    pub fence: Fence,
    /// Shards per owner.
    pub shards: usize,
    /// Inputs per batch at most.
    pub max_batch_size: usize,
    /// Trips in flight per shard at most.
    pub max_in_flight_batches: usize,
    /// Inputs of one key outstanding on its owner at most.
    pub outstanding_per_key: usize,
}

/// One line saying what is run.
pub fn describe(settings: &Settings) -> String {
    let fence = match settings.fence {
        Fence::On => "fence on (the fold refuses an input of another owner epoch than the key's)",
        Fence::Off => "NO FENCE (the fold ignores the owner epoch; the control)",
    };
    let order = if settings.lag.is_zero() {
        "revoke, flush, then assign".to_string()
    } else {
        format!(
            "assign, then revoke {} later",
            format_duration(settings.lag)
        )
    };
    format!(
        "handover: {} owners of {} shards, {} keys, {} moves in {} ({order}), {} outstanding per key, {fence}, store {}",
        settings.instances,
        settings.shards,
        settings.keys,
        settings.moves,
        format_duration(settings.duration),
        settings.outstanding_per_key,
        settings.store,
    )
}

/// The command line of owner `index`.
pub fn worker_args(settings: &Settings, index: usize) -> Vec<String> {
    let mut args = vec![
        "handover".to_string(),
        format!("--handover-worker={index}"),
        format!("--store={}", store_url(&settings.store)),
        format!("--shards={}", settings.shards),
        format!("--max-batch-size={}", settings.max_batch_size),
        format!("--max-in-flight-batches={}", settings.max_in_flight_batches),
        format!("--handover-outstanding={}", settings.outstanding_per_key),
    ];
    if settings.fence == Fence::Off {
        args.push("--no-fence".to_string());
    }
    args
}

/// The URL as given (with its password, unlike `Display`).
fn store_url(address: &StoreAddress) -> &str {
    match address {
        StoreAddress::Postgres(url) | StoreAddress::Redis(url) => url,
        StoreAddress::Sim => "sim",
        StoreAddress::Private(kind) => kind.name(),
    }
}
