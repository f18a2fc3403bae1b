//! The coordinator: the partition map, the owners as child processes, the
//! moves, and at the end the read-back.
//!
//! It plays the part a consumer group plays for Kafka partitions: key `k`
//! starts on owner `k % instances` at epoch 1; move `m` (of `moves`, spread
//! evenly over the run) takes every other key that owner `(m - 1) %
//! instances` holds and gives it to the next owner, bumping each key's
//! epoch. With a lag, the new owner is assigned first and the old one is
//! revoked only `lag` later, a zombie meanwhile; with no lag, the old owner
//! is revoked and has flushed before the new one is assigned (the graceful
//! recipe). One move finishes (its revoke reported) before the next begins.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::child_lines::{self, Said};
use crate::store::StoreAddress;

use super::fold::OwnerCounts;
use super::protocol::{CallerOutcomes, Command, MoveId, Report};
use super::rows::RowStore;
use super::verdict::Verdict;
use super::Fence;

/// How long an owner may take to start, to finish a revoke, or to stop.
const REPLY_WITHIN: Duration = Duration::from_secs(30);

/// How long an owner may take to exit once it said it was done.
const EXIT_WITHIN: Duration = Duration::from_secs(10);

/// A handover run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The store (PostgreSQL or Redis).
    pub store: StoreAddress,
    /// The program run as each owner (this binary, `--handover-worker`).
    pub worker_program: PathBuf,
    /// Owners, each a process with its own engine.
    pub instances: usize,
    /// Keys `0..keys`.
    pub keys: u64,
    /// Moves during the run.
    pub moves: usize,
    /// How long the run lasts.
    pub duration: Duration,
    /// From the new owner's assignment to the old owner's revoke.
    pub lag: Duration,
    /// Whether the fold refuses an input of another owner epoch.
    pub fence: Fence,
    /// Shards per owner.
    pub shards: usize,
    /// Inputs per batch at most.
    pub max_batch_size: usize,
    /// Trips in flight per shard at most.
    pub max_in_flight_batches: usize,
    /// Inputs of one key outstanding on its owner at most.
    pub outstanding_per_key: usize,
}

/// One move, as the owners reported it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MoveReport {
    /// From 1.
    pub id: MoveId,
    /// When it was due, from the start of the run.
    pub due: Duration,
    /// When it began: later than due when the coordinator did not get the
    /// CPU in time, or the previous move's revoke took that long.
    pub at: Duration,
    /// The old owner.
    pub from: usize,
    /// The new owner.
    pub to: usize,
    /// The keys moved.
    pub keys: Vec<u64>,
    /// The keys the new owner took (it reported `took`).
    pub taken: usize,
    /// Takes the new owner submitted again, the library having given up
    /// on them while the old owner kept writing their keys.
    pub take_resubmits: u64,
    /// What the old owner's callers got, from the move on.
    pub callers: CallerOutcomes,
    /// The old owner's counts over the move (its conflicts and fences).
    pub old_owner: OwnerCounts,
    /// Per moved key the new owner served, microseconds from its
    /// assignment to its first input answered ok.
    pub served_us: Vec<u64>,
    /// Whether the old owner's revoke was reported.
    pub revoked: bool,
}

/// What a run found.
#[derive(Clone, Debug)]
pub struct HandoverReport {
    /// The run's settings.
    pub settings: Settings,
    /// Each move.
    pub moves: Vec<MoveReport>,
    /// Every owner's counts, added.
    pub counts: OwnerCounts,
    /// The read-back.
    pub verdict: Verdict,
}

/// Runs the handover: what a previous run left removed, owners started,
/// keys assigned and moved, the keys read back and checked, the owners
/// stopped and the keys removed.
pub fn run(settings: &Settings) -> Result<HandoverReport, String> {
    let rows = RowStore::open(&settings.store, settings.keys)?;
    let ran = Coordinator::start(settings).and_then(|mut coordinator| {
        let driven = coordinator.drive();
        coordinator.owners.stop();
        driven.map(|()| coordinator)
    });
    let report = ran.and_then(|coordinator| {
        let stored = rows.read_back()?;
        Ok(HandoverReport {
            settings: settings.clone(),
            verdict: Verdict::check(&stored, &coordinator.acked),
            counts: coordinator
                .done
                .iter()
                .flatten()
                .fold(OwnerCounts::default(), |sum, c| sum.plus(c)),
            moves: coordinator.moves,
        })
    });
    let removed = rows.remove();
    let report = report?;
    removed.map_err(|why| format!("cleaning up: {why}"))?;
    Ok(report)
}

/// Who holds a key now, at which epoch.
#[derive(Clone, Copy, Debug)]
struct Placement {
    owner: usize,
    epoch: u64,
}

