//! One owner: a service instance embedding its own [`ferry::Engine`]
//! (tokio shards, one row connection per shard), run as a process of its
//! own (`ferry-load --handover-worker N`), told by the coordinator on stdin
//! which keys it owns.
//!
//! For each key it is assigned, it takes the row (one statement: the
//! epoch raised, `last_seq` returned), then produces the key's next seqs,
//! `last_seq + 1, last_seq + 2, …`, as inputs of that key, a few
//! outstanding at a time, from one task, so admission order is seq order
//! (and the engine's rank, the seq, agrees). It stops producing a key when
//! an input comes back fenced (it no longer serves it) or when the key is
//! revoked; a revoke then flushes the engine and reports what the key's
//! callers got.
//!
//! Between an assignment elsewhere and the revoke here, the owner is a
//! zombie for the key: it goes on as if it still owned it, which is the
//! case the fence is for.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry::{Engine, FerryError, Order, Runtime, StartError};
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::store::StoreAddress;

use super::batch::{BatchCounters, BatchCounts, HandoverError, Input, ShardRows};
use super::protocol::{ranges_of, CallerOutcomes, Command, MoveId, Report};
use super::rows::RowConnection;
use super::Fence;

/// The engine of one owner.
type OwnerEngine = Engine<u64, Input, u64, HandoverError>;

/// How one owner runs.
#[derive(Clone, Debug)]
pub struct WorkerSettings {
    /// The store the rows are in.
    pub store: StoreAddress,
    /// Shards of its engine, each with its own connection.
    pub shards: usize,
    /// Inputs per batch at most.
    pub max_batch_size: usize,
    /// Batches in flight per shard at most.
    pub max_in_flight_batches: usize,
    /// Inputs of one key submitted and not yet answered, at most.
    pub outstanding_per_key: usize,
    /// Whether writes check the owner epoch.
    pub fence: Fence,
}

/// Serves as an owner until told to stop (or stdin closes): the body of
/// `ferry-load --handover-worker N`.
pub fn serve(settings: WorkerSettings) -> Result<(), String> {
    let counters = Arc::new(BatchCounters::default());
    let engine = start_engine(&settings, Arc::clone(&counters))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("could not start the owner's tokio runtime: {err}"))?;
    // Row connections hold `Rc`s: the owner's tasks stay on this thread.
    let local = tokio::task::LocalSet::new();
    let served = runtime.block_on(local.run_until(async {
        let takes = RowConnection::connect(&settings.store, settings.fence).await?;
        let mut owner = Owner::new(engine.clone(), takes, settings, counters);
        say(&Report::Ready);
        owner.serve(commands()).await
    }));
    if let Err(why) = &served {
        say(&Report::Failed(why.clone()));
    }
    engine.close();
    engine.join();
    served
}

/// The engine: rank = seq, tokio shards, each shard's batch function on
/// its own connection.
fn start_engine(
    settings: &WorkerSettings,
    counters: Arc<BatchCounters>,
) -> Result<OwnerEngine, String> {
    let (address, fence) = (settings.store.clone(), settings.fence);
    Engine::builder()
        .shards(settings.shards)
        .pin(false)
        .runtime(Runtime::Tokio)
        .max_batch_size(settings.max_batch_size)
        .max_batch_delay(Duration::ZERO)
        .max_in_flight_batches(settings.max_in_flight_batches)
        .order(Order::by(|input: &Input| input.seq as i64))
        .try_start(move |_shard| {
            let (address, counters) = (address.clone(), Arc::clone(&counters));
            async move {
                let connection = RowConnection::connect(&address, fence).await?;
                let rows = Rc::new(ShardRows::new(connection, fence, counters));
                Ok::<_, String>(move |key: u64, inputs: Vec<Input>| {
                    Rc::clone(&rows).apply(key, inputs)
                })
            }
        })
        .map_err(|err: StartError<String>| err.to_string())
}

/// The coordinator's commands, read from stdin on a thread of their own;
/// the channel closes when stdin does.
fn commands() -> mpsc::UnboundedReceiver<Result<Command, String>> {
    let (send, receive) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let command = line.map_err(|err| format!("reading stdin: {err}"));
            if send.send(command.and_then(|line| line.parse())).is_err() {
                return;
            }
        }
    });
    receive
}

/// Writes one report line to the coordinator.
fn say(report: &Report) {
    let mut out = std::io::stdout().lock();
    // A coordinator that went away closes stdin too, which ends the owner.
    let _ = writeln!(out, "{report}").and_then(|()| out.flush());
}

