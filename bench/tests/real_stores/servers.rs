//! Private PostgreSQL and Redis servers for the real-store tests: each in
//! its own temporary directory, listening on 127.0.0.1 only, at a port that
//! was free, never a shared system service. Dropping a [`Private`] stops the
//! server and removes its directory, also when a test panics.
//!
//! PostgreSQL refuses to run as root, so when the tests run as root its
//! programs run as `nobody` (through `setpriv`), in a directory handed to
//! that user. A missing program is a failure that says what to install,
//! never a skipped test.
//!
//! [`postgres_restartable`] and [`redis_durable`] can be restarted in place
//! (same port, same data) by a script written into their directory,
//! [`Private::restart_command`], which `ferry-load --restart-command` runs:
//! a hard stop (PostgreSQL's immediate shutdown, a `SIGKILL` to Redis),
//! then a start. Such a server runs detached from the test (started and
//! restarted by its scripts), and is stopped through its pid file.
//! The durable Redis keeps its data across the kill: append-only file,
//! `fsync` before every answer.

use std::fs::File;
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a server may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// How long a server may take to stop before it is killed.
const STOP_WITHIN: Duration = Duration::from_secs(20);

/// What to do when a server's programs are missing.
const INSTALL: &str = "install the distribution's packages: `apt-get install -y postgresql redis-server` (.ci/run does this when they are missing)";

/// A running private server. Fields drop in order: the server stops, then
/// its directory goes.
pub struct Private {
    process: Server,
    dir: TempDir,
    /// Where to reach it: `postgres://…` or `redis://…`.
    pub url: String,
    /// A shell command that stops the server hard and starts it again in
    /// place, for `--restart-command` (restartable servers only).
    pub restart_command: Option<String>,
}

impl Private {
    /// The server's directory (its data and log).
    pub fn dir(&self) -> &Path {
        &self.dir.path
    }

    /// The server's log so far, for a failure message.
    pub fn log(&self) -> String {
        match &self.process {
            Server::Child(process) => read_log(&process.log),
            Server::Detached(server) => read_log(&server.log),
        }
    }
}

/// A server process: a child of the test, or one its scripts start.
enum Server {
    Child(Process),
    Detached(Detached),
}

/// `initdb` of a cluster in `dir`'s `data`, user `ferry` trusted; its path.
fn init_cluster(bin: &Path, runner: &Runner, dir: &TempDir) -> PathBuf {
    let data = dir.path.join("data");
    let initdb_log = dir.path.join("initdb.log");
    let status = runner
        .command(&bin.join("initdb"))
        .args(["-D"])
        .arg(&data)
        .args([
            "-U",
            "ferry",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        ])
        .stdin(Stdio::null())
        .stdout(log_file(&initdb_log))
        .stderr(log_file(&initdb_log))
        .status()
        .unwrap_or_else(|err| panic!("could not run {}/initdb: {err}", bin.display()));
    assert!(
        status.success(),
        "initdb failed ({status}):\n{}",
        read_log(&initdb_log)
    );
    data
}

/// A PostgreSQL server of its own: `initdb` into a temporary directory,
/// then `postgres` on 127.0.0.1 at a free port, trusting local connections
/// of user `ferry`.
pub fn postgres() -> Private {
    let bin = postgres_bin_dir();
    let runner = Runner::for_postgres();
    let dir = TempDir::new("postgres");
    runner.hand_over(&dir.path);
    let data = init_cluster(&bin, &runner, &dir);
    let port = free_port();
    let log = dir.path.join("postgres.log");
    let child = runner
        .command(&bin.join("postgres"))
        .arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string()])
        .args(["-c", "listen_addresses=127.0.0.1"])
        .arg("-c")
        .arg(format!("unix_socket_directories={}", dir.path.display()))
        .stdin(Stdio::null())
        .stdout(log_file(&log))
        .stderr(log_file(&log))
        .spawn()
        .unwrap_or_else(|err| panic!("could not start {}/postgres: {err}", bin.display()));
    let mut process = Process {
        child,
        name: "postgres",
        // Fast shutdown: ends the sessions, then the server.
        stop_signal: "INT",
        log,
    };
    process.wait_until_ready("database system is ready to accept connections");
    Private {
        process: Server::Child(process),
        dir,
        url: format!("postgres://ferry@127.0.0.1:{port}/postgres"),
        restart_command: None,
    }
}

