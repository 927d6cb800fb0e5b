//! The relay's port inside a network namespace the probe did not make (docker's pause
//! container): a listener bound on that namespace's 127.0.0.1 at the relay's own port, each
//! connection pumped to the relay's real listener in the probe's fence, so the relay URL the
//! harness was given works unchanged and nothing else is reachable.
//!
//! A socket stays in the namespace it was made in: the listener is made by a thread that
//! entered the target namespace (`setns`, which needs `CAP_SYS_ADMIN` over it: root), and
//! each connection to the relay by a thread that entered the fence (or stayed in the probe's
//! own namespace when there is no fence). Each direction is pumped by a thread of its own
//! through a fixed buffer; at most [`MAX_CONNECTIONS`] are open at once. Stopping shuts the
//! listener and every connection down, then joins every thread.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Connections open at once: a harness talks to one model at a time; a few spare.
pub const MAX_CONNECTIONS: usize = 64;
/// The buffer of each direction of each connection.
const BUFFER: usize = 16 * 1024;

/// Why a forwarder could not start.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("cannot open {}: {source}", namespace.display())]
    Namespace { namespace: std::path::PathBuf, source: io::Error },
    #[error("cannot enter the pause container's network namespace (setns: {0}); it takes CAP_SYS_ADMIN, which root has")]
    Enter(io::Error),
    #[error("cannot listen on the pause container's 127.0.0.1:{port}: {source}")]
    Listen { port: u16, source: io::Error },
    #[error("cannot start the forwarder: {0}")]
    Thread(io::Error),
    #[error("the forwarder's thread panicked")]
    Panicked,
}

