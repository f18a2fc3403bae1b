//! The flushes a simulation requested, checked after every event: a flush
//! is told exactly once every input admitted before it is resolved — not
//! before, and not after the event that resolved the last of them.

use std::collections::BTreeSet;

use ferry_shard::parts::{Queue, ShardCore, Waiter};
use tokio::sync::oneshot;

use super::answer::{try_answer, Dropped};

/// A flush request and what it waits for.
struct Flush {
    number: usize,
    requested_at: u64,
    /// Inputs admitted before the request and not resolved yet.
    awaits: BTreeSet<u64>,
    /// It had inputs to wait for when requested.
    waited: bool,
    told: oneshot::Receiver<()>,
}

/// The flushes requested and not yet told.
#[derive(Default)]
pub struct Flushes {
    requested: usize,
    untold: Vec<Flush>,
}

/// Flushes told by one [`Flushes::settle`].
#[derive(Debug, Default)]
pub struct Told {
    pub flushes: u64,
    /// Of those, flushes that had inputs to wait for.
    pub after_waiting: u64,
}

impl Flushes {
    /// Flushes requested so far: the next one's number.
    pub fn requested(&self) -> usize {
        self.requested
    }

    /// Requests a flush of `core` at `now`, waiting for the inputs `open`
    /// now (admitted and not resolved); returns its number.
    pub fn request<Q, I, O, E>(
        &mut self,
        core: &mut ShardCore<Q, I, O, E>,
        now: u64,
        open: &BTreeSet<u64>,
    ) -> usize
    where
        Q: Queue<Waiter<I, O, E>>,
        E: Clone,
    {
        let number = self.requested;
        self.requested += 1;
        let (reply, told) = oneshot::channel();
        core.flush(reply);
        self.untold.push(Flush {
            number,
            requested_at: now,
            awaits: open.clone(),
            waited: !open.is_empty(),
            told,
        });
        number
    }

    /// After every event: tells the flushes `core` completed (as the shard
    /// loop does once the stats are published), then checks that each flush
    /// has been told exactly if none of the inputs it waits for is still
    /// `open`.
    pub fn settle<Q, I, O, E>(
        &mut self,
        core: &mut ShardCore<Q, I, O, E>,
        open: &BTreeSet<u64>,
    ) -> Result<Told, String>
    where
        Q: Queue<Waiter<I, O, E>>,
        E: Clone,
    {
        for reply in core.take_flushed() {
            if reply.send(()).is_err() {
                return Err("flush: a request completed twice, or after its caller left".into());
            }
        }
        let mut told_now = Told::default();
        let mut at = 0;
        while at < self.untold.len() {
            let flush = &mut self.untold[at];
            flush.awaits.retain(|id| open.contains(id));
            let told = match try_answer(&mut flush.told) {
                Ok(told) => told.is_some(),
                Err(Dropped) => {
                    return Err(format!(
                        "flush {} (requested at {}) dropped without being told",
                        flush.number, flush.requested_at
                    ))
                }
            };
            if told != flush.awaits.is_empty() {
                return Err(format!(
                    "flush {} (requested at {}): {}",
                    flush.number,
                    flush.requested_at,
                    if told {
                        format!(
                            "told while {:?}, admitted before it, are unresolved",
                            flush.awaits
                        )
                    } else {
                        "not told, though every input admitted before it is resolved".to_string()
                    }
                ));
            }
            if told {
                told_now.flushes += 1;
                told_now.after_waiting += u64::from(flush.waited);
                self.untold.swap_remove(at);
            } else {
                at += 1;
            }
        }
        Ok(told_now)
    }

    /// The numbers of the flushes not told yet (none, once the run is over).
    pub fn untold(&self) -> Vec<usize> {
        self.untold.iter().map(|flush| flush.number).collect()
    }
}
