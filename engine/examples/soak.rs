//! Soak: a long steady run of the engine, watching memory.
//!
//! Two shards serve about 100,000 keys under a closed-loop load (each caller
//! thread keeps a fixed number of inputs in flight). Every sample period the
//! process's resident memory (`VmRSS`) and the engine's gauges are printed.
//! At the end the engine is closed and every input accounted for, and the
//! verdict says whether memory stayed flat after the warm-up: the largest and
//! smallest RSS sample taken after it differ by at most 10%.
//!
//! ```text
//! cargo run --release -p ferry-engine --example soak -- --duration 10m
//! ```
//!
//! Flags (all optional): `--duration 10m`, `--warmup 1m`, `--sample 10s`,
//! `--keys 100000`, `--callers 2`, `--in-flight 2000` (per caller),
//! `--rtt 50us` (the batch function's simulated round trip),
//! `--hot-per-mille 100` (inputs per thousand sent to 64 hot keys).
//! Exits with status 1 if memory grew or an input was lost.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry::{Engine, FerryError};
use futures::stream::{FuturesUnordered, StreamExt};

/// The hot keys (the first ones of the key space).
const HOT_KEYS: u64 = 64;
/// The most RSS may move after the warm-up, as a fraction of its minimum.
const RSS_GROWTH_MAX: f64 = 0.10;

struct Args {
    duration: Duration,
    warmup: Duration,
    sample: Duration,
    keys: u64,
    callers: usize,
    in_flight: usize,
    rtt: Duration,
    /// Inputs per thousand that go to the few hot keys, so some lanes batch.
    hot_per_mille: u64,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(600),
            warmup: Duration::from_secs(60),
            sample: Duration::from_secs(10),
            keys: 100_000,
            callers: 2,
            in_flight: 2_000,
            rtt: Duration::from_micros(50),
            hot_per_mille: 100,
        }
    }
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{text}` needs a unit (us, ms, s, m)"))?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` does not start with a number"))?;
    match unit {
        "us" => Ok(Duration::from_micros(number)),
        "ms" => Ok(Duration::from_millis(number)),
        "s" => Ok(Duration::from_secs(number)),
        "m" => Ok(Duration::from_secs(number * 60)),
        _ => Err(format!("`{text}`: unit must be us, ms, s or m")),
    }
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args::default();
    let mut words = std::env::args().skip(1);
    while let Some(flag) = words.next() {
        let value = words
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .replace('_', "")
                .parse::<u64>()
                .map_err(|_| format!("{flag}: `{value}` is not a number"))
        };
        match flag.as_str() {
            "--duration" => args.duration = parse_duration(&value)?,
            "--warmup" => args.warmup = parse_duration(&value)?,
            "--sample" => args.sample = parse_duration(&value)?,
            "--rtt" => args.rtt = parse_duration(&value)?,
            "--keys" => args.keys = number()?.max(HOT_KEYS + 1),
            "--callers" => args.callers = number()?.max(1) as usize,
            "--in-flight" => args.in_flight = number()?.max(1) as usize,
            "--hot-per-mille" => args.hot_per_mille = number()?.min(1000),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(args)
}

/// Resident set size of this process in KiB, from `/proc/self/status`.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// What the caller threads counted.
#[derive(Default)]
struct Tally {
    submitted: AtomicU64,
    answered_ok: AtomicU64,
    refused: AtomicU64,
    /// An output that was not the input's own, or an unexpected error.
    wrong: AtomicU64,
}