/// A PostgreSQL server of its own, as [`postgres`], that can be restarted
/// in place: `start.sh` in its directory starts it (`pg_ctl start`,
/// waiting until it is ready); `restart.sh` stops it at once
/// (`pg_ctl stop -m immediate`: SIGQUIT to the postmaster, no checkpoint,
/// crash recovery at the next start) and starts it again.
pub fn postgres_restartable() -> Private {
    let bin = postgres_bin_dir();
    let runner = Runner::for_postgres();
    let dir = TempDir::new("postgres");
    runner.hand_over(&dir.path);
    let data = init_cluster(&bin, &runner, &dir);
    let port = free_port();
    let log = dir.path.join("postgres.log");
    let pg_ctl = format!("{}{}", runner.prefix(), bin.join("pg_ctl").display());
    let start = format!(
        "exec {pg_ctl} -D '{data}' -l '{log}' -w -t 60 -o \"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='{dir}'\" start\n",
        data = data.display(),
        log = log.display(),
        dir = dir.path.display(),
    );
    let restart = format!(
        "{pg_ctl} -D '{data}' -m immediate -w -t 60 stop || exit 1\nexec sh '{start}'\n",
        data = data.display(),
        start = dir.path.join("start.sh").display(),
    );
    let stop = format!(
        "{pg_ctl} -D '{data}' -m fast -w -t 20 stop || {pg_ctl} -D '{data}' -m immediate -w -t 20 stop\n",
        data = data.display(),
    );
    let server = Detached::start(&dir.path, "postgres", &start, &restart, &stop, log);
    Private {
        process: Server::Detached(server),
        url: format!("postgres://ferry@127.0.0.1:{port}/postgres"),
        restart_command: Some(format!("sh '{}'", dir.path.join("restart.sh").display())),
        dir,
    }
}

/// A Redis server of its own, as [`redis`], but keeping its data across a
/// restart (`--appendonly yes --appendfsync always`: every write in the
/// append-only file, on disk, before it is answered), and restartable in
/// place: `restart.sh` kills it (`SIGKILL`) and starts it again, and it
/// loads its file before it answers.
pub fn redis_durable() -> Private {
    let bin = find_in_path("redis-server")
        .unwrap_or_else(|| panic!("redis-server was not found on $PATH: {INSTALL}"));
    let dir = TempDir::new("redis");
    let port = free_port();
    let log = dir.path.join("redis.log");
    let pid = dir.path.join("redis.pid");
    let start = format!(
        "exec '{bin}' --port {port} --bind 127.0.0.1 --protected-mode yes --save '' \
         --appendonly yes --appendfsync always --dir '{dir}' --pidfile '{pid}' \
         --logfile '{log}' --daemonize yes\n",
        bin = bin.display(),
        dir = dir.path.display(),
        pid = pid.display(),
        log = log.display(),
    );
    // Gone, or a zombie nobody reaped: either way no longer serving.
    let wait_gone = "while [ -e \"/proc/$pid\" ] && ! grep -q ') Z' \"/proc/$pid/stat\" 2>/dev/null; do sleep 0.01; done";
    let restart = format!(
        "pid=$(cat '{pid}') || exit 1\nkill -KILL \"$pid\" || exit 1\n{wait_gone}\nexec sh '{start}'\n",
        pid = pid.display(),
        start = dir.path.join("start.sh").display(),
    );
    let stop = format!(
        "pid=$(cat '{pid}') || exit 0\nkill -TERM \"$pid\" 2>/dev/null || exit 0\n{wait_gone}\n",
        pid = pid.display(),
    );
    let server = Detached::start(&dir.path, "redis-server", &start, &restart, &stop, log);
    Private {
        process: Server::Detached(server),
        url: format!("redis://127.0.0.1:{port}"),
        restart_command: Some(format!("sh '{}'", dir.path.join("restart.sh").display())),
        dir,
    }
}

