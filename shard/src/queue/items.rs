//! `Items`: the items of a batch as a queue lends them to `take_with`, one
//! type for both disciplines. The batch is the first `left` entries of a
//! `VecDeque` (a lane's inputs, or the unkeyed queue); whatever the
//! consumer does not take leaves with the iterator all the same, since the
//! queue counted the batch out when it was taken.

use std::collections::VecDeque;
use std::marker::PhantomData;

use crate::queue::taken::Taken;

/// What a queue keeps per waiting input, as `Items` hands it out.
pub trait Entry<T> {
    /// When it arrived, on the clock of the queue's `now`.
    fn arrival_ns(&self) -> u64;
    /// The item itself, leaving the queue.
    fn into_item(self) -> T;
}

/// The items of a batch, in the queue's order: `Lanes`' (rank, admission)
/// or `Fifo`'s admission order. Items not taken from it are dropped with
/// it; they have left the queue either way.
#[derive(Debug)]
pub struct Items<'a, E, T> {
    /// The batch is the first `left` entries.
    entries: &'a mut VecDeque<E>,
    left: usize,
    weight: u64,
    /// Arrival of the item `next` returned last (see `Taken`).
    arrival_ns: u64,
    /// The batch's key hash (0 for unkeyed batching).
    hash: u64,
    item: PhantomData<fn() -> T>,
}

impl<'a, E, T> Items<'a, E, T> {
    /// The first `left` of `entries`, weighing `weight` in all, for the key
    /// of `hash`.
    pub(crate) fn new(entries: &'a mut VecDeque<E>, left: usize, weight: u64, hash: u64) -> Self {
        debug_assert!(left <= entries.len());
        Self {
            entries,
            left,
            weight,
            arrival_ns: 0,
            hash,
            item: PhantomData,
        }
    }

    /// The batch's total weight.
    ///
    /// ```
    /// use ferry_shard::parts::Fifo;
    /// use ferry_shard::QueueConfig;
    /// use std::time::Duration;
    ///
    /// let mut fifo = Fifo::new(QueueConfig::default());
    /// fifo.admit((), 5, Duration::ZERO).unwrap();
    /// assert_eq!(fifo.take_with(Duration::ZERO, |items| items.weight()), Some(5));
    /// ```
    pub fn weight(&self) -> u64 {
        self.weight
    }
}

impl<E: Entry<T>, T> Iterator for Items<'_, E, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let entry = self.entries.pop_front()?;
        self.arrival_ns = entry.arrival_ns();
        Some(entry.into_item())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<E: Entry<T>, T> ExactSizeIterator for Items<'_, E, T> {}

/// Items the consumer did not take leave the queue all the same: they were
/// counted out of it when the batch was taken.
impl<E, T> Drop for Items<'_, E, T> {
    fn drop(&mut self) {
        if self.left > 0 {
            self.entries.drain(..self.left);
        }
    }
}

impl<E, T> Taken for Items<'_, E, T> {
    fn weight(&self) -> u64 {
        self.weight
    }

    fn arrival_ns(&self) -> u64 {
        self.arrival_ns
    }

    fn key_hash(&self) -> u64 {
        self.hash
    }
}
