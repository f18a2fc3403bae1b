//! `ferry::entity::RedisStore` on a private Redis, used as a shard uses
//! it: through the `Store` and `Connection` traits, on a tokio
//! current-thread runtime. Each part keeps to a key prefix of its own,
//! and looks at the raw keys through a plain client of its own (`admin`).
//!
//! What is checked:
//!
//! - keys never written read as default rows, in the order asked;
//! - a write lands only on its condition: absent and expected 0, or the
//!   expected version under an epoch at least the held one; a wrong
//!   version or a stale epoch does not land, a newer epoch does; versions
//!   and epochs past 2^53 are told apart exactly, and epoch 1000 is newer
//!   than 999;
//! - the writes of one request are judged each alone, in order (a key
//!   given twice is judged the second time on what the first did);
//! - 2 500 keys go in one write, one append and one read, each judged
//!   on its own;
//! - appended events are read back in order from the key's list, the head
//!   moving to the log's length; a conflicting or stale append pushes
//!   nothing; one request mixes appends that land and that do not; 2 500
//!   events go in one append;
//! - a key's row is the string `{prefix}:{key}`, `{version}:{epoch}:`
//!   and the state; u64 and String keys name the same rows, and two
//!   prefixes do not see each other's keys;
//! - a key of another type, or a string that is not a row, is refused,
//!   read alone or with others (`GET` and `MGET`) or written,
//!   and the request it was in changed nothing at all,
//!   and the connection goes on;
//! - a server that lost the scripts (`SCRIPT FLUSH`) is given them again
//!   and the write and the append land, once each;
//! - a connection killed on the server (`CLIENT KILL`) fails its next
//!   read as broken and its next write as broken or lost, never refused;
//!   connecting again serves;
//! - a server that is not there fails the connect as broken, saying so.

use ferry::entity::{Append, Connection, RedisStore, Row, Store, StoreError, Write};
use redis::aio::MultiplexedConnection;

use crate::servers;

/// A shard's connection (one type for every key type).
type Shard = <RedisStore as Store<u64>>::Connection;

/// 2^53: past it, Lua's numbers (doubles) no longer hold every integer.
const TWO_53: u64 = 1 << 53;

#[test]
fn entity_redis_store_on_a_private_server() {
    let _turn = super::ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let server = servers::redis();
    let url = server.url.as_str();
    current_thread().block_on(async {
        let mut admin = admin(url).await;
        absent_keys_read_as_default_rows(url).await;
        a_write_lands_only_on_its_condition(url, &mut admin).await;
        large_numbers_are_compared_exactly(url).await;
        one_request_judges_each_write_alone(url).await;
        many_keys_go_in_one_request(url).await;
        appends_are_read_back_in_order(url, &mut admin).await;
        u64_and_string_keys_name_their_rows(url, &mut admin).await;
        a_wrong_type_is_refused_and_changes_nothing(url, &mut admin).await;
        flushed_scripts_are_loaded_again(url, &mut admin).await;
        a_killed_connection_is_broken_or_lost(url, &mut admin).await;
    });
}

#[test]
fn entity_redis_store_not_there_is_broken() {
    let store = RedisStore::new("redis://127.0.0.1:1", "nowhere").expect("a Redis URL");
    let connected = current_thread().block_on(Store::<u64>::connect(&store));
    match connected {
        Err(StoreError::Broken(why)) => {
            assert!(
                why.contains("could not connect to redis://127.0.0.1:1"),
                "{why}"
            );
            assert!(why.contains("is redis-server running"), "{why}");
        }
        other => panic!("expected Broken, got {other:?}"),
    }
}

