//! The faults' words, the proxy that makes stalls and lost replies, and
//! where a fault's first success is looked for.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use ferry_bench::report::faults::first_success_after;
use ferry_bench::scenarios::faults::Fault;
use ferry_bench::scenarios::proxy::Proxy;

#[test]
fn faults_parse_and_read_back() {
    for text in [
        "restart@2s",
        "kill-connections@3s",
        "stall:500ms@4s",
        "lose-replies@1s",
    ] {
        assert_eq!(text.parse::<Fault>().unwrap().to_string(), text);
    }
    for bad in ["stall@2s", "stall:0@2s", "restart@", "kill@1s", "restart@2"] {
        assert!(bad.parse::<Fault>().is_err(), "{bad}");
    }
}

#[test]
fn the_first_success_is_looked_for_in_the_ticks_wholly_after_the_fault() {
    let ticks = [5, 5, 3, 0, 0, 0, 2, 1];
    // A fault 25 ms in (tick 2): tick 2 may hold answers from before
    // it; the first later tick with one is 6, which ends at 70 ms.
    assert_eq!(
        first_success_after(&ticks, Duration::from_millis(25)),
        Some(Duration::from_millis(70))
    );
    assert_eq!(first_success_after(&ticks, Duration::from_millis(75)), None);
}

#[test]
fn the_proxy_forwards_and_holds_traffic_during_a_stall() {
    let server = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let upstream = server.local_addr().unwrap();
    let echo = std::thread::spawn(move || {
        let (mut connection, _) = server.accept().unwrap();
        let mut buffer = [0_u8; 4];
        for _ in 0..2 {
            connection.read_exact(&mut buffer).unwrap();
            connection.write_all(&buffer).unwrap();
        }
    });
    let proxy = Proxy::start(upstream).unwrap();
    let mut client = TcpStream::connect(proxy.address()).unwrap();
    let mut answer = [0_u8; 4];
    client.write_all(b"ping").unwrap();
    client.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"ping");
    let stall = Duration::from_millis(150);
    let sent = Instant::now();
    proxy.stall(stall);
    client.write_all(b"pong").unwrap();
    client.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"pong");
    assert!(sent.elapsed() >= stall, "{:?}", sent.elapsed());
    echo.join().unwrap();
    // The server is gone: the client's side ends too.
    assert_eq!(client.read(&mut answer).unwrap_or(0), 0);
    proxy.stop();
}

#[test]
fn a_lost_reply_reaches_the_server_not_the_client_and_new_connections_work() {
    let server = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let upstream = server.local_addr().unwrap();
    let (heard_tx, heard) = std::sync::mpsc::channel();
    let echo = std::thread::spawn(move || {
        for _ in 0..2 {
            let (mut connection, _) = server.accept().unwrap();
            let mut buffer = [0_u8; 4];
            while connection.read_exact(&mut buffer).is_ok() {
                heard_tx.send(buffer).unwrap();
                if connection.write_all(&buffer).is_err() {
                    break;
                }
            }
        }
    });
    let proxy = Proxy::start(upstream).unwrap();
    let mut client = TcpStream::connect(proxy.address()).unwrap();
    let mut answer = [0_u8; 4];
    client.write_all(b"ping").unwrap();
    client.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"ping");
    proxy.lose_replies();
    client.write_all(b"pong").unwrap();
    // The request reaches the server; its reply never reaches the
    // client, whose connection ends instead.
    let timeout = Duration::from_secs(10);
    assert_eq!(heard.recv_timeout(timeout).unwrap(), *b"ping");
    assert_eq!(heard.recv_timeout(timeout).unwrap(), *b"pong");
    client.set_read_timeout(Some(timeout)).unwrap();
    assert_eq!(
        client.read(&mut answer).unwrap_or(0),
        0,
        "the reply was lost"
    );
    // A connection made after the loss is carried as usual.
    let mut later = TcpStream::connect(proxy.address()).unwrap();
    later.write_all(b"late").unwrap();
    later.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"late");
    drop(later);
    echo.join().unwrap();
    proxy.stop();
}
