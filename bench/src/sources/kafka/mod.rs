//! `ferry-load kafka` (feature `kafka`), the source's side: a
//! keyed Kafka topic filled, and the consumer-group members that consume
//! it into PostgreSQL. The run that starts the members, kills one mid-run
//! and judges the rows is [`crate::run::kafka`]; its figures are
//! [`crate::report::kafka`].
//!
//! - [`produce`]: the topic made and filled, each record's value its
//!   key's sequence number and its produce time;
//! - [`rows`]: the tables the systems write (an owner epoch per
//!   partition, per key what was applied; ferry's entities, the same
//!   figures as a key's state), made afresh per system, and read back;
//! - [`write`](mod@write): the partition-serial member's writes: a
//!   partition taken, records applied with the fence (offset and epoch
//!   conditions) or without it (the control);
//! - [`member`]: a member process, which runs a [`consumer`]:
//!   [`ferry_member`] (`ferry::kafka` and `ferry::entity`, the offset
//!   fence in the fold) or [`serial_member`] (one record at a time per
//!   partition); [`lines`]: what it says to the parent.

pub mod consumer;
pub mod ferry_member;
pub mod lines;
pub mod member;
pub mod produce;
pub mod rows;
pub mod serial_member;
pub mod write;

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

/// A consumer compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum System {
    /// `ferry::kafka::Consumer` and `ferry::entity` on PostgreSQL.
    Ferry,
    /// One record at a time per partition, one thread per partition.
    PartitionSerial,
    /// Confluent's parallel-consumer, a Java program run with `java -jar`.
    ParallelConsumer,
}

impl System {
    /// Its name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            System::Ferry => "ferry",
            System::PartitionSerial => "partition-serial",
            System::ParallelConsumer => "parallel-consumer",
        }
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for System {
    type Err = String;

    /// ```
    /// use ferry_bench::sources::kafka::System;
    ///
    /// assert_eq!("partition-serial".parse(), Ok(System::PartitionSerial));
    /// assert!("kafka-streams".parse::<System>().is_err());
    /// ```
    fn from_str(name: &str) -> Result<Self, String> {
        [
            System::Ferry,
            System::PartitionSerial,
            System::ParallelConsumer,
        ]
        .into_iter()
        .find(|system| system.name() == name)
        .ok_or_else(|| {
            format!("`{name}` is not a Kafka system: ferry, partition-serial or parallel-consumer")
        })
    }
}

/// Microseconds since the Unix epoch, now.
pub fn now_us() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}

/// A record's value, `"<seq> <produced_us>"`.
///
/// ```
/// assert_eq!(ferry_bench::sources::kafka::parse_value(Some("3 1700000000000000")), Ok((3, 1_700_000_000_000_000)));
/// assert!(ferry_bench::sources::kafka::parse_value(Some("3")).is_err());
/// ```
pub fn parse_value(value: Option<&str>) -> Result<(i64, i64), String> {
    let value = value.ok_or("a record without a UTF-8 value")?;
    value
        .split_once(' ')
        .and_then(|(seq, at)| Some((seq.parse().ok()?, at.parse().ok()?)))
        .ok_or_else(|| format!("a record whose value `{value}` is not `<seq> <produced_us>`"))
}

/// The PostgreSQL configuration of `url`.
pub(crate) fn pg_config(url: &str) -> Result<tokio_postgres::Config, String> {
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|err| format!("--store: not a PostgreSQL URL: {err}"))?;
    config.connect_timeout(crate::store::CONNECT_TIMEOUT);
    Ok(config)
}
