//! The answer cell of an input submitted on its own: the shard writes the
//! outcome once ([`Sender`]), the caller's future reads it ([`Receiver`]).
//!
//! It does what a oneshot channel does, for less: the cell is a block from
//! the thread's spares (`pool.rs`) rather than a fresh allocation, one
//! atomic word (`state`) carries everything the two ends tell each other,
//! and nothing else is shared (no reference count, no task budget).
//!
//! A task on the shard's own thread (`submit_local`) gets the same cell
//! with a plain word instead of an atomic one ([`local_answer_cell`]): the
//! same protocol, no atomic operation, and its two ends cannot leave the
//! thread.
//!
//! # Protocol
//!
//! `state` holds bits, each set once and never cleared, except `WAKER`:
//!
//! - `VALUE` / `NO_VALUE`: the sender wrote the outcome / will write none
//!   (it was dropped unsent). Set by the sender's one *finish*.
//! - `WAKER`: the receiver put a waker in `waker`. The receiver writes
//!   `waker` only while `WAKER` is clear, and clears it only with a
//!   compare-exchange from a state without `VALUE` or `NO_VALUE`; the
//!   sender reads `waker` (to wake it, by reference) only if its finish
//!   found `WAKER` set. After a finish the receiver's compare-exchange
//!   fails, so the two never touch `waker` at once, and a waker put in
//!   before the finish is always seen by it: no wake-up is lost.
//! - `CLOSED`: the receiver stopped waiting (the sender may skip the work).
//! - `SENDER_GONE` / `RECEIVER_GONE` (with `TAKEN` if the receiver took
//!   the outcome): each end is done with the cell. Whichever comes second
//!   gives the block back, dropping an outcome left in it and the waker.
//!
//! Each end's last step is one read-modify-write of `state`, so the end
//! that gives the block back has seen every write of the other.
//! `tests/loom_answer_cell.rs` checks the protocol in every interleaving.
//!
//! A bit that is clear and that only one end sets, once (every bit but
//! `WAKER`, which the receiver also clears, and `CLOSED`, which `close`
//! may set again), is set with an add (`Word::fetch_set`): the same as an
//! or there, in one instruction on x86, where an or that returns the word
//! before is a compare-and-swap loop. `WAKER` is set that way too, as the
//! receiver sets it only while it is clear.

#![allow(unsafe_code)]

use std::alloc::Layout;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::{AcqRel, Acquire};
use std::task::{Context, Poll, Waker};

use crate::answer::pool;
use crate::sync::{AtomicUsize, UnsafeCell};

/// The word that carries a cell's state: [`Shared`] between threads,
/// [`Local`] on one. Sealed: a cell's protocol is written for these two.
pub trait Word: sealed::Sealed {
    #[doc(hidden)]
    fn new() -> Self;
    #[doc(hidden)]
    fn load(&self) -> usize;
    #[doc(hidden)]
    fn fetch_or(&self, bits: usize) -> usize;
    #[doc(hidden)]
    fn fetch_set(&self, bits: usize) -> usize;
    #[doc(hidden)]
    fn compare_exchange(&self, current: usize, new: usize) -> Result<usize, usize>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Shared {}
    impl Sealed for super::Local {}
}

/// An atomic state word: the two ends may be on different threads. Reads
/// acquire and writes release, so each end sees what the other wrote
/// before the bits it reads. The default word of [`Sender`] and
/// [`Receiver`].
#[derive(Debug)]
pub struct Shared(AtomicUsize);

impl Word for Shared {
    #[inline]
    fn new() -> Self {
        Self(AtomicUsize::new(0))
    }

    #[inline]
    fn load(&self) -> usize {
        self.0.load(Acquire)
    }

    #[inline]
    fn fetch_or(&self, bits: usize) -> usize {
        self.0.fetch_or(bits, AcqRel)
    }

    /// Sets `bits` that are clear and that no one else sets meanwhile,
    /// returning the word before: an add then does what an or does, and
    /// x86 adds and returns the old value in one instruction, where an or
    /// that returns it is a compare-and-swap loop.
    #[inline]
    fn fetch_set(&self, bits: usize) -> usize {
        let before = self.0.fetch_add(bits, AcqRel);
        debug_assert_eq!(before & bits, 0, "bits set once");
        before
    }

    #[inline]
    fn compare_exchange(&self, current: usize, new: usize) -> Result<usize, usize> {
        self.0.compare_exchange(current, new, AcqRel, Acquire)
    }
}

