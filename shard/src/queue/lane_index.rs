//! The index of a shard's live lanes: from a key's hash to the lanes'
//! places (`lanes.rs`), where the keys themselves are compared.
//!
//! Open addressing with linear probing: a table of a power-of-two number
//! of slots, each empty or holding a hash and a place, never more than half
//! full. An entry's *home* is the slot named by the top bits of its hash
//! times a large odd constant (Fibonacci hashing): the product's top bits
//! depend on every bit of the hash, so neither hashes whose low bits are
//! alike (the engine routes keys to shards by the hash's remainder, so on
//! one shard they are) nor small numbers given as hashes crowd into a few
//! homes. An entry sits at its home or in the run of full slots that
//! follows it. Removal shifts the
//! later entries of that run back into the hole, so no slot is ever marked
//! deleted, and a lookup stops at the first empty slot.
//!
//! At 100,000 keys nearly every input makes a lane and, once its batch
//! is answered, removes it: an insert and a removal per input. Each here
//! looks at one or two slots; a general hash table (hashbrown's, used
//! before) probes by groups of control bytes and keeps them up to date,
//! and replacing it cut the count of that workload by about 90
//! instructions an input (`docs/benchmarks.md`, "A lane index of its
//! own").
//!
//! Invariant: every entry is reachable from its home without crossing an
//! empty slot, and `len * 2 <= slots`.

/// A place no lane has: marks an empty slot.
const EMPTY: u32 = u32::MAX;

/// 2^64 divided by the golden ratio, odd: multiplying by it spreads every
/// bit of a hash into the product's top bits.
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

/// Slots of a new index (a power of two).
const SLOTS_MIN: usize = 16;

#[derive(Clone, Copy, Debug)]
struct Slot {
    hash: u64,
    place: u32,
}

const VACANT: Slot = Slot {
    hash: 0,
    place: EMPTY,
};

/// Where a lookup ended: the place found, or the empty slot where an entry
/// for the hash would go (see [`LaneIndex::insert_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    Place(u32),
    Vacant(usize),
}

/// Places by hash. Entries are `(hash, place)`; equal hashes may have
/// several places (different keys), told apart by the caller's `eq`.
#[derive(Clone, Debug)]
pub(crate) struct LaneIndex {
    slots: Box<[Slot]>,
    /// `64 - log2(slots.len())`: a spread hash shifted right by it is its
    /// home.
    shift: u32,
    len: usize,
}

impl Default for LaneIndex {
    fn default() -> Self {
        Self::with_slots(SLOTS_MIN)
    }
}

