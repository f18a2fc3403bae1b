//! A private PostgreSQL server: `initdb` into a temporary directory, then
//! `postgres` on 127.0.0.1 at a free port, trusting connections of user
//! `ferry` (database `postgres`). As root, its programs run as `nobody`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::dir::{find_in_path, free_port, log_file, tail, version_line, TempDir};
use super::process::{Detached, Process, Scripts};
use super::runner::Runner;
use super::{Private, Server};

/// What to do when PostgreSQL's programs are missing.
const INSTALL: &str = "install PostgreSQL's server: `apt-get install -y postgresql` (or set FERRY_PG_BINDIR to the folder of its initdb and postgres)";

/// A cluster made and ready to start: its directory, programs and user.
struct Cluster {
    bin: PathBuf,
    runner: Runner,
    dir: TempDir,
    data: PathBuf,
    port: u16,
    log: PathBuf,
}

/// A PostgreSQL server of its own, a child of this process, stopped by a
/// fast shutdown when dropped.
pub fn postgres() -> Result<Private, String> {
    let cluster = Cluster::init()?;
    let child = cluster
        .runner
        .command(&cluster.bin.join("postgres"))
        .arg("-D")
        .arg(&cluster.data)
        .args(cluster.server_options())
        .stdin(Stdio::null())
        .stdout(log_file(&cluster.log)?)
        .stderr(log_file(&cluster.log)?)
        .spawn()
        .map_err(|err| format!("could not start {}/postgres: {err}", cluster.bin.display()))?;
    let mut process = Process {
        child,
        name: "postgres",
        // Fast shutdown: ends the sessions, then the server.
        stop_signal: libc::SIGINT,
        log: cluster.log.clone(),
    };
    process.wait_until_ready("database system is ready to accept connections")?;
    Ok(cluster.into_private(Server::Child(process), None))
}

/// A PostgreSQL server of its own, as [`postgres`], that can be restarted
/// in place: `start.sh` in its directory starts it (`pg_ctl start`,
/// waiting until it is ready); `restart.sh` stops it at once (`pg_ctl stop
/// -m immediate`: SIGQUIT to the postmaster, no checkpoint, crash recovery
/// at the next start) and starts it again; `stop.sh` stops it.
pub fn postgres_restartable() -> Result<Private, String> {
    let cluster = Cluster::init()?;
    let pg_ctl = format!(
        "{}{}",
        cluster.runner.prefix(),
        cluster.bin.join("pg_ctl").display()
    );
    let data = cluster.data.display();
    let options = format!(
        "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories='{}'",
        cluster.port,
        cluster.dir.path().display()
    );
    let start = format!(
        "exec {pg_ctl} -D '{data}' -l '{log}' -w -t 60 -o \"{options}\" start\n",
        log = cluster.log.display(),
    );
    let restart = format!(
        "{pg_ctl} -D '{data}' -m immediate -w -t 60 stop || exit 1\nexec sh '{start}'\n",
        start = cluster.dir.path().join("start.sh").display(),
    );
    let stop = format!(
        "{pg_ctl} -D '{data}' -m fast -w -t 20 stop || {pg_ctl} -D '{data}' -m immediate -w -t 20 stop\n"
    );
    let scripts = Scripts {
        start: &start,
        restart: &restart,
        stop: &stop,
    };
    let server = Detached::start(
        cluster.dir.path(),
        "postgres",
        &scripts,
        cluster.log.clone(),
    )?;
    let restart_command = format!("sh '{}'", cluster.dir.path().join("restart.sh").display());
    Ok(cluster.into_private(Server::Detached(server), Some(restart_command)))
}

impl Cluster {
    /// Finds the programs, makes the directory (handed to the server's
    /// user) and runs `initdb` in it, user `ferry` trusted.
    fn init() -> Result<Cluster, String> {
        let bin = bin_dir()?;
        let runner = Runner::unprivileged()?;
        let dir = TempDir::new("postgres")?;
        runner.hand_over(dir.path())?;
        let data = dir.path().join("data");
        init_db(&bin, &runner, dir.path(), &data)?;
        Ok(Cluster {
            port: free_port()?,
            log: dir.path().join("postgres.log"),
            bin,
            runner,
            dir,
            data,
        })
    }

    /// The server's options: its port, 127.0.0.1 only, its socket in its
    /// own directory.
    fn server_options(&self) -> Vec<String> {
        vec![
            "-p".to_owned(),
            self.port.to_string(),
            "-c".to_owned(),
            "listen_addresses=127.0.0.1".to_owned(),
            "-c".to_owned(),
            format!("unix_socket_directories={}", self.dir.path().display()),
        ]
    }

    /// The started cluster as a [`Private`].
    fn into_private(self, server: Server, restart_command: Option<String>) -> Private {
        Private {
            server,
            dir: self.dir,
            url: format!("postgres://ferry@127.0.0.1:{}/postgres", self.port),
            restart_command,
            what: version(&self.bin),
            address: format!("127.0.0.1:{}", self.port),
        }
    }
}

/// `initdb` of a cluster in `data`, user `ferry` trusted, its output in
/// `dir`'s `initdb.log`.
fn init_db(bin: &Path, runner: &Runner, dir: &Path, data: &Path) -> Result<(), String> {
    let log = dir.join("initdb.log");
    let status = runner
        .command(&bin.join("initdb"))
        .arg("-D")
        .arg(data)
        .args(["-U", "ferry", "--auth=trust", "-E", "UTF8"])
        .args(["--no-locale", "--no-sync"])
        .stdin(Stdio::null())
        .stdout(log_file(&log)?)
        .stderr(log_file(&log)?)
        .status()
        .map_err(|err| format!("could not run {}/initdb: {err}", bin.display()))?;
    if !status.success() {
        return Err(format!("initdb failed ({status}):\n{}", tail(&log)));
    }
    Ok(())
}

/// `$FERRY_PG_BINDIR`, else the newest `/usr/lib/postgresql/*/bin` (where
/// Debian puts the server's programs, off `$PATH`), else `$PATH`.
fn bin_dir() -> Result<PathBuf, String> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("FERRY_PG_BINDIR").map(PathBuf::from) {
        if !has_server(&dir) {
            return Err(format!(
                "FERRY_PG_BINDIR={} has no initdb and postgres: {INSTALL}",
                dir.display()
            ));
        }
        return Ok(dir);
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
        return Ok(bin);
    }
    find_in_path("initdb")
        .and_then(|initdb| initdb.parent().map(Path::to_path_buf))
        .filter(|dir| has_server(dir))
        .ok_or_else(|| {
            format!("PostgreSQL's initdb and postgres were not found (in $FERRY_PG_BINDIR, /usr/lib/postgresql/*/bin, $PATH): {INSTALL}")
        })
}

/// `PostgreSQL 15.13`, from `postgres --version` (`postgres (PostgreSQL)
/// 15.13 …`); `PostgreSQL` alone if it does not say.
fn version(bin: &Path) -> String {
    let line = version_line(&bin.join("postgres")).unwrap_or_default();
    let mut words = line.split_whitespace();
    let number = words
        .by_ref()
        .find(|word| *word == "(PostgreSQL)")
        .and_then(|_| words.next());
    match number {
        Some(number) => format!("PostgreSQL {number}"),
        None => "PostgreSQL".to_owned(),
    }
}
