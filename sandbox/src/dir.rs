//! Directories held by descriptor: every lookup is one name beneath a directory we hold,
//! opened without following symlinks, so what we change is what we looked at, wherever a
//! symlink in the tree points.
//!
//! It owns the walks over trees that an untrusted party shaped (an image's root filesystem,
//! a harness's workspace and home): [`walk`] holds one descriptor whatever the depth, and
//! goes back up through `..` (checked against the directory it came from), so a tree of any
//! depth is walked at the common open-file limit of 1024. [`remove_tree`] is built on it
//! and restores its owner's permission on every directory on the way down, so a directory
//! the harness made unreadable (mode 000) does not stay behind.

use std::collections::VecDeque;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// An open directory.
#[derive(Debug)]
pub struct Dir(OwnedFd);

/// What `lstat` says of a name: its kind and permission bits, its inode, its owner, its
/// size and its modification time (seconds since the epoch).
#[derive(Clone, Copy, Debug)]
pub struct Stat {
    pub mode: u32,
    pub dev: u64,
    pub ino: u64,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub blocks: u64,
    pub mtime: i64,
}

impl Stat {
    fn of(st: &libc::stat) -> Stat {
        Stat {
            mode: st.st_mode,
            dev: st.st_dev,
            ino: st.st_ino,
            uid: st.st_uid,
            gid: st.st_gid,
            size: u64::try_from(st.st_size).unwrap_or(0),
            blocks: u64::try_from(st.st_blocks).unwrap_or(0),
            mtime: st.st_mtime,
        }
    }

    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }

    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }

    pub fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }

    pub fn identity(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name with a NUL byte"))
}

/// Retries a call that a signal interrupted.
fn retry(mut call: impl FnMut() -> libc::c_long) -> io::Result<libc::c_long> {
    loop {
        let result = call();
        if result >= 0 {
            return Ok(result);
        }
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINTR) {
            return Err(error);
        }
    }
}

fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::other("a descriptor out of range"))?;
    // SAFETY: the kernel just returned `fd` to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat2(2)`, through rustix's safe wrapper: `path` resolved from `dir` by the kernel
/// under `resolve`'s rules. Paths of more than one name are resolved by
/// [`crate::root::Root`] alone, under its one rule; here it opens one name beneath a
/// directory we hold.
pub(crate) fn openat2(dir: BorrowedFd<'_>, path: &[u8], flags: libc::c_int, resolve: ResolveFlags) -> io::Result<OwnedFd> {
    // The `O_*` values are the kernel's own on Linux, which is what `OFlags` holds.
    let flags = OFlags::from_bits_retain(libc::c_uint::from_ne_bytes(flags.to_ne_bytes())) | OFlags::CLOEXEC;
    loop {
        match rustix::fs::openat2(dir, path, flags, Mode::empty(), resolve) {
            Err(Errno::INTR) => continue,
            other => return other.map_err(io::Error::from),
        }
    }
}

/// One name beneath a directory, no symlink followed, no magic link, nothing above it.
const ONE_NAME: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS).union(ResolveFlags::NO_MAGICLINKS);

fn openat(dir: BorrowedFd<'_>, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    // SAFETY: `name` is NUL-terminated; `openat` does not keep it.
    let fd =
        retry(|| unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) as libc::c_long })?;
    owned(fd)
}

/// Whether an `openat2` failure means the kernel has none (before Linux 5.6), or a seccomp
/// filter (an older container runtime's) refuses it as unknown.
fn no_openat2(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM))
}

const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;

