//! Where the handover's keys live: the library's entity store on
//! PostgreSQL or Redis (read back and removed through
//! [`crate::store::rows`]), each key a `version`, an `epoch` (the
//! library's, 0 here) and a state, the [`KeyState`] as JSON.
//!
//! The owners write the keys only through `ferry::entity`
//! ([`start_owner_engine`]); the coordinator, through [`RowStore`], removes
//! what a previous run left, reads the keys back at the end and removes
//! them.
//!
//! | | PostgreSQL | Redis |
//! | --- | --- | --- |
//! | the keys | table `ferry_handover (key, version, epoch, state bytea)`, made by the library (with `ferry_handover_events`, unused) | string `ferry-handover:{k}`, the row `{version}:{epoch}:{state}` |
//! | before and after a run | both tables dropped | every key under the prefix deleted |
//! | read-back | the library's read of keys `0..keys` | the same |

use ferry::entity::{Entities, Options, PostgresStore, RedisStore};
use ferry::{Builder, StartError};

use crate::store::private::NOT_STARTED;
use crate::store::rows::Rows;
use crate::store::{Fence, StoreAddress};

use super::fold::{fold, Fenced, KeyState, Step};
pub use super::row::StoredRow;

/// The table the owners' engines write on PostgreSQL (the library creates
/// it).
pub const TABLE: &str = "ferry_handover";

/// The library's second table, beside [`TABLE`]: a log's events.
pub const EVENTS_TABLE: &str = "ferry_handover_events";

/// The library's prefix of every key the handover writes on Redis.
pub const PREFIX: &str = "ferry-handover";

/// An owner's engine: per key a [`KeyState`], inputs [`Step`]s, each
/// answered a seq or refused [`Fenced`].
pub type OwnerEngine = Entities<u64, Step, u64, Fenced>;

/// The builder of an owner's engine, its shards set.
pub type OwnerBuilder = Builder<u64, Step, Result<u64, Fenced>, ferry::entity::Failure>;

/// Keys an owner's shard remembers: none, so every trip reads its keys
/// before it writes them, as the recipe of `docs/scale-out.md` does ("one
/// read and one conditional write").
///
/// With the library's memory, an owner writes a key it knows without
/// reading it, back to back, while a take must read the key first: its
/// read and its write then almost never fit between two of a zombie's
/// writes, so the take lands only once the zombie is revoked, and the
/// fence (or, in the control, the double application) is seldom met at
/// all. Reading every trip gives the take and the zombie the same odds.
pub const REMEMBER: usize = 0;

/// Starts an owner's engine of `builder` on the store at `address`, its
/// fold the handover's with `fence`, every write under the library's
/// epoch 0 (the owner epoch is in the state), no key remembered
/// ([`REMEMBER`]).
pub fn start_owner_engine(
    address: &StoreAddress,
    builder: OwnerBuilder,
    fence: Fence,
) -> Result<OwnerEngine, String> {
    let options = Options::default().remember(REMEMBER);
    let shown = address.to_string();
    let refused = |err: ferry::entity::StoreError| format!("{shown}: {err}");
    let started = match address {
        StoreAddress::Postgres(url) => {
            let store = PostgresStore::new(url, TABLE).map_err(refused)?;
            builder.start_entities_with::<_, KeyState, _, _>(store, fold(fence), options)
        }
        StoreAddress::Redis(url) => {
            let store = RedisStore::new(url, PREFIX).map_err(refused)?;
            builder.start_entities_with::<_, KeyState, _, _>(store, fold(fence), options)
        }
        StoreAddress::Sim => return Err(NEEDS_A_SERVER.to_string()),
        StoreAddress::Private(_) => return Err(NOT_STARTED.to_string()),
    };
    started.map_err(|err: StartError<_>| err.to_string())
}

/// The coordinator's hold on the keys: set-up, read-back, clean-up.
pub struct RowStore {
    rows: Rows,
    keys: u64,
}

impl RowStore {
    /// Connects to `address` and removes what a previous run left
    /// (PostgreSQL: the tables are dropped; the owners' engines make them
    /// again when they connect).
    pub fn open(address: &StoreAddress, keys: u64) -> Result<Self, String> {
        let name = match address {
            StoreAddress::Postgres(_) => {
                i64::try_from(keys)
                    .map_err(|_| format!("{keys} keys do not fit PostgreSQL's bigint"))?;
                TABLE
            }
            StoreAddress::Redis(_) => PREFIX,
            StoreAddress::Sim => return Err(NEEDS_A_SERVER.to_string()),
            StoreAddress::Private(_) => return Err(NOT_STARTED.to_string()),
        };
        let rows = Rows::at(address, name).ok_or(NEEDS_A_SERVER)??;
        rows.remove()?;
        Ok(RowStore { rows, keys })
    }

    /// Every key written, by key, its state decoded.
    pub fn read_back(&self) -> Result<Vec<StoredRow>, String> {
        self.rows
            .read(0..self.keys)?
            .into_iter()
            .map(|(key, row)| StoredRow::decode(key, row.version, row.state.as_deref()))
            .collect()
    }

    /// Removes every key.
    pub fn remove(&self) -> Result<(), String> {
        self.rows.remove()
    }
}

/// Why the simulated store will not do.
const NEEDS_A_SERVER: &str = "the handover runs owners in separate processes, which share only a real store: use --store postgres://… or --store redis://…";
