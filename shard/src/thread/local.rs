//! The thread-per-core fast path (docs/guarantees.md#local-submits): a task
//! running on a shard that submits a key owned by that same shard is
//! admitted directly into the shard's queue — no intake, no channel, no
//! atomic operation — and is answered through a single-threaded answer cell
//! (`answer_cell.rs`'s `local_answer_cell`).
//!
//! The shard's thread installs a [`LocalShard`] in a thread-local while its
//! loop runs. A local submit finds it, checks that it belongs to the same
//! engine and shard, borrows the shard's core for the one call to
//! `admit_local`, and nudges the loop with a local wake. The loop never holds
//! its own borrow of the core across an await, so the two cannot collide.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::Waker;

use crate::thread::clock::Clock;

thread_local! {
    static CURRENT: RefCell<Option<Installed>> = const { RefCell::new(None) };
}

/// What a shard thread exposes to the tasks running on it: its core
/// (`C`, the shard's `RefCell<ShardCore<..>>`), the nudge that wakes its
/// loop, and its clock.
pub(crate) struct LocalShard<C> {
    /// The shard's `(engine, index)`: a local submit is for this shard only
    /// if both match.
    pub(crate) owner: (usize, usize),
    pub(crate) core: Rc<C>,
    pub(crate) nudge: Rc<Nudge>,
    pub(crate) clock: Rc<Clock>,
}

/// The installed shard. The thread-local cannot name the core's type (a
/// thread may run any engine's shard), so it keeps the `LocalShard` behind
/// `Any` and [`LocalShard::find`] asks for it by type: a shard of another
/// type, like one of another engine or index, is simply not found, and the
/// caller takes the ordinary path.
struct Installed {
    owner: (usize, usize),
    shard: Rc<dyn Any>,
}

impl<C: 'static> LocalShard<C> {
    /// The shard `owner` if it runs on this thread with a core of type `C`.
    pub(crate) fn find(owner: (usize, usize)) -> Option<Rc<LocalShard<C>>> {
        CURRENT.with(|current| {
            let current = current.borrow();
            let installed = current.as_ref().filter(|i| i.owner == owner)?;
            Rc::clone(&installed.shard).downcast::<LocalShard<C>>().ok()
        })
    }

    /// Installs `shard` as this thread's shard until the guard drops.
    pub(crate) fn install(shard: LocalShard<C>) -> Uninstall {
        let owner = shard.owner;
        let shard: Rc<dyn Any> = Rc::new(shard);
        CURRENT.with(|current| *current.borrow_mut() = Some(Installed { owner, shard }));
        Uninstall(())
    }
}

/// Uninstalls the thread's shard when dropped.
pub(crate) struct Uninstall(());

impl Drop for Uninstall {
    fn drop(&mut self) {
        CURRENT.with(|current| current.borrow_mut().take());
    }
}

/// The shard loop's waker, for local tasks to wake it without atomics.
#[derive(Default)]
pub(crate) struct Nudge {
    waker: RefCell<Option<Waker>>,
    pending: Cell<bool>,
}

impl Nudge {
    /// Loop side: remember the waker to be woken by.
    pub(crate) fn register(&self, waker: &Waker) {
        let mut registered = self.waker.borrow_mut();
        if !registered.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *registered = Some(waker.clone());
        }
    }

    /// Task side: something was admitted; make the loop run a round.
    pub(crate) fn nudge(&self) {
        if !self.pending.replace(true) {
            if let Some(waker) = self.waker.borrow().as_ref() {
                waker.wake_by_ref();
            }
        }
    }

    /// Loop side: whether a nudge came since the last call.
    pub(crate) fn take(&self) -> bool {
        self.pending.replace(false)
    }
}
