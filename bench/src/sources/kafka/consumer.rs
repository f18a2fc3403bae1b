//! A member's consumer, whichever system it is ([`super::ferry_member`],
//! [`super::serial_member`]): what it runs with ([`MemberSettings`]),
//! what it counts while it runs ([`Tally`]), and how the member process
//! ([`super::member`]) drives it ([`Running`]).

use std::sync::Mutex;

use hdrhistogram::Histogram;

use crate::store::Fence;

use super::lines::Line;
use super::write::Rec;
use super::{now_us, System};

/// What a member runs with.
#[derive(Clone, Debug)]
pub struct MemberSettings {
    /// Its number in the run (a replacement gets the next one).
    pub index: usize,
    /// Which consumer it is.
    pub system: System,
    /// The brokers.
    pub bootstrap: String,
    /// The PostgreSQL URL.
    pub store: String,
    /// The topic.
    pub topic: String,
    /// The consumer group.
    pub group: String,
    /// The tables' prefix.
    pub prefix: String,
    /// Whether writes are fenced.
    pub fence: Fence,
    /// ferry's shards.
    pub shards: usize,
    /// When the system's run started (µs since the Unix epoch): a record's
    /// lag counts from it or from its produce time, whichever is later.
    pub start_us: i64,
}

/// What a member counts while it runs, shared by its threads.
pub struct Tally {
    lag: Mutex<Histogram<u64>>,
    start_us: i64,
}

impl Tally {
    /// Nothing counted yet; lags count from `start_us` at the earliest.
    pub fn new(start_us: i64) -> Tally {
        Tally {
            lag: Mutex::new(Histogram::new(3).expect("3 significant figures are valid")),
            start_us,
        }
    }

    /// Records the lag of each of `recs`, answered now.
    pub fn answered(&self, recs: &[Rec]) {
        let now = now_us();
        let mut lag = self.lag.lock().unwrap_or_else(|e| e.into_inner());
        for rec in recs {
            self.record(&mut lag, now, rec.produced_us);
        }
    }

    /// Records the lag, until now, of one record produced at
    /// `produced_us`.
    pub fn answered_one(&self, produced_us: i64) {
        let mut lag = self.lag.lock().unwrap_or_else(|e| e.into_inner());
        self.record(&mut lag, now_us(), produced_us);
    }

    /// The `lag` line of everything recorded.
    pub fn lag_line(&self) -> Line {
        Line::lag_of(&self.lag.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn record(&self, lag: &mut Histogram<u64>, now: i64, produced_us: i64) {
        let from = produced_us.max(self.start_us);
        let _ = lag.record(u64::try_from(now - from).unwrap_or(0));
    }
}

/// A member's consumer, running.
pub trait Running {
    /// Rebalances it saw so far (callbacks that assigned or revoked
    /// partitions).
    fn rebalances(&self) -> u64;

    /// Partitions assigned to it now.
    fn partitions(&self) -> usize;

    /// Stops it: drains, commits, leaves the group.
    fn close(self: Box<Self>) -> Result<(), String>;
}
