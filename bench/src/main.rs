//! `ferry-load`: puts load on Ferry and the systems it is compared with, all
//! against one simulated store, and reports throughput, batch sizes and
//! latency. With no flags: the contended comparison (1,000 keys, zipf:1.0,
//! 1 ms round trips, 2,000 closed-loop clients), all four systems, in under
//! 30 seconds.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;

use ferry_bench::dist::{KeyDist, KeySampler};
use ferry_bench::duration::{format_duration, parse_duration};
use ferry_bench::load::{Load, Mode};
use ferry_bench::report::{self, JsonReport, RunResult};
use ferry_bench::store::Store;
use ferry_bench::systems::{Settings, SystemKind};

/// Load-test Ferry against a simulated store and compare it with a
/// single-lock design, batch-aint-one, and no batching at all.
///
/// Every system talks to the same simulated store: per key, one read and one
/// conditional write per batch, each one round trip of --store-rtt. A write
/// from a stale version is a conflict, counted and retried. Systems run one
/// after another under the same load; the table shows each one's throughput,
/// mean batch size, latency percentiles and counts. Exits non-zero if any
/// input was lost or ferry saw a conflict.
///
/// Durations are whole numbers with a unit: 500us, 2ms, 10s (or 0).
#[derive(Debug, Parser)]
#[command(name = "ferry-load", version, max_term_width = 100)]
struct Args {
    /// Ferry shards (threads, pinned to CPUs 0..N when the machine has N)
    /// [default: the CPUs this process may use]
    #[arg(long, value_name = "N")]
    shards: Option<usize>,

    /// Run ferry once per shard count in this list, e.g. 1,2,4; the other
    /// systems run once. Overrides --shards
    #[arg(long, value_name = "N,N,..", value_delimiter = ',')]
    sweep_shards: Vec<usize>,

    /// Distinct keys, 0..K
    #[arg(long, value_name = "K", default_value_t = 1_000)]
    keys: u64,

    /// How inputs pick their key: uniform, or zipf:S (key k has weight 1/(k+1)^S)
    #[arg(long, value_name = "uniform|zipf:S", default_value = "zipf:1.0")]
    dist: KeyDist,

    /// Open loop: inputs per second over all generators, latency counted from
    /// each input's intended send time. 0 = closed loop with --clients
    #[arg(long, value_name = "INPUTS/S", default_value_t = 0.0)]
    rate: f64,

    /// Closed loop: clients, each with one input outstanding at a time
    #[arg(long, value_name = "C", default_value_t = 2_000)]
    clients: usize,

    /// Measured time per system (after the warm-up)
    #[arg(long, value_name = "D", value_parser = parse_duration, default_value = "4s")]
    duration: Duration,

    /// Load before measuring, per system
    #[arg(long, value_name = "D", value_parser = parse_duration, default_value = "1s")]
    warmup: Duration,

    /// Round trip time of one store request (a batch makes two: read, write).
    /// 0 answers at once, measuring the systems' own overhead
    #[arg(long, value_name = "D", value_parser = parse_duration, default_value = "1ms")]
    store_rtt: Duration,

    /// Leave ferry's shards unpinned (by default each is pinned to its CPU
    /// when the machine has enough)
    #[arg(long)]
    no_pin: bool,

    /// How long a ferry shard that ran out of work keeps looking for more
    /// (yielding its CPU between looks) before it dozes: no wake-up needed
    /// for what arrives meanwhile, for CPU time nobody else wanted
    #[arg(long, value_name = "D", value_parser = parse_duration, default_value = "50us")]
    spin_before_park: Duration,

    /// How long a ferry shard then dozes (blocked on a futex, woken by input
    /// or a store answer with one system call) before it parks in glommio,
    /// whose sleep and wake-up cost far more
    #[arg(long, value_name = "D", value_parser = parse_duration, default_value = "2ms")]
    doze_before_park: Duration,

    /// Inputs per batch at most (every batching system)
    #[arg(long, value_name = "B", default_value_t = 64)]
    max_batch_size: usize,

