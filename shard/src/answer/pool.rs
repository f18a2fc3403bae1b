//! Each thread's spare memory blocks for answer cells (`answer_cell.rs`).
//!
//! An input submitted on its own needs a cell that its caller and its shard
//! share until both are done with it: one block of memory per input. The
//! global allocator would serve it, at about 150 instructions for the
//! `malloc` and `free` together, more when the block is freed on another
//! thread than the one that took it. Here a thread keeps the blocks it
//! frees and hands them out again: a caller that waits for its own answers
//! takes back the very blocks its last answers used, with no atomic
//! operation and no lock.
//!
//! Blocks come in a few sizes (`CLASSES`), all aligned to a cache line so
//! that two cells never share one (each is written by two cores). A layout
//! larger than the largest class, or more strictly aligned, goes to the
//! global allocator. A thread keeps at most `KEEP_BYTES` of spare blocks
//! per class and frees the spares of a thread that ends.
//!
//! Blocks also travel: a cell is given back by whichever end lets go last,
//! now and then the shard's, whose thread takes no blocks of its own. What
//! a thread cannot keep, or does not keep since it never takes any, goes
//! to a store every thread shares (`COMMON` blocks per class, one
//! compare-and-swap to put or take), where a thread that runs out looks
//! before it allocates; only what the store cannot hold is freed.
//!
//! Invariant: a block is handed out only if no one else holds it, and
//! [`free`] receives only blocks [`alloc`] handed out, with the same layout.

use std::alloc::Layout;
use std::ptr::NonNull;

/// The block sizes, smallest first; all aligned to `ALIGN`.
const CLASSES: [usize; 3] = [64, 128, 256];

/// The alignment of every block: a cache line.
const ALIGN: usize = 64;

/// Spare bytes a thread keeps per class, at most.
#[cfg_attr(loom, allow(dead_code))]
const KEEP_BYTES: usize = 64 * 1024;

/// Spare blocks a thread keeps per class, at most.
#[cfg_attr(loom, allow(dead_code))]
const KEEP: [usize; CLASSES.len()] = [
    KEEP_BYTES / CLASSES[0],
    KEEP_BYTES / CLASSES[1],
    KEEP_BYTES / CLASSES[2],
];

/// Blocks per class the shared store holds, at most.
#[cfg_attr(loom, allow(dead_code))]
const COMMON: usize = 4_096;

/// A block for `layout`: this thread's spare, the shared store's, or new.
#[inline]
pub(crate) fn alloc(layout: Layout) -> NonNull<u8> {
    let Some(class) = class_of(layout) else {
        return global_alloc(layout);
    };
    imp::take(class)
        .or_else(|| imp::take_common(class))
        .unwrap_or_else(|| global_alloc(class_layout(class)))
}

/// Gives back a block [`alloc`] handed out for `layout`: kept as this
/// thread's spare, or freed.
///
/// # Safety
///
/// `block` came from [`alloc`] with this `layout` (on any thread), and
/// nothing uses it any more.
#[allow(unsafe_code)]
#[inline]
pub(crate) unsafe fn free(block: NonNull<u8>, layout: Layout) {
    let Some(class) = class_of(layout) else {
        // SAFETY: `alloc` took it from the global allocator with `layout`.
        unsafe { std::alloc::dealloc(block.as_ptr(), layout) };
        return;
    };
    let Err(block) = imp::keep(class, block).or_else(|block| imp::keep_common(class, block)) else {
        return;
    };
    // SAFETY: `alloc` took every block of this class from the global
    // allocator with the class's layout.
    unsafe { std::alloc::dealloc(block.as_ptr(), class_layout(class)) };
}

/// The smallest class that holds `layout`, if any does. Inlined, so that
/// for a layout known when compiling (a cell's) the class is too.
#[inline(always)]
fn class_of(layout: Layout) -> Option<usize> {
    if layout.align() > ALIGN {
        return None;
    }
    CLASSES.iter().position(|&size| layout.size() <= size)
}

fn class_layout(class: usize) -> Layout {
    Layout::from_size_align(CLASSES[class], ALIGN).expect("a class's layout is valid")
}

