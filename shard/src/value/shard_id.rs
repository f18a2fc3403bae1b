//! The name of a shard.

use std::fmt;

/// Which shard: `0..shards`. A key's shard is `key_hash(key) % shards`.
///
/// ```
/// use ferry_shard::ShardId;
///
/// let id = ShardId::new(1);
/// assert_eq!(id.index(), 1);
/// assert_eq!(id.to_string(), "shard-1");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardId(usize);

impl ShardId {
    /// The shard numbered `index`.
    pub const fn new(index: usize) -> Self {
        Self(index)
    }

    /// Its number, from 0.
    pub const fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shard-{}", self.0)
    }
}