/// A run in progress.
struct Coordinator {
    settings: Settings,
    owners: Owners,
    map: Vec<Placement>,
    /// Which move gave a key its epoch.
    move_of: HashMap<(u64, u64), MoveId>,
    moves: Vec<MoveReport>,
    started: Instant,
    ready: Vec<bool>,
    done: Vec<Option<OwnerCounts>>,
    acked: BTreeMap<u64, Vec<u64>>,
}

impl Coordinator {
    fn start(settings: &Settings) -> Result<Coordinator, String> {
        let owners = Owners::spawn(settings)?;
        let map = (0..settings.keys)
            .map(|key| Placement {
                owner: (key % settings.instances as u64) as usize,
                epoch: 1,
            })
            .collect();
        Ok(Coordinator {
            settings: settings.clone(),
            owners,
            map,
            move_of: HashMap::new(),
            moves: Vec::new(),
            started: Instant::now(),
            ready: vec![false; settings.instances],
            done: vec![None; settings.instances],
            acked: BTreeMap::new(),
        })
    }

    /// The whole run, from the owners' start to their last report.
    fn drive(&mut self) -> Result<(), String> {
        self.wait_for(
            |c| c.ready.iter().all(|&ready| ready),
            "every owner to start",
        )?;
        self.started = Instant::now();
        for key in 0..self.settings.keys {
            let Placement { owner, epoch } = self.map[key as usize];
            self.owners.send(owner, &Command::Assign { key, epoch })?;
        }
        let moves = self.settings.moves as u32;
        for id in 1..=moves {
            let due = self
                .settings
                .duration
                .mul_f64(f64::from(id) / f64::from(moves + 1));
            self.pump_until(self.started + due)?;
            self.make_move(id, due)?;
        }
        self.pump_until(self.started + self.settings.duration)?;
        for owner in 0..self.settings.instances {
            self.owners.send(owner, &Command::Stop)?;
        }
        self.wait_for(
            |c| c.done.iter().all(Option::is_some),
            "every owner's last report",
        )
    }

    /// Moves every other key of one owner to the next.
    fn make_move(&mut self, id: MoveId, due: Duration) -> Result<(), String> {
        let instances = self.settings.instances;
        let from = (id as usize - 1) % instances;
        let to = id as usize % instances;
        let held = (0..self.settings.keys).filter(|&key| self.map[key as usize].owner == from);
        let keys: Vec<u64> = held.step_by(2).collect();
        self.moves.push(MoveReport {
            id,
            due,
            at: self.started.elapsed(),
            from,
            to,
            keys: keys.clone(),
            ..MoveReport::default()
        });
        if keys.is_empty() {
            return Ok(());
        }
        if self.settings.lag.is_zero() {
            self.revoke(id, from, &keys)?;
            self.assign(id, to, &keys)
        } else {
            self.owners.send(
                from,
                &Command::Moving {
                    id,
                    keys: keys.clone(),
                },
            )?;
            self.assign(id, to, &keys)?;
            self.pump_until(Instant::now() + self.settings.lag)?;
            self.revoke(id, from, &keys)
        }
    }

    /// Gives `keys` to `to`, each at its next epoch.
    fn assign(&mut self, id: MoveId, to: usize, keys: &[u64]) -> Result<(), String> {
        for &key in keys {
            let placement = &mut self.map[key as usize];
            *placement = Placement {
                owner: to,
                epoch: placement.epoch + 1,
            };
            let epoch = placement.epoch;
            self.move_of.insert((key, epoch), id);
            self.owners.send(to, &Command::Assign { key, epoch })?;
        }
        Ok(())
    }

    /// Takes `keys` from `from` and waits for its report.
    fn revoke(&mut self, id: MoveId, from: usize, keys: &[u64]) -> Result<(), String> {
        self.owners.send(
            from,
            &Command::Revoke {
                id,
                keys: keys.to_vec(),
            },
        )?;
        let index = id as usize - 1;
        self.wait_for(|c| c.moves[index].revoked, "the old owner's revoke")
    }

