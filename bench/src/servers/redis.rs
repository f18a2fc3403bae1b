//! A private Redis server: `redis-server` on 127.0.0.1 at a free port,
//! keeping nothing on disk, or durable and restartable in place.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::dir::{find_in_path, free_port, log_file, version_line, TempDir};
use super::process::{Detached, Process, Scripts};
use super::{Private, Server};

/// What to do when `redis-server` is missing.
const INSTALL: &str = "install Redis: `apt-get install -y redis-server`";

/// Gone, or a zombie nobody reaped: either way no longer serving (the
/// shell variable `pid` names it).
const WAIT_GONE: &str = "while [ -e \"/proc/$pid\" ] && ! grep -q ') Z' \"/proc/$pid/stat\" 2>/dev/null; do sleep 0.01; done";

/// A Redis server of its own, a child of this process, keeping nothing on
/// disk; stopped by `SIGTERM` when dropped.
pub fn redis() -> Result<Private, String> {
    let bin = program()?;
    let dir = TempDir::new("redis")?;
    let port = free_port()?;
    let log = dir.path().join("redis.log");
    let child = Command::new(&bin)
        .args(["--port", &port.to_string()])
        .args(["--bind", "127.0.0.1"])
        .args(["--protected-mode", "yes"])
        .args(["--save", "", "--appendonly", "no"])
        .args(["--daemonize", "no"])
        .arg("--dir")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(log_file(&log)?)
        .stderr(log_file(&log)?)
        .spawn()
        .map_err(|err| format!("could not start {}: {err}", bin.display()))?;
    let mut process = Process {
        child,
        name: "redis-server",
        stop_signal: libc::SIGTERM,
        log,
    };
    process.wait_until_ready("Ready to accept connections")?;
    Ok(private(Server::Child(process), dir, &bin, port, None))
}

/// A Redis server of its own, as [`redis()`], but keeping its data across a
/// restart (`--appendonly yes --appendfsync always`: every write in the
/// append-only file, on disk, before it is answered), and restartable in
/// place: `restart.sh` kills it (`SIGKILL`) and starts it again, and it
/// loads its file before it answers. It runs detached (`--daemonize`),
/// stopped through its pid file.
pub fn redis_durable() -> Result<Private, String> {
    let bin = program()?;
    let dir = TempDir::new("redis")?;
    let port = free_port()?;
    let log = dir.path().join("redis.log");
    let pid = dir.path().join("redis.pid");
    let start = format!(
        "exec '{bin}' --port {port} --bind 127.0.0.1 --protected-mode yes --save '' \
         --appendonly yes --appendfsync always --dir '{dir}' --pidfile '{pid}' \
         --logfile '{log}' --daemonize yes\n",
        bin = bin.display(),
        dir = dir.path().display(),
        pid = pid.display(),
        log = log.display(),
    );
    let restart = format!(
        "pid=$(cat '{pid}') || exit 1\nkill -KILL \"$pid\" || exit 1\n{WAIT_GONE}\nexec sh '{start}'\n",
        pid = pid.display(),
        start = dir.path().join("start.sh").display(),
    );
    let stop = format!(
        "pid=$(cat '{pid}') || exit 0\nkill -TERM \"$pid\" 2>/dev/null || exit 0\n{WAIT_GONE}\n",
        pid = pid.display(),
    );
    let scripts = Scripts {
        start: &start,
        restart: &restart,
        stop: &stop,
    };
    let server = Detached::start(dir.path(), "redis-server", &scripts, log)?;
    let restart_command = format!("sh '{}'", dir.path().join("restart.sh").display());
    Ok(private(
        Server::Detached(server),
        dir,
        &bin,
        port,
        Some(restart_command),
    ))
}

/// `redis-server` on `$PATH`.
fn program() -> Result<PathBuf, String> {
    find_in_path("redis-server")
        .ok_or_else(|| format!("redis-server was not found on $PATH: {INSTALL}"))
}

/// The started server as a [`Private`].
fn private(
    server: Server,
    dir: TempDir,
    bin: &Path,
    port: u16,
    restart_command: Option<String>,
) -> Private {
    Private {
        server,
        dir,
        url: format!("redis://127.0.0.1:{port}"),
        restart_command,
        what: version(bin),
        address: format!("127.0.0.1:{port}"),
    }
}

/// `Redis 7.0.15`, from `redis-server --version` (`Redis server
/// v=7.0.15 …`); `Redis` alone if it does not say.
fn version(bin: &Path) -> String {
    let line = version_line(bin).unwrap_or_default();
    let number = line
        .split_whitespace()
        .find_map(|word| word.strip_prefix("v="));
    match number {
        Some(number) => format!("Redis {number}"),
        None => "Redis".to_owned(),
    }
}
