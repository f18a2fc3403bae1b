//! The simulated store (`--store sim`, the default): one version and one
//! value per key, a read and a conditional write per batch, each one round
//! trip of `rtt`, answered by a thread of this process.
//!
//! # What a batch costs
//!
//! [`SimStore::apply`] is the sim's form of a batch (see the
//! [parent module](super) for what every store does): read the key's
//! version, then write `version + inputs` on the condition that the version
//! is still the one read. If another batch of the same key wrote in
//! between, the write is a *conflict*: counted, and the batch reads again
//! and retries (at most [`WRITE_ATTEMPTS_MAX`] times). A system that keeps
//! one batch per key in flight never conflicts; that is a check, not an
//! assumption. A successful write also adds the batch's inputs to the key's
//! value.
//!
//! A key's version is the number of inputs applied to it, so the sum of all
//! versions is the number of inputs the store applied, and the sum of all
//! values is the sum of those inputs ([`SimStore::contents`]): they must
//! equal the count and the sum of the inputs answered with success.
//!
//! # Unkeyed batches
//!
//! A batch of the unkeyed systems (`ferry-load unkeyed`) has no key.
//! [`SimStore::apply_unkeyed`] gives it the same two round trips as a keyed
//! batch, a read of one stream's length and then an append of the batch's
//! inputs to it, but the append is unconditional, so it cannot conflict:
//! unkeyed batching promises no order between batches, so there is no
//! version to guard. The stream's length and value count in
//! [`SimStore::contents`] like a key's.
//!
//! # Timing
//!
//! A request takes effect when it is sent (the versions are atomics, updated
//! on the sender's thread); its answer is held back until one `rtt` after it
//! was sent. The holding back is the store's own thread: it keeps pending
//! answers in a heap by due time and sleeps until the earliest, with the
//! kernel's timer slack lowered to 1 µs and its priority raised (see
//! [`crate::base::timing`]), so when answers come back depends on the kernel's
//! wake-up of one thread, the same for every system, and not on the
//! caller's runtime (tokio's timer wheel, for instance, has 1 ms steps) or
//! on how busy the machine is. How late that wake-up is depends on the
//! machine: on the 2-vCPU virtual machine of `docs/benchmarks.md`, a bare
//! loop of 1 ms sleeps with the same slack woke 74 µs late at the median
//! with nothing else running, and under the contended load of
//! `ferry-load`'s default run the store's answers are 20–27 µs past due at
//! the median and about 100 µs at the 99th percentile. How late answers were is measured
//! ([`SimStore::take_lateness`]) and reported with each run.
//!
//! With `rtt` zero an answer is ready at once, with no thread hop, for every
//! system alike: that setting measures the systems' own overhead.
//!
//! The store thread never needs waking by a sender: every answer pending is
//! due within `rtt`, and a request sent after the thread went to sleep is due
//! at least `rtt` after that moment, so sleeping until the earliest pending
//! answer, or for `rtt` when none is pending, never misses one.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use hdrhistogram::Histogram;

use super::{
    lock, new_histogram, Attempt, Contents, Rounds, StoreError, Write, WRITE_ATTEMPTS_MAX,
};
use crate::scenarios::overload;

/// The store thread sleeps at most this long at a time, so it notices a stop.
const IDLE_SLEEP_MAX: Duration = Duration::from_millis(10);

type Answer = Result<u64, StoreError>;

