//! Starting anywhere (docs/guarantees.md#starting), and a shard that dies.
//!
//! - A factory that fails or panics on one shard fails the whole start,
//!   names that shard and the cause, and leaves no shard thread behind, on
//!   both runtimes.
//! - A host that refuses glommio (64 KiB of locked memory; a seccomp filter
//!   refusing `io_uring_setup`) gets tokio from `Runtime::Auto`, and a
//!   `StartError::Runtime` saying what refused and how to lift it from
//!   `Runtime::Glommio`.
//! - A process confined to one CPU gets one shard, pinned to that CPU, and
//!   may not name another.
//! - A shard whose thread dies hands back every input it never sent.
//!
//! The host limits are set for a child process only: this test binary run
//! again (under `prlimit` or `taskset`, or installing a seccomp filter on
//! itself), so the rest of the suite keeps its own limits. `is_child` says
//! how a child's body is kept from passing without having run.

use std::convert::Infallible;
use std::error::Error as _;
use std::fmt::Display;
use std::future::Future;
use std::io::{self, Read};
use std::pin::Pin;
use std::process::{Command, ExitStatus, Stdio};
use std::rc::Rc;
use std::sync::{mpsc, Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ferry::{Batcher, Engine, FerryError, Outcome, Refused, Runtime, ShardId, StartError};
use futures::channel::oneshot;
use futures::future::join_all;

// ---------------------------------------------------------------------------
// Shard threads of this process
// ---------------------------------------------------------------------------

/// The start of every shard thread's name: `ferry-shard-0`, `ferry-shard-1`…
const SHARD_THREAD_PREFIX: &str = "ferry-shard-";

/// How long the shard threads of a stopped engine may take to be gone. The
/// shards themselves are joined before `try_start` or `join` returns; a
/// runtime's helper thread (glommio's blocking pool, named after the shard
/// it was started from) ends a moment after its shard.
const THREADS_GONE_WITHIN: Duration = Duration::from_millis(500);

/// Tests that start shards in this process hold this, so that one test's
/// count of shard threads never sees another test's shards.
static SHARDS_IN_THIS_PROCESS: Mutex<()> = Mutex::new(());

/// Takes the process's shard threads for the calling test, once those of
/// any earlier test are gone.
fn own_the_shard_threads() -> MutexGuard<'static, ()> {
    let owned = SHARDS_IN_THIS_PROCESS
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let left = shard_threads_left();
    assert!(
        left.is_empty(),
        "shard threads of an earlier test: {left:?}"
    );
    owned
}

/// This process's threads named like a shard's, as (thread id, name), read
/// from `/proc/self/task/*/comm`.
fn shard_threads() -> Vec<(String, String)> {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task lists the threads");
    let mut found = Vec::new();
    for task in tasks.flatten() {
        // A thread that ended since the listing has no `comm` any more.
        let Ok(name) = std::fs::read_to_string(task.path().join("comm")) else {
            continue;
        };
        let name = name.trim_end();
        if name.starts_with(SHARD_THREAD_PREFIX) {
            let tid = task.file_name().to_string_lossy().into_owned();
            found.push((tid, name.to_string()));
        }
    }
    found.sort();
    found
}

