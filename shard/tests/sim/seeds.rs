//! Playing a simulation over many seeds, as its environment asks:
//!
//! - `FERRY_SIM_SEED=n` plays seed `n` alone, `FERRY_SIM_TRACE=1` printing
//!   every event;
//! - otherwise `FERRY_SIM_SEEDS` seeds (1,000 by default) from
//!   `FERRY_SIM_FIRST` (0), on every core when there are more than the
//!   default; the first seed that fails names the command replaying it.

use std::panic::UnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Seeds played when the environment does not say (a plain `cargo test`).
pub const SEEDS_DEFAULT: u64 = 1_000;

/// What a run counts, summed over seeds to show the simulation reached
/// every case it claims to check.
pub trait Tally: Default {
    /// Adds `other`'s counts to these.
    fn add(&mut self, other: &Self);
}

/// One run: its outcome, or its panic as a failure.
pub fn play<S>(run: impl FnOnce() -> Result<S, String> + UnwindSafe) -> Result<S, String> {
    std::panic::catch_unwind(run).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".to_string());
        Err(format!("panicked: {message}"))
    })
}

/// The number in the variable `name` (`_` allowed between digits), if set.
pub fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.replace('_', "").parse() {
        Ok(number) => Some(number),
        Err(_) => panic!("{name}={value} is not a number"),
    }
}

/// Plays the seeds the environment asks for with `run(seed, trace)`, and
/// fails with `replay(seed)`, the command replaying the lowest seed that
/// broke a check. The summed tally, unless a single seed was asked for.
pub fn play_seeds<S, R>(name: &str, run: R, replay: impl Fn(u64) -> String) -> Option<S>
where
    S: Tally + Send + std::fmt::Debug,
    R: Fn(u64, bool) -> Result<S, String> + Sync,
{
    if let Some(seed) = env_u64("FERRY_SIM_SEED") {
        let trace = std::env::var_os("FERRY_SIM_TRACE").is_some();
        if let Err(message) = run(seed, trace) {
            panic!("seed {seed} failed: {message}\nreplay: {}", replay(seed));
        }
        eprintln!("seed {seed} passed");
        return None;
    }
    let first = env_u64("FERRY_SIM_FIRST").unwrap_or(0);
    let count = env_u64("FERRY_SIM_SEEDS").unwrap_or(SEEDS_DEFAULT);
    let (failure, tally) = play_many(name, first, count, |seed| run(seed, false));
    if let Some((seed, message)) = failure {
        panic!(
            "seed {seed} failed: {message}\nreplay: {}\n\
             (add FERRY_SIM_TRACE=1 and `-- --nocapture` to see every event)",
            replay(seed)
        );
    }
    eprintln!("{name}: {count} seeds from {first} passed: {tally:?}");
    Some(tally)
}

/// Plays `count` seeds from `first` (on all cores when there are more than
/// the default); the lowest failing seed and its message, if any, and the
/// summed tally.
fn play_many<S, R>(name: &str, first: u64, count: u64, run: R) -> (Option<(u64, String)>, S)
where
    S: Tally + Send,
    R: Fn(u64) -> Result<S, String> + Sync,
{
    let threads = if count > SEEDS_DEFAULT {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    };
    let next = AtomicU64::new(first);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<(u64, String)>> = Mutex::new(None);
    let total: Mutex<S> = Mutex::new(S::default());
    let progress_every = (count / 20).max(1_000_000);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut sum = S::default();
                while !stop.load(Ordering::Relaxed) {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= first + count {
                        break;
                    }
                    if (seed - first).is_multiple_of(progress_every) && seed > first {
                        eprintln!("{name}: {} seeds played", seed - first);
                    }
                    match run(seed) {
                        Ok(tally) => sum.add(&tally),
                        Err(message) => {
                            stop.store(true, Ordering::Relaxed);
                            let mut failure = failure.lock().unwrap();
                            if failure.as_ref().is_none_or(|(s, _)| seed < *s) {
                                *failure = Some((seed, message));
                            }
                        }
                    }
                }
                total.lock().unwrap().add(&sum);
            });
        }
    });
    (failure.into_inner().unwrap(), total.into_inner().unwrap())
}