/// The simulated store. It lives for the rest of the process (it is leaked
/// by [`SimStore::start`]), so batch functions hold a plain
/// `&'static SimStore` and pay no reference counting per batch.
pub struct SimStore {
    /// Per key, its version and value.
    slots: Box<[Slot]>,
    /// The unkeyed stream's length: inputs applied by unkeyed batches.
    stream_len: AtomicU64,
    /// The sum of the inputs appended to the stream.
    stream_value: AtomicU64,
    rtt: Duration,
    /// A slowdown (`--store-slowdown`): from and until when (nanoseconds
    /// since [`overload::epoch`]), and how many times slower.
    slow_from_ns: AtomicU64,
    slow_until_ns: AtomicU64,
    slow_factor: AtomicU64,
    conflicts: AtomicU64,
    /// What a request costs beyond its round trip, per key it touches.
    key_cost_ns: AtomicU64,
    wire: Option<Arc<Wire>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// One key: its version and value side by side, so a write's second
/// atomic finds the cache line its first one just took.
#[derive(Debug, Default)]
#[repr(align(16))]
struct Slot {
    version: AtomicU64,
    value: AtomicU64,
}

/// What the sender and the store thread share when `rtt > 0`.
struct Wire {
    /// Requests sent and not yet taken by the store thread.
    ///
    /// A lock, not a lock-free queue, on purpose. In a bounded lock-free
    /// queue a sender claims a slot and then fills it; a consumer that meets
    /// a claimed, unfilled slot spins until it is filled. The store thread
    /// runs at a raised priority, so if the sender was preempted between
    /// the two steps on the store's own core (a pinned shard, say), the
    /// store spun while the sender waited for the CPU, and answers came back
    /// milliseconds late, for whichever system was being measured. A thread
    /// blocked on a mutex sleeps instead and lets the holder finish.
    inbox: Mutex<Inbox>,
    stop: AtomicBool,
    /// How late answers were delivered, in nanoseconds past due.
    lateness: Mutex<Histogram<u64>>,
}

#[derive(Default)]
struct Inbox {
    requests: Vec<Pending>,
    /// Set by the store thread as it exits; later requests are refused.
    closed: bool,
}

struct Pending {
    due: Instant,
    answer: Answer,
    reply: oneshot::Sender<Answer>,
}

impl SimStore {
    /// A store for keys `0..keys` answering after `rtt`; starts its thread if
    /// `rtt > 0`.
    pub fn start(keys: u64, rtt: Duration) -> std::io::Result<&'static SimStore> {
        let slots = (0..keys).map(|_| Slot::default()).collect();
        let (wire, thread) = if rtt.is_zero() {
            (None, None)
        } else {
            let wire = Arc::new(Wire {
                inbox: Mutex::new(Inbox::default()),
                stop: AtomicBool::new(false),
                lateness: Mutex::new(new_histogram()),
            });
            let thread = std::thread::Builder::new()
                .name("ferry-load-store".to_string())
                .spawn({
                    let wire = Arc::clone(&wire);
                    move || run(&wire, rtt)
                })?;
            (Some(wire), Some(thread))
        };
        Ok(Box::leak(Box::new(SimStore {
            slots,
            stream_len: AtomicU64::new(0),
            stream_value: AtomicU64::new(0),
            rtt,
            slow_from_ns: AtomicU64::new(0),
            slow_until_ns: AtomicU64::new(0),
            slow_factor: AtomicU64::new(1),
            conflicts: AtomicU64::new(0),
            key_cost_ns: AtomicU64::new(0),
            wire,
            thread: Mutex::new(thread),
        })))
    }

    /// The round trip time of one request.
    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    /// Makes round trips `factor` times as long from `from` until `until`
    /// (replacing any slowdown set before). Needs a round trip above zero.
    pub fn slow_down(&self, from: Instant, until: Instant, factor: u32) {
        let since = |at: Instant| at.saturating_duration_since(overload::epoch()).as_nanos() as u64;
        self.slow_factor.store(1, Ordering::Relaxed);
        self.slow_from_ns.store(since(from), Ordering::Relaxed);
        self.slow_until_ns.store(since(until), Ordering::Relaxed);
        self.slow_factor.store(u64::from(factor), Ordering::Relaxed);
    }

    /// The round trip of a request sent at `now`.
    fn rtt_at(&self, now: Instant) -> Duration {
        let factor = self.slow_factor.load(Ordering::Relaxed);
        if factor <= 1 {
            return self.rtt;
        }
        let at = now.saturating_duration_since(overload::epoch()).as_nanos() as u64;
        let slow = self.slow_from_ns.load(Ordering::Relaxed) <= at
            && at < self.slow_until_ns.load(Ordering::Relaxed);
        if slow {
            self.rtt * factor as u32
        } else {
            self.rtt
        }
    }

