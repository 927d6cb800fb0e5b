//! The image store: each image the probe pulled by digest and unpacked stays, keyed by its
//! manifest digest, so that the next run of the same digest skips the pull, the blob checks
//! and the unpack (`$XDG_CACHE_HOME/checkfu-wire/images`, else `~/.cache/…`, or
//! `--image-cache DIR`).
//!
//! What the store trusts is what only the user running the probe (its effective uid) or
//! root can have written, and it trusts that only after reading it through descriptors:
//!
//! - The store directory. Every component of its path is walked from `/` one name at a
//!   time, by descriptor, by the sandbox's one resolver (`Root::walk`, the host's `/` as
//!   its root: `..` at `/` stays there), never following a symlink it did not check: each
//!   directory on
//!   the way must be owned by the effective uid or by root, and not writable by group or
//!   others unless it is sticky (`/tmp`, mode 1777: no one else can rename or remove what
//!   is ours in it); a symlink on the way is followed only if it is owned by the
//!   effective uid or by root (it sits in a directory that passed, so no one else could
//!   have put it there), at most 40 of them. The store directory itself must be a real
//!   directory (not a symlink) owned by the effective uid and not writable by group or
//!   others. A store that is not is refused with an error naming the path, its owner and
//!   its mode: it is never repaired by a `chmod`, and never used. What is missing is made,
//!   mode 0700.
//! - An entry (`sha256-<hex>`), its `root` and its `entry.json`. Each is opened beneath the
//!   store's descriptor with `O_NOFOLLOW | O_NONBLOCK` (and `O_DIRECTORY` for
//!   directories), and `fstat`ed before a byte is read: it must be a real directory
//!   (regular file), owned by the effective uid, not writable by group or others, and
//!   `entry.json` at most [`MAX_META_BYTES`]. A symlink is never followed and a FIFO never
//!   blocks. Anything else is not an entry: a run's lookup misses it; `image ls` lists it
//!   as skipped, saying why; `prune` and eviction leave what is not the user's own (a
//!   symlink, another user's directory) where it is, and say so, and remove only the
//!   user's own directories. The entry's last use is marked on its `used` file, opened
//!   beneath the entry's descriptor with `O_NOFOLLOW`: a symlink there is not followed. A
//!   root a lookup would not take (an image whose `/` anyone can write) is not stored.
//! - The root's content. At commit, the seal is a sha256 over the tree's listing: every
//!   name's path, type, mode, owner, size and symlink target, and every regular file's
//!   content, each file read through a descriptor opened beneath its directory without
//!   following a symlink. It is written in `entry.json` (mode 0600, in the `.tmp-`
//!   directory only the user can write, which is then renamed into place). A lookup reads
//!   the tree again the same way and compares: the content itself, not metadata about it,
//!   so a write that moves no time stamp (through a shared writable mapping made before the
//!   commit) is caught as any other. What it does not catch is a change made after the
//!   check, by the user or root, while the run lasts; the harness itself cannot make one
//!   (the root is bound read-only).
//!
//! How an entry is written: the layers are unpacked (the confined unpacker, as for any run)
//! into `.tmp-<pid>-…/root` inside the store; the mount points every run needs (`/dev`,
//! `/proc`, `/tmp`, the image's `WorkingDir`) are made in it; the tree is sealed; then
//! `entry.json` (the digest, the reference, the image config, the sizes, the seal) is
//! written, last, and the directory is renamed to `sha256-<hex>` in one step. A write cut
//! short leaves only a `.tmp-` directory, never taken for an entry, and removed by the next
//! run once the process that made it is gone.
//!
//! A run never writes the stored entry, and never reseals it: the seal is checked before a
//! run and trusted only as written at commit. The entry keeps the root's descriptor its seal
//! was read through, and every directory a run looks for in it is resolved beneath that
//! descriptor ([`in_root`]), not through the entry's path again. The root is bound read-only (bubblewrap's
//! `--ro-bind`), and what a run mounts at a path under `/tmp` lands on that run's own tmpfs.
//! A directory a run needs elsewhere that the entry lacks (a `--working-directory`, a
//! `TMPDIR` outside `/tmp`) is made in a private copy of the root's directories for that
//! run alone: the directories made again and every file hard-linked (the same content,
//! never copied), in a `.tmp-` directory of the store removed when the run is done.
//! An entry in use holds a shared lock on its `entry.json`; eviction and `prune` pass over
//! it.
//!
//! Every store operation ends by its deadline (a run's `--deadline`) and by a signal: no
//! open can block, every read is bounded, and each walk checks the deadline and
//! [`crate::interrupt::received`] at every name and every mebibyte read.
//!
//! The store is bounded (`--image-cache-max`): before an entry is renamed in, the least
//! recently used go until it fits, and an image larger than the bound is run without being
//! stored. Layers are not shared between entries: each holds its whole root.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

pub use oci_spec::image::Config;
use sha2::Digest as _;

use super::in_root::{self, InRootError};
use super::layout::Limits;
use super::reference::Digest;
use super::TempDir;
use checkfu_wire_sandbox::dir::{self as dirfd, Dir, Stat, Visit};
use checkfu_wire_sandbox::file::{try_lock, Lock};
use checkfu_wire_sandbox::root::{Bounds, Root, WalkError};

/// The store's bound when none is given (`--image-cache-max`): 10 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 << 30;
/// The entry's description, written last: an entry without it is not whole.
const META: &str = "entry.json";
/// The file whose modification time is the entry's last use.
const USED: &str = "used";
/// The unpacked root filesystem, inside an entry.
const ROOT: &str = "root";
/// The prefix of a directory being written (or removed): never an entry.
const TEMP_PREFIX: &str = ".tmp-";
/// The prefix of an entry's name.
const ENTRY_PREFIX: &str = "sha256-";
/// The most of `entry.json` read: a config is a few kilobytes.
pub const MAX_META_BYTES: u64 = 1 << 20;
/// The entry format; an entry of another is pulled again. 2: the seal holds the content.
const FORMAT: u32 = 2;
/// Names a seal lists beyond the unpacker's entry cap: the mount points made after it.
const SEALED_NAMES_OVER_ENTRIES: u64 = 4096;
/// Symlinks followed on the way to the store, as the kernel's own bound.
const MAX_SYMLINKS: usize = 40;
/// Bytes read from a file at a time while sealing; the deadline is checked between reads.
const READ_CHUNK: usize = 1 << 20;
/// Group and other write bits.
const WRITABLE_BY_OTHERS: u32 = 0o022;

/// Where the store is and how large it may grow, as the command line resolved it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorePlan {
    pub dir: PathBuf,
    pub max_bytes: u64,
}

impl StorePlan {
    /// The user's cache directory: `$XDG_CACHE_HOME/checkfu-wire/images`, else
    /// `$HOME/.cache/checkfu-wire/images`; `None` when neither is an absolute path.
    pub fn default_dir() -> Option<PathBuf> {
        let absolute = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
        let cache = absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|home| home.join(".cache")))?;
        Some(cache.join("checkfu-wire").join("images"))
    }
}

/// Whether a run used the store, as the report says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageCache {
    /// The digest was in the store, whole and unchanged: nothing was pulled or unpacked.
    Hit,
    /// It was not (or its entry was removed): the image was pulled, unpacked and stored.
    Miss,
    /// The store was not used: `--no-image-cache`, a build context, a runtime other than
    /// bubblewrap, or a store that could not be opened.
    Off,
}

impl ImageCache {
    pub fn name(self) -> &'static str {
        match self {
            ImageCache::Hit => "hit",
            ImageCache::Miss => "miss",
            ImageCache::Off => "off",
        }
    }
}

/// What is wrong with a directory (or symlink) on the way to the store, or the store.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Untrusted {
    #[error("owned by uid {owner}, not by uid {euid}{}", if *.root_too { " or root" } else { "" })]
    Owner { owner: u32, euid: u32, root_too: bool },
    #[error("mode {mode:o}: writable by group or others{}", if *.sticky_allowed { " and not sticky" } else { "" })]
    Writable { mode: u32, sticky_allowed: bool },
    #[error("not a directory (mode {mode:o})")]
    NotADirectory { mode: u32 },
    #[error("a symlink: the store itself must be a real directory")]
    Symlink,
    #[error("more than {MAX_SYMLINKS} symlinks on the way")]
    TooManySymlinks,
}

/// Why the store could not be used or changed, naming the path and what failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store, or a directory on the way to it, is one someone else could change: it is
    /// refused, never repaired.
    #[error("the image store {}: {} is {why}; refused, and left as it is (give a directory of your own that only you can write)", dir.display(), path.display())]
    Untrusted { dir: PathBuf, path: PathBuf, why: Untrusted },
    /// A call on the filesystem failed.
    #[error("the image store {}: {}: {source}", dir.display(), path.display())]
    Io { dir: PathBuf, path: PathBuf, source: io::Error },
    /// The run's deadline passed, or a signal came, while the store was read.
    #[error("the image store {}: {what}", dir.display())]
    Stopped { dir: PathBuf, what: String },
}

/// Why an entry could not be given room under the store's bound.
#[derive(Debug, thiserror::Error)]
enum NoRoom {
    /// The entries could not be listed.
    #[error(transparent)]
    Unlisted(#[from] StoreError),
    /// The entries left after every one no run holds was removed are still too large.
    #[error("the store's entries in use leave no room for {incoming} bytes under its bound of {max_bytes}")]
    InUse { incoming: u64, max_bytes: u64 },
}

/// Why a directory beneath the store is not the user's own real directory.
#[derive(Debug, thiserror::Error)]
enum NotOwned {
    #[error("{}: {source}", name.to_string_lossy())]
    Open { name: OsString, source: io::Error },
    #[error("{source}")]
    Stat { source: io::Error },
    #[error("{}: {source}", name.to_string_lossy())]
    Untrusted { name: OsString, source: Untrusted },
}

/// What `entry.json` holds.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    format: u32,
    /// The manifest digest, the entry's key.
    pub digest: String,
    /// The reference the entry was first pulled as.
    pub reference: String,
    /// The image config's runtime part (`Env`, `Entrypoint`, `Cmd`, `WorkingDir`, `User`).
    pub config: Config,
    /// Bytes of file content unpacked.
    pub unpacked_bytes: u64,
    /// Bytes the root takes on disk (its blocks), what the bound counts.
    pub disk_bytes: u64,
    /// Names in the root.
    pub names: u64,
    /// The seal over the root's listing and content, the digest and the config.
    seal: String,
}