/// What an owner knows of one key it holds (one tenure: one epoch).
struct Tenure {
    state: Arc<TenureState>,
    producer: JoinHandle<Vec<u64>>,
}

/// Shared by the owner and the key's producer task.
#[derive(Default)]
struct TenureState {
    /// Set by a revoke (or the end): submit no more.
    stop: AtomicBool,
    /// Set when the key moved away: count the callers' outcomes from now.
    moved: AtomicBool,
    /// Inputs submitted and not yet answered.
    in_flight: AtomicU64,
    /// Answered ok once `moved` was set.
    ok_after_move: AtomicU64,
    /// Fenced answers; they come only after the move.
    fenced: AtomicU64,
    /// Other errors, whenever they came: none are expected.
    failed: AtomicU64,
}

/// One owner's keys and their producers.
struct Owner {
    engine: OwnerEngine,
    /// The connection its takes go through (batches have the shards' own).
    takes: RowConnection,
    settings: WorkerSettings,
    counters: Arc<BatchCounters>,
    /// The counters at the last report.
    reported: BatchCounts,
    tenures: HashMap<u64, Tenure>,
    /// Per move, what was in flight when it happened.
    in_flight_at_move: HashMap<MoveId, u64>,
    /// Each key's seqs answered ok, over its finished tenures.
    acked: BTreeMap<u64, Vec<u64>>,
}

impl Owner {
    fn new(
        engine: OwnerEngine,
        takes: RowConnection,
        settings: WorkerSettings,
        counters: Arc<BatchCounters>,
    ) -> Self {
        Owner {
            engine,
            takes,
            settings,
            counters,
            reported: BatchCounts::default(),
            tenures: HashMap::new(),
            in_flight_at_move: HashMap::new(),
            acked: BTreeMap::new(),
        }
    }

    /// Follows the commands until `stop` (or the end of stdin).
    async fn serve(
        &mut self,
        mut commands: mpsc::UnboundedReceiver<Result<Command, String>>,
    ) -> Result<(), String> {
        while let Some(command) = commands.recv().await {
            match command? {
                Command::Assign { key, epoch } => self.assign(key, epoch)?,
                Command::Moving { id, keys } => {
                    let in_flight = self.mark_moved(&keys);
                    self.in_flight_at_move.insert(id, in_flight);
                }
                Command::Revoke { id, keys } => self.revoke(id, &keys).await?,
                Command::Stop => break,
            }
        }
        self.finish().await
    }

    /// Starts a tenure of `key`: its task takes the row, then produces.
    fn assign(&mut self, key: u64, epoch: u64) -> Result<(), String> {
        if self.tenures.contains_key(&key) {
            return Err(format!(
                "key {key} assigned at epoch {epoch} while still held here"
            ));
        }
        let state = Arc::new(TenureState::default());
        let producer = Producer {
            engine: self.engine.clone(),
            key,
            epoch,
            outstanding_max: self.settings.outstanding_per_key,
            state: Arc::clone(&state),
            assigned_at: Instant::now(),
        };
        let takes = self.takes.clone();
        let producer = tokio::task::spawn_local(producer.take_and_produce(takes));
        self.tenures.insert(key, Tenure { state, producer });
        Ok(())
    }

    /// Marks `keys` moved; answers their inputs in flight now.
    fn mark_moved(&self, keys: &[u64]) -> u64 {
        let mut in_flight = 0;
        for tenure in keys.iter().filter_map(|key| self.tenures.get(key)) {
            tenure.state.moved.store(true, Ordering::Relaxed);
            in_flight += tenure.state.in_flight.load(Ordering::Relaxed);
        }
        in_flight
    }

    /// Stops producing `keys`, flushes, and reports their callers'
    /// outcomes and the batch counts since the last report.
    async fn revoke(&mut self, id: MoveId, keys: &[u64]) -> Result<(), String> {
        let in_flight_at_move = match self.in_flight_at_move.remove(&id) {
            Some(in_flight) => in_flight,
            None => self.mark_moved(keys),
        };
        for tenure in keys.iter().filter_map(|key| self.tenures.get(key)) {
            tenure.state.stop.store(true, Ordering::Release);
        }
        self.engine.flush().await;
        let mut callers = CallerOutcomes {
            in_flight_at_move,
            ..CallerOutcomes::default()
        };
        for &key in keys {
            let Some(state) = self.end_tenure(key).await? else {
                continue;
            };
            callers.ok += state.ok_after_move.load(Ordering::Relaxed);
            callers.fenced += state.fenced.load(Ordering::Relaxed);
            callers.failed += state.failed.load(Ordering::Relaxed);
        }
        let now = self.counters.read();
        let batches = now.since(&self.reported);
        self.reported = now;
        say(&Report::Revoked {
            id,
            callers,
            batches,
        });
        Ok(())
    }

