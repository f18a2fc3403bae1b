//! Which inputs a flush waits for
//! (docs/guarantees.md#flush-overload-and-withdrawal): pure bookkeeping, no
//! clock, no I/O.
//!
//! Every admitted input belongs to the *generation* current when it was
//! admitted; a flush request closes the current generation and waits until
//! every input of the closed generations is resolved (answered, expired or
//! withdrawn). Generations are counted, not listed: one count per
//! generation still open, so an input costs an increment and a decrement,
//! and a shard that is never flushed keeps a single count.
//!
//! Invariant: `older[g - oldest]` is the number of unresolved inputs of the
//! closed generation `g`, and `current_open` that of the current one; the
//! oldest closed generation kept has at least one (empty ones are dropped
//! at once), and a request waits exactly while a generation before its
//! boundary is still open.

use std::collections::VecDeque;

/// The generations of one shard, and the flush requests waiting on them.
#[derive(Debug)]
pub struct Generations<R> {
    /// The generation of inputs admitted now.
    current: u64,
    /// Its unresolved inputs (kept apart: the steady path touches only
    /// this count).
    current_open: u64,
    /// The oldest generation before `current` still open; `current` when
    /// none is.
    oldest: u64,
    /// Unresolved inputs of each generation from `oldest` up to, not
    /// including, `current`; its front is never 0.
    older: VecDeque<u64>,
    /// Requests and the generation each waits to see closed: completed
    /// once `oldest` reaches it. In request order, so boundaries grow.
    requests: VecDeque<(u64, R)>,
    /// Requests completed, not yet taken (`take_completed`).
    completed: Vec<R>,
}

impl<R> Default for Generations<R> {
    fn default() -> Self {
        Self {
            current: 0,
            current_open: 0,
            oldest: 0,
            older: VecDeque::new(),
            requests: VecDeque::new(),
            completed: Vec::new(),
        }
    }
}

impl<R> Generations<R> {
    /// The generation of an input admitted now.
    #[inline]
    pub fn current(&self) -> u64 {
        self.current
    }

    /// An input was admitted: it joins the current generation, returned.
    #[inline]
    pub fn admitted(&mut self) -> u64 {
        self.current_open += 1;
        self.current
    }

    /// An input of `generation` was resolved. The requests it completes
    /// (every input admitted before them is resolved) are kept for
    /// [`take_completed`](Self::take_completed).
    #[inline]
    pub fn resolved(&mut self, generation: u64) {
        if generation == self.current {
            debug_assert!(self.current_open > 0, "resolved more inputs than admitted");
            self.current_open -= 1;
            return;
        }
        let at = (generation - self.oldest) as usize;
        let count = &mut self.older[at];
        debug_assert!(*count > 0, "resolved more inputs than admitted");
        *count -= 1;
        if at == 0 && *count == 0 {
            self.settle();
        }
    }

    /// A flush: `reply` waits until every input admitted so far is
    /// resolved; completed at once if none is outstanding.
    pub fn request(&mut self, reply: R) {
        self.older.push_back(std::mem::take(&mut self.current_open));
        self.current += 1;
        self.requests.push_back((self.current, reply));
        self.settle();
    }

    /// The requests completed since the last call.
    pub fn take_completed(&mut self) -> Vec<R> {
        std::mem::take(&mut self.completed)
    }

    /// Whether a request is waiting (for the tests).
    #[cfg(test)]
    pub fn is_waiting(&self) -> bool {
        !self.requests.is_empty()
    }

    /// Drops the closed generations at the front and completes the
    /// requests they held up.
    fn settle(&mut self) {
        while self.older.front() == Some(&0) {
            self.older.pop_front();
            self.oldest += 1;
        }
        debug_assert_eq!(self.oldest + self.older.len() as u64, self.current);
        while self
            .requests
            .front()
            .is_some_and(|(boundary, _)| *boundary <= self.oldest)
        {
            let (_, reply) = self.requests.pop_front().expect("a request");
            self.completed.push(reply);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_waits_for_its_generation_only() {
        let mut generations = Generations::<&str>::default();
        let first = generations.admitted();
        generations.request("flush");
        assert!(
            generations.take_completed().is_empty(),
            "waits for the first input"
        );
        let second = generations.admitted(); // after the flush: not waited for
        generations.resolved(second);
        assert!(generations.take_completed().is_empty());
        generations.resolved(first);
        assert_eq!(generations.take_completed(), vec!["flush"]);
    }

    #[test]
    fn a_flush_with_nothing_outstanding_completes_at_once() {
        let mut generations = Generations::default();
        generations.request(1);
        assert_eq!(generations.take_completed(), vec![1]);
        let input = generations.admitted();
        generations.request(2);
        assert_eq!(generations.take_completed(), Vec::<i32>::new());
        generations.resolved(input);
        assert_eq!(generations.take_completed(), vec![2]);
        assert!(!generations.is_waiting());
    }

    #[test]
    fn flushes_complete_in_order_as_their_generations_close() {
        let mut generations = Generations::default();
        let a = generations.admitted();
        let b = generations.admitted();
        generations.request("first");
        let c = generations.admitted();
        generations.request("second");
        // The later input resolved first completes nothing: "second" also
        // waits for the first generation.
        generations.resolved(c);
        generations.resolved(a);
        assert!(generations.take_completed().is_empty());
        generations.resolved(b);
        assert_eq!(generations.take_completed(), vec!["first", "second"]);
        assert_eq!(generations.current(), 2);
    }

    #[test]
    fn a_later_generation_resolved_early_is_remembered() {
        let mut generations = Generations::default();
        let a = generations.admitted();
        generations.request('x');
        let b = generations.admitted();
        generations.request('y');
        generations.resolved(b);
        assert!(
            generations.take_completed().is_empty(),
            "x and y wait for a"
        );
        generations.resolved(a);
        assert_eq!(generations.take_completed(), vec!['x', 'y']);
    }
}
