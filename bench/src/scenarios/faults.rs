//! `--fault KIND@AT`: faults at a real store during each system's run, at
//! the same offsets into every system's measured window.
//!
//! - `restart`: the server stopped hard and started again, by the user's
//!   `--restart-command` (run through `sh -c`; `ferry-load` does not own
//!   the server), then waited for until it accepts connections and answers
//!   reads again (at most [`RESTART_WITHIN`]);
//! - `kill-connections`: every client connection but the store's own ended
//!   by the server's own means (PostgreSQL's `pg_terminate_backend`, Redis's
//!   `CLIENT KILL`);
//! - `stall:D`: the traffic of every system held for `D`: with any fault
//!   asked for, the systems' connections go through a loopback TCP proxy
//!   of this tool's own ([`Proxy`]), which during a stall forwards nothing
//!   either way (a chunk it had read as the stall began waits with the
//!   rest), then resumes;
//! - `lose-replies`: every connection the proxy carries loses the next
//!   reply the server sends on it, and is closed: a write whose request
//!   reached the server is applied, and its client cannot know it (the
//!   fault that makes outcomes unknown on purpose, as a failover or a
//!   network cut between the commit and its reply does).
//!
//! The store's own connection (set-up, reset, read-back, the faults' admin
//! work) goes to the server directly, and is made again after a restart.
//!
//! What each fault does to the inputs, as `ferry-load` counts them: those
//! whose write was on the wire when the connection broke have an *unknown*
//! outcome (applied or not). A ferry batch resolves it, fenced, once the
//! store is back (`--retry-unknown`, [`crate::store::resolve`]); another
//! system answers it unknown. Those that found no connection, or failed
//! before their write, get an error (nothing applied). The read-back then checks that every success was
//! applied and that nothing was applied beyond the successes and the
//! unknown outcomes ([`RunResult::read_back_matches`](crate::report::RunResult::read_back_matches)).
//! Per fault, [`FaultSeen`] tells when the store was back and when the
//! first success came after it.

use std::fmt;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::base::duration::{format_duration, parse_duration};
use crate::sources::load::{Measured, TICK};
use crate::store::{Store, CONNECT_TIMEOUT};

/// How long a restart may take, its command and the server's return
/// together, before the run fails.
pub const RESTART_WITHIN: Duration = Duration::from_secs(60);

/// How often the store is tried while it is away after a restart.
const PROBE_EVERY: Duration = Duration::from_millis(20);

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Stop the server hard and start it again (`--restart-command`).
    Restart,
    /// End every client connection but the store's own.
    KillConnections,
    /// Hold all the systems' traffic for this long.
    Stall(Duration),
    /// Lose the next reply on every connection the systems have open, and
    /// close it.
    LoseReplies,
}

/// One `--fault`: what, and when, after the measured window starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What.
    pub kind: FaultKind,
    /// When, from the measured window's start.
    pub at: Duration,
}

impl FromStr for Fault {
    type Err = String;

    /// ```
    /// use std::time::Duration;
    /// use ferry_bench::scenarios::faults::{Fault, FaultKind};
    ///
    /// let stall: Fault = "stall:500ms@4s".parse().unwrap();
    /// assert_eq!(stall, Fault { kind: FaultKind::Stall(Duration::from_millis(500)), at: Duration::from_secs(4) });
    /// assert_eq!(stall.to_string(), "stall:500ms@4s");
    /// assert_eq!("restart@2s".parse::<Fault>().unwrap().kind, FaultKind::Restart);
    /// assert!("reboot@2s".parse::<Fault>().is_err());
    /// assert!("restart".parse::<Fault>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Self, String> {
        let shape = || {
            format!(
                "`{text}`: expected KIND@AT, KIND one of restart, kill-connections, stall:D, lose-replies (e.g. restart@2s, stall:500ms@4s)"
            )
        };
        let (kind, at) = text.rsplit_once('@').ok_or_else(shape)?;
        let at = parse_duration(at).map_err(|err| format!("`{text}`: {err}"))?;
        let kind = match kind {
            "restart" => FaultKind::Restart,
            "kill-connections" => FaultKind::KillConnections,
            "lose-replies" => FaultKind::LoseReplies,
            _ => match kind.strip_prefix("stall:") {
                Some(length) => {
                    let length =
                        parse_duration(length).map_err(|err| format!("`{text}`: {err}"))?;
                    if length.is_zero() {
                        return Err(format!("`{text}`: a stall must last more than 0"));
                    }
                    FaultKind::Stall(length)
                }
                None => return Err(shape()),
            },
        };
        Ok(Fault { kind, at })
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::Restart => f.write_str("restart"),
            FaultKind::KillConnections => f.write_str("kill-connections"),
            FaultKind::Stall(length) => write!(f, "stall:{}", format_duration(*length)),
            FaultKind::LoseReplies => f.write_str("lose-replies"),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.kind, format_duration(self.at))
    }
}

