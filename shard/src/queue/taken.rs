//! `Taken`: what a batch's items tell as they leave a queue, apart from
//! the `Queue` seam so that the queues can implement it without naming
//! the seam.

/// What a batch's items tell, beside the items themselves, as they leave
/// the queue: what the shard's figures need (see `observe.rs`).
pub trait Taken {
    /// The batch's total weight.
    fn weight(&self) -> u64;

    /// Arrival (nanoseconds, on the clock of the queue's `now`) of the item
    /// the iterator returned last; 0 before the first.
    fn arrival_ns(&self) -> u64;

    /// The hash of the batch's key (0 for unkeyed batching).
    fn key_hash(&self) -> u64;
}
