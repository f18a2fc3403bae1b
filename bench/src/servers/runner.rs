//! Who runs a server's programs: this process's user, or `nobody` when
//! that is root (PostgreSQL refuses to run as root), through `setpriv`.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use super::dir::find_in_path;

/// The user a server's programs run as.
pub struct Runner {
    /// `nobody`'s user and group ids, when running as root.
    unprivileged: Option<(u32, u32)>,
}

impl Runner {
    /// This process's user, or `nobody` (through `setpriv`) if that is
    /// root; an error says what is missing for the latter.
    pub fn unprivileged() -> Result<Runner, String> {
        let euid = std::fs::metadata("/proc/self")
            .map(|meta| meta.uid())
            .map_err(|err| format!("could not tell this process's user from /proc: {err}"))?;
        if euid != 0 {
            return Ok(Runner { unprivileged: None });
        }
        if find_in_path("setpriv").is_none() {
            return Err("running as root, PostgreSQL must run as another user, through setpriv, which was not found: `apt-get install -y util-linux`".to_owned());
        }
        let ids = nobody_ids()?;
        Ok(Runner {
            unprivileged: Some(ids),
        })
    }

    /// Gives `dir` to the user the server runs as.
    pub fn hand_over(&self, dir: &Path) -> Result<(), String> {
        let Some((uid, gid)) = self.unprivileged else {
            return Ok(());
        };
        std::os::unix::fs::chown(dir, Some(uid), Some(gid))
            .map_err(|err| format!("could not hand {} to nobody: {err}", dir.display()))
    }

    /// What a shell command line puts before a program to run it as this
    /// runner's user.
    pub fn prefix(&self) -> String {
        match self.unprivileged {
            None => String::new(),
            Some((uid, gid)) => {
                format!("setpriv --reuid={uid} --regid={gid} --clear-groups -- ")
            }
        }
    }

    /// A command running `program` as this runner's user.
    pub fn command(&self, program: &Path) -> Command {
        let Some((uid, gid)) = self.unprivileged else {
            return Command::new(program);
        };
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

/// `nobody`'s user and group ids, from `/etc/passwd`.
fn nobody_ids() -> Result<(u32, u32), String> {
    let passwd = std::fs::read_to_string("/etc/passwd")
        .map_err(|err| format!("could not read /etc/passwd: {err}"))?;
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            if fields.first() != Some(&"nobody") || fields.len() < 4 {
                return None;
            }
            Some((fields[2].parse().ok()?, fields[3].parse().ok()?))
        })
        .ok_or_else(|| {
            "running as root, PostgreSQL needs an unprivileged user: there is no `nobody` in /etc/passwd".to_owned()
        })
}
