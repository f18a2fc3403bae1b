//! The longest lane, as last seen: the `longest_lane` gauge, kept by
//! `Lanes` in constant time per change, with no scan over the lanes.
//!
//! An exact maximum under removals would need an ordered structure on the
//! admission path. Instead the tracker follows one lane, the one that was
//! longest when some lane last grew or was taken from, and keeps its count
//! exact. It never reports more inputs than some lane holds; it reports
//! fewer only while the lane it follows has shrunk below another lane that
//! has not changed since, and that other lane changes at its next input or
//! batch (a lane with waiting inputs is taken within `max_batch_delay`, a
//! slot, or its previous batch).
//!
//! Invariant: every change to a lane's waiting count is reported here
//! (`grew` after an admission, `shrank` after a take or any other removal),
//! so the count of the lane followed is its true count.

/// See the module docs. `place` names a lane by where `Lanes` keeps it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Longest {
    place: u32,
    waiting: usize,
}

impl Longest {
    /// The lane at `place` now has `waiting` inputs, one more than before.
    pub(crate) fn grew(&mut self, place: u32, waiting: usize) {
        if place == self.place || waiting >= self.waiting {
            *self = Longest { place, waiting };
        }
    }

    /// The lane at `place` now has `waiting` inputs, fewer than before.
    pub(crate) fn shrank(&mut self, place: u32, waiting: usize) {
        if place == self.place || waiting > self.waiting {
            *self = Longest { place, waiting };
        }
    }

    /// Every lane was emptied.
    pub(crate) fn clear(&mut self) {
        *self = Longest::default();
    }

    /// Waiting inputs of the lane followed.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_lane_that_grew_longest() {
        let mut longest = Longest::default();
        longest.grew(1, 1);
        longest.grew(2, 1);
        longest.grew(2, 2);
        longest.grew(1, 2);
        longest.grew(1, 3);
        assert_eq!(longest.waiting(), 3);
        // The lane followed shrinks: its count stays exact.
        longest.shrank(1, 0);
        assert_eq!(
            longest.waiting(),
            0,
            "lane 2 (2 waiting) shows at its next change"
        );
        longest.shrank(2, 1);
        assert_eq!(longest.waiting(), 1);
        longest.grew(3, 1);
        longest.shrank(3, 0);
        assert_eq!(longest.waiting(), 0);
        longest.clear();
        assert_eq!(longest, Longest::default());
    }
}
