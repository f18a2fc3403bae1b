//! The user's batch function: one key and its inputs in, one output per
//! input out, usually one round trip to a store.

use std::future::Future;

/// What a shard calls to process a batch. Implemented for every
/// `Fn(K, Vec<I>) -> impl Future<Output = Result<Vec<O>, E>>`.
///
/// It runs on the shard's own thread and need not be `Send`: it may hold an
/// `Rc`, a per-core connection, a cache. It must return exactly one output
/// per input, in the order given.
///
/// ```
/// use ferry_shard::BatchFn;
///
/// fn assert_batch_fn<B: BatchFn<u64, u32, u32, String>>(_: &B) {}
/// let double = |_key: u64, inputs: Vec<u32>| async move {
///     Ok::<_, String>(inputs.into_iter().map(|x| x * 2).collect())
/// };
/// assert_batch_fn(&double);
/// ```
pub trait BatchFn<K, I, O, E> {
    /// The batch's future.
    type Future: Future<Output = Result<Vec<O>, E>>;

    /// Starts processing `inputs`, all of `key`, in rank order.
    fn call(&self, key: K, inputs: Vec<I>) -> Self::Future;
}

impl<K, I, O, E, F, Fut> BatchFn<K, I, O, E> for F
where
    F: Fn(K, Vec<I>) -> Fut,
    Fut: Future<Output = Result<Vec<O>, E>>,
{
    type Future = Fut;

    fn call(&self, key: K, inputs: Vec<I>) -> Fut {
        self(key, inputs)
    }
}