    /// Handles reports until `deadline`.
    fn pump_until(&mut self, deadline: Instant) -> Result<(), String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.owners.reports.recv_timeout(left) {
                Ok((owner, said)) => self.handle(owner, said)?,
                Err(RecvTimeoutError::Timeout) => return Ok(()),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err("every owner's output closed".to_string())
                }
            }
        }
    }

    /// Handles reports until `done(self)`, for at most [`REPLY_WITHIN`].
    fn wait_for(&mut self, done: impl Fn(&Coordinator) -> bool, what: &str) -> Result<(), String> {
        let deadline = Instant::now() + REPLY_WITHIN;
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.owners.reports.recv_timeout(left) {
                Ok((owner, said)) => self.handle(owner, said)?,
                Err(_) => return Err(format!("waited {REPLY_WITHIN:?} for {what}")),
            }
        }
        Ok(())
    }

    /// One line from `owner` (`None`: its output closed).
    fn handle(&mut self, owner: usize, said: Option<Result<Report, String>>) -> Result<(), String> {
        let report = match said {
            Some(report) => report.map_err(|why| format!("owner {owner}: {why}"))?,
            None if self.done[owner].is_some() => return Ok(()),
            None => return Err(format!("owner {owner} exited before the end of the run")),
        };
        match report {
            Report::Ready => self.ready[owner] = true,
            Report::Took { key, epoch, submits, .. } => {
                if let Some(record) = self.move_record(key, epoch) {
                    record.taken += 1;
                    record.take_resubmits += u64::from(submits.saturating_sub(1));
                }
            }
            Report::Served { key, epoch, micros } => {
                if let Some(record) = self.move_record(key, epoch) {
                    record.served_us.push(micros);
                }
            }
            Report::Revoked { id, callers, counts } => {
                let record = self.moves.get_mut(id as usize - 1).ok_or("a revoke of no move")?;
                (record.callers, record.old_owner, record.revoked) = (callers, counts, true);
            }
            Report::Acked { key, ranges } => {
                let seqs = self.acked.entry(key).or_default();
                seqs.extend(ranges.into_iter().flat_map(|(start, end)| start..=end));
            }
            Report::Done { counts } => self.done[owner] = Some(counts),
            Report::Stale { key, epoch } => {
                return Err(format!("owner {owner} could not take key {key} at epoch {epoch}: the key holds a newer one"))
            }
            Report::Failed(why) => return Err(format!("owner {owner}: {why}")),
        }
        Ok(())
    }

    fn move_record(&mut self, key: u64, epoch: u64) -> Option<&mut MoveReport> {
        let id = *self.move_of.get(&(key, epoch))?;
        self.moves.get_mut(id as usize - 1)
    }
}

/// The owner processes, their stdins, and their reports on one channel.
struct Owners {
    children: Vec<Child>,
    stdins: Vec<Option<ChildStdin>>,
    reports: Receiver<Said<Report>>,
}

impl Owners {
    /// Starts `settings.instances` owners of `settings.worker_program`.
    fn spawn(settings: &Settings) -> Result<Owners, String> {
        let (send, reports) = mpsc::channel();
        let mut owners = Owners {
            children: Vec::new(),
            stdins: Vec::new(),
            reports,
        };
        for index in 0..settings.instances {
            let mut child = Process::new(&settings.worker_program)
                .args(worker_args(settings, index))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|err| {
                    format!(
                        "could not start {}: {err}",
                        settings.worker_program.display()
                    )
                })?;
            let stdout = child.stdout.take().ok_or("an owner without stdout")?;
            owners.stdins.push(child.stdin.take());
            owners.children.push(child);
            child_lines::forward(index, stdout, send.clone());
        }
        Ok(owners)
    }

    fn send(&mut self, owner: usize, command: &Command) -> Result<(), String> {
        let stdin = self.stdins[owner]
            .as_mut()
            .ok_or_else(|| format!("owner {owner} is stopped"))?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|err| format!("telling owner {owner} `{command}`: {err}"))
    }

    /// Closes every stdin (an owner then finishes) and waits for the
    /// processes, killing one that does not exit in time.
    fn stop(&mut self) {
        self.stdins.iter_mut().for_each(|stdin| drop(stdin.take()));
        let deadline = Instant::now() + EXIT_WITHIN;
        for (index, child) in self.children.iter_mut().enumerate() {
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if let Ok(None) = child.try_wait() {
                eprintln!(
                    "ferry-load: owner {index} did not exit within {EXIT_WITHIN:?}; killing it"
                );
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl Drop for Owners {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The command line of owner `index`.
fn worker_args(settings: &Settings, index: usize) -> Vec<String> {
    let mut args = vec![
        format!("--handover-worker={index}"),
        format!("--store={}", store_url(&settings.store)),
        format!("--shards={}", settings.shards),
        format!("--max-batch-size={}", settings.max_batch_size),
        format!("--max-in-flight-batches={}", settings.max_in_flight_batches),
        format!("--handover-outstanding={}", settings.outstanding_per_key),
    ];
    if settings.fence == Fence::Off {
        args.push("--no-fence".to_string());
    }
    args
}

/// The URL as given (with its password, unlike `Display`).
fn store_url(address: &StoreAddress) -> &str {
    match address {
        StoreAddress::Postgres(url) | StoreAddress::Redis(url) => url,
        StoreAddress::Sim => "sim",
        StoreAddress::Private(kind) => kind.name(),
    }
}