/// What a new entry is, besides its root.
pub struct NewEntry<'a> {
    pub digest: &'a Digest,
    pub reference: String,
    pub config: &'a Config,
    pub unpacked_bytes: u64,
}

/// The store, opened: its path (every component checked) and its descriptor, beneath
/// which every entry is opened.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    fd: Dir,
    euid: u32,
    max_bytes: u64,
    /// When `image ls` and `image prune` stop (`--deadline`), beside a signal.
    deadline: Option<Instant>,
}

/// What a run found in the store for its digest.
pub enum Lookup {
    /// Whole and unchanged.
    Hit(Box<Entry>),
    /// Not there; or there and not taken, for the reason given.
    Miss(Option<String>),
}

/// An entry a run uses: its root and config, and the shared lock that keeps eviction and
/// `prune` off it while the run lasts.
#[derive(Debug)]
pub struct Entry {
    dir: PathBuf,
    /// The store's directory, where a private copy of the root is made if one is needed.
    store: PathBuf,
    pub meta: Meta,
    /// `entry.json`, locked shared.
    _lock: File,
    /// The stored root, held by the descriptor its seal was checked through: every path in
    /// it is resolved beneath this ([`in_root`]), never through the entry's path again.
    root: Root,
    /// The private copy of the root's directories this run uses instead of the stored root
    /// ([`Entry::make_dir`]), removed when the run is done.
    copy: Mutex<Option<PrivateRoot>>,
    /// When making that copy must stop: the deadline the entry was looked up or stored by.
    until: Until,
}

/// A run's private copy of a stored root: the `.tmp-` directory that holds it, removed
/// when dropped, and the copied root, held by descriptor.
#[derive(Debug)]
struct PrivateRoot {
    dir: TempDir,
    root: Root,
}

/// An entry being written: `.tmp-…/root`, removed when dropped unless committed.
#[derive(Debug)]
pub struct Pending {
    dir: TempDir,
}

impl Pending {
    /// Where the layers are unpacked.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join(ROOT)
    }

    /// The directory that holds the root; what is removed when this drops.
    pub fn into_dir(self) -> TempDir {
        self.dir
    }
}

/// An entry as `image ls` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Listed {
    pub digest: String,
    /// The reference it was first pulled as (`""` for an entry that is not whole).
    pub reference: String,
    pub disk_bytes: u64,
    /// Seconds since the epoch of its last use.
    pub last_used: u64,
    /// It has its `entry.json` (a run still checks its seal).
    pub whole: bool,
    /// Why the name is not an entry of the user's own (a symlink, another user's
    /// directory): it is never read, used or removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// What `prune` did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Pruned {
    pub removed: Vec<String>,
    /// Entries a running probe holds, left in place.
    pub in_use: Vec<String>,
    /// Names that are not entries of the user's own, left in place, with why.
    pub skipped: Vec<(String, String)>,
    pub freed_bytes: u64,
}

/// When a store operation must stop: the run's deadline, if it has one, and a signal.
#[derive(Clone, Copy, Debug)]
struct Until(Option<Instant>);

impl Until {
    fn check(self) -> io::Result<()> {
        crate::interrupt::check("the image store")?;
        match self.0 {
            Some(deadline) if Instant::now() >= deadline => {
                Err(io::Error::new(io::ErrorKind::TimedOut, "the image store: the run's deadline (--deadline) passed"))
            }
            _ => Ok(()),
        }
    }
}

/// The effective uid, which owns everything the store trusts.
fn euid() -> u32 {
    checkfu_wire_sandbox::identity::euid()
}

/// Whether an entry name is the user's own, and why not.
enum NotEntry {
    /// Nothing by that name.
    Missing,
    /// Not the user's own real directory: never read, used or removed.
    Foreign(String),
}

impl Store {
    /// Opens the store at `plan.dir` (made, mode 0700, with any missing directory on the
    /// way, if it is not there), checking every component of its path (see the module's
    /// comment), and removes what interrupted writes left.
    pub fn open(plan: &StorePlan) -> Result<Store, StoreError> {
        let dir =
            std::path::absolute(&plan.dir).map_err(|source| StoreError::Io { dir: plan.dir.clone(), path: plan.dir.clone(), source })?;
        let euid = euid();
        let fd = open_trusted(&dir, euid)?;
        let store = Store { dir, fd, euid, max_bytes: plan.max_bytes, deadline: None };
        store.sweep_temporaries();
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The store, with listing and pruning stopped at `deadline` as at a signal.
    pub fn with_deadline(mut self, deadline: Option<Instant>) -> Store {
        self.deadline = deadline;
        self
    }

    fn io_error(&self, name: &str, source: io::Error) -> StoreError {
        if matches!(source.kind(), io::ErrorKind::Interrupted | io::ErrorKind::TimedOut) {
            return StoreError::Stopped { dir: self.dir.clone(), what: source.to_string() };
        }
        StoreError::Io { dir: self.dir.clone(), path: self.dir.join(name), source }
    }

    fn entry_name(digest: &str) -> OsString {
        OsString::from(digest.replace(':', "-"))
    }

    /// The entry `name`, opened beneath the store if it is the user's own real directory
    /// and not writable by anyone else.
    fn open_entry_dir(&self, name: &OsStr) -> Result<Dir, NotEntry> {
        let listed = match self.fd.stat_at(name) {
            Ok(stat) => stat,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(NotEntry::Missing),
            Err(e) => return Err(NotEntry::Foreign(format!("cannot be looked at: {e}"))),
        };
        if listed.is_symlink() {
            return Err(NotEntry::Foreign(String::from("a symlink (never followed)")));
        }
        let dir = self.fd.open_child(name).map_err(|e| NotEntry::Foreign(format!("not a directory that can be opened: {e}")))?;
        let stat = dir.stat().map_err(|e| NotEntry::Foreign(e.to_string()))?;
        if stat.identity() != listed.identity() {
            return Err(NotEntry::Foreign(String::from("replaced while it was opened")));
        }
        owned_and_private(&stat, self.euid, false).map_err(|why| NotEntry::Foreign(why.to_string()))?;
        Ok(dir)
    }

    /// The entry of `digest`, if it is whole and its seal holds, checked by `deadline`; an
    /// entry of the user's own that is not is removed (unless another run holds it), and
    /// the reason given. What is not the user's own is left where it is.
    pub fn lookup(&self, digest: &Digest, deadline: Option<Instant>) -> Lookup {
        let until = Until(deadline);
        let name = Store::entry_name(digest.as_ref());
        let dir = match self.open_entry_dir(&name) {
            Ok(dir) => dir,
            Err(NotEntry::Missing) => return Lookup::Miss(None),
            Err(NotEntry::Foreign(why)) => {
                return Lookup::Miss(Some(format!("the stored entry is not the user's own ({why}); left in place, not used")))
            }
        };
        match self.check_entry(&name, &dir, digest, until) {
            Ok((meta, lock, root)) => {
                touch(&dir);
                let path = self.dir.join(&name);
                Lookup::Hit(Box::new(Entry { dir: path, store: self.dir.clone(), meta, _lock: lock, root, copy: Mutex::default(), until }))
            }
            Err(Checked::Busy) => Lookup::Miss(Some(String::from("the stored entry is being removed by another run; not used"))),
            Err(Checked::Stopped(e)) => Lookup::Miss(Some(format!("the stored entry was not checked: {e}"))),
            Err(Checked::Wrong(why)) => {
                drop(dir);
                let removed = match self.remove_entry(&name) {
                    Ok(Some(_)) => "removed",
                    Ok(None) => "left in place: another run holds it",
                    Err(_) => "and could not be removed",
                };
                Lookup::Miss(Some(format!("the stored entry was {why}; {removed}")))
            }
        }
    }

    /// Reads and checks the entry `dir` (the store's `name`): its `entry.json`, locked
    /// shared, for `digest` and of this format, and its root against the seal.
    fn check_entry(&self, name: &OsStr, dir: &Dir, digest: &Digest, until: Until) -> Result<(Meta, File, Root), Checked> {
        let (meta, lock) = read_meta(dir, self.euid).map_err(|why| match why {
            MetaError::Missing => Checked::Wrong(String::from("not whole (no entry.json)")),
            MetaError::Wrong(why) => Checked::Wrong(format!("not whole: {why}")),
        })?;
        match try_lock(&lock, Lock::Shared) {
            Ok(true) => {}
            Ok(false) => return Err(Checked::Busy),
            Err(e) => return Err(Checked::Wrong(format!("unreadable: {e}"))),
        }
        // The lock is taken on what was opened: if the entry was moved aside (a removal)
        // meanwhile, the name no longer leads to it.
        let same = self.fd.stat_at(name).is_ok_and(|s| dir.stat().is_ok_and(|d| d.identity() == s.identity()));
        if !same {
            return Err(Checked::Busy);
        }
        if meta.format != FORMAT || meta.digest != digest.to_string() {
            return Err(Checked::Wrong(format!("of another format or digest ({}, format {})", meta.digest, meta.format)));
        }
        let root = open_owned_child(dir, OsStr::new(ROOT), self.euid).map_err(|why| Checked::Wrong(format!("not whole: {why}")))?;
        let held = root.duplicate().map_err(|e| Checked::Wrong(format!("unreadable: {e}")))?;
        let sealed = match seal(root, &meta.digest, &meta.config, until) {
            Ok(sealed) => sealed,
            Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::TimedOut) => return Err(Checked::Stopped(e)),
            Err(e) => return Err(Checked::Wrong(format!("unreadable: {e}"))),
        };
        if sealed.seal != meta.seal {
            return Err(Checked::Wrong(String::from("changed since it was stored (its seal does not match)")));
        }
        Ok((meta, lock, Root::from(held)))
    }

    /// A fresh `.tmp-` directory in the store with an empty `root`, for an image's layers.
    pub fn begin(&self) -> Result<Pending, StoreError> {
        let (name, dir, removal) = self.make_temporary("")?;
        dir.mkdir_at(OsStr::new(ROOT), 0o755).map_err(|e| self.io_error(&format!("{name}/{ROOT}"), e))?;
        Ok(Pending { dir: removal })
    }

