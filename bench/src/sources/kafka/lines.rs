//! What a member process says to the parent, one line each on its stdout
//! (the parent closes the member's stdin to stop it):
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
            Line::Lag(pairs) if pairs.is_empty() => f.write_str("lag -"),
            Line::Lag(pairs) => {
                let each: Vec<String> = pairs.iter().map(|(v, c)| format!("{v}:{c}")).collect();
                write!(f, "lag {}", each.join(","))
            }
            Line::Failed(why) => write!(f, "failed {}", why.replace('\n', " ")),
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
    /// let progress = Line::Progress { rebalances: 3, partitions: 4 };
    /// assert_eq!(progress.to_string().parse::<Line>(), Ok(progress));
    /// assert!("progress".parse::<Line>().is_err());
    /// ```
    fn from_str(line: &str) -> Result<Self, String> {
        if let Some(why) = line.strip_prefix("failed ") {
            return Ok(Line::Failed(why.to_owned()));
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["ready"] => Ok(Line::Ready),
            ["progress", rebalances, partitions] => {
                let field = |word: &str, name: &str| word.strip_prefix(name)?.parse().ok();
                match (
                    field(rebalances, "rebalances="),
                    field(partitions, "partitions="),
                ) {
                    (Some(rebalances), Some(partitions)) => Ok(Line::Progress {
                        rebalances,
                        partitions: partitions as usize,
                    }),
                    _ => Err(format!("not a progress line: `{line}`")),
                }
            }
            ["lag", "-"] => Ok(Line::Lag(Vec::new())),
            ["lag", pairs] => pairs
                .split(',')
                .map(|pair| {
                    let (v, c) = pair.split_once(':')?;
                    Some((v.parse().ok()?, c.parse().ok()?))
                })
                .collect::<Option<Vec<_>>>()
                .map(Line::Lag)
                .ok_or_else(|| format!("not a lag line: `{line}`")),
            _ => Err(format!("not a member's line: `{line}`")),
        }
    }
}
