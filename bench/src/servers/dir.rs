//! The plumbing every private server shares: a temporary directory of its
//! own, free ports on 127.0.0.1, log files, and programs looked up on
//! `$PATH`.

use std::fs::File;
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A directory only this process's user may enter, removed (with all it
/// holds) when dropped.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// A new directory under the system's temporary directory, its name
    /// telling `what` it holds and which process made it.
    pub fn new(what: &str) -> Result<TempDir, String> {
        static MADE: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let unique = format!(
            "ferry-server-{what}-{}-{}-{nanos}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(unique);
        std::fs::create_dir(&path)
            .map_err(|err| format!("could not create {}: {err}", path.display()))?;
        let dir = TempDir { path };
        std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o700))
            .map_err(|err| format!("could not restrict {}: {err}", dir.path.display()))?;
        Ok(dir)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        match std::fs::remove_dir_all(&self.path) {
            // A server's own clean-up may have removed it already.
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                eprintln!("could not remove {}: {err}", self.path.display());
            }
            _ => {}
        }
    }
}

/// Distinct ports nothing listened on a moment ago, on 127.0.0.1: every
/// listener is held until all are bound, so no two are the same. The
/// server binds them next; the gap is short, and a server that loses the
/// race fails to start, loudly.
pub fn free_ports<const N: usize>() -> Result<[u16; N], String> {
    let mut listeners = Vec::with_capacity(N);
    for _ in 0..N {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .map_err(|err| format!("could not find a free port on 127.0.0.1: {err}"))?;
        listeners.push(listener);
    }
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener
            .local_addr()
            .map_err(|err| format!("a bound listener has no address: {err}"))?
            .port();
    }
    Ok(ports)
}

/// One free port on 127.0.0.1, as [`free_ports`].
pub fn free_port() -> Result<u16, String> {
    free_ports::<1>().map(|[port]| port)
}

/// `path` opened for appending (made if missing), for a program's output.
pub fn log_file(path: &Path) -> Result<File, String> {
    File::options()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|err| format!("could not open {}: {err}", path.display()))
}

/// A log's text so far; empty if there is none yet.
pub fn read_log(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let _ = file.read_to_string(&mut text);
    }
    text
}

/// A log's last 40 lines, for a failure message.
pub fn tail(path: &Path) -> String {
    let text = read_log(path);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// `program` in one of `$PATH`'s directories.
pub fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The first line a program prints for `--version`, if it runs.
pub fn version_line(program: &Path) -> Option<String> {
    let output = std::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines().next().map(str::to_owned)
}