    /// Waits for `key`'s producer to end (it was told to stop) and keeps
    /// what it acknowledged.
    async fn end_tenure(&mut self, key: u64) -> Result<Option<Arc<TenureState>>, String> {
        let Some(tenure) = self.tenures.remove(&key) else {
            return Ok(None);
        };
        tenure.state.stop.store(true, Ordering::Release);
        let acked = tenure
            .producer
            .await
            .map_err(|err| format!("the producer of key {key} failed: {err}"))?;
        self.acked.entry(key).or_default().extend(acked);
        debug_assert_eq!(tenure.state.in_flight.load(Ordering::Relaxed), 0);
        Ok(Some(tenure.state))
    }

    /// The end of the run: every key stopped and flushed, then one `acked`
    /// line per key held and `done`.
    async fn finish(&mut self) -> Result<(), String> {
        for tenure in self.tenures.values() {
            tenure.state.stop.store(true, Ordering::Release);
        }
        self.engine.flush().await;
        let keys: Vec<u64> = self.tenures.keys().copied().collect();
        for key in keys {
            self.end_tenure(key).await?;
        }
        for (key, seqs) in &mut self.acked {
            seqs.sort_unstable();
            say(&Report::Acked {
                key: *key,
                ranges: ranges_of(seqs),
            });
        }
        say(&Report::Done {
            batches: self.counters.read(),
        });
        Ok(())
    }
}

/// The task that serves one key for one tenure.
struct Producer {
    engine: OwnerEngine,
    key: u64,
    epoch: u64,
    outstanding_max: usize,
    state: Arc<TenureState>,
    assigned_at: Instant,
}

impl Producer {
    /// Takes the row, then produces from `last_seq + 1`; answers the seqs
    /// answered ok.
    async fn take_and_produce(self, takes: RowConnection) -> Vec<u64> {
        let (key, epoch) = (self.key, self.epoch);
        match takes.take(key, epoch).await {
            Ok(Some(last_seq)) => {
                say(&Report::Took {
                    key,
                    epoch,
                    last_seq,
                });
                self.produce(last_seq + 1).await
            }
            Ok(None) => {
                say(&Report::Stale { key, epoch });
                Vec::new()
            }
            Err(why) => {
                say(&Report::Failed(format!(
                    "taking key {key} at epoch {epoch}: {why}"
                )));
                Vec::new()
            }
        }
    }

    /// Keeps up to `outstanding_max` inputs of the key submitted, seqs in
    /// order, until stopped or fenced; then waits for what is outstanding.
    async fn produce(self, first_seq: u64) -> Vec<u64> {
        let mut outstanding = FuturesUnordered::new();
        let (mut next_seq, mut serving) = (first_seq, true);
        let mut acked = Vec::new();
        loop {
            while serving
                && !self.state.stop.load(Ordering::Acquire)
                && outstanding.len() < self.outstanding_max
            {
                outstanding.push(self.engine.submit(
                    self.key,
                    Input {
                        seq: next_seq,
                        epoch: self.epoch,
                    },
                ));
                self.state.in_flight.fetch_add(1, Ordering::Relaxed);
                next_seq += 1;
            }
            let Some(outcome) = outstanding.next().await else {
                break;
            };
            self.state.in_flight.fetch_sub(1, Ordering::Relaxed);
            serving &= self.count(outcome, &mut acked);
        }
        acked
    }

    /// Counts one caller's outcome; false if the key is no longer served.
    fn count(
        &self,
        outcome: Result<u64, FerryError<Input, HandoverError>>,
        acked: &mut Vec<u64>,
    ) -> bool {
        let moved = self.state.moved.load(Ordering::Relaxed);
        let bump = |counter: &AtomicU64| counter.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(seq) => {
                if acked.is_empty() {
                    let micros = self.assigned_at.elapsed().as_micros() as u64;
                    say(&Report::Served {
                        key: self.key,
                        epoch: self.epoch,
                        micros,
                    });
                }
                acked.push(seq);
                if moved {
                    bump(&self.state.ok_after_move);
                }
                true
            }
            Err(FerryError::Failed(HandoverError::Fenced { .. })) => {
                bump(&self.state.fenced);
                false
            }
            Err(other) => {
                eprintln!(
                    "ferry-load: key {} at epoch {}: {other}",
                    self.key, self.epoch
                );
                bump(&self.state.failed);
                false
            }
        }
    }
}
