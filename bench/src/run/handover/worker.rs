//! One owner: a service instance embedding its own entity engine
//! (`ferry::entity`, tokio shards, one store connection per shard), run as
//! a process of its own (`ferry-load handover --handover-worker N`), told by the
//! coordinator on stdin which keys it owns.
//!
//! For each key it is assigned, it submits a take ([`Step::Take`]: the
//! key's owner epoch raised in its state, `last_seq` answered), then
//! produces the key's next seqs, `last_seq + 1, last_seq + 2, …`, as
//! [`Step::Apply`] inputs, a few outstanding at a time, from one task, so
//! admission order is seq order (and the engine's rank, the seq, agrees).
//! It stops producing a key when an input comes back `Refused(Fenced)` (it
//! no longer serves it) or when the key is revoked; a revoke then flushes
//! the engine and reports what the key's callers got.
//!
//! Between an assignment elsewhere and the revoke here, the owner is a
//! zombie for the key: it goes on as if it still owned it, which is the
//! case the fence is for.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry::entity::{Entities, EntityError};
use ferry::{Order, Runtime};
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::base::children::{read_stdin, say};
use crate::report::handover::{CallerOutcomes, MoveId, OwnerCounts};
use crate::store::{Fence, StoreAddress};

use super::fold::{Fenced, Step};
use super::protocol::{ranges_of, Command, Report};
use super::rows::{start_owner_engine, OwnerEngine};

/// How one owner runs.
#[derive(Clone, Debug)]
pub struct WorkerSettings {
    /// The store the keys are in.
    pub store: StoreAddress,
    /// Shards of its engine, each with its own connection.
    pub shards: usize,
    /// Inputs per batch at most.
    pub max_batch_size: usize,
    /// Trips in flight per shard at most.
    pub max_in_flight_batches: usize,
    /// Inputs of one key submitted and not yet answered, at most.
    pub outstanding_per_key: usize,
    /// Whether the fold refuses an input of another owner epoch.
    pub fence: Fence,
}

/// Serves as an owner until told to stop (or stdin closes): the body of
/// `ferry-load handover --handover-worker N`.
pub fn serve(settings: WorkerSettings) -> Result<(), String> {
    let engine = start_engine(&settings)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("could not start the owner's tokio runtime: {err}"))?;
    let served = runtime.block_on(async {
        let mut owner = Owner::new(engine.clone(), settings);
        say(&Report::Ready);
        owner.serve(commands()).await
    });
    if let Err(why) = &served {
        say(&Report::Failed(why.clone()));
    }
    engine.close();
    engine.join();
    served
}

/// The engine: rank = seq, tokio shards, each connecting to the store on
/// its own thread (the start fails if one cannot).
fn start_engine(settings: &WorkerSettings) -> Result<OwnerEngine, String> {
    let builder = Entities::builder()
        .shards(settings.shards)
        .pin(false)
        .runtime(Runtime::Tokio)
        .max_batch_size(settings.max_batch_size)
        .max_batch_delay(Duration::ZERO)
        .max_in_flight_batches(settings.max_in_flight_batches)
        .order(Order::by(Step::rank));
    start_owner_engine(&settings.store, builder, settings.fence)
}

/// The coordinator's commands, read from stdin on a thread of their own;
/// the channel closes when stdin does.
fn commands() -> mpsc::UnboundedReceiver<Result<Command, String>> {
    let (send, receive) = mpsc::unbounded_channel();
    read_stdin(move |line| {
        let command = line.and_then(|line| line.parse());
        send.send(command).is_ok()
    });
    receive
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
    settings: WorkerSettings,
    /// Inputs answered `Refused(Fenced)`, over every key.
    fenced: Arc<AtomicU64>,
    tenures: HashMap<u64, Tenure>,
    /// Per move, what was in flight when it happened, and the owner's
    /// counts then.
    at_move: HashMap<MoveId, (u64, OwnerCounts)>,
    /// Each key's seqs answered ok, over its finished tenures.
    acked: BTreeMap<u64, Vec<u64>>,
}

