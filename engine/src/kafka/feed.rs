//! The consumer thread's state and its steps: take a record read, submit
//! it, settle the answers that came back, pause and resume partitions,
//! commit, and take partitions on and let them go at a rebalance.
//!
//! Only the consumer thread touches a `Feed` (the rebalance callbacks run
//! on it too, inside `poll`); the answers reach it by a channel.
//!
//! Invariants: a partition's records enter the engine in offset order,
//! except a retried record, which goes again ahead of those still held;
//! each record submitted is answered once and settled once (answered, or by
//! the failure policy); a commit never passes a record not settled.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::channel::mpsc::UnboundedSender;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _, ConsumerContext};
use rdkafka::{Offset, TopicPartitionList};

use ferry_shard::{FerryError, Refused};

use super::answers::{Answer, Pending, Ticket};
use super::partition_feed::{Held, PartitionFeed};
use super::{Error, Failed, Failure, OnFailure, Partition, Progress, Record};
use crate::Engine;

/// Turns a record into its key and input.
pub(crate) type Decode<K, I> = Box<dyn Fn(&Record) -> Result<(K, I), String> + Send>;
/// Decides what becomes of a failed record.
pub(crate) type Policy<I, E> = Box<dyn FnMut(Failed<'_, I, E>) -> OnFailure + Send>;
/// Runs before newly assigned partitions are fed.
pub(crate) type AssignHook = Box<dyn FnMut(&[Partition]) -> Result<(), String> + Send>;

/// How often, at most, the published [`Progress`] is refreshed while busy.
const PUBLISH_INTERVAL: Duration = Duration::from_millis(10);

/// What a submission came to, on the consumer thread.
enum Submitted<I> {
    Admitted,
    /// Refused on this thread: the record, why, and the input back.
    Refused(Held, Refused, I),
    Undecodable(Held, String),
}

/// Whether a refusal may pass on its own: the shard or the key has room
/// again once some of its inputs are answered. Any other refusal (too
/// heavy, late) would come again every time: it goes to the failure policy.
fn passes(reason: Refused) -> bool {
    matches!(reason, Refused::Full | Refused::KeyFull)
}

/// Decodes and submits records: the part of the feed that touches the
/// engine.
pub(crate) struct Submitter<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone,
{
    pub(crate) engine: Engine<K, I, O, E>,
    pub(crate) decode: Decode<K, I>,
    pub(crate) pending: UnboundedSender<Pending<I, O, E>>,
}

impl<K, I, O, E> Submitter<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    fn submit(&self, partition: &Partition, assignment: u64, mut held: Held) -> Submitted<I> {
        // Every try counts, so that a policy bounding its retries by
        // attempt ends; a refusal that passes is uncounted again.
        held.attempt += 1;
        let (key, input) = match (self.decode)(&held.record) {
            Ok(decoded) => decoded,
            Err(reason) => return Submitted::Undecodable(held, reason),
        };
        let mut submit = self.engine.submit(key, input);
        // Refusals are decided here, on this thread: knowing at once keeps
        // the partition's later records from overtaking this one.
        if let Some((input, reason)) = submit.take_refusal() {
            return Submitted::Refused(held, reason, input);
        }
        let ticket = Ticket {
            partition: partition.clone(),
            assignment,
            record: held.record,
            attempt: held.attempt,
        };
        // The answer thread outlives every sender; should it be gone, the
        // record stays unanswered and holds its partition's commits back.
        let _ = self.pending.unbounded_send(Pending { ticket, submit });
        Submitted::Admitted
    }
}

/// The consumer thread's state.
pub(crate) struct Feed<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone,
{
    pub(crate) submitter: Submitter<K, I, O, E>,
    pub(crate) answers: Receiver<Answer<I, E>>,
    pub(crate) on_failure: Policy<I, E>,
    pub(crate) on_assign: AssignHook,
    /// The bound on a partition's records in the engine.
    pub(crate) max_in_engine: usize,
    /// The bound on all partitions' records in the engine together.
    pub(crate) max_in_engine_total: usize,
    /// Records in the engine, every partition and assignment together.
    pub(crate) in_engine_total: usize,
    pub(crate) revoke_timeout: Duration,
    pub(crate) partitions: BTreeMap<Partition, PartitionFeed>,
    /// Assignments so far: numbers each partition's assignment.
    pub(crate) assignments: u64,
    pub(crate) progress: Progress,
    pub(crate) published: Arc<Mutex<Progress>>,
    pub(crate) last_published: Instant,
    /// An error that stops the consumer, for its thread to return.
    pub(crate) fatal: Option<Error>,
}