fn global_alloc(layout: Layout) -> NonNull<u8> {
    assert!(layout.size() > 0, "an answer cell is never empty");
    // SAFETY: the layout has a non-zero size.
    #[allow(unsafe_code)]
    let block = unsafe { std::alloc::alloc(layout) };
    NonNull::new(block).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

#[cfg(not(loom))]
mod imp {
    use std::cell::Cell;
    use std::ptr::NonNull;
    use std::sync::OnceLock;

    use crossbeam_queue::ArrayQueue;

    use super::{class_layout, CLASSES, COMMON, KEEP};

    /// A spare block in the shared store.
    struct Common(NonNull<u8>);

    // SAFETY: a block in the store is used by no one; whoever takes it out
    // owns it, on whatever thread.
    #[allow(unsafe_code)]
    unsafe impl Send for Common {}

    /// The store every thread shares, by class. Its blocks live as long
    /// as the process.
    fn common(class: usize) -> &'static ArrayQueue<Common> {
        static STORE: OnceLock<[ArrayQueue<Common>; CLASSES.len()]> = OnceLock::new();
        &STORE.get_or_init(|| std::array::from_fn(|_| ArrayQueue::new(COMMON)))[class]
    }

    /// A block of `class` from the shared store, if it has one.
    pub(super) fn take_common(class: usize) -> Option<NonNull<u8>> {
        common(class).pop().map(|Common(block)| block)
    }

    /// Puts `block` in the shared store, or hands it back if the store is
    /// full.
    pub(super) fn keep_common(class: usize, block: NonNull<u8>) -> Result<(), NonNull<u8>> {
        common(class)
            .push(Common(block))
            .map_err(|Common(block)| block)
    }

    thread_local! {
        static SPARES: Spares = const { Spares::new() };
    }

    /// One thread's spare blocks, by class: each class a list threaded
    /// through the blocks themselves (a spare's first word points to the
    /// next spare), so that taking and keeping are a few moves.
    struct Spares {
        classes: [Class; CLASSES.len()],
    }

    struct Class {
        first: Cell<Option<NonNull<u8>>>,
        len: Cell<usize>,
        /// This thread asked for a block of the class: it keeps spares. A
        /// thread that only gives blocks back (a shard's, answering other
        /// threads' callers) passes them all to the shared store.
        takes: Cell<bool>,
    }

    impl Class {
        const fn new() -> Self {
            Self {
                first: Cell::new(None),
                len: Cell::new(0),
                takes: Cell::new(false),
            }
        }
    }

    impl Spares {
        const fn new() -> Self {
            Self {
                classes: [Class::new(), Class::new(), Class::new()],
            }
        }
    }

    impl Drop for Spares {
        fn drop(&mut self) {
            for class in 0..CLASSES.len() {
                while let Some(block) = take_from(&self.classes[class]) {
                    // SAFETY: every spare was allocated with its class's
                    // layout and is used by no one.
                    #[allow(unsafe_code)]
                    unsafe {
                        std::alloc::dealloc(block.as_ptr(), class_layout(class))
                    };
                }
            }
        }
    }

    fn take_from(class: &Class) -> Option<NonNull<u8>> {
        let block = class.first.get()?;
        // SAFETY: a spare's first word holds the next spare (see `keep`);
        // blocks are aligned to a cache line, so to a pointer too.
        #[allow(unsafe_code)]
        let next = unsafe { block.cast::<Option<NonNull<u8>>>().as_ptr().read() };
        class.first.set(next);
        class.len.set(class.len.get() - 1);
        Some(block)
    }

    /// A spare block of `class`, if this thread has one.
    #[inline]
    pub(super) fn take(class: usize) -> Option<NonNull<u8>> {
        // A thread that is ending (its spares already dropped) has none.
        SPARES
            .try_with(|spares| {
                let spares = &spares.classes[class];
                spares.takes.set(true);
                take_from(spares)
            })
            .ok()
            .flatten()
    }

    /// Keeps `block` as a spare of `class`, or hands it back if this
    /// thread keeps enough (or is ending).
    #[inline]
    pub(super) fn keep(class: usize, block: NonNull<u8>) -> Result<(), NonNull<u8>> {
        SPARES
            .try_with(|spares| {
                let spares = &spares.classes[class];
                if !spares.takes.get() || spares.len.get() >= KEEP[class] {
                    return Err(block);
                }
                // SAFETY: the block is unused and at least a pointer large
                // and aligned; its first word now links it to the list.
                #[allow(unsafe_code)]
                unsafe {
                    block
                        .cast::<Option<NonNull<u8>>>()
                        .as_ptr()
                        .write(spares.first.get())
                };
                spares.first.set(Some(block));
                spares.len.set(spares.len.get() + 1);
                Ok(())
            })
            .unwrap_or(Err(block))
    }
}

