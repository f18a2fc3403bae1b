//! The settings of an entity engine beside the builder's: how its state is
//! encoded, its owner epoch, how it resolves a lost write, how many keys a
//! shard remembers.

use std::time::Duration;

use super::codec::Json;
use super::epoch::Epoch;

/// How long a shard keeps looking for a write whose reply was lost, by
/// default, before it answers [`EntityError::Unknown`](super::EntityError::Unknown).
///
/// ```
/// assert_eq!(ferry::entity::DEFAULT_RESOLVE_WITHIN, std::time::Duration::from_secs(30));
/// ```
pub const DEFAULT_RESOLVE_WITHIN: Duration = Duration::from_secs(30);

/// How many times, by default, a key's write may find that somebody else
/// wrote the key before its batch is answered
/// [`EntityError::NotApplied`](super::EntityError::NotApplied).
///
/// ```
/// assert_eq!(ferry::entity::DEFAULT_WRITE_ATTEMPTS, 16);
/// ```
pub const DEFAULT_WRITE_ATTEMPTS: u32 = 16;

/// How many keys a shard remembers by default (version, epoch and state
/// of each), so that their trips need no read.
///
/// ```
/// assert_eq!(ferry::entity::DEFAULT_REMEMBER, 1 << 20);
/// ```
pub const DEFAULT_REMEMBER: usize = 1 << 20;

/// Trips in flight per shard for each of its connections, unless the
/// builder's `max_in_flight_batches` says otherwise (the engine's own
/// default, 64, is for batch functions that wait on nothing but
/// themselves). A connection serves its trips one after another: a trip
/// out and one or more forming behind it keep it busy, while more only
/// wait there, each with fewer keys than the trips behind it would have
/// gathered. 100,000 keys uniform on a private PostgreSQL, one connection
/// a shard: about 100,000 inputs/s at 1 to 8 trips in flight, 37,000 at
/// 64, whose trips carried 15 batches each instead of 170.
///
/// ```
/// assert_eq!(ferry::entity::DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION, 4);
/// ```
pub const DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION: usize = 4;

/// The pause between two looks for a lost write.
pub(crate) const RESOLVE_PAUSE: Duration = Duration::from_millis(20);

/// The entity settings that are not the engine's: see each method.
/// `C` encodes the state (or a log's events); [`Json`] by default.
///
/// ```
/// use std::time::Duration;
/// use ferry::entity::{Epoch, Options};
///
/// let epoch = Epoch::new(7);
/// let options = Options::default()
///     .epoch(epoch.clone())
///     .resolve_within(Duration::from_secs(5))
///     .write_attempts(4)
///     .remember(10_000);
/// assert_eq!(options.epoch_now(), 7);
/// ```
#[derive(Clone, Debug)]
pub struct Options<C = Json> {
    pub(crate) codec: C,
    pub(crate) epoch: Epoch,
    pub(crate) resolve_within: Duration,
    pub(crate) write_attempts: u32,
    pub(crate) remember: usize,
    pub(crate) connections: usize,
}

impl Default for Options<Json> {
    fn default() -> Self {
        Self {
            codec: Json,
            epoch: Epoch::default(),
            resolve_within: DEFAULT_RESOLVE_WITHIN,
            write_attempts: DEFAULT_WRITE_ATTEMPTS,
            remember: DEFAULT_REMEMBER,
            connections: 1,
        }
    }
}

impl<C> Options<C> {
    /// Encodes the state (or the events) with `codec` instead.
    ///
    /// ```
    /// use ferry::entity::{Codec, Options};
    ///
    /// #[derive(Clone)]
    /// struct Decimal;
    /// impl Codec<i64> for Decimal {
    ///     fn encode(&self, n: &i64) -> Result<Vec<u8>, String> { Ok(n.to_string().into_bytes()) }
    ///     fn decode(&self, bytes: &[u8]) -> Result<i64, String> {
    ///         std::str::from_utf8(bytes).ok().and_then(|s| s.parse().ok()).ok_or("not a number".into())
    ///     }
    /// }
    /// let _options: Options<Decimal> = Options::default().codec(Decimal);
    /// ```
    pub fn codec<D>(self, codec: D) -> Options<D> {
        Options {
            codec,
            epoch: self.epoch,
            resolve_within: self.resolve_within,
            write_attempts: self.write_attempts,
            remember: self.remember,
            connections: self.connections,
        }
    }

    /// The owner epoch every write carries (0 by default); keep the
    /// [`Epoch`] to move it when ownership changes.
    ///
    /// ```
    /// use ferry::entity::{Epoch, Options};
    /// assert_eq!(Options::default().epoch(Epoch::new(2)).epoch_now(), 2);
    /// ```
    pub fn epoch(mut self, epoch: Epoch) -> Self {
        self.epoch = epoch;
        self
    }

    /// The epoch writes carry now.
    ///
    /// ```
    /// assert_eq!(ferry::entity::Options::default().epoch_now(), 0);
    /// ```
    pub fn epoch_now(&self) -> u64 {
        self.epoch.get()
    }

    /// How long a write whose reply was lost is looked for (its key kept
    /// busy meanwhile, other keys going on) before it is answered
    /// `Unknown`; zero answers it `Unknown` at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// let _ = ferry::entity::Options::default().resolve_within(Duration::ZERO);
    /// ```
    pub fn resolve_within(mut self, within: Duration) -> Self {
        self.resolve_within = within;
        self
    }

    /// How many writes of a key's batch may find the key written by
    /// somebody else (each then reads it again and folds anew) before the
    /// batch is answered `NotApplied`; at least 1.
    ///
    /// ```
    /// let _ = ferry::entity::Options::default().write_attempts(3);
    /// ```
    pub fn write_attempts(mut self, attempts: u32) -> Self {
        self.write_attempts = attempts.max(1);
        self
    }

    /// How many connections each shard makes (default 1, at least 1); its
    /// trips take them in turn. A store that commits each request on its
    /// own (PostgreSQL: a commit waits for its flush to disk) serves the
    /// trips of a shard one after another on one connection; on several,
    /// their commits share a flush. A key is in one trip at a time
    /// whatever the count. Unless the builder sets
    /// `max_in_flight_batches`, a shard has
    /// [`DEFAULT_TRIPS_IN_FLIGHT_PER_CONNECTION`] trips in flight for each
    /// connection.
    ///
    /// ```
    /// let _ = ferry::entity::Options::default().connections(4);
    /// ```
    pub fn connections(mut self, connections: usize) -> Self {
        self.connections = connections.max(1);
        self
    }

    /// How many keys each shard remembers; a key it does not remember is
    /// read before it is written (0: every trip reads).
    ///
    /// ```
    /// let _ = ferry::entity::Options::default().remember(0);
    /// ```
    pub fn remember(mut self, keys: usize) -> Self {
        self.remember = keys;
        self
    }
}
