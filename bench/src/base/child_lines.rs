//! The lines a child process of `ferry-load` writes on its stdout, read
//! on a thread of their own and sent, parsed, to one channel with the
//! child's number: `Some(parsed)` per line, `None` when its stdout closes.
//! The handover's owners and the Kafka run's members report this way.

use std::io::{BufRead, BufReader};
use std::process::ChildStdout;
use std::str::FromStr;
use std::sync::mpsc::Sender;

/// What a child said: its number, and a parsed line or `None` at the end.
pub type Said<T> = (usize, Option<Result<T, String>>);

/// Reads child `index`'s lines until its stdout closes, sending each
/// parsed to `send`, then `None`.
///
/// ```
/// use std::process::{Command, Stdio};
/// use std::sync::mpsc;
/// use ferry_bench::run::handover::protocol::Report;
///
/// let mut child = Command::new("echo").arg("ready").stdout(Stdio::piped()).spawn().unwrap();
/// let (send, said) = mpsc::channel();
/// ferry_bench::base::child_lines::forward::<Report>(0, child.stdout.take().unwrap(), send);
/// assert_eq!(said.recv().unwrap(), (0, Some(Ok(Report::Ready))));
/// assert_eq!(said.recv().unwrap(), (0, None));
/// child.wait().unwrap();
/// ```
pub fn forward<T>(index: usize, stdout: ChildStdout, send: Sender<Said<T>>)
where
    T: FromStr<Err = String> + Send + 'static,
{
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let parsed = line
                .map_err(|err| err.to_string())
                .and_then(|line| line.parse());
            if send.send((index, Some(parsed))).is_err() {
                return;
            }
        }
        let _ = send.send((index, None));
    });
}
