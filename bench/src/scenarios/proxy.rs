//! The loopback proxy of `--fault stall` and `--fault lose-replies`: every
//! system's connection to a real store goes through it while faults are
//! asked for.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::base::CONNECT_TIMEOUT;

/// A loopback TCP proxy between the systems and the server, which can hold
/// all traffic for a while, or lose the next reply on every connection:
/// each connection accepted on 127.0.0.1 is joined to a new one to the
/// server, and two threads copy between them; when either side ends, both
/// are shut down.
#[derive(Debug)]
pub struct Proxy {
    address: SocketAddr,
    upstream: SocketAddr,
    /// Until when traffic is held.
    stalled_until: Mutex<Option<Instant>>,
    /// How many times replies were lost: a connection joined before the
    /// latest loses its next reply.
    losses: AtomicU64,
    stopped: AtomicBool,
}

impl Proxy {
    /// Listens on 127.0.0.1 at a free port, forwarding to `upstream`.
    pub fn start(upstream: SocketAddr) -> std::io::Result<Arc<Proxy>> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let proxy = Arc::new(Proxy {
            address: listener.local_addr()?,
            upstream,
            stalled_until: Mutex::new(None),
            losses: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&proxy);
        std::thread::Builder::new()
            .name("ferry-load-proxy".to_string())
            .spawn(move || {
                for client in listener.incoming() {
                    if accepting.stopped.load(Ordering::Acquire) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let joining = Arc::clone(&accepting);
                    let _ = std::thread::Builder::new()
                        .name("ferry-load-proxy-conn".to_string())
                        .spawn(move || joining.join(client));
                }
            })?;
        Ok(proxy)
    }

    /// Where the systems connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Holds all traffic, both ways, for `length` from now.
    pub fn stall(&self, length: Duration) {
        *self.lock() = Some(Instant::now() + length);
    }

    /// Every connection open now loses the next reply the server sends on
    /// it, and is closed then.
    pub fn lose_replies(&self) {
        self.losses.fetch_add(1, Ordering::AcqRel);
    }

    /// Stops accepting (the connections under way end with their sides).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        // Wakes the accepting thread so that it sees the flag.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.stalled_until
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Waits out a stall, if one is under way.
    fn hold(&self) {
        loop {
            let until = *self.lock();
            match until.and_then(|until| until.checked_duration_since(Instant::now())) {
                Some(left) if !left.is_zero() => std::thread::sleep(left),
                _ => return,
            }
        }
    }

    /// Joins `client` to a new connection to the server, on this thread
    /// and one more; a server that cannot be reached closes `client`.
    fn join(self: Arc<Self>, client: TcpStream) {
        self.hold();
        let joined = self.losses.load(Ordering::Acquire);
        let Ok(server) = TcpStream::connect_timeout(&self.upstream, CONNECT_TIMEOUT) else {
            return;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (Ok(client_out), Ok(server_in)) = (client.try_clone(), server.try_clone()) else {
            return;
        };
        let upward = Arc::clone(&self);
        let spawned = std::thread::Builder::new()
            .name("ferry-load-proxy-conn".to_string())
            .spawn(move || upward.copy(client, server_in, None));
        if spawned.is_ok() {
            self.copy(server, client_out, Some(joined));
        }
    }

    /// Copies `from` to `to` until either ends, holding during stalls;
    /// then shuts both down, which ends the other direction too. Replies
    /// (from the server: `joined` says when the connection was made, in
    /// losses) are dropped, and the connection ended, once replies were
    /// lost after it was made.
    fn copy(&self, mut from: TcpStream, mut to: TcpStream, joined: Option<u64>) {
        let mut buffer = vec![0_u8; 64 * 1024];
        loop {
            self.hold();
            let read = match from.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            self.hold();
            if joined.is_some_and(|joined| self.losses.load(Ordering::Acquire) > joined) {
                break;
            }
            if to.write_all(&buffer[..read]).is_err() {
                break;
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    }
}