/// A plain state word: both ends stay on one thread (neither is `Send`).
#[derive(Debug)]
pub struct Local(std::cell::Cell<usize>);

impl Word for Local {
    #[inline]
    fn new() -> Self {
        Self(std::cell::Cell::new(0))
    }

    #[inline]
    fn load(&self) -> usize {
        self.0.get()
    }

    #[inline]
    fn fetch_or(&self, bits: usize) -> usize {
        let before = self.0.get();
        self.0.set(before | bits);
        before
    }

    #[inline]
    fn fetch_set(&self, bits: usize) -> usize {
        debug_assert_eq!(self.0.get() & bits, 0, "bits set once");
        self.fetch_or(bits)
    }

    #[inline]
    fn compare_exchange(&self, current: usize, new: usize) -> Result<usize, usize> {
        let now = self.0.get();
        if now == current {
            self.0.set(new);
            Ok(now)
        } else {
            Err(now)
        }
    }
}

const VALUE: usize = 1;
const NO_VALUE: usize = 1 << 1;
const WAKER: usize = 1 << 2;
const CLOSED: usize = 1 << 3;
const SENDER_GONE: usize = 1 << 4;
const RECEIVER_GONE: usize = 1 << 5;
const TAKEN: usize = 1 << 6;

/// What the two ends share.
struct Cell<T, W> {
    state: W,
    waker: UnsafeCell<Option<Waker>>,
    value: UnsafeCell<MaybeUninit<T>>,
}

/// The receiver's answer when the sender was dropped without sending.
///
/// ```
/// # #[cfg(feature = "internals")] {
/// use ferry_shard::parts::{answer_cell, Unsent};
///
/// let (sender, receiver) = answer_cell::<u32>();
/// drop(sender);
/// assert_eq!(futures::executor::block_on(receiver), Err(Unsent));
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unsent;

/// A new cell: its sending and its receiving end.
///
/// ```
/// # #[cfg(feature = "internals")] {
/// use ferry_shard::parts::answer_cell;
///
/// let (sender, receiver) = answer_cell::<u32>();
/// std::thread::spawn(move || sender.send(7));
/// assert_eq!(futures::executor::block_on(receiver), Ok(7));
///
/// let (sender, receiver) = answer_cell::<u32>();
/// drop(sender);
/// assert!(futures::executor::block_on(receiver).is_err());
/// # }
/// ```
#[inline]
pub fn answer_cell<T>() -> (Sender<T>, Receiver<T>) {
    new_cell()
}

/// A new cell whose two ends stay on this thread: for a task on the shard
/// that answers it.
#[inline]
pub fn local_answer_cell<T>() -> (Sender<T, Local>, Receiver<T, Local>) {
    new_cell()
}

#[inline]
fn new_cell<T, W: Word>() -> (Sender<T, W>, Receiver<T, W>) {
    let block = pool::alloc(Layout::new::<Cell<T, W>>()).cast::<Cell<T, W>>();
    let cell = Cell {
        state: W::new(),
        waker: UnsafeCell::new(None),
        value: UnsafeCell::new(MaybeUninit::uninit()),
    };
    // SAFETY: the block is fresh, large and aligned enough for the cell.
    unsafe { block.as_ptr().write(cell) };
    let sender = Sender {
        cell: block,
        _value: PhantomData,
    };
    let receiver = Receiver {
        cell: block,
        taken: false,
        _value: PhantomData,
    };
    (sender, receiver)
}

/// The shard's end: answers once, or, dropped unsent, tells the receiver
/// that no answer will come.
///
/// ```
/// # #[cfg(feature = "internals")] {
/// use ferry_shard::parts::answer_cell;
///
/// let (sender, mut receiver) = answer_cell::<u32>();
/// assert!(!sender.is_closed());
/// receiver.close();
/// assert!(sender.is_closed(), "the caller stopped waiting");
/// sender.send(1); // still delivered, to a caller that may look
/// assert_eq!(futures::executor::block_on(receiver), Ok(1));
/// # }
/// ```
pub struct Sender<T, W: Word = Shared> {
    cell: NonNull<Cell<T, W>>,
    _value: PhantomData<T>,
}