impl Dir {
    /// Opens the directory at `path` (its last component must not be a symlink).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let path = cstring(path.as_os_str().as_bytes())?;
        openat(cwd(), &path, DIR_FLAGS, 0).map(Dir)
    }

    /// Opens the directory at `path`, a path of the caller's own (a symlink in it, the last
    /// component's included, is followed).
    fn open_trusted(path: &Path) -> io::Result<Dir> {
        let path = cstring(path.as_os_str().as_bytes())?;
        openat(cwd(), &path, libc::O_RDONLY | libc::O_DIRECTORY, 0).map(Dir)
    }

    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }

    /// A second descriptor for the same directory.
    pub fn duplicate(&self) -> io::Result<Dir> {
        self.0.try_clone().map(Dir)
    }

    /// The child directory `name` (one component, never `..`), opened only if it is a
    /// directory itself: a symlink in its place is refused (`ELOOP` or `ENOTDIR`), never
    /// followed. The kernel keeps the lookup beneath this directory.
    pub fn open_child(&self, name: &OsStr) -> io::Result<Dir> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a single file name"));
        }
        match openat2(self.as_fd(), bytes, DIR_FLAGS, ONE_NAME) {
            Err(e) if no_openat2(&e) => openat(self.as_fd(), &cstring(bytes)?, DIR_FLAGS, 0).map(Dir),
            other => other.map(Dir),
        }
    }

    /// This directory's parent, through `..`. The caller checks that it is the directory it
    /// came from ([`Stat::identity`]).
    pub fn open_parent(&self) -> io::Result<Dir> {
        openat(self.as_fd(), c"..", DIR_FLAGS, 0).map(Dir)
    }

    /// Creates the file `name`, which must not exist (a symlink in its place included).
    pub fn create_file(&self, name: &OsStr, mode: libc::mode_t) -> io::Result<File> {
        let name = cstring(name.as_bytes())?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        openat(self.as_fd(), &name, flags, mode).map(File::from)
    }

    /// Opens the file `name` in this directory with `flags` (`O_RDONLY`, `O_WRONLY`, with
    /// `O_CREAT` making it `mode`), never following a symlink in its place (`ELOOP`) and
    /// never blocking on a FIFO or a device in its place (`O_NONBLOCK`): the caller
    /// [`fstat`]s what it got before it reads a byte.
    pub fn open_file(&self, name: &OsStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<File> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a single file name"));
        }
        let flags = flags | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
        if flags & libc::O_CREAT != 0 {
            // openat2 takes no mode here: `openat` with O_NOFOLLOW refuses a symlink as well.
            return openat(self.as_fd(), &cstring(bytes)?, flags, mode).map(File::from);
        }
        match openat2(self.as_fd(), bytes, flags, ONE_NAME) {
            Err(e) if no_openat2(&e) => openat(self.as_fd(), &cstring(bytes)?, flags, 0).map(File::from),
            other => other.map(File::from),
        }
    }

    /// `lstat` of `name` in this directory.
    pub fn stat_at(&self, name: &OsStr) -> io::Result<Stat> {
        let name = cstring(name.as_bytes())?;
        // SAFETY: all zeroes is a valid `stat`, which the call then fills.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `name` is NUL-terminated and `st` is writable.
        retry(|| unsafe { libc::fstatat(self.0.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) as libc::c_long })?;
        Ok(Stat::of(&st))
    }

    /// `fstat` of this directory.
    pub fn stat(&self) -> io::Result<Stat> {
        fstat(self.as_fd())
    }

    pub fn mkdir_at(&self, name: &OsStr, mode: libc::mode_t) -> io::Result<()> {
        let name = cstring(name.as_bytes())?;
        // SAFETY: `name` is NUL-terminated.
        retry(|| unsafe { libc::mkdirat(self.0.as_raw_fd(), name.as_ptr(), mode) as libc::c_long }).map(drop)
    }

    pub fn symlink_at(&self, target: &OsStr, name: &OsStr) -> io::Result<()> {
        let (target, name) = (cstring(target.as_bytes())?, cstring(name.as_bytes())?);
        // SAFETY: both strings are NUL-terminated.
        retry(|| unsafe { libc::symlinkat(target.as_ptr(), self.0.as_raw_fd(), name.as_ptr()) as libc::c_long }).map(drop)
    }

    /// A hard link `name` here to `source_name` in `source` (a symlink there is linked
    /// itself, never followed).
    pub fn hard_link_at(&self, source: &Dir, source_name: &OsStr, name: &OsStr) -> io::Result<()> {
        let (source_name, name) = (cstring(source_name.as_bytes())?, cstring(name.as_bytes())?);
        // SAFETY: both strings are NUL-terminated; flags 0 do not follow a symlink.
        retry(|| unsafe { libc::linkat(source.0.as_raw_fd(), source_name.as_ptr(), self.0.as_raw_fd(), name.as_ptr(), 0) as libc::c_long })
            .map(drop)
    }

    pub fn read_link_at(&self, name: &OsStr) -> io::Result<Vec<u8>> {
        let name = cstring(name.as_bytes())?;
        let mut buffer = vec![0u8; libc::PATH_MAX as usize + 1];
        // SAFETY: `buffer` is writable for its length; `name` is NUL-terminated.
        let n = retry(|| unsafe {
            libc::readlinkat(self.0.as_raw_fd(), name.as_ptr(), buffer.as_mut_ptr().cast(), buffer.len()) as libc::c_long
        })?;
        buffer.truncate(usize::try_from(n).unwrap_or(0));
        Ok(buffer)
    }

    /// Renames `from` to `to`, both in this directory (neither is followed if a symlink;
    /// a directory `to` must be empty).
    pub fn rename_at(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (from, to) = (cstring(from.as_bytes())?, cstring(to.as_bytes())?);
        let fd = self.0.as_raw_fd();
        // SAFETY: both names are NUL-terminated.
        retry(|| unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) as libc::c_long }).map(drop)
    }

    /// Removes `name`: a directory (empty) when `directory`, anything else otherwise.
    pub fn unlink_at(&self, name: &OsStr, directory: bool) -> io::Result<()> {
        let name = cstring(name.as_bytes())?;
        let flags = if directory { libc::AT_REMOVEDIR } else { 0 };
        // SAFETY: `name` is NUL-terminated.
        retry(|| unsafe { libc::unlinkat(self.0.as_raw_fd(), name.as_ptr(), flags) as libc::c_long }).map(drop)
    }

    /// Sets this directory's permission bits.
    pub fn chmod(&self, mode: u32) -> io::Result<()> {
        // SAFETY: a plain call on a descriptor we own.
        retry(|| unsafe { libc::fchmod(self.0.as_raw_fd(), mode as libc::mode_t) as libc::c_long }).map(drop)
    }

    /// Sets the permission bits of `name`, which must not be a symlink: `fchmodat2` with
    /// `AT_SYMLINK_NOFOLLOW` (Linux 6.6), or else through an `O_PATH` descriptor of exactly
    /// that inode, whose `/proc/self/fd` entry names it and nothing else.
    pub fn chmod_at(&self, name: &OsStr, mode: u32) -> io::Result<()> {
        let c_name = cstring(name.as_bytes())?;
        // SAFETY: `c_name` is NUL-terminated.
        let direct = retry(|| unsafe {
            libc::syscall(libc::SYS_fchmodat2, self.0.as_raw_fd(), c_name.as_ptr(), mode as libc::mode_t, libc::AT_SYMLINK_NOFOLLOW)
        });
        match direct {
            Err(e) if no_openat2(&e) => self.chmod_through_o_path(&c_name, mode),
            other => other.map(drop),
        }
    }

    /// [`Dir::chmod_at`] where the kernel has no `fchmodat2` (before Linux 6.6).
    fn chmod_through_o_path(&self, c_name: &CStr, mode: u32) -> io::Result<()> {
        let fd = openat(self.as_fd(), c_name, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
        if fstat(fd.as_fd())?.is_symlink() {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        let proc_path = cstring(format!("/proc/self/fd/{}", fd.as_raw_fd()).as_bytes())?;
        // SAFETY: `proc_path` is NUL-terminated.
        retry(|| unsafe { libc::chmod(proc_path.as_ptr(), mode as libc::mode_t) as libc::c_long }).map(drop)
    }

    /// Up to `limit` entries from the directory position `offset` (0 is the start), with
    /// the position after each: a later call resumes there, so a walk never holds a
    /// directory stream open while it is inside a child. `sweep` sees each name as it is
    /// read and may deal with it there (it returns `true`): such names are counted, not
    /// returned, and do not count against `limit`.
    pub fn entries_from(
        &self,
        offset: i64,
        limit: usize,
        mut sweep: impl FnMut(&OsStr) -> io::Result<bool>,
    ) -> io::Result<(Vec<(OsString, i64)>, u64)> {
        let fd = openat(self.as_fd(), c".", DIR_FLAGS, 0)?;
        let raw = fd.as_raw_fd();
        // SAFETY: `fdopendir` takes the descriptor over; `closedir` below closes it.
        let stream = unsafe { libc::fdopendir(raw) };
        if stream.is_null() {
            return Err(io::Error::last_os_error());
        }
        std::mem::forget(fd);
        let mut entries = Vec::new();
        let mut swept = 0u64;
        // SAFETY: `stream` is a valid directory stream until `closedir`.
        unsafe { libc::seekdir(stream, offset as libc::c_long) };
        let result = loop {
            if entries.len() >= limit {
                break Ok(());
            }
            // SAFETY: errno is thread-local; clearing it tells end of stream from failure.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: `stream` is valid; the entry is copied out before the next call.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                let error = io::Error::last_os_error();
                break if error.raw_os_error().unwrap_or(0) == 0 { Ok(()) } else { Err(error) };
            }
            // SAFETY: `readdir` returned a valid entry whose name is NUL-terminated.
            let (name, next) = unsafe { (CStr::from_ptr((*entry).d_name.as_ptr()).to_bytes().to_vec(), (*entry).d_off) };
            if name == b"." || name == b".." {
                continue;
            }
            let name = <OsString as std::os::unix::ffi::OsStringExt>::from_vec(name);
            match sweep(&name) {
                Ok(true) => swept += 1,
                Ok(false) => entries.push((name, next)),
                Err(e) => break Err(e),
            }
        };
        // SAFETY: `stream` came from `fdopendir` and is closed once.
        unsafe { libc::closedir(stream) };
        result.map(|()| (entries, swept))
    }
}

