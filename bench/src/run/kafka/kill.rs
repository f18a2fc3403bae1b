//! When a Kafka run kills one of its members (`SIGKILL`) and starts a new
//! one in its place: `--kill-member-at`, a time or a share of the records
//! applied.

use std::str::FromStr;
use std::time::Duration;

use crate::base::duration::parse_duration;

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
    /// use ferry_bench::run::kafka::KillAt;
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

impl KillAt {
    /// Whether the kill is due, `elapsed` after the members' start with
    /// `applied` (0 to 1) of the records applied.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_bench::run::kafka::KillAt;
    ///
    /// assert!(KillAt::Applied(0.3).due(Duration::ZERO, 0.31));
    /// assert!(!KillAt::After(Duration::from_secs(10)).due(Duration::from_secs(9), 0.9));
    /// ```
    pub fn due(self, elapsed: Duration, applied: f64) -> bool {
        match self {
            KillAt::After(after) => elapsed >= after,
            KillAt::Applied(share) => applied >= share,
        }
    }
}
