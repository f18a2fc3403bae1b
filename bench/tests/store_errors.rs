//! What a store's error means for its connection and its write, and how
//! it is said.

use ferry_bench::store::StoreError;

fn every_kind() -> Vec<StoreError> {
    vec![
        StoreError::Conflict {
            key: 3,
            expected: 4,
            current: 5,
        },
        StoreError::ConflictsExhausted {
            key: 3,
            attempts: 8,
        },
        StoreError::Disconnected("reset by peer".into()),
        StoreError::Unknown {
            why: "reset by peer".into(),
            from: Some(4),
        },
        StoreError::Unreachable("the store is away".into()),
        StoreError::Stopped,
        StoreError::Server("deadlock detected".into()),
    ]
}

#[test]
fn only_a_failed_connection_is_made_again_and_only_a_sent_write_is_unknown() {
    for error in every_kind() {
        let breaks = matches!(
            error,
            StoreError::Disconnected(_) | StoreError::Unknown { .. }
        );
        assert_eq!(error.breaks_connection(), breaks, "{error:?}");
        assert_eq!(
            error.is_unknown(),
            matches!(error, StoreError::Unknown { .. }),
            "{error:?}"
        );
    }
}

#[test]
fn each_error_says_what_happened_and_whether_anything_was_applied() {
    let said: Vec<String> = every_kind().iter().map(ToString::to_string).collect();
    assert_eq!(
        said[0],
        "conditional write of key 3 expected version 4, the store has 5"
    );
    assert!(
        said[1].contains("key 3") && said[1].contains("8 times"),
        "{}",
        said[1]
    );
    assert!(said[2].contains("nothing applied") && said[2].contains("reset by peer"));
    assert!(said[3].contains("applied or not, unknown"), "{}", said[3]);
    assert_eq!(said[4], "the store is away");
    assert!(said[5].contains("simulated store stopped"), "{}", said[5]);
    assert_eq!(said[6], "the store's server: deadlock detected");
    // Seven kinds, seven different sentences.
    let mut distinct = said.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), said.len());
}