/// A server started, restarted and stopped by scripts in its directory.
struct Detached {
    name: &'static str,
    stop: PathBuf,
    log: PathBuf,
}

impl Detached {
    /// Writes the scripts into `dir` and runs `start.sh`, waiting until
    /// the server answers on its port.
    fn start(
        dir: &Path,
        name: &'static str,
        start: &str,
        restart: &str,
        stop: &str,
        log: PathBuf,
    ) -> Detached {
        let script = |file: &str, body: &str| {
            let path = dir.join(file);
            std::fs::write(&path, format!("#!/bin/sh\n{body}"))
                .unwrap_or_else(|err| panic!("could not write {}: {err}", path.display()));
            path
        };
        let started = script("start.sh", start);
        script("restart.sh", restart);
        let server = Detached {
            name,
            stop: script("stop.sh", stop),
            log,
        };
        let status = Command::new("sh")
            .arg(&started)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap_or_else(|err| panic!("could not run {}: {err}", started.display()));
        assert!(
            status.success(),
            "{name} did not start ({status}):\n{}",
            read_log(&server.log)
        );
        let ready = Instant::now();
        while !read_log(&server.log).contains("eady to accept connections") {
            assert!(
                ready.elapsed() < READY_WITHIN,
                "{name} was not ready within {READY_WITHIN:?}:\n{}",
                read_log(&server.log)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        let stopped = Command::new("sh")
            .arg(&self.stop)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !stopped.as_ref().is_ok_and(|status| status.success()) {
            eprintln!("{} may not have stopped: {stopped:?}", self.name);
        }
    }
}

/// A Redis server of its own on 127.0.0.1 at a free port, keeping nothing
/// on disk.
pub fn redis() -> Private {
    let bin = find_in_path("redis-server")
        .unwrap_or_else(|| panic!("redis-server was not found on $PATH: {INSTALL}"));
    let dir = TempDir::new("redis");
    let port = free_port();
    let log = dir.path.join("redis.log");
    let child = Command::new(&bin)
        .args(["--port", &port.to_string()])
        .args(["--bind", "127.0.0.1"])
        .args(["--protected-mode", "yes"])
        .args(["--save", "", "--appendonly", "no"])
        .args(["--daemonize", "no"])
        .arg("--dir")
        .arg(&dir.path)
        .stdin(Stdio::null())
        .stdout(log_file(&log))
        .stderr(log_file(&log))
        .spawn()
        .unwrap_or_else(|err| panic!("could not start {}: {err}", bin.display()));
    let mut process = Process {
        child,
        name: "redis-server",
        stop_signal: "TERM",
        log,
    };
    process.wait_until_ready("Ready to accept connections");
    Private {
        process: Server::Child(process),
        dir,
        url: format!("redis://127.0.0.1:{port}"),
        restart_command: None,
    }
}

/// A server process, stopped when dropped.
struct Process {
    child: Child,
    name: &'static str,
    /// The signal that stops it cleanly, as `kill -s` names it.
    stop_signal: &'static str,
    log: PathBuf,
}

impl Process {
    /// Waits for `ready` in the log; panics with the log if the server
    /// exits or takes too long.
    fn wait_until_ready(&mut self, ready: &str) {
        let started = Instant::now();
        loop {
            let log = read_log(&self.log);
            if log.contains(ready) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{} exited ({status}) before it was ready:\n{log}",
                    self.name
                );
            }
            assert!(
                started.elapsed() < READY_WITHIN,
                "{} was not ready within {READY_WITHIN:?}:\n{log}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-s", self.stop_signal, &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let asked = Instant::now();
        while asked.elapsed() < STOP_WITHIN {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!(
            "{} did not stop within {STOP_WITHIN:?}; killing it",
            self.name
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory removed when dropped.
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn new(what: &str) -> TempDir {
        static MADE: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let unique = format!(
            "ferry-real-stores-{what}-{}-{}-{nanos}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(unique);
        std::fs::create_dir(&path)
            .unwrap_or_else(|err| panic!("could not create {}: {err}", path.display()));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
            .unwrap_or_else(|err| panic!("could not restrict {}: {err}", path.display()));
        TempDir { path }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Err(err) = std::fs::remove_dir_all(&self.path) {
            eprintln!("could not remove {}: {err}", self.path.display());
        }
    }
}

/// Who runs PostgreSQL's programs: this process's user, or `nobody` when
/// that is root.
struct Runner {
    /// `nobody`'s user and group ids, when running as root.
    unprivileged: Option<(u32, u32)>,
}

impl Runner {
    fn for_postgres() -> Runner {
        let euid = std::fs::metadata("/proc/self")
            .map(|meta| meta.uid())
            .unwrap_or_else(|err| panic!("could not tell this process's user from /proc: {err}"));
        if euid != 0 {
            return Runner { unprivileged: None };
        }
        assert!(
            find_in_path("setpriv").is_some(),
            "running as root, PostgreSQL must be started as another user, through setpriv (util-linux), which was not found"
        );
        let passwd = std::fs::read_to_string("/etc/passwd")
            .unwrap_or_else(|err| panic!("could not read /etc/passwd: {err}"));
        let ids = passwd
            .lines()
            .find_map(|line| {
                let fields: Vec<&str> = line.split(':').collect();
                (fields.first() == Some(&"nobody") && fields.len() > 3)
                    .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                    .flatten()
            })
            .unwrap_or_else(|| {
                panic!("running as root, PostgreSQL needs an unprivileged user: there is no `nobody` in /etc/passwd")
            });
        Runner {
            unprivileged: Some(ids),
        }
    }

    /// Gives `dir` to the user the server runs as.
    fn hand_over(&self, dir: &Path) {
        if let Some((uid, gid)) = self.unprivileged {
            std::os::unix::fs::chown(dir, Some(uid), Some(gid))
                .unwrap_or_else(|err| panic!("could not hand {} to nobody: {err}", dir.display()));
        }
    }

    /// What a shell command line puts before a program to run it as this
    /// runner's user.
    fn prefix(&self) -> String {
        match self.unprivileged {
            None => String::new(),
            Some((uid, gid)) => {
                format!("setpriv --reuid={uid} --regid={gid} --clear-groups -- ")
            }
        }
    }

    fn command(&self, program: &Path) -> Command {
        match self.unprivileged {
            None => Command::new(program),
            Some((uid, gid)) => {
                let mut command = Command::new("setpriv");
                command
                    .arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .arg("--clear-groups")
                    .arg("--")
                    .arg(program);
                command
            }
        }
    }
}

/// `$FERRY_PG_BINDIR`, else the newest `/usr/lib/postgresql/*/bin` (where
/// Debian puts the server's programs, off `$PATH`), else `$PATH`.
fn postgres_bin_dir() -> PathBuf {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("FERRY_PG_BINDIR").map(PathBuf::from) {
        assert!(
            has_server(&dir),
            "FERRY_PG_BINDIR={} has no initdb and postgres",
            dir.display()
        );
        return dir;
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            has_server(&bin).then_some((major, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    if let Some(initdb) = find_in_path("initdb") {
        let dir = initdb.parent().map(Path::to_path_buf).unwrap_or_default();
        if has_server(&dir) {
            return dir;
        }
    }
    panic!(
        "PostgreSQL's initdb and postgres were not found (in $FERRY_PG_BINDIR, /usr/lib/postgresql/*/bin, $PATH): {INSTALL}"
    );
}

fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// A port nothing listened on a moment ago (the server binds it next; the
/// gap is short, and a server that loses the race fails to start, loudly).
fn free_port() -> u16 {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .unwrap_or_else(|err| panic!("could not find a free port on 127.0.0.1: {err}"));
    listener
        .local_addr()
        .map(|address| address.port())
        .unwrap_or_else(|err| panic!("could not read a port: {err}"))
}

fn log_file(path: &Path) -> File {
    File::options()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|err| panic!("could not open {}: {err}", path.display()))
}

fn read_log(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let _ = file.read_to_string(&mut text);
    }
    text
}
