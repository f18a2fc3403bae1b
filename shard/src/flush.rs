//! Which inputs a flush waits for (SPEC §4.2): pure bookkeeping, no clock,
//! no I/O.
//!
//! Every admitted input belongs to the *generation* current when it was
//! admitted; a flush request closes the current generation and waits until
//! every input of the closed generations is resolved (answered, expired or
//! withdrawn). Generations are counted, not listed: one count per
//! generation still open, so an input costs an increment and a decrement,
//! and a shard that is never flushed keeps a single count.
//!
//! Invariant: `open[g - oldest]` is the number of unresolved inputs of
//! generation `g`; every generation but the newest in `open` has at least one
//! (empty old ones are dropped at once), and a request waits exactly while
//! a generation before its boundary is still open.

use std::collections::VecDeque;

/// The generations of one shard, and the flush requests waiting on them.
///
/// ```
/// use ferry_shard::parts::Generations;
///
/// let mut generations = Generations::<&str>::default();
/// let first = generations.admitted();
/// assert!(generations.request("flush").is_empty(), "waits for the first input");
/// let second = generations.admitted(); // after the flush: not waited for
/// assert!(generations.resolved(second).is_empty());
/// assert_eq!(generations.resolved(first), vec!["flush"]);
/// ```
#[derive(Debug)]
pub struct Generations<R> {
    /// The oldest generation still open.
    oldest: u64,
    /// Unresolved inputs per open generation, oldest first; never empty.
    open: VecDeque<u64>,
    /// Requests and the generation each waits to see closed: resolved
    /// once `oldest` reaches it. In request order, so boundaries grow.
    requests: VecDeque<(u64, R)>,
}

impl<R> Default for Generations<R> {
    fn default() -> Self {
        Self {
            oldest: 0,
            open: VecDeque::from([0]),
            requests: VecDeque::new(),
        }
    }
}

impl<R> Generations<R> {
    /// The generation of an input admitted now.
    pub fn current(&self) -> u64 {
        self.oldest + self.open.len() as u64 - 1
    }

    /// An input was admitted: it joins the current generation, returned.
    pub fn admitted(&mut self) -> u64 {
        *self.open.back_mut().expect("a current generation") += 1;
        self.current()
    }

    /// An input of `generation` was resolved. Returns the requests that it
    /// completed (every input admitted before them is resolved).
    pub fn resolved(&mut self, generation: u64) -> Vec<R> {
        let at = (generation - self.oldest) as usize;
        let count = &mut self.open[at];
        debug_assert!(*count > 0, "resolved more inputs than admitted");
        *count -= 1;
        if at == 0 && *count == 0 {
            self.settle()
        } else {
            Vec::new()
        }
    }

    /// A flush: `reply` waits until every input admitted so far is
    /// resolved. Returned at once (completed) if none is outstanding.
    pub fn request(&mut self, reply: R) -> Vec<R> {
        let boundary = self.current() + 1;
        self.open.push_back(0);
        self.requests.push_back((boundary, reply));
        self.settle()
    }

    /// Whether a request is waiting.
    pub fn is_waiting(&self) -> bool {
        !self.requests.is_empty()
    }

    /// Drops the empty generations at the front and completes the requests
    /// they held up.
    fn settle(&mut self) -> Vec<R> {
        while self.open.len() > 1 && self.open[0] == 0 {
            self.open.pop_front();
            self.oldest += 1;
        }
        let mut completed = Vec::new();
        while self
            .requests
            .front()
            .is_some_and(|(boundary, _)| *boundary <= self.oldest)
        {
            completed.push(self.requests.pop_front().expect("a request").1);
        }
        completed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_with_nothing_outstanding_completes_at_once() {
        let mut generations = Generations::default();
        assert_eq!(generations.request(1), vec![1]);
        let input = generations.admitted();
        assert_eq!(generations.request(2), Vec::<i32>::new());
        assert_eq!(generations.resolved(input), vec![2]);
        assert!(!generations.is_waiting());
    }

    #[test]
    fn flushes_complete_in_order_as_their_generations_close() {
        let mut generations = Generations::default();
        let a = generations.admitted();
        let b = generations.admitted();
        assert!(generations.request("first").is_empty());
        let c = generations.admitted();
        assert!(generations.request("second").is_empty());
        // The later input resolved first completes nothing: "second" also
        // waits for the first generation.
        assert!(generations.resolved(c).is_empty());
        assert!(generations.resolved(a).is_empty());
        assert_eq!(generations.resolved(b), vec!["first", "second"]);
        assert_eq!(generations.current(), 2);
    }

    #[test]
    fn a_later_generation_resolved_early_is_remembered() {
        let mut generations = Generations::default();
        let a = generations.admitted();
        assert!(generations.request('x').is_empty());
        let b = generations.admitted();
        assert!(generations.request('y').is_empty());
        assert!(generations.resolved(b).is_empty(), "x and y wait for a");
        assert_eq!(generations.resolved(a), vec!['x', 'y']);
    }
}
