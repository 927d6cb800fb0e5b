//! The egress fence around a harness: a network namespace that holds only a loopback
//! interface, in which the relay's socket and the probe's own tool server's (an MCP server
//! over HTTP granted to the harness) are the only things listening.
//!
//! A new network namespace has its own loopback, so a relay listening on the probe's
//! 127.0.0.1 would be out of the harness's reach. Instead the namespace is made first, the
//! relay's listener is bound on *its* 127.0.0.1, and descriptors of the namespace are kept.
//! The relay accepts on that listener from the probe's own namespace (a socket stays in the
//! namespace it was made in), and the harness joins the namespace between fork and exec
//! (`setns`). Inside, 127.0.0.1 is the relay and the probe's tool server, and nothing else
//! exists: a harness that ignores the proxy variables has nowhere to go.
//!
//! Two ways to make it, tried in order:
//! - with `CAP_SYS_ADMIN` (root, as in CI), one short-lived thread of the probe enters a
//!   fresh network namespace (`unshare(CLONE_NEWNET)` changes only the calling thread's);
//! - without it (an ordinary user on a laptop), a forked child makes a user namespace
//!   holding a network namespace (`unshare(CLONE_NEWUSER | CLONE_NEWNET)`, which the kernel
//!   refuses to a multithreaded process, hence the child), mapping only the user's own uid
//!   and gid, binds the listeners there and passes them back with both namespaces' descriptors
//!   over a socket pair (`SCM_RIGHTS`), then exits. The harness joins the user namespace,
//!   then the network namespace; it runs as the same uid, with no capability outside.
//!
//! Where neither is allowed (user namespaces disabled, or a seccomp profile refusing
//! `unshare`), the proxy variables are the only fence, and the report says why.

mod user;

pub use user::UserNamespaceError;

use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Which way the namespace was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A network namespace of the probe's own user namespace (needs `CAP_SYS_ADMIN`).
    Network,
    /// A network namespace inside a user namespace of the probe's user's own.
    User,
}

/// Why no namespace could be made here: the proxy variables are then the only fence.
#[derive(Debug, thiserror::Error)]
pub enum NoNamespace {
    /// Neither a network namespace nor, without privileges, a user namespace holding one
    /// (the cause: the user namespace's, the way tried last).
    #[error("{privileged}; and without privileges: {unprivileged}")]
    Refused {
        privileged: NetworkNamespaceError,
        #[source]
        unprivileged: UserNamespaceError,
    },
    /// The thread that enters the namespace could not start.
    #[error("cannot start the fence's thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The thread that enters the namespace panicked.
    #[error("the fence's thread panicked")]
    ThreadPanicked,
}

/// Why the probe could not make a network namespace of its own (it needs `CAP_SYS_ADMIN`).
#[derive(Debug, thiserror::Error)]
pub enum NetworkNamespaceError {
    /// A system call failed: what it was for, and its errno.
    #[error("{what}: {source}")]
    Call { what: &'static str, source: std::io::Error },
    #[error("cannot listen on the namespace's 127.0.0.1: {0}")]
    Listen(#[source] std::io::Error),
}

/// The listeners bound on the namespace's 127.0.0.1, each on a port the kernel picked: the
/// relay's, and one for a tool server of the probe's own that the harness is granted (an
/// MCP server over HTTP). Both are made with the namespace because a process without
/// privileges cannot enter it later to bind another (`setns` into a network namespace asks
/// `CAP_SYS_ADMIN` in the caller's own user namespace too). A listener no one accepts on
/// only queues connections, which end with the namespace.
#[derive(Debug)]
pub struct Listeners {
    pub relay: TcpListener,
    pub tool_server: TcpListener,
}

/// A loopback-only network namespace.
#[derive(Debug)]
pub struct Namespace {
    net: OwnedFd,
    user: Option<OwnedFd>,
}

/// What a child joins before exec: raw descriptors, copied into the child's closure (the
/// parent's [`Namespace`] keeps them open).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Join {
    net: RawFd,
    user: Option<RawFd>,
}

impl Join {
    /// The network namespace's descriptor (a container runtime's forwarder dials the relay
    /// from it).
    pub fn net(&self) -> RawFd {
        self.net
    }

    /// Whether it is joined through a user namespace (the fence made without privileges).
    pub fn through_user_namespace(&self) -> bool {
        self.user.is_some()
    }
}

impl Namespace {
    /// Makes the namespace, with privileges if the probe has them, else in a user
    /// namespace; `Err` says why neither could be made here.
    pub fn create() -> Result<(Namespace, Listeners), NoNamespace> {
        let made = std::thread::Builder::new()
            .name("fence".into())
            .spawn(enter_and_bind)
            .map_err(NoNamespace::Thread)?
            .join()
            .map_err(|_| NoNamespace::ThreadPanicked)?;
        match made {
            Ok((net, listeners)) => Ok((Namespace { net, user: None }, listeners)),
            Err(privileged) => match user::create() {
                Ok((user, net, listeners)) => Ok((Namespace { net, user: Some(user) }, listeners)),
                Err(unprivileged) => Err(NoNamespace::Refused { privileged, unprivileged }),
            },
        }
    }

    pub fn kind(&self) -> Kind {
        if self.user.is_some() {
            Kind::User
        } else {
            Kind::Network
        }
    }

