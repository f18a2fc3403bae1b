//! The owner epoch: which owner of a key writes now (scale-out, Kafka).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The owner epoch an engine's writes carry, shared with whatever decides
/// ownership (a handover, a Kafka assignment hook). A write lands only
/// where the key's last write carried this epoch or an older one, so once
/// a newer owner has written a key, a stale owner's write is refused
/// ([`EntityError::Fenced`](super::EntityError::Fenced)), never applied.
///
/// ```
/// use ferry::entity::Epoch;
///
/// let epoch = Epoch::new(3);
/// let shared = epoch.clone();
/// shared.set(4);                 // this instance took the keys over again
/// assert_eq!(epoch.get(), 4);
/// assert_eq!(Epoch::default().get(), 0);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Epoch(Arc<AtomicU64>);

impl Epoch {
    /// An epoch starting at `epoch`.
    pub fn new(epoch: u64) -> Self {
        Self(Arc::new(AtomicU64::new(epoch)))
    }

    /// The epoch writes carry now.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Writes from now on carry `epoch`.
    pub fn set(&self, epoch: u64) {
        self.0.store(epoch, Ordering::Release);
    }
}
