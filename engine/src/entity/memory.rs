//! A shard's memory of its keys: the version, epoch and state each had
//! when this shard last read or wrote it.
//!
//! A key is written only by its shard (it is routed there), and by one
//! trip at a time, so what the shard wrote last is what the store holds,
//! unless someone else wrote since: then the next conditional write does
//! not land, the key is forgotten and read again. So after one read, a
//! trip needs only its write.
//!
//! Bounded: at most `capacity` keys, kept in two generations. A key found
//! in the older one moves to the newer; when the newer holds half the
//! capacity, the older is dropped and the newer takes its place. A key
//! used again within the last half-capacity keys is never dropped; a key
//! not used for longer is read again when it comes back.

use std::collections::HashMap;
use std::hash::Hash;

/// What the shard knows of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Known<B> {
    /// Inputs applied to the key.
    pub(crate) version: u64,
    /// The epoch of its last write.
    pub(crate) epoch: u64,
    /// The shape's own part: the decoded state, or nothing for a log.
    pub(crate) base: B,
}

pub(crate) struct Memory<K, B> {
    newer: HashMap<K, Known<B>, ahash::RandomState>,
    older: HashMap<K, Known<B>, ahash::RandomState>,
    /// Keys the newer generation holds before it becomes the older.
    half: usize,
}

impl<K: Hash + Eq, B> Memory<K, B> {
    /// A memory of at most `capacity` keys (0: remembers nothing, so every
    /// trip reads its keys).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            newer: HashMap::default(),
            older: HashMap::default(),
            half: capacity / 2,
        }
    }

    /// What is known of `key`, if anything.
    pub(crate) fn get(&mut self, key: &K) -> Option<&Known<B>>
    where
        K: Clone,
    {
        if !self.newer.contains_key(key) {
            let known = self.older.remove(key)?;
            self.put(key.clone(), known);
        }
        self.newer.get(key)
    }

    /// `key` is now `known`.
    pub(crate) fn put(&mut self, key: K, known: Known<B>) {
        if self.half == 0 {
            return;
        }
        if self.newer.len() >= self.half && !self.newer.contains_key(&key) {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(key, known);
        debug_assert!(self.newer.len() <= self.half && self.older.len() <= self.half);
    }

    /// Nothing is known of `key` any more.
    pub(crate) fn forget(&mut self, key: &K) {
        self.newer.remove(key);
        self.older.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(version: u64) -> Known<()> {
        Known {
            version,
            epoch: 0,
            base: (),
        }
    }

    #[test]
    fn a_key_used_within_half_the_capacity_stays() {
        let mut memory = Memory::new(4);
        memory.put(1, known(1));
        memory.put(2, known(2));
        memory.put(3, known(3)); // 1 and 2 become the older generation
        assert_eq!(memory.get(&1).map(|k| k.version), Some(1)); // back to the newer
        memory.put(4, known(4)); // the newer (3, 1) turns older; 2 is dropped
        assert_eq!(memory.get(&2), None);
        assert_eq!(memory.get(&3).map(|k| k.version), Some(3));
        memory.forget(&3);
        assert_eq!(memory.get(&3), None);
    }

    #[test]
    fn a_memory_of_nothing_remembers_nothing() {
        let mut memory = Memory::new(0);
        memory.put(1, known(1));
        assert_eq!(memory.get(&1), None);
    }
}