impl From<OwnedFd> for Dir {
    /// A descriptor the caller opened as a directory (`O_DIRECTORY`).
    fn from(fd: OwnedFd) -> Dir {
        Dir(fd)
    }
}

fn cwd() -> BorrowedFd<'static> {
    // SAFETY: AT_FDCWD is a valid "descriptor" for the *at calls for the process's life.
    unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) }
}

/// `fstat` of an open descriptor.
pub fn fstat(fd: BorrowedFd<'_>) -> io::Result<Stat> {
    // SAFETY: all zeroes is a valid `stat`, which the call then fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is writable.
    retry(|| unsafe { libc::fstat(fd.as_raw_fd(), &mut st) as libc::c_long })?;
    Ok(Stat::of(&st))
}

/// What a [`walk`] does at each name and on leaving each directory.
pub trait Visit {
    /// What the walk keeps for each directory it is inside (its name, a path id).
    type Level;
    /// Whether each batch of a directory's entries is read from its start: right for a
    /// visit that removes every entry it sees (what is left is what it has not seen),
    /// and safe where removals move the positions of the entries after them (tmpfs
    /// before Linux 6.6). Otherwise the walk resumes at the position it left.
    const FROM_START: bool = false;
    /// `name` in `dir` as the directory is read, before it is batched: `true` if it was
    /// dealt with there (a file removed at once, so that a directory of a million files is
    /// read once, not once per batch).
    fn sweep(&mut self, _dir: &Dir, _name: &OsStr) -> io::Result<bool> {
        Ok(false)
    }
    /// `name` in `dir` (never `.` or `..`), as `lstat` saw it: `Some` to descend into it,
    /// which it must then be a directory the caller can search.
    fn child(&mut self, dir: &Dir, level: &Self::Level, name: &OsStr, stat: &Stat) -> io::Result<Option<Self::Level>>;
    /// Called once every child of `dir` was seen; `parent` is `None` for the top.
    fn leave(&mut self, dir: &Dir, level: Self::Level, parent: Option<&Dir>) -> io::Result<()>;
}

