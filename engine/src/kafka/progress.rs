//! What a consumer has done so far: a snapshot it publishes as it goes.

use std::collections::BTreeMap;

use super::Partition;

/// A snapshot of a [`Consumer`](super::Consumer)'s work, from
/// [`Consumer::progress`](super::Consumer::progress). Counters are since
/// start; `partitions` holds the partitions assigned now.
///
/// Every record read from an assigned partition ends one way: answered,
/// dead-lettered by the failure policy, or still unanswered (in the engine,
/// held, or failed on a stopped partition), and then its partition's
/// commits stay before it.
///
/// ```
/// use ferry::kafka::{PartitionProgress, Progress};
///
/// let progress = Progress::default();
/// assert_eq!(progress.unanswered(), 0);
/// assert!(progress.partitions.values().all(|p: &PartitionProgress| !p.stopped));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// The partitions assigned now, each with its own figures.
    pub partitions: BTreeMap<Partition, PartitionProgress>,
    /// Submissions to the engine (a retried record counts again).
    pub submitted: u64,
    /// Records answered with their output.
    pub answered: u64,
    /// Records the failure policy gave up to a dead letter.
    pub dead_lettered: u64,
    /// Records the failure policy sent again.
    pub retried: u64,
    /// Submissions the engine refused for its bounds (each record was
    /// held and sent again, its partition paused meanwhile).
    pub refused: u64,
    /// Of `refused`, those a shard decided after admitting the record (its
    /// `max_waiting`, or the key's `max_waiting_per_key`). Such a record
    /// is held and sent again too, but a later record of its key may have
    /// been applied before it: keep the consumer's bounds under the
    /// engine's (see [`ConsumerBuilder::max_unanswered`]) so that this
    /// stays 0.
    ///
    /// [`ConsumerBuilder::max_unanswered`]: super::ConsumerBuilder::max_unanswered
    pub refused_by_shard: u64,
    /// Rebalances that assigned partitions to this member.
    pub assigned: u64,
    /// Rebalances that took partitions from this member.
    pub revoked: u64,
    /// The last error the Kafka client reported while polling (it retries
    /// on its own: brokers down, a partition moving).
    pub last_poll_error: Option<String>,
}

impl Progress {
    /// Records taken from the assigned partitions and not yet answered.
    pub fn unanswered(&self) -> usize {
        self.partitions.values().map(|p| p.unanswered).sum()
    }
}

/// One assigned partition's figures, within a [`Progress`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionProgress {
    /// The last offset committed (the next record to read), if any.
    pub committed: Option<i64>,
    /// Records taken and not yet answered (a failed record the policy
    /// stopped the partition on stays here).
    pub unanswered: usize,
    /// Records read but held back, the partition being paused.
    pub held: usize,
    /// The partition is paused (its unanswered records passed the bound,
    /// or the engine refused one of them, or it is stopped).
    pub paused: bool,
    /// The failure policy stopped the partition.
    pub stopped: bool,
}
