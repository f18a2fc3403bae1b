//! `ferry-load kafka` in a build without the feature `kafka`: listed
//! among the subcommands, it says how to build the one that runs.

use clap::Args;

/// A Kafka topic consumed into PostgreSQL by a consumer group (a build
/// with `--features kafka` only)
///
/// This ferry-load is built without the feature `kafka`; `cargo build
/// --release -p ferry-bench --features kafka` builds one that runs it
/// (and lists its options here).
#[derive(Clone, Debug, Args)]
pub struct KafkaArgs {
    /// The run's options, read by a build with the feature `kafka`
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub options: Vec<String>,
}

impl KafkaArgs {
    /// Refuses, saying how to build the run.
    pub fn run(self) -> Result<bool, String> {
        Err("kafka needs the `kafka` feature: cargo build -p ferry-bench --release --features kafka".to_string())
    }
}
