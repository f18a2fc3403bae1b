//! The partition-serial member, as consumers are commonly written: one
//! rdkafka consumer polling on one thread and handing each record to its
//! partition's own thread, which applies records one at a time — write
//! the record's row (the fenced statement of [`super::write`], with one
//! record), mark its offset for commit, take the next. The client commits
//! the marked offsets every second and when partitions are revoked, as
//! ferry's consumer commits every second: a commit request per record
//! queues up ahead of the group's heartbeats on the coordinator's
//! connection, and members then drop out of the group. A partition's thread takes
//! the partition at the store (its owner epoch raised) before its first
//! write, and is stopped and joined when the partition is revoked.
//!
//! A partition whose records wait beyond [`PAUSE_AT`] is paused at the
//! broker until its thread catches up to [`RESUME_AT`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::Message;
use rdkafka::{ClientContext, TopicPartitionList};

use crate::store::on_postgres::connect;

use super::consumer::{MemberSettings, Running, Tally};
use super::write::{Outcome, Rec, Writer};

/// Records waiting for a partition's thread before it is paused.
pub const PAUSE_AT: usize = 2_000;
/// Records waiting below which a paused partition resumes.
pub const RESUME_AT: usize = 200;
/// How long one poll waits.
const POLL_WAIT: Duration = Duration::from_millis(50);
/// How long leaving the group may take on close.
const LEAVE_WITHIN: Duration = Duration::from_secs(20);

/// A record handed to its partition's thread: offset, key, value.
type Handed = (i64, String, Option<String>);

type Client = BaseConsumer<Serial>;

/// The consumer's context: the partitions' threads, started and stopped
/// by the rebalance callbacks.
struct Serial {
    settings: MemberSettings,
    tally: Arc<Tally>,
    workers: Mutex<HashMap<i32, Worker>>,
    client: OnceLock<Weak<Client>>,
    rebalances: Arc<AtomicU64>,
    /// Partitions with a thread now.
    held: Arc<AtomicUsize>,
}

/// One partition's thread.
struct Worker {
    hand: Sender<Handed>,
    waiting: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl ClientContext for Serial {}

impl ConsumerContext for Serial {
    fn pre_rebalance(&self, _: &Client, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(list) = rebalance {
            self.rebalances.fetch_add(1, Ordering::Relaxed);
            for element in list.elements() {
                self.stop_worker(element.partition());
            }
        }
    }

    fn post_rebalance(&self, _: &Client, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(list) = rebalance {
            self.rebalances.fetch_add(1, Ordering::Relaxed);
            for element in list.elements() {
                self.start_worker(element.partition());
            }
        }
    }
}

impl Serial {
    fn start_worker(&self, partition: i32) {
        let (hand, records) = mpsc::channel();
        let (waiting, stop) = (Arc::default(), Arc::new(AtomicBool::new(false)));
        let job = Job {
            settings: self.settings.clone(),
            partition,
            tally: self.tally.clone(),
            client: self.client.get().cloned().unwrap_or_default(),
            waiting: Arc::clone(&waiting),
            stop: Arc::clone(&stop),
        };
        let thread = std::thread::spawn(move || job.run(&records));
        let worker = Worker {
            hand,
            waiting,
            stop,
            thread,
        };
        let mut workers = self.lock_workers();
        workers.insert(partition, worker);
        self.held.store(workers.len(), Ordering::Relaxed);
    }

    /// Stops a partition's thread after its current record, and waits.
    fn stop_worker(&self, partition: i32) {
        let removed = {
            let mut workers = self.lock_workers();
            let removed = workers.remove(&partition);
            self.held.store(workers.len(), Ordering::Relaxed);
            removed
        };
        let Some(worker) = removed else {
            return;
        };
        worker.stop.store(true, Ordering::Relaxed);
        drop(worker.hand);
        let _ = worker.thread.join();
    }