fn next_random(state: &mut u64) -> u64 {
    // xorshift64*
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn caller(
    engine: Engine<u64, u64, u64, String>,
    args: &Args,
    seed: u64,
    stop: &AtomicBool,
    tally: &Tally,
) {
    let mut random = seed | 1;
    let mut next_input = seed << 40;
    let pick_key = |random: &mut u64| {
        let draw = next_random(random);
        if draw % 1000 < args.hot_per_mille {
            (draw >> 16) % HOT_KEYS
        } else {
            (draw >> 16) % args.keys
        }
    };
    futures::executor::block_on(async {
        let mut running = FuturesUnordered::new();
        loop {
            while !stop.load(Relaxed) && running.len() < args.in_flight {
                let key = pick_key(&mut random);
                next_input += 1;
                let input = next_input;
                tally.submitted.fetch_add(1, Relaxed);
                let submit = engine.submit(key, input);
                running.push(async move { (input, submit.await) });
            }
            let Some((input, outcome)) = running.next().await else {
                break;
            };
            match outcome {
                Ok(output) if output == input + 1 => tally.answered_ok.fetch_add(1, Relaxed),
                Err(FerryError::Refused { input: back, .. }) if back == input => {
                    tally.refused.fetch_add(1, Relaxed)
                }
                _ => tally.wrong.fetch_add(1, Relaxed),
            };
        }
    });
}

fn main() {
    let args = match parse_args() {
        Ok(args) => Arc::new(args),
        Err(message) => {
            eprintln!("soak: {message}");
            std::process::exit(2);
        }
    };
    let rtt = args.rtt;
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .shards(2)
        .pin(false)
        .max_batch_size(64)
        .max_in_flight_batches(64)
        .start(move |_shard| {
            // A per-shard store: one version per key, as a conditional write
            // would keep. It grows to the key space during warm-up.
            let versions: Rc<RefCell<HashMap<u64, u64>>> = Rc::default();
            move |key: u64, inputs: Vec<u64>| {
                let versions = versions.clone();
                async move {
                    glommio::timer::sleep(rtt).await;
                    *versions.borrow_mut().entry(key).or_default() += inputs.len() as u64;
                    Ok::<_, String>(inputs.iter().map(|x| x + 1).collect())
                }
            }
        })
        .expect("engine starts");

    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let callers: Vec<_> = (0..args.callers)
        .map(|index| {
            let (engine, args, stop, tally) =
                (engine.clone(), args.clone(), stop.clone(), tally.clone());
            std::thread::spawn(move || {
                let seed = 0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(index as u64 + 1);
                caller(engine, &args, seed, &stop, &tally)
            })
        })
        .collect();

    println!(
        "soak: {} s, 2 shards, {} keys ({} per mille to {HOT_KEYS} hot ones), {} callers x {} in flight, rtt {:?}, warm-up {} s",
        args.duration.as_secs(),
        args.keys,
        args.hot_per_mille,
        args.callers,
        args.in_flight,
        args.rtt,
        args.warmup.as_secs()
    );
    println!(
        "{:>6} {:>9} {:>7} {:>8} {:>9} {:>12} {:>10}",
        "t_s", "rss_mib", "lanes", "waiting", "in_flight", "answered", "inputs_s"
    );
    let started = Instant::now();
    let mut rss_after_warmup: Vec<u64> = Vec::new();
    let mut answered_before = 0;
    let mut sampled_at = started;
    while started.elapsed() < args.duration {
        let wake = (sampled_at + args.sample).min(started + args.duration);
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
        let now = Instant::now();
        let total = engine.stats().total();
        let rss = rss_kib();
        let rate = (total.answered - answered_before) as f64
            / now.duration_since(sampled_at).as_secs_f64();
        answered_before = total.answered;
        sampled_at = now;
        let elapsed = now.duration_since(started);
        println!(
            "{:>6} {:>9.1} {:>7} {:>8} {:>9} {:>12} {:>10.0}",
            elapsed.as_secs(),
            rss as f64 / 1024.0,
            total.lanes,
            total.waiting,
            total.in_flight,
            total.answered,
            rate
        );
        if elapsed > args.warmup {
            rss_after_warmup.push(rss);
        }
    }

    stop.store(true, Relaxed);
    for caller in callers {
        caller.join().expect("caller thread");
    }
    engine.close();
    engine.join();
    let total = engine.stats().total();
    let submitted = tally.submitted.load(Relaxed);
    let ok = tally.answered_ok.load(Relaxed);
    let refused = tally.refused.load(Relaxed);
    let wrong = tally.wrong.load(Relaxed);
    let lost = submitted - ok - refused - wrong;
    println!(
        "closed: submitted {submitted}, answered {ok}, refused {refused}, wrong {wrong}, lost {lost}; \
         engine admitted {} sent {} answered {}, lanes {}",
        total.admitted, total.sent, total.answered, total.lanes
    );
    let accounted = wrong == 0 && lost == 0 && engine.stats().is_quiet();

    let verdict = match (rss_after_warmup.iter().min(), rss_after_warmup.iter().max()) {
        (Some(&min), Some(&max)) if min > 0 => {
            let growth = (max - min) as f64 / min as f64;
            println!(
                "rss after warm-up: min {:.1} MiB, max {:.1} MiB, spread {:.1}% (limit {:.0}%)",
                min as f64 / 1024.0,
                max as f64 / 1024.0,
                growth * 100.0,
                RSS_GROWTH_MAX * 100.0
            );
            growth <= RSS_GROWTH_MAX
        }
        _ => {
            println!("rss after warm-up: no sample (run longer than the warm-up)");
            false
        }
    };
    let pass = verdict && accounted;
    println!("verdict: {}", if pass { "PASS" } else { "FAIL" });
    if !pass {
        std::process::exit(1);
    }
}