/// The faults of a run, ready to inject: sorted by time, the proxy started
/// and the store's batches routed through it.
#[derive(Debug)]
pub struct Faults {
    faults: Vec<Fault>,
    restart_command: Option<String>,
    proxy: Arc<Proxy>,
}

impl Faults {
    /// Checks `faults` against `store` and `restart_command`, starts the
    /// proxy and routes `store`'s batch connections through it: call it
    /// before any system starts. `Ok(None)` without faults.
    pub fn prepare(
        mut faults: Vec<Fault>,
        restart_command: Option<String>,
        store: Store,
    ) -> Result<Option<Faults>, String> {
        if faults.is_empty() {
            return Ok(None);
        }
        if !store.is_real() {
            return Err("--fault injects faults at a real store: use it with --store postgres://… or --store redis://…".to_string());
        }
        if faults.iter().any(|fault| fault.kind == FaultKind::Restart) {
            match &restart_command {
                Some(command) if !command.trim().is_empty() => {}
                _ => return Err("--fault restart@…: ferry-load does not own the server; give the command that stops it hard and starts it again with --restart-command 'CMD' (run through sh -c)".to_string()),
            }
        }
        faults.sort_by_key(|fault| fault.at);
        let (host, port) = store.server_address()?;
        let upstream = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|err| format!("could not resolve {host}:{port}: {err}"))?
            .next()
            .ok_or_else(|| format!("{host}:{port} resolves to no address"))?;
        let proxy = Proxy::start(upstream)
            .map_err(|err| format!("could not start the proxy for stalls on 127.0.0.1: {err}"))?;
        store.route_through(proxy.address())?;
        Ok(Some(Faults {
            faults,
            restart_command,
            proxy,
        }))
    }

    /// The faults, in order.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// `restart@2s, stall:500ms@4s`.
    pub fn describe(&self) -> String {
        let each: Vec<String> = self.faults.iter().map(Fault::to_string).collect();
        each.join(", ")
    }

    /// The proxy every system's connections go through.
    pub fn proxy(&self) -> &Arc<Proxy> {
        &self.proxy
    }

    /// Injects the faults into `store` on a thread of their own, each at
    /// its offset from `window_start` (a fault not over by the next one's
    /// time delays it).
    pub fn start(&self, store: Store, window_start: Instant) -> Injector {
        let faults = self.faults.clone();
        let command = self.restart_command.clone();
        let proxy = Arc::clone(&self.proxy);
        let thread = std::thread::Builder::new()
            .name("ferry-load-faults".to_string())
            .spawn(move || {
                let mut injected = Vec::with_capacity(faults.len());
                for fault in faults {
                    let due = window_start + fault.at;
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    injected.push(inject(fault, store, command.as_deref(), &proxy)?);
                }
                Ok(injected)
            })
            .expect("could not start the fault thread");
        Injector { thread }
    }
}

impl Drop for Faults {
    fn drop(&mut self) {
        self.proxy.stop();
    }
}

/// The faults of one run under way.
#[derive(Debug)]
pub struct Injector {
    thread: JoinHandle<Result<Vec<Injected>, String>>,
}

impl Injector {
    /// Waits for every fault to be injected and the store to be back.
    pub fn finish(self) -> Result<Vec<Injected>, String> {
        self.thread
            .join()
            .unwrap_or_else(|_| Err("the fault thread panicked".to_string()))
    }
}

/// One fault as injected.
#[derive(Clone, Debug)]
pub struct Injected {
    /// The fault.
    pub fault: Fault,
    /// When it began.
    pub at: Instant,
    /// When the store was back: the server answering again after a
    /// restart, the connections ended, the stall over.
    pub back: Instant,
    /// What it did, in words.
    pub what: String,
}