    /// The number of keys.
    pub fn keys(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Reads `key`'s version.
    pub fn read(&self, key: u64) -> Response {
        let version = self.slot(key).version.load(Ordering::Acquire);
        self.answer_later(Ok(version), 1)
    }

    /// Writes `expected + count` to `key` if its version is still
    /// `expected`, and adds `sum` to its value; answers the new version, or
    /// a [`StoreError::Conflict`].
    pub fn write(&self, key: u64, expected: u64, count: u64, sum: u64) -> Response {
        self.answer_later(self.compare_and_add(key, expected, count, sum), 1)
    }

    /// The conditional write itself, done at once: moves `key`'s version
    /// from `expected` to `expected + count` and adds `sum` to its value,
    /// or counts a conflict.
    fn compare_and_add(&self, key: u64, expected: u64, count: u64, sum: u64) -> Answer {
        let slot = self.slot(key);
        match slot.version.compare_exchange(
            expected,
            expected + count,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                // The version is the gate: only the batch that moved it adds,
                // and additions commute, so the value needs no condition.
                slot.value.fetch_add(sum, Ordering::AcqRel);
                Ok(expected + count)
            }
            Err(current) => {
                self.conflicts.fetch_add(1, Ordering::Relaxed);
                Err(StoreError::Conflict {
                    key,
                    expected,
                    current,
                })
            }
        }
    }

    /// One batch of `count` inputs summing to `sum` for `key`: read, then
    /// conditional write, retried after a conflict. Answers the version the
    /// batch started from: its inputs got versions
    /// `version + 1 ..= version + count`.
    pub async fn apply(&'static self, key: u64, count: u64, sum: u64) -> Result<u64, StoreError> {
        for _ in 0..WRITE_ATTEMPTS_MAX {
            let version = self.read(key).await?;
            match self.write(key, version, count, sum).await {
                Ok(_) => return Ok(version),
                Err(StoreError::Conflict { .. }) => continue,
                Err(other) => return Err(other),
            }
        }
        Err(StoreError::ConflictsExhausted {
            key,
            attempts: WRITE_ATTEMPTS_MAX,
        })
    }

    /// Sets what each request costs beyond its round trip, per key it
    /// touches (`--store-key-cost`): a batch's requests pay it once, a
    /// trip's once per key. Without a round trip (an RTT of zero) nothing
    /// is delayed.
    pub fn set_key_cost(&self, cost: Duration) {
        let ns = u64::try_from(cost.as_nanos()).unwrap_or(u64::MAX);
        self.key_cost_ns.store(ns, Ordering::Relaxed);
    }

    /// What each request costs per key it touches.
    pub fn key_cost(&self) -> Duration {
        Duration::from_nanos(self.key_cost_ns.load(Ordering::Relaxed))
    }

    /// A trip: several keys' batches in one request each way. One read of
    /// every key's version, then one request writing each key
    /// conditionally on its own (a key whose version moved is a conflict
    /// for that key alone); the keys that conflicted are read and written
    /// again, at most [`WRITE_ATTEMPTS_MAX`] times. Each request costs one
    /// round trip plus the key cost per key. The keys must be distinct.
    /// Answers, per write, the version it started from.
    pub async fn apply_many(&'static self, writes: Vec<Write>) -> Vec<Result<u64, StoreError>> {
        debug_assert!(distinct_keys(&writes), "a trip holds no key twice");
        let mut rounds = Rounds::new(&writes);
        while let Some(left) = rounds.next() {
            // Conflicts are counted by the writes themselves.
            rounds.settle(self.try_many(&writes, &left).await);
        }
        rounds.finish()
    }

    /// One round of a trip at the writes `left`: a read request, then a
    /// write request.
    async fn try_many(&self, writes: &[Write], left: &[usize]) -> Attempt {
        let versions: Vec<u64> = left
            .iter()
            .map(|&at| self.slot(writes[at].key).version.load(Ordering::Acquire))
            .collect();
        self.answer_later(Ok(0), left.len()).await?;
        let (mut written, mut conflicted) = (Vec::new(), Vec::new());
        for (&at, version) in left.iter().zip(versions) {
            let Write { key, count, sum } = writes[at];
            match self.compare_and_add(key, version, count, sum) {
                Ok(_) => written.push((at, version)),
                Err(_) => conflicted.push(at),
            }
        }
        self.answer_later(Ok(0), left.len()).await?;
        Ok((written, conflicted))
    }

