//! `ferry::entity::PostgresStore` on a private server, through the
//! `Store` and `Connection` traits directly, on a tokio current-thread
//! runtime (the shard's tokio context).
//!
//! What is checked, each on a table of its own:
//!
//! - a read of keys never written answers a default row per key, in order;
//! - a write lands only on its condition: absent and expected 0, or at the
//!   expected version with an epoch at least the row's; a stale epoch is
//!   refused and a newer one accepted;
//! - in one request, some writes land and others do not, each on its own;
//! - an append moves the log's head and its events are in the events
//!   table, in order; a conflicting append inserts no event;
//! - u64, i64, i32, String and &'static str keys, and a u64 above
//!   i64::MAX refused before anything is sent;
//! - shards connecting at once, each creating the tables, all succeed;
//! - a row holding a negative version is refused when read;
//! - a connection killed on the server fails its next request as broken
//!   or lost, never as refused, and connecting again serves.

use ferry::entity::{Append, Connection, PgKey, PostgresStore, Row, Store, StoreError, Write};
use futures::future::join_all;
use tokio_postgres::{Client, NoTls};

use crate::servers::{self, Private};

/// A shard's connection for keys `K`.
type Shard<K> = <PostgresStore as Store<K>>::Connection;

#[test]
fn entity_postgres_store_on_a_private_server() {
    let _turn = super::ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let server = servers::postgres();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(async {
        let admin = admin(&server).await;
        reads_of_keys_never_written_are_default_rows(&server).await;
        writes_land_only_on_their_condition(&server).await;
        a_request_s_writes_are_judged_each_on_its_own(&server).await;
        appends_log_their_events_in_order(&server, &admin).await;
        keys_of_every_kind(&server).await;
        shards_creating_the_tables_at_once_all_connect(&server).await;
        a_negative_version_read_back_is_refused(&server, &admin).await;
        a_killed_connection_is_broken_or_lost(&server, &admin).await;
    });
}

async fn reads_of_keys_never_written_are_default_rows(server: &Private) {
    let shard: Shard<u64> = connect(server, "absent").await;
    let rows = shard.read(&[&3, &1, &2]).await.unwrap();
    assert_eq!(rows, vec![Row::default(); 3]);
    assert_eq!(shard.read(&[]).await.unwrap(), Vec::<Row>::new());
}

async fn writes_land_only_on_their_condition(server: &Private) {
    let shard: Shard<u64> = connect(server, "single").await;
    let key = 1_u64;
    // (expected, version, epoch, state) in turn, and whether each lands.
    let steps: [(u64, u64, u64, &[u8], bool); 7] = [
        (0, 2, 1, b"a", true),  // absent, expected 0
        (0, 2, 1, b"a", false), // the same again: the row is at 2 now
        (2, 3, 0, b"b", false), // a stale epoch
        (2, 3, 1, b"c", true),  // the same epoch
        (3, 5, 4, b"d", true),  // a newer epoch
        (5, 6, 3, b"e", false), // stale again, behind the newer one
        (4, 6, 4, b"f", false), // a wrong expected version
    ];
    for (at, &(expected, version, epoch, state, lands)) in steps.iter().enumerate() {
        let write = Write {
            key: &key,
            expected,
            version,
            epoch,
            state,
        };
        assert_eq!(
            shard.write(&[write]).await.unwrap(),
            vec![lands],
            "step {at}"
        );
    }
    assert_eq!(
        shard.read(&[&key]).await.unwrap(),
        vec![row(5, 4, Some(b"d"))]
    );
}

async fn a_request_s_writes_are_judged_each_on_its_own(server: &Private) {
    let shard: Shard<u64> = connect(server, "mixed").await;
    let (held, other) = (1_u64, 2_u64);
    let first = [
        Write {
            key: &held,
            expected: 0,
            version: 1,
            epoch: 1,
            state: b"h1",
        },
        Write {
            key: &other,
            expected: 0,
            version: 1,
            epoch: 1,
            state: b"o1",
        },
    ];
    assert_eq!(shard.write(&first).await.unwrap(), vec![true, true]);
    let (fresh, missing) = (3_u64, 4_u64);
    let mixed = [
        Write {
            key: &fresh,
            expected: 0,
            version: 2,
            epoch: 1,
            state: b"f2",
        },
        Write {
            key: &held,
            expected: 1,
            version: 3,
            epoch: 1,
            state: b"h3",
        },
        Write {
            key: &missing,
            expected: 7,
            version: 8,
            epoch: 1,
            state: b"m8",
        },
        Write {
            key: &other,
            expected: 0,
            version: 9,
            epoch: 1,
            state: b"o9",
        },
    ];
    assert_eq!(
        shard.write(&mixed).await.unwrap(),
        vec![true, true, false, false]
    );
    let rows = shard
        .read(&[&fresh, &held, &missing, &other])
        .await
        .unwrap();
    let expected = vec![
        row(2, 1, Some(b"f2")),
        row(3, 1, Some(b"h3")),
        Row::default(),
        row(1, 1, Some(b"o1")),
    ];
    assert_eq!(rows, expected);
}

