//! One batch (or trip) as the loop runs it: the user's function's future,
//! with its panic caught, in a heap cell the loop reuses.
//!
//! A batch future must stay where it is once polled, so it lives in a
//! pinned box. Against a fast store most batches finish on their first
//! poll; their box is then emptied in place and kept for the next batch,
//! so such a batch allocates nothing for its future. A batch still pending
//! after that poll keeps its box while it runs and gives it back when it
//! finishes. What the loop keeps of the batch meanwhile (its ticket and
//! replies, or a trip's) travels with it as `H`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::future::CatchUnwind;
use futures::FutureExt;

use crate::core::ended::Ended;
use crate::core::trace::Scope;
use crate::value::nanos::Nanos;

/// A batch function's future with its panic caught.
type Caught<F> = CatchUnwind<AssertUnwindSafe<F>>;

/// The reusable home of a batch's future: empty between batches.
pub(crate) type Cell<F> = Pin<Box<Option<Caught<F>>>>;

/// Empty cells kept for reuse at most (one per batch that finished at once
/// is enough; a few more cover batches finishing together).
const CELLS_KEPT_MAX: usize = 16;

/// A batch running: its future in its cell, what the loop keeps of it
/// (its ticket and callers), and when it started.
pub(crate) struct BatchRun<H, F> {
    cell: Option<Cell<F>>,
    held: Option<H>,
    started: Nanos,
    scope: Scope,
}

/// A batch that finished: what the loop needs to release and answer it,
/// and its emptied cell.
pub(crate) struct Finished<H, F: Future> {
    pub(crate) held: H,
    pub(crate) ended: Ended<F::Output>,
    pub(crate) started: Nanos,
    pub(crate) cell: Cell<F>,
    /// The batch's span (feature `tracing`), for its fault event.
    pub(crate) scope: Scope,
}

// Nothing is pinned structurally: the future is behind its own box.
impl<H, F> Unpin for BatchRun<H, F> {}

/// What the first poll of a batch's future gave.
pub(crate) enum FirstPoll<F: Future> {
    /// It finished: how, and its cell, emptied for the next batch.
    Finished(Ended<F::Output>, Cell<F>),
    /// It waits: its cell, with the future inside, to run on as a
    /// [`BatchRun`].
    Pending(Cell<F>),
}

/// Puts `future` in `cell` (emptied before) and polls it once. A batch
/// that finishes here never becomes a [`BatchRun`]: against a fast store,
/// most batches.
pub(crate) fn first_poll<F: Future>(
    mut cell: Cell<F>,
    future: F,
    cx: &mut Context<'_>,
) -> FirstPoll<F> {
    debug_assert!(cell.is_none(), "a cell is emptied before reuse");
    cell.set(Some(AssertUnwindSafe(future).catch_unwind()));
    match poll_in(&mut cell, cx) {
        Poll::Ready(outcome) => FirstPoll::Finished(outcome, cell),
        Poll::Pending => FirstPoll::Pending(cell),
    }
}

/// Polls the future in `cell`; once it finishes, drops it in place (the
/// box stays, for reuse) and gives its outcome.
fn poll_in<F: Future>(cell: &mut Cell<F>, cx: &mut Context<'_>) -> Poll<Ended<F::Output>> {
    let running = cell
        .as_mut()
        .as_pin_mut()
        .expect("a running batch's cell is full");
    let Poll::Ready(result) = running.poll(cx) else {
        return Poll::Pending;
    };
    cell.set(None);
    Poll::Ready(match result {
        Ok(returned) => Ended::Returned(returned),
        Err(_) => Ended::Panicked,
    })
}

impl<H, F> BatchRun<H, F> {
    /// The batch `held` whose first poll left it pending: its future in
    /// `cell`, inside the span `scope`.
    pub(crate) fn new(cell: Cell<F>, held: H, started: Nanos, scope: Scope) -> Self {
        debug_assert!(cell.is_some(), "a pending batch's cell is full");
        Self {
            cell: Some(cell),
            held: Some(held),
            started,
            scope,
        }
    }
}