/// Entries read from a directory at a time: the walk's memory per level of depth.
const BATCH: usize = 32;

struct Frame<L> {
    level: L,
    identity: (u64, u64),
    offset: i64,
    batch: VecDeque<(OsString, i64)>,
    exhausted: bool,
}

/// Walks the tree under `top`, children before their directory is left, holding one
/// directory descriptor at a time however deep the tree is.
pub fn walk<V: Visit>(top: Dir, level: V::Level, visit: &mut V) -> io::Result<()> {
    let mut dir = top;
    let identity = dir.stat()?.identity();
    let mut stack = vec![Frame { level, identity, offset: 0, batch: VecDeque::new(), exhausted: false }];
    while let Some(frame) = stack.last_mut() {
        if frame.batch.is_empty() && !frame.exhausted {
            let offset = if V::FROM_START { 0 } else { frame.offset };
            let (batch, swept) = dir.entries_from(offset, BATCH, |name| visit.sweep(&dir, name))?;
            frame.batch = batch.into();
            // Read from the start, a listing that dealt with names may have stepped over
            // others: the directory is done once a listing finds nothing at all.
            frame.exhausted = frame.batch.is_empty() && (swept == 0 || !V::FROM_START);
        }
        if let Some((name, next)) = frame.batch.pop_front() {
            frame.offset = next;
            let stat = match dir.stat_at(&name) {
                Ok(stat) => stat,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(named(&name, e)),
            };
            if let Some(level) = visit.child(&dir, &frame.level, &name, &stat)? {
                let child = dir.open_child(&name).map_err(|e| named(&name, e))?;
                let identity = child.stat()?.identity();
                if identity != stat.identity() {
                    return Err(named(&name, io::Error::other("it was replaced while the tree was walked")));
                }
                stack.push(Frame { level, identity, offset: 0, batch: VecDeque::new(), exhausted: false });
                dir = child;
            }
            continue;
        }
        let Some(frame) = stack.pop() else { break };
        match stack.last() {
            None => return visit.leave(&dir, frame.level, None),
            Some(parent) => {
                // `..` is opened before `leave`, which may take this directory's search
                // permission away, and checked to be the directory the walk came from.
                let up = dir.open_parent()?;
                if up.stat()?.identity() != parent.identity {
                    return Err(io::Error::other("a directory was moved while the tree was walked"));
                }
                visit.leave(&dir, frame.level, Some(&up))?;
                dir = up;
            }
        }
    }
    Ok(())
}

