//! A member process of a Kafka run (`ferry-load kafka --kafka-member N`): one
//! consumer of the group, ferry's ([`super::ferry_member`]) or the
//! partition-serial one ([`super::serial_member`]), told to stop by its
//! stdin closing. It says `ready`, then every [`PROGRESS_EVERY`] how many
//! rebalances it saw and the partitions it holds, and at the end its lag
//! histogram ([`super::lines`]), through [`crate::base::children`].

use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

use crate::base::children::{say, stdin_closed};

use super::consumer::{MemberSettings, Running, Tally};
use super::lines::Line;
use super::System;

/// How often a member reports its rebalances.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// Runs the member until its stdin closes.
pub fn serve(settings: &MemberSettings) -> Result<(), String> {
    let tally = Arc::new(Tally::new(settings.start_us));
    let running = start(settings, &tally).inspect_err(|why| say(&Line::Failed(why.clone())))?;
    say(&Line::Ready);
    let closed = stdin_closed();
    while closed.recv_timeout(PROGRESS_EVERY) == Err(RecvTimeoutError::Timeout) {
        say(&progress(running.as_ref()));
    }
    let last = progress(running.as_ref());
    let closing = running.close();
    say(&last);
    say(&tally.lag_line());
    closing
}

/// Starts the consumer of the member's system.
fn start(settings: &MemberSettings, tally: &Arc<Tally>) -> Result<Box<dyn Running>, String> {
    match settings.system {
        System::Ferry => super::ferry_member::start(settings, tally.clone()),
        System::PartitionSerial => super::serial_member::start(settings, tally.clone()),
        System::ParallelConsumer => Err("parallel-consumer runs as a Java program".to_owned()),
    }
}

/// The `progress` line of `running` now.
fn progress(running: &dyn Running) -> Line {
    Line::Progress {
        rebalances: running.rebalances(),
        partitions: running.partitions(),
    }
}
