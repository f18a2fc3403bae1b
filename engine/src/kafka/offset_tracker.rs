//! Which offsets of one partition are answered, and so how far it may be
//! committed. Pure: no I/O, no clock.
//!
//! Records of a partition are taken in offset order, but answered in any
//! order (their keys are batched apart). Kafka's committed offset means
//! "every record below this one is done", so the commit point is the lowest
//! offset taken and not yet answered, or one past the highest offset taken
//! when every record is answered. Offsets may have gaps (compaction,
//! transaction markers): only offsets actually taken count.
//!
//! Invariant: every offset below the commit point that was taken is
//! answered; the commit point never moves back.

use std::collections::BTreeSet;

/// One partition's offsets taken and not yet answered.
#[derive(Debug, Default)]
pub(crate) struct OffsetTracker {
    /// Offsets taken and not yet answered.
    unanswered: BTreeSet<i64>,
    /// One past the highest offset taken; `None` before the first.
    next: Option<i64>,
}

impl OffsetTracker {
    /// A tracker that has taken nothing yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Records that `offset` was taken: it now holds the commit point back
    /// until it is answered. Offsets are taken in increasing order.
    pub(crate) fn take(&mut self, offset: i64) {
        assert!(
            self.next.is_none_or(|next| offset >= next),
            "offset {offset} taken after {:?}: a partition's records come in offset order",
            self.next
        );
        self.unanswered.insert(offset);
        self.next = Some(offset + 1);
        debug_assert!(self.commit_point() <= Some(offset));
    }

    /// Records that `offset` is answered. Returns `false` if it was not
    /// waiting for an answer (never taken, or answered already), which
    /// changes nothing.
    pub(crate) fn answer(&mut self, offset: i64) -> bool {
        let was_waiting = self.unanswered.remove(&offset);
        debug_assert!(!self.unanswered.contains(&offset));
        was_waiting
    }

    /// Whether `offset` is below one taken already (a record read again).
    pub(crate) fn is_taken(&self, offset: i64) -> bool {
        self.next.is_some_and(|next| offset < next)
    }

    /// The offset to commit: every record taken below it is answered.
    /// `None` before anything was taken.
    pub(crate) fn commit_point(&self) -> Option<i64> {
        self.unanswered.first().copied().or(self.next)
    }

    /// How many records taken are not yet answered.
    pub(crate) fn unanswered(&self) -> usize {
        self.unanswered.len()
    }
}

#[cfg(test)]
mod tests {
    use super::OffsetTracker;
    use proptest::prelude::*;

    /// One step of a table case: take an offset, or answer one.
    #[derive(Clone, Copy, Debug)]
    enum Step {
        Take(i64),
        Answer(i64),
    }
    use Step::{Answer, Take};

    /// A table case: its name, its steps, the commit point after each.
    type Case = (&'static str, &'static [Step], &'static [Option<i64>]);

    /// Runs `steps` and returns the commit point after each.
    fn commit_points(steps: &[Step]) -> Vec<Option<i64>> {
        let mut tracker = OffsetTracker::new();
        steps
            .iter()
            .map(|step| {
                match *step {
                    Take(offset) => tracker.take(offset),
                    Answer(offset) => {
                        tracker.answer(offset);
                    }
                }
                tracker.commit_point()
            })
            .collect()
    }

    #[test]
    fn the_commit_point_is_the_lowest_unanswered_offset() {
        let cases: &[Case] = &[
            ("nothing taken", &[], &[]),
            ("taken, unanswered", &[Take(5)], &[Some(5)]),
            ("answered", &[Take(5), Answer(5)], &[Some(5), Some(6)]),
            (
                "answered out of order",
                &[Take(0), Take(1), Take(2), Answer(2), Answer(0), Answer(1)],
                &[Some(0), Some(0), Some(0), Some(0), Some(1), Some(3)],
            ),
            (
                "gaps in the offsets",
                &[Take(10), Take(14), Answer(14), Answer(10)],
                &[Some(10), Some(10), Some(10), Some(15)],
            ),
            (
                "an unknown or repeated answer changes nothing",
                &[Take(3), Answer(2), Answer(3), Answer(3)],
                &[Some(3), Some(3), Some(4), Some(4)],
            ),
        ];
        for (name, steps, expected) in cases {
            assert_eq!(commit_points(steps), *expected, "{name}");
        }
    }

    #[test]
    #[should_panic(expected = "offset order")]
    fn an_offset_taken_out_of_order_is_a_bug() {
        let mut tracker = OffsetTracker::new();
        tracker.take(4);
        tracker.take(3);
    }

    proptest! {
        /// Against a model written apart: a list of (offset, answered)
        /// pairs, the commit point being the first unanswered one's offset,
        /// else one past the last.
        #[test]
        fn matches_a_list_of_offsets(
            gaps in prop::collection::vec(1i64..4, 1..60),
            answer_order in prop::collection::vec(any::<prop::sample::Index>(), 0..80),
        ) {
            let mut tracker = OffsetTracker::new();
            let mut model: Vec<(i64, bool)> = Vec::new();
            let mut offset = 0;
            for gap in gaps {
                offset += gap;
                tracker.take(offset);
                model.push((offset, false));
            }
            for index in answer_order {
                let slot = index.index(model.len());
                let (offset, answered) = model[slot];
                prop_assert_eq!(tracker.answer(offset), !answered);
                model[slot].1 = true;
                let expected = model
                    .iter()
                    .find(|(_, answered)| !answered)
                    .map(|(offset, _)| *offset)
                    .or(model.last().map(|(offset, _)| offset + 1));
                prop_assert_eq!(tracker.commit_point(), expected);
                let waiting = model.iter().filter(|(_, answered)| !answered).count();
                prop_assert_eq!(tracker.unanswered(), waiting);
            }
        }
    }
}