impl<H, F: Future> Future for BatchRun<H, F> {
    type Output = Finished<H, F>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let cell = this
            .cell
            .as_mut()
            .expect("a batch is polled until it finishes, not after");
        let Poll::Ready(ended) = poll_in(cell, cx) else {
            return Poll::Pending;
        };
        Poll::Ready(Finished {
            held: this.held.take().expect("held until finished"),
            ended,
            started: this.started,
            cell: this.cell.take().expect("a cell until finished"),
            scope: this.scope.clone(),
        })
    }
}

/// Empty cells for the next batches.
pub(crate) struct Cells<F> {
    spare: Vec<Cell<F>>,
}

impl<F> Default for Cells<F> {
    fn default() -> Self {
        Self { spare: Vec::new() }
    }
}

impl<F> Cells<F> {
    /// An empty cell: a kept one, or a new one.
    pub(crate) fn take(&mut self) -> Cell<F> {
        self.spare.pop().unwrap_or_else(|| Box::pin(None))
    }

    /// Keeps an emptied cell for a later batch (up to a few).
    pub(crate) fn keep(&mut self, cell: Cell<F>) {
        if self.spare.len() < CELLS_KEPT_MAX {
            self.spare.push(cell);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trace;

    fn cx_noop<R>(f: impl FnOnce(&mut Context<'_>) -> R) -> R {
        let waker = futures::task::noop_waker();
        f(&mut Context::from_waker(&waker))
    }

    #[test]
    fn a_batch_finished_at_once_hands_back_its_cell_empty_and_the_same_box() {
        let mut cells = Cells::default();
        let cell = cells.take();
        let address = &*cell as *const _ as usize;
        let polled = cx_noop(|cx| first_poll(cell, std::future::ready(Ok::<_, ()>(vec![7])), cx));
        let FirstPoll::Finished(outcome, cell) = polled else {
            panic!("a ready future finishes on its first poll");
        };
        assert!(matches!(outcome, Ended::Returned(Ok(ref outputs)) if outputs == &[7]));
        assert!(cell.is_none());
        cells.keep(cell);
        assert_eq!(
            &*cells.take() as *const _ as usize,
            address,
            "the box is reused"
        );
    }

    #[test]
    fn a_panicking_batch_finishes_panicked() {
        let future = async {
            if true {
                panic!("the store exploded");
            }
            Ok::<Vec<u32>, ()>(Vec::new())
        };
        let polled = cx_noop(|cx| first_poll(Box::pin(None), future, cx));
        assert!(matches!(polled, FirstPoll::Finished(Ended::Panicked, _)));
    }

    #[test]
    fn a_pending_batch_runs_on_in_its_cell_and_hands_it_back_empty() {
        let (tell, answer) = futures::channel::oneshot::channel::<Vec<u32>>();
        let future = async move { Ok::<_, ()>(answer.await.unwrap_or_default()) };
        let FirstPoll::Pending(cell) = cx_noop(|cx| first_poll(Box::pin(None), future, cx)) else {
            panic!("nothing was sent yet");
        };
        let address = &*cell as *const _ as usize;
        let mut run: BatchRun<u8, _> = BatchRun::new(cell, 4, Nanos::ZERO, trace::no_scope());
        assert!(cx_noop(|cx| Pin::new(&mut run).poll(cx)).is_pending());
        tell.send(vec![9]).unwrap();
        let Poll::Ready(finished) = cx_noop(|cx| Pin::new(&mut run).poll(cx)) else {
            panic!("answered");
        };
        assert_eq!(finished.held, 4);
        assert!(
            matches!(finished.ended, Ended::Returned(Ok::<_, ()>(ref outputs)) if outputs == &[9])
        );
        assert!(finished.cell.is_none());
        assert_eq!(&*finished.cell as *const _ as usize, address);
    }
}
