//! What the loom models share: a thread's parking spot and the model's
//! bounds.

use std::sync::Arc;
use std::task::{Wake, Waker};

use loom::sync::Notify;

/// A thread's parking spot: a wake before the thread parks is kept, as a
/// glommio wake-up is, so the next park returns at once.
pub struct Parking(Notify);

impl Parking {
    /// A spot, and the waker that wakes whoever parks there.
    pub fn new() -> (Arc<Parking>, Waker) {
        let parking = Arc::new(Parking(Notify::new()));
        let waker = Waker::from(Arc::clone(&parking));
        (parking, waker)
    }

    /// Sleeps until woken (at once if a wake came since the last sleep).
    pub fn park(&self) {
        self.0.wait();
    }
}

impl Wake for Parking {
    fn wake(self: Arc<Self>) {
        self.0.notify();
    }
}

/// Checks `test` in every interleaving up to the bound: enough to find the
/// interleavings that matter (a lost wake-up needs two preemptions), small
/// enough to finish in seconds.
pub fn model(test: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(test);
}
