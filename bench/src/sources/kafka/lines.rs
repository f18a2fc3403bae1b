//! What a member process says to the parent, one line each on its stdout,
//! in the line protocol of [`crate::base::children`] (the parent closes
//! the member's stdin to stop it):
//!
//! - `ready`: consuming;
//! - `progress rebalances=N partitions=P`: rebalances this member saw so
//!   far, and the partitions it holds now;
//! - `lag V:C,V:C,…` (or `lag -`): at the end, its lag histogram as
//!   (microseconds, count) pairs;
//! - `failed WHY`: it cannot go on.

use std::fmt;
use std::str::FromStr;

use hdrhistogram::Histogram;

use crate::base::children::{failed_line, failed_reason, field, pairs, parse_pairs};

/// One line of a member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// Consuming.
    Ready,
    /// Rebalances seen so far, partitions held now.
    Progress {
        /// Rebalance callbacks that assigned or revoked partitions.
        rebalances: u64,
        /// Partitions assigned to the member now.
        partitions: usize,
    },
    /// The lag of each record it applied, microseconds: (value, count).
    Lag(Vec<(u64, u64)>),
    /// It cannot go on.
    Failed(String),
}

impl Line {
    /// The `lag` line of `histogram`.
    pub fn lag_of(histogram: &Histogram<u64>) -> Line {
        let pairs = histogram.iter_recorded();
        Line::Lag(
            pairs
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        )
    }

    /// Adds a `lag` line's counts into `histogram`.
    pub fn add_lag(pairs: &[(u64, u64)], histogram: &mut Histogram<u64>) {
        for &(value, count) in pairs {
            let _ = histogram.record_n(value, count);
        }
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Ready => f.write_str("ready"),
            Line::Progress {
                rebalances,
                partitions,
            } => write!(
                f,
                "progress rebalances={rebalances} partitions={partitions}"
            ),
            Line::Lag(counts) => write!(f, "lag {}", pairs(counts, ':')),
            Line::Failed(why) => f.write_str(&failed_line(why)),
        }
    }
}

impl FromStr for Line {
    type Err = String;

    /// ```
    /// use ferry_bench::sources::kafka::lines::Line;
    ///
    /// let line = Line::Lag(vec![(120, 3), (4_000, 1)]);
    /// assert_eq!(line.to_string().parse::<Line>(), Ok(line));
    /// assert_eq!(Line::Lag(vec![]).to_string().parse::<Line>(), Ok(Line::Lag(vec![])));
    /// let progress = Line::Progress { rebalances: 3, partitions: 4 };
    /// assert_eq!(progress.to_string().parse::<Line>(), Ok(progress));
    /// assert!("progress".parse::<Line>().is_err());
    /// ```
    fn from_str(line: &str) -> Result<Self, String> {
        if let Some(why) = failed_reason(line) {
            return Ok(Line::Failed(why.to_owned()));
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["ready"] => Ok(Line::Ready),
            ["progress", fields @ ..] if fields.len() == 2 => Ok(Line::Progress {
                rebalances: field(fields, "rebalances")?,
                partitions: field(fields, "partitions")?,
            }),
            ["lag", counts] => parse_pairs(counts, ':').map(Line::Lag),
            _ => Err(format!("not a member's line: `{line}`")),
        }
    }
}
