//! The fence without privileges: a forked child makes a user namespace holding a network
//! namespace, binds the two listeners of the fence in it ([`super::Listeners`]), and passes
//! them and both namespaces' descriptors back over a socket pair (`SCM_RIGHTS`), then exits.
//!
//! A child, because the kernel refuses `unshare(CLONE_NEWUSER)` to a multithreaded
//! process, and the probe has threads. Between fork and `_exit` the child makes only
//! system calls (no allocation, no lock: the parent's other threads may have held the
//! allocator's), and reports a failure as the step that failed and its errno.

use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The steps of the child, as it reports the one that failed.
const STEPS: [&str; 9] = [
    "unshare(CLONE_NEWUSER | CLONE_NEWNET)",
    "writing /proc/self/setgroups",
    "writing /proc/self/uid_map",
    "writing /proc/self/gid_map",
    "raising lo",
    "binding 127.0.0.1 in the namespace",
    "opening /proc/self/ns/user",
    "opening /proc/self/ns/net",
    "sending the descriptors back",
];

/// Why the probe's user could not make a user namespace holding a network namespace.
#[derive(Debug, thiserror::Error)]
pub enum UserNamespaceError {
    #[error("socketpair: {0}")]
    SocketPair(#[source] std::io::Error),
    #[error("fork: {0}")]
    Fork(#[source] std::io::Error),
    #[error("receiving from the fence's child: {0}")]
    Receive(#[source] std::io::Error),
    /// The child's step of [`STEPS`] that failed, and its errno.
    #[error("{step} failed: {source}")]
    Step { step: &'static str, source: std::io::Error },
    #[error("the fence's child ended without an answer")]
    NoAnswer,
}

/// Makes the namespaces; `Ok((user, net, listeners))`.
pub(super) fn create() -> Result<(OwnedFd, OwnedFd, super::Listeners), UserNamespaceError> {
    // Everything the child writes is prepared here, before the fork.
    let (uid, gid) = (crate::identity::uid(), crate::identity::gid());
    let uid_map = format!("{uid} {uid} 1\n");
    let gid_map = format!("{gid} {gid} 1\n");
    let (family, kind, flags) = (rustix::net::AddressFamily::UNIX, rustix::net::SocketType::STREAM, rustix::net::SocketFlags::CLOEXEC);
    let (parent, child) = rustix::net::socketpair(family, kind, flags, None).map_err(|e| UserNamespaceError::SocketPair(e.into()))?;
    // SAFETY: the child runs only `in_child`, which makes system calls on prepared data and
    // ends in `_exit`; it never returns into Rust code of the parent's.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(UserNamespaceError::Fork(std::io::Error::last_os_error()));
    }
    if pid == 0 {
        let outcome = in_child(child.as_raw_fd(), uid_map.as_bytes(), gid_map.as_bytes());
        if let Err((step, errno)) = outcome {
            let mut report = [0u8; 5];
            report[0] = step;
            report[1..].copy_from_slice(&errno.to_ne_bytes());
            // SAFETY: a write of a stack buffer to our end of the pair.
            unsafe { libc::write(child.as_raw_fd(), report.as_ptr().cast(), report.len()) };
        }
        // SAFETY: ends the child without running the parent's destructors or atexit hooks.
        unsafe { libc::_exit(0) };
    }
    drop(child);
    let received = receive(parent.as_raw_fd());
    let mut status = 0;
    // SAFETY: reaps the child we forked; it exits right after sending.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    received
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Writes `bytes` to the file at `path` (NUL-terminated); system calls only.
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    // SAFETY: open, write and close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        written == bytes.len() as isize
    }
}

/// The child's work. `Err((step, errno))` names the step of [`STEPS`] that failed.
fn in_child(socket: RawFd, uid_map: &[u8], gid_map: &[u8]) -> Result<(), (u8, i32)> {
    // SAFETY: unshare takes a flag word; this process is single-threaded (just forked).
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
        return Err((0, errno()));
    }
    // An unprivileged process may map only its own ids, and its gid only once setgroups is
    // denied.
    if !write_file(c"/proc/self/setgroups", b"deny") {
        return Err((1, errno()));
    }
    if !write_file(c"/proc/self/uid_map", uid_map) {
        return Err((2, errno()));
    }
    if !write_file(c"/proc/self/gid_map", gid_map) {
        return Err((3, errno()));
    }
    raise_loopback().map_err(|e| (4, e))?;
    let relay = bind_loopback().map_err(|e| (5, e))?;
    let tool_server = bind_loopback().map_err(|e| (5, e))?;
    let open = |path: &std::ffi::CStr| {
        // SAFETY: a NUL-terminated path and plain flags.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            Err(errno())
        } else {
            Ok(fd)
        }
    };
    let user = open(c"/proc/self/ns/user").map_err(|e| (6, e))?;
    let net = open(c"/proc/self/ns/net").map_err(|e| (7, e))?;
    send(socket, [relay, tool_server, user, net]).map_err(|e| (8, e))
}

