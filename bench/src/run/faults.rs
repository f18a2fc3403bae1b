//! The faults of `--fault`, injected during each system's run at the same
//! offsets into its measured window (what each does:
//! [`crate::scenarios::faults`]).

use std::net::ToSocketAddrs;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::base::duration::format_duration;
use crate::scenarios::faults::{Fault, FaultKind, Injected};
use crate::scenarios::proxy::Proxy;
use crate::store::Store;

/// How long a restart may take, its command and the server's return
/// together, before the run fails.
pub const RESTART_WITHIN: Duration = Duration::from_secs(60);

/// How often the store is tried while it is away after a restart.
const PROBE_EVERY: Duration = Duration::from_millis(20);

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
