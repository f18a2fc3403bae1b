//! The order in which a key's waiting inputs are sent (guarantee G2,
//! docs/guarantees.md).
//!
//! An [`Order`] turns an input into a rank (`i64`). A lane keeps its waiting
//! inputs in ascending rank, ties in admission order, and batches are taken
//! from its front. The rank is computed once per input, on the caller's
//! thread, before the input is handed to its shard; the shard never calls
//! user code to compare inputs.
//!
//! The order only decides *dispatch* order. An input ranked below inputs that
//! were already sent (a late input) is neither held nor refused: it goes in
//! its key's next batch, at its rank among what is waiting then, and the store
//! decides what it means.
//!
//! The one exception is opt-in: an *event-time* order
//! ([`Order::event_time`]) ranks by an input's event time and also names a
//! lateness, for which the shard holds each input (see `hold.rs`), so that
//! inputs arriving out of order within that bound are still sent in order.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A rule that ranks inputs; implement it for orders a closure cannot say
/// conveniently (or to name an order and give it state).
///
/// ```
/// use ferry_shard::{Order, Rank};
///
/// struct ByPriority;
/// impl Rank<(u8, &'static str)> for ByPriority {
///     fn rank(&self, input: &(u8, &'static str)) -> i64 {
///         i64::from(input.0)
///     }
/// }
///
/// let order = Order::new(ByPriority);
/// assert_eq!(order.rank(&(3, "low")), 3);
/// ```
pub trait Rank<I>: Send + Sync {
    /// The input's rank: lower ranks are sent first.
    fn rank(&self, input: &I) -> i64;
}

impl<I, F> Rank<I> for F
where
    F: Fn(&I) -> i64 + Send + Sync,
{
    fn rank(&self, input: &I) -> i64 {
        self(input)
    }
}

/// How a key's waiting inputs are ordered: by arrival (the default) or by a
/// rank computed from each input.
///
/// Cloning an `Order` is cheap (it shares the rule).
///
/// ```
/// use ferry_shard::Order;
///
/// // Inputs carrying an effective day are sent in day order, ties by arrival.
/// struct Event { day: i64 }
/// let order = Order::by(|e: &Event| e.day);
/// assert_eq!(order.rank(&Event { day: 19_000 }), 19_000);
///
/// // The default ranks every input the same, so admission order decides.
/// let arrival = Order::<Event>::arrival();
/// assert_eq!(arrival.rank(&Event { day: 5 }), arrival.rank(&Event { day: 7 }));
/// ```
pub struct Order<I> {
    rule: Option<Arc<dyn Rank<I>>>,
    /// With an event-time order, how long past its event time an input is
    /// held; `None` for every other order.
    lateness: Option<Duration>,
}

impl<I> Order<I> {
    /// Admission order: every input gets rank 0, so ties (admission order)
    /// decide everything. This is the default.
    pub fn arrival() -> Self {
        Self {
            rule: None,
            lateness: None,
        }
    }

    /// Rank each input with `rank`; it may capture whatever it needs.
    pub fn by<F>(rank: F) -> Self
    where
        F: Fn(&I) -> i64 + Send + Sync + 'static,
    {
        Self::new(rank)
    }

    /// Rank each input with a user implementation of [`Rank`].
    pub fn new<R>(rule: R) -> Self
    where
        R: Rank<I> + 'static,
    {
        Self {
            rule: Some(Arc::new(rule)),
            lateness: None,
        }
    }

    /// Event time: rank each input by `at`, its event time in milliseconds
    /// since the UNIX epoch, and hold it on its shard until `at + lateness`
    /// has passed on the local wall clock. Inputs of a key that arrive out
    /// of order by less than `lateness` are then sent in event-time order,
    /// across batches too; the price is `lateness` of latency on every input.
    ///
    /// A batch takes only inputs whose hold has ended, and a key's lane is
    /// not ready before its front input's hold ends; closing ends every
    /// hold. An input that arrives when its hold has already ended (a late
    /// input) is not held: it goes in its key's next batch at its rank, or,
    /// with the builder's `refuse_late(true)`, is refused `Late` and handed
    /// back.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ferry_shard::Order;
    ///
    /// struct Reading { at_ms: i64 }
    /// let order = Order::event_time(|r: &Reading| r.at_ms, Duration::from_millis(25));
    /// assert_eq!(order.rank(&Reading { at_ms: 1_700_000_000_000 }), 1_700_000_000_000);
    /// assert_eq!(order.lateness(), Some(Duration::from_millis(25)));
    /// assert_eq!(Order::by(|r: &Reading| r.at_ms).lateness(), None);
    /// ```
    pub fn event_time<F>(at: F, lateness: Duration) -> Self
    where
        F: Fn(&I) -> i64 + Send + Sync + 'static,
    {
        Self {
            lateness: Some(lateness),
            ..Self::new(at)
        }
    }

    /// The lateness an event-time order holds inputs for; `None` for any
    /// other order (nothing is held).
    pub fn lateness(&self) -> Option<Duration> {
        self.lateness
    }

    /// The rank of `input` under this order.
    #[inline]
    pub fn rank(&self, input: &I) -> i64 {
        match &self.rule {
            None => 0,
            Some(rule) => rule.rank(input),
        }
    }

    /// Whether this is the arrival order (every rank equal).
    pub fn is_arrival(&self) -> bool {
        self.rule.is_none()
    }
}

impl<I> Default for Order<I> {
    fn default() -> Self {
        Self::arrival()
    }
}

impl<I> Clone for Order<I> {
    fn clone(&self) -> Self {
        Self {
            rule: self.rule.clone(),
            lateness: self.lateness,
        }
    }
}

impl<I> fmt::Debug for Order<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.rule, self.lateness) {
            (None, _) => f.write_str("Order::arrival()"),
            (Some(_), None) => f.write_str("Order::by(..)"),
            (Some(_), Some(lateness)) => write!(f, "Order::event_time(.., {lateness:?})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_ranks_everything_equal() {
        let order = Order::<u32>::arrival();
        assert!(order.is_arrival());
        assert_eq!(order.rank(&1), order.rank(&99));
    }

    #[test]
    fn by_uses_the_closure_and_may_capture() {
        let offset = 10;
        let order = Order::by(move |x: &i64| *x - offset);
        assert!(!order.is_arrival());
        assert_eq!(order.rank(&15), 5);
        assert_eq!(order.clone().rank(&10), 0);
    }

    #[test]
    fn event_time_ranks_by_the_time_and_keeps_its_lateness() {
        let order = Order::event_time(|ms: &i64| *ms, Duration::from_millis(7));
        assert!(!order.is_arrival());
        assert_eq!(order.rank(&42), 42);
        assert_eq!(order.clone().lateness(), Some(Duration::from_millis(7)));
        assert_eq!(format!("{order:?}"), "Order::event_time(.., 7ms)");
        assert_eq!(Order::<i64>::arrival().lateness(), None);
    }
}
