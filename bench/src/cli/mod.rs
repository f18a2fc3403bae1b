//! `ferry-load`'s command line, the top layer: one subcommand per kind of
//! run, each in its own file with the conversion of its options into what
//! the run needs, and the option groups several share.
//!
//! - [`compare`] (the default, also with no subcommand), [`unkeyed`],
//!   [`tune`], [`handover`], [`kafka`] (feature `kafka`; without it the
//!   subcommand says how to build it);
//! - the groups: [`load`], [`store`], [`engine`] (with the trips'
//!   limits), [`scenarios`] (overload, event time, faults), [`output`];
//! - [`comparison`]: `compare`'s and `unkeyed`'s run, every system in
//!   turn, then the report.

pub mod compare;
pub mod comparison;
pub mod engine;
pub mod handover;
#[cfg(feature = "kafka")]
pub mod kafka;
#[cfg(not(feature = "kafka"))]
#[path = "kafka_unbuilt.rs"]
pub mod kafka;
pub mod load;
pub mod output;
pub mod scenarios;
pub mod store;
pub mod tune;
pub mod unkeyed;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser, Subcommand};

use compare::CompareArgs;
use handover::HandoverArgs;
use kafka::KafkaArgs;
use tune::TuneArgs;
use unkeyed::UnkeyedArgs;

/// Load-test Ferry against a store and compare it with a single-lock design,
/// batch-aint-one (a batching crate from crates.io, version 0.16, at most one
/// batch of a key in flight, on tokio), and no batching at all.
///
/// Every system talks to the same store (--store: simulated, PostgreSQL or
/// Redis): per key a version and a value; per batch one read and one
/// conditional write, each one round trip (of --store-rtt, on the sim). A
/// write from a stale version is a conflict, counted and retried. Systems
/// run one after another under the same load; after each, the store is read
/// back. The table shows each one's throughput, mean batch size, latency
/// percentiles and counts. Exits non-zero if any input was lost, ferry saw a
/// conflict, or a read-back found other inputs than those answered with
/// success.
///
/// With no subcommand, ferry-load runs compare with the options below. The
/// other subcommands: unkeyed (ferry's Batcher against two unkeyed
/// alternatives), tune (a search of ferry-trips' settings), handover (keys
/// moved between owner processes on a real store), kafka (a Kafka topic
/// consumed into PostgreSQL); each has its own --help.
///
/// Durations are a number and a unit: 500us, 2ms, 1.5s (or 0).
#[derive(Debug, Parser)]
#[command(
    name = "ferry-load",
    version,
    max_term_width = 100,
    args_conflicts_with_subcommands = true,
    subcommand_value_name = "COMMAND"
)]
pub struct Cli {
    /// The run, if not the default comparison.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The default comparison's options, with no subcommand.
    #[command(flatten)]
    pub compare: CompareArgs,
}

/// The kinds of run. Each one's help is its options' struct's doc, which a
/// doc on its variant here would replace.
#[derive(Debug, Subcommand)]
#[allow(missing_docs)]
pub enum Command {
    Compare(CompareArgs),
    Unkeyed(UnkeyedArgs),
    Tune(TuneArgs),
    Handover(HandoverArgs),
    Kafka(KafkaArgs),
}

/// Flags of no subcommand that name a kind of run, and the subcommand
/// that is that run.
const MODE_FLAGS: [(&str, &str); 4] = [
    ("--mode", "the kind of comparison is a subcommand: `ferry-load unkeyed …` compares unkeyed batching, `ferry-load compare …` (the default) per-key batching"),
    ("--tune", "the search of ferry-trips' settings is a subcommand: `ferry-load tune …`"),
    ("--handover", "the handover scenario is a subcommand: `ferry-load handover …`"),
    ("--source", "the Kafka run is a subcommand: `ferry-load kafka …`"),
];

impl Cli {
    /// This process's command line, or its error and exit (2).
    pub fn from_env() -> Cli {
        Cli::try_from_args(std::env::args_os()).unwrap_or_else(|err| err.exit())
    }

    /// `argv` read as [`Cli::try_parse_from`] reads it, a flag that names a
    /// kind of run (`--mode`, `--tune`, `--handover`, `--source`) refused
    /// naming the subcommand for it.
    pub fn try_from_args<I, T>(argv: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Cli::try_parse_from(argv).map_err(name_the_subcommand)
    }

    /// The run asked for: the subcommand, or compare.
    pub fn chosen(self) -> Command {
        self.command.unwrap_or(Command::Compare(self.compare))
    }

    /// Runs what was asked for: exit 0 if it passed, 1 if a check failed,
    /// 2 if it could not run.
    pub fn run(self) -> ExitCode {
        let ran = match self.chosen() {
            Command::Compare(args) => args.run(),
            Command::Unkeyed(args) => args.run(),
            Command::Tune(args) => args.run(),
            Command::Handover(args) => args.run(),
            Command::Kafka(args) => args.run(),
        };
        match ran {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(problem) => {
                eprintln!("ferry-load: {problem}");
                ExitCode::from(2)
            }
        }
    }
}

/// `err`, or, for an unknown flag of [`MODE_FLAGS`], the error naming its
/// subcommand.
fn name_the_subcommand(err: clap::Error) -> clap::Error {
    if err.kind() != ErrorKind::UnknownArgument {
        return err;
    }
    let Some(ContextValue::String(given)) = err.get(ContextKind::InvalidArg) else {
        return err;
    };
    let flag = given.split('=').next().unwrap_or_default();
    match MODE_FLAGS.iter().find(|(mode, _)| *mode == flag) {
        Some((_, said)) => {
            Cli::command().error(ErrorKind::UnknownArgument, format!("{flag}: {said}"))
        }
        None => err,
    }
}
