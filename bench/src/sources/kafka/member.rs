//! A member process of a Kafka run (`ferry-load kafka --kafka-member N`): one
//! consumer of the group, ferry's ([`super::ferry_member`]) or the
//! partition-serial one ([`super::serial_member`]), told to stop by its
//! stdin closing. It says `ready`, then every half second how many
//! rebalances it saw and the partitions it holds, and at the end its lag
//! histogram
//! ([`super::lines`]).

use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::store::Fence;

use super::lines::Line;
use super::write::Rec;
use super::{now_us, System};

/// How often a member reports its rebalances.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

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

/// Runs the member until its stdin closes.
pub fn serve(settings: &MemberSettings) -> Result<(), String> {
    let tally = Arc::new(Tally::new(settings.start_us));
    let running = match settings.system {
        System::Ferry => super::ferry_member::start(settings, tally.clone()),
        System::PartitionSerial => super::serial_member::start(settings, tally.clone()),
        System::ParallelConsumer => Err("parallel-consumer runs as a Java program".to_owned()),
    }
    .inspect_err(|why| say(&Line::Failed(why.clone())))?;
    say(&Line::Ready);
    let stdin_closed = watch_stdin();
    while stdin_closed.recv_timeout(PROGRESS_EVERY).is_err() {
        say(&progress(running.as_ref()));
    }
    let last = progress(running.as_ref());
    let closed = running.close();
    say(&last);
    say(&Line::lag_of(
        &tally.lag.lock().unwrap_or_else(|e| e.into_inner()),
    ));
    closed
}

fn progress(running: &dyn Running) -> Line {
    Line::Progress {
        rebalances: running.rebalances(),
        partitions: running.partitions(),
    }
}

/// A channel that gets a message when stdin reaches its end.
fn watch_stdin() -> mpsc::Receiver<()> {
    let (closed, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            if line.is_err() {
                break;
            }
        }
        let _ = closed.send(());
    });
    receiver
}

/// One line to the parent.
fn say(line: &Line) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}
