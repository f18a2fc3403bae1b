//! A record as the consumer hands it to the decoder and the failure
//! policy, and the partition it came from.

use std::fmt;

use rdkafka::message::{BorrowedMessage, Message};

/// A partition of a topic: the unit Kafka assigns to a group's members,
/// and the unit the consumer pauses, resumes and commits.
///
/// ```
/// use ferry::kafka::Partition;
///
/// let partition = Partition::new("ledger", 3);
/// assert_eq!(partition.to_string(), "ledger/3");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Partition {
    /// The topic's name.
    pub topic: String,
    /// The partition's number in its topic.
    pub partition: i32,
}

impl Partition {
    /// The partition `partition` of `topic`.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.topic, self.partition)
    }
}

/// One record of a partition, copied out of the consumer: what the decoder
/// turns into a key and an input, and what a failure policy is shown (and
/// may write to a dead-letter topic).
///
/// ```
/// use ferry::kafka::Record;
///
/// let record = Record {
///     topic: "ledger".into(),
///     partition: 0,
///     offset: 41,
///     key: Some(b"account-7".to_vec()),
///     payload: Some(b"+100".to_vec()),
///     timestamp_ms: None,
/// };
/// assert_eq!(record.partition().to_string(), "ledger/0");
/// assert_eq!(record.key_str(), Some("account-7"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The topic it was read from.
    pub topic: String,
    /// Its partition.
    pub partition: i32,
    /// Its offset in the partition: the rank of its key's inputs.
    pub offset: i64,
    /// Its key, if it has one.
    pub key: Option<Vec<u8>>,
    /// Its value, if it has one (`None` is a tombstone).
    pub payload: Option<Vec<u8>>,
    /// Its timestamp (milliseconds since the Unix epoch), if it has one.
    pub timestamp_ms: Option<i64>,
}

impl Record {
    /// The partition the record was read from.
    pub fn partition(&self) -> Partition {
        Partition::new(self.topic.clone(), self.partition)
    }

    /// The key as UTF-8, if it has one and it is UTF-8.
    pub fn key_str(&self) -> Option<&str> {
        self.key
            .as_deref()
            .and_then(|key| std::str::from_utf8(key).ok())
    }

    /// The value as UTF-8, if it has one and it is UTF-8.
    pub fn payload_str(&self) -> Option<&str> {
        self.payload
            .as_deref()
            .and_then(|payload| std::str::from_utf8(payload).ok())
    }

    /// Copies what the consumer returned, so that it outlives the poll.
    pub(crate) fn copied_from(message: &BorrowedMessage<'_>) -> Self {
        Self {
            topic: message.topic().to_owned(),
            partition: message.partition(),
            offset: message.offset(),
            key: message.key().map(<[u8]>::to_vec),
            payload: message.payload().map(<[u8]>::to_vec),
            timestamp_ms: message.timestamp().to_millis(),
        }
    }
}
