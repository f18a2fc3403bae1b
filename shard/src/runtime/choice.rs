//! Which runtime runs the shards (docs/guarantees.md#starting), and whether
//! glommio can run here at all.
//!
//! Glommio needs io_uring and some locked memory. A default container
//! refuses the first (Docker's and containerd's seccomp profiles block
//! `io_uring_setup`; hardened hosts set `kernel.io_uring_disabled`) or
//! grants too little of the second (64 KiB is a common default). Tokio
//! needs neither. So `Auto` takes glommio where it can start and tokio
//! where it cannot, and an explicit `Glommio` that cannot start says which
//! limit or policy refused it and how to lift it.

use std::cell::Cell;
use std::fmt;

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

use crate::runtime::glommio_needs::{glommio_failure, GLOMMIO_MEMLOCK_PER_SHARD};

/// The runtime of the shards' threads.
///
/// ```
/// use ferry_shard::Runtime;
///
/// assert_eq!(Runtime::default(), Runtime::Auto);
/// assert_eq!(Runtime::Tokio.to_string(), "tokio");
/// // What Auto gives on this machine: glommio, or tokio where it cannot run.
/// let chosen = Runtime::Auto.choose(2).unwrap();
/// assert!(matches!(chosen, Runtime::Glommio | Runtime::Tokio));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Runtime {
    /// Glommio where it can start, else tokio.
    #[default]
    Auto,
    /// A glommio `LocalExecutor` per shard (io_uring, locked memory).
    Glommio,
    /// A tokio current-thread runtime with a `LocalSet` per shard.
    Tokio,
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Runtime::Auto => "auto",
            Runtime::Glommio => "glommio",
            Runtime::Tokio => "tokio",
        })
    }
}

impl Runtime {
    /// The runtime to start `shards` shards on: `Tokio` as asked; `Glommio`
    /// if nothing known refuses it here (else why, and how to fix it);
    /// `Auto` is glommio under the same check, else tokio. Raises the soft
    /// locked-memory limit towards the hard one when glommio needs it and
    /// the hard limit allows.
    ///
    /// A seccomp filter cannot be seen before io_uring is tried: glommio
    /// may still fail when its shards start, and then says so.
    pub fn choose(self, shards: usize) -> Result<Runtime, String> {
        self.choose_saying_why(shards).map(|(runtime, _)| runtime)
    }

    /// Like [`choose`](Self::choose), and when `Auto` chooses tokio, why:
    /// what refuses glommio here, and how to lift it.
    ///
    /// ```
    /// use ferry_shard::Runtime;
    ///
    /// assert_eq!(Runtime::Tokio.choose_saying_why(1), Ok((Runtime::Tokio, None)));
    /// match Runtime::Auto.choose_saying_why(1).unwrap() {
    ///     (Runtime::Glommio, why) => assert_eq!(why, None),
    ///     (chosen, why) => {
    ///         assert_eq!(chosen, Runtime::Tokio);
    ///         assert!(why.unwrap().contains("glommio"));
    ///     }
    /// }
    /// ```
    pub fn choose_saying_why(self, shards: usize) -> Result<(Runtime, Option<String>), String> {
        match self {
            Runtime::Tokio => Ok((Runtime::Tokio, None)),
            Runtime::Glommio => glommio_refusal(shards).map_or(Ok((Runtime::Glommio, None)), Err),
            Runtime::Auto => Ok(match glommio_refusal(shards) {
                None => (Runtime::Glommio, None),
                Some(why) => (Runtime::Tokio, Some(why)),
            }),
        }
    }

    /// The runtime of the shard whose thread calls it (`Glommio` or
    /// `Tokio`), or `None` off the shards: for a batch function that would
    /// rather use its runtime's own timer (glommio's is finer than tokio's
    /// millisecond).
    ///
    /// ```
    /// use ferry_shard::Runtime;
    ///
    /// assert_eq!(Runtime::current(), None, "not a shard's thread");
    /// ```
    pub fn current() -> Option<Runtime> {
        CURRENT.get()
    }

    /// Marks the calling thread as a shard's thread running on `self`.
    pub(crate) fn set_current(self) {
        CURRENT.set(Some(self));
    }
}

thread_local! {
    /// The runtime of the shard whose thread this is.
    static CURRENT: Cell<Option<Runtime>> = const { Cell::new(None) };
}

/// Why glommio cannot run `shards` shards here, if something known says so.
fn glommio_refusal(shards: usize) -> Option<String> {
    if crate::runtime::on_glommio::refused_here() {
        return Some(glommio_failure(
            &"it failed to start earlier in this process",
        ));
    }
    io_uring_disabled().or_else(|| memlock_short(shards))
}

/// `kernel.io_uring_disabled`: 1 lets only a chosen group use io_uring, 2
/// nobody. (Root passes at 1, but a shard is not assumed to run as root.)
fn io_uring_disabled() -> Option<String> {
    let value = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").ok()?;
    match value.trim() {
        "0" | "" => None,
        other => Some(format!(
            "io_uring is turned off on this host (kernel.io_uring_disabled = {other}); \
             glommio needs it: run `sysctl kernel.io_uring_disabled=0`, or use Runtime::Tokio \
             (Runtime::Auto does so by itself)"
        )),
    }
}

/// Whether the locked-memory limit is below glommio's need for `shards`
/// shards, after raising the soft limit as far as the hard one allows.
fn memlock_short(shards: usize) -> Option<String> {
    let need = GLOMMIO_MEMLOCK_PER_SHARD.saturating_mul(shards.max(1) as u64);
    let limit = getrlimit(Resource::Memlock);
    let soft = limit.current.unwrap_or(u64::MAX);
    if soft >= need {
        return None;
    }
    let hard = limit.maximum.unwrap_or(u64::MAX);
    if hard >= need {
        let raised = Rlimit {
            current: Some(need),
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Memlock, raised).is_ok() {
            return None;
        }
    }
    Some(memlock_message(soft, hard, need, shards))
}

pub(crate) fn memlock_message(soft: u64, hard: u64, need: u64, shards: usize) -> String {
    let kib = |bytes: u64| {
        if bytes == u64::MAX {
            "unlimited".to_string()
        } else {
            format!("{} KiB", bytes >> 10)
        }
    };
    format!(
        "the locked-memory limit is {} (hard limit {}), and glommio needs {} for {shards} \
         shard(s): raise it (`ulimit -l {}`; Docker `--ulimit memlock={need}`; systemd \
         `LimitMEMLOCK={need}`), or use Runtime::Tokio (Runtime::Auto does so by itself)",
        kib(soft),
        kib(hard),
        kib(need),
        need >> 10,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokio_is_always_chosen_as_asked() {
        assert_eq!(Runtime::Tokio.choose(64), Ok(Runtime::Tokio));
    }

    #[test]
    fn the_memlock_message_names_the_limit_and_every_way_to_lift_it() {
        let message = memlock_message(64 << 10, 64 << 10, 1 << 20, 2);
        for needle in [
            "64 KiB",
            "1024 KiB",
            "ulimit -l 1024",
            "--ulimit memlock=1048576",
            "LimitMEMLOCK=1048576",
            "Runtime::Tokio",
        ] {
            assert!(message.contains(needle), "{needle} in {message}");
        }
    }
}