/// The shard threads still there after waiting up to `THREADS_GONE_WITHIN`
/// for them to end.
fn shard_threads_left() -> Vec<(String, String)> {
    let deadline = Instant::now() + THREADS_GONE_WITHIN;
    loop {
        let left = shard_threads();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ---------------------------------------------------------------------------
// Factories that fail
// ---------------------------------------------------------------------------

/// What a factory's error says when the store cannot be reached.
const STORE_DOWN: &str = "no route to the store";
/// What a factory's panic says.
const ADDRESS_MISSING: &str = "the store's address is missing";

/// How the factory of the failing shard fails.
#[derive(Clone, Copy, Debug)]
enum Fault {
    ReturnsErr,
    Panics,
}

/// Yields to the shard's runtime once, as a factory awaiting a connection
/// would, so that a factory is really awaited and not just called.
#[derive(Default)]
struct YieldOnce {
    yielded: bool,
}

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A shard's "connect": awaits once, then fails on shard `failing` as
/// `fault` says, and succeeds on every other shard.
async fn connect(shard: ShardId, failing: ShardId, fault: Fault) -> io::Result<()> {
    YieldOnce::default().await;
    if shard != failing {
        return Ok(());
    }
    match fault {
        Fault::ReturnsErr => Err(io::Error::new(io::ErrorKind::ConnectionRefused, STORE_DOWN)),
        Fault::Panics => panic!("{ADDRESS_MISSING}"),
    }
}

async fn echo(_key: u64, inputs: Vec<u64>) -> Result<Vec<u64>, String> {
    Ok(inputs)
}

async fn echo_unkeyed(inputs: Vec<u64>) -> Result<Vec<u64>, String> {
    Ok(inputs)
}

/// Two unpinned shards on `runtime`, whose factories connect first.
fn start_two_shards(
    runtime: Runtime,
    failing: ShardId,
    fault: Fault,
) -> Result<Engine<u64, u64, u64, String>, StartError<io::Error>> {
    Engine::builder()
        .shards(2)
        .pin(false)
        .runtime(runtime)
        .try_start(move |shard| async move {
            connect(shard, failing, fault).await?;
            Ok(echo)
        })
}

/// The start's error, or a panic saying the start should have failed.
fn start_failure<T>(
    started: Result<T, StartError<io::Error>>,
    runtime: Runtime,
) -> StartError<io::Error> {
    match started {
        Ok(_) => panic!("on {runtime}: the start succeeded though a shard's factory failed"),
        Err(err) => err,
    }
}

const BOTH_RUNTIMES: [Runtime; 2] = [Runtime::Glommio, Runtime::Tokio];

#[test]
fn every_factory_is_awaited_on_its_own_shards_thread_and_may_keep_what_is_not_send() {
    let _owned = own_the_shard_threads();
    for runtime in BOTH_RUNTIMES {
        let engine: Engine<u64, u64, String, String> = Engine::builder()
            .shards(2)
            .pin(false)
            .runtime(runtime)
            .try_start(|shard| async move {
                // An `Rc` held across an await: the factory's future stays
                // on its shard's thread.
                let thread = std::thread::current();
                let thread = Rc::new(thread.name().unwrap_or("an unnamed thread").to_string());
                YieldOnce::default().await;
                Ok::<_, io::Error>(move |_key: u64, inputs: Vec<u64>| {
                    let made = format!("{shard}'s factory ran on {thread}");
                    async move { Ok::<_, String>(vec![made; inputs.len()]) }
                })
            })
            .unwrap_or_else(|err| panic!("on {runtime}: {err}"));
        assert_eq!(engine.runtime(), runtime);
        let keys = 0..16;
        assert!(
            keys.clone().any(|key| engine.shard_of(&key).index() == 0)
                && keys.clone().any(|key| engine.shard_of(&key).index() == 1),
            "the keys reach both shards"
        );
        for key in keys {
            let shard = engine.shard_of(&key);
            assert_eq!(
                engine.submit_blocking(key, key),
                Ok(format!("{shard}'s factory ran on ferry-{shard}")),
                "on {runtime}, key {key}"
            );
        }
        drop(engine);
        assert_eq!(shard_threads_left(), [], "on {runtime}, after the engine");
    }
}

#[test]
fn a_factory_error_on_one_shard_fails_the_start_and_leaves_no_shard_thread() {
    let _owned = own_the_shard_threads();
    let failing = ShardId::new(1);
    for runtime in BOTH_RUNTIMES {
        let err = start_failure(
            start_two_shards(runtime, failing, Fault::ReturnsErr),
            runtime,
        );
        match &err {
            StartError::Factory { shard, error } => {
                assert_eq!(*shard, failing, "on {runtime}");
                assert_eq!(error.kind(), io::ErrorKind::ConnectionRefused);
                assert_eq!(error.to_string(), STORE_DOWN);
            }
            other => panic!("on {runtime}: {other:?}"),
        }
        let message = err.to_string();
        assert!(
            message.contains("shard-1") && message.contains(STORE_DOWN),
            "on {runtime}, the message names the shard and the cause: {message}"
        );
        let source = err.source().map(ToString::to_string);
        assert_eq!(source.as_deref(), Some(STORE_DOWN), "on {runtime}");
        assert_eq!(
            shard_threads_left(),
            [],
            "on {runtime}, after the failed start"
        );
    }
}

#[test]
fn a_factory_panic_on_one_shard_fails_the_start_and_leaves_no_shard_thread() {
    let _owned = own_the_shard_threads();
    let failing = ShardId::new(0);
    for runtime in BOTH_RUNTIMES {
        let err = start_failure(start_two_shards(runtime, failing, Fault::Panics), runtime);
        match &err {
            StartError::FactoryPanicked { shard, message } => {
                assert_eq!(*shard, failing, "on {runtime}");
                assert_eq!(message, ADDRESS_MISSING, "on {runtime}");
            }
            other => panic!("on {runtime}: {other:?}"),
        }
        let message = err.to_string();
        assert!(
            message.contains("shard-0")
                && message.contains("panicked")
                && message.contains(ADDRESS_MISSING),
            "on {runtime}, the message names the shard and the panic: {message}"
        );
        assert_eq!(
            shard_threads_left(),
            [],
            "on {runtime}, after the failed start"
        );
    }
}

#[test]
fn a_batchers_factory_error_fails_its_start_and_leaves_no_shard_thread() {
    let _owned = own_the_shard_threads();
    let failing = ShardId::new(1);
    let started = Batcher::<u64, u64, String>::builder()
        .shards(2)
        .pin(false)
        .runtime(Runtime::Glommio)
        .try_start(move |shard| async move {
            connect(shard, failing, Fault::ReturnsErr).await?;
            Ok(echo_unkeyed)
        });
    let err = start_failure(started, Runtime::Glommio);
    match &err {
        StartError::Factory { shard, error } => {
            assert_eq!(
                (*shard, error.to_string()),
                (failing, STORE_DOWN.to_string())
            );
        }
        other => panic!("{other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("shard-1") && message.contains(STORE_DOWN),
        "{message}"
    );
    assert_eq!(shard_threads_left(), []);
}

// ---------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------

/// Names the child body a child process is to run (see `is_child`).
const CHILD_ENV: &str = "FERRY_START_CHILD";
/// A CPU that a child confined to one CPU was not given.
const OTHER_CPU_ENV: &str = "FERRY_START_OTHER_CPU";
/// How long a child may run before it is killed and its parent fails.
const CHILD_DEADLINE: Duration = Duration::from_secs(30);
/// Marks a child's report lines on its stdout: `[child] key = value`.
const REPORT: &str = "[child] ";

/// Child bodies are `#[ignore]`d tests that do nothing unless `CHILD_ENV`
/// names them. A parent test runs one in a child process, which is this
/// very binary run again with `--exact <body> --include-ignored` and
/// `CHILD_ENV` set, under a wrapper (`prlimit`, `taskset`) or not.
///
/// So a plain `cargo test` ignores them (it never lists a body as passed
/// without having run it), and `--ignored` without `CHILD_ENV` returns at
/// once (a body may change its whole process, as the seccomp one does by
/// installing a filter, which only a child may do). Whether a body really ran is the parent's to check, and it does:
/// the child's exit status, libtest's `1 passed`, and every fact it expects
/// among the child's report lines.
fn is_child(body: &str) -> bool {
    let chosen = std::env::var(CHILD_ENV).is_ok_and(|name| name == body);
    if !chosen {
        println!("{body}: not in a child process ({CHILD_ENV} unset), nothing to do");
    }
    chosen
}

/// A child reports one fact per line, on one line whatever the value.
fn report(key: &str, value: impl Display) {
    let value = value.to_string().replace('\n', " ");
    println!("{REPORT}{key} = {value}");
}

/// How a child process ended, and what it printed.
struct ChildRun {
    body: &'static str,
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl ChildRun {
    /// Everything the child printed, for a failure message.
    fn output(&self) -> String {
        format!(
            "child {} ended with {}\n--- stdout\n{}--- stderr\n{}",
            self.body, self.status, self.stdout, self.stderr
        )
    }

    /// The child's test ran, and passed.
    fn assert_passed(&self) {
        assert!(self.status.success(), "{}", self.output());
        assert!(
            self.stdout.contains("1 passed"),
            "the child's body did not run: {}",
            self.output()
        );
    }

    /// What the child reported under `key`.
    fn fact(&self, key: &str) -> &str {
        let prefix = format!("{REPORT}{key} = ");
        self.stdout
            .lines()
            .find_map(|line| Some(&line[line.find(&prefix)? + prefix.len()..]))
            .unwrap_or_else(|| panic!("the child reported no `{key}`: {}", self.output()))
    }
}

/// Reads a child's pipe to its end on another thread, so that a child
/// writing much never blocks on a full pipe.
fn read_to_end(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

/// Runs child body `body` in a child process (see `is_child`), behind
/// `wrapper` (a program and its arguments, which then runs this binary;
/// empty: none), with `env` added; kills it and fails once it has run for
/// `CHILD_DEADLINE`.
fn run_child(wrapper: &[&str], body: &'static str, env: &[(&str, String)]) -> ChildRun {
    let exe = std::env::current_exe().expect("the path of this test binary");
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(&exe);
            command
        }
        None => Command::new(&exe),
    };
    command
        .args(["--exact", body, "--nocapture", "--include-ignored"])
        .args(["--test-threads", "1"])
        .env(CHILD_ENV, body)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) if err.kind() == io::ErrorKind::NotFound && !wrapper.is_empty() => panic!(
            "`{}` is needed to run this test and was not found ({err}); it comes with util-linux",
            wrapper[0]
        ),
        Err(err) => panic!("could not start the child for {body}: {err}"),
    };
    let stdout = read_to_end(child.stdout.take().expect("piped stdout"));
    let stderr = read_to_end(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + CHILD_DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let status = child.wait().expect("the killed child's status");
            let run = ChildRun {
                body,
                status,
                stdout: stdout.join().unwrap_or_default(),
                stderr: stderr.join().unwrap_or_default(),
            };
            panic!(
                "still running after {CHILD_DEADLINE:?}, killed: {}",
                run.output()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    ChildRun {
        body,
        status,
        stdout: stdout.join().expect("the child's stdout"),
        stderr: stderr.join().expect("the child's stderr"),
    }
}

/// A status file's `field:` value (`/proc/self/status` and its kin).
fn status_field(path: &str, field: &str) -> String {
    let status = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{path}: {err}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("{path} has no {field}"))
        .trim()
        .to_string()
}

/// The CPUs of a list such as `0-3,6`.
fn parse_cpu_list(list: &str) -> Vec<usize> {
    let number = |n: &str| {
        n.parse::<usize>()
            .unwrap_or_else(|err| panic!("{list}: {err}"))
    };
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|part| !part.is_empty()) {
        match part.split_once('-') {
            Some((first, last)) => cpus.extend(number(first)..=number(last)),
            None => cpus.push(number(part)),
        }
    }
    cpus
}

/// The soft and hard locked-memory limits of this process, in bytes, from
/// `/proc/self/limits` (e.g. `65536 65536`).
fn locked_memory_limits() -> String {
    let limits = std::fs::read_to_string("/proc/self/limits").expect("/proc/self/limits");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max locked memory"))
        .expect("a locked-memory line in /proc/self/limits");
    let values: Vec<&str> = line["Max locked memory".len()..]
        .split_whitespace()
        .take(2)
        .collect();
    values.join(" ")
}

/// The outputs of the few inputs a child's engine serves, as the child
/// reports them.
fn served(engine: &Engine<u64, u64, u64, String>) -> String {
    let outputs: Vec<Result<u64, String>> = (1..=5)
        .map(|key| engine.submit_blocking(key, key * 10))
        .map(|outcome| outcome.map_err(|err| err.to_string()))
        .collect();
    format!("{outputs:?}")
}

/// What `served` reports when every input is answered.
fn all_served() -> String {
    let outputs: Vec<Result<u64, String>> = (1..=5).map(|key| Ok(key * 10)).collect();
    format!("{outputs:?}")
}

/// Two unpinned echo shards on `runtime`.
fn start_echo(runtime: Runtime) -> Result<Engine<u64, u64, u64, String>, StartError> {
    Engine::builder()
        .shards(2)
        .pin(false)
        .runtime(runtime)
        .start(|_shard| echo)
}

/// In a child whose host refuses glommio: what `Runtime::Auto` starts and
/// serves, and what `Runtime::Glommio` says.
fn report_auto_then_glommio() {
    match start_echo(Runtime::Auto) {
        Ok(engine) => {
            report("auto.runtime", engine.runtime());
            report("auto.served", served(&engine));
        }
        Err(err) => report("auto.runtime", format!("none, the start failed: {err}")),
    }
    match start_echo(Runtime::Glommio) {
        Ok(engine) => report(
            "glommio.error",
            format!("none, it runs {}", engine.runtime()),
        ),
        Err(err) => {
            let variant = match &err {
                StartError::Runtime { .. } => "Runtime".to_string(),
                other => format!("{other:?}"),
            };
            report("glommio.error", variant);
            report("glommio.message", err);
        }
    }
}

/// Asserts what `report_auto_then_glommio` saw: tokio served, and glommio's
/// error names each of `needles`.
fn assert_auto_fell_back_and_glommio_explained(child: &ChildRun, needles: &[&str]) {
    assert_eq!(child.fact("auto.runtime"), "tokio", "{}", child.output());
    assert_eq!(
        child.fact("auto.served"),
        all_served(),
        "{}",
        child.output()
    );
    assert_eq!(child.fact("glommio.error"), "Runtime", "{}", child.output());
    let message = child.fact("glommio.message");
    for needle in needles {
        assert!(message.contains(needle), "`{needle}` in: {message}");
    }
}

// --- 64 KiB of locked memory ------------------------------------------------

#[test]
fn with_64_kib_of_locked_memory_auto_runs_tokio_and_glommio_says_how_to_lift_the_limit() {
    let child = run_child(
        &["prlimit", "--memlock=65536:65536"],
        "child_with_64_kib_of_locked_memory",
        &[],
    );
    child.assert_passed();
    assert_eq!(child.fact("memlock"), "65536 65536", "soft and hard limits");
    assert_auto_fell_back_and_glommio_explained(
        &child,
        &["shard-0", "locked-memory limit is 64 KiB", "ulimit -l"],
    );
}

#[test]
#[ignore = "a child body, run by with_64_kib_of_locked_memory_auto_runs_tokio_and_glommio_says_how_to_lift_the_limit"]
fn child_with_64_kib_of_locked_memory() {
    if !is_child("child_with_64_kib_of_locked_memory") {
        return;
    }
    report("memlock", locked_memory_limits());
    report_auto_then_glommio();
}

// --- io_uring refused by seccomp --------------------------------------------

#[test]
fn with_io_uring_refused_by_seccomp_auto_runs_tokio_and_glommio_names_the_policy() {
    let child = run_child(&[], "child_with_io_uring_refused_by_seccomp", &[]);
    child.assert_passed();
    assert_eq!(child.fact("seccomp"), "2", "the child runs under a filter");
    assert_eq!(child.fact("no_new_privs"), "1");
    assert_auto_fell_back_and_glommio_explained(&child, &["shard-0", "io_uring", "seccomp"]);
}

#[test]
#[ignore = "a child body, run by with_io_uring_refused_by_seccomp_auto_runs_tokio_and_glommio_names_the_policy"]
fn child_with_io_uring_refused_by_seccomp() {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};

    if !is_child("child_with_io_uring_refused_by_seccomp") {
        return;
    }
    // As Docker's default profile does: io_uring_setup fails with EPERM,
    // every other call is allowed. The filter holds for this thread and
    // every thread it starts afterwards, so for every shard.
    let arch =
        TargetArch::try_from(std::env::consts::ARCH).expect("an architecture seccompiler knows");
    let refuse_io_uring = SeccompFilter::new(
        [(libc::SYS_io_uring_setup, vec![])].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .expect("a valid filter");
    let program: BpfProgram = refuse_io_uring.try_into().expect("a compiled filter");
    seccompiler::apply_filter(&program).expect("the filter installed (with no_new_privs)");
    report(
        "seccomp",
        status_field("/proc/thread-self/status", "Seccomp"),
    );
    report(
        "no_new_privs",
        status_field("/proc/thread-self/status", "NoNewPrivs"),
    );
    report_auto_then_glommio();
}

// --- one CPU ----------------------------------------------------------------

#[test]
fn confined_to_one_cpu_the_default_is_one_shard_running_there_and_other_cpus_are_refused() {
    let ours = parse_cpu_list(&status_field(
        "/proc/thread-self/status",
        "Cpus_allowed_list",
    ));
    let cpu = *ours.iter().max().expect("this thread may run somewhere");
    // A CPU outside the child's set: another of ours if we have one (so it
    // exists on this machine), else one past it.
    let other = ours.iter().copied().find(|&c| c != cpu).unwrap_or(cpu + 1);
    let child = run_child(
        &["taskset", "-c", &cpu.to_string()],
        "child_confined_to_one_cpu",
        &[(OTHER_CPU_ENV, other.to_string())],
    );
    child.assert_passed();
    assert_eq!(child.fact("process.cpus"), cpu.to_string(), "taskset took");
    for runtime in ["auto", "tokio"] {
        assert_eq!(child.fact(&format!("{runtime}.shards")), "1", "{runtime}");
        assert_eq!(
            child.fact(&format!("{runtime}.served")),
            "Ok(70)",
            "{runtime}"
        );
        // Every thread named like shard 0 (glommio's helper thread is named
        // after the thread that started it) runs on that CPU only.
        let threads = child.fact(&format!("{runtime}.shard_threads"));
        assert!(!threads.is_empty(), "{runtime}: no shard thread seen");
        for thread in threads.split(", ") {
            assert_eq!(
                thread,
                format!("ferry-shard-0 on {cpu}"),
                "{runtime}: {threads}"
            );
        }
    }
    assert_eq!(child.fact("tokio.ran_on"), "tokio");
    assert_eq!(child.fact("other_cpu.field"), "cpus");
    let message = child.fact("other_cpu.message");
    for needle in [format!("CPU {other}"), format!("[{cpu}]")] {
        assert!(
            message.contains(&needle),
            "`{needle}` (the CPU asked for, the usable set) in: {message}"
        );
    }
}

/// The threads of this process named like a shard, each with the CPUs it
/// may run on: `ferry-shard-0 on 1, …`.
fn shard_threads_and_cpus() -> String {
    let threads: Vec<String> = shard_threads()
        .into_iter()
        .map(|(tid, name)| {
            let status = format!("/proc/self/task/{tid}/status");
            format!("{name} on {}", status_field(&status, "Cpus_allowed_list"))
        })
        .collect();
    threads.join(", ")
}

#[test]
#[ignore = "a child body, run by confined_to_one_cpu_the_default_is_one_shard_running_there_and_other_cpus_are_refused"]
fn child_confined_to_one_cpu() {
    if !is_child("child_confined_to_one_cpu") {
        return;
    }
    let other: usize = std::env::var(OTHER_CPU_ENV)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("{OTHER_CPU_ENV} names a CPU (set by the parent)"));
    report(
        "process.cpus",
        status_field("/proc/thread-self/status", "Cpus_allowed_list"),
    );
    for runtime in [Runtime::Auto, Runtime::Tokio] {
        // The defaults: as many shards as usable CPUs, unpinned, so the
        // shard runs where the process may (here, its one CPU).
        let engine: Engine<u64, u64, u64, String> = Engine::builder()
            .runtime(runtime)
            .start(|_shard| echo)
            .unwrap_or_else(|err| panic!("on {runtime}: {err}"));
        report(&format!("{runtime}.shards"), engine.shards());
        report(&format!("{runtime}.ran_on"), engine.runtime());
        let served = engine.submit_blocking(7, 70).map_err(|err| err.to_string());
        report(&format!("{runtime}.served"), format!("{served:?}"));
        report(
            &format!("{runtime}.shard_threads"),
            shard_threads_and_cpus(),
        );
        drop(engine);
        let left = shard_threads_left();
        assert!(left.is_empty(), "on {runtime}, after the engine: {left:?}");
    }
    let refused = Engine::<u64, u64, u64, String>::builder()
        .cpus([other])
        .start(|_shard| echo);
    match refused {
        Err(StartError::Config(err)) => {
            report("other_cpu.field", err.field);
            report("other_cpu.message", StartError::<Infallible>::Config(err));
        }
        Err(err) => report("other_cpu.field", format!("none, another error: {err:?}")),
        Ok(engine) => report(
            "other_cpu.field",
            format!("none, it started on {}", engine.runtime()),
        ),
    }
}

