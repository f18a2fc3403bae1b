//! The member processes of one system's run, as the parent holds them:
//! started, listened to, one killed and replaced, stopped at the end, all
//! through [`crate::base::children`]. ferry's and partition-serial's
//! members are this program again (`kafka --kafka-member N`), stopped by closing
//! their stdin; the parallel-consumer peer is `java -jar`, stopped by
//! `SIGTERM`, and says one JSON line as it exits.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Deserialize;

use crate::base::children::{Children, Heard};
use crate::sources::kafka::consumer::MemberSettings;
use crate::sources::kafka::lines::Line;
use crate::store::Fence;

/// How long members may take to drain, commit and exit once told to stop.
const STOP_WITHIN: Duration = Duration::from_secs(60);

/// How long a member that said its last may take to exit.
const EXIT_WITHIN: Duration = Duration::from_secs(5);

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

    /// ```
    /// use ferry_bench::run::kafka::members::Said;
    /// use ferry_bench::sources::kafka::lines::Line;
    ///
    /// assert_eq!("ready".parse(), Ok(Said::Member(Line::Ready)));
    /// let peer = r#"{"records":3,"lag_p50_us":1.0,"lag_p99_us":2.0}"#;
    /// assert!(matches!(peer.parse(), Ok(Said::Peer(_))));
    /// assert_eq!("INFO started".parse(), Ok(Said::Other("INFO started".to_owned())));
    /// ```
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

/// What one member said, and whether it was killed.
#[derive(Default)]
struct Member {
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
    children: Children<Said>,
    members: Vec<Member>,
    /// Members killed.
    pub kills: u64,
    /// The share of the records applied when the member was killed.
    pub killed_at: Option<f64>,
}

/// A system's lag figures: median and 99th percentile (µs), and the
/// records they cover.
pub type LagFigures = (Option<u64>, Option<u64>, u64);

impl Members {
    /// Starts `count` members.
    pub fn start(launch: Launch, count: usize) -> Result<Members, String> {
        let mut members = Members {
            launch,
            children: Children::new("member"),
            members: Vec::new(),
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
        let index = self.children.len();
        match &self.launch {
            Launch::Ours { program, settings } => {
                self.children.spawn(program, member_args(settings, index))?
            }
            Launch::Java {
                jar,
                max_concurrency,
                settings,
            } => self
                .children
                .spawn("java", java_args(jar, *max_concurrency, settings))?,
        };
        self.members.push(Member::default());
        Ok(())
    }

    /// Handles what members said, waiting up to `wait` for the first line.
    pub fn pump(&mut self, wait: Duration) -> Result<(), String> {
        let mut next = self.children.hear(wait);
        while let Some(heard) = next {
            self.handle(heard)?;
            next = self.children.hear_now();
        }
        self.check_alive()
    }

    fn handle(&mut self, heard: Heard<Said>) -> Result<(), String> {
        let (index, said) = match heard {
            Heard::Said(index, said) => (index, said),
            Heard::Unreadable(index, why) => return Err(format!("member {index}: {why}")),
            Heard::Closed(index) => {
                self.members[index].done = true;
                return Ok(());
            }
        };
        let member = &mut self.members[index];
        match said {
            Said::Member(Line::Failed(why)) => return Err(format!("member {index} failed: {why}")),
            Said::Member(Line::Ready) => member.ready = true,
            Said::Member(Line::Progress {
                rebalances,
                partitions,
            }) => (member.rebalances, member.partitions) = (rebalances, partitions),
            Said::Member(Line::Lag(pairs)) => member.lag = pairs,
            Said::Peer(summary) => member.peer = Some(summary),
            Said::Other(line) => eprintln!("member {index}: {}", shortened(&line)),
        }
        Ok(())
    }

    /// Every member not killed nor stopped still runs.
    fn check_alive(&mut self) -> Result<(), String> {
        for (index, member) in self.members.iter().enumerate() {
            if member.killed || self.children.is_stopping(index) {
                continue;
            }
            if let Some(status) = self.children.exited(index) {
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
        self.children.kill(index)?;
        self.kills += 1;
        self.spawn()?;
        Ok(index)
    }

    /// Tells every member still running to stop, and waits for each to
    /// say its last and exit (killing one that does not in time).
    pub fn stop(&mut self) -> Result<(), String> {
        self.tell_to_stop();
        let deadline = Instant::now() + STOP_WITHIN;
        while self.members.iter().any(|m| !m.killed && !m.done) && Instant::now() < deadline {
            self.pump(Duration::from_millis(100))?;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        self.children.reap(left.max(EXIT_WITHIN));
        Ok(())
    }

    /// Closes every running member's stdin, and sends the Java peer's
    /// `SIGTERM`.
    fn tell_to_stop(&mut self) {
        let running = self.members.iter().enumerate().filter(|(_, m)| !m.killed);
        for (index, _) in running {
            self.children.close_stdin(index);
            if let Launch::Java { .. } = self.launch {
                self.children.terminate(index);
            }
        }
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

    /// Our members' histograms merged; the Java peer's own percentiles,
    /// the highest of its members'.
    pub fn lag_figures(&self) -> LagFigures {
        let peers = self.peer_summaries();
        if !peers.is_empty() {
            return peer_lag(&peers);
        }
        let lag = self.lag();
        match lag.len() {
            0 => (None, None, 0),
            n => (
                Some(lag.value_at_quantile(0.5)),
                Some(lag.value_at_quantile(0.99)),
                n,
            ),
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

/// The Java peer's lag figures: the highest of its members' percentiles.
fn peer_lag(peers: &[PeerSummary]) -> LagFigures {
    let highest = |f: fn(&PeerSummary) -> f64| peers.iter().map(f).fold(0.0, f64::max) as u64;
    let records = peers.iter().map(|p| p.records).sum();
    (
        Some(highest(|p| p.lag_p50_us)),
        Some(highest(|p| p.lag_p99_us)),
        records,
    )
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

/// The Java peer's command line, after `java`.
fn java_args(jar: &Path, max_concurrency: usize, s: &MemberSettings) -> Vec<OsString> {
    let mut args = vec![OsString::from("-jar"), jar.as_os_str().to_owned()];
    let flags = [
        ("--bootstrap", s.bootstrap.clone()),
        ("--topic", s.topic.clone()),
        ("--group", s.group.clone()),
        ("--postgres", s.store.clone()),
        ("--table-prefix", s.prefix.clone()),
        ("--max-concurrency", max_concurrency.to_string()),
    ];
    for (flag, value) in flags {
        args.extend([OsString::from(flag), OsString::from(value)]);
    }
    args
}
