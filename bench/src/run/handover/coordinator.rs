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
use std::time::{Duration, Instant};

use crate::base::children::{Children, Heard};
use crate::report::handover::{HandoverReport, MoveId, MoveReport, OwnerCounts};

use super::protocol::{Command, Report};
use super::rows::RowStore;
use super::settings::{worker_args, Settings};
use super::verdict;

/// How long an owner may take to start, to finish a revoke, or to stop.
const REPLY_WITHIN: Duration = Duration::from_secs(30);

/// How long the owners may take to exit once their stdin is closed.
const EXIT_WITHIN: Duration = Duration::from_secs(10);

/// Runs the handover: what a previous run left removed, owners started,
/// keys assigned and moved, the keys read back and checked, the owners
/// stopped and the keys removed.
pub fn run(settings: &Settings) -> Result<HandoverReport, String> {
    let rows = RowStore::open(&settings.store, settings.keys)?;
    let ran = Coordinator::start(settings).and_then(|mut coordinator| {
        let driven = coordinator.drive();
        coordinator.stop_owners();
        driven.map(|()| coordinator)
    });
    let report = ran.and_then(|coordinator| coordinator.judge(&rows));
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
    owners: Children<Report>,
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
    /// Starts the owners; every key on its first owner at epoch 1.
    fn start(settings: &Settings) -> Result<Coordinator, String> {
        let mut owners = Children::new("owner");
        for index in 0..settings.instances {
            owners.spawn(&settings.worker_program, worker_args(settings, index))?;
        }
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
        self.assign_all()?;
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
            self.owners.tell(owner, &Command::Stop)?;
        }
        self.wait_for(
            |c| c.done.iter().all(Option::is_some),
            "every owner's last report",
        )
    }

    /// Every key to its first owner.
    fn assign_all(&mut self) -> Result<(), String> {
        for key in 0..self.settings.keys {
            let Placement { owner, epoch } = self.map[key as usize];
            self.owners.tell(owner, &Command::Assign { key, epoch })?;
        }
        Ok(())
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
            return self.assign(id, to, &keys);
        }
        let moving = Command::Moving {
            id,
            keys: keys.clone(),
        };
        self.owners.tell(from, &moving)?;
        self.assign(id, to, &keys)?;
        self.pump_until(Instant::now() + self.settings.lag)?;
        self.revoke(id, from, &keys)
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
            self.owners.tell(to, &Command::Assign { key, epoch })?;
        }
        Ok(())
    }

    /// Takes `keys` from `from` and waits for its report.
    fn revoke(&mut self, id: MoveId, from: usize, keys: &[u64]) -> Result<(), String> {
        let revoke = Command::Revoke {
            id,
            keys: keys.to_vec(),
        };
        self.owners.tell(from, &revoke)?;
        let index = id as usize - 1;
        self.wait_for(|c| c.moves[index].revoked, "the old owner's revoke")
    }

    /// Handles reports until `deadline`.
    fn pump_until(&mut self, deadline: Instant) -> Result<(), String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.owners.hear(left) {
                Some(heard) => self.handle(heard)?,
                None => return Ok(()),
            }
        }
    }

    /// Handles reports until `done(self)`, for at most [`REPLY_WITHIN`].
    fn wait_for(&mut self, done: impl Fn(&Coordinator) -> bool, what: &str) -> Result<(), String> {
        let deadline = Instant::now() + REPLY_WITHIN;
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.owners.hear(left) {
                Some(heard) => self.handle(heard)?,
                None => return Err(format!("waited {REPLY_WITHIN:?} for {what}")),
            }
        }
        Ok(())
    }

    /// One thing heard from an owner.
    fn handle(&mut self, heard: Heard<Report>) -> Result<(), String> {
        match heard {
            Heard::Said(owner, report) => self.handle_report(owner, report),
            Heard::Unreadable(owner, why) => Err(format!("owner {owner}: {why}")),
            Heard::Closed(owner) if self.done[owner].is_some() => Ok(()),
            Heard::Closed(owner) => Err(format!("owner {owner} exited before the end of the run")),
        }
    }

    /// One report of `owner`.
    fn handle_report(&mut self, owner: usize, report: Report) -> Result<(), String> {
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

    /// Closes every owner's stdin (an owner then finishes) and waits for
    /// them, killing one that does not exit in time.
    fn stop_owners(&mut self) {
        for owner in 0..self.owners.len() {
            self.owners.close_stdin(owner);
        }
        self.owners.reap(EXIT_WITHIN);
    }

    /// The keys read back and checked against what the owners
    /// acknowledged.
    fn judge(self, rows: &RowStore) -> Result<HandoverReport, String> {
        let stored = rows.read_back()?;
        let verdict = verdict::check(&stored, &self.acked);
        let counts = self.done.iter().flatten();
        Ok(HandoverReport {
            fence: self.settings.fence,
            lag: self.settings.lag,
            failures: verdict::failures(&verdict, self.settings.fence),
            verdict,
            counts: counts.fold(OwnerCounts::default(), |sum, c| sum.plus(c)),
            moves: self.moves,
        })
    }
}
