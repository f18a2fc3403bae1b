//! `--fault KIND@AT`: faults at a real store during each system's run, at
//! the same offsets into every system's measured window.
//!
//! - `restart`: the server stopped hard and started again, by the user's
//!   `--restart-command` (run through `sh -c`; `ferry-load` does not own
//!   the server), then waited for until it accepts connections and answers
//!   reads again (at most a minute);
//! - `kill-connections`: every client connection but the store's own ended
//!   by the server's own means (PostgreSQL's `pg_terminate_backend`, Redis's
//!   `CLIENT KILL`);
//! - `stall:D`: the traffic of every system held for `D`: with any fault
//!   asked for, the systems' connections go through a loopback TCP proxy
//!   of this tool's own ([`crate::scenarios::proxy::Proxy`]), which during a stall forwards nothing
//!   either way (a chunk it had read as the stall began waits with the
//!   rest), then resumes;
//! - `lose-replies`: every connection the proxy carries loses the next
//!   reply the server sends on it, and is closed: a write whose request
//!   reached the server is applied, and its client cannot know it (the
//!   fault that makes outcomes unknown on purpose, as a failover or a
//!   network cut between the commit and its reply does).
//!
//! The store's own connection (set-up, reset, read-back, the faults' admin
//! work) goes to the server directly, and is made again after a restart.
//!
//! What each fault does to the inputs, as `ferry-load` counts them: those
//! whose write was on the wire when the connection broke have an *unknown*
//! outcome (applied or not). A ferry batch resolves it, fenced, once the
//! store is back (`--retry-unknown`, `store::resolve`); another
//! system answers it unknown. Those that found no connection, or failed
//! before their write, get an error (nothing applied). The read-back then checks that every success was
//! applied and that nothing was applied beyond the successes and the
//! unknown outcomes (`RunResult::read_back_matches` in the report).
//! Per fault, `report::faults::FaultSeen` tells when the store was back and when the
//! first success came after it.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::base::duration::{format_duration, parse_duration};

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Stop the server hard and start it again (`--restart-command`).
    Restart,
    /// End every client connection but the store's own.
    KillConnections,
    /// Hold all the systems' traffic for this long.
    Stall(Duration),
    /// Lose the next reply on every connection the systems have open, and
    /// close it.
    LoseReplies,
}

/// One `--fault`: what, and when, after the measured window starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What.
    pub kind: FaultKind,
    /// When, from the measured window's start.
    pub at: Duration,
}

impl FromStr for Fault {
    type Err = String;

    /// ```
    /// use std::time::Duration;
    /// use ferry_bench::scenarios::faults::{Fault, FaultKind};
    ///
    /// let stall: Fault = "stall:500ms@4s".parse().unwrap();
    /// assert_eq!(stall, Fault { kind: FaultKind::Stall(Duration::from_millis(500)), at: Duration::from_secs(4) });
    /// assert_eq!(stall.to_string(), "stall:500ms@4s");
    /// assert_eq!("restart@2s".parse::<Fault>().unwrap().kind, FaultKind::Restart);
    /// assert!("reboot@2s".parse::<Fault>().is_err());
    /// assert!("restart".parse::<Fault>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Self, String> {
        let shape = || {
            format!(
                "`{text}`: expected KIND@AT, KIND one of restart, kill-connections, stall:D, lose-replies (e.g. restart@2s, stall:500ms@4s)"
            )
        };
        let (kind, at) = text.rsplit_once('@').ok_or_else(shape)?;
        let at = parse_duration(at).map_err(|err| format!("`{text}`: {err}"))?;
        let kind = match kind {
            "restart" => FaultKind::Restart,
            "kill-connections" => FaultKind::KillConnections,
            "lose-replies" => FaultKind::LoseReplies,
            _ => match kind.strip_prefix("stall:") {
                Some(length) => {
                    let length =
                        parse_duration(length).map_err(|err| format!("`{text}`: {err}"))?;
                    if length.is_zero() {
                        return Err(format!("`{text}`: a stall must last more than 0"));
                    }
                    FaultKind::Stall(length)
                }
                None => return Err(shape()),
            },
        };
        Ok(Fault { kind, at })
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::Restart => f.write_str("restart"),
            FaultKind::KillConnections => f.write_str("kill-connections"),
            FaultKind::Stall(length) => write!(f, "stall:{}", format_duration(*length)),
            FaultKind::LoseReplies => f.write_str("lose-replies"),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.kind, format_duration(self.at))
    }
}

/// One fault as injected.
#[derive(Clone, Debug)]
pub struct Injected {
    /// The fault.
    pub fault: Fault,
    /// When it began.
    pub at: Instant,
    /// When the store was back: the server answering again after a
    /// restart, the connections ended, the stall over.
    pub back: Instant,
    /// What it did, in words.
    pub what: String,
}
