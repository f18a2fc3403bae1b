//! [`Reconnect`]: a shard's own client to its store that comes back after
//! its connection breaks, without restarting the engine.
//!
//! A shard makes its client in the factory, on its own thread, and every
//! batch (or trip) of the shard goes through it. When the store restarts
//! or drops the connection, that client is dead for good; `Reconnect`
//! holds it, and the batch function asks it for the client each time:
//!
//! - while the link is up, [`client`](Reconnect::client) hands out the
//!   client at once;
//! - a batch that finds the client broken says so
//!   ([`broken`](Reconnect::broken)); the next batch to ask connects again;
//! - while a connection is being made, or after an attempt failed and
//!   before its backoff has passed, `client` fails at once with
//!   [`Unreachable`]: that batch's callers are answered with the error
//!   straight away (never sent, so nothing of it reached the store), and
//!   the shard's other batches go on. Nothing waits for the store to come
//!   back: inputs keep being answered, with errors, until it does, and a
//!   shard with `max_queue_time` expires what waits too long.
//!
//! The backoff doubles from [`DEFAULT_RECONNECT_FIRST`] after each failed
//! attempt, up to [`DEFAULT_RECONNECT_MAX`], and starts again from the
//! first after a success. It needs no timer: an attempt is made by the
//! first batch that asks once the backoff has passed. `connect` itself
//! should bound how long it may take (a connect timeout): an attempt that
//! hangs holds only the batch that made it, but no other attempt is made
//! meanwhile.
//!
//! It lives on one shard's thread (`Rc`, `RefCell`: no lock), next to the
//! batch function that uses it.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// The first wait after a failed attempt to connect, by default.
///
/// ```
/// assert_eq!(ferry::DEFAULT_RECONNECT_FIRST, std::time::Duration::from_millis(50));
/// ```
pub const DEFAULT_RECONNECT_FIRST: Duration = Duration::from_millis(50);

/// The longest wait between attempts to connect, by default.
///
/// ```
/// assert_eq!(ferry::DEFAULT_RECONNECT_MAX, std::time::Duration::from_secs(2));
/// ```
pub const DEFAULT_RECONNECT_MAX: Duration = Duration::from_secs(2);

/// A shard's client that comes back after it breaks. See the module docs.
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use ferry::Reconnect;
///
/// # futures::executor::block_on(async {
/// let attempts = Rc::new(Cell::new(0));
/// let counted = Rc::clone(&attempts);
/// let store = Reconnect::new(move || {
///     counted.set(counted.get() + 1);
///     let attempt = counted.get();
///     async move { Ok::<_, String>(format!("connection {attempt}")) }
/// });
/// let client = store.client().await.unwrap();
/// assert_eq!(*client, "connection 1");
/// // A batch found it dead: the next one to ask connects again.
/// store.broken(&client);
/// assert_eq!(*store.client().await.unwrap(), "connection 2");
/// assert_eq!(attempts.get(), 2);
/// # });
/// ```
pub struct Reconnect<C, F> {
    connect: F,
    link: RefCell<Link<C>>,
    first: Duration,
    max: Duration,
}

/// Where the link to the store stands.
enum Link<C> {
    /// Connected: the client to use.
    Up(Rc<C>),
    /// An attempt is under way.
    Connecting { down_since: Instant, wait: Duration },
    /// Broken, or never connected: the next attempt may start at `retry_at`.
    Down {
        down_since: Instant,
        retry_at: Instant,
        /// The wait after the next failed attempt.
        wait: Duration,
        /// Why it is down.
        why: String,
    },
}

/// Why [`Reconnect::client`] has no client to give: the store is not
/// reachable now. Nothing was sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreachable {
    /// Why: the last attempt's error, or that one is under way.
    pub why: String,
    /// How long the link has been down.
    pub down_for: Duration,
    /// How long until the next attempt may start (zero while one is under
    /// way, or when the next caller will make it).
    pub retry_in: Duration,
}

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the store is unreachable (down for {:?}, next attempt in {:?}): {}; nothing was sent",
            self.down_for, self.retry_in, self.why
        )
    }
}

impl std::error::Error for Unreachable {}

