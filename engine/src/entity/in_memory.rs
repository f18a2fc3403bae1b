//! A store in this process's memory: for tests and examples, with the
//! faults a real store has, on demand.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use super::store::{Append, Connection, Row, Store, StoreError, Write};

/// A fault a [`MemoryStore`] gives a request, on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The request fails before it is applied (`StoreError::Broken`).
    Break,
    /// A write or append is applied and its reply lost (`StoreError::Lost`);
    /// a read fails as `Break` does.
    LoseReply,
    /// The request is refused (`StoreError::Refused`), nothing applied.
    Refuse,
    /// A write or append is lost on its way: not applied, and its reply
    /// lost too (`StoreError::Lost`); a read fails as `Break` does.
    LoseRequest,
    /// A write or append is held up on its way (`StoreError::Lost` at
    /// once) and lands, if its condition still holds, just before the
    /// next write request; a read fails as `Break` does.
    LandLate,
}

/// Which kind of request a fault is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// A connection being made.
    Connect,
    /// A read.
    Read,
    /// A write or an append.
    Write,
}

type Chaos = Box<dyn FnMut(Request) -> Option<Fault> + Send>;

/// Entities in memory, shared by every clone: the rows, each key's log,
/// and what requests came. Writes obey the same condition as a real
/// store's (see [`Store`]).
///
/// ```
/// use ferry::entity::{Connection, Fault, MemoryStore, Request, Store, StoreError, Write};
///
/// # futures::executor::block_on(async {
/// let store = MemoryStore::<u32>::new();
/// let connection = store.connect().await.unwrap();
/// // The next write lands, but its reply is lost.
/// store.faults(|request| (request == Request::Write).then_some(Fault::LoseReply));
/// let write = Write { key: &1, expected: 0, version: 1, epoch: 0, state: b"5" };
/// assert!(matches!(connection.write(&[write]).await, Err(StoreError::Lost(_))));
/// assert_eq!(store.row(&1).unwrap().version, 1);
/// # });
/// ```
pub struct MemoryStore<K> {
    inner: Arc<Inner<K>>,
}

struct Inner<K> {
    held: Mutex<Held<K>>,
    chaos: Mutex<Option<Chaos>>,
}

struct Held<K> {
    rows: HashMap<K, Row>,
    logs: HashMap<K, Vec<Vec<u8>>>,
    /// Writes held up on their way ([`Fault::LandLate`]).
    late: Vec<Change<K>>,
    requests: Requests,
}

/// How many requests of each kind a [`MemoryStore`] was sent.
///
/// ```
/// let store = ferry::entity::MemoryStore::<u8>::new();
/// assert_eq!(store.requests().reads, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    /// Connections made.
    pub connects: u64,
    /// Reads.
    pub reads: u64,
    /// Writes and appends.
    pub writes: u64,
}

impl<K> Clone for MemoryStore<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> std::fmt::Debug for MemoryStore<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl<K: Hash + Eq> Default for MemoryStore<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq> MemoryStore<K> {
    /// An empty store.
    ///
    /// ```
    /// assert!(ferry::entity::MemoryStore::<String>::new().row(&"a".to_string()).is_none());
    /// ```
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                held: Mutex::new(Held {
                    rows: HashMap::new(),
                    logs: HashMap::new(),
                    late: Vec::new(),
                    requests: Requests::default(),
                }),
                chaos: Mutex::new(None),
            }),
        }
    }

    /// The row of `key`, if it was ever written.
    ///
    /// ```
    /// assert_eq!(ferry::entity::MemoryStore::<u8>::new().row(&1), None);
    /// ```
    pub fn row(&self, key: &K) -> Option<Row> {
        lock(&self.inner.held).rows.get(key).cloned()
    }

    /// The events appended to `key`'s log, in order.
    ///
    /// ```
    /// assert!(ferry::entity::MemoryStore::<u8>::new().log(&1).is_empty());
    /// ```
    pub fn log(&self, key: &K) -> Vec<Vec<u8>> {
        lock(&self.inner.held)
            .logs
            .get(key)
            .cloned()
            .unwrap_or_default()
    }

    /// Every key written, with its row.
    ///
    /// ```
    /// assert!(ferry::entity::MemoryStore::<u8>::new().rows().is_empty());
    /// ```
    pub fn rows(&self) -> Vec<(K, Row)>
    where
        K: Clone,
    {
        let held = lock(&self.inner.held);
        held.rows
            .iter()
            .map(|(key, row)| (key.clone(), row.clone()))
            .collect()
    }

    /// Requests sent so far.
    ///
    /// ```
    /// assert_eq!(ferry::entity::MemoryStore::<u8>::new().requests().writes, 0);
    /// ```
    pub fn requests(&self) -> Requests {
        lock(&self.inner.held).requests
    }

    /// Another writer changes `key` as `change` says, outside any engine
    /// (its version moves on, so an engine's next write of it conflicts).
    ///
    /// ```
    /// let store = ferry::entity::MemoryStore::<u8>::new();
    /// store.write_outside(3, |row| row.version += 1);
    /// assert_eq!(store.row(&3).unwrap().version, 1);
    /// ```
    pub fn write_outside(&self, key: K, change: impl FnOnce(&mut Row)) {
        change(lock(&self.inner.held).rows.entry(key).or_default());
    }

    /// From now on, each request (and each connection made) asks `chaos`
    /// for a fault to give it, `None` for none.
    ///
    /// ```
    /// use ferry::entity::{Fault, MemoryStore, Request};
    /// let store = MemoryStore::<u8>::new();
    /// store.faults(|request| (request == Request::Connect).then_some(Fault::Break));
    /// store.no_faults();
    /// ```
    pub fn faults(&self, chaos: impl FnMut(Request) -> Option<Fault> + Send + 'static) {
        *lock(&self.inner.chaos) = Some(Box::new(chaos));
    }

    /// No more faults.
    ///
    /// ```
    /// ferry::entity::MemoryStore::<u8>::new().no_faults();
    /// ```
    pub fn no_faults(&self) {
        *lock(&self.inner.chaos) = None;
    }

    fn fault(&self, request: Request) -> Option<Fault> {
        lock(&self.inner.chaos)
            .as_mut()
            .and_then(|chaos| chaos(request))
    }
}