/// The caller's end: a future of the outcome, or [`Unsent`]. Polling it
/// again once it answered panics.
///
/// ```
/// # #[cfg(feature = "internals")] {
/// use ferry_shard::parts::answer_cell;
///
/// let (sender, receiver) = answer_cell::<String>();
/// let shard = std::thread::spawn(move || sender.send("answered".to_string()));
/// assert_eq!(futures::executor::block_on(receiver).as_deref(), Ok("answered"));
/// shard.join().unwrap();
/// # }
/// ```
pub struct Receiver<T, W: Word = Shared> {
    cell: NonNull<Cell<T, W>>,
    /// This end took the outcome (polling again is a mistake).
    taken: bool,
    _value: PhantomData<T>,
}

// SAFETY: each end moves to another thread with the `T` it sends or
// receives; the atomic word orders every access the two ends make. (The
// ends of a `Local` cell are not `Send`: their raw pointer keeps them on
// their thread.)
unsafe impl<T: Send> Send for Sender<T, Shared> {}
// SAFETY: as for the sender.
unsafe impl<T: Send> Send for Receiver<T, Shared> {}
// SAFETY: through a shared reference an end only reads its own fields or
// loads the atomic word (`is_closed`, `Debug`); everything that touches the
// outcome or the waker takes the end by value or by `&mut`.
unsafe impl<T: Send> Sync for Sender<T, Shared> {}
// SAFETY: as for the sender.
unsafe impl<T: Send> Sync for Receiver<T, Shared> {}

impl<T, W: Word> Sender<T, W> {
    fn cell(&self) -> &Cell<T, W> {
        // SAFETY: the cell lives until both ends are gone, and this end is
        // not gone.
        unsafe { self.cell.as_ref() }
    }

    /// Writes the outcome and wakes the receiver. If the receiver is gone,
    /// the outcome is dropped with the cell.
    pub fn send(self, value: T) {
        // SAFETY: only the sender writes `value`, once, before `VALUE`.
        self.cell()
            .value
            .with_mut(|slot| unsafe { (*slot).write(value) });
        self.finish(VALUE);
        std::mem::forget(self);
    }

    /// Whether the receiver stopped waiting (closed or dropped).
    pub fn is_closed(&self) -> bool {
        self.cell().state.load() & (CLOSED | RECEIVER_GONE) != 0
    }

    /// Sets `VALUE` or `NO_VALUE`, wakes the receiver if it left a waker,
    /// and lets go of the cell.
    fn finish(&self, outcome: usize) {
        let cell = self.cell();
        let before = cell.state.fetch_set(outcome);
        if before & WAKER != 0 && before & RECEIVER_GONE == 0 {
            // SAFETY: `WAKER` was set before the finish, so the receiver
            // wrote the waker and will not write it again (module docs).
            cell.waker.with(|waker| {
                if let Some(waker) = unsafe { &*waker } {
                    waker.wake_by_ref();
                }
            });
        }
        let before = cell.state.fetch_set(SENDER_GONE);
        if before & RECEIVER_GONE != 0 {
            // SAFETY: both ends are gone; this one came second.
            unsafe { give_back(self.cell, before) };
        }
    }
}

impl<T, W: Word> Drop for Sender<T, W> {
    fn drop(&mut self) {
        self.finish(NO_VALUE);
    }
}

impl<T, W: Word> Receiver<T, W> {
    fn cell(&self) -> &Cell<T, W> {
        // SAFETY: as for the sender.
        unsafe { self.cell.as_ref() }
    }

    /// Stops waiting: the sender sees it ([`Sender::is_closed`]). An
    /// outcome sent later is still delivered.
    pub fn close(&mut self) {
        self.cell().state.fetch_or(CLOSED);
    }

    /// The outcome, if the sender finished; takes it.
    fn outcome(&mut self, state: usize) -> Option<Result<T, Unsent>> {
        if state & VALUE != 0 {
            self.taken = true;
            // SAFETY: `VALUE` was read with acquire, after the sender's one
            // write; `taken` keeps this end from reading it twice.
            let value = self
                .cell()
                .value
                .with(|slot| unsafe { (*slot).assume_init_read() });
            Some(Ok(value))
        } else if state & NO_VALUE != 0 {
            Some(Err(Unsent))
        } else {
            None
        }
    }

