//! The store's options, shared by the runs on one store (`compare`,
//! `unkeyed`, `tune`): which store, and the simulated one's round trip and
//! cost per key.

use std::time::Duration;

use clap::Args;

use crate::base::duration::{format_duration, parse_duration};
use crate::store::{Store, StoreAddress};

/// The store every system of a run talks to.
#[derive(Clone, Debug, Args)]
#[command(next_help_heading = "Store")]
pub struct StoreArgs {
    /// The store every system uses: the simulated one, or a PostgreSQL or
    /// Redis server
    ///
    /// sim: simulated in this process.
    /// postgres://USER@HOST:PORT/DATABASE: a PostgreSQL server, where
    /// every system writes through ferry::entity's PostgresStore to a table
    /// ferry_load_entities (with ferry_load_entities_events), dropping one
    /// of that name first, and drops it at the end. redis://HOST:PORT[/DB]:
    /// a Redis server, where every system writes through ferry::entity's
    /// RedisStore to the keys ferry-load-entity:*, deleted first and at the
    /// end. Rows 0..K-1 are the keys; an unkeyed batch writes a row of its
    /// own after them. A real store is reset
    /// to zeros before each system's run and read back after it. On one,
    /// ferry's (and batcher's) shards run on tokio with one connection each;
    /// every other system shares a pool of as many connections as ferry has
    /// at its largest shard count. postgres or redis alone: a private server
    /// started for the run on 127.0.0.1 and stopped at the end
    #[arg(
        long,
        value_name = "sim|postgres[://…]|redis[://…]",
        default_value = "sim"
    )]
    pub store: StoreAddress,

    /// Round trip time of one request to the simulated store
    ///
    /// A batch makes two: read, write. 0 answers at once, measuring the systems' own
    /// overhead. A real store's round trip is its own
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "1ms")]
    pub store_rtt: Duration,

    /// What each request to the simulated store costs beyond its round
    /// trip, per key it touches: a batch's read and write pay it once, a
    /// trip's once per key (no cost without a round trip)
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "5us")]
    pub store_key_cost: Duration,
}

impl StoreArgs {
    /// A real store's client runs on tokio: refuses `--runtime glommio`
    /// with one.
    pub fn check(&self, runtime: ferry::Runtime) -> Result<(), String> {
        if self.store.is_real() && runtime == ferry::Runtime::Glommio {
            return Err(format!(
                "--store {}: a real store's client runs on tokio; use --runtime tokio (or auto)",
                self.store
            ));
        }
        Ok(())
    }

    /// Opens the store for `keys` keys, hands it to `run`, and ends it (a
    /// real store's table or keys removed) whatever `run` did; `run`'s
    /// error comes first, then the clean-up's.
    pub fn run_on<T>(
        &self,
        keys: u64,
        run: impl FnOnce(Store) -> Result<T, String>,
    ) -> Result<T, String> {
        // `--store postgres|redis`: a private server, stopped on return.
        let mut address = self.store.clone();
        let _private = address.start_private()?;
        let store = Store::open(&address, keys, self.store_rtt)?;
        if let Some(sim) = store.as_sim() {
            sim.set_key_cost(self.store_key_cost);
        }
        let ran = run(store);
        let stopped = store.stop();
        let value = ran?;
        stopped.map_err(|problem| format!("cleaning up: {problem}"))?;
        Ok(value)
    }

    /// The store, as a run's heading shows it.
    pub fn describe(&self) -> String {
        match &self.store {
            StoreAddress::Sim => format!(
                "simulated store RTT {} + {} a key",
                format_duration(self.store_rtt),
                format_duration(self.store_key_cost)
            ),
            real => format!("store {real}"),
        }
    }
}
