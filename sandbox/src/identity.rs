//! Who the probe runs as: its real and effective user and group ids, which decide what a
//! store trusts, whether bubblewrap needs a user namespace, and whom a container runs as.

/// The effective uid (the one the kernel checks, and the owner of what the probe creates).
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The real uid.
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// The real gid.
pub fn gid() -> u32 {
    rustix::process::getgid().as_raw()
}

/// Whether the probe runs as root (effective uid 0).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}
