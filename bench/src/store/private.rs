//! `--store postgres` and `--store redis`: a private server started for
//! the run ([`crate::servers`]), its URL then the store's address.

use crate::servers::{Kind, Private};

use super::StoreAddress;

/// What a store opened at a private server not yet started says.
pub const NOT_STARTED: &str =
    "a private store's server is started before the store is opened (StoreAddress::start_private)";

impl StoreAddress {
    /// For a bare `postgres` or `redis`: starts that private server, says
    /// so on stderr (what runs where), and makes this address its URL; the
    /// server stops, and its directory goes, when the answer is dropped.
    /// Any other address is left as it is (`Ok(None)`). The error says
    /// what failed, and what to install when a program is missing.
    pub fn start_private(&mut self) -> Result<Option<Private>, String> {
        let StoreAddress::Private(kind) = *self else {
            return Ok(None);
        };
        let address: fn(String) -> StoreAddress = match kind {
            Kind::Postgres => StoreAddress::Postgres,
            Kind::Redis => StoreAddress::Redis,
            Kind::Kafka => return Err(format!("--store {kind}: not a store")),
        };
        let server = Private::start_said(kind)?;
        *self = address(server.url.clone());
        Ok(Some(server))
    }
}