    /// Reads the unkeyed stream's length.
    pub fn read_stream(&self) -> Response {
        self.answer_later(Ok(self.stream_len.load(Ordering::Acquire)), 1)
    }

    /// Appends `count` inputs summing to `sum` to the unkeyed stream,
    /// unconditionally; answers the length before them, so their positions
    /// are `length + 1 ..= length + count`, never shared with another
    /// batch's.
    pub fn append(&self, count: u64, sum: u64) -> Response {
        let length = self.stream_len.fetch_add(count, Ordering::AcqRel);
        self.stream_value.fetch_add(sum, Ordering::AcqRel);
        self.answer_later(Ok(length), 1)
    }

    /// One unkeyed batch of `count` inputs summing to `sum`: a read, then
    /// an append, the same two round trips as [`SimStore::apply`] and no
    /// version check (see
    /// the module docs). Every unkeyed system's batch is this call, so
    /// they pay the same per batch, and a batch costs what a keyed one
    /// costs, so the unkeyed and keyed tables are priced alike. Answers the
    /// stream's length before the batch's inputs.
    ///
    /// Why not a keyed [`SimStore::apply`] on a key drawn per batch: unkeyed
    /// systems run many batches at once, and two of them on one key would
    /// conflict and retry, a cost of the key choice (a hot zipf key most of
    /// all), not of the system batching.
    pub async fn apply_unkeyed(&'static self, count: u64, sum: u64) -> Result<u64, StoreError> {
        // The read stands for the round trip a real batch spends before it
        // writes (a lookup, a sequence number); its answer is not needed.
        self.read_stream().await?;
        self.append(count, sum).await
    }

    /// Conditional writes refused as conflicts since the start.
    pub fn conflicts(&self) -> u64 {
        self.conflicts.load(Ordering::Relaxed)
    }

    /// What the store holds: the inputs applied since the start (every
    /// key's version and the stream's length) and their sum (every value).
    pub fn contents(&self) -> Contents {
        let keyed = self
            .slots
            .iter()
            .fold(Contents::default(), |held, slot| Contents {
                inputs: held.inputs + slot.version.load(Ordering::Acquire),
                sum: held.sum.wrapping_add(slot.value.load(Ordering::Acquire)),
            });
        Contents {
            inputs: keyed.inputs + self.stream_len.load(Ordering::Acquire),
            sum: keyed
                .sum
                .wrapping_add(self.stream_value.load(Ordering::Acquire)),
        }
    }

    /// How late answers came back since the last call (nanoseconds past
    /// their due time), and starts a new count. Empty when `rtt` is zero.
    pub fn take_lateness(&self) -> Histogram<u64> {
        match &self.wire {
            None => new_histogram(),
            Some(wire) => {
                let mut lateness = lock(&wire.lateness);
                let taken = lateness.clone();
                lateness.reset();
                taken
            }
        }
    }

    /// Stops the store thread once every pending answer is delivered, and
    /// waits for it. Call it once traffic has ended: requests sent
    /// afterwards fail with `Stopped`.
    pub fn stop(&self) {
        if let Some(wire) = &self.wire {
            wire.stop.store(true, Ordering::Release);
        }
        if let Some(thread) = lock(&self.thread).take() {
            let _ = thread.join();
        }
    }

    fn slot(&self, key: u64) -> &Slot {
        assert!(
            key < self.keys(),
            "key {key} outside the store's 0..{}",
            self.keys()
        );
        &self.slots[key as usize]
    }

    fn answer_later(&self, answer: Answer, keys: usize) -> Response {
        let Some(wire) = &self.wire else {
            return Response::ready(answer);
        };
        if wire.stop.load(Ordering::Acquire) {
            return Response::ready(Err(StoreError::Stopped));
        }
        let (reply, receiver) = oneshot::channel();
        let pending = Pending {
            due: {
                let now = Instant::now();
                now + self.rtt_at(now) + self.key_cost() * keys as u32
            },
            answer,
            reply,
        };
        {
            let mut inbox = lock(&wire.inbox);
            if inbox.closed {
                return Response::ready(Err(StoreError::Stopped));
            }
            inbox.requests.push(pending);
        }
        Response {
            state: ResponseState::Waiting(receiver),
        }
    }
}