    /// A fresh `.tmp-<pid>-<what>…` directory in the store, mode 0700: its name, its
    /// descriptor, and its removal when dropped.
    fn make_temporary(&self, what: &str) -> Result<(String, Dir, TempDir), StoreError> {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let name = format!("{TEMP_PREFIX}{}-{what}{}-{nanos:08x}", std::process::id(), unique());
        self.fd.mkdir_at(OsStr::new(&name), 0o700).map_err(|e| self.io_error(&name, e))?;
        let removal = TempDir::adopt(self.dir.join(&name));
        let dir = self.fd.open_child(OsStr::new(&name)).map_err(|e| self.io_error(&name, e))?;
        Ok((name, dir, removal))
    }

    /// Seals `pending` by `deadline`, writes its `entry.json` last, makes room and renames
    /// it into place. `Err` hands the pending entry back (the run uses it and removes it)
    /// with why it was not stored: larger than the bound, no room (entries in use), stored
    /// meanwhile by another run, the deadline or a signal, or a failure of the filesystem.
    pub fn commit(&self, pending: Pending, new: &NewEntry<'_>, deadline: Option<Instant>) -> Result<Box<Entry>, (Pending, String)> {
        let temporary = match pending.dir.path().file_name() {
            Some(name) => name.to_owned(),
            None => return Err((pending, String::from("not stored: its directory has no name"))),
        };
        let dir = match self.fd.open_child(&temporary) {
            Ok(dir) => dir,
            Err(e) => {
                let why = format!("not stored: cannot open {}: {e}", pending.dir.path().display());
                return Err((pending, why));
            }
        };
        // Checked as a lookup checks it: a root a lookup would never take (an image whose `/`
        // anyone can write) is not stored, to be pulled, stored and removed at every run.
        let root = match open_owned_child(&dir, OsStr::new(ROOT), self.euid) {
            Ok(root) => root,
            Err(why) => return Err((pending, format!("not stored: its root is not an entry's: {why}"))),
        };
        let held = match root.duplicate() {
            Ok(held) => Root::from(held),
            Err(e) => return Err((pending, format!("not stored: cannot open its root: {e}"))),
        };
        let sealed = match seal(root, new.digest.as_ref(), new.config, Until(deadline)) {
            Ok(sealed) => sealed,
            Err(e) => return Err((pending, format!("not stored: its root could not be sealed: {e}"))),
        };
        if sealed.disk_bytes > self.max_bytes {
            let why =
                format!("not stored: its {} bytes exceed the store's bound of {} (--image-cache-max)", sealed.disk_bytes, self.max_bytes);
            return Err((pending, why));
        }
        let meta = Meta {
            format: FORMAT,
            digest: new.digest.to_string(),
            reference: new.reference.clone(),
            config: new.config.clone(),
            unpacked_bytes: new.unpacked_bytes,
            disk_bytes: sealed.disk_bytes,
            names: sealed.names,
            seal: sealed.seal,
        };
        let written =
            write_meta(&dir, &meta).and_then(|()| dir.open_file(OsStr::new(USED), libc::O_WRONLY | libc::O_CREAT, 0o600).map(drop));
        if let Err(e) = written {
            return Err((pending, format!("not stored: cannot write its description: {e}")));
        }
        if let Err(why) = self.make_room(sealed.disk_bytes) {
            return Err((pending, format!("not stored: {why}")));
        }
        let lock = match dir.open_file(OsStr::new(META), libc::O_RDONLY, 0) {
            Ok(lock) if try_lock(&lock, Lock::Shared).unwrap_or(false) => lock,
            Ok(_) => return Err((pending, String::from("not stored: cannot lock its description"))),
            Err(e) => return Err((pending, format!("not stored: cannot lock its description: {e}"))),
        };
        let name = Store::entry_name(new.digest.as_ref());
        let target = self.dir.join(&name);
        // `rename` refuses a target directory that is not empty (and any other file in its
        // place): a run that stored the same digest meanwhile keeps its entry, and this run
        // uses its own root, then removes it.
        if let Err(e) = self.fd.rename_at(&temporary, &name) {
            return Err((pending, format!("not stored: {}: {e}", target.display())));
        }
        pending.dir.keep();
        let until = Until(deadline);
        Ok(Box::new(Entry { dir: target, store: self.dir.clone(), meta, _lock: lock, root: held, copy: Mutex::default(), until }))
    }

    /// The entries, least recently used first; names that are not entries of the user's
    /// own are listed as skipped. Stops at a signal, and at the store's deadline.
    pub fn list(&self) -> Result<Vec<Listed>, StoreError> {
        let mut listed = Vec::new();
        for name in self.names()? {
            Until(self.deadline).check().map_err(|e| self.io_error("", e))?;
            let Some(hex) = name.to_str().and_then(|n| n.strip_prefix(ENTRY_PREFIX)) else { continue };
            let digest = format!("sha256:{hex}");
            let dir = match self.open_entry_dir(&name) {
                Ok(dir) => dir,
                Err(NotEntry::Missing) => continue,
                Err(NotEntry::Foreign(why)) => {
                    listed.push(Listed { digest, reference: String::new(), disk_bytes: 0, last_used: 0, whole: false, skipped: Some(why) });
                    continue;
                }
            };
            let meta = read_meta(&dir, self.euid).ok().map(|(meta, _)| meta);
            let used = dir.stat_at(OsStr::new(USED)).ok().filter(Stat::is_file).map_or(0, |s| u64::try_from(s.mtime).unwrap_or(0));
            listed.push(Listed {
                digest,
                reference: meta.as_ref().map(|m| m.reference.clone()).unwrap_or_default(),
                disk_bytes: meta.as_ref().map_or(0, |m| m.disk_bytes),
                last_used: used,
                whole: meta.is_some(),
                skipped: None,
            });
        }
        listed.sort_by(|a, b| (a.last_used, &a.digest).cmp(&(b.last_used, &b.digest)));
        Ok(listed)
    }

    /// The names in the store's directory.
    fn names(&self) -> Result<Vec<OsString>, StoreError> {
        let mut names = Vec::new();
        let mut offset = 0;
        loop {
            let (batch, _) = self.fd.entries_from(offset, 256, |_| Ok(false)).map_err(|e| self.io_error("", e))?;
            let Some((_, next)) = batch.last() else { break };
            offset = *next;
            names.extend(batch.into_iter().map(|(name, _)| name));
        }
        Ok(names)
    }

    /// Removes every entry of the user's own (or those of `only`) that no running probe
    /// holds, and what interrupted writes left; what is not the user's own is skipped.
    /// Stops between entries at a signal, and at the store's deadline.
    pub fn prune(&self, only: &[Digest]) -> Result<Pruned, StoreError> {
        self.sweep_temporaries();
        let mut pruned = Pruned::default();
        for listed in self.list()? {
            Until(self.deadline).check().map_err(|e| self.io_error("", e))?;
            if !only.is_empty() && !only.iter().any(|d| d.to_string() == listed.digest) {
                continue;
            }
            if let Some(why) = listed.skipped {
                pruned.skipped.push((listed.digest, why));
                continue;
            }
            let name = Store::entry_name(&listed.digest);
            match self.remove_entry(&name).map_err(|e| self.io_error(&name.to_string_lossy(), e))? {
                Some(()) => {
                    pruned.freed_bytes += listed.disk_bytes;
                    pruned.removed.push(listed.digest);
                }
                None => pruned.in_use.push(listed.digest),
            }
        }
        Ok(pruned)
    }

    /// Removes the least recently used entries no run holds until `incoming` more bytes fit
    /// in the bound; `Err` says why they cannot.
    fn make_room(&self, incoming: u64) -> Result<(), NoRoom> {
        let listed = self.list()?;
        let listed: Vec<Listed> = listed.into_iter().filter(|l| l.skipped.is_none()).collect();
        let mut total: u64 = listed.iter().map(|l| l.disk_bytes).sum();
        for entry in &listed {
            if total.saturating_add(incoming) <= self.max_bytes {
                break;
            }
            if let Ok(Some(())) = self.remove_entry(&Store::entry_name(&entry.digest)) {
                total = total.saturating_sub(entry.disk_bytes);
            }
        }
        if total.saturating_add(incoming) > self.max_bytes {
            return Err(NoRoom::InUse { incoming, max_bytes: self.max_bytes });
        }
        Ok(())
    }

    /// Moves the entry `name` aside (a `.tmp-` name: from then on no run finds it) and
    /// removes it; `Ok(None)` when a run holds it. Only the user's own real directory is
    /// moved or removed: anything else is an error, and stays.
    fn remove_entry(&self, name: &OsStr) -> io::Result<Option<()>> {
        let dir = match self.open_entry_dir(name) {
            Ok(dir) => dir,
            Err(NotEntry::Missing) => return Ok(Some(())),
            Err(NotEntry::Foreign(why)) => return Err(io::Error::other(format!("not the user's own: {why}"))),
        };
        let held = match dir.open_file(OsStr::new(META), libc::O_RDONLY, 0) {
            Ok(file) if dirfd::fstat(file.as_fd()).is_ok_and(|s| s.is_file()) => {
                if !lock_exclusive_soon(&file)? {
                    return Ok(None);
                }
                Some(file)
            }
            _ => None,
        };
        let aside = format!("{TEMP_PREFIX}{}-removed-{}", std::process::id(), unique());
        self.fd.rename_at(name, OsStr::new(&aside))?;
        drop(held);
        dirfd::remove_at(&self.fd, OsStr::new(&aside)).map(Some)
    }

    /// Removes the user's own `.tmp-<pid>-…` directories whose process is gone: writes or
    /// removals that were cut short.
    fn sweep_temporaries(&self) {
        let Ok(names) = self.names() else { return };
        for name in names {
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX)) else { continue };
            let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
            let alive = pid.is_some_and(|pid| pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists());
            let own = self.fd.stat_at(&name).is_ok_and(|s| s.uid == self.euid);
            if !alive && own && crate::interrupt::received().is_none() {
                let _ = dirfd::remove_at(&self.fd, &name);
            }
        }
    }
}

/// Why a lookup did not take an entry.
enum Checked {
    /// Not whole, of another digest, or changed: removed.
    Wrong(String),
    /// Being removed by another run.
    Busy,
    /// The deadline passed or a signal came before the check was done.
    Stopped(io::Error),
}

impl Entry {
    /// The root a run binds read-only: the stored root, or this run's private copy of it
    /// once one was made ([`Entry::make_dir`]).
    pub fn root(&self) -> PathBuf {
        match self.copy.lock().ok().as_ref().and_then(|copy| copy.as_ref().map(|c| c.dir.path().join(ROOT))) {
            Some(copy) => copy,
            None => self.dir.join(ROOT),
        }
    }