async fn flushed_scripts_are_loaded_again(url: &str, admin: &mut MultiplexedConnection) {
    let shard = shard::<u64>(url, "flushed").await;
    let flush = || async {
        let flushed: String = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async(&mut admin.clone())
            .await
            .unwrap();
        assert_eq!(flushed, "OK");
    };
    flush().await;
    let write = Write {
        key: &1_u64,
        expected: 0,
        version: 1,
        epoch: 1,
        state: b"s",
    };
    assert_eq!(shard.write(&[write]).await, Ok(vec![true]));
    flush().await;
    let events = [b"e".to_vec()];
    let append = Append {
        key: &2_u64,
        expected: 0,
        epoch: 1,
        events: &events,
        tag: b"t",
    };
    assert_eq!(shard.append(&[append]).await, Ok(vec![true]));
    assert_eq!(
        shard.read(&[&1, &2]).await.unwrap(),
        vec![row(1, 1, b"s"), row(1, 1, b"t")]
    );
}

async fn absent_keys_read_as_default_rows(url: &str) {
    let shard = shard::<u64>(url, "absent").await;
    assert_eq!(
        shard.read(&[&9, &1, &5]).await.unwrap(),
        vec![Row::default(); 3]
    );
    let none: &[&u64] = &[];
    assert_eq!(shard.read(none).await.unwrap(), Vec::<Row>::new());
}

async fn a_write_lands_only_on_its_condition(url: &str, admin: &mut MultiplexedConnection) {
    let shard = shard::<u64>(url, "single").await;
    // Each step: (expected, version, epoch, state), and whether it lands.
    let steps: [(u64, u64, u64, &[u8], bool); 8] = [
        (0, 3, 2, b"one", true),     // absent, expected 0
        (0, 3, 2, b"again", false),  // no longer absent
        (3, 4, 1, b"stale", false),  // an older epoch
        (3, 4, 2, b"two", true),     // the same epoch
        (4, 6, 5, b"three", true),   // a newer epoch
        (6, 7, 4, b"behind", false), // older than the newer one
        (5, 7, 5, b"wrong", false),  // not the held version
        (6, 7, 5, b"four", true),
    ];
    for (at, &(expected, version, epoch, state, lands)) in steps.iter().enumerate() {
        let write = Write {
            key: &10_u64,
            expected,
            version,
            epoch,
            state,
        };
        assert_eq!(shard.write(&[write]).await, Ok(vec![lands]), "step {at}");
    }
    assert_eq!(shard.read(&[&10]).await.unwrap(), vec![row(7, 5, b"four")]);
    let raw: Vec<u8> = redis::cmd("GET")
        .arg("single:10")
        .query_async(admin)
        .await
        .unwrap();
    assert_eq!(raw, b"7:5:four".to_vec());
}

async fn large_numbers_are_compared_exactly(url: &str) {
    let shard = shard::<u64>(url, "large").await;
    let write = |expected, version, epoch| Write {
        key: &1_u64,
        expected,
        version,
        epoch,
        state: b"s",
    };
    assert_eq!(
        shard.write(&[write(0, TWO_53 + 1, TWO_53 + 1)]).await,
        Ok(vec![true])
    );
    // Equal to the held numbers as doubles, not as integers.
    assert_eq!(
        shard.write(&[write(TWO_53, 1, TWO_53 + 1)]).await,
        Ok(vec![false])
    );
    assert_eq!(
        shard.write(&[write(TWO_53 + 1, 2, TWO_53)]).await,
        Ok(vec![false])
    );
    assert_eq!(
        shard.write(&[write(TWO_53 + 1, u64::MAX, u64::MAX)]).await,
        Ok(vec![true])
    );
    assert_eq!(
        shard.read(&[&1]).await.unwrap(),
        vec![row(u64::MAX, u64::MAX, b"s")]
    );
    // Epochs of different lengths: 1000 is newer than 999.
    let at = |expected, epoch| Write {
        key: &2_u64,
        expected,
        version: expected + 1,
        epoch,
        state: b"e",
    };
    assert_eq!(shard.write(&[at(0, 999)]).await, Ok(vec![true]));
    assert_eq!(shard.write(&[at(1, 99)]).await, Ok(vec![false]));
    assert_eq!(shard.write(&[at(1, 1000)]).await, Ok(vec![true]));
    assert_eq!(shard.read(&[&2]).await.unwrap(), vec![row(2, 1000, b"e")]);
}

