//! A server's process as this program holds it: a child, stopped by a
//! signal when dropped, or a detached server that scripts in its directory
//! start, restart and stop (through its pid file).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::dir::{read_log, tail};

/// How long a server may take to say it is ready.
pub const READY_WITHIN: Duration = Duration::from_secs(60);

/// How long a server may take to stop before it is killed.
pub const STOP_WITHIN: Duration = Duration::from_secs(20);

/// A server that is a child of this process, stopped when dropped.
pub struct Process {
    /// The running program.
    pub child: Child,
    /// Its name, for messages.
    pub name: &'static str,
    /// The signal that stops it cleanly.
    pub stop_signal: libc::c_int,
    /// Where its output goes.
    pub log: PathBuf,
}

impl Process {
    /// Waits for `ready` in the log; an error with the log's end if the
    /// server exits first or takes longer than [`READY_WITHIN`].
    pub fn wait_until_ready(&mut self, ready: &str) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if read_log(&self.log).contains(ready) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "{} exited ({status}) before it was ready; its log ends:\n{}",
                    self.name,
                    tail(&self.log)
                ));
            }
            if started.elapsed() > READY_WITHIN {
                return Err(format!(
                    "{} was not ready within {READY_WITHIN:?}; its log ends:\n{}",
                    self.name,
                    tail(&self.log)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the child has exited, waiting up to `within`.
    fn exited_within(&mut self, within: Duration) -> bool {
        let asked = Instant::now();
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            if asked.elapsed() > within {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        signal(self.child.id(), self.stop_signal);
        if self.exited_within(STOP_WITHIN) {
            return;
        }
        eprintln!(
            "{} did not stop within {STOP_WITHIN:?}; killing it",
            self.name
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `signal` to process `pid`; a process already gone is no error.
pub fn signal(pid: u32, signal: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) takes no pointers; a stale pid at worst fails.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

/// The shell scripts of a detached server: what starts it, what stops it
/// hard and starts it again in place, and what stops it.
pub struct Scripts<'a> {
    /// `start.sh`: starts the server and returns once it is started.
    pub start: &'a str,
    /// `restart.sh`: a hard stop, then `start.sh`.
    pub restart: &'a str,
    /// `stop.sh`: stops the server, through its pid file.
    pub stop: &'a str,
}

/// A server started, restarted and stopped by scripts in its directory,
/// stopped (`stop.sh`) when dropped.
pub struct Detached {
    name: &'static str,
    stop: PathBuf,
    /// Where the server writes its log.
    pub log: PathBuf,
}

impl Detached {
    /// Writes `scripts` into `dir` and runs `start.sh`, waiting until the
    /// server's log says it is ready to accept connections.
    pub fn start(
        dir: &Path,
        name: &'static str,
        scripts: &Scripts,
        log: PathBuf,
    ) -> Result<Detached, String> {
        let start = write_script(dir, "start.sh", scripts.start)?;
        write_script(dir, "restart.sh", scripts.restart)?;
        let server = Detached {
            name,
            stop: write_script(dir, "stop.sh", scripts.stop)?,
            log,
        };
        let status = Command::new("sh")
            .arg(&start)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|err| format!("could not run {}: {err}", start.display()))?;
        if !status.success() {
            return Err(format!(
                "{name} did not start ({status}); its log ends:\n{}",
                tail(&server.log)
            ));
        }
        server.wait_until_ready()?;
        Ok(server)
    }

    fn wait_until_ready(&self) -> Result<(), String> {
        let started = Instant::now();
        // PostgreSQL says "ready", Redis "Ready".
        while !read_log(&self.log).contains("eady to accept connections") {
            if started.elapsed() > READY_WITHIN {
                return Err(format!(
                    "{} was not ready within {READY_WITHIN:?}; its log ends:\n{}",
                    self.name,
                    tail(&self.log)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
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

/// `dir/file`, a shell script of `body`; its path.
fn write_script(dir: &Path, file: &str, body: &str) -> Result<PathBuf, String> {
    let path = dir.join(file);
    std::fs::write(&path, format!("#!/bin/sh\n{body}"))
        .map_err(|err| format!("could not write {}: {err}", path.display()))?;
    Ok(path)
}
