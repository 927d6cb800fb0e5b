//! The egress fence around a harness: a network namespace that holds only a loopback
//! interface, in which the relay's socket is the one thing listening.
//!
//! A new network namespace has its own loopback, so a relay listening on the probe's
//! 127.0.0.1 would be out of the harness's reach. Instead, one short-lived thread of the
//! probe enters a fresh namespace (`unshare(CLONE_NEWNET)` changes only the calling
//! thread's namespace), raises its `lo`, binds the relay's listener on its 127.0.0.1 and
//! keeps a descriptor of the namespace. The relay accepts on that listener from the probe's
//! own namespace (a socket stays in the namespace it was made in), and the harness joins
//! the namespace between fork and exec (`setns`). Inside, 127.0.0.1 is the relay and
//! nothing else exists: a harness that ignores the proxy variables has nowhere to go.
//!
//! This needs `CAP_SYS_ADMIN` (root, as in CI). Without it the thread's `unshare` fails
//! with `EPERM`, and the proxy variables are the only fence, which the report says.

use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A loopback-only network namespace and the relay's listener inside it.
#[derive(Debug)]
pub struct Namespace {
    fd: OwnedFd,
}

impl Namespace {
    /// Makes the namespace; `Err` says why it cannot be made here.
    pub fn create() -> Result<(Namespace, TcpListener), String> {
        let made = std::thread::Builder::new()
            .name("fence".into())
            .spawn(enter_and_bind)
            .map_err(|e| format!("cannot start the fence's thread: {e}"))?
            .join()
            .map_err(|_| String::from("the fence's thread panicked"))?;
        made.map(|(fd, listener)| (Namespace { fd }, listener))
    }

    /// The descriptor the harness joins with `setns` before exec.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn errno(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Runs on a thread of its own, which ends in the new namespace and is then dropped.
fn enter_and_bind() -> Result<(OwnedFd, TcpListener), String> {
    // SAFETY: unshare takes a flag word and touches only this thread's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(errno("unshare(CLONE_NEWNET) failed"));
    }
    raise_loopback()?;
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| format!("cannot listen on the namespace's 127.0.0.1: {e}"))?;
    let path = c"/proc/thread-self/ns/net";
    // SAFETY: a NUL-terminated path and plain flags; the result is checked.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno("cannot open /proc/thread-self/ns/net"));
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok((unsafe { OwnedFd::from_raw_fd(fd) }, listener))
}

/// Sets `IFF_UP` on `lo`: a new namespace's loopback starts down.
fn raise_loopback() -> Result<(), String> {
    // SAFETY: a datagram socket for interface ioctls; closed below.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if socket < 0 {
        return Err(errno("cannot open a socket in the namespace"));
    }
    // SAFETY: `socket` is ours from here on.
    let socket = unsafe { OwnedFd::from_raw_fd(socket) };
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

/// Joins the namespace: called in the child between fork and exec, so it may only make
/// async-signal-safe calls (`setns` is one).
pub(crate) fn join(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: setns on a descriptor the parent keeps open across the fork.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
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
            // Without CAP_SYS_ADMIN there is nothing to test; the probe reports this case.
            Err(why) if why.contains("EPERM") || why.contains("Operation not permitted") => return,
            Err(why) => panic!("{why}"),
        };
        let inside_port = inside.local_addr().expect("addr").port();
        let fd = namespace.raw_fd();
        let probe = |port: u16| {
            let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
            let mut command = std::process::Command::new("bash");
            command.args(["-c", &script]);
            // SAFETY: only setns runs between fork and exec.
            unsafe { std::os::unix::process::CommandExt::pre_exec(&mut command, move || join(fd)) };
            command.status().expect("bash runs").success()
        };
        assert!(probe(inside_port), "the relay's listener is reachable inside");
        assert!(!probe(host_port), "the host's loopback is not");
    }
}
