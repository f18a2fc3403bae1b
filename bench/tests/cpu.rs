//! CPU time: a thread is counted for its owner, also after it ended.

use ferry_bench::base::cpu::*;
use std::time::Duration;

#[test]
fn a_busy_thread_is_counted_for_its_owner() {
    let before = Threads::now();
    let busy = std::thread::Builder::new()
        .name("ferry-load-gen-7".to_string())
        .spawn(|| {
            let mut x = 0_u64;
            while thread_cpu_time() < Duration::from_millis(20) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            // Read while this thread is still alive.
            Threads::now()
        })
        .unwrap();
    let after = busy.join().unwrap();
    let split = after.since(&before);
    assert!(split.load >= Duration::from_millis(10), "{split:?}");
    assert_eq!(split.store, Duration::ZERO, "{split:?}");
}

#[test]
fn a_load_thread_that_ended_is_counted_by_its_guard() {
    let before = Threads::now();
    std::thread::spawn(|| {
        let _counted = count_at_exit();
        let mut x = 0_u64;
        while thread_cpu_time() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    })
    .join()
    .unwrap();
    let split = Threads::now().since(&before);
    assert!(split.load >= Duration::from_millis(20), "{split:?}");
}

#[test]
fn grows_while_working() {
    let before = process_cpu_time();
    let mut x = 0_u64;
    while process_cpu_time() - before < Duration::from_millis(5) {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    assert!(process_cpu_time() > before);
}