    /// [`in_root::make_dir`] without writing the stored root: a directory the root holds is
    /// found as it is; one it lacks is made in this run's private copy of the root (made
    /// now if it is not yet: every directory made again, every file hard-linked), which the
    /// run then binds instead. A path under `/tmp` is not looked for: a run mounts its own
    /// tmpfs there.
    pub fn make_dir(&self, path: &str) -> Result<String, InRootError> {
        if under_tmp(Path::new(path)) {
            return Ok(path.to_owned());
        }
        self.find_or_make(|root| in_root::find_dir(root, path), |copy| in_root::make_dir(copy, path))
    }

    /// [`in_root::make_mount_point`] without writing the stored root, as [`Entry::make_dir`].
    pub fn make_mount_point(&self, path: &Path) -> Result<(), InRootError> {
        if under_tmp(path) {
            return Ok(());
        }
        let find = |root: &Root| in_root::find_mount_point(root, path).map(|found| found.then_some(()));
        self.find_or_make(find, |copy| in_root::make_mount_point(copy, path))
    }

    /// What `find` finds in the root a run binds (the stored root, or the private copy once
    /// made); else what `make` makes in the private copy, made now if it is not yet.
    fn find_or_make<T>(
        &self,
        find: impl FnOnce(&Root) -> Result<Option<T>, InRootError>,
        make: impl FnOnce(&Root) -> Result<T, InRootError>,
    ) -> Result<T, InRootError> {
        let mut copy =
            self.copy.lock().map_err(|_| InRootError::Root { root: self.dir.join(ROOT), source: io::Error::other("poisoned") })?;
        if let Some(found) = find(copy.as_ref().map_or(&self.root, |made| &made.root))? {
            return Ok(found);
        }
        if copy.is_none() {
            *copy = Some(self.private_root()?);
        }
        match copy.as_ref() {
            Some(made) => make(&made.root),
            None => Err(InRootError::Root { root: self.dir.join(ROOT), source: io::Error::other("no private copy") }),
        }
    }

    /// This run's private copy of the root: a `.tmp-` directory of the store (the same
    /// filesystem, so every file is a hard link to the stored one: the same content, never
    /// copied), removed when the entry drops. Copied from the descriptor the seal was
    /// checked through.
    fn private_root(&self) -> Result<PrivateRoot, InRootError> {
        let failed = |source: io::Error| InRootError::Root { root: self.dir.join(ROOT), source };
        let store = Dir::open(&self.store).map_err(failed)?;
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let name = format!("{TEMP_PREFIX}{}-run{}-{nanos:08x}", std::process::id(), unique());
        store.mkdir_at(OsStr::new(&name), 0o700).map_err(failed)?;
        let made = TempDir::adopt(self.store.join(&name));
        let holder = store.open_child(OsStr::new(&name)).map_err(failed)?;
        let source = self.root.dir().duplicate().map_err(failed)?;
        let mode = source.stat().map_err(failed)?.mode & 0o7777;
        holder.mkdir_at(OsStr::new(ROOT), 0o700).map_err(failed)?;
        let top = holder.open_child(OsStr::new(ROOT)).map_err(failed)?;
        let root = Root::from(top.duplicate().map_err(failed)?);
        let level = (top, mode);
        dirfd::walk(source, level, &mut Mirror(self.until)).map_err(failed)?;
        Ok(PrivateRoot { dir: made, root })
    }
}

/// Makes a tree of the same directories (each made writable first, then given its mode
/// when left), symlinks and hard links to every other file: what [`Entry::private_root`]
/// walks the stored root with. Its level is the copy's directory and the mode it takes.
struct Mirror(Until);

impl Visit for Mirror {
    type Level = (Dir, u32);

    fn child(&mut self, dir: &Dir, level: &(Dir, u32), name: &OsStr, stat: &Stat) -> io::Result<Option<(Dir, u32)>> {
        self.0.check()?;
        let target = &level.0;
        if stat.is_dir() {
            target.mkdir_at(name, 0o700).map_err(|e| dirfd::named(name, e))?;
            let made = target.open_child(name).map_err(|e| dirfd::named(name, e))?;
            return Ok(Some((made, stat.mode & 0o7777)));
        }
        if stat.is_symlink() {
            let link = dir.read_link_at(name).map_err(|e| dirfd::named(name, e))?;
            target.symlink_at(OsStr::from_bytes(&link), name).map_err(|e| dirfd::named(name, e))?;
        } else {
            target.hard_link_at(dir, name, name).map_err(|e| dirfd::named(name, e))?;
        }
        Ok(None)
    }

    fn leave(&mut self, _: &Dir, level: (Dir, u32), _: Option<&Dir>) -> io::Result<()> {
        level.0.chmod(level.1)
    }
}

/// Checks `stat` is of a real directory (a regular file when `file`) owned by `euid` and
/// not writable by group or others.
fn owned_and_private(stat: &Stat, euid: u32, file: bool) -> Result<(), Untrusted> {
    let kind_ok = if file { stat.is_file() } else { stat.is_dir() };
    if !kind_ok {
        return Err(Untrusted::NotADirectory { mode: stat.mode });
    }
    if stat.uid != euid {
        return Err(Untrusted::Owner { owner: stat.uid, euid, root_too: false });
    }
    if stat.mode & WRITABLE_BY_OTHERS != 0 {
        return Err(Untrusted::Writable { mode: stat.mode & 0o7777, sticky_allowed: false });
    }
    Ok(())
}

/// The directory `name` beneath `dir`, if it is the user's own real directory.
fn open_owned_child(dir: &Dir, name: &OsStr, euid: u32) -> Result<Dir, NotOwned> {
    let child = dir.open_child(name).map_err(|source| NotOwned::Open { name: name.to_owned(), source })?;
    let stat = child.stat().map_err(|source| NotOwned::Stat { source })?;
    owned_and_private(&stat, euid, false).map_err(|source| NotOwned::Untrusted { name: name.to_owned(), source })?;
    Ok(child)
}

/// Opens the directory `path` (absolute) by descriptor, one component at a time from `/`,
/// making what is missing (mode 0700), and checks each as the module's comment says. The
/// walk is the sandbox's one resolver ([`Root::walk`], the host's `/` as its root), so `..`
/// and symlinks follow its one rule; what is added here is the check of every directory
/// and symlink on the way.
fn open_trusted(path: &Path, euid: u32) -> Result<Dir, StoreError> {
    let refused = |at: &Path, why: Untrusted| StoreError::Untrusted { dir: path.to_owned(), path: at.to_owned(), why };
    let failed = |at: &Path, source: io::Error| StoreError::Io { dir: path.to_owned(), path: at.to_owned(), source };
    let top = Path::new("/");
    let root = Root::open(top).map_err(|e| failed(top, e))?;
    check_ancestor(&root.dir().stat().map_err(|e| failed(top, e))?, euid).map_err(|why| refused(top, why))?;
    let mut walk = root.walk(path, Bounds { links: MAX_SYMLINKS, ..Bounds::default() }).map_err(|e| failed(top, e))?;
    let stopped = |at: &Path, error: WalkError| match error {
        WalkError::TooManySymlinks(_) => refused(at, Untrusted::TooManySymlinks),
        WalkError::Io(source) => failed(at, source),
        error => failed(at, io::Error::other(error)),
    };
    loop {
        let name = match walk.next_name() {
            Ok(Some(name)) => name,
            Ok(None) => break,
            Err(e) => return Err(stopped(&walk.path(), e)),
        };
        let last = walk.is_last();
        let here = walk.path().join(&name);
        match walk.dir().stat_at(&name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => match walk.dir().mkdir_at(&name, 0o700) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(failed(&here, e)),
                _ => {}
            },
            Err(e) => return Err(failed(&here, e)),
            Ok(stat) if stat.is_symlink() => {
                if last {
                    return Err(refused(&here, Untrusted::Symlink));
                }
                if stat.uid != euid && stat.uid != 0 {
                    return Err(refused(&here, Untrusted::Owner { owner: stat.uid, euid, root_too: true }));
                }
                walk.follow(&name).map_err(|e| stopped(&here, e))?;
                continue;
            }
            Ok(_) => {}
        }
        walk.enter(&name).map_err(|e| failed(&here, e))?;
        let stat = walk.dir().stat().map_err(|e| failed(&here, e))?;
        if last {
            owned_and_private(&stat, euid, false).map_err(|why| refused(&here, why))?;
        } else {
            check_ancestor(&stat, euid).map_err(|why| refused(&here, why))?;
        }
    }
    // Where the path ends (after a last `..`, or `/` itself) is the store: it is checked
    // as the store whatever name led there.
    let at = walk.path();
    owned_and_private(&walk.dir().stat().map_err(|e| failed(&at, e))?, euid, false).map_err(|why| refused(&at, why))?;
    Ok(walk.into_dir())
}

/// A directory on the way to the store: owned by `euid` or root, and not writable by group
/// or others unless sticky (no one else can then rename or remove what is ours in it).
fn check_ancestor(stat: &Stat, euid: u32) -> Result<(), Untrusted> {
    if !stat.is_dir() {
        return Err(Untrusted::NotADirectory { mode: stat.mode });
    }
    if stat.uid != euid && stat.uid != 0 {
        return Err(Untrusted::Owner { owner: stat.uid, euid, root_too: true });
    }
    if stat.mode & WRITABLE_BY_OTHERS != 0 && stat.mode & libc::S_ISVTX == 0 {
        return Err(Untrusted::Writable { mode: stat.mode & 0o7777, sticky_allowed: true });
    }
    Ok(())
}

/// A path strictly below `/tmp`, with no `..`: inside the container, on the run's tmpfs.
fn under_tmp(path: &Path) -> bool {
    path.strip_prefix("/tmp")
        .is_ok_and(|rest| !rest.as_os_str().is_empty() && rest.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)))
}

fn unique() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// Sets the entry's `used` file's modification time to now (its last use), opening it
/// beneath the entry's descriptor without following a symlink or blocking, and only if
/// it is the user's own regular file. Best effort: an entry whose use was not recorded is
/// only evicted sooner.
fn touch(entry: &Dir) {
    if let Ok(file) = entry.open_file(OsStr::new(USED), libc::O_WRONLY | libc::O_CREAT, 0o600) {
        if dirfd::fstat(file.as_fd()).is_ok_and(|s| s.is_file() && s.uid == euid()) {
            let _ = file.set_modified(SystemTime::now());
        }
    }
}