async fn appends_log_their_events_in_order(server: &Private, admin: &Client) {
    let shard: Shard<i64> = connect(server, "logs").await;
    let (log, other) = (-1_i64, -2_i64);
    let first = events(&["e1", "e2"]);
    let append = Append {
        tag: b"t",
        key: &log,
        expected: 0,
        epoch: 1,
        events: &first,
    };
    assert_eq!(shard.append(&[append]).await.unwrap(), vec![true]);
    let next = events(&["e3"]);
    let append = Append {
        tag: b"t",
        key: &log,
        expected: 2,
        epoch: 1,
        events: &next,
    };
    assert_eq!(shard.append(&[append]).await.unwrap(), vec![true]);
    // One conflicting (the log is 3 long), one landing, in one request.
    let (stray, opening) = (events(&["stray"]), events(&["o1", "o2"]));
    let mixed = [
        Append {
            tag: b"t",
            key: &log,
            expected: 2,
            epoch: 1,
            events: &stray,
        },
        Append {
            tag: b"t",
            key: &other,
            expected: 0,
            epoch: 1,
            events: &opening,
        },
    ];
    assert_eq!(shard.append(&mixed).await.unwrap(), vec![false, true]);
    // A stale epoch does not land either.
    let append = Append {
        tag: b"t",
        key: &log,
        expected: 3,
        epoch: 0,
        events: &stray,
    };
    assert_eq!(shard.append(&[append]).await.unwrap(), vec![false]);
    let heads = shard.read(&[&log, &other]).await.unwrap();
    assert_eq!(heads, vec![row(3, 1, Some(b"t")), row(2, 1, Some(b"t"))]);
    assert_eq!(logged(admin, "logs", log).await, ["e1", "e2", "e3"]);
    assert_eq!(logged(admin, "logs", other).await, ["o1", "o2"]);
}

async fn keys_of_every_kind(server: &Private) {
    // Text keys, owned and static, in one table.
    let owned: Shard<String> = connect(server, "names").await;
    let (alice, bob, carol) = ("alice".to_string(), "bob".to_string(), "carol".to_string());
    let writes = [
        Write {
            key: &alice,
            expected: 0,
            version: 1,
            epoch: 0,
            state: b"A",
        },
        Write {
            key: &bob,
            expected: 0,
            version: 2,
            epoch: 0,
            state: b"B",
        },
    ];
    assert_eq!(owned.write(&writes).await.unwrap(), vec![true, true]);
    let rows = owned.read(&[&bob, &carol, &alice]).await.unwrap();
    assert_eq!(
        rows,
        vec![row(2, 0, Some(b"B")), Row::default(), row(1, 0, Some(b"A"))]
    );
    let fixed: Shard<&'static str> = connect(server, "names").await;
    assert_eq!(
        fixed.read(&[&"alice"]).await.unwrap(),
        vec![row(1, 0, Some(b"A"))]
    );
    // i32 keys in a bigint column.
    let small: Shard<i32> = connect(server, "small").await;
    let write = Write {
        key: &-7,
        expected: 0,
        version: 1,
        epoch: 0,
        state: b"s",
    };
    assert_eq!(small.write(&[write]).await.unwrap(), vec![true]);
    assert_eq!(
        small.read(&[&-7]).await.unwrap(),
        vec![row(1, 0, Some(b"s"))]
    );
    // A u64 key: the largest a bigint holds goes; one more is refused, and
    // the connection goes on.
    let wide: Shard<u64> = connect(server, "wide").await;
    let top = i64::MAX as u64;
    let write = Write {
        key: &top,
        expected: 0,
        version: 1,
        epoch: 0,
        state: b"t",
    };
    assert_eq!(wide.write(&[write]).await.unwrap(), vec![true]);
    let beyond = top + 1;
    let write = Write {
        key: &beyond,
        expected: 0,
        version: 1,
        epoch: 0,
        state: b"x",
    };
    let refused = wide.write(&[write]).await;
    assert!(
        matches!(refused, Err(StoreError::Refused(_))),
        "{refused:?}"
    );
    assert!(matches!(
        wide.read(&[&beyond]).await,
        Err(StoreError::Refused(_))
    ));
    assert_eq!(
        wide.read(&[&top]).await.unwrap(),
        vec![row(1, 0, Some(b"t"))]
    );
}

