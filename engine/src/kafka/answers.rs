//! The answer thread: it awaits the submitted records' futures and sends
//! each outcome back to the consumer's thread, which owns every partition's
//! state. The protocol, one way each:
//!
//! ```text
//! consumer thread --Pending(ticket, submit future)--> answer thread
//! consumer thread <--Answer(ticket, outcome)--------- answer thread
//! ```
//!
//! Invariant: every pending future sent is awaited and its answer sent back
//! (unless the consumer thread is gone); the thread exits once the consumer
//! thread has dropped its sender and every future is answered.

use std::sync::mpsc;
use std::thread;

use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender};
use futures::stream::FuturesUnordered;
use futures::StreamExt;

use ferry_shard::FerryError;

use super::{Partition, Record};
use crate::Submit;

/// Which record a submission is for, and in which assignment of its
/// partition (an answer for an earlier assignment is stale).
#[derive(Debug)]
pub(crate) struct Ticket {
    pub(crate) partition: Partition,
    pub(crate) assignment: u64,
    pub(crate) record: Record,
    /// How many times it was submitted, this one included.
    pub(crate) attempt: u32,
}

/// A submission on its way to the answer thread.
pub(crate) struct Pending<I, O, E> {
    pub(crate) ticket: Ticket,
    pub(crate) submit: Submit<I, O, E>,
}

/// A submission's outcome, on its way back (the output is dropped: the
/// effect is at the store).
pub(crate) struct Answer<I, E> {
    pub(crate) ticket: Ticket,
    pub(crate) outcome: Result<(), FerryError<I, E>>,
}

/// The sending end for the consumer thread, and the receiving end of the
/// answers.
pub(crate) type Channels<I, O, E> = (
    UnboundedSender<Pending<I, O, E>>,
    mpsc::Receiver<Answer<I, E>>,
);

/// Starts the answer thread.
pub(crate) fn spawn<I, O, E>(
    name: String,
) -> std::io::Result<(Channels<I, O, E>, thread::JoinHandle<()>)>
where
    I: Send + 'static,
    O: Send + 'static,
    E: Send + 'static,
{
    let (pending_tx, pending_rx) = futures::channel::mpsc::unbounded();
    let (answer_tx, answer_rx) = mpsc::channel();
    let thread = thread::Builder::new()
        .name(name)
        .spawn(move || futures::executor::block_on(answer_all(pending_rx, answer_tx)))?;
    Ok(((pending_tx, answer_rx), thread))
}

async fn answer_all<I, O, E>(
    mut pending: UnboundedReceiver<Pending<I, O, E>>,
    answers: mpsc::Sender<Answer<I, E>>,
) {
    let mut waiting = FuturesUnordered::new();
    loop {
        futures::select! {
            next = pending.next() => match next {
                Some(Pending { ticket, submit }) => waiting.push(async move {
                    let outcome = submit.await.map(drop);
                    Answer { ticket, outcome }
                }),
                None => continue,
            },
            answer = waiting.select_next_some() => {
                // The consumer thread gone, nobody is left to tell.
                let _ = answers.send(answer);
            }
            complete => break,
        }
    }
}
