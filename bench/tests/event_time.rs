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
