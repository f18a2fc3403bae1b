//! The systems' names and batch counts.

use ferry_bench::systems::*;

#[test]
fn names_read_back() {
    for kind in SystemKind::ALL {
        assert_eq!(kind.name().parse::<SystemKind>(), Ok(kind));
    }
    assert!("bogus".parse::<SystemKind>().is_err());
}

#[test]
fn unkeyed_names_read_back_and_keyed_ones_are_pointed_elsewhere() {
    for kind in UnkeyedKind::ALL {
        assert_eq!(kind.name().parse::<UnkeyedKind>(), Ok(kind));
    }
    let ferry = "ferry".parse::<UnkeyedKind>().unwrap_err();
    assert!(ferry.contains("`batcher`"), "{ferry}");
    let unbatched = "unbatched".parse::<UnkeyedKind>().unwrap_err();
    assert!(unbatched.contains("ferry-load compare"), "{unbatched}");
    for keying in [Keying::Keyed, Keying::Unkeyed] {
        assert_eq!(keying.name().parse::<Keying>(), Ok(keying));
    }
    assert!("bogus".parse::<Keying>().is_err());
}

#[test]
fn mean_batch_of_a_window() {
    let before = BatchCounts {
        batches: 10,
        inputs: 40,
    };
    let after = BatchCounts {
        batches: 30,
        inputs: 140,
    };
    assert_eq!(after.since(before).mean(), 5.0);
    assert_eq!(BatchCounts::default().mean(), 0.0);
    assert_eq!(outputs(7, 3), vec![8, 9, 10]);
}
