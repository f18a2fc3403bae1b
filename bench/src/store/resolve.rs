//! The fence switch, and how lost writes were settled, for the report.
//!
//! A batch's write that was sent when its connection broke may or may not
//! have been applied ([`StoreError::Unknown`](super::StoreError::Unknown)).
//! With the fence (the default), ferry's systems on a real store go
//! through `ferry::entity`, which reads the key back: its version tells a
//! landed write from an absent one, and only the absent one is sent again
//! (the library's `StoreStats::found_landed` and `found_absent`). With
//! [`Fence::Off`] (`--no-fence`), the control, a lost write is sent again
//! as a fresh read-modify-write without looking, which the read-back then
//! catches applied twice.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Whether writes are fenced: a lost write resolved by the key's last
/// applied sequence before it is sent again, and (in a handover) a write
/// conditioned on the owner epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fence {
    /// The design: a lost write is looked for before it is sent again, and
    /// a handover's write holds `owner_epoch = mine`.
    On,
    /// The control (`--no-fence`): a lost write is sent again as new, and a
    /// handover's write is conditioned on the version alone.
    Off,
}

/// How lost writes were settled in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Resolutions {
    /// Lost writes found landed.
    pub landed: u64,
    /// Lost writes found absent and sent again.
    pub sent: u64,
    /// Lost writes sent again without looking (the fence off).
    pub resent_blind: u64,
}

impl Resolutions {
    /// The resolutions since `earlier`.
    pub fn since(self, earlier: Resolutions) -> Resolutions {
        Resolutions {
            landed: self.landed - earlier.landed,
            sent: self.sent - earlier.sent,
            resent_blind: self.resent_blind - earlier.resent_blind,
        }
    }

    /// Every lost write tried again.
    pub fn total(self) -> u64 {
        self.landed + self.sent + self.resent_blind
    }
}

static RESENT_BLIND: AtomicU64 = AtomicU64::new(0);

/// The blind resends so far in this process (the landed and absent ones
/// are counted by each entity engine, and added by the run).
pub fn resolutions() -> Resolutions {
    Resolutions {
        resent_blind: RESENT_BLIND.load(Ordering::Relaxed),
        ..Resolutions::default()
    }
}

/// Counts a lost write sent again without looking.
pub(crate) fn count_blind() {
    RESENT_BLIND.fetch_add(1, Ordering::Relaxed);
}