impl fmt::Debug for SimStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimStore")
            .field("keys", &self.keys())
            .field("rtt", &self.rtt)
            .field("conflicts", &self.conflicts())
            .finish_non_exhaustive()
    }
}

/// The answer to one request: ready at once when `rtt` is zero, otherwise
/// when the store thread releases it. Works on any executor.
#[must_use = "a response does nothing unless awaited"]
pub struct Response {
    state: ResponseState,
}

enum ResponseState {
    Ready(Option<Answer>),
    Waiting(oneshot::Receiver<Answer>),
}

impl Response {
    fn ready(answer: Answer) -> Self {
        Self {
            state: ResponseState::Ready(Some(answer)),
        }
    }
}

impl Future for Response {
    type Output = Answer;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        match &mut self.get_mut().state {
            ResponseState::Ready(answer) => {
                Poll::Ready(answer.take().expect("Response polled after it completed"))
            }
            ResponseState::Waiting(receiver) => match Pin::new(receiver).poll(cx) {
                Poll::Ready(Ok(answer)) => Poll::Ready(answer),
                Poll::Ready(Err(oneshot::Canceled)) => Poll::Ready(Err(StoreError::Stopped)),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

/// A pending answer in the store thread's heap, earliest due first, ties in
/// the order taken from the queue.
struct Due {
    due: Instant,
    seq: u64,
    pending: Pending,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

/// The store thread: take new requests, deliver what is due, sleep until the
/// next due time (see the module docs for why no wake-up is needed).
fn run(wire: &Wire, rtt: Duration) {
    if !crate::base::timing::lower_timer_slack() {
        eprintln!("ferry-load: could not lower the store thread's timer slack; answers may come back up to 50 µs late");
    }
    if !crate::base::timing::raise_priority() {
        eprintln!("ferry-load: could not raise the store thread's priority (needs CAP_SYS_NICE); on a busy machine its answers may come back late");
    }
    let mut heap: BinaryHeap<Reverse<Due>> = BinaryHeap::new();
    let mut seq = 0_u64;
    // Swapped with the inbox's, so neither side allocates in steady state.
    let mut taken: Vec<Pending> = Vec::new();
    loop {
        std::mem::swap(&mut lock(&wire.inbox).requests, &mut taken);
        for pending in taken.drain(..) {
            heap.push(Reverse(Due {
                due: pending.due,
                seq,
                pending,
            }));
            seq += 1;
        }
        let now = Instant::now();
        if heap.peek().is_some_and(|Reverse(next)| next.due <= now) {
            let mut lateness = lock(&wire.lateness);
            while let Some(Reverse(next)) = heap.peek() {
                if next.due > now {
                    break;
                }
                let Reverse(Due { pending, .. }) = heap.pop().expect("peeked");
                lateness.saturating_record(nanos(now - pending.due).max(1));
                // A caller that gave up has nothing to be told.
                let _ = pending.reply.send(pending.answer);
            }
        }
        if heap.is_empty() && wire.stop.load(Ordering::Acquire) {
            // A request that slipped in before the stop is answered on the
            // next turn; once `closed` is set, senders get `Stopped` at once,
            // so nobody waits on a thread that is gone.
            let mut inbox = lock(&wire.inbox);
            if inbox.requests.is_empty() {
                inbox.closed = true;
                return;
            }
            continue;
        }
        let now = Instant::now();
        let next = heap
            .peek()
            .map_or(now + rtt, |Reverse(next)| next.due)
            .min(now + rtt)
            .min(now + IDLE_SLEEP_MAX);
        if next > now {
            std::thread::sleep(next - now);
        }
    }
}

/// No key is written twice.
fn distinct_keys(writes: &[Write]) -> bool {
    let keys: std::collections::HashSet<u64> = writes.iter().map(|write| write.key).collect();
    keys.len() == writes.len()
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