impl<C, F, Fut, E> Reconnect<C, F>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<C, E>>,
    E: fmt::Display,
{
    /// A link that connects with `connect` when a client is first asked
    /// for, and again after it breaks.
    pub fn new(connect: F) -> Self {
        let now = Instant::now();
        Self {
            connect,
            link: RefCell::new(Link::Down {
                down_since: now,
                retry_at: now,
                wait: DEFAULT_RECONNECT_FIRST,
                why: "not connected yet".to_string(),
            }),
            first: DEFAULT_RECONNECT_FIRST,
            max: DEFAULT_RECONNECT_MAX,
        }
    }

    /// Connects at once, for a factory: a shard that cannot reach its store
    /// as it starts fails the start with `connect`'s error.
    ///
    /// ```
    /// use ferry::Reconnect;
    ///
    /// # futures::executor::block_on(async {
    /// let refused = Reconnect::start(|| async { Err::<u8, _>("connection refused") }).await;
    /// assert_eq!(refused.err(), Some("connection refused"));
    /// # });
    /// ```
    pub async fn start(connect: F) -> Result<Self, E> {
        let client = connect().await?;
        let reconnect = Self::new(connect);
        *reconnect.link.borrow_mut() = Link::Up(Rc::new(client));
        Ok(reconnect)
    }

    /// Waits `first` after the first failed attempt, twice as long after
    /// each next one, never more than `max` (defaults
    /// [`DEFAULT_RECONNECT_FIRST`], [`DEFAULT_RECONNECT_MAX`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry::Reconnect;
    ///
    /// # futures::executor::block_on(async {
    /// let store = Reconnect::new(|| async { Err::<u8, _>("refused") })
    ///     .backoff(Duration::from_secs(1), Duration::from_secs(8));
    /// let failed = store.client().await.unwrap_err();
    /// assert!(failed.why.contains("refused"));
    /// assert!(failed.retry_in > Duration::from_millis(900));
    /// // Within the backoff, no attempt is made: the answer comes at once.
    /// assert!(store.client().await.is_err());
    /// # });
    /// ```
    pub fn backoff(mut self, first: Duration, max: Duration) -> Self {
        self.first = first;
        self.max = max.max(first);
        if let Link::Down { wait, .. } = &mut *self.link.borrow_mut() {
            *wait = first;
        }
        self
    }

    /// The client, connecting first if the link is down and its backoff
    /// has passed; [`Unreachable`] at once while an attempt is under way or
    /// the backoff runs, or if this attempt fails.
    pub async fn client(&self) -> Result<Rc<C>, Unreachable> {
        let now = Instant::now();
        let (down_since, wait) = match &*self.link.borrow() {
            Link::Up(client) => return Ok(Rc::clone(client)),
            Link::Connecting { down_since, .. } => {
                return Err(self.unreachable(now, *down_since, now, "reconnecting"))
            }
            Link::Down {
                down_since,
                retry_at,
                why,
                ..
            } if now < *retry_at => return Err(self.unreachable(now, *down_since, *retry_at, why)),
            Link::Down {
                down_since, wait, ..
            } => (*down_since, *wait),
        };
        self.attempt(down_since, wait).await
    }

    /// One attempt to connect, the link marked connecting meanwhile (and
    /// down again if the attempt is dropped half-way).
    async fn attempt(&self, down_since: Instant, wait: Duration) -> Result<Rc<C>, Unreachable> {
        *self.link.borrow_mut() = Link::Connecting { down_since, wait };
        let mut guard = Attempt {
            link: &self.link,
            done: false,
        };
        let connected = (self.connect)().await;
        guard.done = true;
        let now = Instant::now();
        match connected {
            Ok(client) => {
                let client = Rc::new(client);
                *self.link.borrow_mut() = Link::Up(Rc::clone(&client));
                Ok(client)
            }
            Err(err) => {
                let why = err.to_string();
                let retry_at = now + wait;
                *self.link.borrow_mut() = Link::Down {
                    down_since,
                    retry_at,
                    wait: (wait * 2).min(self.max),
                    why: why.clone(),
                };
                Err(self.unreachable(now, down_since, retry_at, &why))
            }
        }
    }

    /// A batch found `client` dead (its connection closed, reset or timed
    /// out): the next batch to ask connects again, at once. A report about
    /// a client that was already replaced is ignored.
    pub fn broken(&self, client: &Rc<C>) {
        let mut link = self.link.borrow_mut();
        if matches!(&*link, Link::Up(current) if Rc::ptr_eq(current, client)) {
            let now = Instant::now();
            *link = Link::Down {
                down_since: now,
                retry_at: now,
                wait: self.first,
                why: "the connection broke".to_string(),
            };
        }
    }

    /// Whether a client is connected now.
    pub fn is_up(&self) -> bool {
        matches!(&*self.link.borrow(), Link::Up(_))
    }

    fn unreachable(
        &self,
        now: Instant,
        down_since: Instant,
        retry_at: Instant,
        why: &str,
    ) -> Unreachable {
        Unreachable {
            why: why.to_string(),
            down_for: now.saturating_duration_since(down_since),
            retry_in: retry_at.saturating_duration_since(now),
        }
    }
}

/// Puts the link back down if an attempt is dropped before it ends (its
/// batch future dropped as the shard stops), so that it is not left
/// connecting for ever.
struct Attempt<'a, C> {
    link: &'a RefCell<Link<C>>,
    done: bool,
}