    /// The descriptors the harness joins with `setns` before exec.
    pub fn join(&self) -> Join {
        Join { net: self.net.as_raw_fd(), user: self.user.as_ref().map(AsRawFd::as_raw_fd) }
    }
}

/// The system call for `what` that just failed, with its errno.
fn errno(what: &'static str) -> NetworkNamespaceError {
    NetworkNamespaceError::Call { what, source: std::io::Error::last_os_error() }
}

/// Runs on a thread of its own, which ends in the new namespace and is then dropped.
fn enter_and_bind() -> Result<(OwnedFd, Listeners), NetworkNamespaceError> {
    // SAFETY: unshare takes a flag word and touches only this thread's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(errno("unshare(CLONE_NEWNET) failed"));
    }
    raise_loopback()?;
    let bind = || TcpListener::bind(("127.0.0.1", 0)).map_err(NetworkNamespaceError::Listen);
    let listeners = Listeners { relay: bind()?, tool_server: bind()? };
    let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC;
    let fd = rustix::fs::open("/proc/thread-self/ns/net", flags, rustix::fs::Mode::empty())
        .map_err(|e| NetworkNamespaceError::Call { what: "cannot open /proc/thread-self/ns/net", source: e.into() })?;
    Ok((fd, listeners))
}

/// Sets `IFF_UP` on `lo`: a new namespace's loopback starts down.
fn raise_loopback() -> Result<(), NetworkNamespaceError> {
    // A datagram socket for interface ioctls.
    let (family, kind, flags) = (rustix::net::AddressFamily::INET, rustix::net::SocketType::DGRAM, rustix::net::SocketFlags::CLOEXEC);
    let socket = rustix::net::socket_with(family, kind, flags, None)
        .map_err(|e| NetworkNamespaceError::Call { what: "cannot open a socket in the namespace", source: e.into() })?;
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write the flags member of a valid ifreq.
    unsafe {
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) != 0 {
            return Err(errno("cannot read the flags of lo"));
        }
        request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request) != 0 {
            return Err(errno("cannot raise lo"));
        }
    }
    Ok(())
}

/// Has `command`'s child join the namespace between fork and exec, before anything of the
/// program runs. The caller keeps the [`Namespace`] (whose descriptors `to` names) open
/// until the spawn has returned.
pub fn join_on_exec(command: &mut std::process::Command, to: Join) {
    // SAFETY: the closure makes only async-signal-safe calls (setns, and reading errno) in
    // the forked child, and touches no lock or allocation of the parent's.
    unsafe { std::os::unix::process::CommandExt::pre_exec(command, move || join(to)) };
}

/// Joins the namespace: called in the child between fork and exec, so it may only make
/// async-signal-safe calls (`setns` is one). The user namespace first: joining it gives the
/// child the capability the network namespace it owns asks of `setns`.
fn join(to: Join) -> std::io::Result<()> {
    for (fd, kind) in [(to.user, libc::CLONE_NEWUSER), (Some(to.net), libc::CLONE_NEWNET)] {
        let Some(fd) = fd else { continue };
        // SAFETY: setns on a descriptor the parent keeps open across the fork.
        if unsafe { libc::setns(fd, kind) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Moves the calling thread (only it: the process's other threads stay where they are)
/// into the network namespace `net` names, as a thread that dials inside a fence does.
pub fn enter_on_this_thread(net: RawFd) -> std::io::Result<()> {
    // SAFETY: setns on a descriptor number changes only the calling thread's namespace and
    // touches no memory; a descriptor that is not a namespace's is an error (EINVAL, EBADF).
    if unsafe { libc::setns(net, libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_reaches_its_listener_and_nothing_of_the_host() {
        let host = TcpListener::bind(("127.0.0.1", 0)).expect("host listener");
        let host_port = host.local_addr().expect("addr").port();
        let (namespace, inside) = match Namespace::create() {
            Ok(made) => made,
            // Where neither way is allowed there is nothing to test; the probe reports this case.
            Err(why) if why.to_string().contains("Operation not permitted") => return,
            Err(why) => panic!("{why}"),
        };
        let inside_port = inside.relay.local_addr().expect("addr").port();
        let tool_port = inside.tool_server.local_addr().expect("addr").port();
        let fd = namespace.join();
        let probe = |port: u16| {
            let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
            let mut command = std::process::Command::new("bash");
            command.args(["-c", &script]);
            // SAFETY: only setns runs between fork and exec.
            unsafe { std::os::unix::process::CommandExt::pre_exec(&mut command, move || join(fd)) };
            command.status().expect("bash runs").success()
        };
        assert!(probe(inside_port), "the relay's listener is reachable inside");
        assert!(probe(tool_port), "so is the tool server's");
        assert!(!probe(host_port), "the host's loopback is not");
    }

    /// The unprivileged way, made directly (whoever runs the tests): the same two facts.
    #[test]
    fn the_user_namespace_reaches_its_listener_and_nothing_of_the_host() {
        let host = TcpListener::bind(("127.0.0.1", 0)).expect("host listener");
        let host_port = host.local_addr().expect("addr").port();
        let (userns, net, inside) = match user::create() {
            Ok(made) => made,
            // User namespaces refused on this machine: the probe reports this case.
            Err(why) if why.to_string().contains("unshare") => return,
            Err(why) => panic!("{why}"),
        };
        let namespace = Namespace { net, user: Some(userns) };
        assert_eq!(namespace.kind(), Kind::User);
        let inside_port = inside.relay.local_addr().expect("addr").port();
        let tool_port = inside.tool_server.local_addr().expect("addr").port();
        let to = namespace.join();
        let probe = |port: u16| {
            let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
            let mut command = std::process::Command::new("bash");
            command.args(["-c", &script]);
            // SAFETY: only setns runs between fork and exec.
            unsafe { std::os::unix::process::CommandExt::pre_exec(&mut command, move || join(to)) };
            command.status().expect("bash runs").success()
        };
        assert!(probe(inside_port), "the listener is reachable inside");
        assert!(probe(tool_port), "so is the tool server's");
        assert!(!probe(host_port), "the host's loopback is not");
    }
}
