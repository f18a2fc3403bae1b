//! The order in which a key's waiting inputs are sent (SPEC G2).
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

use std::fmt;
use std::sync::Arc;

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
}

impl<I> Order<I> {
    /// Admission order: every input gets rank 0, so ties (admission order)
    /// decide everything. This is the default.
    pub fn arrival() -> Self {
        Self { rule: None }
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
        }
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
        }
    }
}

impl<I> fmt::Debug for Order<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rule {
            None => f.write_str("Order::arrival()"),
            Some(_) => f.write_str("Order::by(..)"),
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
}
