//! Child processes of `ferry-load` and the lines they exchange with it:
//! the one way the handover's owners and the Kafka run's members are
//! started, told things, listened to, killed and stopped.
//!
//! - **The parent's side**, [`Children`]: each child is a program with
//!   arguments (most often this very program again), its stdin a pipe the
//!   parent writes lines to ([`Children::tell`]) or closes to say "stop"
//!   ([`Children::close_stdin`]), its stdout read on a thread of its own,
//!   each line parsed as a message `M` and sent, with the child's number,
//!   to one channel ([`Children::hear`]), its stderr the parent's own.
//! - **The child's side**: [`say`] writes one message as a line on stdout,
//!   [`read_stdin`] hands each line of stdin to a callback, and
//!   [`stdin_closed`] tells when the parent closed it.
//! - **The line protocol** both sides share: a message is one line of
//!   words separated by spaces, its first word what it is; counts as
//!   `name=value` ([`field`]), lists as `1,5,9` ([`list`]), lists of pairs
//!   as `1-40,45-90` or `120:3,4000:1` ([`pairs`]), `-` for an empty list;
//!   `failed WHY` for a child that cannot go on ([`failed_line`]). A
//!   message type formats itself with `Display` and parses itself with
//!   `FromStr`, built from these helpers.

use std::ffi::OsStr;
use std::fmt::Display;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::str::FromStr;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

/// What the parent heard from a child, by the child's number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Heard<M> {
    /// A line, parsed.
    Said(usize, M),
    /// A line that did not parse (or could not be read), and why.
    Unreadable(usize, String),
    /// The child's stdout closed: it exited, or is about to.
    Closed(usize),
}

/// The child processes of one run, numbered from 0 in the order started,
/// and what they say, as messages `M`, on one channel.
///
/// ```
/// use std::time::Duration;
/// use ferry_bench::base::children::{Children, Heard};
///
/// let mut children: Children<u64> = Children::new("child");
/// let first = children.spawn("echo", ["42"]).unwrap();
/// assert_eq!(children.hear(Duration::from_secs(10)), Some(Heard::Said(first, 42)));
/// assert_eq!(children.hear(Duration::from_secs(10)), Some(Heard::Closed(first)));
/// children.reap(Duration::from_secs(10));
/// ```
pub struct Children<M> {
    /// What a child is called in messages ("owner", "member").
    noun: &'static str,
    processes: Vec<Child>,
    stdins: Vec<Option<ChildStdin>>,
    heard: Receiver<Heard<M>>,
    send: Sender<Heard<M>>,
}

