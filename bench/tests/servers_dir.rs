//! The private servers' groundwork, through the public API: ports on
//! loopback, a directory of their own, their logs, and finding their
//! programs.

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;

use ferry_bench::servers::dir::{
    find_in_path, free_port, free_ports, log_file, read_log, tail, version_line, TempDir,
};

#[test]
fn free_ports_are_distinct_and_can_be_bound_on_loopback() {
    let ports = free_ports::<4>().unwrap();
    for (place, port) in ports.iter().enumerate() {
        assert!(*port > 0);
        assert!(!ports[..place].contains(port), "{ports:?}");
    }
    // Nothing holds them once they are handed out: a server can take each.
    let listeners: Vec<TcpListener> = ports
        .iter()
        .map(|port| TcpListener::bind(("127.0.0.1", *port)).unwrap())
        .collect();
    assert_eq!(listeners.len(), 4);
    assert!(free_port().unwrap() > 0);
}

#[test]
fn a_temporary_directory_is_private_and_gone_when_dropped() {
    let dir = TempDir::new("test").unwrap();
    let path = dir.path().to_path_buf();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("ferry-server-test-"), "{name}");
    assert!(name.contains(&std::process::id().to_string()), "{name}");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    std::fs::write(path.join("inside"), "x").unwrap();
    let other = TempDir::new("test").unwrap();
    assert_ne!(other.path(), path, "two directories of one kind differ");
    drop(dir);
    assert!(!path.exists(), "{} is still there", path.display());
}

#[test]
fn a_log_is_appended_to_read_whole_and_its_tail_is_its_last_40_lines() {
    let dir = TempDir::new("log").unwrap();
    let path = dir.path().join("server.log");
    assert_eq!(read_log(&path), "", "no log yet reads as empty");
    assert_eq!(tail(&path), "");
    for line in 1..=30 {
        writeln!(log_file(&path).unwrap(), "line {line}").unwrap();
    }
    // A second handle appends rather than overwrites.
    let mut second = log_file(&path).unwrap();
    for line in 31..=50 {
        writeln!(second, "line {line}").unwrap();
    }
    let whole = read_log(&path);
    assert_eq!(whole.lines().count(), 50);
    assert!(whole.starts_with("line 1\n"), "{whole}");
    let tail = tail(&path);
    let last: Vec<&str> = tail.lines().collect();
    assert_eq!(last.len(), 40);
    assert_eq!(last[0], "line 11");
    assert_eq!(last[39], "line 50");
    let missing = dir.path().join("no-such-dir").join("server.log");
    let err = log_file(&missing).unwrap_err();
    assert!(err.contains("no-such-dir"), "{err}");
}

#[test]
fn programs_are_found_in_the_path_and_tell_their_version() {
    let sh = find_in_path("sh").expect("every Linux has sh in its PATH");
    assert!(sh.is_file());
    assert_eq!(find_in_path("ferry-no-such-program-anywhere"), None);

    let dir = TempDir::new("program").unwrap();
    let program = dir.path().join("fake-server");
    std::fs::write(
        &program,
        "#!/bin/sh\necho 'fake-server 1.2.3'\necho 'second line'\n",
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(version_line(&program).as_deref(), Some("fake-server 1.2.3"));
    assert_eq!(version_line(&dir.path().join("absent")), None);
}
