//! What an idle engine costs: the CPU time of an engine with nothing
//! submitted, over a window after its shards have settled, as a share of
//! one CPU.
//!
//! ```text
//! cargo run --release -p ferry-bench --example idle -- [seconds] [shards] [auto|glommio|tokio]
//! ```
//!
//! Defaults: 10 s, 2 shards, `Runtime::Auto`, every other setting at the
//! builder's default. The engine gets one input per shard first (so every
//! shard has run a batch, as a service's have), then the window starts one
//! second later, once the shards have gone through spinning and dozing to
//! their park. It prints the share of one CPU the whole process used over
//! the window (this program's main thread sleeps through it).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use ferry::{Engine, Runtime};
use ferry_bench::base::cpu::{process_cpu_time, Threads};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("idle: {problem}\nusage: idle [seconds] [shards] [auto|glommio|tokio]");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let seconds: u64 = parse(args.first(), 10, "seconds")?;
    let shards: usize = parse(args.get(1), 2, "shards")?;
    let runtime = match args.get(2).map(String::as_str) {
        None | Some("auto") => Runtime::Auto,
        Some("glommio") => Runtime::Glommio,
        Some("tokio") => Runtime::Tokio,
        Some(other) => return Err(format!("unknown runtime `{other}`")),
    };
    let engine: Engine<u64, u64, u64, String> = Engine::builder()
        .shards(shards)
        .runtime(runtime)
        .start(|_shard| |_key: u64, inputs: Vec<u64>| async move { Ok(inputs) })
        .map_err(|err| err.to_string())?;
    futures::executor::block_on(async {
        for key in 0..shards as u64 * 4 {
            engine
                .submit(key, key)
                .await
                .map_err(|err| err.to_string())?;
        }
        Ok::<_, String>(())
    })?;
    std::thread::sleep(Duration::from_secs(1));
    let (threads, cpu, since) = (Threads::now(), process_cpu_time(), Instant::now());
    std::thread::sleep(Duration::from_secs(seconds));
    let process = process_cpu_time().saturating_sub(cpu);
    let split = Threads::now().since(&threads);
    let window = since.elapsed();
    // The two accounts differ a little (the process clock and the threads'
    // schedstat); the larger is shown.
    let used = process.max(split.system + split.load + split.store);
    println!(
        "idle engine, {shards} shards on {}: {:.4}% of one CPU over {:.1} s ({} µs of CPU: the process clock says {} µs, its threads' schedstat {} µs)",
        engine.runtime(),
        100.0 * used.as_secs_f64() / window.as_secs_f64(),
        window.as_secs_f64(),
        used.as_micros(),
        process.as_micros(),
        (split.system + split.load + split.store).as_micros(),
    );
    engine.close();
    engine.join();
    Ok(())
}

fn parse<T: std::str::FromStr>(arg: Option<&String>, default: T, what: &str) -> Result<T, String> {
    match arg {
        None => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| format!("{what} must be a number, not `{text}`")),
    }
}