/// Injects `fault` now.
fn inject(
    fault: Fault,
    store: Store,
    restart_command: Option<&str>,
    proxy: &Proxy,
) -> Result<Injected, String> {
    let at = Instant::now();
    let what = match fault.kind {
        FaultKind::Restart => {
            let command = restart_command.ok_or("no --restart-command")?;
            restart(command)?;
            wait_until_back(store, at)?;
            "stopped and started again by the restart command".to_string()
        }
        FaultKind::KillConnections => {
            let ended = store
                .kill_connections()
                .map_err(|problem| format!("--fault {fault}: {problem}"))?;
            format!("{ended} connections ended")
        }
        FaultKind::Stall(length) => {
            proxy.stall(length);
            std::thread::sleep(length);
            format!("traffic held for {}", format_duration(length))
        }
        FaultKind::LoseReplies => {
            proxy.lose_replies();
            "the next reply on every open connection lost, and the connection closed".to_string()
        }
    };
    Ok(Injected {
        fault,
        at,
        back: Instant::now(),
        what,
    })
}

/// Runs the user's restart command through `sh -c`, its output on this
/// process's standard error, for at most [`RESTART_WITHIN`].
fn restart(command: &str) -> Result<(), String> {
    use std::os::fd::AsFd;
    let output = || {
        std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::null())
    };
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(output())
        .stderr(output())
        .spawn()
        .map_err(|err| format!("--restart-command: could not run sh: {err}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                return Err(format!(
                    "--restart-command `{command}` failed ({status}): the store was not restarted"
                ))
            }
            Ok(None) if started.elapsed() > RESTART_WITHIN => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "--restart-command `{command}` did not finish within {RESTART_WITHIN:?}"
                ));
            }
            Ok(None) => std::thread::sleep(PROBE_EVERY),
            Err(err) => return Err(format!("--restart-command: {err}")),
        }
    }
}

/// Tries the store's own connection again until the server answers a
/// read, for at most [`RESTART_WITHIN`] from `since`.
fn wait_until_back(store: Store, since: Instant) -> Result<(), String> {
    loop {
        match store.reconnect_admin() {
            Ok(()) => return Ok(()),
            Err(problem) if since.elapsed() > RESTART_WITHIN => {
                return Err(format!(
                    "the store did not accept connections again within {RESTART_WITHIN:?} of the restart: {problem}"
                ))
            }
            Err(_) => std::thread::sleep(PROBE_EVERY),
        }
    }
}

/// A fault as one run saw it, for the report and the JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultSeen {
    /// The fault as asked for, `restart@2s`.
    pub fault: String,
    /// When it began, from the measured window's start, seconds.
    pub injected_at_s: f64,
    /// What it did.
    pub what: String,
    /// From its start to the store's return, ms: the restart and the
    /// server's recovery, the connections' end, the stall.
    pub back_after_ms: f64,
    /// From its start to the first input answered with success after the
    /// store's return, ms (`None`: none before the run ended).
    pub first_success_ms: Option<f64>,
    /// From the store's return to that success, ms: an upper bound, to
    /// within two [`TICK`]s (the first tick wholly after the return that
    /// holds a success, to its end).
    pub first_success_after_return_ms: Option<f64>,
}

impl FaultSeen {
    /// Each fault of `injected`, seen against `measured`'s answers, its
    /// times from the window that starts `warmup` into the run.
    pub fn of(injected: &[Injected], measured: &Measured, warmup: Duration) -> Vec<FaultSeen> {
        let window_start = measured.started + warmup;
        injected
            .iter()
            .map(|injected| {
                let at = injected.at.saturating_duration_since(measured.started);
                let back = injected.back.saturating_duration_since(measured.started);
                let first = first_success_after(&measured.done_ticks, back);
                let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
                FaultSeen {
                    fault: injected.fault.to_string(),
                    injected_at_s: (injected
                        .at
                        .saturating_duration_since(window_start)
                        .as_secs_f64()
                        * 1e3)
                        .round()
                        / 1e3,
                    what: injected.what.clone(),
                    back_after_ms: ms(back.saturating_sub(at)),
                    first_success_ms: first.map(|first| ms(first.saturating_sub(at))),
                    first_success_after_return_ms: first
                        .map(|first| ms(first.saturating_sub(back))),
                }
            })
            .collect()
    }

