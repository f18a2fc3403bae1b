//! The member processes of one system's run, as the parent holds them:
//! started, listened to, one killed and replaced, stopped at the end.
//! ferry's and partition-serial's members are this program again
//! (`kafka --kafka-member N`), stopped by closing their stdin; the
//! parallel-consumer peer is `java -jar`, stopped by `SIGTERM`, and says
//! one JSON line as it exits.

use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::str::FromStr;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Deserialize;

use crate::base::child_lines;
use crate::store::Fence;

use super::lines::Line;
use super::member::MemberSettings;

/// How long members may take to drain, commit and exit once told to stop.
const STOP_WITHIN: Duration = Duration::from_secs(60);

/// The parallel-consumer peer's last line.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
pub struct PeerSummary {
    /// Records it processed.
    pub records: u64,
    /// Its lag's median, microseconds.
    pub lag_p50_us: f64,
    /// Its lag's 99th percentile, microseconds.
    pub lag_p99_us: f64,
}

/// A line of any member.
#[derive(Clone, Debug, PartialEq)]
pub enum Said {
    /// One of ours.
    Member(Line),
    /// The Java peer's summary.
    Peer(PeerSummary),
    /// Anything else (the Java peer's own output).
    Other(String),
}

impl FromStr for Said {
    type Err = String;

    fn from_str(line: &str) -> Result<Self, String> {
        if let Ok(said) = line.parse() {
            return Ok(Said::Member(said));
        }
        match serde_json::from_str(line) {
            Ok(summary) => Ok(Said::Peer(summary)),
            Err(_) => Ok(Said::Other(line.to_owned())),
        }
    }
}

/// How to start a member.
#[derive(Clone, Debug)]
pub enum Launch {
    /// This program, as `--kafka-member`.
    Ours {
        /// This program.
        program: PathBuf,
        /// Every member's settings but its index.
        settings: MemberSettings,
    },
    /// `java -jar jar …`.
    Java {
        /// The peer's jar.
        jar: PathBuf,
        /// Its `--max-concurrency`.
        max_concurrency: usize,
        /// Every member's settings but its index.
        settings: MemberSettings,
    },
}

/// One member process and what it said.
struct Member {
    process: Child,
    stdin: Option<ChildStdin>,
    killed: bool,
    ready: bool,
    done: bool,
    rebalances: u64,
    partitions: usize,
    lag: Vec<(u64, u64)>,
    peer: Option<PeerSummary>,
}

/// The members of one system's run.
pub struct Members {
    launch: Launch,
    members: Vec<Member>,
    said: Receiver<child_lines::Said<Said>>,
    send: Sender<child_lines::Said<Said>>,
    /// Members killed.
    pub kills: u64,
    /// The share of the records applied when the member was killed.
    pub killed_at: Option<f64>,
}

impl Members {
    /// Starts `count` members.
    pub fn start(launch: Launch, count: usize) -> Result<Members, String> {
        let (send, said) = mpsc::channel();
        let mut members = Members {
            launch,
            members: Vec::new(),
            said,
            send,
            kills: 0,
            killed_at: None,
        };
        for _ in 0..count {
            members.spawn()?;
        }
        Ok(members)
    }

