//! The store's addresses, and a simulated store's connection and pool.

use std::time::Duration;

use futures::executor::block_on;

use ferry_bench::store::{Contents, Pool, Store, StoreAddress};

#[test]
fn addresses_parse_and_hide_their_password() {
    assert_eq!("sim".parse::<StoreAddress>(), Ok(StoreAddress::Sim));
    let pg: StoreAddress = "postgres://ferry:secret@127.0.0.1:5432/db".parse().unwrap();
    assert!(pg.is_real());
    assert_eq!(pg.to_string(), "postgres://ferry:…@127.0.0.1:5432/db");
    let redis: StoreAddress = "redis://127.0.0.1:6379/0".parse().unwrap();
    assert_eq!(redis.to_string(), "redis://127.0.0.1:6379/0");
    let refused = "mysql://root:hunter2@db"
        .parse::<StoreAddress>()
        .unwrap_err();
    assert!(refused.contains("sim, postgres://"), "{refused}");
    assert!(!refused.contains("hunter2"), "{refused}");
}

#[test]
fn a_sim_connection_applies_batches_and_its_pool_has_one() {
    let store = Store::sim(3, Duration::ZERO).unwrap();
    let pool = Pool::open(store, 4, None).unwrap();
    assert_eq!(pool.len(), 1);
    let connection = block_on(store.connect()).unwrap();
    assert_eq!(block_on(connection.apply(1, 2, 7)), Ok(0));
    assert_eq!(block_on(pool.get().apply(1, 1, 3)), Ok(2));
    assert_eq!(block_on(pool.get().apply_unkeyed(4, 10)), Ok(0));
    let held = store.contents().unwrap();
    assert_eq!(held, Contents { inputs: 7, sum: 20 });
    assert_eq!(
        held.since(Contents { inputs: 3, sum: 7 }),
        Contents { inputs: 4, sum: 13 }
    );
    assert_eq!(store.reset(), Ok(()));
    assert_eq!(store.server_cpu_time(), None);
}

#[test]
fn bare_postgres_and_redis_ask_for_a_private_server() {
    use ferry_bench::servers::Kind;
    for (text, kind) in [("postgres", Kind::Postgres), ("redis", Kind::Redis)] {
        let address: StoreAddress = text.parse().unwrap();
        assert_eq!(address, StoreAddress::Private(kind));
        assert!(address.is_real());
        assert_eq!(address.to_string(), text);
    }
    for text in ["kafka", "postgresql", "Redis", "postgres:", "redis:/"] {
        assert!(text.parse::<StoreAddress>().is_err(), "{text}");
    }
    let refused = "mysql".parse::<StoreAddress>().unwrap_err();
    assert!(
        refused.contains("postgres or redis for a private one"),
        "{refused}"
    );
    let opened = Store::open(&StoreAddress::Private(Kind::Redis), 1, Duration::ZERO);
    assert!(opened.is_err());
}

/// The path of the systems other than ferry's on a real store, on the
/// library's in-memory store: the same rows and conditions as on a server.
#[test]
fn a_linked_connection_reads_then_writes_each_key_on_its_condition() {
    use ferry::entity::{Fault, MemoryStore, Request, Store as _};
    use ferry_bench::store::{Linked, StoreError, Write};

    let store = MemoryStore::<u64>::new();
    let linked = Linked::new(block_on(store.connect()).unwrap(), 4);
    // A keyed batch answers the version it started from.
    assert_eq!(block_on(linked.apply(1, 2, 7)), Ok(0));
    assert_eq!(block_on(linked.apply(1, 1, 3)), Ok(2));
    let row = store.row(&1).unwrap();
    assert_eq!((row.version, row.state.as_deref()), (3, Some(&b"10"[..])));
    // Somebody else wrote key 2: a trip reads every key's row and writes
    // each from the version it read.
    store.write_outside(2, |row| {
        row.version = 5;
        row.state = Some(b"1".to_vec());
    });
    let writes = vec![
        Write {
            key: 1,
            count: 1,
            sum: 1,
        },
        Write {
            key: 2,
            count: 2,
            sum: 4,
        },
    ];
    assert_eq!(block_on(linked.apply_many(writes)), vec![Ok(3), Ok(5)]);
    assert_eq!(store.row(&2).unwrap().state.as_deref(), Some(&b"5"[..]));
    // Unkeyed batches write rows of their own past the keys.
    assert_eq!(block_on(linked.apply_unkeyed(3, 9)), Ok(0));
    assert_eq!(block_on(linked.apply_unkeyed(2, 1)), Ok(3));
    assert_eq!(store.row(&4).unwrap().version, 3);
    assert_eq!(store.row(&5).unwrap().state.as_deref(), Some(&b"1"[..]));
    // A write whose reply is lost has an unknown outcome, from the version
    // it was conditioned on.
    store.faults(|request| (request == Request::Write).then_some(Fault::LoseReply));
    assert!(matches!(
        block_on(linked.apply(1, 1, 1)),
        Err(StoreError::Unknown { from: Some(4), .. })
    ));
    store.no_faults();
    // Every write followed its own read, so none conflicted.
    assert_eq!(linked.conflicts(), 0);
}
