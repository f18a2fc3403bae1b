//! One trip of an entity engine: the batches of several keys of a shard,
//! read and written in at most two requests.
//!
//! A trip goes in rounds; each round has four phases:
//!
//! 1. **read**, in one request, the keys the shard does not know, and
//!    those whose last write's reply was lost;
//! 2. **judge** each key: a lost write is found landed (answered with the
//!    outputs it was sent with), absent (folded and sent again) or moved
//!    by another writer (`Unknown`); a key whose last write came from a
//!    newer owner is `Fenced`; the rest are folded, from what was read or
//!    what the shard remembers;
//! 3. **send** every key that applied an input in one request, each on
//!    its own condition (the version it was folded from, the shard's
//!    epoch);
//! 4. **settle**: a key that landed is remembered and answered; one that
//!    did not (somebody else wrote it) is forgotten and goes round again,
//!    alone of the others; a request whose reply was lost leaves its keys
//!    to be looked for, after a pause, until `resolve_within` has passed.
//!
//! Invariant: a key is in one trip at a time (the engine's guarantee),
//! so while its write is lost, nothing else of this shard writes it, and
//! reading it back tells landed from absent. Every key ends in exactly one
//! answer; the trip answers when every key has one.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::reconnect::Reconnect;

use super::counts::Counts;
use super::epoch::Epoch;
use super::error::Failure;
use super::memory::{Known, Memory};
use super::options::RESOLVE_PAUSE;
use super::shape::{Change, Shape};
use super::spares::Spares;
use super::store::{Append, Connection, Row, Store, StoreError, Write};

/// How a shard connects, again after its connection breaks.
type Connect<C> = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<C, StoreError>>>>>;

/// One of a shard's connections.
type Link<C> = Reconnect<C, Connect<C>>;

/// What a trip needs besides its batches, shared by the shard's trips.
pub(crate) struct Settings {
    pub(crate) epoch: Epoch,
    pub(crate) resolve_within: Duration,
    pub(crate) write_attempts: u32,
    pub(crate) counts: Arc<Counts>,
}

/// A shard's way to its store: its connection, its memory of its keys.
pub(crate) struct Carrier<K, St: Store<K>, Sh: Shape<I>, I> {
    /// The shard's connections, each made again after it breaks; trips
    /// take them in turn.
    links: Vec<Link<St::Connection>>,
    turn: Cell<usize>,
    memory: RefCell<Memory<K, Sh::Base>>,
    /// Vectors handed on from one trip to the next (`spares.rs`).
    spares: RefCell<Spares<Sh::Out>>,
    shape: Sh,
    settings: Settings,
    /// This carrier's own in the tags of its appends (random), and the
    /// appends tagged so far.
    nonce: u64,
    tags: Cell<u64>,
}

/// One key's batch on its way through the trip.
struct Run<K, I, B, Out> {
    key: K,
    inputs: Vec<I>,
    /// What the shard knew of the key, taken from its memory for the
    /// round (see `memory.rs`).
    known: Option<Known<B>>,
    /// Writes that found the key written by somebody else.
    conflicts: u32,
    /// The write whose reply was lost, to be looked for (boxed, as most
    /// runs never lose one: the run stays small to move).
    lost: Option<Box<Sent<B, Out>>>,
    /// A lost write found absent and sent again: it may still land late
    /// (a request the store holds up after the connection gave up on it),
    /// so a conflict of the resent write is looked up as a lost one.
    suspect: Option<Box<Sent<B, Out>>>,
    answer: Option<Result<Vec<Out>, Failure>>,
}

/// A key's write as it was sent.
struct Sent<B, Out> {
    expected: u64,
    version: u64,
    epoch: u64,
    outs: Vec<Out>,
    after: B,
    /// What tells this write from another's at the same version and
    /// epoch: a log append's tag (from the start), or the encoded state it
    /// wrote (kept once its reply is lost).
    state: Option<Vec<u8>>,
}

/// A key's write of this round.
struct Sending<B, Out> {
    run: usize,
    change: Change,
    sent: Sent<B, Out>,
}

