//! Event time: a write below a key's latest event time is out of order.

use ferry_bench::scenarios::event_time::*;

#[test]
fn a_write_below_the_keys_latest_event_time_is_out_of_order() {
    watch(true, 4);
    note_applied(1, &[input_at(10, 1), input_at(30, 2)]);
    note_applied(1, &[input_at(20, 3), input_at(40, 4)]);
    note_applied(2, &[input_at(5, 5)]);
    assert_eq!(
        disorder(),
        Disorder {
            applied: 5,
            out_of_order: 1,
            late: None,
        }
    );
    watch(false, 4);
    note_applied(1, &[input_at(1, 6)]);
    assert_eq!(disorder().applied, 5, "not watching");
}

#[test]
fn the_scenario_gives_inputs_an_event_time_and_ferry_its_order() {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    set_scenario(None, None, false);
    assert_eq!(
        input_of(1),
        None,
        "outside the scenario inputs are counters"
    );
    assert!(ferry_order().is_none());

    let disorder = Duration::from_millis(50);
    set_scenario(Some(disorder), Some(Duration::from_millis(10)), true);
    let now_ms = |_: ()| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    };
    let before = now_ms(());
    let lags: Vec<i64> = (0..200)
        .map(|counter| {
            let input = input_of(counter).expect("in the scenario");
            assert_eq!(input & 0xff, counter & 0xff, "the counter is kept");
            before - event_ms_of(input)
        })
        .collect();
    let after = now_ms(());
    // Each lags its making by 0 to 50 ms, and the lags spread.
    assert!(
        lags.iter()
            .all(|lag| (-(after - before) - 1..=50).contains(lag)),
        "{lags:?}"
    );
    assert!(lags.iter().any(|lag| *lag > 25), "{lags:?}");
    let (_, refuse_late) = ferry_order().expect("ferry ranks by event time");
    assert!(refuse_late);

    // Refusing late inputs needs a hold to be late against.
    set_scenario(Some(disorder), None, true);
    let (_, refuse_late) = ferry_order().unwrap();
    assert!(!refuse_late);
    set_scenario(None, None, false);
}