// ---------------------------------------------------------------------------
// A shard that dies
// ---------------------------------------------------------------------------

/// The key whose comparison panics.
const FATAL: u64 = 13;

/// A key whose equality panics when key `FATAL` is compared. Keys are
/// compared on the shard, to find a key's lane, and only for a lane of the
/// same hash: so the first input of key `FATAL` makes its lane, and the
/// second one, compared with it, takes the shard's thread down.
#[derive(Clone, Debug)]
struct FragileKey(u64);

impl std::hash::Hash for FragileKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialEq for FragileKey {
    fn eq(&self, other: &Self) -> bool {
        assert!(
            self.0 != FATAL && other.0 != FATAL,
            "comparing key {FATAL} panicked"
        );
        self.0 == other.0
    }
}

impl Eq for FragileKey {}

/// An outcome in a form that compares, with the input of a refusal.
#[derive(Debug, PartialEq)]
enum Seen {
    Answered(u64),
    Refused(u64, Refused),
    Aborted,
    Other(String),
}

fn seen(outcome: Outcome<u64, u64, String>) -> Seen {
    match outcome {
        Ok(output) => Seen::Answered(output),
        Err(FerryError::Refused { input, reason }) => Seen::Refused(input, reason),
        Err(FerryError::Aborted) => Seen::Aborted,
        Err(other) => Seen::Other(format!("{other:?}")),
    }
}