impl Owner {
    fn new(engine: OwnerEngine, settings: WorkerSettings) -> Self {
        Owner {
            engine,
            settings,
            fenced: Arc::default(),
            tenures: HashMap::new(),
            at_move: HashMap::new(),
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
                    self.at_move.insert(id, (in_flight, self.counts()));
                }
                Command::Revoke { id, keys } => self.revoke(id, &keys).await?,
                Command::Stop => break,
            }
        }
        self.finish().await
    }

    /// Starts a tenure of `key`: its task takes the key, then produces.
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
            fenced: Arc::clone(&self.fenced),
            assigned_at: Instant::now(),
        };
        let producer = tokio::spawn(producer.take_and_produce());
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
    /// outcomes and the owner's counts since the move (its `moving`, or
    /// this revoke with no lag). Only the moved keys have another writer
    /// meanwhile, so the conflicts and fences are theirs.
    async fn revoke(&mut self, id: MoveId, keys: &[u64]) -> Result<(), String> {
        let (in_flight_at_move, at_move) = match self.at_move.remove(&id) {
            Some(at_move) => at_move,
            None => (self.mark_moved(keys), self.counts()),
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
        let counts = self.counts().since(&at_move);
        say(&Report::Revoked {
            id,
            callers,
            counts,
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
            counts: self.counts(),
        });
        Ok(())
    }

    /// The owner's counts now: its engine's at the store, its fences.
    fn counts(&self) -> OwnerCounts {
        let fenced = self.fenced.load(Ordering::Relaxed);
        OwnerCounts::of(&self.engine.store_stats(), fenced)
    }
}

/// The task that serves one key for one tenure.
struct Producer {
    engine: OwnerEngine,
    key: u64,
    epoch: u64,
    outstanding_max: usize,
    state: Arc<TenureState>,
    /// The owner's count of fenced inputs.
    fenced: Arc<AtomicU64>,
    assigned_at: Instant,
}

impl Producer {
    /// Takes the key through the engine, then produces from `last_seq +
    /// 1`; answers the seqs answered ok.
    ///
    /// The take is a conditional write like any other, so while the old
    /// owner still writes the key it may find the key moved on, again and
    /// again, until the library gives up on it (`NotApplied`: nothing
    /// applied); it is then submitted again, until it lands or the key is
    /// revoked.
    async fn take_and_produce(self) -> Vec<u64> {
        let (key, epoch) = (self.key, self.epoch);
        let mut taken = self.engine.submit(key, Step::Take { epoch }).await;
        let mut submits = 1;
        while matches!(taken, Err(EntityError::NotApplied(_)))
            && !self.state.stop.load(Ordering::Acquire)
        {
            // A store that fails at once is not asked again at once.
            tokio::time::sleep(Duration::from_millis(1)).await;
            taken = self.engine.submit(key, Step::Take { epoch }).await;
            submits += 1;
        }
        match taken {
            Ok(last_seq) => {
                say(&Report::Took {
                    key,
                    epoch,
                    last_seq,
                    submits,
                });
                self.produce(last_seq + 1).await
            }
            Err(EntityError::Refused(Fenced { .. })) => {
                say(&Report::Stale { key, epoch });
                Vec::new()
            }
            // Revoked (or the run ended) before the take landed: nothing
            // of this tenure was applied, and nothing is to be served.
            Err(EntityError::NotApplied(_)) => Vec::new(),
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
                    Step::Apply {
                        epoch: self.epoch,
                        seq: next_seq,
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
    fn count(&self, outcome: Result<u64, EntityError<Step, Fenced>>, acked: &mut Vec<u64>) -> bool {
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
            Err(EntityError::Refused(Fenced { .. })) => {
                bump(&self.state.fenced);
                bump(&self.fenced);
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