    fn lock_workers(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Worker>> {
        self.workers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands a record to its partition's thread; answers how many wait
    /// there now (`None`: the partition is not this member's any more).
    fn hand(&self, partition: i32, handed: Handed) -> Option<usize> {
        let workers = self.lock_workers();
        let worker = workers.get(&partition)?;
        worker.hand.send(handed).ok()?;
        Some(worker.waiting.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn waiting(&self, partition: i32) -> usize {
        let workers = self.lock_workers();
        workers
            .get(&partition)
            .map_or(0, |w| w.waiting.load(Ordering::Relaxed))
    }
}

/// What a partition's thread works with.
struct Job {
    settings: MemberSettings,
    partition: i32,
    tally: Arc<Tally>,
    client: Weak<Client>,
    waiting: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Job {
    /// Takes the partition, then applies its records one at a time.
    fn run(self, records: &Receiver<Handed>) {
        let runtime = crate::store::admin_runtime().unwrap_or_else(|why| die(&why));
        let (writer, epoch) = runtime
            .block_on(self.take())
            .unwrap_or_else(|why| die(&why));
        while !self.stop.load(Ordering::Relaxed) {
            let Ok((offset, key, value)) = records.recv_timeout(POLL_WAIT) else {
                continue;
            };
            let (seq, produced_us) =
                super::parse_value(value.as_deref()).unwrap_or_else(|why| die(&why));
            let rec = Rec {
                seq,
                offset,
                epoch,
                produced_us,
            };
            if !self.apply(&runtime, &writer, &key, rec) {
                return;
            }
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }

    async fn take(&self) -> Result<(Writer, i64), String> {
        let config = super::pg_config(&self.settings.store)?;
        let client = connect(&config, "the store").await?;
        let writer = Writer::prepare(client, &self.settings.prefix, self.settings.fence).await?;
        let epoch = writer.take(&self.settings.topic, self.partition).await?;
        Ok((writer, epoch))
    }

    /// Writes one record's row and marks it for commit; `false`: fenced,
    /// stop.
    fn apply(
        &self,
        runtime: &tokio::runtime::Runtime,
        writer: &Writer,
        key: &str,
        rec: Rec,
    ) -> bool {
        let topic = &self.settings.topic;
        loop {
            match runtime.block_on(writer.apply(topic, &[(key, &[rec])])) {
                Ok(outcomes) if outcomes == [Outcome::Applied] => break,
                Ok(_) => {
                    eprintln!(
                        "partition-serial: {topic}/{} is fenced: a newer owner holds it",
                        self.partition
                    );
                    return false;
                }
                Err(why) if self.stop.load(Ordering::Relaxed) => {
                    eprintln!("partition-serial: giving up a record on revoke: {why}");
                    return false;
                }
                Err(why) => {
                    eprintln!("partition-serial: {why}; again");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        self.tally.answered(&[rec]);
        self.mark(rec.offset);
        true
    }

    /// Marks `offset` applied: the next commit moves past it.
    fn mark(&self, offset: i64) {
        if let Some(client) = self.client.upgrade() {
            let _ = client.store_offset(&self.settings.topic, self.partition, offset);
        }
    }
}

/// A partition's thread cannot go on: the member exits, and the parent
/// sees it gone.
fn die(why: &str) -> ! {
    eprintln!("partition-serial member: {why}");
    std::process::exit(3)
}

/// The running member: its polling thread.
struct Member {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<(), String>>,
    rebalances: Arc<AtomicU64>,
    held: Arc<AtomicUsize>,
}

impl Running for Member {
    fn rebalances(&self) -> u64 {
        self.rebalances.load(Ordering::Relaxed)
    }

    fn partitions(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| "the polling thread panicked".to_owned())?
    }
}

/// Joins the group and starts polling.
pub fn start(settings: &MemberSettings, tally: Arc<Tally>) -> Result<Box<dyn Running>, String> {
    let rebalances = Arc::new(AtomicU64::new(0));
    let held = Arc::new(AtomicUsize::new(0));
    let context = Serial {
        settings: settings.clone(),
        tally,
        workers: Mutex::default(),
        client: OnceLock::new(),
        rebalances: Arc::clone(&rebalances),
        held: Arc::clone(&held),
    };
    let client: Arc<Client> = Arc::new(
        super::produce::client_config(&settings.bootstrap)
            .set("group.id", &settings.group)
            .set("auto.offset.reset", "earliest")
            .set("enable.auto.commit", "true")
            .set("auto.commit.interval.ms", "1000")
            .set("enable.auto.offset.store", "false")
            .set("partition.assignment.strategy", "cooperative-sticky")
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "1500")
            .set("client.id", format!("partition-serial-{}", settings.index))
            .create_with_context(context)
            .map_err(|err| format!("the consumer did not start: {err}"))?,
    );
    let _ = client.context().client.set(Arc::downgrade(&client));
    client
        .subscribe(&[&settings.topic])
        .map_err(|err| format!("subscribing to {}: {err}", settings.topic))?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let thread = std::thread::spawn(move || poll(&client, &stopping));
    Ok(Box::new(Member {
        stop,
        thread,
        rebalances,
        held,
    }))
}

/// The polling thread: hands records to their partitions' threads, pauses
/// and resumes partitions; on stop, leaves the group.
fn poll(client: &Arc<Client>, stop: &AtomicBool) -> Result<(), String> {
    let mut paused = HashSet::new();
    while !stop.load(Ordering::Relaxed) {
        if let Some(Ok(message)) = client.poll(POLL_WAIT) {
            let handed = (
                message.offset(),
                String::from_utf8_lossy(message.key().unwrap_or_default()).into_owned(),
                message
                    .payload_view::<str>()
                    .and_then(Result::ok)
                    .map(str::to_owned),
            );
            let partition = message.partition();
            if client
                .context()
                .hand(partition, handed)
                .is_some_and(|n| n >= PAUSE_AT)
            {
                let _ = client.pause(&one(client, partition));
                paused.insert(partition);
            }
        }
        paused.retain(|&partition| {
            let resume = client.context().waiting(partition) < RESUME_AT;
            if resume {
                let _ = client.resume(&one(client, partition));
            }
            !resume
        });
    }
    leave(client)
}

/// The partition `partition` of the subscribed topic, as a list.
fn one(client: &Client, partition: i32) -> TopicPartitionList {
    let mut list = TopicPartitionList::new();
    list.add_partition(&client.context().settings.topic, partition);
    list
}

/// Unsubscribes and polls until the partitions are revoked (their
/// threads stopped and joined).
fn leave(client: &Client) -> Result<(), String> {
    client.unsubscribe();
    let deadline = Instant::now() + LEAVE_WITHIN;
    while !client.context().lock_workers().is_empty() && Instant::now() < deadline {
        let _ = client.poll(POLL_WAIT);
    }
    let left: Vec<i32> = client.context().lock_workers().keys().copied().collect();
    for partition in left {
        client.context().stop_worker(partition);
    }
    Ok(())
}
