//! A key as the coordinator reads it back after a run, whatever store
//! holds it (`crate::store::rows`): the library's version and
//! the state the owners folded ([`KeyState`], JSON).

use super::fold::KeyState;

/// A key's row as the coordinator reads it back after a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRow {
    /// The key.
    pub key: u64,
    /// Inputs applied (takes and seqs): the library's version.
    pub version: u64,
    /// The epoch of the owner that took the key last.
    pub owner_epoch: u64,
    /// What the last applied seq was.
    pub last_seq: u64,
    /// Every seq applied, in the order applied.
    pub applied: Vec<u64>,
}

impl StoredRow {
    /// Key `key` at `version`, its state as stored (`None`: never written).
    pub fn decode(key: u64, version: u64, state: Option<&[u8]>) -> Result<StoredRow, String> {
        let state: KeyState = match state {
            Some(bytes) => serde_json::from_slice(bytes).map_err(|err| {
                format!(
                    "key {key}: the state `{}` is not a handover state: {err}",
                    String::from_utf8_lossy(bytes)
                )
            })?,
            None => KeyState::default(),
        };
        Ok(StoredRow {
            key,
            version,
            owner_epoch: state.owner_epoch,
            last_seq: state.last_seq,
            applied: state.seqs(),
        })
    }
}