async fn shards_creating_the_tables_at_once_all_connect(server: &Private) {
    for round in 0..5 {
        let store = store(server, &format!("raced_{round}"));
        let shards = join_all((0..4).map(|_| Store::<i32>::connect(&store))).await;
        let shards: Vec<Shard<i32>> = shards
            .into_iter()
            .map(|shard| shard.unwrap_or_else(|err| panic!("round {round}: {err}")))
            .collect();
        // They share the table: one's write is the other's read.
        let write = Write {
            key: &1,
            expected: 0,
            version: 1,
            epoch: 0,
            state: b"r",
        };
        assert_eq!(shards[0].write(&[write]).await.unwrap(), vec![true]);
        assert_eq!(shards[3].read(&[&1]).await.unwrap()[0].version, 1);
    }
}

async fn a_negative_version_read_back_is_refused(server: &Private, admin: &Client) {
    let shard: Shard<i64> = connect(server, "tampered").await;
    admin
        .batch_execute(r#"INSERT INTO "tampered" VALUES (9, -1, 0, NULL)"#)
        .await
        .unwrap();
    match shard.read(&[&9]).await {
        Err(StoreError::Refused(why)) => assert!(why.contains("below 0"), "{why}"),
        other => panic!("a negative version was read as {other:?}"),
    }
    // The connection goes on.
    assert_eq!(shard.read(&[&8]).await.unwrap(), vec![Row::default()]);
}

async fn a_killed_connection_is_broken_or_lost(server: &Private, admin: &Client) {
    let url = format!("{}?application_name=ferry_victim", server.url);
    let store = PostgresStore::new(&url, "victims").unwrap();
    for request in ["read", "write", "append"] {
        let shard: Shard<i64> = Store::<i64>::connect(&store).await.unwrap();
        assert_eq!(shard.read(&[&1]).await.unwrap().len(), 1);
        kill(admin, "ferry_victim").await;
        let events = events(&["e"]);
        let failed = match request {
            "read" => shard.read(&[&1]).await.map(|_| ()),
            "write" => {
                let write = Write {
                    key: &2,
                    expected: 0,
                    version: 1,
                    epoch: 0,
                    state: b"w",
                };
                shard.write(&[write]).await.map(|_| ())
            }
            _ => {
                let append = Append {
                    tag: b"t",
                    key: &3,
                    expected: 0,
                    epoch: 0,
                    events: &events,
                };
                shard.append(&[append]).await.map(|_| ())
            }
        };
        match failed {
            Err(StoreError::Broken(_)) => {}
            Err(StoreError::Lost(_)) if request != "read" => {}
            other => panic!("a {request} on a killed connection answered {other:?}"),
        }
    }
    // Connecting again serves.
    let shard: Shard<i64> = Store::<i64>::connect(&store).await.unwrap();
    assert_eq!(shard.read(&[&1]).await.unwrap(), vec![Row::default()]);
}

/// Ends the sessions named `application`, waiting until they are gone.
async fn kill(admin: &Client, application: &str) {
    let ended: i64 = admin
        .query_one(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) \
             FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(ended, 1, "sessions of {application} ended");
}

/// The events of `key` in `{table}_events`, in order of sequence, which
/// counts from 1 without a gap.
async fn logged(admin: &Client, table: &str, key: i64) -> Vec<String> {
    let sql = format!(r#"SELECT seq, event FROM "{table}_events" WHERE key = $1 ORDER BY seq"#);
    let rows = admin.query(&sql, &[&key]).await.unwrap();
    let mut events = Vec::new();
    for (at, row) in (1_i64..).zip(&rows) {
        assert_eq!(row.get::<_, i64>(0), at, "the sequences of key {key}");
        events.push(String::from_utf8(row.get(1)).unwrap());
    }
    events
}

async fn admin(server: &Private) -> Client {
    let (client, connection) = tokio_postgres::connect(&server.url, NoTls)
        .await
        .unwrap_or_else(|err| panic!("{err}\n{}", server.log()));
    tokio::spawn(connection);
    client
}

fn store(server: &Private, table: &str) -> PostgresStore {
    PostgresStore::new(&server.url, table).unwrap()
}

async fn connect<K: PgKey>(server: &Private, table: &str) -> Shard<K> {
    Store::<K>::connect(&store(server, table))
        .await
        .unwrap_or_else(|err| panic!("{err}\n{}", server.log()))
}

fn row(version: u64, epoch: u64, state: Option<&[u8]>) -> Row {
    Row {
        version,
        epoch,
        state: state.map(<[u8]>::to_vec),
    }
}

fn events(texts: &[&str]) -> Vec<Vec<u8>> {
    texts.iter().map(|text| text.as_bytes().to_vec()).collect()
}