    /// One line of the report.
    pub fn describe(&self) -> String {
        let first = match (self.first_success_ms, self.first_success_after_return_ms) {
            (Some(after_fault), Some(after_return)) => format!(
                "first success within {} ms of the store's return ({} ms after the fault)",
                after_return.round(),
                after_fault.round()
            ),
            _ => "no success after it before the run ended".to_string(),
        };
        format!(
            "{} at {:.2} s: {}; store back {} ms after it; {first}",
            self.fault,
            self.injected_at_s,
            self.what,
            self.back_after_ms.round()
        )
    }
}

/// The end of the first [`TICK`] wholly after `at` (from the run's start)
/// in which an input was answered with success: the tick `at` falls in may
/// hold answers from before it.
fn first_success_after(ticks: &[u64], at: Duration) -> Option<Duration> {
    let from = (at.as_nanos() / TICK.as_nanos()) as usize + 1;
    let index = ticks
        .iter()
        .enumerate()
        .skip(from)
        .find(|(_, &done)| done > 0)?
        .0;
    Some(TICK * (index as u32 + 1))
}

/// A loopback TCP proxy between the systems and the server, which can hold
/// all traffic for a while, or lose the next reply on every connection:
/// each connection accepted on 127.0.0.1 is joined to a new one to the
/// server, and two threads copy between them; when either side ends, both
/// are shut down.
#[derive(Debug)]
pub struct Proxy {
    address: SocketAddr,
    upstream: SocketAddr,
    /// Until when traffic is held.
    stalled_until: Mutex<Option<Instant>>,
    /// How many times replies were lost: a connection joined before the
    /// latest loses its next reply.
    losses: AtomicU64,
    stopped: AtomicBool,
}

impl Proxy {
    /// Listens on 127.0.0.1 at a free port, forwarding to `upstream`.
    pub fn start(upstream: SocketAddr) -> std::io::Result<Arc<Proxy>> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let proxy = Arc::new(Proxy {
            address: listener.local_addr()?,
            upstream,
            stalled_until: Mutex::new(None),
            losses: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&proxy);
        std::thread::Builder::new()
            .name("ferry-load-proxy".to_string())
            .spawn(move || {
                for client in listener.incoming() {
                    if accepting.stopped.load(Ordering::Acquire) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let joining = Arc::clone(&accepting);
                    let _ = std::thread::Builder::new()
                        .name("ferry-load-proxy-conn".to_string())
                        .spawn(move || joining.join(client));
                }
            })?;
        Ok(proxy)
    }

    /// Where the systems connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Holds all traffic, both ways, for `length` from now.
    pub fn stall(&self, length: Duration) {
        *self.lock() = Some(Instant::now() + length);
    }

    /// Every connection open now loses the next reply the server sends on
    /// it, and is closed then.
    pub fn lose_replies(&self) {
        self.losses.fetch_add(1, Ordering::AcqRel);
    }

    /// Stops accepting (the connections under way end with their sides).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        // Wakes the accepting thread so that it sees the flag.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.stalled_until
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Waits out a stall, if one is under way.
    fn hold(&self) {
        loop {
            let until = *self.lock();
            match until.and_then(|until| until.checked_duration_since(Instant::now())) {
                Some(left) if !left.is_zero() => std::thread::sleep(left),
                _ => return,
            }
        }
    }