impl<K, St, Sh, I> Carrier<K, St, Sh, I>
where
    K: Hash + Eq + Clone + 'static,
    St: Store<K>,
    Sh: Shape<I>,
    I: 'static,
{
    /// Makes `connections` connections to `store` (failing the start if
    /// one cannot be made) and keeps up to `remember` keys in mind.
    pub(crate) async fn start(
        store: Arc<St>,
        shape: Sh,
        settings: Settings,
        remember: usize,
        connections: usize,
    ) -> Result<Self, StoreError> {
        let mut links = Vec::with_capacity(connections);
        for _ in 0..connections.max(1) {
            let store = Arc::clone(&store);
            let connect: Connect<St::Connection> = Box::new(move || {
                let store = Arc::clone(&store);
                Box::pin(async move { store.connect().await })
            });
            links.push(Reconnect::start(connect).await?);
        }
        Ok(Self {
            links,
            turn: Cell::new(0),
            memory: RefCell::new(Memory::new(remember)),
            spares: RefCell::new(Spares::default()),
            shape,
            settings,
            nonce: std::hash::BuildHasher::hash_one(
                &std::collections::hash_map::RandomState::new(),
                0_u8,
            ),
            tags: Cell::new(0),
        })
    }

    /// Carries `trip`: one answer per batch, in the trip's order.
    pub(crate) async fn carry(
        self: Rc<Self>,
        trip: Vec<(K, Vec<I>)>,
    ) -> Vec<Result<Vec<Sh::Out>, Failure>> {
        let mut runs: Vec<Run<K, I, Sh::Base, Sh::Out>> = trip
            .into_iter()
            .map(|(key, inputs)| Run {
                key,
                inputs,
                known: None,
                conflicts: 0,
                lost: None,
                suspect: None,
                answer: None,
            })
            .collect();
        let turn = self.turn.get();
        self.turn.set(turn.wrapping_add(1));
        let link = &self.links[turn % self.links.len()];
        let mut give_up: Option<Instant> = None;
        loop {
            let pending: Vec<usize> = (0..runs.len())
                .filter(|&at| runs[at].answer.is_none())
                .collect();
            if pending.is_empty() {
                break;
            }
            if pending.iter().any(|&at| runs[at].lost.is_some()) {
                tokio::time::sleep(RESOLVE_PAUSE).await;
            }
            self.round(link, &mut runs, &pending, &mut give_up).await;
        }
        let mut spares = self.spares.borrow_mut();
        runs.into_iter()
            .map(|run| {
                spares.keep_inputs(run.inputs);
                run.answer
                    .expect("the loop ends once every key is answered")
            })
            .collect()
    }

    /// One round at the keys `pending`, through `link`.
    async fn round(
        &self,
        link: &Link<St::Connection>,
        runs: &mut [Run<K, I, Sh::Base, Sh::Out>],
        pending: &[usize],
        give_up: &mut Option<Instant>,
    ) {
        let connection = match link.client().await {
            Ok(connection) => connection,
            Err(away) => {
                let why = StoreError::Broken(away.to_string());
                return self.fail(runs, pending, &why, *give_up);
            }
        };
        let read = self.read(link, &connection, runs, pending, *give_up).await;
        let sending = self.judge(runs, pending, read);
        if sending.is_empty() {
            return;
        }
        let sent = self.send(&connection, runs, &sending).await;
        if sent.as_ref().is_err_and(StoreError::breaks_connection) {
            link.broken(&connection);
        }
        self.settle(runs, sending, sent, give_up);
    }

    /// Phase 1: the rows of the keys to read, by run; a failed read has
    /// answered (or left to look for again) the keys it was for.
    async fn read(
        &self,
        link: &Link<St::Connection>,
        connection: &Rc<St::Connection>,
        runs: &mut [Run<K, I, Sh::Base, Sh::Out>],
        pending: &[usize],
        give_up: Option<Instant>,
    ) -> Vec<(usize, Row)> {
        let wanted: Vec<usize> = {
            let mut memory = self.memory.borrow_mut();
            pending
                .iter()
                .copied()
                .filter(|&at| {
                    let run = &mut runs[at];
                    run.known = memory.take(&run.key);
                    run.lost.is_some() || run.known.is_none()
                })
                .collect()
        };
        if wanted.is_empty() {
            return Vec::new();
        }
        let keys: Vec<&K> = wanted.iter().map(|&at| &runs[at].key).collect();
        Counts::add(&self.settings.counts.reads, 1);
        let read = connection.read(&keys).await;
        drop(keys);
        match read {
            Ok(rows) if rows.len() == wanted.len() => wanted.into_iter().zip(rows).collect(),
            Ok(rows) => {
                let why = StoreError::Refused(format!(
                    "the store read {} rows for {} keys",
                    rows.len(),
                    wanted.len()
                ));
                self.fail(runs, &wanted, &why, give_up);
                Vec::new()
            }
            Err(err) => {
                if err.breaks_connection() {
                    link.broken(connection);
                }
                self.fail(runs, &wanted, &err, give_up);
                Vec::new()
            }
        }
    }

    /// Phase 2: each pending key judged and folded; what to send.
    fn judge(
        &self,
        runs: &mut [Run<K, I, Sh::Base, Sh::Out>],
        pending: &[usize],
        read: Vec<(usize, Row)>,
    ) -> Vec<Sending<Sh::Base, Sh::Out>> {
        let epoch = self.settings.epoch.get();
        let mut rows = read.into_iter().peekable();
        let mut sending = Vec::new();
        for &at in pending {
            let run = &mut runs[at];
            if run.answer.is_some() {
                continue; // its read failed
            }
            let row = match rows.peek() {
                Some((read_at, _)) if *read_at == at => rows.next().map(|(_, row)| row),
                _ => None,
            };
            // Taken from the memory by the read phase, or read there.
            let known = match row {
                Some(row) => {
                    run.known = None;
                    self.known_from(run, row, epoch)
                }
                None => run.known.take(),
            };
            let Some(known) = known else {
                continue; // answered, or read next round
            };
            let applied = self
                .shape
                .apply(&known, &run.inputs, &mut self.spares.borrow_mut());
            let version = known.version;
            match applied {
                Err(why) => {
                    self.keep(run, known);
                    self.answer_unsent(run, Err(Failure::NotApplied(why.into())))
                }
                Ok(applied) if applied.count == 0 => {
                    self.keep(run, known);
                    self.answer_unsent(run, Ok(applied.outs))
                }
                Ok(applied) => {
                    // A log's append carries a tag of its own, kept as the
                    // head's state, by which it is told from another.
                    let tag = matches!(applied.change, Change::Events(_)).then(|| self.tag());
                    sending.push(Sending {
                        run: at,
                        change: applied.change,
                        sent: Sent {
                            expected: version,
                            version: version + applied.count,
                            epoch,
                            outs: applied.outs,
                            after: applied.after,
                            state: tag,
                        },
                    })
                }
            }
        }
        sending
    }

    /// What a row read says of `run`'s key: what is known of it to fold
    /// from, or `None` once the run is answered (a lost write found
    /// landed or moved, a newer owner, a state that does not decode).
    fn known_from(
        &self,
        run: &mut Run<K, I, Sh::Base, Sh::Out>,
        row: Row,
        epoch: u64,
    ) -> Option<Known<Sh::Base>> {
        let counts = &self.settings.counts;
        if let Some(sent) = run.lost.take() {
            let same_state = sent.state.is_none() || row.state == sent.state;
            if row.version == sent.version && row.epoch == sent.epoch && same_state {
                Counts::add(&counts.found_landed, 1);
                self.land(run, *sent);
                return None;
            }
            if row.version != sent.expected {
                Counts::add(&counts.unknown, 1);
                run.answer = Some(Err(Failure::Unknown(
                    format!(
                        "the write's reply was lost, and meanwhile another writer moved the key \
                         from version {} to {}",
                        sent.expected, row.version
                    )
                    .into(),
                )));
                return None;
            }
            Counts::add(&counts.found_absent, 1);
            run.suspect = Some(sent);
        }
        if row.epoch > epoch {
            Counts::add(&counts.fenced, 1);
            run.answer = Some(Err(Failure::Fenced {
                held: row.epoch,
                mine: epoch,
            }));
            return None;
        }
        match self.shape.base(&row) {
            Ok(base) => Some(Known {
                version: row.version,
                epoch: row.epoch,
                base,
            }),
            Err(why) => {
                let why = format!("the key's state as stored does not decode: {why}");
                self.answer_unsent(run, Err(Failure::NotApplied(why.into())));
                None
            }
        }
    }

    /// Phase 3: every write of the round in one request.
    async fn send(
        &self,
        connection: &St::Connection,
        runs: &[Run<K, I, Sh::Base, Sh::Out>],
        sending: &[Sending<Sh::Base, Sh::Out>],
    ) -> Result<Vec<bool>, StoreError> {
        Counts::add(&self.settings.counts.writes, 1);
        let landed = match &sending[0].change {
            Change::Events(_) => {
                let appends: Vec<Append<'_, K>> = sending
                    .iter()
                    .map(|s| Append {
                        key: &runs[s.run].key,
                        expected: s.sent.expected,
                        epoch: s.sent.epoch,
                        events: match &s.change {
                            Change::Events(events) => events,
                            _ => &[],
                        },
                        tag: s.sent.state.as_deref().unwrap_or(&[]),
                    })
                    .collect();
                connection.append(&appends).await?
            }
            _ => {
                let writes: Vec<Write<'_, K>> = sending
                    .iter()
                    .map(|s| Write {
                        key: &runs[s.run].key,
                        expected: s.sent.expected,
                        version: s.sent.version,
                        epoch: s.sent.epoch,
                        state: match &s.change {
                            Change::State(state) => state,
                            _ => &[],
                        },
                    })
                    .collect();
                connection.write(&writes).await?
            }
        };
        if landed.len() != sending.len() {
            // Which landed cannot be told: every key is looked for again.
            return Err(StoreError::Lost(format!(
                "the store answered {} outcomes for {} writes",
                landed.len(),
                sending.len()
            )));
        }
        Ok(landed)
    }

    /// Phase 4: each write's outcome.
    fn settle(
        &self,
        runs: &mut [Run<K, I, Sh::Base, Sh::Out>],
        sending: Vec<Sending<Sh::Base, Sh::Out>>,
        sent: Result<Vec<bool>, StoreError>,
        give_up: &mut Option<Instant>,
    ) {
        let counts = &self.settings.counts;
        match sent {
            Ok(landed) => {
                for (sending, landed) in sending.into_iter().zip(landed) {
                    self.keep_change(sending.change);
                    let run = &mut runs[sending.run];
                    if landed {
                        self.land(run, sending.sent);
                    } else if let Some(earlier) = run.suspect.take() {
                        // The same write, sent before, may have landed
                        // since: look for it before folding again.
                        self.look_again(run, earlier, *give_up);
                    } else {
                        Counts::add(&counts.conflicts, 1);
                        self.conflicted(run);
                    }
                }
            }
            Err(err) if err.may_have_applied() && !self.settings.resolve_within.is_zero() => {
                Counts::add(&counts.lost, sending.len() as u64);
                give_up.get_or_insert_with(|| Instant::now() + self.settings.resolve_within);
                for sending in sending {
                    let run = &mut runs[sending.run];
                    let mut sent = sending.sent;
                    if let Change::State(state) = sending.change {
                        sent.state = Some(state);
                    }
                    run.suspect = None;
                    self.look_again(run, Box::new(sent), *give_up);
                }
            }
            Err(err) => {
                let failure = answer_for(&err);
                for sending in sending {
                    self.keep_change(sending.change);
                    let run = &mut runs[sending.run];
                    if let Some(earlier) = run.suspect.take() {
                        // This one was not applied, but an earlier copy,
                        // lost, may still land: look for it.
                        self.look_again(run, earlier, *give_up);
                        continue;
                    }
                    if matches!(failure, Failure::Unknown(_)) {
                        Counts::add(&counts.unknown, 1);
                    }
                    run.answer = Some(Err(failure.clone()));
                }
            }
        }
    }

    /// `run`'s write `sent` may have landed: its key is read back next
    /// round, unless `give_up` has passed (then it is answered `Unknown`).
    fn look_again(
        &self,
        run: &mut Run<K, I, Sh::Base, Sh::Out>,
        sent: Box<Sent<Sh::Base, Sh::Out>>,
        give_up: Option<Instant>,
    ) {
        if give_up.is_some_and(|give_up| Instant::now() >= give_up) {
            Counts::add(&self.settings.counts.unknown, 1);
            run.answer = Some(Err(Failure::Unknown(
                format!(
                    "the write's outcome was lost and not told within {:?}",
                    self.settings.resolve_within
                )
                .into(),
            )));
            return;
        }
        run.lost = Some(sent);
    }

    /// Answers `run` without a write of this round, or, if an earlier
    /// copy of its write is still out (lost, then found absent), `Unknown`:
    /// that copy may land yet.
    fn answer_unsent(
        &self,
        run: &mut Run<K, I, Sh::Base, Sh::Out>,
        answer: Result<Vec<Sh::Out>, Failure>,
    ) {
        run.answer = Some(match run.suspect.take() {
            None => answer,
            Some(_) => {
                Counts::add(&self.settings.counts.unknown, 1);
                Err(Failure::Unknown(
                    "an earlier copy of the write, lost, may still land".into(),
                ))
            }
        });
    }

    /// A tag no other append of this process carries.
    fn tag(&self) -> Vec<u8> {
        let count = self.tags.get();
        self.tags.set(count + 1);
        let mut tag = self.nonce.to_le_bytes().to_vec();
        tag.extend_from_slice(&count.to_le_bytes());
        tag
    }

    /// A change sent and settled: its state's buffer serves a later write.
    fn keep_change(&self, change: Change) {
        if let Change::State(state) = change {
            self.spares.borrow_mut().keep_state(state);
        }
    }

    /// `run`'s key stays as `known`, as no write of this round moved it.
    fn keep(&self, run: &Run<K, I, Sh::Base, Sh::Out>, known: Known<Sh::Base>) {
        self.memory.borrow_mut().put(&run.key, known);
    }

    /// `run`'s write landed as `sent`: remembered and answered.
    fn land(&self, run: &mut Run<K, I, Sh::Base, Sh::Out>, sent: Sent<Sh::Base, Sh::Out>) {
        run.suspect = None;
        let known = Known {
            version: sent.version,
            epoch: sent.epoch,
            base: sent.after,
        };
        self.memory.borrow_mut().put(&run.key, known);
        run.answer = Some(Ok(sent.outs));
    }

    /// `run`'s write found the key written by somebody else: it is read
    /// again next round, unless it has tried often enough.
    fn conflicted(&self, run: &mut Run<K, I, Sh::Base, Sh::Out>) {
        run.conflicts += 1;
        if run.conflicts >= self.settings.write_attempts {
            run.answer = Some(Err(Failure::NotApplied(
                format!(
                    "the key's write found it written by somebody else {} times in a row",
                    run.conflicts
                )
                .into(),
            )));
        }
    }

    /// A request at the keys `at` failed with `err`: a key with a lost
    /// write is looked for again until `give_up`; the others were not
    /// applied.
    fn fail(
        &self,
        runs: &mut [Run<K, I, Sh::Base, Sh::Out>],
        at: &[usize],
        err: &StoreError,
        give_up: Option<Instant>,
    ) {
        let now = Instant::now();
        for &at in at {
            let run = &mut runs[at];
            if run.lost.is_none() {
                // An earlier copy of its write, lost, may still land.
                run.lost = run.suspect.take();
            }
            if run.lost.is_none() {
                run.answer = Some(Err(Failure::NotApplied(err.to_string().into())));
            } else if give_up.is_none_or(|give_up| now >= give_up) {
                Counts::add(&self.settings.counts.unknown, 1);
                run.lost = None;
                run.answer = Some(Err(Failure::Unknown(
                    format!(
                        "the write's reply was lost and its key could not be read back within {:?}: {err}",
                        self.settings.resolve_within
                    )
                    .into(),
                )));
            }
        }
    }
}

/// What a failed write request answers its keys when it is not looked for.
fn answer_for(err: &StoreError) -> Failure {
    if err.may_have_applied() {
        Failure::Unknown(err.to_string().into())
    } else {
        Failure::NotApplied(err.to_string().into())
    }
}