/// Why `entry.json` was not read.
enum MetaError {
    Missing,
    Wrong(String),
}

/// Reads the entry's `entry.json` through a descriptor opened beneath `entry` without
/// following a symlink or blocking, once `fstat` says it is the user's own regular file,
/// not writable by others, and at most [`MAX_META_BYTES`]: the description, and the open
/// file (which a lookup locks).
fn read_meta(entry: &Dir, euid: u32) -> Result<(Meta, File), MetaError> {
    let mut file = match entry.open_file(OsStr::new(META), libc::O_RDONLY, 0) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(MetaError::Missing),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(MetaError::Wrong(format!("{META} is a symlink"))),
        Err(e) => return Err(MetaError::Wrong(format!("{META}: {e}"))),
    };
    let stat = dirfd::fstat(file.as_fd()).map_err(|e| MetaError::Wrong(format!("{META}: {e}")))?;
    if !stat.is_file() {
        return Err(MetaError::Wrong(format!("{META} is not a regular file (mode {:o})", stat.mode)));
    }
    owned_and_private(&stat, euid, true).map_err(|why| MetaError::Wrong(format!("{META}: {why}")))?;
    if stat.size > MAX_META_BYTES {
        return Err(MetaError::Wrong(format!("{META} is over {MAX_META_BYTES} bytes")));
    }
    let mut text = Vec::new();
    (&mut file).take(MAX_META_BYTES + 1).read_to_end(&mut text).map_err(|e| MetaError::Wrong(format!("{META}: {e}")))?;
    if text.len() as u64 > MAX_META_BYTES {
        return Err(MetaError::Wrong(format!("{META} is over {MAX_META_BYTES} bytes")));
    }
    let meta = serde_json::from_slice(&text).map_err(|e| MetaError::Wrong(format!("{META}: {e}")))?;
    Ok((meta, file))
}

/// Writes `entry.json` in `dir` whole: a new file, mode 0600, flushed to disk, renamed over
/// the old.
fn write_meta(dir: &Dir, meta: &Meta) -> io::Result<()> {
    let text = serde_json::to_vec_pretty(meta).map_err(io::Error::other)?;
    let part = format!("{META}.part-{}-{}", std::process::id(), unique());
    let mut file = dir.create_file(OsStr::new(&part), 0o600)?;
    file.write_all(&text)?;
    file.sync_all()?;
    dir.rename_at(OsStr::new(&part), OsStr::new(META))
}

/// Times [`lock_exclusive_soon`] tries, and how long it waits between tries.
const EXCLUSIVE_TRIES: u32 = 5;
const EXCLUSIVE_PAUSE: Duration = Duration::from_millis(20);

/// Takes `file`'s exclusive lock, trying a few times over [`EXCLUSIVE_TRIES`] pauses:
/// `false` when a run still holds it. A lock is held by every process that has the open
/// description, and a child the probe (or any thread of it) has just forked holds a copy of
/// each of its descriptors until it executes its program: a run that let go of an entry
/// moments ago may still seem to hold it for that long.
fn lock_exclusive_soon(file: &File) -> io::Result<bool> {
    for attempt in 0..EXCLUSIVE_TRIES {
        if try_lock(file, Lock::Exclusive)? {
            return Ok(true);
        }
        if attempt + 1 < EXCLUSIVE_TRIES {
            std::thread::sleep(EXCLUSIVE_PAUSE);
        }
    }
    Ok(false)
}

/// A root's seal, with what its walk counted.
struct Sealed {
    seal: String,
    disk_bytes: u64,
    names: u64,
}

/// The seal over the root `root`: sha256 of the digest, the config, and the sorted digests
/// of every name's listing line (see the module's comment for what a line holds), each
/// regular file's content read through a descriptor; stops at `until`. The walk opens each
/// file and hands it to [`hashers`] threads (one per core, at most [`MAX_HASHERS`]), which
/// read and hash while it goes on: the content is what costs (see
/// `docs/measurements/performance.md`).
fn seal(root: Dir, digest: &str, config: &Config, until: Until) -> io::Result<Sealed> {
    let max_names = Limits::default().max_entries.saturating_add(SEALED_NAMES_OVER_ENTRIES);
    let top = root.stat()?;
    let (jobs, queue) = std::sync::mpsc::sync_channel::<Job>(QUEUED_FILES);
    let queue = Mutex::new(queue);
    let (walked, hashed) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..hashers()).map(|_| scope.spawn(|| hash_files(&queue, until))).collect();
        let mut sealer = Sealer { lines: Vec::new(), files: Vec::new(), disk_bytes: 0, max_names, until, jobs };
        sealer.lines.push(line(Path::new(""), &top, None));
        let walked = dirfd::walk(root, PathBuf::new(), &mut sealer).map(|()| sealer.done());
        // The sender went with the sealer: the workers finish the queue and end.
        let mut hashed = Vec::new();
        for worker in workers {
            match worker.join() {
                Ok(Ok(mut part)) => hashed.append(&mut part),
                Ok(Err(e)) => return (walked, Err(e)),
                Err(_) => return (walked, Err(io::Error::other("a hashing thread panicked"))),
            }
        }
        (walked, Ok(hashed))
    });
    let (mut lines, files, disk_bytes) = walked?;
    let mut hashed = hashed?;
    hashed.sort_unstable_by_key(|(slot, part, _)| (*slot, *part));
    // A file's content digest: sha256 over its parts' digests, in order.
    let mut parts = hashed.into_iter().peekable();
    for (slot, (path, stat)) in files.iter().enumerate() {
        let mut file_hasher = sha2::Sha256::new();
        let mut expected = 0;
        while let Some((_, part, digest)) = parts.next_if(|(at, _, _)| *at == slot) {
            if part != expected {
                return Err(io::Error::other("a part of a file's content was not read"));
            }
            file_hasher.update(digest);
            expected += 1;
        }
        if expected != parts_of(stat.size) {
            return Err(io::Error::other("a file's content was not read"));
        }
        lines.push(line(path, stat, Some(&file_hasher.finalize())));
    }
    if parts.next().is_some() {
        return Err(io::Error::other("a part was read for no file"));
    }
    lines.sort_unstable();
    let mut hasher = sha2::Sha256::new();
    hasher.update(b"checkfu-wire image store seal 2\0");
    hasher.update(digest.as_bytes());
    hasher.update([0]);
    hasher.update(serde_json::to_vec(config).map_err(io::Error::other)?);
    for line in &lines {
        hasher.update(line);
    }
    let seal = format!("sha256:{}", hex(&hasher.finalize()));
    Ok(Sealed { seal, disk_bytes, names: lines.len() as u64 })
}

/// The most threads that hash files' content.
const MAX_HASHERS: usize = 4;
/// Files opened and waiting for a hasher: what bounds the descriptors a seal holds.
const QUEUED_FILES: usize = 64;

fn hashers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_HASHERS)
}

/// The bytes of a file one hasher reads and hashes at a time: a large file is hashed by
/// every core at once, part by part (a single 500 MB file otherwise costs one core's pass).
const PART_BYTES: u64 = 4 << 20;

/// How many parts a file of `size` bytes is hashed in: one at least, for an empty file.
fn parts_of(size: u64) -> usize {
    usize::try_from(size.div_ceil(PART_BYTES).max(1)).unwrap_or(usize::MAX)
}

/// A part of a regular file the walk opened (checked to be the file it listed), for a
/// hasher; the last part also checks that the file ends where it was listed to.
struct Job {
    slot: usize,
    part: usize,
    file: std::sync::Arc<File>,
    size: u64,
    name: OsString,
}

