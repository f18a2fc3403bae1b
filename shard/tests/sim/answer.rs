//! A caller's answer as the simulation looks at it, without waiting.

use tokio::sync::oneshot::{self, error::TryRecvError};

/// The shard dropped the reply without answering.
#[derive(Debug, PartialEq, Eq)]
pub struct Dropped;

/// The answer if it came, `None` if it has not come yet.
pub fn try_answer<T>(answer: &mut oneshot::Receiver<T>) -> Result<Option<T>, Dropped> {
    match answer.try_recv() {
        Ok(outcome) => Ok(Some(outcome)),
        Err(TryRecvError::Empty) => Ok(None),
        Err(TryRecvError::Closed) => Err(Dropped),
    }
}