    /// Leaves `waker` for the sender; the outcome instead if the sender
    /// finished meanwhile.
    fn wait(&mut self, waker: &Waker, mut state: usize) -> Poll<Result<T, Unsent>> {
        loop {
            if let Some(outcome) = self.outcome(state) {
                return Poll::Ready(outcome);
            }
            let cell = self.cell();
            if state & WAKER != 0 {
                // SAFETY: the sender only reads the waker; so does this.
                let same = cell.waker.with(|left| {
                    unsafe { &*left }
                        .as_ref()
                        .is_some_and(|w| w.will_wake(waker))
                });
                if same {
                    return Poll::Pending;
                }
                // Take it back to replace it, unless the sender finished.
                if let Err(now) = cell.state.compare_exchange(state, state & !WAKER) {
                    state = now;
                    continue;
                }
            }
            // SAFETY: `WAKER` is clear: the sender does not read the waker.
            cell.waker
                .with_mut(|left| unsafe { *left = Some(waker.clone()) });
            let before = cell.state.fetch_set(WAKER);
            if before & (VALUE | NO_VALUE) == 0 {
                return Poll::Pending;
            }
            state = before | WAKER;
        }
    }
}

impl<T, W: Word> Future for Receiver<T, W> {
    type Output = Result<T, Unsent>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        assert!(!self.taken, "an answer cell polled after it answered");
        let state = self.cell().state.load();
        self.wait(cx.waker(), state)
    }
}

// Nothing in a receiver is pinned: the cell is on the heap.
impl<T, W: Word> Unpin for Receiver<T, W> {}

impl<T, W: Word> Drop for Receiver<T, W> {
    fn drop(&mut self) {
        let gone = RECEIVER_GONE | if self.taken { TAKEN } else { 0 };
        let before = self.cell().state.fetch_set(gone);
        if before & SENDER_GONE != 0 {
            // SAFETY: both ends are gone; this one came second.
            unsafe { give_back(self.cell, before | gone) };
        }
    }
}

impl<T, W: Word> std::fmt::Debug for Sender<T, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl<T, W: Word> std::fmt::Debug for Receiver<T, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("taken", &self.taken)
            .finish()
    }
}