/// How long the dying shard's callers may take to hear, all of them.
const ANSWERED_WITHIN: Duration = Duration::from_secs(10);

/// The outcomes of `submits`, in order, or a failure if any is not there
/// within `ANSWERED_WITHIN` (they are awaited on another thread, which is
/// left behind if one never comes).
fn outcomes_in_time(submits: Vec<ferry::Submit<u64, u64, String>>) -> Vec<Seen> {
    let (done, outcomes) = mpsc::channel();
    std::thread::spawn(move || {
        let all = futures::executor::block_on(join_all(submits));
        let _ = done.send(all.into_iter().map(seen).collect::<Vec<_>>());
    });
    outcomes
        .recv_timeout(ANSWERED_WITHIN)
        .unwrap_or_else(|_| panic!("a caller still waits after {ANSWERED_WITHIN:?}"))
}

/// Polls `check` for up to a few seconds; whether it came true.
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// One shard with one slot, whose batch function holds every batch until
/// `release` fires: the first batch stays in flight and everything after it
/// waits. `started` receives each batch's inputs as it starts.
fn held_engine(
    runtime: Runtime,
    started: mpsc::Sender<Vec<u64>>,
    release: oneshot::Receiver<()>,
) -> Engine<FragileKey, u64, u64, String> {
    let started = Arc::new(Mutex::new(started));
    let release = Arc::new(Mutex::new(Some(release)));
    Engine::builder()
        .shards(1)
        .pin(false)
        .max_in_flight_batches(1)
        .runtime(runtime)
        .start(move |_shard| {
            let (started, release) = (Arc::clone(&started), Arc::clone(&release));
            move |_key: FragileKey, inputs: Vec<u64>| {
                let _ = started.lock().unwrap().send(inputs.clone());
                let release = release.lock().unwrap().take();
                async move {
                    if let Some(release) = release {
                        let _ = release.await;
                    }
                    Ok::<_, String>(inputs)
                }
            }
        })
        .unwrap_or_else(|err| panic!("on {runtime}: {err}"))
}

