//! The one hash of a key (docs/guarantees.md#terms).
//!
//! A key is hashed once, on the caller's thread. The same 64 bits pick the
//! shard (`hash % shards`) and find the key's lane on that shard, so a shard
//! never hashes a key again. The hasher is `ahash` with fixed seeds:
//! deterministic within one build, not a wire format across versions.

use std::hash::Hash;

const SEEDS: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];

/// The fixed-seed 64-bit hash Ferry routes and indexes a key by.
///
/// ```
/// use ferry_shard::key_hash;
///
/// assert_eq!(key_hash(&"account-7"), key_hash(&"account-7"));
/// assert_ne!(key_hash(&1_u64), key_hash(&2_u64));
/// ```
#[inline]
pub fn key_hash<K: Hash + ?Sized>(key: &K) -> u64 {
    ahash::RandomState::with_seeds(SEEDS[0], SEEDS[1], SEEDS[2], SEEDS[3]).hash_one(key)
}