/// A running forwarder; [`Forwarder::stop`] (or dropping it) ends it.
#[derive(Debug)]
pub struct Forwarder {
    /// A duplicate of the acceptor's listening socket, to wake it with.
    waker: TcpListener,
    stopping: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<()>>,
    pumps: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Forwarder {
    /// Binds `127.0.0.1:relay.port()` in the network namespace at `namespace` (a
    /// `/proc/PID/ns/net` path) and forwards each connection to `relay`, dialled from the
    /// namespace `fence` (a descriptor of the fence's network namespace; `None`: the probe's
    /// own). `Err` says why, `setns` refused included.
    pub fn start(namespace: &std::path::Path, relay: SocketAddr, fence: Option<RawFd>) -> Result<Forwarder, ForwardError> {
        let file = std::fs::File::open(namespace).map_err(|source| ForwardError::Namespace { namespace: namespace.to_owned(), source })?;
        let target = OwnedFd::from(file);
        let port = relay.port();
        let listener = std::thread::Builder::new()
            .name("forward-bind".into())
            .spawn(move || -> Result<TcpListener, ForwardError> {
                enter(target.as_raw_fd()).map_err(ForwardError::Enter)?;
                TcpListener::bind(("127.0.0.1", port)).map_err(|source| ForwardError::Listen { port, source })
            })
            .map_err(ForwardError::Thread)?
            .join()
            .map_err(|_| ForwardError::Panicked)??;
        let waker = listener.try_clone().map_err(|source| ForwardError::Listen { port, source })?;
        let stopping = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let pumps: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let (stop, kept, threads) = (Arc::clone(&stopping), Arc::clone(&open), Arc::clone(&pumps));
        let acceptor = std::thread::Builder::new()
            .name("forward-accept".into())
            .spawn(move || accept(listener, relay, fence, &stop, &kept, &threads))
            .map_err(ForwardError::Thread)?;
        Ok(Forwarder { waker, stopping, open, acceptor: Some(acceptor), pumps })
    }

    /// Stops accepting, closes every connection and joins every thread.
    pub fn stop(mut self) {
        self.end();
    }

    fn end(&mut self) {
        let Some(acceptor) = self.acceptor.take() else { return };
        self.stopping.store(true, Ordering::SeqCst);
        // shutdown(2) on a listening socket wakes a blocked accept(2) on Linux (EINVAL);
        // `waker` is a duplicate of the acceptor's descriptor, the same socket.
        let _ = checkfu_wire_sandbox::file::shutdown(&self.waker);
        let _ = acceptor.join();
        // A connection still being dialled registers its streams after this only to find
        // `stopping` set under the same lock, and closes them itself.
        for stream in lock(&self.open).drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // Joining a dialling thread may add the pump it started: join until none is left.
        loop {
            let pumps: Vec<JoinHandle<()>> = lock(&self.pumps).drain(..).collect();
            if pumps.is_empty() {
                break;
            }
            for pump in pumps {
                let _ = pump.join();
            }
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.end();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// `setns` into a network namespace: this thread only.
fn enter(fd: RawFd) -> io::Result<()> {
    checkfu_wire_sandbox::fence::enter_on_this_thread(fd)
}

fn accept(
    listener: TcpListener,
    relay: SocketAddr,
    fence: Option<RawFd>,
    stopping: &Arc<AtomicBool>,
    open: &Arc<Mutex<Vec<TcpStream>>>,
    pumps: &Arc<Mutex<Vec<JoinHandle<()>>>>,
) {
    for incoming in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(inside) = incoming else { continue };
        {
            // Finished pumps are joined as new connections come, so the list stays short.
            let mut threads = lock(pumps);
            let (done, running): (Vec<_>, Vec<_>) = threads.drain(..).partition(|t| t.is_finished());
            *threads = running;
            done.into_iter().for_each(|t| drop(t.join()));
            if threads.len() >= 2 * MAX_CONNECTIONS {
                // Over the bound: refused by closing it.
                continue;
            }
        }
        let (kept, threads, stop) = (Arc::clone(open), Arc::clone(pumps), Arc::clone(stopping));
        let pump = std::thread::Builder::new().name("forward-dial".into()).spawn(move || {
            // The fence's namespace, when there is one, is where the relay listens.
            if let Some(fd) = fence {
                if enter(fd).is_err() {
                    return;
                }
            }
            let Ok(outside) = TcpStream::connect(relay) else { return };
            let (Ok(inside_read), Ok(outside_read)) = (inside.try_clone(), outside.try_clone()) else { return };
            {
                let mut open = lock(&kept);
                if stop.load(Ordering::SeqCst) {
                    // The forwarder stopped while this was dialled: its streams were never
                    // in the list it closed.
                    let _ = inside.shutdown(Shutdown::Both);
                    let _ = outside.shutdown(Shutdown::Both);
                    return;
                }
                open.retain(|s| s.peer_addr().is_ok());
                for s in [&inside, &outside] {
                    if let Ok(clone) = s.try_clone() {
                        open.push(clone);
                    }
                }
            }
            let back = std::thread::Builder::new().name("forward-pump".into()).spawn(move || pump(outside_read, inside));
            if let Ok(back) = back {
                lock(&threads).push(back);
            }
            pump(inside_read, outside);
        });
        if let Ok(pump) = pump {
            lock(pumps).push(pump);
        }
    }
}

/// Copies `from` to `to` until either end closes, then closes `to`'s write side so the
/// other end sees the end of the stream.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = vec![0u8; BUFFER];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forwarder's own namespace as the target (entering it still takes CAP_SYS_ADMIN,
    /// so as an ordinary user the refusal is what is checked): the relay on 127.0.0.2 at a
    /// port, the forwarder on 127.0.0.1 at the same port, bytes both ways, and nothing
    /// listening once it stops.
    #[test]
    fn it_pumps_both_ways_and_stops_listening() {
        let relay = TcpListener::bind(("127.0.0.2", 0)).expect("relay");
        let address = relay.local_addr().expect("addr");
        std::thread::spawn(move || {
            for stream in relay.incoming().flatten() {
                let mut stream = stream;
                let mut got = [0u8; 4];
                if stream.read_exact(&mut got).is_ok() {
                    let _ = stream.write_all(&[b"pong:".as_slice(), &got].concat());
                }
            }
        });
        let forwarder = match Forwarder::start(std::path::Path::new("/proc/self/ns/net"), address, None) {
            Ok(forwarder) => forwarder,
            Err(why) => {
                let why = why.to_string();
                assert!(!checkfu_wire_sandbox::identity::is_root(), "root may enter: {why}");
                assert!(why.contains("setns") && why.contains("CAP_SYS_ADMIN"), "{why}");
                return;
            }
        };
        for _ in 0..3 {
            let mut client = TcpStream::connect(("127.0.0.1", address.port())).expect("the forwarder listens");
            client.write_all(b"ping").expect("write");
            let mut answer = Vec::new();
            client.read_to_end(&mut answer).expect("read");
            assert_eq!(answer, b"pong:ping");
        }
        let open = TcpStream::connect(("127.0.0.1", address.port())).expect("one left open");
        forwarder.stop();
        assert!(TcpStream::connect(("127.0.0.1", address.port())).is_err(), "nothing listens after stop");
        let mut rest = Vec::new();
        let _ = (&open).read_to_end(&mut rest);
        assert!(rest.is_empty(), "the open connection was closed, not answered");
    }
}