impl<C> Drop for Attempt<'_, C> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut link = self.link.borrow_mut();
        if let Link::Connecting { down_since, wait } = *link {
            *link = Link::Down {
                down_since,
                retry_at: Instant::now(),
                wait,
                why: "an attempt to connect was abandoned".to_string(),
            };
        }
    }
}

impl<C, F> fmt::Debug for Reconnect<C, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let link = match &*self.link.borrow() {
            Link::Up(_) => "up",
            Link::Connecting { .. } => "connecting",
            Link::Down { .. } => "down",
        };
        f.debug_struct("Reconnect").field("link", &link).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;
    use std::cell::Cell;

    /// A connect function that fails while `refusing` is set, counting its
    /// attempts.
    fn flaky(
        refusing: &Rc<Cell<bool>>,
        attempts: &Rc<Cell<u32>>,
    ) -> impl Fn() -> std::future::Ready<Result<u32, String>> {
        let (refusing, attempts) = (Rc::clone(refusing), Rc::clone(attempts));
        move || {
            attempts.set(attempts.get() + 1);
            std::future::ready(if refusing.get() {
                Err("connection refused".to_string())
            } else {
                Ok(attempts.get())
            })
        }
    }

    #[test]
    fn a_store_away_fails_fast_within_the_backoff_and_comes_back_after_it() {
        let (refusing, attempts) = (Rc::new(Cell::new(true)), Rc::new(Cell::new(0)));
        let wait = Duration::from_millis(30);
        let store = Reconnect::new(flaky(&refusing, &attempts)).backoff(wait, wait * 4);
        let first = block_on(store.client()).unwrap_err();
        assert_eq!(
            (first.why.as_str(), attempts.get()),
            ("connection refused", 1)
        );
        // Within the backoff: refused at once, no attempt made.
        let second = block_on(store.client()).unwrap_err();
        assert_eq!(attempts.get(), 1, "{second}");
        assert!(second.retry_in <= wait && second.to_string().contains("nothing was sent"));
        refusing.set(false);
        std::thread::sleep(wait);
        let client = block_on(store.client()).expect("back after the backoff");
        assert_eq!((*client, attempts.get()), (2, 2));
        assert!(store.is_up());
    }

    #[test]
    fn the_backoff_doubles_up_to_its_bound_and_starts_again_after_a_success() {
        let (refusing, attempts) = (Rc::new(Cell::new(true)), Rc::new(Cell::new(0)));
        let store = Reconnect::new(flaky(&refusing, &attempts))
            .backoff(Duration::from_millis(10), Duration::from_millis(25));
        let mut waits = Vec::new();
        for _ in 0..4 {
            let failed = block_on(store.client()).unwrap_err();
            waits.push(failed.retry_in.as_millis().div_ceil(5) * 5);
            std::thread::sleep(failed.retry_in);
        }
        assert_eq!(waits, vec![10, 20, 25, 25]);
        refusing.set(false);
        let client = block_on(store.client()).unwrap();
        store.broken(&client);
        refusing.set(true);
        let failed = block_on(store.client()).unwrap_err();
        assert_eq!(
            failed.retry_in.as_millis().div_ceil(5) * 5,
            10,
            "from the first again"
        );
    }

    #[test]
    fn a_report_about_a_replaced_client_is_ignored() {
        let (refusing, attempts) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(0)));
        let store = Reconnect::new(flaky(&refusing, &attempts));
        let old = block_on(store.client()).unwrap();
        store.broken(&old);
        let new = block_on(store.client()).unwrap();
        store.broken(&old);
        assert!(store.is_up(), "the new client stays");
        assert!(Rc::ptr_eq(&new, &block_on(store.client()).unwrap()));
    }

    #[test]
    fn while_an_attempt_is_under_way_others_fail_at_once_and_a_dropped_one_leaves_it_down() {
        let (tell, answer) = futures::channel::oneshot::channel::<u32>();
        let answer = RefCell::new(Some(answer));
        let store = Reconnect::new(|| {
            let answer = answer.borrow_mut().take();
            async move {
                match answer {
                    Some(answer) => answer.await.map_err(|_| "gone".to_string()),
                    None => Ok(7),
                }
            }
        });
        let mut slow = Box::pin(store.client());
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(slow.as_mut().poll(&mut cx).is_pending());
        let busy = block_on(store.client()).unwrap_err();
        assert_eq!(busy.why, "reconnecting");
        drop(slow);
        drop(tell);
        assert!(!store.is_up());
        assert_eq!(
            *block_on(store.client()).unwrap(),
            7,
            "a new attempt is made"
        );
    }
}