impl<M> Children<M>
where
    M: FromStr + Send + 'static,
    M::Err: Display,
{
    /// No child yet; `noun` names one in messages.
    pub fn new(noun: &'static str) -> Children<M> {
        let (send, heard) = mpsc::channel();
        Children {
            noun,
            processes: Vec::new(),
            stdins: Vec::new(),
            heard,
            send,
        }
    }

    /// Starts `program` with `args`, its stdin and stdout piped to the
    /// parent, its stderr the parent's; answers its number.
    pub fn spawn<I, S>(&mut self, program: impl AsRef<OsStr>, args: I) -> Result<usize, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let index = self.processes.len();
        let mut command = Command::new(program);
        command.args(args);
        let mut process = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|err| format!("could not start {} {index} ({command:?}): {err}", self.noun))?;
        let stdout = process.stdout.take().ok_or("a child without stdout")?;
        forward(index, stdout, self.send.clone());
        self.stdins.push(process.stdin.take());
        self.processes.push(process);
        Ok(index)
    }

    /// Children started so far, killed and stopped ones included.
    pub fn len(&self) -> usize {
        self.processes.len()
    }

    /// Whether none was started.
    pub fn is_empty(&self) -> bool {
        self.processes.is_empty()
    }

    /// Writes `message` as one line to child `child`'s stdin.
    pub fn tell(&mut self, child: usize, message: &impl Display) -> Result<(), String> {
        let noun = self.noun;
        let stdin = self.stdins[child]
            .as_mut()
            .ok_or_else(|| format!("{noun} {child} is stopped"))?;
        writeln!(stdin, "{message}")
            .and_then(|()| stdin.flush())
            .map_err(|err| format!("telling {noun} {child} `{message}`: {err}"))
    }

    /// Closes child `child`'s stdin: the children of this crate take it
    /// as "stop".
    pub fn close_stdin(&mut self, child: usize) {
        drop(self.stdins[child].take());
    }

    /// Whether child `child`'s stdin is closed.
    pub fn is_stopping(&self, child: usize) -> bool {
        self.stdins[child].is_none()
    }

    /// Sends child `child` `SIGTERM`, for a program that stops on it.
    pub fn terminate(&self, child: usize) {
        let pid = self.processes[child].id() as libc::pid_t;
        // SAFETY: a plain kill(2) of our own child's pid.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }

    /// Kills child `child` (`SIGKILL`) and waits for it.
    pub fn kill(&mut self, child: usize) -> Result<(), String> {
        let process = &mut self.processes[child];
        process
            .kill()
            .map_err(|err| format!("killing {} {child}: {err}", self.noun))?;
        let _ = process.wait();
        Ok(())
    }

    /// How child `child` exited, if it did.
    pub fn exited(&mut self, child: usize) -> Option<ExitStatus> {
        self.processes[child].try_wait().ok().flatten()
    }

    /// The next thing heard, waiting up to `wait` for it.
    pub fn hear(&self, wait: Duration) -> Option<Heard<M>> {
        // The channel never disconnects: `self` holds a sender for the
        // children started later.
        self.heard.recv_timeout(wait).ok()
    }

    /// The next thing heard, if one is there now.
    pub fn hear_now(&self) -> Option<Heard<M>> {
        self.heard.try_recv().ok()
    }

    /// Waits up to `within`, over all of them, for every child to exit,
    /// and kills (saying so) each one still running then.
    pub fn reap(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        for (index, process) in self.processes.iter_mut().enumerate() {
            while Instant::now() < deadline && matches!(process.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if let Ok(None) = process.try_wait() {
                eprintln!(
                    "ferry-load: {} {index} did not exit within {within:?}; killing it",
                    self.noun
                );
                let _ = process.kill();
            }
            let _ = process.wait();
        }
    }
}

impl<M> Drop for Children<M> {
    /// Kills every child still running.
    fn drop(&mut self) {
        for process in &mut self.processes {
            if let Ok(None) = process.try_wait() {
                let _ = process.kill();
                let _ = process.wait();
            }
        }
    }
}

/// Reads child `index`'s lines on a thread of their own, each parsed,
/// until its stdout closes.
fn forward<M>(index: usize, stdout: std::process::ChildStdout, send: Sender<Heard<M>>)
where
    M: FromStr + Send + 'static,
    M::Err: Display,
{
    std::thread::spawn(move || {
        each_line(BufReader::new(stdout), |line| {
            let parsed = line.and_then(|line| line.parse().map_err(|e: M::Err| e.to_string()));
            let heard = match parsed {
                Ok(message) => Heard::Said(index, message),
                Err(why) => Heard::Unreadable(index, why),
            };
            send.send(heard).is_ok()
        });
        let _ = send.send(Heard::Closed(index));
    });
}

/// Hands each line of `reader` to `each` until the end, a read error
/// (handed on, then the end) or `each` answering false.
fn each_line(reader: impl BufRead, mut each: impl FnMut(Result<String, String>) -> bool) {
    for line in reader.lines() {
        let failed = line.is_err();
        let line = line.map_err(|err| format!("reading a line: {err}"));
        if !each(line) || failed {
            return;
        }
    }
}

/// The child's side: writes `message` as one line to stdout, flushed. A
/// parent that went away is not an error here: it closed stdin too, which
/// ends the child.
pub fn say(message: &impl Display) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{message}").and_then(|()| out.flush());
}

/// The child's side: hands each line of stdin to `each`, on a thread of
/// its own, until stdin ends, a read fails (handed on as an error) or
/// `each` answers false; `each` is dropped then.
pub fn read_stdin(each: impl FnMut(Result<String, String>) -> bool + Send + 'static) {
    std::thread::spawn(move || each_line(std::io::stdin().lock(), each));
}

