//! `ferry-load`: puts load on Ferry and the systems it is compared with, all
//! against one store (simulated, or a PostgreSQL or Redis server with
//! `--store`), and reports throughput, batch sizes and latency. With no
//! subcommand: the contended comparison (1,000 keys, zipf:1.0, 1 ms round
//! trips, 2,000 closed-loop clients), all the per-key systems, in under 30
//! seconds. The subcommands (`ferry-load --help`) and their options are in
//! [`ferry_bench::cli`].

use std::process::ExitCode;

use ferry_bench::cli::Cli;

fn main() -> ExitCode {
    Cli::from_env().run()
}