    /// Joins `client` to a new connection to the server, on this thread
    /// and one more; a server that cannot be reached closes `client`.
    fn join(self: Arc<Self>, client: TcpStream) {
        self.hold();
        let joined = self.losses.load(Ordering::Acquire);
        let Ok(server) = TcpStream::connect_timeout(&self.upstream, CONNECT_TIMEOUT) else {
            return;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (Ok(client_out), Ok(server_in)) = (client.try_clone(), server.try_clone()) else {
            return;
        };
        let upward = Arc::clone(&self);
        let spawned = std::thread::Builder::new()
            .name("ferry-load-proxy-conn".to_string())
            .spawn(move || upward.copy(client, server_in, None));
        if spawned.is_ok() {
            self.copy(server, client_out, Some(joined));
        }
    }

    /// Copies `from` to `to` until either ends, holding during stalls;
    /// then shuts both down, which ends the other direction too. Replies
    /// (from the server: `joined` says when the connection was made, in
    /// losses) are dropped, and the connection ended, once replies were
    /// lost after it was made.
    fn copy(&self, mut from: TcpStream, mut to: TcpStream, joined: Option<u64>) {
        let mut buffer = vec![0_u8; 64 * 1024];
        loop {
            self.hold();
            let read = match from.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            self.hold();
            if joined.is_some_and(|joined| self.losses.load(Ordering::Acquire) > joined) {
                break;
            }
            if to.write_all(&buffer[..read]).is_err() {
                break;
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_read_back() {
        for text in [
            "restart@2s",
            "kill-connections@3s",
            "stall:500ms@4s",
            "lose-replies@1s",
        ] {
            assert_eq!(text.parse::<Fault>().unwrap().to_string(), text);
        }
        for bad in ["stall@2s", "stall:0@2s", "restart@", "kill@1s", "restart@2"] {
            assert!(bad.parse::<Fault>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_first_success_is_looked_for_in_the_ticks_wholly_after_the_fault() {
        let ticks = [5, 5, 3, 0, 0, 0, 2, 1];
        // A fault 25 ms in (tick 2): tick 2 may hold answers from before
        // it; the first later tick with one is 6, which ends at 70 ms.
        assert_eq!(
            first_success_after(&ticks, Duration::from_millis(25)),
            Some(Duration::from_millis(70))
        );
        assert_eq!(first_success_after(&ticks, Duration::from_millis(75)), None);
    }

    #[test]
    fn the_proxy_forwards_and_holds_traffic_during_a_stall() {
        let server = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let upstream = server.local_addr().unwrap();
        let echo = std::thread::spawn(move || {
            let (mut connection, _) = server.accept().unwrap();
            let mut buffer = [0_u8; 4];
            for _ in 0..2 {
                connection.read_exact(&mut buffer).unwrap();
                connection.write_all(&buffer).unwrap();
            }
        });
        let proxy = Proxy::start(upstream).unwrap();
        let mut client = TcpStream::connect(proxy.address()).unwrap();
        let mut answer = [0_u8; 4];
        client.write_all(b"ping").unwrap();
        client.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"ping");
        let stall = Duration::from_millis(150);
        let sent = Instant::now();
        proxy.stall(stall);
        client.write_all(b"pong").unwrap();
        client.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"pong");
        assert!(sent.elapsed() >= stall, "{:?}", sent.elapsed());
        echo.join().unwrap();
        // The server is gone: the client's side ends too.
        assert_eq!(client.read(&mut answer).unwrap_or(0), 0);
        proxy.stop();
    }

    #[test]
    fn a_lost_reply_reaches_the_server_not_the_client_and_new_connections_work() {
        let server = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let upstream = server.local_addr().unwrap();
        let (heard_tx, heard) = std::sync::mpsc::channel();
        let echo = std::thread::spawn(move || {
            for _ in 0..2 {
                let (mut connection, _) = server.accept().unwrap();
                let mut buffer = [0_u8; 4];
                while connection.read_exact(&mut buffer).is_ok() {
                    heard_tx.send(buffer).unwrap();
                    if connection.write_all(&buffer).is_err() {
                        break;
                    }
                }
            }
        });
        let proxy = Proxy::start(upstream).unwrap();
        let mut client = TcpStream::connect(proxy.address()).unwrap();
        let mut answer = [0_u8; 4];
        client.write_all(b"ping").unwrap();
        client.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"ping");
        proxy.lose_replies();
        client.write_all(b"pong").unwrap();
        // The request reaches the server; its reply never reaches the
        // client, whose connection ends instead.
        let timeout = Duration::from_secs(10);
        assert_eq!(heard.recv_timeout(timeout).unwrap(), *b"ping");
        assert_eq!(heard.recv_timeout(timeout).unwrap(), *b"pong");
        client.set_read_timeout(Some(timeout)).unwrap();
        assert_eq!(
            client.read(&mut answer).unwrap_or(0),
            0,
            "the reply was lost"
        );
        // A connection made after the loss is carried as usual.
        let mut later = TcpStream::connect(proxy.address()).unwrap();
        later.write_all(b"late").unwrap();
        later.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"late");
        drop(later);
        echo.join().unwrap();
        proxy.stop();
    }
}