/// Keys 2..=40 but `FATAL`, three inputs each (`key * 100 + n`): they wait
/// in their lanes while the first batch holds the only slot.
fn waiting_inputs() -> Vec<(u64, u64)> {
    (2..=40)
        .filter(|&key| key != FATAL)
        .flat_map(|key| (0..3).map(move |n| (key, key * 100 + n)))
        .collect()
}

fn a_dying_shard_hands_back_what_it_never_sent(runtime: Runtime) {
    let _owned = own_the_shard_threads();
    let (started, batches) = mpsc::channel();
    let (release, held) = oneshot::channel();
    let engine = held_engine(runtime, started, held);
    assert_eq!(engine.runtime(), runtime);

    // In flight: key 1's batch, held.
    let in_flight = engine.submit(FragileKey(1), 100);
    assert_eq!(
        batches.recv_timeout(Duration::from_secs(5)),
        Ok(vec![100]),
        "on {runtime}: the first batch started"
    );
    // Waiting in lanes: key FATAL's first input (its lane), then many more.
    let mut never_sent = vec![(1300, engine.submit(FragileKey(FATAL), 1300))];
    for (key, input) in waiting_inputs() {
        never_sent.push((input, engine.submit(FragileKey(key), input)));
    }
    let admitted = never_sent.len() as u64;
    assert!(
        eventually(|| engine.stats().shards[0].waiting == admitted),
        "on {runtime}: {admitted} inputs wait in lanes: {:?}",
        engine.stats().shards[0]
    );
    // Key FATAL's second input is compared with its lane: the shard dies.
    // What is submitted right behind it waits in the intake, or is refused
    // at the door once the shard is gone.
    let fatal = engine.submit(FragileKey(FATAL), 1301);
    for key in 50..100 {
        never_sent.push((key * 100, engine.submit(FragileKey(key), key * 100)));
    }

    let (inputs, submits): (Vec<u64>, Vec<_>) = never_sent.into_iter().unzip();
    let inputs_count = inputs.len() as u64;
    let mut all = vec![in_flight, fatal];
    all.extend(submits);
    let mut outcomes = outcomes_in_time(all).into_iter();
    let (in_flight, fatal) = (outcomes.next(), outcomes.next());
    assert_eq!(
        in_flight,
        Some(Seen::Aborted),
        "on {runtime}: the batch in flight"
    );
    let never_sent: Vec<(u64, Seen)> = inputs.into_iter().zip(outcomes).collect();
    let handed_back: Vec<(u64, Seen)> = never_sent
        .iter()
        .map(|(input, _)| (*input, Seen::Refused(*input, Refused::Closed)))
        .collect();
    assert_eq!(
        never_sent, handed_back,
        "on {runtime}: every input never sent"
    );

    assert!(
        eventually(|| engine.stats().shards[0].stopped == 1),
        "on {runtime}: the shard is marked stopped: {:?}",
        engine.stats().shards[0]
    );
    assert_eq!(
        seen(engine.submit_blocking(FragileKey(2), 7777)),
        Seen::Refused(7777, Refused::Closed),
        "on {runtime}: a submit after the shard died"
    );
    // The figures say the same: one input aborted (the batch in flight),
    // every other one refused `Closed`, none answered.
    let shard = engine.stats().shards[0];
    assert_eq!(
        (shard.aborted, shard.answered, shard.refused_closed),
        (1, 0, shard.refused),
        "on {runtime}: {shard:?}"
    );
    assert_eq!(shard.refused, inputs_count + 2, "on {runtime}: {shard:?}");
    drop(release);
    engine.close();
    engine.join();
    drop(engine);
    assert_eq!(shard_threads_left(), [], "on {runtime}, after join");

    // The input whose own admission panicked was never sent either.
    assert_eq!(
        fatal,
        Some(Seen::Refused(1301, Refused::Closed)),
        "on {runtime}: the input whose key's comparison killed the shard was never sent, \
         so it is handed back like the others"
    );
}

#[test]
fn a_dying_glommio_shard_hands_back_what_it_never_sent() {
    a_dying_shard_hands_back_what_it_never_sent(Runtime::Glommio);
}

#[test]
fn a_dying_tokio_shard_hands_back_what_it_never_sent() {
    a_dying_shard_hands_back_what_it_never_sent(Runtime::Tokio);
}