    /// How long a partial batch waits for more inputs (ferry, single-lock)
    #[arg(long, value_name = "D", value_parser = parse_duration, default_value = "0")]
    max_batch_delay: Duration,

    /// Batches in flight at once per ferry shard; single-lock runs this many
    /// workers per shard (of the largest shard count measured)
    #[arg(long, value_name = "M", default_value_t = 256)]
    max_in_flight: usize,

    /// Waiting inputs at most: per shard for ferry, in total for single-lock,
    /// per key for batch-aint-one
    #[arg(long, value_name = "Q", default_value_t = 1_000_000)]
    max_queueing: usize,

    /// Systems to run, in order
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "ferry,single-lock,batch-aint-one,unbatched"
    )]
    compare: Vec<SystemKind>,

    /// Also write the results as JSON to this file
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,

    /// Load generator threads (separate from shards and runtimes)
    #[arg(long, value_name = "G", default_value_t = 2)]
    generators: usize,

    /// Worker threads of the tokio runtime used by single-lock and batch-aint-one
    #[arg(long, value_name = "T", default_value_t = 2)]
    tokio_workers: usize,

    /// After the measured time, how long to wait for outstanding inputs
    /// before counting them lost
    #[arg(long, value_name = "D", value_parser = parse_duration, default_value = "10s")]
    drain_timeout: Duration,

    /// Open loop: inputs awaited at once per generator at most; past it,
    /// sending waits (and the wait counts in the latency)
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    outstanding_max: usize,

    /// Seed for key choice
    #[arg(long, value_name = "SEED", default_value_t = 1)]
    seed: u64,
}