/// The child's side: a channel that gets `()` once stdin ends (the parent
/// closed it, or exited), whatever lines came before.
pub fn stdin_closed() -> Receiver<()> {
    let (closed, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        each_line(std::io::stdin().lock(), |line| line.is_ok());
        let _ = closed.send(());
    });
    receiver
}

/// The line of a child that cannot go on: `failed WHY`, `why` on one line.
///
/// ```
/// use ferry_bench::base::children::{failed_line, failed_reason};
///
/// let line = failed_line("the store:\ngone");
/// assert_eq!(line, "failed the store: gone");
/// assert_eq!(failed_reason(&line), Some("the store: gone"));
/// assert_eq!(failed_reason("ready"), None);
/// ```
pub fn failed_line(why: &str) -> String {
    format!("failed {}", why.replace('\n', " "))
}

/// The WHY of a `failed WHY` line.
pub fn failed_reason(line: &str) -> Option<&str> {
    line.strip_prefix("failed ")
}

/// A word that is a number.
pub fn number<T: FromStr>(word: &str) -> Result<T, String> {
    word.parse()
        .map_err(|_| format!("`{word}` is not a number"))
}

/// The value of `name=value` among `fields`.
///
/// ```
/// use ferry_bench::base::children::field;
///
/// let fields = ["reads=10", "writes=11"];
/// assert_eq!(field::<u64>(&fields, "writes"), Ok(11));
/// assert!(field::<u64>(&fields, "lost").is_err());
/// ```
pub fn field<T: FromStr>(fields: &[&str], name: &str) -> Result<T, String> {
    fields
        .iter()
        .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
        .ok_or_else(|| format!("no `{name}=` in `{}`", fields.join(" ")))
        .and_then(number)
}

/// Items as one word: `1,5,9`, or `-` for none.
///
/// ```
/// use ferry_bench::base::children::{list, parse_list};
///
/// assert_eq!(list(&[1, 5, 9]), "1,5,9");
/// assert_eq!(parse_list::<u64>("1,5,9"), Ok(vec![1, 5, 9]));
/// assert_eq!(parse_list::<u64>(&list::<u64>(&[])), Ok(vec![]));
/// assert!(parse_list::<u64>("1,x").is_err());
/// ```
pub fn list<T: Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "-".to_owned();
    }
    let each: Vec<String> = items.iter().map(T::to_string).collect();
    each.join(",")
}

/// The items of a [`list`] word.
pub fn parse_list<T: FromStr>(word: &str) -> Result<Vec<T>, String> {
    if word == "-" {
        return Ok(Vec::new());
    }
    word.split(',').map(number).collect()
}

/// Pairs as one word, each `a{between}b`: `1-40,45-90`, or `-` for none.
///
/// ```
/// use ferry_bench::base::children::{pairs, parse_pairs};
///
/// assert_eq!(pairs(&[(1, 40), (45, 90)], '-'), "1-40,45-90");
/// assert_eq!(parse_pairs::<u64, u64>("120:3,4000:1", ':'), Ok(vec![(120, 3), (4_000, 1)]));
/// assert_eq!(parse_pairs::<u64, u64>("-", '-'), Ok(vec![]));
/// assert!(parse_pairs::<u64, u64>("1-", '-').is_err());
/// ```
pub fn pairs<A: Display, B: Display>(items: &[(A, B)], between: char) -> String {
    if items.is_empty() {
        return "-".to_owned();
    }
    let each: Vec<String> = items
        .iter()
        .map(|(a, b)| format!("{a}{between}{b}"))
        .collect();
    each.join(",")
}

/// The pairs of a [`pairs`] word.
pub fn parse_pairs<A: FromStr, B: FromStr>(
    word: &str,
    between: char,
) -> Result<Vec<(A, B)>, String> {
    if word == "-" {
        return Ok(Vec::new());
    }
    word.split(',')
        .map(|pair| {
            let (a, b) = pair
                .split_once(between)
                .ok_or_else(|| format!("`{pair}` is not a pair"))?;
            Ok((number(a)?, number(b)?))
        })
        .collect()
}