async fn one_request_judges_each_write_alone(url: &str) {
    let shard = shard::<u64>(url, "mixed").await;
    let write = |key: &'static u64, expected, epoch, state: &'static [u8]| Write {
        key,
        expected,
        version: expected + 1,
        epoch,
        state,
    };
    let set_up = [write(&1, 0, 1, b"a1"), write(&2, 0, 3, b"b1")];
    assert_eq!(shard.write(&set_up).await, Ok(vec![true, true]));
    let request = [
        write(&1, 1, 1, b"a2"), // lands
        write(&2, 1, 2, b"b2"), // a stale epoch
        write(&3, 0, 1, b"c1"), // absent, expected 0: lands
        write(&4, 2, 1, b"d3"), // absent, expected 2
        write(&1, 2, 1, b"a3"), // judged after the first: lands
        write(&1, 2, 1, b"a4"), // and now conflicts
    ];
    assert_eq!(
        shard.write(&request).await,
        Ok(vec![true, false, true, false, true, false])
    );
    assert_eq!(
        shard.read(&[&1, &2, &3, &4]).await.unwrap(),
        vec![
            row(3, 1, b"a3"),
            row(1, 3, b"b1"),
            row(1, 1, b"c1"),
            Row::default()
        ]
    );
}

async fn many_keys_go_in_one_request(url: &str) {
    let rows = shard::<u64>(url, "many").await;
    let keys: Vec<u64> = (0..2_500).collect();
    let all: Vec<&u64> = keys.iter().collect();
    // Every third key written before: the request's write of it, expecting
    // version 0, does not land.
    let before: Vec<Write<'_, u64>> = keys
        .iter()
        .filter(|key| *key % 3 == 0)
        .map(|key| Write {
            key,
            expected: 0,
            version: 5,
            epoch: 1,
            state: b"before",
        })
        .collect();
    assert_eq!(rows.write(&before).await, Ok(vec![true; before.len()]));
    let writes: Vec<Write<'_, u64>> = keys
        .iter()
        .map(|key| Write {
            key,
            expected: 0,
            version: 1,
            epoch: 1,
            state: b"now",
        })
        .collect();
    let landed = rows.write(&writes).await.unwrap();
    assert_eq!(
        landed,
        keys.iter().map(|key| key % 3 != 0).collect::<Vec<_>>()
    );
    let read = rows.read(&all).await.unwrap();
    for (key, row) in keys.iter().zip(&read) {
        let expected = if key % 3 == 0 {
            self::row(5, 1, b"before")
        } else {
            self::row(1, 1, b"now")
        };
        assert_eq!(row, &expected, "key {key}");
    }
    // As many logs in one append.
    let logs = shard::<u64>(url, "many-logs").await;
    let events = [b"e".to_vec()];
    let appends: Vec<Append<'_, u64>> = keys
        .iter()
        .map(|key| Append {
            tag: b"t",
            key,
            expected: 0,
            epoch: 1,
            events: &events,
        })
        .collect();
    assert_eq!(logs.append(&appends).await, Ok(vec![true; keys.len()]));
    assert_eq!(logs.append(&appends).await, Ok(vec![false; keys.len()]));
    assert_eq!(logs.read(&all).await.unwrap(), vec![head(1, 1); keys.len()]);
}

