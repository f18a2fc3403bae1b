//! What a member process says to the parent, one line each on its stdout
//! (the parent closes the member's stdin to stop it):
//!
//! - `ready`: consuming;
//! - `progress rebalances=N`: rebalances this member saw so far;
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
    /// Rebalances seen so far.
    Progress {
        /// Rebalance callbacks that assigned or revoked partitions.
        rebalances: u64,
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
            Line::Progress { rebalances } => write!(f, "progress rebalances={rebalances}"),
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
    /// use ferry_bench::kafka::lines::Line;
    ///
    /// let line = Line::Lag(vec![(120, 3), (4_000, 1)]);
    /// assert_eq!(line.to_string().parse::<Line>(), Ok(line));
    /// assert!("progress".parse::<Line>().is_err());
    /// ```
    fn from_str(line: &str) -> Result<Self, String> {
        if let Some(why) = line.strip_prefix("failed ") {
            return Ok(Line::Failed(why.to_owned()));
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["ready"] => Ok(Line::Ready),
            ["progress", field] => field
                .strip_prefix("rebalances=")
                .and_then(|n| n.parse().ok())
                .map(|rebalances| Line::Progress { rebalances })
                .ok_or_else(|| format!("not a progress line: `{line}`")),
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