/// A hasher: reads and hashes each queued part, answering its file's slot, the part and
/// its digest; the first failure (a read, a size other than listed, the deadline) ends the
/// seal.
fn hash_files(queue: &Mutex<std::sync::mpsc::Receiver<Job>>, until: Until) -> io::Result<Vec<(usize, usize, [u8; 32])>> {
    let mut buffer = vec![0; READ_CHUNK];
    let mut hashed = Vec::new();
    let mut failed = None;
    loop {
        let job = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => break,
        };
        let Ok(job) = job else { break };
        // After a failure the queue is still drained (each file closed), so the walk never
        // waits on a full queue.
        if failed.is_none() {
            match content(&job, &mut buffer, until) {
                Ok(digest) => hashed.push((job.slot, job.part, digest)),
                Err(e) => failed = Some(dirfd::named(&job.name, e)),
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(hashed),
    }
}

/// The sha256 of one part of a file's content, read at its offset (`pread`, so that
/// hashers share the descriptor); the part must be whole, and the last must end the file.
fn content(job: &Job, buffer: &mut [u8], until: Until) -> io::Result<[u8; 32]> {
    use std::os::unix::fs::FileExt;
    let start = (job.part as u64).saturating_mul(PART_BYTES);
    let end = start.saturating_add(PART_BYTES).min(job.size);
    let mut hasher = sha2::Sha256::new();
    let mut at = start;
    while at < end {
        until.check()?;
        let want = usize::try_from(end - at).unwrap_or(usize::MAX).min(buffer.len());
        let n = match job.file.read_at(&mut buffer[..want], at) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        at += n as u64;
    }
    let changed = || io::Error::other(format!("{at} bytes read, {} listed: it changed while it was sealed", job.size));
    if at != end {
        return Err(changed());
    }
    if end == job.size {
        let mut past = [0u8; 1];
        loop {
            match job.file.read_at(&mut past, end) {
                Ok(0) => break,
                Ok(_) => return Err(changed()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(hasher.finalize().into())
}

/// The walk of [`seal`]: a listing line per name but regular files, whose paths and stats
/// wait (by slot) for their content's digest.
struct Sealer {
    lines: Vec<[u8; 32]>,
    files: Vec<(PathBuf, Stat)>,
    disk_bytes: u64,
    max_names: u64,
    until: Until,
    jobs: std::sync::mpsc::SyncSender<Job>,
}

impl Sealer {
    fn done(self) -> (Vec<[u8; 32]>, Vec<(PathBuf, Stat)>, u64) {
        (self.lines, self.files, self.disk_bytes)
    }
}

impl Visit for Sealer {
    type Level = PathBuf;

    fn child(&mut self, dir: &Dir, level: &PathBuf, name: &OsStr, stat: &Stat) -> io::Result<Option<PathBuf>> {
        self.until.check()?;
        let path = level.join(name);
        self.disk_bytes = self.disk_bytes.saturating_add(stat.blocks.saturating_mul(512));
        if (self.lines.len() + self.files.len()) as u64 >= self.max_names {
            return Err(io::Error::other(format!("more than {} names", self.max_names)));
        }
        if stat.is_file() {
            let file = dir.open_file(name, libc::O_RDONLY, 0).map_err(|e| dirfd::named(name, e))?;
            let opened = dirfd::fstat(file.as_fd()).map_err(|e| dirfd::named(name, e))?;
            if opened.identity() != stat.identity() || !opened.is_file() {
                return Err(dirfd::named(name, io::Error::other("replaced while it was sealed")));
            }
            let (slot, file) = (self.files.len(), std::sync::Arc::new(file));
            self.files.push((path, *stat));
            for part in 0..parts_of(stat.size) {
                let job = Job { slot, part, file: std::sync::Arc::clone(&file), size: stat.size, name: name.to_owned() };
                // A send fails only once every hasher has stopped: the join says why.
                if self.jobs.send(job).is_err() {
                    return Err(io::Error::other("the hashing threads stopped"));
                }
            }
            return Ok(None);
        }
        let target = if stat.is_symlink() { Some(dir.read_link_at(name).map_err(|e| dirfd::named(name, e))?) } else { None };
        self.lines.push(line(&path, stat, target.as_deref()));
        Ok(stat.is_dir().then_some(path))
    }

    fn leave(&mut self, _: &Dir, _: PathBuf, _: Option<&Dir>) -> io::Result<()> {
        Ok(())
    }
}

/// The digest of one name's listing line: its path, type and mode, owner, size, and its
/// content's digest (a regular file) or target (a symlink). Neither times, inode nor link
/// count: the content is what is proved, and a private copy's hard links change the count.
fn line(path: &Path, stat: &Stat, extra: Option<&[u8]>) -> [u8; 32] {
    let mut hasher = sha2::Sha256::new();
    hasher.update((path.as_os_str().len() as u64).to_le_bytes());
    hasher.update(path.as_os_str().as_bytes());
    for field in [u64::from(stat.mode), stat.uid.into(), stat.gid.into(), stat.size] {
        hasher.update(field.to_le_bytes());
    }
    if let Some(extra) = extra {
        hasher.update((extra.len() as u64).to_le_bytes());
        hasher.update(extra);
    }
    hasher.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a size does not read, naming the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("`{0}` is not a size: a number of bytes, or with K, M, G or T")]
    NotANumber(String),
    #[error("`{0}`: the unit is one of K, M, G, T (powers of 1024)")]
    Unit(String),
    #[error("`{0}` is too large")]
    TooLarge(String),
}

/// A size as `--image-cache-max` takes it: bytes, or a number with `K`, `M`, `G`, `T`
/// (powers of 1024, optionally `KiB`, `MiB`, …).
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: u64 = number.parse().map_err(|_| SizeError::NotANumber(text.to_owned()))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(SizeError::Unit(text.to_owned())),
    };
    number.checked_mul(1u64 << shift).ok_or_else(|| SizeError::TooLarge(text.to_owned()))
}

/// How long ago `epoch_seconds` was, for `image ls`.
pub fn age(epoch_seconds: u64) -> Duration {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    Duration::from_secs(now.saturating_sub(epoch_seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn plan(dir: PathBuf) -> StorePlan {
        StorePlan { dir, max_bytes: 1 << 30 }
    }

    /// A store at `images` under a fresh directory, holding one entry of `name`'s digest
    /// whose root has `bin/cli` and a symlink to it.
    fn stored(prefix: &str, name: &str) -> (TempDir, Store, Digest) {
        let dir = TempDir::new(prefix).unwrap();
        let store = Store::open(&plan(dir.path().join("images"))).unwrap();
        let digest = crate::digest_of(name.as_bytes());
        let pending = store.begin().unwrap();
        fs::create_dir(pending.root().join("bin")).unwrap();
        fs::write(pending.root().join("bin/cli"), b"#!/bin/sh\necho hi\n").unwrap();
        std::os::unix::fs::symlink("cli", pending.root().join("bin/link")).unwrap();
        let new = NewEntry { digest: &digest, reference: String::from("r"), config: &Config::default(), unpacked_bytes: 1 };
        drop(store.commit(pending, &new, None).map_err(|(_, why)| why).unwrap());
        (dir, store, digest)
    }

    fn entry_path(store: &Store, digest: &Digest) -> PathBuf {
        store.dir().join(Store::entry_name(digest.as_ref()))
    }

    fn is_root() -> bool {
        euid() == 0
    }

    fn chown(path: &Path, uid: u32) {
        std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    /// The reason a lookup of `digest` missed (it must miss).
    fn missed(store: &Store, digest: &Digest) -> String {
        match store.lookup(digest, None) {
            Lookup::Hit(_) => panic!("taken"),
            Lookup::Miss(why) => why.unwrap_or_default(),
        }
    }

    #[test]
    fn sizes_are_read_in_powers_of_1024() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("10G"), Ok(10 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("3k"), Ok(3 << 10));
        assert!(parse_size("ten").unwrap_err().to_string().contains("not a size"));
        assert!(parse_size("1P").unwrap_err().to_string().contains("unit"));
        assert!(parse_size("99999999999T").unwrap_err().to_string().contains("too large"));
    }

    #[test]
    fn only_paths_strictly_below_tmp_are_the_runs_tmpfs() {
        assert!(under_tmp(Path::new("/tmp/checkfu-probe-1")));
        assert!(!under_tmp(Path::new("/tmp")));
        assert!(!under_tmp(Path::new("/tmpx/a")));
        assert!(!under_tmp(Path::new("/tmp/../etc")));
        assert!(!under_tmp(Path::new("/var/tmp/a")));
    }

    #[test]
    fn the_seal_holds_for_the_same_tree_and_moves_with_any_change() {
        let dir = TempDir::new("checkfu-store-seal").unwrap();
        let root = dir.path().join("root");
        fs::create_dir_all(root.join("bin")).unwrap();
        fs::write(root.join("bin/cli"), b"#!/bin/sh\necho hi\n").unwrap();
        std::os::unix::fs::symlink("cli", root.join("bin/link")).unwrap();
        let config = Config::default();
        let sealed = |digest: &str| seal(Dir::open(&root).unwrap(), digest, &config, Until(None)).unwrap();
        let first = sealed("sha256:aa");
        assert_eq!(first.names, 4, "the root, bin, cli and link");
        assert_eq!(sealed("sha256:aa").seal, first.seal);
        assert_ne!(sealed("sha256:bb").seal, first.seal, "another digest");
        // The same length, the modification time set back.
        let cli = root.join("bin/cli");
        let modified = fs::metadata(&cli).unwrap().modified().unwrap();
        fs::write(&cli, b"#!/bin/sh\necho ho\n").unwrap();
        File::options().write(true).open(&cli).unwrap().set_modified(modified).unwrap();
        assert_ne!(sealed("sha256:aa").seal, first.seal);
        // Back as it was: the same seal, though its change time moved twice.
        fs::write(&cli, b"#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(sealed("sha256:aa").seal, first.seal, "the content, not the times, is sealed");
        fs::remove_file(root.join("bin/link")).unwrap();
        std::os::unix::fs::symlink("other", root.join("bin/link")).unwrap();
        assert_ne!(sealed("sha256:aa").seal, first.seal, "a symlink's target");
        // A FIFO in the root is listed, never opened: the seal does not wait for a writer.
        assert!(std::process::Command::new("mkfifo").arg(root.join("fifo")).status().unwrap().success());
        assert_eq!(sealed("sha256:aa").names, 5);
    }

    #[test]
    fn an_entry_without_its_description_or_of_another_digest_is_not_taken() {
        let (_dir, store, digest) = stored("checkfu-store-open", "image");
        assert!(matches!(store.lookup(&digest, None), Lookup::Hit(_)));
        let other = crate::digest_of(b"other");
        fs::rename(entry_path(&store, &digest), entry_path(&store, &other)).unwrap();
        let why = missed(&store, &other);
        assert!(why.contains("another format or digest") && why.contains("removed"), "{why}");
        assert!(store.list().unwrap().is_empty());
    }

    #[test]
    fn a_store_writable_by_group_or_others_is_refused_and_left_as_it_is() {
        let dir = TempDir::new("checkfu-store-mode").unwrap();
        for wide in [0o777, 0o775, 0o757] {
            let store = dir.path().join(format!("images-{wide:o}"));
            fs::create_dir(&store).unwrap();
            fs::set_permissions(&store, fs::Permissions::from_mode(wide)).unwrap();
            let refused = Store::open(&plan(store.clone())).unwrap_err();
            let text = refused.to_string();
            assert!(matches!(refused, StoreError::Untrusted { why: Untrusted::Writable { .. }, .. }), "{text}");
            assert!(text.contains(&store.display().to_string()) && text.contains(&format!("mode {wide:o}")), "{text}");
            assert_eq!(mode(&store), wide, "never chmod'ed");
        }
        // The user's own 0755 and 0700 directories are stores; a missing one is made 0700.
        let open = dir.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o755)).unwrap();
        Store::open(&plan(open.clone())).unwrap();
        assert_eq!(mode(&open), 0o755);
        Store::open(&plan(dir.path().join("made/below"))).unwrap();
        assert_eq!(mode(&dir.path().join("made/below")), 0o700);
        assert_eq!(mode(&dir.path().join("made")), 0o700);
    }

    #[test]
    fn a_store_of_another_user_is_refused() {
        if !is_root() {
            return;
        }
        let dir = TempDir::new("checkfu-store-owner").unwrap();
        let store = dir.path().join("images");
        fs::create_dir(&store).unwrap();
        chown(&store, 65534);
        let refused = Store::open(&plan(store.clone())).unwrap_err().to_string();
        assert!(refused.contains("owned by uid 65534, not by uid 0") && refused.contains(&store.display().to_string()), "{refused}");
        assert_eq!(fs::metadata(&store).unwrap().uid(), 65534, "left as it is");
    }

    #[test]
    fn every_directory_on_the_way_to_the_store_is_checked() {
        let dir = TempDir::new("checkfu-store-way").unwrap();
        // A parent anyone can write (not sticky): another user could swap the store.
        let open = dir.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let refused = Store::open(&plan(open.join("images"))).unwrap_err().to_string();
        assert!(refused.contains(&format!("{} is mode 777: writable by group or others and not sticky", open.display())), "{refused}");
        assert!(!open.join("images").exists(), "nothing made under it");
        // A sticky one (as /tmp) holds the user's own store.
        let sticky = dir.path().join("sticky");
        fs::create_dir(&sticky).unwrap();
        fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
        Store::open(&plan(sticky.join("images"))).unwrap();
        assert_eq!(mode(&sticky.join("images")), 0o700);
        // The store itself a symlink: refused, even to the user's own directory.
        std::os::unix::fs::symlink(sticky.join("images"), dir.path().join("link")).unwrap();
        let refused = Store::open(&plan(dir.path().join("link"))).unwrap_err();
        assert!(matches!(refused, StoreError::Untrusted { why: Untrusted::Symlink, .. }), "{refused}");
        // A symlink on the way, the user's own in a directory of the user's own: followed.
        std::os::unix::fs::symlink("sticky", dir.path().join("via")).unwrap();
        let store = Store::open(&plan(dir.path().join("via/images"))).unwrap();
        assert_eq!(store.dir(), dir.path().join("via/images"));
        if is_root() {
            // Another user's symlink on the way is not followed; nor is its directory used.
            chown(&dir.path().join("via"), 65534);
            let refused = Store::open(&plan(dir.path().join("via/images"))).unwrap_err().to_string();
            assert!(refused.contains("owned by uid 65534, not by uid 0 or root"), "{refused}");
            let theirs = dir.path().join("theirs");
            fs::create_dir(&theirs).unwrap();
            chown(&theirs, 65534);
            let refused = Store::open(&plan(theirs.join("images"))).unwrap_err().to_string();
            assert!(refused.contains(&format!("{} is owned by uid 65534", theirs.display())), "{refused}");
            assert!(!theirs.join("images").exists());
        }
    }

    #[test]
    fn a_forged_file_of_the_same_size_and_times_is_not_a_hit() {
        let (_dir, store, digest) = stored("checkfu-store-forged", "forged");
        let cli = entry_path(&store, &digest).join("root/bin/cli");
        let before = fs::metadata(&cli).unwrap();
        fs::write(&cli, b"#!/bin/sh\necho XX\n").unwrap();
        File::options().write(true).open(&cli).unwrap().set_times(fs::FileTimes::new().set_modified(before.modified().unwrap())).unwrap();
        assert_eq!(fs::metadata(&cli).unwrap().len(), before.len());
        let why = missed(&store, &digest);
        assert!(why.contains("changed since it was stored") && why.contains("removed"), "{why}");
        assert!(!entry_path(&store, &digest).exists());
    }

    #[test]
    fn a_write_through_a_shared_mapping_made_before_the_commit_is_caught() {
        let dir = TempDir::new("checkfu-store-mapped").unwrap();
        let store = Store::open(&plan(dir.path().join("images"))).unwrap();
        let digest = crate::digest_of(b"mapped");
        let pending = store.begin().unwrap();
        let path = pending.root().join("lib.so");
        fs::write(&path, [b'a'; 4096]).unwrap();
        let file = File::options().read(true).write(true).open(&path).unwrap();
        let mapped = checkfu_wire_sandbox::file::SharedMapping::new(&file, 4096).expect("mmap");
        // The first write dirties the page (and moves the file's times); the store seals.
        mapped.write(0, b'b');
        let new = NewEntry { digest: &digest, reference: String::from("r"), config: &Config::default(), unpacked_bytes: 1 };
        drop(store.commit(pending, &new, None).map_err(|(_, why)| why).unwrap());
        // A write to the dirty page moves no time: only the content tells.
        mapped.write(1, b'X');
        drop(mapped);
        let why = missed(&store, &digest);
        assert!(why.contains("changed since it was stored"), "{why}");
    }

    #[test]
    fn listing_and_pruning_stop_at_the_deadline_and_leave_the_entries() {
        let (_dir, store, digest) = stored("checkfu-store-ls-deadline", "deadline");
        let store = store.with_deadline(Some(Instant::now()));
        let why = store.list().unwrap_err().to_string();
        assert!(why.contains("deadline"), "{why}");
        let why = store.prune(&[]).unwrap_err().to_string();
        assert!(why.contains("deadline"), "{why}");
        assert!(entry_path(&store, &digest).join("root").is_dir(), "the entry stays");
        assert_eq!(store.with_deadline(None).list().unwrap().len(), 1);
    }

    #[test]
    fn a_change_in_any_part_of_a_large_file_is_caught() {
        // 9 MiB: three parts, each hashed by whichever hasher takes it.
        let size = 9 << 20;
        for changed_at in [0, (4 << 20) + 7, size - 1] {
            let dir = TempDir::new("checkfu-store-parts").unwrap();
            let store = Store::open(&plan(dir.path().join("images"))).unwrap();
            let digest = crate::digest_of(b"parts");
            let pending = store.begin().unwrap();
            let path = pending.root().join("big");
            fs::write(&path, vec![b'a'; size as usize]).unwrap();
            let new = NewEntry { digest: &digest, reference: String::from("r"), config: &Config::default(), unpacked_bytes: size };
            drop(store.commit(pending, &new, None).map_err(|(_, why)| why).unwrap());
            assert!(matches!(store.lookup(&digest, None), Lookup::Hit(_)), "a whole file of three parts is a hit");
            let stored = entry_path(&store, &digest).join("root/big");
            use std::os::unix::fs::FileExt;
            File::options().write(true).open(&stored).unwrap().write_at(b"b", changed_at).unwrap();
            let why = missed(&store, &digest);
            assert!(why.contains("changed since it was stored"), "byte {changed_at}: {why}");
        }
    }

    #[test]
    fn a_symlinked_entry_is_not_followed_used_or_removed() {
        let (dir, store, digest) = stored("checkfu-store-link", "linked");
        // The user's own whole entry, moved outside, and a symlink to it in its place.
        let outside = dir.path().join("outside");
        fs::rename(entry_path(&store, &digest), &outside).unwrap();
        std::os::unix::fs::symlink(&outside, entry_path(&store, &digest)).unwrap();
        let why = missed(&store, &digest);
        assert!(why.contains("a symlink") && why.contains("left in place"), "{why}");
        let listed = store.list().unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].skipped.as_deref().is_some_and(|s| s.contains("symlink")), "{listed:?}");
        let pruned = store.prune(&[]).unwrap();
        assert_eq!(pruned.skipped.len(), 1, "{pruned:?}");
        assert!(pruned.removed.is_empty());
        assert!(fs::symlink_metadata(entry_path(&store, &digest)).unwrap().file_type().is_symlink());
        assert!(outside.join("root/bin/cli").is_file(), "its target stays whole");
    }

    #[test]
    fn an_entry_of_another_user_is_not_used_or_removed() {
        if !is_root() {
            return;
        }
        let (_dir, store, digest) = stored("checkfu-store-theirs", "theirs");
        let entry = entry_path(&store, &digest);
        chown(&entry, 65534);
        let why = missed(&store, &digest);
        assert!(why.contains("owned by uid 65534") && why.contains("left in place"), "{why}");
        assert_eq!(store.prune(&[]).unwrap().skipped.len(), 1);
        assert!(entry.join("root/bin/cli").is_file());
        // The user's own, but writable by others: not an entry either.
        chown(&entry, 0);
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(missed(&store, &digest).contains("writable by group or others"));
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o700)).unwrap();
        assert!(matches!(store.lookup(&digest, None), Lookup::Hit(_)));
    }

    #[test]
    fn a_symlinked_used_file_is_not_followed() {
        let (dir, store, digest) = stored("checkfu-store-used", "used");
        let used = entry_path(&store, &digest).join(USED);
        fs::remove_file(&used).unwrap();
        // To a file that is not there, and to one that is.
        let canary = dir.path().join("canary");
        std::os::unix::fs::symlink(&canary, &used).unwrap();
        assert!(matches!(store.lookup(&digest, None), Lookup::Hit(_)));
        assert!(fs::symlink_metadata(&canary).is_err(), "the canary was made through the symlink");
        fs::write(&canary, b"k").unwrap();
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        File::options().write(true).open(&canary).unwrap().set_modified(old).unwrap();
        assert!(matches!(store.lookup(&digest, None), Lookup::Hit(_)));
        assert_eq!(fs::metadata(&canary).unwrap().modified().unwrap(), old, "touched through the symlink");
        assert_eq!(fs::read(&canary).unwrap(), b"k");
    }

    #[test]
    fn a_fifo_as_the_description_blocks_no_lookup_ls_or_prune() {
        let (_dir, store, digest) = stored("checkfu-store-fifo", "fifo");
        let second = crate::digest_of(b"fifo-2");
        let new = NewEntry { digest: &second, reference: String::from("r"), config: &Config::default(), unpacked_bytes: 1 };
        drop(store.commit(store.begin().unwrap(), &new, None).map_err(|(_, why)| why).unwrap());
        let fifos: Vec<PathBuf> = [&digest, &second].iter().map(|d| entry_path(&store, d).join(META)).collect();
        for fifo in &fifos {
            fs::remove_file(fifo).unwrap();
            assert!(std::process::Command::new("mkfifo").arg(fifo).status().unwrap().success());
        }
        let (done, finished) = std::sync::mpsc::channel();
        let worker = std::thread::spawn(move || {
            let listed = store.list().map(|l| l.iter().map(|e| e.whole).collect::<Vec<_>>());
            let why = missed(&store, &digest);
            let pruned = store.prune(&[]).map(|p| p.removed.len());
            let _ = done.send((listed.ok(), why, pruned.ok()));
        });
        // A bounded wait, not a timing: an open that blocked on a FIFO would wait for a
        // writer forever. Then each gets one (a writer's open), so that the test ends
        // either way, and says so.
        let result = finished.recv_timeout(Duration::from_secs(120));
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = result {
            for fifo in &fifos {
                let _ = File::options().write(true).custom_flags_nonblock().open(fifo);
            }
            panic!("a store operation opened the FIFO and blocked on it");
        }
        worker.join().unwrap();
        let (listed, why, pruned) = result.unwrap();
        assert_eq!(listed, Some(vec![false, false]), "listed, not whole");
        assert!(why.contains("not a regular file") && why.contains("removed"), "{why}");
        assert_eq!(pruned, Some(1), "the user's own directory is pruned, the FIFO unlinked, never opened to read");
    }

    trait NonBlock {
        fn custom_flags_nonblock(&mut self) -> &mut Self;
    }

    impl NonBlock for fs::OpenOptions {
        fn custom_flags_nonblock(&mut self) -> &mut Self {
            std::os::unix::fs::OpenOptionsExt::custom_flags(self, libc::O_NONBLOCK)
        }
    }

    #[test]
    fn a_lookup_past_its_deadline_stops_and_leaves_the_entry() {
        let (_dir, store, digest) = stored("checkfu-store-deadline", "deadline");
        let Lookup::Miss(Some(why)) = store.lookup(&digest, Some(Instant::now())) else { panic!("taken") };
        assert!(why.contains("deadline"), "{why}");
        assert!(matches!(store.lookup(&digest, None), Lookup::Hit(_)), "the entry stayed");
    }

    #[test]
    fn a_lookup_after_a_signal_stops_and_leaves_the_entry() {
        // The signal is recorded for the whole process: the test runs again in a child.
        if std::env::var_os("CHECKFU_STORE_SIGNAL").is_none() {
            let output = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "store::tests::a_lookup_after_a_signal_stops_and_leaves_the_entry", "--nocapture"])
                .env("CHECKFU_STORE_SIGNAL", "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success() && text.contains("1 passed"), "the child failed:\n{text}");
            return;
        }
        let (_dir, store, digest) = stored("checkfu-store-signal", "signal");
        crate::interrupt::install().unwrap();
        // A signal the handler just installed records.
        checkfu_wire_sandbox::process::signal_process(std::process::id(), checkfu_wire_sandbox::process::Signal::INT).unwrap();
        while crate::interrupt::received().is_none() {
            std::thread::yield_now();
        }
        let why = missed(&store, &digest);
        assert!(why.contains("interrupted by SIGINT") && why.contains("not checked"), "{why}");
        assert!(entry_path(&store, &digest).join(META).is_file(), "the entry stayed");
        assert!(store.list().unwrap_err().to_string().contains("interrupted by SIGINT"));
    }

    #[test]
    fn a_root_anyone_can_write_is_not_stored() {
        let dir = TempDir::new("checkfu-store-wide-root").unwrap();
        let store = Store::open(&plan(dir.path().join("images"))).unwrap();
        let digest = crate::digest_of(b"wide");
        let pending = store.begin().unwrap();
        fs::set_permissions(pending.root(), fs::Permissions::from_mode(0o777)).unwrap();
        let new = NewEntry { digest: &digest, reference: String::from("r"), config: &Config::default(), unpacked_bytes: 0 };
        let Err((pending, why)) = store.commit(pending, &new, None) else { panic!("stored") };
        assert!(why.contains("not stored: its root is not an entry's") && why.contains("writable by group or others"), "{why}");
        assert!(pending.root().is_dir(), "handed back for the run");
        assert!(!entry_path(&store, &digest).exists());
    }

    #[test]
    fn a_description_over_its_bound_is_not_read() {
        let (_dir, store, digest) = stored("checkfu-store-large", "large");
        let meta = entry_path(&store, &digest).join(META);
        let file = File::options().write(true).open(&meta).unwrap();
        file.set_len(MAX_META_BYTES + 1).unwrap();
        let why = missed(&store, &digest);
        assert!(why.contains(&format!("{META} is over {MAX_META_BYTES} bytes")) && why.contains("removed"), "{why}");
    }

    #[test]
    fn a_directory_a_run_needs_is_made_in_a_private_copy_never_in_the_stored_root() {
        let (dir, store, digest) = stored("checkfu-store-copy", "copy");
        let stored_root = entry_path(&store, &digest).join(ROOT);
        let Lookup::Hit(entry) = store.lookup(&digest, None) else { panic!("a miss") };
        assert_eq!(entry.root(), stored_root);
        assert_eq!(entry.make_dir("/bin").unwrap(), "/bin", "found as it is");
        entry.make_mount_point(Path::new("/tmp/run")).unwrap();
        assert_eq!(entry.root(), stored_root, "nothing made for /bin or under /tmp");
        entry.make_mount_point(Path::new("/var/tmp/run-1")).unwrap();
        assert_eq!(entry.make_dir("/workspace").unwrap(), "/workspace");
        let copy = entry.root();
        assert_ne!(copy, stored_root);
        assert!(copy.join("var/tmp/run-1").is_dir() && copy.join("workspace").is_dir());
        assert!(!stored_root.join("var").exists() && !stored_root.join("workspace").exists());
        let (a, b) = (fs::metadata(copy.join("bin/cli")).unwrap(), fs::metadata(stored_root.join("bin/cli")).unwrap());
        assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()), "a hard link, not a copy");
        assert_eq!(fs::read_link(copy.join("bin/link")).unwrap(), Path::new("cli"));
        assert_eq!(mode(&copy.join("bin")), mode(&stored_root.join("bin")));
        drop(entry);
        assert!(!copy.exists(), "the copy goes with the run");
        assert!(matches!(store.lookup(&digest, None), Lookup::Hit(_)), "the stored entry is as it was sealed");
        drop(dir);
    }

    /// Runs the test `name` again as uid 65534 (nobody) in a copy of this test binary
    /// anyone can read, with `CHECKFU_STORE_CHILD` set to `base`: a directory nobody owns,
    /// in a parent anyone can search.
    fn as_nobody(name: &str, base: &Path) {
        use std::os::unix::process::CommandExt;
        let staged = TempDir::new("checkfu-store-child").unwrap();
        fs::set_permissions(staged.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let binary = staged.path().join("test-binary");
        fs::copy(std::env::current_exe().unwrap(), &binary).unwrap();
        let output = std::process::Command::new(&binary)
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env("CHECKFU_STORE_CHILD", base)
            .env_remove("HOME")
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success() && text.contains("1 passed"), "the child failed:\n{text}");
    }

    #[test]
    fn as_another_user_its_own_store_is_used_and_roots_refused() {
        let Some(base) = std::env::var_os("CHECKFU_STORE_CHILD").map(PathBuf::from) else {
            if !is_root() {
                return;
            }
            let dir = TempDir::new("checkfu-store-nobody").unwrap();
            fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
            let base = dir.path().join("nobody");
            fs::create_dir(&base).unwrap();
            chown(&base, 65534);
            // root's own store, next to nobody's, 0755: nobody may read it, not use it.
            fs::create_dir(dir.path().join("roots")).unwrap();
            fs::set_permissions(dir.path().join("roots"), fs::Permissions::from_mode(0o755)).unwrap();
            return as_nobody("store::tests::as_another_user_its_own_store_is_used_and_roots_refused", &base);
        };
        assert_eq!(euid(), 65534);
        let refused = Store::open(&plan(base.parent().unwrap().join("roots"))).unwrap_err().to_string();
        assert!(refused.contains("owned by uid 0, not by uid 65534"), "{refused}");
        let store = Store::open(&plan(base.join("images"))).unwrap();
        let digest = crate::digest_of(b"nobody");
        let pending = store.begin().unwrap();
        fs::write(pending.root().join("cli"), b"#!/bin/sh\n").unwrap();
        let new = NewEntry { digest: &digest, reference: String::from("r"), config: &Config::default(), unpacked_bytes: 1 };
        drop(store.commit(pending, &new, None).map_err(|(_, why)| why).unwrap());
        assert!(matches!(store.lookup(&digest, None), Lookup::Hit(_)));
        let cli = entry_path(&store, &digest).join("root/cli");
        let modified = fs::metadata(&cli).unwrap().modified().unwrap();
        fs::write(&cli, b"#!/bin/XX\n").unwrap();
        File::options().write(true).open(&cli).unwrap().set_modified(modified).unwrap();
        assert!(missed(&store, &digest).contains("changed since it was stored"));
        // A store dir of its own left 0777: refused, as it is.
        fs::set_permissions(base.join("images"), fs::Permissions::from_mode(0o777)).unwrap();
        assert!(Store::open(&plan(base.join("images"))).unwrap_err().to_string().contains("mode 777"));
        assert_eq!(mode(&base.join("images")), 0o777);
    }

    #[test]
    fn an_entry_in_use_is_not_pruned() {
        let dir = TempDir::new("checkfu-store-held").unwrap();
        let store = Store::open(&plan(dir.path().join("images"))).unwrap();
        let digest = crate::digest_of(b"held");
        let new = NewEntry { digest: &digest, reference: String::from("r"), config: &Config::default(), unpacked_bytes: 0 };
        let held = store.commit(store.begin().unwrap(), &new, None).map_err(|(_, why)| why).unwrap();
        let pruned = store.prune(&[]).unwrap();
        assert_eq!(pruned.in_use, vec![digest.to_string()]);
        drop(held);
        assert_eq!(store.prune(&[]).unwrap().removed, vec![digest.to_string()]);
    }
}

