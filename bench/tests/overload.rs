//! The overload scenario, in a test binary of its own: what it counts at
//! the store (`overload::note_sent`) is counted process-wide, one run at a
//! time, so no other run may share the process.

mod support;

use std::time::Duration;

use ferry_bench::report::problems;
use ferry_bench::run::compare::run;
use ferry_bench::sources::load::Mode;
use ferry_bench::store::Store;
use ferry_bench::systems::{Settings, SystemKind};
use support::{load, settings, KEYS};

/// The overload scenario, short: the store ten times slower for a while,
/// callers giving up after 20 ms. Whatever the timing, nothing is lost,
/// every input ends done, timed out or expired, and the store holds at
/// least the inputs answered with success and at most those and the ones
/// whose callers gave up.
#[test]
fn the_overload_scenario_accounts_for_every_input() {
    let store = Store::sim(KEYS, Duration::from_millis(1)).unwrap();
    let mut load = load(Mode::Closed { clients: 200 });
    load.timeout = Some(Duration::from_millis(20));
    load.slowdown = Some("10x@100ms+200ms".parse().unwrap());
    let settings = Settings {
        max_batch_size: 4,
        max_queue_time: Some(Duration::from_millis(10)),
        ..settings()
    };
    for kind in [SystemKind::Ferry, SystemKind::FerryWithdraw] {
        let result = run(kind, Some(1), 8, &settings, store, &load, |_| {}).unwrap();
        assert_eq!(result.lost, 0, "{result:?}");
        assert!(result.read_back_matches(), "{result:?}");
        assert!(
            problems(std::slice::from_ref(&result)).is_empty(),
            "{result:?}"
        );
        let overload = result.overload.as_ref().expect("overload figures");
        assert!(
            overload.sent > 0 && overload.goodput_before > 0.0,
            "{result:?}"
        );
        assert!(
            result.timed_out + result.expired > 0,
            "the slowdown made callers give up: {result:?}"
        );
        if kind == SystemKind::Ferry {
            assert_eq!(result.expired, 0, "plain ferry expires nothing");
        }
    }
    store.stop().unwrap();
}