async fn appends_are_read_back_in_order(url: &str, admin: &mut MultiplexedConnection) {
    let shard = shard::<u64>(url, "logs").await;
    let events = |texts: &[&str]| -> Vec<Vec<u8>> {
        texts.iter().map(|text| text.as_bytes().to_vec()).collect()
    };
    let (first, second, stray) = (events(&["e1", "e2", "e3"]), events(&["e4"]), events(&["x"]));
    let append = |key: &'static u64, expected, epoch, events| Append {
        tag: b"t",
        key,
        expected,
        epoch,
        events,
    };
    assert_eq!(
        shard.append(&[append(&5, 0, 1, &first)]).await,
        Ok(vec![true])
    );
    assert_eq!(shard.read(&[&5]).await.unwrap(), vec![head(3, 1)]);
    assert_eq!(
        shard.append(&[append(&5, 3, 1, &second)]).await,
        Ok(vec![true])
    );
    // A conflicting version, then a stale epoch: neither pushes anything.
    assert_eq!(
        shard.append(&[append(&5, 3, 1, &stray)]).await,
        Ok(vec![false])
    );
    assert_eq!(
        shard.append(&[append(&5, 4, 0, &stray)]).await,
        Ok(vec![false])
    );
    assert_eq!(
        list(admin, "logs:5:events").await,
        events(&["e1", "e2", "e3", "e4"])
    );
    // One request: a new log lands, a conflicting append does not, and an
    // append of no events moves only the epoch.
    let mixed = [
        append(&6, 0, 2, &first),
        append(&5, 3, 2, &stray),
        append(&5, 4, 2, &[]),
    ];
    assert_eq!(shard.append(&mixed).await, Ok(vec![true, false, true]));
    assert_eq!(
        shard.read(&[&5, &6]).await.unwrap(),
        vec![head(4, 2), head(3, 2)]
    );
    assert_eq!(list(admin, "logs:6:events").await, first);
    assert_eq!(list(admin, "logs:5:events").await.len(), 4);
    // Many events in one append, in order.
    let many: Vec<Vec<u8>> = (0..2_500)
        .map(|n: u32| n.to_string().into_bytes())
        .collect();
    assert_eq!(
        shard.append(&[append(&7, 0, 1, &many)]).await,
        Ok(vec![true])
    );
    assert_eq!(list(admin, "logs:7:events").await, many);
    assert_eq!(shard.read(&[&7]).await.unwrap(), vec![head(2_500, 1)]);
}

async fn u64_and_string_keys_name_their_rows(url: &str, admin: &mut MultiplexedConnection) {
    let numbers = shard::<u64>(url, "kinds").await;
    let texts = shard::<String>(url, "kinds").await;
    let (number, text) = (42_u64, String::from("cart 1"));
    let by_number = Write {
        key: &number,
        expected: 0,
        version: 1,
        epoch: 1,
        state: b"n",
    };
    let by_text = Write {
        key: &text,
        expected: 0,
        version: 2,
        epoch: 1,
        state: b"t",
    };
    assert_eq!(numbers.write(&[by_number]).await, Ok(vec![true]));
    assert_eq!(texts.write(&[by_text]).await, Ok(vec![true]));
    // Either connection reads either kind: the names are the keys' text.
    assert_eq!(texts.read(&[&number]).await.unwrap(), vec![row(1, 1, b"n")]);
    assert_eq!(numbers.read(&[&text]).await.unwrap(), vec![row(2, 1, b"t")]);
    let names: (bool, bool) = redis::pipe()
        .exists("kinds:42")
        .exists("kinds:cart 1")
        .query_async(admin)
        .await
        .unwrap();
    assert_eq!(names, (true, true));
    let elsewhere = shard::<u64>(url, "other").await;
    assert_eq!(
        elsewhere.read(&[&number]).await.unwrap(),
        vec![Row::default()]
    );
}