impl<K, I, O, E> Feed<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// Takes a record just read: submits it, or holds it back behind the
    /// records held before it or while its partition is at its bound.
    pub(crate) fn take<C: ConsumerContext>(&mut self, consumer: &BaseConsumer<C>, record: Record) {
        let partition = record.partition();
        let Some(feed) = self.partitions.get_mut(&partition) else {
            return; // Not ours (any more): never taken, never committed past.
        };
        if feed.stopped {
            return; // Its commits stay before the failed record.
        }
        if feed.offsets.is_taken(record.offset) {
            return; // Read again after a pause: taken already.
        }
        feed.offsets.take(record.offset);
        let held = Held { record, attempt: 0 };
        if feed.may_submit(self.max_in_engine) && self.in_engine_total < self.max_in_engine_total {
            self.offer(&partition, held);
        } else {
            feed.hold(held);
        }
        self.steer(consumer, &partition);
        self.publish(false);
    }

    /// Submits a record taken before; a refused one is held (its partition
    /// paused until the engine takes it), an undecodable one goes to the
    /// failure policy.
    fn offer(&mut self, partition: &Partition, mut held: Held) {
        loop {
            let Some(feed) = self.partitions.get_mut(partition) else {
                return;
            };
            if feed.stopped {
                return;
            }
            match self.submitter.submit(partition, feed.assignment, held) {
                Submitted::Admitted => {
                    feed.in_engine += 1;
                    self.in_engine_total += 1;
                    self.progress.submitted += 1;
                    return;
                }
                Submitted::Refused(mut refused, reason, input) => {
                    self.progress.refused += 1;
                    if passes(reason) || reason == Refused::Closed {
                        refused.attempt -= 1;
                        feed.hold(refused);
                        if reason == Refused::Closed {
                            self.fatal.get_or_insert(Error::EngineClosed);
                        }
                        return;
                    }
                    let failure = Failure::Answered(FerryError::Refused { input, reason });
                    match self.decide(partition, refused, failure) {
                        Some(again) => held = again,
                        None => return,
                    }
                }
                Submitted::Undecodable(undecodable, reason) => {
                    match self.decide(partition, undecodable, Failure::Undecodable(reason)) {
                        Some(again) => held = again,
                        None => return,
                    }
                }
            }
        }
    }

    /// Hands a failed record to the failure policy; returns it if it is to
    /// be submitted again.
    fn decide(
        &mut self,
        partition: &Partition,
        held: Held,
        failure: Failure<I, E>,
    ) -> Option<Held> {
        let feed = self.partitions.get_mut(partition)?;
        if feed.stopped {
            // Stopped on an earlier record: this one stays unsettled too,
            // for the partition's next owner.
            return None;
        }
        let failed = Failed {
            record: &held.record,
            failure: &failure,
            attempt: held.attempt,
        };
        match (self.on_failure)(failed) {
            OnFailure::Retry => {
                self.progress.retried += 1;
                Some(held)
            }
            OnFailure::DeadLetter => {
                let settled = feed.offsets.answer(held.record.offset);
                debug_assert!(settled, "a failed record is settled once");
                self.progress.dead_lettered += 1;
                None
            }
            OnFailure::Stop => {
                feed.stopped = true;
                feed.held.clear();
                None
            }
        }
    }

    /// Settles the answers that came back, submits what was held where
    /// there is room now, and pauses or resumes partitions accordingly.
    pub(crate) fn settle<C: ConsumerContext>(&mut self, consumer: &BaseConsumer<C>) {
        if self.submitter.engine.is_closed() {
            // Nothing more can be fed: stop now rather than at the next
            // record, which may be long in coming.
            self.fatal.get_or_insert(Error::EngineClosed);
        }
        let mut touched = Vec::new();
        while let Ok(answer) = self.answers.try_recv() {
            if let Some(partition) = self.answer(answer) {
                touched.push(partition);
            }
        }
        // A partition paused or holding records may have room now, even if
        // its answers were settled elsewhere (while another was drained).
        touched.extend(
            self.partitions
                .iter()
                .filter(|(_, feed)| feed.paused || !feed.held.is_empty())
                .map(|(partition, _)| partition.clone()),
        );
        touched.sort_unstable();
        touched.dedup();
        for partition in &touched {
            self.submit_held(partition);
            self.steer(consumer, partition);
        }
        self.publish(false);
    }

    /// Settles one answer; returns its partition unless it was stale.
    fn answer(&mut self, answer: Answer<I, E>) -> Option<Partition> {
        let Answer { ticket, outcome } = answer;
        assert!(
            self.in_engine_total > 0,
            "an answer for a record never counted in"
        );
        self.in_engine_total -= 1;
        let feed = self.partitions.get_mut(&ticket.partition)?;
        if feed.assignment != ticket.assignment {
            return None; // For an earlier assignment: its commits are done.
        }
        assert!(
            feed.in_engine > 0,
            "an answer for a record never counted in"
        );
        feed.in_engine -= 1;
        let held = Held {
            record: ticket.record,
            attempt: ticket.attempt,
        };
        match outcome {
            Ok(()) => {
                let settled = feed.offsets.answer(held.record.offset);
                debug_assert!(settled, "a record is answered once");
                self.progress.answered += 1;
            }
            Err(FerryError::Refused { reason, .. })
                if passes(reason) || reason == Refused::Closed =>
            {
                // Refused by the shard itself, after admission (its
                // `max_waiting`, the key's `max_waiting_per_key`, or the
                // engine closing): held again, ahead of the later records
                // still held. The partition's later records sent meanwhile
                // may have gone ahead of it: counted apart, for the bounds
                // to be set so that it never happens.
                feed.hold(Held {
                    attempt: held.attempt - 1,
                    ..held
                });
                self.progress.refused += 1;
                self.progress.refused_by_shard += 1;
                if reason == Refused::Closed {
                    self.fatal.get_or_insert(Error::EngineClosed);
                }
            }
            Err(error) => {
                if let Some(again) = self.decide(&ticket.partition, held, Failure::Answered(error))
                {
                    self.offer(&ticket.partition, again);
                }
            }
        }
        Some(ticket.partition)
    }

    /// Submits a partition's held records in order while it is under its
    /// bound, stopping at the first the engine refuses again.
    fn submit_held(&mut self, partition: &Partition) {
        loop {
            let Some(feed) = self.partitions.get_mut(partition) else {
                return;
            };
            if feed.stopped
                || feed.in_engine >= self.max_in_engine
                || self.in_engine_total >= self.max_in_engine_total
                || self.fatal.is_some()
            {
                return;
            }
            let Some(held) = feed.held.pop_front() else {
                return;
            };
            let refused = self.progress.refused;
            self.offer(partition, held);
            if self.progress.refused != refused {
                return; // Still refused: try again at the next settle.
            }
        }
    }

    /// Pauses or resumes a partition at the broker as its state asks.
    fn steer<C: ConsumerContext>(&mut self, consumer: &BaseConsumer<C>, partition: &Partition) {
        let Some(feed) = self.partitions.get_mut(partition) else {
            return;
        };
        let pause = feed.should_pause(self.max_in_engine);
        if pause == feed.paused {
            return;
        }
        let mut list = TopicPartitionList::new();
        list.add_partition(&partition.topic, partition.partition);
        let done = if pause {
            consumer.pause(&list)
        } else {
            consumer.resume(&list)
        };
        match done {
            Ok(()) => feed.paused = pause,
            Err(err) => self.progress.last_poll_error = Some(format!("pausing {partition}: {err}")),
        }
    }

    /// Commits each partition's commit point: those that moved (`mode`
    /// async, as the consumer goes), or all of `only` (sync, when
    /// partitions are let go).
    pub(crate) fn commit<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
        mode: CommitMode,
        only: Option<&[Partition]>,
    ) {
        let mut list = TopicPartitionList::new();
        let mut points = Vec::new();
        for (partition, feed) in &self.partitions {
            if only.is_some_and(|only| !only.contains(partition)) {
                continue;
            }
            let Some(point) = feed.offsets.commit_point() else {
                continue;
            };
            if only.is_none() && feed.committed == Some(point) {
                continue;
            }
            let added = list.add_partition_offset(
                &partition.topic,
                partition.partition,
                Offset::Offset(point),
            );
            if added.is_ok() {
                points.push((partition.clone(), point));
            }
        }
        if points.is_empty() {
            return;
        }
        match consumer.commit(&list, mode) {
            Ok(()) => {
                for (partition, point) in points {
                    if let Some(feed) = self.partitions.get_mut(&partition) {
                        debug_assert!(feed.committed <= Some(point), "a commit never moves back");
                        feed.committed = Some(point);
                    }
                }
            }
            Err(err) => self.progress.last_poll_error = Some(format!("committing: {err}")),
        }
        self.publish(true);
    }

    /// Newly assigned partitions: the hook runs first, then they are fed.
    pub(crate) fn assign(&mut self, list: &TopicPartitionList) {
        let partitions = partitions_of(list);
        let hook = (self.on_assign)(&partitions);
        for partition in &partitions {
            self.assignments += 1;
            let mut feed = PartitionFeed::new(self.assignments);
            // A failed hook: never fed, and the consumer stops.
            feed.stopped = hook.is_err();
            self.partitions.insert(partition.clone(), feed);
        }
        if let Err(reason) = hook {
            self.fatal
                .get_or_insert(Error::AssignHook { partitions, reason });
        }
        self.progress.assigned += 1;
        self.publish(true);
    }

    /// Partitions taken away: stop feeding them, wait (at most the revoke
    /// timeout) for their records in the engine, commit, let them go. A
    /// record still in the engine then is answered later, for nobody: the
    /// next owner reads it again from the commit, and the store's owner
    /// epoch refuses whichever write comes second.
    pub(crate) fn revoke<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
        list: &TopicPartitionList,
    ) {
        let partitions = partitions_of(list);
        if consumer.assignment_lost() {
            // Taken from us already (the session expired): a commit would
            // be refused, and may not move past the new owner's.
            for partition in &partitions {
                self.partitions.remove(partition);
            }
        } else {
            self.drain(consumer, &partitions);
            for partition in &partitions {
                self.partitions.remove(partition);
            }
        }
        self.progress.revoked += 1;
        self.publish(true);
    }

    /// Stops feeding `partitions`, waits (at most the revoke timeout) for
    /// their records in the engine, and commits them.
    pub(crate) fn drain<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
        partitions: &[Partition],
    ) {
        for partition in partitions {
            if let Some(feed) = self.partitions.get_mut(partition) {
                feed.held.clear(); // Never submitted: read again by the next owner.
            }
        }
        let deadline = Instant::now() + self.revoke_timeout;
        while partitions.iter().any(|p| {
            self.partitions
                .get(p)
                .is_some_and(|feed| feed.in_engine > 0)
        }) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.answers.recv_timeout(left) {
                Ok(answer) => {
                    self.answer(answer);
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        self.commit(consumer, CommitMode::Sync, Some(partitions));
    }

    /// Notes an error the client reported while polling.
    pub(crate) fn poll_error(&mut self, err: rdkafka::error::KafkaError) {
        self.progress.last_poll_error = Some(err.to_string());
        self.publish(true);
    }

    /// Refreshes the published progress (at most every
    /// [`PUBLISH_INTERVAL`] unless `now`).
    pub(crate) fn publish(&mut self, now: bool) {
        if !now && self.last_published.elapsed() < PUBLISH_INTERVAL {
            return;
        }
        self.last_published = Instant::now();
        self.progress.partitions = self
            .partitions
            .iter()
            .map(|(partition, feed)| (partition.clone(), feed.progress()))
            .collect();
        *self
            .published
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = self.progress.clone();
    }
}

fn partitions_of(list: &TopicPartitionList) -> Vec<Partition> {
    list.elements()
        .iter()
        .map(|element| Partition::new(element.topic(), element.partition()))
        .collect()
}