/// Under loom every block goes to the global allocator: the model checks
/// the cell's protocol, not the thread's spares.
#[cfg(loom)]
mod imp {
    use std::ptr::NonNull;

    pub(super) fn take(_class: usize) -> Option<NonNull<u8>> {
        None
    }

    pub(super) fn keep(_class: usize, block: NonNull<u8>) -> Result<(), NonNull<u8>> {
        Err(block)
    }

    pub(super) fn take_common(_class: usize) -> Option<NonNull<u8>> {
        None
    }

    pub(super) fn keep_common(_class: usize, block: NonNull<u8>) -> Result<(), NonNull<u8>> {
        Err(block)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_freed_block_is_handed_out_again_on_the_same_thread() {
        let layout = Layout::from_size_align(48, 8).unwrap();
        let first = alloc(layout);
        // SAFETY: from `alloc` with this layout, unused.
        #[allow(unsafe_code)]
        unsafe {
            free(first, layout)
        };
        let again = alloc(layout);
        assert_eq!(again, first);
        assert_eq!(
            again.as_ptr() as usize % ALIGN,
            0,
            "blocks are line-aligned"
        );
        // SAFETY: as above.
        #[allow(unsafe_code)]
        unsafe {
            free(again, layout)
        };
    }

    #[test]
    fn layouts_go_to_the_smallest_class_that_holds_them_or_to_the_allocator() {
        let of = |size, align| class_of(Layout::from_size_align(size, align).unwrap());
        assert_eq!(of(1, 1), Some(0));
        assert_eq!(of(64, 64), Some(0));
        assert_eq!(of(65, 8), Some(1));
        assert_eq!(of(256, 16), Some(2));
        assert_eq!(of(257, 8), None);
        assert_eq!(of(64, 128), None);
    }

    #[test]
    fn a_thread_keeps_no_more_than_its_bound() {
        std::thread::spawn(|| {
            let layout = Layout::from_size_align(200, 8).unwrap();
            // A thread keeps spares once it takes blocks itself.
            let keep = KEEP[2];
            let blocks: Vec<_> = (0..keep + 10).map(|_| alloc(layout)).collect();
            for &block in &blocks {
                // SAFETY: each from `alloc` with this layout, unused.
                #[allow(unsafe_code)]
                unsafe {
                    free(block, layout)
                };
            }
            assert_eq!(spares_of(2), keep);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn blocks_a_thread_cannot_keep_reach_another_through_the_shared_store() {
        let layout = Layout::from_size_align(100, 8).unwrap();
        let (keep, class) = (KEEP[1], 1);
        // A thread given back more blocks than it keeps puts the rest in
        // the store...
        let blocks: Vec<usize> = (0..keep + 5)
            .map(|_| alloc(layout).as_ptr() as usize)
            .collect();
        std::thread::spawn(move || {
            let own = alloc(layout);
            for &block in &blocks {
                let block = NonNull::new(block as *mut u8).unwrap();
                // SAFETY: from `alloc` with this layout, unused.
                #[allow(unsafe_code)]
                unsafe {
                    free(block, layout)
                };
            }
            assert_eq!(spares_of(class), keep);
            // SAFETY: from `alloc` with this layout, unused.
            #[allow(unsafe_code)]
            unsafe {
                free(own, layout)
            };
        })
        .join()
        .unwrap();
        // ...where a thread with no spares finds them.
        std::thread::spawn(move || {
            assert_eq!(spares_of(class), 0);
            let found = imp::take_common(class);
            assert!(
                found.is_some(),
                "the store holds what the other could not keep"
            );
            // SAFETY: taken from the store, unused.
            #[allow(unsafe_code)]
            unsafe {
                free(found.unwrap(), layout)
            };
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_that_never_takes_keeps_nothing() {
        let layout = Layout::from_size_align(100, 8).unwrap();
        let block = alloc(layout).as_ptr() as usize;
        std::thread::spawn(move || {
            let block = NonNull::new(block as *mut u8).unwrap();
            // SAFETY: from `alloc` with this layout, unused.
            #[allow(unsafe_code)]
            unsafe {
                free(block, layout)
            };
            assert_eq!(spares_of(1), 0, "passed on to the store");
        })
        .join()
        .unwrap();
    }

    /// Spares of `class` this thread holds, by taking them all and
    /// giving them back.
    fn spares_of(class: usize) -> usize {
        let mut taken = Vec::new();
        while let Some(block) = imp::take(class) {
            taken.push(block);
        }
        let len = taken.len();
        for block in taken {
            imp::keep(class, block).unwrap();
        }
        len
    }
}
