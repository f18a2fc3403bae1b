//! Which shard owns a key (docs/guarantees.md#terms): `key_hash(key) % shards`.
//!
//! The hash is computed once, on the caller's thread, and travels with the
//! input so the shard finds the lane without hashing again. Every guarantee
//! is local to a key and a key always lands on the same shard, so sharding
//! changes none of them.

use std::hash::Hash;

use ferry_shard::key_hash;

/// The index of the shard that owns `key` among `shards`, and the key's hash.
///
/// ```
/// let (shard, hash) = ferry::route(&"account-42", 4);
/// assert!(shard < 4);
/// assert_eq!(shard as u64, hash % 4);
/// assert_eq!(ferry::route(&"account-42", 4), (shard, hash));
/// ```
///
/// # Panics
/// If `shards` is zero (an engine always has at least one).
#[inline]
pub fn route<K: Hash + ?Sized>(key: &K, shards: usize) -> (usize, u64) {
    assert!(shards > 0, "an engine has at least one shard");
    let hash = key_hash(key);
    ((hash % shards as u64) as usize, hash)
}
