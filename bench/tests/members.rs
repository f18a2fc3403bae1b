//! Member processes and their lines, through the public API: a child of
//! this crate's kind started, told things, listened to, killed and reaped
//! ([`ferry_bench::base::children`]); the words of the shared line
//! protocol; and the handover's commands and reports, each read back as
//! what was written.

use std::time::Duration;

use ferry_bench::base::children::{
    failed_line, failed_reason, field, list, pairs, parse_list, parse_pairs, Children, Heard,
};
use ferry_bench::report::handover::{CallerOutcomes, OwnerCounts};
use ferry_bench::run::handover::protocol::{ranges_of, Command, Report};

const WAIT: Duration = Duration::from_secs(10);

/// A child that echoes each line of its stdin back until stdin closes.
fn echo_child() -> (Children<u64>, usize) {
    let mut children = Children::new("child");
    let index = children.spawn("cat", std::iter::empty::<&str>()).unwrap();
    (children, index)
}

#[test]
fn a_child_is_told_heard_and_stopped_by_closing_its_stdin() {
    let (mut children, child) = echo_child();
    assert!(!children.is_stopping(child));
    children.tell(child, &7).unwrap();
    assert_eq!(children.hear(WAIT), Some(Heard::Said(child, 7)));
    children.tell(child, &"seven").unwrap();
    assert!(matches!(children.hear(WAIT), Some(Heard::Unreadable(c, _)) if c == child));
    children.close_stdin(child);
    assert!(children.is_stopping(child));
    assert!(
        children.tell(child, &8).is_err(),
        "a stopped child is told nothing"
    );
    assert_eq!(children.hear(WAIT), Some(Heard::Closed(child)));
    children.reap(WAIT);
    assert!(children
        .exited(child)
        .is_some_and(|status| status.success()));
    assert_eq!(children.hear_now(), None);
}

#[test]
fn a_child_killed_is_gone_and_the_next_one_gets_the_next_number() {
    let (mut children, first) = echo_child();
    children.kill(first).unwrap();
    assert!(children
        .exited(first)
        .is_some_and(|status| !status.success()));
    assert_eq!(children.hear(WAIT), Some(Heard::Closed(first)));
    let second = children.spawn("cat", std::iter::empty::<&str>()).unwrap();
    assert_eq!((first, second, children.len()), (0, 1, 2));
    assert!(children.exited(second).is_none());
    children.close_stdin(second);
    children.reap(WAIT);
}

#[test]
fn a_child_that_will_not_exit_is_killed_when_reaped() {
    let mut children: Children<u64> = Children::new("child");
    let child = children.spawn("sleep", ["30"]).unwrap();
    children.reap(Duration::from_millis(100));
    assert!(children
        .exited(child)
        .is_some_and(|status| !status.success()));
}

#[test]
fn a_program_that_is_not_there_is_not_started() {
    let mut children: Children<u64> = Children::new("owner");
    let refused = children
        .spawn("/nonexistent/ferry-load", ["--x"])
        .unwrap_err();
    assert!(refused.contains("could not start owner 0"), "{refused}");
    assert!(children.is_empty());
}

#[test]
fn the_protocol_words_read_back_as_written() {
    assert_eq!(failed_reason(&failed_line("a\nb")), Some("a b"));
    assert_eq!(field::<u32>(&["a=1", "b=2"], "b"), Ok(2));
    assert!(field::<u32>(&["a=x"], "a").is_err());
    assert_eq!(parse_list::<u64>(&list(&[3_u64, 1, 2])), Ok(vec![3, 1, 2]));
    assert_eq!(list::<u64>(&[]), "-");
    let ranges = vec![(1_u64, 40_u64), (45, 45)];
    assert_eq!(
        parse_pairs::<u64, u64>(&pairs(&ranges, '-'), '-'),
        Ok(ranges)
    );
    assert_eq!(pairs::<u64, u64>(&[], ':'), "-");
}

#[test]
fn every_command_reads_back_as_what_was_written() {
    let commands = [
        Command::Assign { key: 7, epoch: 3 },
        Command::Moving {
            id: 2,
            keys: vec![1, 5, 9],
        },
        Command::Revoke {
            id: 2,
            keys: vec![4],
        },
        Command::Stop,
    ];
    for command in commands {
        assert_eq!(command.to_string().parse::<Command>(), Ok(command.clone()));
    }
    assert!("assign 1".parse::<Command>().is_err());
}

#[test]
fn every_report_reads_back_as_what_was_written() {
    let counts = OwnerCounts {
        reads: 10,
        writes: 11,
        conflicts: 1,
        lost: 2,
        fenced: 3,
    };
    let reports = [
        Report::Ready,
        Report::Took {
            key: 1,
            epoch: 2,
            last_seq: 40,
            submits: 3,
        },
        Report::Stale { key: 1, epoch: 2 },
        Report::Served {
            key: 1,
            epoch: 2,
            micros: 950,
        },
        Report::Revoked {
            id: 3,
            callers: CallerOutcomes {
                in_flight_at_move: 4,
                ok: 5,
                fenced: 6,
                failed: 0,
            },
            counts,
        },
        Report::Acked {
            key: 3,
            ranges: vec![(1, 40), (45, 45)],
        },
        Report::Acked {
            key: 4,
            ranges: vec![],
        },
        Report::Done { counts },
        Report::Failed("the store: gone".to_string()),
    ];
    for report in reports {
        assert_eq!(report.to_string().parse::<Report>(), Ok(report.clone()));
    }
    assert!("revoked 1 ok=2".parse::<Report>().is_err());
}

#[test]
fn consecutive_seqs_make_one_range() {
    assert_eq!(ranges_of(&[1, 2, 3, 5, 6, 9]), vec![(1, 3), (5, 6), (9, 9)]);
    assert_eq!(ranges_of(&[]), vec![]);
    assert_eq!(ranges_of(&[4, 4, 5]), vec![(4, 5)]);
}