/// `lo` up, with a datagram socket's interface ioctls (as the privileged path does).
fn raise_loopback() -> Result<(), i32> {
    // SAFETY: a socket for ioctls, an ifreq zeroed (a valid value) and named `lo`, and the
    // two flag ioctls on it; the socket is closed on every path.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(errno());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        let mut outcome = Ok(());
        if libc::ioctl(socket, libc::SIOCGIFFLAGS, &mut request) != 0 {
            outcome = Err(errno());
        } else {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(socket, libc::SIOCSIFFLAGS, &request) != 0 {
                outcome = Err(errno());
            }
        }
        libc::close(socket);
        outcome
    }
}

/// A listening TCP socket on the namespace's 127.0.0.1, on a port the kernel picks.
fn bind_loopback() -> Result<RawFd, i32> {
    // SAFETY: socket, bind and listen with a sockaddr_in built on the stack.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(errno());
        }
        let mut address: libc::sockaddr_in = std::mem::zeroed();
        address.sin_family = libc::AF_INET as libc::sa_family_t;
        address.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        address.sin_port = 0;
        let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(fd, (&raw const address).cast(), size) != 0 || libc::listen(fd, 128) != 0 {
            let e = errno();
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

/// The room for four descriptors' control message, as `CMSG_SPACE` computes it (a
/// constant, so the child allocates nothing).
const CONTROL: usize = 64;

/// Sends four descriptors and one byte over the socket.
fn send(socket: RawFd, fds: [RawFd; 4]) -> Result<(), i32> {
    let mut byte = [0u8; 1];
    let mut control = [0u64; CONTROL / 8];
    // SAFETY: msghdr and its control buffer live on this stack frame; the CMSG macros
    // address inside that buffer, whose room is checked against CMSG_SPACE first.
    unsafe {
        let data_len = (fds.len() * std::mem::size_of::<RawFd>()) as u32;
        if libc::CMSG_SPACE(data_len) as usize > CONTROL {
            return Err(libc::EINVAL);
        }
        let mut io = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut io;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(data_len) as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(data_len) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(header).cast::<RawFd>(), fds.len());
        if libc::sendmsg(socket, &message, 0) != 1 {
            return Err(errno());
        }
    }
    Ok(())
}

/// Reads the child's answer: four descriptors, or the step that failed and its errno.
fn receive(socket: RawFd) -> Result<(OwnedFd, OwnedFd, super::Listeners), UserNamespaceError> {
    let mut data = [0u8; 5];
    let mut control = [0u64; CONTROL / 8];
    // SAFETY: as in `send`; the descriptors received are taken into OwnedFd at once, and
    // only as many as the control message's length says it holds.
    let (read, fds) = unsafe {
        let mut io = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: data.len() };
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut io;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = CONTROL as _;
        let read = libc::recvmsg(socket, &mut message, libc::MSG_CMSG_CLOEXEC);
        if read < 0 {
            return Err(UserNamespaceError::Receive(std::io::Error::last_os_error()));
        }
        let mut fds = Vec::new();
        let header = libc::CMSG_FIRSTHDR(&message);
        if !header.is_null() && (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
            let count = ((*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
            let data = libc::CMSG_DATA(header).cast::<RawFd>();
            for i in 0..count.min(4) {
                fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
            }
        }
        (read, fds)
    };
    match (read, <[OwnedFd; 4]>::try_from(fds)) {
        (1, Ok([relay, tool_server, user, net])) => {
            Ok((user, net, super::Listeners { relay: TcpListener::from(relay), tool_server: TcpListener::from(tool_server) }))
        }
        (5, _) => {
            let step = STEPS.get(usize::from(data[0])).copied().unwrap_or("an unknown step");
            let errno = i32::from_ne_bytes([data[1], data[2], data[3], data[4]]);
            Err(UserNamespaceError::Step { step, source: std::io::Error::from_raw_os_error(errno) })
        }
        _ => Err(UserNamespaceError::NoAnswer),
    }
}