/// Drops what is left in the cell and gives its block back.
///
/// # Safety
///
/// Both ends are gone, `state` is the cell's state as the second saw it
/// (with its own bits), and the cell is used by no one.
unsafe fn give_back<T, W>(cell: NonNull<Cell<T, W>>, state: usize) {
    let state = state | SENDER_GONE | RECEIVER_GONE;
    debug_assert!(state & (VALUE | NO_VALUE) != 0, "the sender finished");
    // SAFETY: no one else holds the cell (the caller's contract).
    let cell_ref = unsafe { cell.as_ref() };
    if state & VALUE != 0 && state & TAKEN == 0 {
        // SAFETY: written by the sender and never taken.
        cell_ref
            .value
            .with_mut(|slot| unsafe { (*slot).assume_init_drop() });
    }
    // SAFETY: as above; dropping the cell drops the waker left in it.
    unsafe {
        std::ptr::drop_in_place(cell.as_ptr());
        pool::free(cell.cast(), Layout::new::<Cell<T, W>>());
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize as Count, Ordering::SeqCst};
    use std::sync::Arc;
    use std::task::Wake;

    use super::*;

    #[test]
    fn a_shared_cell_goes_to_other_threads() {
        // A shared cell's ends are `Send`; a local one's stay on their thread.
        fn goes_to_other_threads<T: Send>() {}
        goes_to_other_threads::<(Sender<u8, Shared>, Receiver<u8, Shared>)>();
        let (_sender, _receiver): (Sender<u8, Local>, Receiver<u8, Local>) = local_answer_cell();
    }

    #[test]
    fn a_shared_word_is_the_default() {
        let (_sender, _receiver): (Sender<u8, Shared>, Receiver<u8, Shared>) = answer_cell();
    }

    #[test]
    fn a_local_cell_answers_on_its_thread() {
        let (sender, receiver) = local_answer_cell::<&str>();
        let _: &Sender<&str, Local> = &sender;
        sender.send("on this thread");
        assert_eq!(futures::executor::block_on(receiver), Ok("on this thread"));
    }

    #[test]
    fn a_local_cell_sends_and_receives() {
        let (sender, receiver) = local_answer_cell::<u32>();
        sender.send(7);
        assert_eq!(futures::executor::block_on(receiver), Ok(7));
    }

    /// Counts its wakes.
    struct Wakes(Count);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    fn waker() -> (Arc<Wakes>, Waker) {
        let wakes = Arc::new(Wakes(Count::new(0)));
        (Arc::clone(&wakes), Waker::from(wakes))
    }

    /// Drops count how often a value was dropped.
    struct Dropped(Arc<Count>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    #[test]
    fn the_ends_of_a_shared_cell_go_to_other_threads_and_can_be_shared() {
        fn send_and_sync<T: Send + Sync>() {}
        send_and_sync::<Sender<String>>();
        send_and_sync::<Receiver<String>>();
    }

    /// A new cell of either kind.
    type New<T, W> = fn() -> (Sender<T, W>, Receiver<T, W>);

    fn woken_once_with_the_outcome<W: Word>(new: New<u64, W>) {
        let (sender, mut receiver) = new();
        let (wakes, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut receiver).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut receiver).poll(&mut cx).is_pending());
        sender.send(5);
        assert_eq!(wakes.0.load(SeqCst), 1);
        assert_eq!(Pin::new(&mut receiver).poll(&mut cx), Poll::Ready(Ok(5)));
    }

    #[test]
    fn a_waiting_receiver_is_woken_once_and_gets_the_outcome() {
        woken_once_with_the_outcome(answer_cell);
        woken_once_with_the_outcome(local_answer_cell);
    }

    #[test]
    fn a_new_waker_replaces_the_old_one() {
        let (sender, mut receiver) = answer_cell::<u64>();
        let (old, old_waker) = waker();
        let (new, new_waker) = waker();
        assert!(Pin::new(&mut receiver)
            .poll(&mut Context::from_waker(&old_waker))
            .is_pending());
        assert!(Pin::new(&mut receiver)
            .poll(&mut Context::from_waker(&new_waker))
            .is_pending());
        sender.send(1);
        assert_eq!((old.0.load(SeqCst), new.0.load(SeqCst)), (0, 1));
        // The cell held a clone of the new waker until it was given back.
        drop(receiver);
        assert_eq!(Arc::strong_count(&new), 2);
    }

    fn unsent_with_a_wake<W: Word>(new: New<u64, W>) {
        let (sender, mut receiver) = new();
        let (wakes, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut receiver).poll(&mut cx).is_pending());
        drop(sender);
        assert_eq!(wakes.0.load(SeqCst), 1);
        let answered = Pin::new(&mut receiver).poll(&mut cx);
        assert_eq!(answered, Poll::Ready(Err(Unsent)));
    }

    #[test]
    fn a_sender_dropped_unsent_answers_unsent_and_wakes() {
        unsent_with_a_wake(answer_cell);
        unsent_with_a_wake(local_answer_cell);
    }

    fn dropped_once_whoever_goes_last<W: Word>(new: New<Dropped, W>) {
        let drops = Arc::new(Count::new(0));
        let (sender, receiver) = new();
        sender.send(Dropped(Arc::clone(&drops)));
        drop(receiver);
        assert_eq!(drops.load(SeqCst), 1);

        let (sender, receiver) = new();
        drop(receiver);
        assert!(sender.is_closed());
        sender.send(Dropped(Arc::clone(&drops)));
        assert_eq!(drops.load(SeqCst), 2);
    }

    #[test]
    fn an_outcome_nobody_takes_is_dropped_once_whichever_end_goes_last() {
        dropped_once_whoever_goes_last(answer_cell);
        dropped_once_whoever_goes_last(local_answer_cell);
    }

    #[test]
    fn a_taken_outcome_is_not_dropped_again() {
        let drops = Arc::new(Count::new(0));
        let (sender, receiver) = answer_cell::<Dropped>();
        sender.send(Dropped(Arc::clone(&drops)));
        let taken = futures::executor::block_on(receiver).ok().unwrap();
        assert_eq!(drops.load(SeqCst), 0);
        drop(taken);
        assert_eq!(drops.load(SeqCst), 1);
    }

    #[test]
    fn close_is_seen_by_the_sender_and_a_later_send_is_still_delivered() {
        let (sender, mut receiver) = answer_cell::<u64>();
        assert!(!sender.is_closed());
        receiver.close();
        assert!(sender.is_closed());
        sender.send(3);
        assert_eq!(futures::executor::block_on(receiver), Ok(3));
    }

    #[test]
    fn cells_answered_across_threads_lose_nothing() {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..10_000).map(|_| answer_cell()).unzip();
        let sending = std::thread::spawn(move || {
            for (i, sender) in senders.into_iter().enumerate() {
                if i % 7 == 0 {
                    drop(sender);
                } else {
                    sender.send(i);
                }
            }
        });
        let got: Vec<_> = futures::executor::block_on(futures::future::join_all(receivers));
        sending.join().unwrap();
        for (i, outcome) in got.into_iter().enumerate() {
            let expected = if i % 7 == 0 { Err(Unsent) } else { Ok(i) };
            assert_eq!(outcome, expected);
        }
    }
}