impl Args {
    fn check(&self) -> Result<(), String> {
        let at_least_one = [
            ("--keys", self.keys as usize),
            ("--max-batch-size", self.max_batch_size),
            ("--max-in-flight", self.max_in_flight),
            ("--max-queueing", self.max_queueing),
            ("--generators", self.generators),
            ("--tokio-workers", self.tokio_workers),
            ("--outstanding-max", self.outstanding_max),
        ];
        for (flag, value) in at_least_one {
            if value == 0 {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        if self.shards == Some(0) || self.sweep_shards.contains(&0) {
            return Err("a shard count must be at least 1".to_string());
        }
        if !(self.rate.is_finite() && self.rate >= 0.0) {
            return Err("--rate must be 0 (closed loop) or a positive number of inputs/s".into());
        }
        if self.rate == 0.0 && self.clients == 0 {
            return Err("--clients must be at least 1 in a closed loop (--rate 0)".to_string());
        }
        if self.duration.is_zero() {
            return Err("--duration must be more than 0".to_string());
        }
        if self.compare.is_empty() {
            return Err("--compare names no system".to_string());
        }
        Ok(())
    }

    fn shard_counts(&self) -> Vec<usize> {
        if !self.sweep_shards.is_empty() {
            return self.sweep_shards.clone();
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        vec![self.shards.unwrap_or(cpus)]
    }

    fn describe(&self) -> String {
        let load = if self.rate > 0.0 {
            format!("open loop {} inputs/s", report::thousands(self.rate as u64))
        } else {
            format!(
                "closed loop {} clients",
                report::thousands(self.clients as u64)
            )
        };
        format!(
            "{} keys {}, store RTT {}, {load}, max batch {}, delay {}, {} per system after {} warm-up, {} generator threads",
            report::thousands(self.keys),
            self.dist,
            format_duration(self.store_rtt),
            self.max_batch_size,
            format_duration(self.max_batch_delay),
            format_duration(self.duration),
            format_duration(self.warmup),
            self.generators,
        )
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(problem) = args.check() {
        eprintln!("ferry-load: {problem}");
        return ExitCode::from(2);
    }
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(problem) => {
            eprintln!("ferry-load: {problem}");
            ExitCode::from(2)
        }
    }
}

/// Runs every system; `Ok(false)` if a run lost inputs or ferry conflicted.
fn run(args: &Args) -> Result<bool, String> {
    let sampler = KeySampler::new(args.dist, args.keys)?;
    let store = Store::start(args.keys, args.store_rtt)
        .map_err(|err| format!("could not start the store thread: {err}"))?;
    let shard_counts = args.shard_counts();
    let settings = Settings {
        max_batch_size: args.max_batch_size,
        max_batch_delay: args.max_batch_delay,
        max_in_flight: args.max_in_flight,
        max_queueing: args.max_queueing,
        tokio_workers: args.tokio_workers,
        pin: !args.no_pin,
        spin_before_park: args.spin_before_park,
        doze_before_park: args.doze_before_park,
    };
    let single_lock_workers = args.max_in_flight * shard_counts.iter().copied().max().unwrap_or(1);
    let load = Load {
        mode: if args.rate > 0.0 {
            Mode::Open {
                rate: args.rate,
                outstanding_max: args.outstanding_max,
            }
        } else {
            Mode::Closed {
                clients: args.clients,
            }
        },
        generators: args.generators,
        sampler: Arc::new(sampler),
        warmup: args.warmup,
        duration: args.duration,
        drain_timeout: args.drain_timeout,
        seed: args.seed,
    };

    eprintln!("ferry-load: {}", args.describe());
    let live = std::io::stderr().is_terminal();
    let mut runs: Vec<RunResult> = Vec::new();
    let mut systems = args.compare.clone();
    systems.dedup();
    for kind in systems {
        let shard_runs: Vec<Option<usize>> = match kind {
            SystemKind::Ferry => shard_counts.iter().copied().map(Some).collect(),
            _ => vec![None],
        };
        for shards in shard_runs {
            let label = match shards {
                Some(1) => format!("{kind} (1 shard)"),
                Some(n) => format!("{kind} ({n} shards)"),
                None => kind.to_string(),
            };
            let result = ferry_bench::run::run(
                kind,
                shards,
                single_lock_workers,
                &settings,
                store,
                &load,
                |progress| {
                    let line = report::progress_line(&label, progress);
                    if live {
                        eprint!("\r{line}\x1b[K");
                        let _ = std::io::stderr().flush();
                    } else {
                        eprintln!("{line}");
                    }
                },
            )?;
            if live {
                eprint!("\r\x1b[K");
            }
            eprintln!(
                "{label}: {} inputs/s, mean batch {:.2}, p99 {} µs, lost {}",
                report::thousands(result.throughput as u64),
                result.mean_batch,
                report::micros(result.p99_us),
                result.lost
            );
            runs.push(result);
        }
    }
    store.stop();

    println!();
    print!("{}", report::table(&runs));
    println!();
    print!("{}", report::ratios(&runs));
    print!("{}", report::store_timing(&runs));
    print!("{}", report::idle_stages(&runs));

    if let Some(path) = &args.json {
        let command = std::env::args().collect::<Vec<_>>().join(" ");
        let json = serde_json::to_string_pretty(&JsonReport {
            command,
            runs: &runs,
        })
        .map_err(|err| format!("could not encode the results: {err}"))?;
        std::fs::write(path, json + "\n")
            .map_err(|err| format!("could not write {}: {err}", path.display()))?;
        eprintln!("ferry-load: wrote {}", path.display());
    }

    let problems = report::problems(&runs);
    for problem in &problems {
        eprintln!("ferry-load: FAILED: {problem}");
    }
    Ok(problems.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The idle-stage and batch-size flags default to the engine's own
    /// defaults, so a run with no flags measures those as shipped (the
    /// in-flight and queue bounds are the tool's own; see
    /// docs/benchmarks.md).
    #[test]
    fn ferry_flags_default_to_the_engine_defaults() {
        let args = Args::try_parse_from(["ferry-load"]).expect("no flags parse");
        assert_eq!(args.spin_before_park, ferry::DEFAULT_SPIN_BEFORE_PARK);
        assert_eq!(args.doze_before_park, ferry::DEFAULT_DOZE_BEFORE_PARK);
        assert_eq!(
            args.max_batch_size,
            ferry::LanesConfig::DEFAULT_MAX_BATCH_SIZE
        );
    }
}