/// An error that names the entry it is about (at most 256 bytes of its name).
pub fn named(name: &OsStr, error: io::Error) -> io::Error {
    let bytes = name.as_bytes();
    let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(256)]);
    io::Error::new(error.kind(), format!("`{shown}`: {error}"))
}

/// The owner's read, write and search bits: what removing a directory's content needs.
const OWNER_ALL: u32 = 0o700;

/// Removes the tree: unlinks each non-directory, gives each directory its owner's
/// permission back before entering it, and removes directories on the way up.
struct Removal;

impl Visit for Removal {
    type Level = OsString;
    const FROM_START: bool = true;

    fn sweep(&mut self, dir: &Dir, name: &OsStr) -> io::Result<bool> {
        match dir.stat_at(name) {
            Ok(stat) if stat.is_dir() => Ok(false),
            Ok(_) => dir.unlink_at(name, false).map(|()| true).map_err(|e| named(name, e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(named(name, e)),
        }
    }

    fn child(&mut self, dir: &Dir, _: &OsString, name: &OsStr, stat: &Stat) -> io::Result<Option<OsString>> {
        if !stat.is_dir() {
            dir.unlink_at(name, false).map_err(|e| named(name, e))?;
            return Ok(None);
        }
        restore_owner_access(dir, name, stat)?;
        Ok(Some(name.to_owned()))
    }

    fn leave(&mut self, _: &Dir, name: OsString, parent: Option<&Dir>) -> io::Result<()> {
        match parent {
            Some(parent) => parent.unlink_at(&name, true).map_err(|e| named(&name, e)),
            None => Ok(()),
        }
    }
}

/// Makes the directory `name` readable, writable and searchable by its owner, if it is
/// not. Only its owner (or root) may: for anyone else it is left as it is, and whatever
/// then fails names it.
fn restore_owner_access(dir: &Dir, name: &OsStr, stat: &Stat) -> io::Result<()> {
    if stat.mode & OWNER_ALL == OWNER_ALL {
        return Ok(());
    }
    match dir.chmod_at(name, (stat.mode & 0o7777) | OWNER_ALL) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Ok(()),
        other => other.map_err(|e| named(name, e)),
    }
}

/// Removes `name` in `parent` and everything under it, never following a symlink; a
/// directory its owner made unreadable or unwritable is given its owner's permission back.
/// What cannot be removed is an error naming it.
pub fn remove_at(parent: &Dir, name: &OsStr) -> io::Result<()> {
    // A second pass covers an entry made while the first was under way; what is still
    // there after it is the caller's to hear about.
    match remove_once(parent, name) {
        Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => remove_once(parent, name),
        other => other,
    }
}

fn remove_once(parent: &Dir, name: &OsStr) -> io::Result<()> {
    let stat = match parent.stat_at(name) {
        Ok(stat) => stat,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(named(name, e)),
    };
    if !stat.is_dir() {
        return parent.unlink_at(name, false).map_err(|e| named(name, e));
    }
    restore_owner_access(parent, name, &stat)?;
    let top = parent.open_child(name).map_err(|e| named(name, e))?;
    walk(top, name.to_owned(), &mut Removal)?;
    match parent.unlink_at(name, true) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other.map_err(|e| named(name, e)),
    }
}

