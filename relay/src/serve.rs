//! A loopback HTTP server's life, shared by the relay and the probe's MCP server over HTTP:
//! the listener checked to be on the loopback, one thread of its own running a
//! current-thread tokio runtime, and a stop that drops that runtime (closing every
//! connection) without waiting on the thread longer than the caller allows.

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why a server could not start (each server words it as its own).
#[derive(Debug)]
pub enum ServeError {
    /// The listener given is not on a loopback address.
    NotLoopback(SocketAddr),
    /// A socket, runtime or thread that could not be made (`what` says which).
    Io { what: &'static str, source: std::io::Error },
}

/// A server running on its own thread.
#[derive(Debug)]
pub struct Background {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    /// Serves `listener` (bound on a loopback address by the caller, e.g. inside a fence), or
    /// a listener on 127.0.0.1 with a port the OS picks, on a thread named `name`: `accept`
    /// is spawned on its runtime with the listener and runs until [`Background::shutdown`].
    pub fn start<F, Fut>(name: &str, listener: Option<TcpListener>, accept: F) -> Result<Background, ServeError>
    where
        F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let io = |what: &'static str| move |source| ServeError::Io { what, source };
        let listener = match listener {
            Some(listener) => listener,
            None => TcpListener::bind(("127.0.0.1", 0)).map_err(io("cannot listen on 127.0.0.1"))?,
        };
        let addr = listener.local_addr().map_err(io("has no socket address"))?;
        if !addr.ip().is_loopback() {
            return Err(ServeError::NotLoopback(addr));
        }
        listener.set_nonblocking(true).map_err(io("cannot make its socket non-blocking"))?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build().map_err(io("cannot make its runtime"))?;
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                    tokio::spawn(accept(listener));
                    let _ = stopped.await;
                });
                // Dropping the runtime here cancels every connection still open.
                drop(runtime);
            })
            .map_err(io("cannot start its thread"))?;
        Ok(Background { addr, stop: Some(stop), thread: Some(thread) })
    }

    /// The address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving, waiting for the thread no longer than `wait`. The thread ends as soon
    /// as the request it may be answering is done, which the servers' own budgets bound;
    /// should it not, it is left behind rather than holding up the caller's deadline (it
    /// holds no lock the caller needs). A second call does nothing.
    pub fn shutdown(&mut self, wait: Duration) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let waited = Instant::now();
            while !thread.is_finished() && waited.elapsed() < wait {
                std::thread::sleep(Duration::from_millis(5));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}
