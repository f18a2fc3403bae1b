//! A caller's answer as the simulation looks at it, without waiting.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::time::Duration;

use ferry_shard::parts::{answer_cell, Bundled, Queue, Receiver, ShardCore, Submission, Waiter};
use ferry_shard::Offer;
use ferry_shard::{Outcome, Outcomes};
use futures::Stream;
use tokio::sync::oneshot::{self, error::TryRecvError};

/// The shard dropped the reply without answering.
#[derive(Debug, PartialEq, Eq)]
pub struct Dropped;

/// Something that may hold an answer by now.
pub trait TryAnswer {
    type Answer;
    /// The answer if it came, `None` if it has not come yet.
    fn try_answer(&mut self) -> Result<Option<Self::Answer>, Dropped>;
}

/// The answer if it came, `None` if it has not come yet.
pub fn try_answer<A: TryAnswer>(answer: &mut A) -> Result<Option<A::Answer>, Dropped> {
    answer.try_answer()
}

/// A flush's reply.
impl<T> TryAnswer for oneshot::Receiver<T> {
    type Answer = T;

    fn try_answer(&mut self) -> Result<Option<T>, Dropped> {
        match self.try_recv() {
            Ok(outcome) => Ok(Some(outcome)),
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Closed) => Err(Dropped),
        }
    }
}

/// An input's answer cell.
impl<T> TryAnswer for Receiver<T> {
    type Answer = T;

    fn try_answer(&mut self) -> Result<Option<T>, Dropped> {
        let waker = futures::task::noop_waker();
        match Pin::new(self).poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(Ok(outcome)) => Ok(Some(outcome)),
            Poll::Pending => Ok(None),
            Poll::Ready(Err(_)) => Err(Dropped),
        }
    }
}

/// A simulated caller: one input submitted alone (its own channel), or the
/// one input of a `submit_many` call (the call's stream), answered once the
/// shard hands its round's answers over.
pub enum Caller<I, O, E> {
    One(Receiver<Outcome<I, O, E>>),
    Many(Outcomes<I, O, E>),
}

impl<I, O, E> TryAnswer for Caller<I, O, E> {
    type Answer = Outcome<I, O, E>;

    fn try_answer(&mut self) -> Result<Option<Outcome<I, O, E>>, Dropped> {
        match self {
            Caller::One(answer) => answer.try_answer(),
            Caller::Many(outcomes) => {
                let waker = futures::task::noop_waker();
                match Pin::new(outcomes).poll_next(&mut Context::from_waker(&waker)) {
                    Poll::Ready(Some((_, outcome))) => Ok(Some(outcome)),
                    Poll::Pending => Ok(None),
                    // Its one outcome already came out: nothing more will.
                    Poll::Ready(None) => Err(Dropped),
                }
            }
        }
    }
}

/// Admits `offer` into `core` at `now` as `submit` would, or, with `many`,
/// as the one input of a `submit_many` call (answered through the call's
/// cell once the core hands its answers over).
pub fn submit<Q, I, O, E>(
    core: &mut ShardCore<Q, I, O, E>,
    offer: Offer<Q::Key, I>,
    now: Duration,
    many: bool,
) -> Caller<I, O, E>
where
    Q: Queue<Waiter<I, O, E>>,
    E: Clone,
{
    if many {
        let mut outcomes = Outcomes::new();
        let index = outcomes.add();
        let gathering = core.gathering(outcomes.to_shard(), 1);
        core.admit_gathered(Bundled { offer, index }, &gathering, now);
        return Caller::Many(outcomes);
    }
    let (reply, answer) = answer_cell();
    core.admit(Submission { offer, reply }, now);
    Caller::One(answer)
}
