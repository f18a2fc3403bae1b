//! The time slices the kernel reports for the shard threads.

use ferry_bench::base::sched::*;
use std::time::Duration;

#[test]
fn reads_the_slice_line() {
    let sched = "ferry-shard-0 (7, #threads: 3)\n---\nse.vruntime : 1.5\nse.sum_exec_runtime : 12.25\nse.slice                                     :               100000\npolicy : 0\n";
    assert_eq!(slice_in(sched), Some(Duration::from_micros(100)));
    assert_eq!(field(sched, "se.sum_exec_runtime"), Some(12.25));
    assert_eq!(slice_in("policy : 0\n"), None);
}

#[test]
fn describes_agreeing_and_differing_shards() {
    let short = Duration::from_micros(100);
    assert_eq!(describe(&[]), None);
    assert_eq!(
        describe(&[(0, short), (1, short)]).as_deref(),
        Some("every shard 100 µs")
    );
    assert_eq!(
        describe(&[(0, Duration::from_micros(1400)), (1, short)]).as_deref(),
        Some("shard 0 1400 µs, shard 1 100 µs")
    );
}

#[test]
fn finds_a_thread_by_its_name() {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let (up, is_up) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("ferry-shard-9".to_string())
        .spawn(move || {
            up.send(()).unwrap();
            let _ = stopped.recv();
        })
        .unwrap();
    is_up.recv().unwrap();
    let found = shard_slices();
    stop.send(()).unwrap();
    thread.join().unwrap();
    assert!(!found.is_empty(), "the named thread was not found");
}
