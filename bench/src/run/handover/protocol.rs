//! What the coordinator and an owner say to each other: one line each,
//! the coordinator's [`Command`]s on the owner's stdin, the owner's
//! [`Report`]s on its stdout, in the line protocol of
//! [`crate::base::children`]: words separated by spaces, counts as
//! `name=value`, key lists as `1,5,9`, seq ranges as `1-40,45-90` (`-`:
//! none).

use std::fmt;
use std::str::FromStr;

use crate::base::children::{
    failed_line, failed_reason, field, list, number, pairs, parse_list, parse_pairs,
};
use crate::report::handover::{CallerOutcomes, MoveId, OwnerCounts};

/// The coordinator to an owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// The partition map gives `key` to this owner at `epoch`: take the key,
    /// then produce from its `last_seq + 1`.
    Assign {
        /// The key.
        key: u64,
        /// Its new epoch.
        epoch: u64,
    },
    /// For the report only, changing nothing the owner does: the keys were
    /// just assigned elsewhere; count what is in flight now and from here
    /// on. The owner is a zombie for them until the revoke.
    Moving {
        /// The move.
        id: MoveId,
        /// The keys it moves away from this owner.
        keys: Vec<u64>,
    },
    /// Stop producing the keys, flush, and report.
    Revoke {
        /// The move.
        id: MoveId,
        /// The keys it takes from this owner.
        keys: Vec<u64>,
    },
    /// The run is over: stop every key, flush, report what was acknowledged,
    /// and exit.
    Stop,
}

/// An owner to the coordinator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// The engine started, every shard connected.
    Ready,
    /// Took `key` at `epoch`; its state said `last_seq`.
    Took {
        /// The key.
        key: u64,
        /// The epoch taken with.
        epoch: u64,
        /// The last seq applied before.
        last_seq: u64,
        /// Times the take was submitted: more than once when the library
        /// gave up on it (`NotApplied`, its key written by the old owner
        /// at every try).
        submits: u32,
    },
    /// Could not take `key` at `epoch`: a newer owner holds it.
    Stale {
        /// The key.
        key: u64,
        /// The epoch refused.
        epoch: u64,
    },
    /// The first batch of `key` at `epoch` was applied, `micros` after the
    /// assignment reached the owner.
    Served {
        /// The key.
        key: u64,
        /// The epoch.
        epoch: u64,
        /// Microseconds from the assignment to the first input answered ok.
        micros: u64,
    },
    /// A revoke is done: the keys' inputs are all answered.
    Revoked {
        /// The move.
        id: MoveId,
        /// What their callers got.
        callers: CallerOutcomes,
        /// The owner's counts since its previous report.
        counts: OwnerCounts,
    },
    /// At the end: the seqs of `key` this owner answered ok.
    Acked {
        /// The key.
        key: u64,
        /// Inclusive ranges, ascending.
        ranges: Vec<(u64, u64)>,
    },
    /// At the end, after every `Acked`: the owner's counts in all.
    Done {
        /// Over the whole run.
        counts: OwnerCounts,
    },
    /// The owner cannot go on.
    Failed(String),
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Assign { key, epoch } => write!(f, "assign {key} {epoch}"),
            Command::Moving { id, keys } => write!(f, "moving {id} {}", list(keys)),
            Command::Revoke { id, keys } => write!(f, "revoke {id} {}", list(keys)),
            Command::Stop => f.write_str("stop"),
        }
    }
}

impl FromStr for Command {
    type Err = String;