impl LaneIndex {
    fn with_slots(slots: usize) -> Self {
        debug_assert!(slots.is_power_of_two() && slots >= 2);
        Self {
            slots: vec![VACANT; slots].into_boxed_slice(),
            shift: 64 - slots.trailing_zeros(),
            len: 0,
        }
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    #[inline(always)]
    fn home(&self, hash: u64) -> usize {
        (hash.wrapping_mul(SPREAD) >> self.shift) as usize
    }

    /// The place of the entry of `hash` whose place `eq` accepts, or the
    /// empty slot where one would go.
    #[inline]
    pub(crate) fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Found {
        let mask = self.mask();
        let mut at = self.home(hash);
        loop {
            let slot = self.slots[at];
            if slot.place == EMPTY {
                return Found::Vacant(at);
            }
            if slot.hash == hash && eq(slot.place) {
                return Found::Place(slot.place);
            }
            at = (at + 1) & mask;
        }
    }

    /// Puts `(hash, place)` in the empty slot `at` that [`find`](Self::find)
    /// just returned for `hash` (no change in between).
    #[inline]
    pub(crate) fn insert_at(&mut self, at: usize, hash: u64, place: u32) {
        debug_assert!(place != EMPTY, "a place below u32::MAX");
        debug_assert!(self.slots[at].place == EMPTY, "a vacant slot");
        self.slots[at] = Slot { hash, place };
        self.len += 1;
        if self.len * 2 > self.slots.len() {
            self.grow();
        }
    }

    /// Removes the entry `(hash, place)`.
    ///
    /// # Panics
    /// If there is no such entry.
    #[inline(always)]
    pub(crate) fn remove(&mut self, hash: u64, place: u32) {
        let mask = self.mask();
        let mut hole = self.home(hash);
        loop {
            let slot = self.slots[hole];
            assert!(slot.place != EMPTY, "removing a place that is not indexed");
            if slot.place == place {
                break;
            }
            hole = (hole + 1) & mask;
        }
        // Shift back each later entry of the run that may sit in the hole:
        // one whose home is not between the hole and itself.
        let mut next = (hole + 1) & mask;
        loop {
            let slot = self.slots[next];
            if slot.place == EMPTY {
                break;
            }
            let from_home = next.wrapping_sub(self.home(slot.hash)) & mask;
            let from_hole = next.wrapping_sub(hole) & mask;
            if from_home >= from_hole {
                self.slots[hole] = slot;
                hole = next;
            }
            next = (next + 1) & mask;
        }
        self.slots[hole].place = EMPTY;
        self.len -= 1;
    }

    /// The places of every entry of `hash`.
    pub(crate) fn places_of(&self, hash: u64) -> Vec<u32> {
        let mask = self.mask();
        let mut at = self.home(hash);
        let mut places = Vec::new();
        loop {
            let slot = self.slots[at];
            if slot.place == EMPTY {
                return places;
            }
            if slot.hash == hash {
                places.push(slot.place);
            }
            at = (at + 1) & mask;
        }
    }

    /// Entries in the index.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Twice the slots, every entry put again from its home.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let old = std::mem::replace(self, Self::with_slots(self.slots.len() * 2));
        for slot in old.slots.iter().filter(|slot| slot.place != EMPTY) {
            // Each place is in the index once: the lookup ends at a vacancy.
            let Found::Vacant(at) = self.find(slot.hash, |_| false) else {
                unreachable!("a lookup that accepts no place finds none")
            };
            self.slots[at] = *slot;
        }
        self.len = old.len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// The index's entries, from a walk of every slot.
    fn entries(index: &LaneIndex) -> BTreeSet<(u64, u32)> {
        let set: BTreeSet<(u64, u32)> = index
            .slots
            .iter()
            .filter(|slot| slot.place != EMPTY)
            .map(|slot| (slot.hash, slot.place))
            .collect();
        assert_eq!(set.len(), index.len(), "len counts the entries");
        set
    }

    /// Every entry is found from its home (the module's invariant).
    fn assert_reachable(index: &LaneIndex) {
        assert!(index.len() * 2 <= index.slots.len(), "at most half full");
        for (hash, place) in entries(index) {
            assert_eq!(index.find(hash, |p| p == place), Found::Place(place));
        }
    }

    #[derive(Clone, Debug)]
    enum Step {
        Insert(u64),
        Remove(usize),
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        // Few distinct hashes (equal hashes share a home), so that runs
        // form and wrap around the table's end.
        let hash = prop_oneof![
            0_u64..16,
            (0_u64..8).prop_map(|top| top << 61),
            any::<u64>()
        ];
        let step = prop_oneof![
            hash.prop_map(Step::Insert),
            any::<usize>().prop_map(Step::Remove)
        ];
        proptest::collection::vec(step, 0..300)
    }

    proptest! {
        /// Inserts and removals in any order keep the same entries as a
        /// set does, each still found, the absent ones not.
        #[test]
        fn the_index_holds_what_a_set_holds(steps in steps()) {
            let mut index = LaneIndex::default();
            let mut model: BTreeSet<(u64, u32)> = BTreeSet::new();
            let mut next_place = 0_u32;
            for step in steps {
                match step {
                    Step::Insert(hash) => {
                        let place = next_place;
                        next_place += 1;
                        let Found::Vacant(at) = index.find(hash, |p| p == place) else {
                            panic!("a new place is not found");
                        };
                        index.insert_at(at, hash, place);
                        model.insert((hash, place));
                    }
                    Step::Remove(pick) if !model.is_empty() => {
                        let &(hash, place) = model.iter().nth(pick % model.len()).unwrap();
                        index.remove(hash, place);
                        model.remove(&(hash, place));
                        prop_assert!(matches!(index.find(hash, |p| p == place), Found::Vacant(_)));
                    }
                    Step::Remove(_) => {}
                }
                prop_assert_eq!(&entries(&index), &model);
                assert_reachable(&index);
            }
            for &(hash, _) in &model {
                let mut places = index.places_of(hash);
                places.sort_unstable();
                let expected: Vec<u32> =
                    model.iter().filter(|e| e.0 == hash).map(|e| e.1).collect();
                prop_assert_eq!(places, expected);
            }
        }
    }

    #[test]
    fn a_run_across_the_tables_end_is_shifted_back_on_removal() {
        let mut index = LaneIndex::default();
        let last = index.slots.len() - 1;
        let last_home = (0..).find(|&hash| index.home(hash) == last).unwrap();
        for place in 0..3 {
            let Found::Vacant(at) = index.find(last_home, |_| false) else {
                unreachable!()
            };
            index.insert_at(at, last_home, place);
        }
        // The last slot, then 0 and 1 past the end.
        index.remove(last_home, 0);
        assert_reachable(&index);
        assert_eq!(index.places_of(last_home), vec![1, 2]);
        assert_eq!(index.slots[1].place, EMPTY, "the run closed up");
    }

    #[test]
    fn the_table_doubles_past_half_full() {
        let mut index = LaneIndex::default();
        for place in 0..9_u32 {
            let hash = u64::from(place).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let Found::Vacant(at) = index.find(hash, |_| false) else {
                unreachable!()
            };
            index.insert_at(at, hash, place);
        }
        assert_eq!(index.slots.len(), 32);
        assert_reachable(&index);
    }

    #[test]
    #[should_panic(expected = "not indexed")]
    fn removing_an_absent_place_panics() {
        LaneIndex::default().remove(7, 1);
    }
}
