//! The load's options, shared by the runs that put load on systems
//! (`compare`, `unkeyed`, `tune`): how many keys and how inputs pick them,
//! closed or open loop, how long, and the generator threads behind it.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::base::duration::parse_duration;
use crate::report;
use crate::sources::dist::{KeyDist, KeySampler};
use crate::sources::load::{Load, Mode};

use super::scenarios::OverloadArgs;

/// The load every system of a run gets.
#[derive(Clone, Debug, Args)]
#[command(next_help_heading = "Load")]
pub struct LoadArgs {
    /// Distinct keys, 0..K
    #[arg(long, value_name = "K", default_value_t = 1_000)]
    pub keys: u64,

    /// How inputs pick their key: uniform, or zipf:S (key k has weight 1/(k+1)^S)
    #[arg(long, value_name = "uniform|zipf:S", default_value = "zipf:1.0")]
    pub dist: KeyDist,

    /// Open loop: inputs per second over all generators, latency counted from
    /// each input's intended send time. 0 = closed loop with --clients
    #[arg(long, value_name = "INPUTS/S", default_value_t = 0.0)]
    pub rate: f64,

    /// Closed loop: clients, each with one input outstanding at a time
    #[arg(long, value_name = "C", default_value_t = 2_000)]
    pub clients: usize,

    /// Closed loop: inputs each client hands over in one call
    ///
    /// Each client waits for all of them before its next call (ferry and batcher: submit_many; the
    /// other systems submit each input on its own), like a stream
    /// consumer's poll. 1: one input at a time
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub per_call: usize,

    /// Measured time per system (after the warm-up) [default: 4s; tune,
    /// per point: 2s]
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,

    /// Load before measuring, per system
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "1s")]
    pub warmup: Duration,

    /// Load generator threads (separate from shards and runtimes)
    #[arg(long, hide_short_help = true, value_name = "G", default_value_t = 2)]
    pub generators: usize,

    /// After the measured time, how long to wait for outstanding inputs
    /// before counting them lost
    #[arg(long, hide_short_help = true, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true, default_value = "10s")]
    pub drain_timeout: Duration,

    /// Open loop: inputs awaited at once per generator at most; past it,
    /// sending waits (and the wait counts in the latency)
    #[arg(
        long,
        hide_short_help = true,
        value_name = "N",
        default_value_t = 100_000
    )]
    pub max_outstanding: usize,

    /// Seed for key choice
    #[arg(long, hide_short_help = true, value_name = "SEED", default_value_t = 1)]
    pub seed: u64,
}

impl LoadArgs {
    /// `--duration`, or `default`.
    pub fn duration(&self, default: Duration) -> Duration {
        self.duration.unwrap_or(default)
    }

    /// The load's own limits; `duration` is the measured time, `timeout`
    /// the overload scenario's, if any.
    pub fn check(&self, duration: Duration, timeout: Option<Duration>) -> Result<(), String> {
        let at_least_one = [
            ("--keys", self.keys as usize),
            ("--generators", self.generators),
            ("--max-outstanding", self.max_outstanding),
        ];
        for (flag, value) in at_least_one {
            if value == 0 {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        if !(self.rate.is_finite() && self.rate >= 0.0) {
            return Err("--rate must be 0 (closed loop) or a positive number of inputs/s".into());
        }
        if self.rate == 0.0 && self.clients == 0 {
            return Err("--clients must be at least 1 in a closed loop (--rate 0)".to_string());
        }
        self.check_calls(timeout)?;
        if duration.is_zero() {
            return Err("--duration must be more than 0".to_string());
        }
        Ok(())
    }

    /// `--per-call`: at least 1, and above 1 only in a closed loop where
    /// callers wait for every answer.
    fn check_calls(&self, timeout: Option<Duration>) -> Result<(), String> {
        if self.per_call == 0 {
            return Err("--per-call must be at least 1".to_string());
        }
        if self.per_call > 1 && (self.rate > 0.0 || timeout.is_some()) {
            return Err("--per-call above 1 is for a closed loop without --timeout: a call's inputs are awaited together".to_string());
        }
        Ok(())
    }

    /// Which key each input goes to.
    pub fn sampler(&self) -> Result<KeySampler, String> {
        KeySampler::new(self.dist, self.keys)
    }

    /// The load, measured for `duration`, with the overload scenario's
    /// callers and store.
    pub fn load(&self, sampler: KeySampler, duration: Duration, overload: &OverloadArgs) -> Load {
        let mode = if self.rate > 0.0 {
            Mode::Open {
                rate: self.rate,
                outstanding_max: self.max_outstanding,
            }
        } else {
            Mode::Closed {
                clients: self.clients,
            }
        };
        Load {
            mode,
            generators: self.generators,
            sampler: Arc::new(sampler),
            warmup: self.warmup,
            duration,
            drain_timeout: self.drain_timeout,
            seed: self.seed,
            timeout: overload.timeout,
            slowdown: overload.store_slowdown,
            per_call: self.per_call,
        }
    }

    /// The keys, as a run's heading shows them.
    pub fn describe_keys(&self) -> String {
        format!("{} keys {}", report::thousands(self.keys), self.dist)
    }

    /// Closed or open loop, as a run's heading shows it.
    pub fn describe_loop(&self) -> String {
        if self.rate > 0.0 {
            return format!("open loop {} inputs/s", report::thousands(self.rate as u64));
        }
        let calls = match self.per_call {
            1 => String::new(),
            n => format!(", {n} inputs a call"),
        };
        format!(
            "closed loop {} clients{calls}",
            report::thousands(self.clients as u64)
        )
    }
}
