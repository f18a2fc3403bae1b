//! `ferry-load kafka` (feature `kafka`): a keyed Kafka topic
//! consumed into PostgreSQL by a consumer group of member processes, one
//! of them killed mid-run, and the rows read back to judge what each
//! system did with every record.
//!
//! - [`produce`]: the topic made and filled, each record's value its
//!   key's sequence number and its produce time;
//! - [`rows`]: the tables the systems write (an owner epoch per
//!   partition, per key what was applied; ferry's entities, the same
//!   figures as a key's state), made afresh per system;
//! - [`write`](mod@write): the partition-serial member's writes: a
//!   partition taken, records applied with the fence (offset and epoch
//!   conditions) or without it (the control);
//! - [`member`]: a member process, [`ferry_member`] (`ferry::kafka` and
//!   `ferry::entity`, the offset fence in the fold) or [`serial_member`]
//!   (one record at a time per partition); [`lines`]: what it reports;
//! - [`children`]: the member processes as the parent holds them, and the
//!   Java parallel-consumer peer's;
//! - [`run`](mod@run): one system's run, from the members' start to the verdict;
//! - [`verdict`]: lost, applied twice, out of order, key by key;
//! - [`report`]: the table and the JSON.

pub mod children;
pub mod ferry_member;
pub mod lines;
pub mod member;
pub mod produce;
pub mod report;
pub mod rows;
pub mod run;
pub mod serial_member;
pub mod verdict;
pub mod write;

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::base::duration::parse_duration;

pub use run::{run, Settings};

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

/// When one member is killed (`SIGKILL`) and a new one started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KillAt {
    /// This long after the system's members were started.
    After(Duration),
    /// Once this share of the records (0 to 1) is applied.
    Applied(f64),
}

impl FromStr for KillAt {
    type Err = String;

    /// ```
    /// use std::time::Duration;
    /// use ferry_bench::sources::kafka::KillAt;
    ///
    /// assert_eq!("10s".parse(), Ok(KillAt::After(Duration::from_secs(10))));
    /// assert_eq!("30%".parse(), Ok(KillAt::Applied(0.3)));
    /// assert!("120%".parse::<KillAt>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Self, String> {
        match text.strip_suffix('%') {
            Some(percent) => match percent.parse::<f64>() {
                Ok(p) if (0.0..100.0).contains(&p) => Ok(KillAt::Applied(p / 100.0)),
                _ => Err(format!(
                    "`{text}`: a share of the records applied, 0% to 99%"
                )),
            },
            None => parse_duration(text)
                .map(KillAt::After)
                .map_err(|err| err.to_string()),
        }
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
