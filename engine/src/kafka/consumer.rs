//! The running consumer: a handle, and the loop its thread runs.
//!
//! The loop's round: settle the answers that came back (and pause or resume
//! partitions), commit if the interval has passed, poll for one record (the
//! client runs rebalances in there), take it. On stop: drain every
//! partition (bounded), commit, leave the group.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _};

use super::rebalance::FeedContext;
use super::{ConsumerBuilder, Error, Progress, Record};
use crate::Engine;

/// How long one poll waits for a record: the most an answer waits before
/// its partition is resumed or the stop flag is seen.
pub(crate) const POLL_WAIT: Duration = Duration::from_millis(10);

/// A member of a Kafka consumer group feeding an [`Engine`]: it submits
/// each record read, commits each partition as far as every record is
/// answered, pauses a partition the engine cannot keep up with, and drains
/// and commits a partition before a rebalance takes it away. Built by
/// [`Consumer::builder`]; runs on threads of its own until
/// [`close`](Consumer::close) (or drop).
///
/// ```no_run
/// use ferry::kafka::Consumer;
/// use ferry::Engine;
///
/// // One key per account, the record's value a signed amount; the batch
/// // function applies one account's amounts in one round trip.
/// let engine: Engine<String, i64, (), String> = Engine::builder()
///     .start(|_shard| |_account: String, amounts: Vec<i64>| async move {
///         Ok::<_, String>(vec![(); amounts.len()])
///     })?;
/// let consumer = Consumer::builder(engine, |record| {
///     let account = record.key_str().ok_or("no key")?.to_owned();
///     let amount = record.payload_str().and_then(|p| p.parse().ok()).ok_or("not an amount")?;
///     Ok((account, amount))
/// })
/// .bootstrap_servers("127.0.0.1:9092")
/// .group_id("ledger")
/// .topic("ledger")
/// .start()?;
/// // ...
/// println!("{:?}", consumer.progress());
/// consumer.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Consumer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), Error>>>,
    published: Arc<Mutex<Progress>>,
}

impl Consumer {
    /// A builder for a consumer feeding `engine`, with `decode` turning
    /// each record into its key and input (an `Err` is the reason it cannot,
    /// handed to the failure policy).
    ///
    /// The consumer submits a partition's records in offset order, so
    /// with the engine's default order a key's inputs are ranked by offset;
    /// an engine ranking by the offset itself
    /// (`Order::by(|input| input.offset)`) also puts a retried record ahead
    /// of its key's later ones still waiting.
    ///
    /// ```
    /// use ferry::kafka::Consumer;
    /// use ferry::Engine;
    ///
    /// let engine: Engine<Vec<u8>, i64, (), String> = Engine::builder()
    ///     .shards(1)
    ///     .pin(false)
    ///     .start(|_| |_key: Vec<u8>, offsets: Vec<i64>| async move { Ok::<_, String>(vec![(); offsets.len()]) })
    ///     .unwrap();
    /// let builder = Consumer::builder(engine, |record| {
    ///     Ok((record.key.clone().ok_or("a record without a key")?, record.offset))
    /// });
    /// // No broker, group or topic named: nothing is started.
    /// let err = builder.start().unwrap_err();
    /// assert!(err.to_string().contains("bootstrap_servers"), "{err}");
    /// ```
    pub fn builder<K, I, O, E>(
        engine: Engine<K, I, O, E>,
        decode: impl Fn(&Record) -> Result<(K, I), String> + Send + 'static,
    ) -> ConsumerBuilder<K, I, O, E>
    where
        K: std::hash::Hash + Eq + Clone + Send + 'static,
        I: Send + 'static,
        O: Send + 'static,
        E: Clone + Send + 'static,
    {
        ConsumerBuilder::new(engine, Box::new(decode))
    }

    pub(crate) fn started(
        stop: Arc<AtomicBool>,
        thread: JoinHandle<Result<(), Error>>,
        published: Arc<Mutex<Progress>>,
    ) -> Self {
        Self {
            stop,
            thread: Some(thread),
            published,
        }
    }

    /// What the consumer has done so far (refreshed as it goes, at least
    /// every few milliseconds while busy, and at every commit and
    /// rebalance).
    pub fn progress(&self) -> Progress {
        self.published
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether the consumer has stopped: asked to, or on an error
    /// ([`close`](Self::close) returns it).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the consumer: no record is fed any more; those in the engine
    /// are waited for (at most the revoke timeout), every partition is
    /// committed, and the consumer leaves its group. Returns the error that
    /// stopped it, if one did.
    pub fn close(mut self) -> Result<(), Error> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<(), Error> {
        self.stop.store(true, Ordering::Release);
        match self.thread.take() {
            None => Ok(()),
            Some(thread) => thread.join().unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_owned());
                Err(Error::Panicked(message))
            }),
        }
    }
}

impl Drop for Consumer {
    /// As [`close`](Consumer::close), the error dropped with it.
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}

/// The consumer thread: rounds until asked to stop or an error stops it.
pub(crate) fn run<K, I, O, E>(
    consumer: BaseConsumer<FeedContext<K, I, O, E>>,
    stop: &AtomicBool,
    commit_interval: Duration,
) -> Result<(), Error>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    let context = consumer.context().clone();
    let mut committed_at = Instant::now();
    let result = loop {
        if stop.load(Ordering::Acquire) {
            break Ok(());
        }
        // Never held across `poll`: the rebalance callbacks take it there.
        if let Some(mut feed) = context.feed() {
            feed.settle(&consumer);
            if let Some(err) = feed.fatal.take() {
                break Err(err);
            }
            if committed_at.elapsed() >= commit_interval {
                feed.commit(&consumer, CommitMode::Async, None);
                committed_at = Instant::now();
            }
        }
        match consumer.poll(POLL_WAIT) {
            Some(Ok(message)) => {
                let record = Record::copied_from(&message);
                drop(message);
                if let Some(mut feed) = context.feed() {
                    feed.take(&consumer, record);
                }
            }
            Some(Err(err)) => {
                if let Some(mut feed) = context.feed() {
                    feed.poll_error(err);
                }
            }
            None => {}
        }
    };
    if let Some(mut feed) = context.feed() {
        let partitions: Vec<_> = feed.partitions.keys().cloned().collect();
        feed.drain(&consumer, &partitions);
    }
    // Leaves the group: the revoke it runs finds every partition drained.
    drop(consumer);
    result
}