    /// Starts the next member.
    fn spawn(&mut self) -> Result<(), String> {
        let index = self.members.len();
        let mut command = self.command(index);
        let mut process = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|err| format!("could not start member {index} ({command:?}): {err}"))?;
        let stdout = process.stdout.take().ok_or("a member without stdout")?;
        child_lines::forward(index, stdout, self.send.clone());
        let stdin = process.stdin.take();
        self.members.push(Member {
            process,
            stdin,
            killed: false,
            ready: false,
            done: false,
            rebalances: 0,
            partitions: 0,
            lag: Vec::new(),
            peer: None,
        });
        Ok(())
    }

    fn command(&self, index: usize) -> Command {
        match &self.launch {
            Launch::Ours { program, settings } => {
                let mut command = Command::new(program);
                command.args(member_args(settings, index));
                command
            }
            Launch::Java {
                jar,
                max_concurrency,
                settings: s,
            } => {
                let mut command = Command::new("java");
                command.arg("-jar").arg(jar);
                command.args(["--bootstrap", &s.bootstrap, "--topic", &s.topic]);
                command.args(["--group", &s.group, "--postgres", &s.store]);
                command.args(["--table-prefix", &s.prefix]);
                command.args(["--max-concurrency", &max_concurrency.to_string()]);
                command
            }
        }
    }

    /// Handles what members said, waiting up to `wait` for the first line.
    pub fn pump(&mut self, wait: Duration) -> Result<(), String> {
        let mut next = self
            .said
            .recv_timeout(wait)
            .map_err(|e| e == RecvTimeoutError::Timeout);
        while let Ok((index, said)) = next {
            self.handle(index, said)?;
            next = self.said.try_recv().map_err(|_| true);
        }
        self.check_alive()
    }

    fn handle(&mut self, index: usize, said: Option<Result<Said, String>>) -> Result<(), String> {
        let member = &mut self.members[index];
        match said {
            None => member.done = true,
            Some(Err(why)) => return Err(format!("member {index}: {why}")),
            Some(Ok(Said::Member(Line::Failed(why)))) => {
                return Err(format!("member {index} failed: {why}"))
            }
            Some(Ok(Said::Member(Line::Ready))) => member.ready = true,
            Some(Ok(Said::Member(Line::Progress {
                rebalances,
                partitions,
            }))) => (member.rebalances, member.partitions) = (rebalances, partitions),
            Some(Ok(Said::Member(Line::Lag(pairs)))) => member.lag = pairs,
            Some(Ok(Said::Peer(summary))) => member.peer = Some(summary),
            Some(Ok(Said::Other(line))) => eprintln!("member {index}: {}", shortened(&line)),
        }
        Ok(())
    }

    /// Every member not killed nor stopped still runs.
    fn check_alive(&mut self) -> Result<(), String> {
        for (index, member) in self.members.iter_mut().enumerate() {
            let stopping = member.stdin.is_none();
            if member.killed || stopping {
                continue;
            }
            if let Ok(Some(status)) = member.process.try_wait() {
                return Err(format!("member {index} exited during the run ({status})"));
            }
        }
        Ok(())
    }

    /// Kills the member still running that last said it holds the most
    /// partitions (the first of equals; the Java peer's say nothing, so its
    /// first) with `SIGKILL`, and starts a new one in its place.
    pub fn kill_one(&mut self) -> Result<usize, String> {
        let (index, member) = self
            .members
            .iter_mut()
            .enumerate()
            .filter(|(_, m)| !m.killed)
            .rev()
            .max_by_key(|(_, m)| m.partitions)
            .ok_or("no member to kill")?;
        member.killed = true;
        member
            .process
            .kill()
            .map_err(|err| format!("killing member {index}: {err}"))?;
        let _ = member.process.wait();
        self.kills += 1;
        self.spawn()?;
        Ok(index)
    }

    /// Tells every member still running to stop, and waits for each to
    /// say its last and exit (killing one that does not in time).
    pub fn stop(&mut self) -> Result<(), String> {
        for member in self.members.iter_mut().filter(|m| !m.killed) {
            match self.launch {
                Launch::Ours { .. } => drop(member.stdin.take()),
                Launch::Java { .. } => {
                    drop(member.stdin.take());
                    // SAFETY: a plain kill(2) of our own child's pid.
                    unsafe { libc::kill(member.process.id() as libc::pid_t, libc::SIGTERM) };
                }
            }
        }
        let deadline = Instant::now() + STOP_WITHIN;
        while self.members.iter().any(|m| !m.killed && !m.done) && Instant::now() < deadline {
            self.pump(Duration::from_millis(100))?;
        }
        for (index, member) in self.members.iter_mut().enumerate() {
            if !member.killed && !member.done {
                eprintln!(
                    "ferry-load: member {index} did not stop within {STOP_WITHIN:?}; killing it"
                );
                let _ = member.process.kill();
            }
            let _ = member.process.wait();
        }
        Ok(())
    }

    /// Members that said `ready` (or, for the Java peer, were started).
    pub fn ready(&self) -> usize {
        self.members.iter().filter(|m| m.ready).count()
    }

    /// Rebalances every member reported, killed ones' up to their kill
    /// (`None`: the Java peer does not report them).
    pub fn rebalances(&self) -> Option<u64> {
        match self.launch {
            Launch::Ours { .. } => Some(self.members.iter().map(|m| m.rebalances).sum()),
            Launch::Java { .. } => None,
        }
    }

    /// Every member's lag together (the killed ones' are lost with them).
    pub fn lag(&self) -> Histogram<u64> {
        let mut lag = Histogram::new(3).expect("3 significant figures are valid");
        for member in &self.members {
            Line::add_lag(&member.lag, &mut lag);
        }
        lag
    }

    /// The Java peer's summaries, one per member that exited cleanly.
    pub fn peer_summaries(&self) -> Vec<PeerSummary> {
        self.members.iter().filter_map(|m| m.peer).collect()
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        for member in &mut self.members {
            if let Ok(None) = member.process.try_wait() {
                let _ = member.process.kill();
                let _ = member.process.wait();
            }
        }
    }
}

/// A line of the Java peer's own output, cut to a readable length.
fn shortened(line: &str) -> &str {
    const SHOWN: usize = 200;
    match line.char_indices().nth(SHOWN) {
        Some((end, _)) => &line[..end],
        None => line,
    }
}

/// The command line of our member `index`.
fn member_args(s: &MemberSettings, index: usize) -> Vec<String> {
    let mut args = vec![
        "kafka".to_owned(),
        format!("--kafka-member={index}"),
        format!("--kafka-system={}", s.system),
        format!("--kafka-bootstrap={}", s.bootstrap),
        format!("--store={}", s.store),
        format!("--topic={}", s.topic),
        format!("--group={}", s.group),
        format!("--table-prefix={}", s.prefix),
        format!("--shards={}", s.shards),
        format!("--start-us={}", s.start_us),
    ];
    if s.fence == Fence::Off {
        args.push("--no-fence".to_owned());
    }
    args
}
