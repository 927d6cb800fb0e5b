//! Files by descriptor beyond directories: anonymous files handed to a child, advisory
//! locks taken without waiting, a socket woken from `accept`, the space left on a file
//! system, and (for the tests of a store's seal) a shared writable mapping.

use std::fs::File;
use std::io::{self, Seek, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::ptr::NonNull;

/// An anonymous file holding `bytes`, read from its start, closed on exec unless a spawn
/// hands it on ([`crate::process::inherit_on_exec`]). `name` only shows in `/proc`.
pub fn sealed(name: &str, bytes: &[u8]) -> io::Result<OwnedFd> {
    let fd = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC)?;
    let mut file = File::from(fd);
    file.write_all(bytes)?;
    file.rewind()?;
    Ok(OwnedFd::from(file))
}

/// A `flock(2)` lock, shared or exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lock {
    Shared,
    Exclusive,
}

/// Takes `file`'s lock if no one holds it otherwise: `false` when someone does. Never waits.
pub fn try_lock(file: &impl AsFd, lock: Lock) -> io::Result<bool> {
    let operation = match lock {
        Lock::Shared => rustix::fs::FlockOperation::NonBlockingLockShared,
        Lock::Exclusive => rustix::fs::FlockOperation::NonBlockingLockExclusive,
    };
    match rustix::fs::flock(file, operation) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(error) => Err(error.into()),
    }
}

/// `shutdown(2)` of both directions of `socket`. On a listening socket it wakes a thread
/// blocked in `accept(2)` on Linux (which then fails with EINVAL); it acts on the socket,
/// so a duplicate of its descriptor does it as well as the original.
pub fn shutdown(socket: &impl AsFd) -> io::Result<()> {
    Ok(rustix::net::shutdown(socket, rustix::net::Shutdown::Both)?)
}

/// The bytes an unprivileged writer may still use on the file system holding `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let stats = rustix::fs::statvfs(path)?;
    Ok(stats.f_bavail.saturating_mul(stats.f_frsize))
}

/// Makes a FIFO at `path` (mode `mode` less the umask): what a test puts where a regular
/// file is expected.
pub fn make_fifo(path: &Path, mode: u32) -> io::Result<()> {
    let mode = rustix::fs::Mode::from_raw_mode(mode);
    Ok(rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, mode, 0)?)
}

/// A shared writable mapping of the start of a file: writes through it reach the file
/// without `write(2)`, as a process that maps a library it runs would make them (what a
/// store's seal must still catch).
#[derive(Debug)]
pub struct SharedMapping {
    start: NonNull<u8>,
    len: usize,
}

impl SharedMapping {
    /// Maps the first `len` bytes of `file` (opened for reading and writing, at least `len`
    /// bytes long).
    pub fn new(file: &File, len: usize) -> io::Result<SharedMapping> {
        use rustix::mm::{MapFlags, ProtFlags};
        // SAFETY: a fresh mapping at an address the kernel picks, so no existing memory is
        // replaced; it is only reached through `write`, which checks the bounds, and it is
        // unmapped once, on drop.
        let start = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, file, 0)? };
        let start = NonNull::new(start.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave a null address"))?;
        Ok(SharedMapping { start, len })
    }

    /// Writes `byte` at `offset` of the mapping.
    pub fn write(&self, offset: usize, byte: u8) {
        assert!(offset < self.len, "offset {offset} beyond the {} bytes mapped", self.len);
        // SAFETY: inside the mapping (checked above), which lives until drop; volatile, as
        // the file's other readers see the byte.
        unsafe { self.start.as_ptr().add(offset).write_volatile(byte) };
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of its length, unmapped only here.
        let _ = unsafe { rustix::mm::munmap(self.start.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_file_reads_from_its_start_and_a_held_lock_is_refused() {
        let fd = sealed("checkfu-test", b"hello").unwrap();
        assert_eq!(std::io::read_to_string(File::from(fd)).unwrap(), "hello");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first = File::create(&path).unwrap();
        let second = File::open(&path).unwrap();
        assert!(try_lock(&first, Lock::Exclusive).unwrap());
        assert!(!try_lock(&second, Lock::Shared).unwrap());
        assert!(free_bytes(dir.path()).unwrap() > 0);
        make_fifo(&dir.path().join("fifo"), 0o644).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&std::fs::metadata(dir.path().join("fifo")).unwrap().file_type()));
    }

    #[test]
    fn a_write_through_the_mapping_reaches_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mapped");
        std::fs::write(&path, [b'a'; 4096]).unwrap();
        let file = File::options().read(true).write(true).open(&path).unwrap();
        let mapping = SharedMapping::new(&file, 4096).unwrap();
        mapping.write(1, b'X');
        assert_eq!(&std::fs::read(&path).unwrap()[..2], b"aX");
    }
}