#[cfg(test)]
mod measure {
    use super::*;

    /// `CHECKFU_STORE_MEASURE=DIR`: a lookup of an entry holding a copy of DIR, five times.
    #[test]
    #[ignore = "a measurement: CHECKFU_STORE_MEASURE=DIR"]
    fn lookup_of_a_large_root() {
        let Some(source) = std::env::var_os("CHECKFU_STORE_MEASURE") else { return };
        let dir = TempDir::new("checkfu-store-measure").unwrap();
        let store = Store::open(&StorePlan { dir: dir.path().join("images"), max_bytes: u64::MAX }).unwrap();
        let pending = store.begin().unwrap();
        let copied = std::process::Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", Path::new(&source).display()))
            .arg(pending.root())
            .status()
            .unwrap();
        assert!(copied.success());
        let digest = crate::digest_of(b"measure");
        let new = NewEntry { digest: &digest, reference: String::from("m"), config: &Config::default(), unpacked_bytes: 0 };
        let started = Instant::now();
        let entry = store.commit(pending, &new, None).map_err(|(_, why)| why).unwrap();
        println!("commit {:?} ({} names, {} disk bytes)", started.elapsed(), entry.meta.names, entry.meta.disk_bytes);
        drop(entry);
        let buffer = vec![7u8; 116_000_000];
        let started = Instant::now();
        let mut hasher = sha2::Sha256::new();
        for chunk in buffer.chunks(READ_CHUNK) {
            hasher.update(chunk);
        }
        let _ = hasher.finalize();
        println!("sha256 of 116 MB in memory {:?}", started.elapsed());
        for _ in 0..5 {
            let started = Instant::now();
            assert!(matches!(store.lookup(&digest, None), Lookup::Hit(_)));
            println!("lookup {:?}", started.elapsed());
        }
    }
}