    fn from_str(line: &str) -> Result<Self, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["assign", key, epoch] => Ok(Command::Assign {
                key: number(key)?,
                epoch: number(epoch)?,
            }),
            ["moving", id, keys] => Ok(Command::Moving {
                id: number(id)?,
                keys: parse_list(keys)?,
            }),
            ["revoke", id, keys] => Ok(Command::Revoke {
                id: number(id)?,
                keys: parse_list(keys)?,
            }),
            ["stop"] => Ok(Command::Stop),
            _ => Err(format!("not a command: `{line}`")),
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Report::Ready => f.write_str("ready"),
            Report::Took {
                key,
                epoch,
                last_seq,
                submits,
            } => write!(f, "took {key} {epoch} {last_seq} {submits}"),
            Report::Stale { key, epoch } => write!(f, "stale {key} {epoch}"),
            Report::Served { key, epoch, micros } => write!(f, "served {key} {epoch} {micros}"),
            Report::Revoked {
                id,
                callers,
                counts,
            } => {
                write!(
                    f,
                    "revoked {id} {} {}",
                    callers_fields(callers),
                    count_fields(counts)
                )
            }
            Report::Acked { key, ranges } => write!(f, "acked {key} {}", pairs(ranges, '-')),
            Report::Done { counts } => write!(f, "done {}", count_fields(counts)),
            Report::Failed(why) => f.write_str(&failed_line(why)),
        }
    }
}

impl FromStr for Report {
    type Err = String;

    fn from_str(line: &str) -> Result<Self, String> {
        if let Some(why) = failed_reason(line) {
            return Ok(Report::Failed(why.to_string()));
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["ready"] => Ok(Report::Ready),
            ["took", key, epoch, last_seq, submits] => Ok(Report::Took {
                key: number(key)?,
                epoch: number(epoch)?,
                last_seq: number(last_seq)?,
                submits: number(submits)?,
            }),
            ["stale", key, epoch] => Ok(Report::Stale {
                key: number(key)?,
                epoch: number(epoch)?,
            }),
            ["served", key, epoch, micros] => Ok(Report::Served {
                key: number(key)?,
                epoch: number(epoch)?,
                micros: number(micros)?,
            }),
            ["revoked", id, fields @ ..] => Ok(Report::Revoked {
                id: number(id)?,
                callers: parse_callers(fields)?,
                counts: parse_counts(fields)?,
            }),
            ["acked", key, ranges] => Ok(Report::Acked {
                key: number(key)?,
                ranges: parse_pairs(ranges, '-')?,
            }),
            ["done", fields @ ..] => Ok(Report::Done {
                counts: parse_counts(fields)?,
            }),
            _ => Err(format!("not a report: `{line}`")),
        }
    }
}

/// Ascending seqs as inclusive ranges of consecutive ones.
pub fn ranges_of(sorted: &[u64]) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for &seq in sorted {
        match ranges.last_mut() {
            Some((_, end)) if seq == *end + 1 => *end = seq,
            Some((_, end)) if seq == *end => {}
            _ => ranges.push((seq, seq)),
        }
    }
    ranges
}

fn callers_fields(callers: &CallerOutcomes) -> String {
    format!(
        "in_flight_at_move={} ok={} fenced={} failed={}",
        callers.in_flight_at_move, callers.ok, callers.fenced, callers.failed
    )
}

fn count_fields(counts: &OwnerCounts) -> String {
    format!(
        "reads={} writes={} conflicts={} lost={} refused_fenced={}",
        counts.reads, counts.writes, counts.conflicts, counts.lost, counts.fenced
    )
}

fn parse_callers(fields: &[&str]) -> Result<CallerOutcomes, String> {
    Ok(CallerOutcomes {
        in_flight_at_move: field(fields, "in_flight_at_move")?,
        ok: field(fields, "ok")?,
        fenced: field(fields, "fenced")?,
        failed: field(fields, "failed")?,
    })
}

fn parse_counts(fields: &[&str]) -> Result<OwnerCounts, String> {
    Ok(OwnerCounts {
        reads: field(fields, "reads")?,
        writes: field(fields, "writes")?,
        conflicts: field(fields, "conflicts")?,
        lost: field(fields, "lost")?,
        fenced: field(fields, "refused_fenced")?,
    })
}