async fn a_wrong_type_is_refused_and_changes_nothing(url: &str, admin: &mut MultiplexedConnection) {
    let shard = shard::<u64>(url, "typed").await;
    // Key 9 holds a hash, key 10 a string that is not a row, and key 7's
    // list a string.
    let _: () = redis::pipe()
        .hset("typed:9", "version", "0")
        .ignore()
        .set("typed:10", "a string")
        .ignore()
        .set("typed:7:events", "not a list")
        .ignore()
        .query_async(admin)
        .await
        .unwrap();
    let write = |key: &'static u64| Write {
        key,
        expected: 0,
        version: 1,
        epoch: 1,
        state: b"s",
    };
    // Key 8 comes first and would land: the refusal undoes nothing,
    // because nothing was changed.
    for wrong in [&9, &10] {
        let refused = shard.write(&[write(&8), write(wrong)]).await;
        assert!(
            matches!(&refused, Err(StoreError::Refused(why)) if why.contains("WRONGTYPE")),
            "key {wrong}: {refused:?}"
        );
        // Many keys are read with `MGET`, one with `GET`: both refuse it.
        for keys in [&[&8, wrong][..], &[wrong]] {
            let read = shard.read(keys).await;
            assert!(
                matches!(&read, Err(StoreError::Refused(why)) if why.contains("WRONGTYPE")),
                "keys {keys:?}: {read:?}"
            );
        }
    }
    let events = [b"e".to_vec()];
    let append = |key: &'static u64| Append {
        tag: b"t",
        key,
        expected: 0,
        epoch: 1,
        events: &events,
    };
    for wrong in [&7, &9, &10] {
        let refused = shard.append(&[append(&6), append(wrong)]).await;
        assert!(
            matches!(&refused, Err(StoreError::Refused(why)) if why.contains("WRONGTYPE")),
            "key {wrong}: {refused:?}"
        );
    }
    let left: (bool, bool, bool) = redis::pipe()
        .exists("typed:8")
        .exists("typed:6")
        .exists("typed:6:events")
        .query_async(admin)
        .await
        .unwrap();
    assert_eq!(left, (false, false, false));
    // The connection goes on.
    assert_eq!(shard.write(&[write(&8)]).await, Ok(vec![true]));
    assert_eq!(shard.append(&[append(&6)]).await, Ok(vec![true]));
    assert_eq!(
        shard.read(&[&8, &6]).await.unwrap(),
        vec![row(1, 1, b"s"), head(1, 1)]
    );
}

async fn a_killed_connection_is_broken_or_lost(url: &str, admin: &mut MultiplexedConnection) {
    let reader = shard::<u64>(url, "killed").await;
    let writer = shard::<u64>(url, "killed").await;
    let write = |expected| Write {
        key: &1_u64,
        expected,
        version: expected + 1,
        epoch: 1,
        state: b"s",
    };
    assert_eq!(writer.write(&[write(0)]).await, Ok(vec![true]));
    assert_eq!(reader.read(&[&1]).await.unwrap(), vec![row(1, 1, b"s")]);
    let killed: u64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query_async(admin)
        .await
        .unwrap();
    assert!(killed >= 2, "{killed} connections killed");
    let read = reader.read(&[&1]).await;
    assert!(matches!(read, Err(StoreError::Broken(_))), "{read:?}");
    let written = writer.write(&[write(1)]).await;
    assert!(
        matches!(written, Err(StoreError::Broken(_) | StoreError::Lost(_))),
        "{written:?}"
    );
    // Known failed: not sent again.
    let again = writer.write(&[write(1)]).await;
    assert!(matches!(again, Err(StoreError::Broken(_))), "{again:?}");
    let fresh = shard::<u64>(url, "killed").await;
    assert_eq!(fresh.read(&[&1]).await.unwrap(), vec![row(1, 1, b"s")]);
    assert_eq!(fresh.write(&[write(1)]).await, Ok(vec![true]));
}

async fn shard<K: std::fmt::Display>(url: &str, prefix: &str) -> Shard {
    let store = RedisStore::new(url, prefix).expect("a Redis URL");
    Store::<K>::connect(&store)
        .await
        .unwrap_or_else(|err| panic!("{err}"))
}

async fn admin(url: &str) -> MultiplexedConnection {
    redis::Client::open(url)
        .expect("a Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("the admin connection")
}

async fn list(admin: &mut MultiplexedConnection, name: &str) -> Vec<Vec<u8>> {
    redis::cmd("LRANGE")
        .arg(name)
        .arg(0)
        .arg(-1)
        .query_async(admin)
        .await
        .unwrap()
}

fn row(version: u64, epoch: u64, state: &[u8]) -> Row {
    Row {
        version,
        epoch,
        state: Some(state.to_vec()),
    }
}

/// A log's head: its state is the tag of its last append (`t` for every
/// append here).
fn head(version: u64, epoch: u64) -> Row {
    Row {
        version,
        epoch,
        state: Some(b"t".to_vec()),
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}
