//! A shard's memory of its keys: the version, epoch and state each had
//! when this shard last read or wrote it.
//!
//! A key is written only by its shard (it is routed there), and by one
//! trip at a time, so what the shard wrote last is what the store holds,
//! unless someone else wrote since: then the next conditional write does
//! not land, the key is forgotten and read again. So after one read, a
//! trip needs only its write.
//!
//! A key's trip takes what is known of it out of the memory and puts back
//! what holds after the trip (or nothing, when the store moved it), so a
//! key is looked up once a trip and written once; while a trip carries
//! it, the memory knows nothing of it. A key taken from the newer
//! generation keeps its entry there, empty, and is put back into it in
//! place: no entry is removed and made again, and the key is not copied.
//!
//! Bounded: at most `capacity` keys, kept in two generations (besides
//! those the trips in flight hold). A key taken from the older one goes
//! back into the newer; when the newer holds half the capacity, the older
//! is dropped and the newer takes its place. A key used again within the
//! last half-capacity keys is never dropped; a key not used for longer is
//! read again when it comes back.
//!
//! Invariant: at most one generation knows a key (the older one may keep
//! an empty entry of a key the newer knows; it goes with the older).

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
    /// Each key's entry, empty while a trip carries the key.
    newer: HashMap<K, Option<Known<B>>, ahash::RandomState>,
    older: HashMap<K, Option<Known<B>>, ahash::RandomState>,
    /// Keys the newer generation holds before it becomes the older.
    half: usize,
}

impl<K: Hash + Eq + Clone, B> Memory<K, B> {
    /// A memory of at most `capacity` keys (0: remembers nothing, so every
    /// trip reads its keys).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            newer: HashMap::default(),
            older: HashMap::default(),
            half: capacity / 2,
        }
    }

    /// What is known of `key`, if anything, taken out: the memory holds
    /// nothing of it until it is [`put`](Self::put) back.
    pub(crate) fn take(&mut self, key: &K) -> Option<Known<B>> {
        let known = match self.newer.get_mut(key) {
            Some(entry) => entry.take(),
            None => self.older.remove(key).flatten(),
        };
        debug_assert!(!self.knows(key));
        known
    }

    /// `key`, which the memory does not know (taken, or never known), is
    /// now `known`: in its entry of the newer generation if it has one, or
    /// in a new entry there.
    pub(crate) fn put(&mut self, key: &K, known: Known<B>) {
        if self.half == 0 {
            return;
        }
        debug_assert!(!self.knows(key));
        if let Some(entry) = self.newer.get_mut(key) {
            *entry = Some(known);
            return;
        }
        if self.newer.len() >= self.half {
            // The older generation is dropped; its table, already grown,
            // serves the newer one.
            std::mem::swap(&mut self.newer, &mut self.older);
            self.newer.clear();
        }
        self.newer.insert(key.clone(), Some(known));
        debug_assert!(self.newer.len() <= self.half && self.older.len() <= self.half);
    }

    /// Whether a generation knows `key`.
    fn knows(&self, key: &K) -> bool {
        let known = |generation: &HashMap<K, Option<Known<B>>, _>| {
            generation.get(key).is_some_and(Option::is_some)
        };
        known(&self.newer) || known(&self.older)
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

    fn version(memory: &mut Memory<u64, ()>, key: u64) -> Option<u64> {
        let known = memory.take(&key)?;
        let version = known.version;
        memory.put(&key, known);
        Some(version)
    }

    #[test]
    fn a_key_used_within_half_the_capacity_stays() {
        let mut memory = Memory::new(4);
        memory.put(&1, known(1));
        memory.put(&2, known(2));
        memory.put(&3, known(3)); // 1 and 2 become the older generation
        assert_eq!(version(&mut memory, 1), Some(1)); // back to the newer
        memory.put(&4, known(4)); // the newer (3, 1) turns older; 2 is dropped
        assert_eq!(memory.take(&2), None);
        assert_eq!(version(&mut memory, 3), Some(3));
    }

    #[test]
    fn a_key_taken_is_held_nowhere_until_put_back() {
        let mut memory = Memory::new(4);
        memory.put(&1, known(1));
        assert_eq!(memory.take(&1), Some(known(1)));
        assert_eq!(memory.take(&1), None);
        memory.put(&1, known(2));
        assert_eq!(memory.take(&1), Some(known(2)));
    }

    #[test]
    fn a_key_put_back_keeps_its_entry() {
        let mut memory = Memory::new(4);
        memory.put(&1, known(1));
        let carried = memory.take(&1).expect("known");
        assert_eq!(memory.newer.len(), 1, "the entry stays, empty");
        assert_eq!(memory.take(&1), None, "a key carried is not known");
        memory.put(&1, known(carried.version + 1));
        assert_eq!(memory.newer.len(), 1);
        assert_eq!(version(&mut memory, 1), Some(2));
    }

    #[test]
    fn a_memory_of_nothing_remembers_nothing() {
        let mut memory = Memory::new(0);
        memory.put(&1, known(1));
        assert_eq!(memory.take(&1), None);
    }
}
