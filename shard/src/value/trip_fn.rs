//! The user's trip function: the batches of several keys in, one result
//! per batch out, usually in one round trip to a store.

use std::future::Future;

/// What a shard calls to carry a trip: the batches of several of its keys
/// in one call. Implemented for every
/// `Fn(Vec<(K, Vec<I>)>) -> impl Future<Output = Vec<Result<Vec<O>, E>>>`.
///
/// Each batch is one key's inputs in rank order, as a batch function gets
/// them; no key is in a trip twice, and no key is in two trips at once. It
/// runs on the shard's own thread and need not be `Send`. It must return
/// one result per batch, in the order given, and each `Ok` must hold one
/// output per input of its batch, in order: a batch whose result is an
/// `Err` fails its own callers only.
///
/// ```
/// use ferry_shard::TripFn;
///
/// fn assert_trip_fn<T: TripFn<u64, u32, u32, String>>(_: &T) {}
/// let double = |trip: Vec<(u64, Vec<u32>)>| async move {
///     trip.into_iter()
///         .map(|(_key, inputs)| Ok::<_, String>(inputs.into_iter().map(|x| x * 2).collect()))
///         .collect::<Vec<_>>()
/// };
/// assert_trip_fn(&double);
/// ```
pub trait TripFn<K, I, O, E> {
    /// The trip's future.
    type Future: Future<Output = Vec<Result<Vec<O>, E>>>;

    /// Starts carrying `trip`: each key with its inputs, in rank order.
    fn call(&self, trip: Vec<(K, Vec<I>)>) -> Self::Future;
}

impl<K, I, O, E, F, Fut> TripFn<K, I, O, E> for F
where
    F: Fn(Vec<(K, Vec<I>)>) -> Fut,
    Fut: Future<Output = Vec<Result<Vec<O>, E>>>,
{
    type Future = Fut;

    fn call(&self, trip: Vec<(K, Vec<I>)>) -> Fut {
        self(trip)
    }
}
