//! How a state (or a log's event) becomes the bytes a store keeps.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Encodes and decodes the values a store keeps: an entity's state, or a
/// log's events. [`Json`] is the default.
///
/// ```
/// use ferry::entity::{Codec, Json};
///
/// let bytes = Codec::<Vec<u32>>::encode(&Json, &vec![1, 2]).unwrap();
/// assert_eq!(bytes, b"[1,2]");
/// assert_eq!(Codec::<Vec<u32>>::decode(&Json, &bytes).unwrap(), vec![1, 2]);
/// ```
pub trait Codec<T>: Send + Sync + 'static {
    /// `value` as bytes.
    fn encode(&self, value: &T) -> Result<Vec<u8>, String>;

    /// `value` as bytes, appended to `bytes`: a shard encodes its writes'
    /// states into buffers it keeps from one write to the next, so a codec
    /// that can write into one saves an allocation a write. By default,
    /// [`encode`](Codec::encode) and a copy. After an error, what `bytes`
    /// holds is not used.
    ///
    /// ```
    /// use ferry::entity::{Codec, Json};
    ///
    /// let mut bytes = b"kept:".to_vec();
    /// Codec::<Vec<u32>>::encode_into(&Json, &vec![1, 2], &mut bytes).unwrap();
    /// assert_eq!(bytes, b"kept:[1,2]");
    /// ```
    fn encode_into(&self, value: &T, bytes: &mut Vec<u8>) -> Result<(), String> {
        bytes.extend_from_slice(&self.encode(value)?);
        Ok(())
    }

    /// The value `bytes` hold.
    fn decode(&self, bytes: &[u8]) -> Result<T, String>;
}

/// JSON through serde: the default. A state stays readable with the
/// store's own tools (`psql`, `redis-cli`), and a field added to the state
/// later (with `#[serde(default)]`) still decodes what was written before.
/// A few bytes more than a binary encoding, beside a round trip.
///
/// ```
/// use ferry::entity::{Codec, Json};
///
/// #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// struct Account { balance: i64 }
///
/// let bytes = Json.encode(&Account { balance: 5 }).unwrap();
/// assert_eq!(bytes, br#"{"balance":5}"#);
/// assert!(Codec::<Account>::decode(&Json, b"not json").is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json;

impl<T: Serialize + DeserializeOwned> Codec<T> for Json {
    fn encode(&self, value: &T) -> Result<Vec<u8>, String> {
        serde_json::to_vec(value).map_err(|err| format!("could not encode as JSON: {err}"))
    }

    fn encode_into(&self, value: &T, bytes: &mut Vec<u8>) -> Result<(), String> {
        serde_json::to_writer(bytes, value)
            .map_err(|err| format!("could not encode as JSON: {err}"))
    }

    fn decode(&self, bytes: &[u8]) -> Result<T, String> {
        serde_json::from_slice(bytes)
            .map_err(|err| format!("could not decode the JSON held: {err}"))
    }
}
