//! One assigned partition as the consumer feeds it: its offsets, the
//! records held back, and whether it should be paused. Pure: the consumer
//! thread does the I/O this state asks for.
//!
//! Invariants: every record read from the partition while it is assigned
//! is taken by its offset tracker, so nothing is committed past a record
//! that is held, in the engine, or failed and not yet settled; held records
//! are in offset order and are submitted before any later record.

use std::collections::VecDeque;

use super::{OffsetTracker, PartitionProgress, Record};

/// A record read but not in the engine: held back while its partition is
/// paused, refused by the engine, or about to be retried.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) record: Record,
    /// How many times it was tried so far.
    pub(crate) attempt: u32,
}

/// One assigned partition's state.
#[derive(Debug)]
pub(crate) struct PartitionFeed {
    /// Which assignment of the partition this is: an answer for an earlier
    /// one is stale.
    pub(crate) assignment: u64,
    pub(crate) offsets: OffsetTracker,
    /// Records read and not yet submitted, in offset order.
    pub(crate) held: VecDeque<Held>,
    /// Records submitted whose answer has not come back.
    pub(crate) in_engine: usize,
    /// Paused at the broker (nothing more is fetched).
    pub(crate) paused: bool,
    /// Stopped by the failure policy: nothing more is fed.
    pub(crate) stopped: bool,
    /// The last offset committed.
    pub(crate) committed: Option<i64>,
}

impl PartitionFeed {
    pub(crate) fn new(assignment: u64) -> Self {
        Self {
            assignment,
            offsets: OffsetTracker::new(),
            held: VecDeque::new(),
            in_engine: 0,
            paused: false,
            stopped: false,
            committed: None,
        }
    }

    /// Whether a record just read may go straight to the engine: nothing
    /// held before it, and the partition under its bound.
    pub(crate) fn may_submit(&self, max_in_engine: usize) -> bool {
        !self.stopped && self.held.is_empty() && self.in_engine < max_in_engine
    }

    /// Holds a record back, keeping `held` in offset order (a refused or
    /// retried record goes before the later ones read meanwhile).
    pub(crate) fn hold(&mut self, held: Held) {
        let at = self
            .held
            .partition_point(|other| other.record.offset < held.record.offset);
        self.held.insert(at, held);
        debug_assert!(self
            .held
            .iter()
            .zip(self.held.iter().skip(1))
            .all(|(a, b)| a.record.offset < b.record.offset));
    }

    /// Whether the partition should be paused at the broker now. Pausing
    /// at the bound and resuming at half of it keeps a busy partition from
    /// flapping.
    pub(crate) fn should_pause(&self, max_in_engine: usize) -> bool {
        if self.paused {
            self.stopped || !self.held.is_empty() || self.in_engine > max_in_engine / 2
        } else {
            self.stopped || !self.held.is_empty() || self.in_engine >= max_in_engine
        }
    }

    /// The partition's figures for [`Progress`](super::Progress).
    pub(crate) fn progress(&self) -> PartitionProgress {
        PartitionProgress {
            committed: self.committed,
            unanswered: self.offsets.unanswered(),
            held: self.held.len(),
            paused: self.paused,
            stopped: self.stopped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Held, PartitionFeed};
    use crate::kafka::Record;

    fn held(offset: i64) -> Held {
        Held {
            record: Record {
                topic: "t".into(),
                partition: 0,
                offset,
                key: None,
                payload: None,
                timestamp_ms: None,
            },
            attempt: 0,
        }
    }

    #[test]
    fn held_records_stay_in_offset_order() {
        let mut feed = PartitionFeed::new(1);
        for offset in [4, 9, 2, 7] {
            feed.hold(held(offset));
        }
        let offsets: Vec<i64> = feed.held.iter().map(|h| h.record.offset).collect();
        assert_eq!(offsets, [2, 4, 7, 9]);
    }

    #[test]
    fn pauses_at_the_bound_and_resumes_at_half_of_it() {
        let mut feed = PartitionFeed::new(1);
        let cases = [
            // (in_engine, paused before, should be paused)
            (9, false, false),
            (10, false, true),
            (6, true, true),
            (5, true, false),
        ];
        for (in_engine, paused, expected) in cases {
            feed.in_engine = in_engine;
            feed.paused = paused;
            assert_eq!(
                feed.should_pause(10),
                expected,
                "{in_engine} in the engine, paused {paused}"
            );
        }
        feed.in_engine = 0;
        feed.hold(held(3));
        assert!(feed.should_pause(10), "a held record pauses");
        assert!(!feed.may_submit(10), "nothing overtakes a held record");
    }
}
