//! The primitives the cross-thread protocols are built from — the intake's
//! wake-up and close (`intake.rs`), the answer cell of an input submitted
//! on its own (`answer_cell.rs`) and the shared answer cell of a
//! `submit_many` call (`gather.rs`). Under `--cfg loom` they are swapped for
//! loom's, so `tests/loom_intake.rs`, `tests/loom_answer_cell.rs` and
//! `tests/loom_gather.rs` can check every interleaving of that very code;
//! the protocols do not change.

pub(crate) use imp::*;

#[cfg(not(loom))]
mod imp {
    pub(crate) use crossbeam_queue::ArrayQueue;
    pub(crate) use futures::task::AtomicWaker;
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
    pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

    /// `std::cell::UnsafeCell` with loom's way in: a pointer lent to a
    /// closure, so that loom can see each access.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

#[cfg(loom)]
mod imp {
    use std::collections::VecDeque;
    use std::sync::atomic::Ordering::{self, SeqCst};
    use std::task::Waker;

    pub(crate) use loom::cell::UnsafeCell;
    use loom::sync::atomic::fence;
    // The answer cell orders its accesses with acquire and release only,
    // which loom models as they are.
    pub(crate) use loom::sync::atomic::AtomicUsize;
    pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

    // Loom models a `SeqCst` load or store as if it were `AcqRel`, which
    // would let through the store-buffering interleaving (each side misses
    // the other's write) that `SeqCst` rules out and the handshake relies
    // on. It does model `fence(SeqCst)`, so each access here is paired with
    // one: a store or read-modify-write is followed by a fence, a load or
    // read-modify-write preceded by one. That restores what the handshake
    // takes from `SeqCst`: of two threads that each write one location and
    // then read the other's, at least one sees the other's write.

    /// `AtomicBool` with `SeqCst` as loom models it (see above).
    #[derive(Debug)]
    pub(crate) struct AtomicBool(loom::sync::atomic::AtomicBool);

    impl AtomicBool {
        pub(crate) fn new(value: bool) -> Self {
            Self(loom::sync::atomic::AtomicBool::new(value))
        }

        pub(crate) fn load(&self, order: Ordering) -> bool {
            assert_eq!(order, SeqCst);
            fence(SeqCst);
            self.0.load(SeqCst)
        }

        pub(crate) fn store(&self, value: bool, order: Ordering) {
            assert_eq!(order, SeqCst);
            self.0.store(value, SeqCst);
            fence(SeqCst);
        }

        /// A swap of a `bool` as one compare-exchange: loom can build an
        /// impossible history from a `swap` racing a plain store, not from
        /// a single compare-exchange. If the value is already `value`,
        /// nothing changes, as with the swap.
        pub(crate) fn swap(&self, value: bool, order: Ordering) -> bool {
            assert_eq!(order, SeqCst);
            fence(SeqCst);
            let before = match self.0.compare_exchange(!value, value, SeqCst, SeqCst) {
                Ok(before) | Err(before) => before,
            };
            fence(SeqCst);
            before
        }
    }

    /// `AtomicU64` with `SeqCst` as loom models it (see above).
    #[derive(Debug)]
    pub(crate) struct AtomicU64(loom::sync::atomic::AtomicU64);

    impl AtomicU64 {
        pub(crate) fn new(value: u64) -> Self {
            Self(loom::sync::atomic::AtomicU64::new(value))
        }

        pub(crate) fn load(&self, order: Ordering) -> u64 {
            assert_eq!(order, SeqCst);
            fence(SeqCst);
            self.0.load(SeqCst)
        }

        fn update(&self, f: impl FnOnce(&loom::sync::atomic::AtomicU64) -> u64) -> u64 {
            fence(SeqCst);
            let before = f(&self.0);
            fence(SeqCst);
            before
        }

        pub(crate) fn fetch_add(&self, value: u64, order: Ordering) -> u64 {
            assert_eq!(order, SeqCst);
            self.update(|atomic| atomic.fetch_add(value, SeqCst))
        }

        pub(crate) fn fetch_sub(&self, value: u64, order: Ordering) -> u64 {
            assert_eq!(order, SeqCst);
            self.update(|atomic| atomic.fetch_sub(value, SeqCst))
        }

        pub(crate) fn fetch_or(&self, value: u64, order: Ordering) -> u64 {
            assert_eq!(order, SeqCst);
            self.update(|atomic| atomic.fetch_or(value, SeqCst))
        }
    }

    /// A bounded queue with the part of crossbeam's `ArrayQueue` API the
    /// intake uses; each operation is one atomic step, as it is there.
    #[derive(Debug)]
    pub(crate) struct ArrayQueue<T> {
        items: Mutex<VecDeque<T>>,
        capacity: usize,
    }

    impl<T> ArrayQueue<T> {
        pub(crate) fn new(capacity: usize) -> Self {
            assert!(capacity > 0, "capacity must be non-zero");
            Self {
                items: Mutex::new(VecDeque::with_capacity(capacity)),
                capacity,
            }
        }

        pub(crate) fn push(&self, item: T) -> Result<(), T> {
            let mut items = self.items.lock().unwrap();
            if items.len() == self.capacity {
                return Err(item);
            }
            items.push_back(item);
            Ok(())
        }

        pub(crate) fn pop(&self) -> Option<T> {
            self.items.lock().unwrap().pop_front()
        }

        pub(crate) fn len(&self) -> usize {
            self.items.lock().unwrap().len()
        }

        pub(crate) fn is_empty(&self) -> bool {
            self.items.lock().unwrap().is_empty()
        }

        pub(crate) fn capacity(&self) -> usize {
            self.capacity
        }
    }

    /// The last registered waker, taken and woken by `wake`, as
    /// `futures::task::AtomicWaker` does.
    #[derive(Debug, Default)]
    pub(crate) struct AtomicWaker {
        waker: Mutex<Option<Waker>>,
    }

    impl AtomicWaker {
        pub(crate) fn new() -> Self {
            Self::default()
        }

        pub(crate) fn register(&self, waker: &Waker) {
            *self.waker.lock().unwrap() = Some(waker.clone());
        }

        pub(crate) fn wake(&self) {
            if let Some(waker) = self.waker.lock().unwrap().take() {
                waker.wake();
            }
        }
    }
}