/// Whether a write of `key` on these terms lands on `row` (see [`Store`]).
fn lands(row: Option<&Row>, expected: u64, epoch: u64) -> bool {
    match row {
        None => expected == 0,
        Some(row) => row.version == expected && row.epoch <= epoch,
    }
}

impl<K: Hash + Eq + Clone + Send + 'static> Store<K> for MemoryStore<K> {
    type Connection = MemoryStore<K>;

    fn connect(&self) -> impl Future<Output = Result<MemoryStore<K>, StoreError>> {
        lock(&self.inner.held).requests.connects += 1;
        let connected = match self.fault(Request::Connect) {
            Some(_) => Err(StoreError::Broken(
                "the memory store refused to connect".to_string(),
            )),
            None => Ok(self.clone()),
        };
        std::future::ready(connected)
    }
}

impl<K: Hash + Eq + Clone + Send + 'static> Connection<K> for MemoryStore<K> {
    fn read(&self, keys: &[&K]) -> impl Future<Output = Result<Vec<Row>, StoreError>> {
        let read = match self.fault(Request::Read) {
            Some(Fault::Refuse) => Err(StoreError::Refused("a refused read".to_string())),
            Some(_) => Err(StoreError::Broken("a broken read".to_string())),
            None => {
                let mut held = lock(&self.inner.held);
                held.requests.reads += 1;
                Ok(keys
                    .iter()
                    .map(|key| held.rows.get(*key).cloned().unwrap_or_default())
                    .collect())
            }
        };
        std::future::ready(read)
    }

    fn write(
        &self,
        writes: &[Write<'_, K>],
    ) -> impl Future<Output = Result<Vec<bool>, StoreError>> {
        let changes = writes
            .iter()
            .map(|write| Change {
                key: write.key.clone(),
                expected: write.expected,
                epoch: write.epoch,
                version: write.version,
                state: Some(write.state.to_vec()),
                events: Vec::new(),
            })
            .collect();
        std::future::ready(self.change(changes))
    }

    fn append(
        &self,
        appends: &[Append<'_, K>],
    ) -> impl Future<Output = Result<Vec<bool>, StoreError>> {
        let changes = appends
            .iter()
            .map(|append| Change {
                key: append.key.clone(),
                expected: append.expected,
                epoch: append.epoch,
                version: append.expected + append.events.len() as u64,
                state: Some(append.tag.to_vec()),
                events: append.events.to_vec(),
            })
            .collect();
        std::future::ready(self.change(changes))
    }
}

/// One key's write or append, as the store applies it.
struct Change<K> {
    key: K,
    expected: u64,
    epoch: u64,
    version: u64,
    state: Option<Vec<u8>>,
    events: Vec<Vec<u8>>,
}

impl<K: Hash + Eq> Held<K> {
    /// Applies `change` if its condition holds; whether it did.
    fn apply(&mut self, change: Change<K>) -> bool
    where
        K: Clone,
    {
        if !lands(self.rows.get(&change.key), change.expected, change.epoch) {
            return false;
        }
        let row = Row {
            version: change.version,
            epoch: change.epoch,
            state: change.state,
        };
        self.rows.insert(change.key.clone(), row);
        if !change.events.is_empty() {
            self.logs
                .entry(change.key)
                .or_default()
                .extend(change.events);
        }
        true
    }
}

impl<K: Hash + Eq + Clone> MemoryStore<K> {
    /// A write request of `changes`, with its fault if one is due; a
    /// request held back earlier lands first.
    fn change(&self, changes: Vec<Change<K>>) -> Result<Vec<bool>, StoreError> {
        let fault = self.fault(Request::Write);
        let mut held = lock(&self.inner.held);
        held.requests.writes += 1;
        for late in std::mem::take(&mut held.late) {
            held.apply(late);
        }
        match fault {
            Some(Fault::Break) => Err(StoreError::Broken("a broken write".to_string())),
            Some(Fault::Refuse) => Err(StoreError::Refused("a refused write".to_string())),
            Some(Fault::LoseRequest) => {
                Err(StoreError::Lost("a write lost on its way".to_string()))
            }
            Some(Fault::LandLate) => {
                held.late.extend(changes);
                Err(StoreError::Lost("a write held back on its way".to_string()))
            }
            Some(Fault::LoseReply) => {
                for change in changes {
                    held.apply(change);
                }
                Err(StoreError::Lost("a write's reply lost".to_string()))
            }
            None => Ok(changes
                .into_iter()
                .map(|change| held.apply(change))
                .collect()),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}