/// Removes `path` and everything under it, without following symlinks, at any depth with
/// one directory descriptor at a time. A missing `path` is no error; what is still there
/// afterwards is, naming it.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a directory entry to remove", path.display())));
    };
    let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
    let parent = match Dir::open_trusted(parent) {
        Ok(parent) => parent,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io::Error::new(e.kind(), format!("removing {}: {e}", path.display()))),
    };
    remove_at(&parent, name).map_err(|e| io::Error::new(e.kind(), format!("removing {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Runs the test named `name` again in a child process with `CHECKFU_DIRFD_CHILD` set,
    /// as `uid` when given, under an open-file limit of 1024: what the child does (a
    /// changed limit, another user) stays out of this process's other tests.
    fn in_child(name: &str, uid: Option<u32>) {
        use std::os::unix::process::CommandExt;
        let staged = uid.map(|_| readable_copy_of_this_binary());
        let program = match &staged {
            Some(staged) => staged.path().join("test-binary"),
            None => std::env::current_exe().expect("test binary"),
        };
        let mut command = std::process::Command::new(program);
        command.args(["--exact", name, "--nocapture", "--test-threads=1"]).env("CHECKFU_DIRFD_CHILD", "1");
        if let Some(uid) = uid {
            command.uid(uid).gid(uid);
        }
        let output = command.output().expect("child");
        let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success() && text.contains("1 passed"), "the child failed:\n{text}");
    }

    /// A copy of this test binary in a directory of its own that anyone can read, as
    /// `test-binary`: another user may not reach the binary where it is (a clone under a
    /// 0700 home).
    fn readable_copy_of_this_binary() -> crate::tempdir::TempDir {
        let staged = crate::tempdir::TempDir::new("checkfu-dirfd-child").expect("staging dir");
        std::fs::set_permissions(staged.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod 755");
        std::fs::copy(std::env::current_exe().expect("test binary"), staged.path().join("test-binary")).expect("copy the test binary");
        staged
    }

    fn is_child() -> bool {
        std::env::var_os("CHECKFU_DIRFD_CHILD").is_some()
    }

    fn limit_open_files(limit: u64) {
        let rlimit = libc::rlimit { rlim_cur: limit, rlim_max: limit };
        // SAFETY: a plain call with a valid struct.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rlimit) }, 0, "setrlimit");
    }

    #[test]
    fn a_tree_1900_deep_is_removed_at_1024_open_files() {
        if !is_child() {
            return in_child("dir::tests::a_tree_1900_deep_is_removed_at_1024_open_files", None);
        }
        limit_open_files(1024);
        let base = tempfile::tempdir().expect("tempdir");
        let top = base.path().join("top");
        std::fs::create_dir(&top).expect("top");
        // Built one level at a time from the level above, so that no path is longer
        // than one name.
        let mut dir = Dir::open(&top).expect("open");
        for level in 0..1900 {
            dir.mkdir_at(OsStr::new("d"), 0o755).expect("mkdir");
            dir.create_file(OsStr::new("f"), 0o644).expect("file");
            if level % 100 == 0 {
                dir.mkdir_at(OsStr::new("locked"), 0o000).expect("locked");
            }
            dir = dir.open_child(OsStr::new("d")).expect("descend");
        }
        drop(dir);
        remove_tree(&top).expect("removed");
        assert!(!top.exists());
    }

    #[test]
    fn a_mode_000_tree_made_by_its_owner_is_removed() {
        // As root, permission bits stop nothing; the case that matters is an ordinary
        // user's, so root runs it again as uid 65534 (nobody).
        // SAFETY: a plain call.
        if !is_child() && unsafe { libc::geteuid() } == 0 {
            return in_child("dir::tests::a_mode_000_tree_made_by_its_owner_is_removed", Some(65534));
        }
        let base = tempfile::tempdir().expect("tempdir");
        let top = base.path().join("workspace");
        std::fs::create_dir_all(top.join("a/locked/deeper")).expect("dirs");
        std::fs::write(top.join("a/locked/deeper/f"), "x").expect("file");
        std::fs::write(top.join("a/locked/g"), "x").expect("file");
        std::fs::create_dir(top.join("wonly")).expect("dir");
        std::fs::write(top.join("wonly/h"), "x").expect("file");
        for (path, mode) in [("a/locked/deeper", 0o000), ("a/locked", 0o000), ("wonly", 0o200), ("a", 0o500)] {
            std::fs::set_permissions(top.join(path), std::fs::Permissions::from_mode(mode)).expect("chmod");
        }
        // A symlink to a directory outside: removed as a link, its target untouched.
        let outside = tempfile::tempdir().expect("outside");
        std::fs::write(outside.path().join("keep"), "k").expect("canary");
        std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o555)).expect("canary mode");
        std::os::unix::fs::symlink(outside.path(), top.join("out")).expect("symlink");
        std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o000)).expect("chmod top");
        remove_tree(&top).expect("removed");
        assert!(!top.exists());
        assert_eq!(std::fs::read(outside.path().join("keep")).expect("canary"), b"k");
        assert_eq!(std::fs::metadata(outside.path()).expect("canary").permissions().mode() & 0o7777, 0o555);
        std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o755)).expect("restore");
    }

    #[test]
    fn what_cannot_be_removed_is_named() {
        // A directory that belongs to someone else cannot be given back its permission by
        // an ordinary user: the removal says which one stopped it.
        // SAFETY: a plain call.
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        if !is_child() {
            let base = tempfile::tempdir().expect("tempdir");
            std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
            let top = base.path().join("ws");
            std::fs::create_dir_all(top.join("roots")).expect("dirs");
            std::fs::write(top.join("roots/f"), "x").expect("file");
            std::fs::set_permissions(top.join("roots"), std::fs::Permissions::from_mode(0o555)).expect("chmod");
            std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o777)).expect("chmod");
            let staged = readable_copy_of_this_binary();
            let output = std::process::Command::new(staged.path().join("test-binary"))
                .args(["--exact", "dirfd::tests::what_cannot_be_removed_is_named", "--nocapture", "--test-threads=1"])
                .env("CHECKFU_DIRFD_CHILD", "1")
                .env("CHECKFU_DIRFD_TOP", &top)
                .uid_gid(65534)
                .output()
                .expect("child");
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(output.status.success(), "{text}{}", String::from_utf8_lossy(&output.stderr));
            std::fs::set_permissions(top.join("roots"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
            return;
        }
        let top = std::path::PathBuf::from(std::env::var_os("CHECKFU_DIRFD_TOP").expect("top"));
        let error = remove_tree(&top).expect_err("root's read-only directory stays").to_string();
        assert!(error.starts_with(&format!("removing {}: `f`: Permission denied", top.display())), "{error}");
    }

    #[test]
    fn a_mode_is_set_through_o_path_on_the_directory_and_never_through_a_symlink() {
        let base = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        std::fs::create_dir(base.path().join("d")).expect("dir");
        std::os::unix::fs::symlink(outside.path(), base.path().join("link")).expect("symlink");
        let before = std::fs::metadata(outside.path()).expect("outside").permissions().mode();
        let dir = Dir::open(base.path()).expect("open");
        dir.chmod_through_o_path(c"d", 0o500).expect("chmod");
        assert_eq!(std::fs::metadata(base.path().join("d")).expect("d").permissions().mode() & 0o7777, 0o500);
        let error = dir.chmod_through_o_path(c"link", 0o000).expect_err("a symlink is refused");
        assert_eq!(error.raw_os_error(), Some(libc::ELOOP));
        assert_eq!(std::fs::metadata(outside.path()).expect("outside").permissions().mode(), before);
        let error = dir.chmod_at(OsStr::new("link"), 0o000).expect_err("a symlink is refused");
        assert!(error.raw_os_error().is_some(), "{error}");
        assert_eq!(std::fs::metadata(outside.path()).expect("outside").permissions().mode(), before);
    }

    trait UidGid {
        fn uid_gid(&mut self, id: u32) -> &mut Self;
    }

    impl UidGid for std::process::Command {
        fn uid_gid(&mut self, id: u32) -> &mut Self {
            std::os::unix::process::CommandExt::uid(self, id);
            std::os::unix::process::CommandExt::gid(self, id)
        }
    }
}
