//! The image store: each image the probe pulled by digest and unpacked stays, keyed by its
//! manifest digest, so that the next run of the same digest skips the pull, the blob checks
//! and the unpack (`$XDG_CACHE_HOME/checkfu-wire/images`, else `~/.cache/…`, or
//! `--image-cache DIR`).
//!
//! How an entry is written: the layers are unpacked (the confined unpacker, as for any run)
//! into `.tmp-<pid>-…/root` inside the store; the mount points every run needs (`/dev`,
//! `/proc`, `/tmp`, the image's `WorkingDir`) are made in it; the tree is sealed; then
//! `entry.json` (the digest, the reference, the image config, the sizes, the seal) is
//! written, last, and the directory is renamed to `sha256-<hex>` in one step. A write cut
//! short leaves only a `.tmp-` directory, never taken for an entry, and removed by the next
//! run once the process that made it is gone.
//!
//! The seal is a sha256 over the tree's listing: every name's path, type and mode, owner,
//! size, link count, inode, modification and change times, and symlink target. A change
//! through the filesystem (a file's content written, truncated, its mode changed, a file
//! added, removed or replaced) moves the change time (`ctime`), which no caller can set
//! back, so the seal catches it without reading the content; what it does not catch is a
//! change below the filesystem (a disk's bit flipped, a raw write to the device). A run of
//! a stored digest checks the seal first: an entry that is not whole, or has changed, is
//! removed and the image pulled again.
//!
//! A run never writes the store: the root is bound read-only (bubblewrap's `--ro-bind`),
//! and what a run mounts at a path under `/tmp` lands on that run's own tmpfs. A mount
//! point elsewhere that the entry lacks is made by the probe before the run, confined to
//! the root, and the entry sealed again. An entry in use holds a shared lock on its
//! `entry.json`; eviction and `prune` pass over it.
//!
//! The store is bounded (`--image-cache-max`): before an entry is renamed in, the least
//! recently used go until it fits, and an image larger than the bound is run without being
//! stored. Layers are not shared between entries: each holds its whole root.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

pub use oci_spec::image::Config;
use sha2::Digest as _;

use super::in_root::{self, InRootError};
use super::layout::Limits;
use super::reference::Digest;
use super::TempDir;

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
/// The most of `entry.json` read: a config is a few kilobytes.
const MAX_META_BYTES: u64 = 1 << 20;
/// The entry format; an entry of another is pulled again.
const FORMAT: u32 = 1;
/// Names a seal lists beyond the unpacker's entry cap: the mount points made after it.
const SEALED_NAMES_OVER_ENTRIES: u64 = 4096;

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

/// Why the store could not be used or changed, naming the store and what failed.
#[derive(Debug, thiserror::Error)]
#[error("the image store {}: {problem}", dir.display())]
pub struct StoreError {
    pub dir: PathBuf,
    pub problem: String,
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
    /// The seal over the root's listing, the digest and the config.
    seal: String,
}

/// What a new entry is, besides its root.
pub struct NewEntry<'a> {
    pub digest: &'a Digest,
    pub reference: String,
    pub config: &'a Config,
    pub unpacked_bytes: u64,
}

/// The store, opened.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    max_bytes: u64,
}

/// What a run found in the store for its digest.
pub enum Lookup {
    /// Whole and unchanged.
    Hit(Box<Entry>),
    /// Not there; or there and removed, for the reason given.
    Miss(Option<String>),
}

/// An entry a run uses: its root and config, and the shared lock that keeps eviction and
/// `prune` off it while the run lasts.
#[derive(Debug)]
pub struct Entry {
    dir: PathBuf,
    pub meta: Meta,
    /// `entry.json`, locked shared; rewritten (and locked again) when the entry is resealed.
    lock: Mutex<File>,
    /// The directories this run made in the root for its own mount points (paths inside
    /// it, in the order made), removed when the run is done.
    made: Mutex<Vec<PathBuf>>,
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
}

/// What `prune` did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Pruned {
    pub removed: Vec<String>,
    /// Entries a running probe holds, left in place.
    pub in_use: Vec<String>,
    pub freed_bytes: u64,
}

impl Store {
    /// Opens (making it if need be, mode 0700) the store at `plan.dir`, which must be a
    /// directory of the user's own, and removes what interrupted writes left.
    pub fn open(plan: &StorePlan) -> Result<Store, StoreError> {
        let store = Store { dir: plan.dir.clone(), max_bytes: plan.max_bytes };
        if let Some(parent) = plan.dir.parent() {
            fs::create_dir_all(parent).map_err(|e| store.error(format!("cannot make its parent: {e}")))?;
        }
        match fs::DirBuilder::new().mode(0o700).create(&plan.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(store.error(format!("cannot make it: {e}"))),
        }
        let meta = fs::symlink_metadata(&plan.dir).map_err(|e| store.error(e.to_string()))?;
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        if !meta.is_dir() || meta.uid() != uid {
            return Err(store.error(format!("not a directory of uid {uid}'s own (a symlink, or another user's)")));
        }
        if meta.mode() & 0o777 != 0o700 {
            // A directory of other things given by mistake (`--image-cache ~`) is not made
            // private behind the user's back.
            if !holds_only_entries(&plan.dir) {
                return Err(store.error(format!(
                    "mode {:o}, and it holds files that are not the store's: give a directory of its own",
                    meta.mode() & 0o777
                )));
            }
            fs::set_permissions(&plan.dir, fs::Permissions::from_mode(0o700))
                .map_err(|e| store.error(format!("cannot make it 0700: {e}")))?;
        }
        store.sweep_temporaries();
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn error(&self, problem: String) -> StoreError {
        StoreError { dir: self.dir.clone(), problem }
    }

    fn entry_dir(&self, digest: &str) -> PathBuf {
        self.dir.join(digest.replace(':', "-"))
    }

    /// The entry of `digest`, if it is whole and its seal holds; an entry that is not is
    /// removed (unless another run holds it), and the reason given.
    pub fn lookup(&self, digest: &Digest) -> Lookup {
        let dir = self.entry_dir(digest.as_ref());
        if fs::symlink_metadata(&dir).is_err() {
            return Lookup::Miss(None);
        }
        match Entry::open_checked(&dir, digest) {
            Ok(entry) => {
                touch(&dir.join(USED));
                Lookup::Hit(Box::new(entry))
            }
            Err(why) => {
                let removed = match self.remove_entry(&dir) {
                    Ok(Some(_)) => "removed",
                    Ok(None) => "left in place: another run holds it",
                    Err(_) => "and could not be removed",
                };
                Lookup::Miss(Some(format!("the stored entry was {why}; {removed}")))
            }
        }
    }

    /// A fresh `.tmp-` directory in the store with an empty `root`, for an image's layers.
    pub fn begin(&self) -> Result<Pending, StoreError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let name = format!("{TEMP_PREFIX}{}-{}-{nanos:08x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let path = self.dir.join(name);
        fs::DirBuilder::new().mode(0o700).create(&path).map_err(|e| self.error(format!("cannot make a directory in it: {e}")))?;
        let dir = TempDir::adopt(path);
        fs::DirBuilder::new()
            .mode(0o755)
            .create(dir.path().join(ROOT))
            .map_err(|e| self.error(format!("cannot make a root in it: {e}")))?;
        Ok(Pending { dir })
    }

    /// Seals `pending`, writes its `entry.json` last, makes room and renames it into place.
    /// `Err` hands the pending entry back (the run uses it and removes it) with why it was
    /// not stored: larger than the bound, no room (entries in use), stored meanwhile by
    /// another run, or a failure of the filesystem.
    pub fn commit(&self, pending: Pending, new: &NewEntry<'_>) -> Result<Box<Entry>, (Pending, String)> {
        let sealed = match seal(&pending.root(), new.digest.as_ref(), new.config) {
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
        let written = write_meta(pending.dir.path(), &meta).and_then(|()| File::create(pending.dir.path().join(USED)).map(drop));
        if let Err(e) = written {
            return Err((pending, format!("not stored: cannot write its description: {e}")));
        }
        if let Err(why) = self.make_room(sealed.disk_bytes) {
            return Err((pending, format!("not stored: {why}")));
        }
        let lock = match lock_shared(&pending.dir.path().join(META)) {
            Ok(lock) => lock,
            Err(e) => return Err((pending, format!("not stored: cannot lock its description: {e}"))),
        };
        let target = self.entry_dir(new.digest.as_ref());
        // `rename` refuses a target directory that is not empty: a run that stored the same
        // digest meanwhile keeps its entry, and this run uses its own root, then removes it.
        if let Err(e) = fs::rename(pending.dir.path(), &target) {
            return Err((pending, format!("not stored: {}: {e}", target.display())));
        }
        pending.dir.keep();
        Ok(Box::new(Entry { dir: target, meta, lock: Mutex::new(lock), made: Mutex::default() }))
    }

    /// The entries, least recently used first.
    pub fn list(&self) -> Result<Vec<Listed>, StoreError> {
        let mut listed = Vec::new();
        for item in fs::read_dir(&self.dir).map_err(|e| self.error(e.to_string()))? {
            let item = item.map_err(|e| self.error(e.to_string()))?;
            let name = item.file_name().to_string_lossy().into_owned();
            let Some(hex) = name.strip_prefix("sha256-") else { continue };
            let meta = read_meta(&item.path()).ok();
            let used = fs::symlink_metadata(item.path().join(USED)).and_then(|m| m.modified()).ok();
            listed.push(Listed {
                digest: format!("sha256:{hex}"),
                reference: meta.as_ref().map(|m| m.reference.clone()).unwrap_or_default(),
                disk_bytes: meta.as_ref().map_or(0, |m| m.disk_bytes),
                last_used: used.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs()),
                whole: meta.is_some(),
            });
        }
        listed.sort_by(|a, b| (a.last_used, &a.digest).cmp(&(b.last_used, &b.digest)));
        Ok(listed)
    }

    /// Removes every entry (or those of `only`) that no running probe holds, and what
    /// interrupted writes left.
    pub fn prune(&self, only: &[Digest]) -> Result<Pruned, StoreError> {
        self.sweep_temporaries();
        let mut pruned = Pruned::default();
        for listed in self.list()? {
            if !only.is_empty() && !only.iter().any(|d| d.to_string() == listed.digest) {
                continue;
            }
            match self.remove_entry(&self.entry_dir(&listed.digest)).map_err(|e| self.error(e.to_string()))? {
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
    fn make_room(&self, incoming: u64) -> Result<(), String> {
        let listed = self.list().map_err(|e| e.to_string())?;
        let mut total: u64 = listed.iter().map(|l| l.disk_bytes).sum();
        for entry in &listed {
            if total.saturating_add(incoming) <= self.max_bytes {
                break;
            }
            if let Ok(Some(())) = self.remove_entry(&self.entry_dir(&entry.digest)) {
                total = total.saturating_sub(entry.disk_bytes);
            }
        }
        if total.saturating_add(incoming) > self.max_bytes {
            return Err(format!("the store's entries in use leave no room for {incoming} bytes under its bound of {}", self.max_bytes));
        }
        Ok(())
    }

    /// Moves the entry at `dir` aside (a `.tmp-` name: from then on no run finds it) and
    /// removes it; `Ok(None)` when a run holds it.
    fn remove_entry(&self, dir: &Path) -> io::Result<Option<()>> {
        let held = match File::open(dir.join(META)) {
            Ok(file) => {
                if !try_lock_exclusive(&file)? {
                    return Ok(None);
                }
                Some(file)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let aside = self.dir.join(format!("{TEMP_PREFIX}{}-removed-{}", std::process::id(), unique()));
        fs::rename(dir, &aside)?;
        drop(held);
        super::remove_tree(&aside).map(Some)
    }

    /// Removes the `.tmp-<pid>-…` directories whose process is gone: writes or removals
    /// that were cut short.
    fn sweep_temporaries(&self) {
        let Ok(items) = fs::read_dir(&self.dir) else { return };
        for item in items.flatten() {
            let name = item.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX)) else { continue };
            let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
            let alive = pid.is_some_and(|pid| pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists());
            if !alive {
                let _ = super::remove_tree(&item.path());
            }
        }
    }
}

impl Entry {
    /// The entry at `dir`, if whole (its `entry.json` readable, of this format, for
    /// `digest`) and its root still matches the seal; `Err` says what is wrong.
    fn open_checked(dir: &Path, digest: &Digest) -> Result<Entry, String> {
        let lock = lock_shared(&dir.join(META)).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => String::from("not whole (no entry.json)"),
            _ => format!("unreadable: {e}"),
        })?;
        let meta = read_meta(dir).map_err(|e| format!("not whole: {e}"))?;
        if meta.format != FORMAT || meta.digest != digest.to_string() {
            return Err(format!("of another format or digest ({}, format {})", meta.digest, meta.format));
        }
        let sealed = seal(&dir.join(ROOT), &meta.digest, &meta.config).map_err(|e| format!("unreadable: {e}"))?;
        if sealed.seal != meta.seal {
            return Err(String::from("changed since it was stored (its seal does not match)"));
        }
        Ok(Entry { dir: dir.to_owned(), meta, lock: Mutex::new(lock), made: Mutex::default() })
    }

    /// The unpacked root, which a run binds read-only.
    pub fn root(&self) -> PathBuf {
        self.dir.join(ROOT)
    }

    /// [`in_root::make_dir`] on the stored root: found as it is, or made and the entry
    /// sealed again. A path under `/tmp` is not looked for: a run mounts its own tmpfs there.
    pub fn make_dir(&self, path: &str) -> Result<String, InRootError> {
        if under_tmp(Path::new(path)) {
            return Ok(path.to_owned());
        }
        if let Some(found) = in_root::find_dir(&self.root(), path)? {
            return Ok(found);
        }
        let made = in_root::make_dir(&self.root(), path)?;
        self.reseal().map_err(|e| InRootError::Root { root: self.root(), source: e })?;
        Ok(made)
    }

    /// [`in_root::make_mount_point`] on the stored root, as [`Entry::make_dir`]; what it
    /// makes is removed again when the run is done (the run's own paths under a `TMPDIR`
    /// outside `/tmp` would otherwise pile up in the entry, one set per run).
    pub fn make_mount_point(&self, path: &Path) -> Result<(), InRootError> {
        if under_tmp(path) || in_root::find_mount_point(&self.root(), path)? {
            return Ok(());
        }
        let mut missing = Vec::new();
        let mut prefix = PathBuf::from("/");
        for component in path.components().skip(1) {
            prefix.push(component);
            if !missing.is_empty() || !in_root::find_mount_point(&self.root(), &prefix)? {
                missing.push(prefix.clone());
            }
        }
        in_root::make_mount_point(&self.root(), path)?;
        if let Ok(mut made) = self.made.lock() {
            made.extend(missing);
        }
        self.reseal().map_err(|e| InRootError::Root { root: self.root(), source: e })
    }

    /// Seals the root again after the probe made a directory in it, and rewrites
    /// `entry.json` (a new file renamed over the old, locked shared again).
    fn reseal(&self) -> io::Result<()> {
        let mut lock = self.lock.lock().map_err(|_| io::Error::other("the entry's lock was poisoned"))?;
        let sealed = seal(&self.root(), &self.meta.digest, &self.meta.config)?;
        let meta = Meta { seal: sealed.seal, names: sealed.names, disk_bytes: sealed.disk_bytes, ..self.meta.clone() };
        write_meta(&self.dir, &meta)?;
        *lock = lock_shared(&self.dir.join(META))?;
        Ok(())
    }
}

impl Drop for Entry {
    /// Removes the mount points this run made (empty once its runtime is gone), deepest
    /// first, and seals the entry again. Best effort: an entry left changed fails its seal
    /// on the next run and is pulled again.
    fn drop(&mut self) {
        let made = self.made.get_mut().map(std::mem::take).unwrap_or_default();
        if made.is_empty() {
            return;
        }
        let root = self.root();
        for dir in made.iter().rev() {
            if let Ok(inside) = dir.strip_prefix("/") {
                let _ = fs::remove_dir(root.join(inside));
            }
        }
        let _ = self.reseal();
    }
}

/// Whether `dir` holds nothing but what a store holds (entries, `.tmp-` directories).
fn holds_only_entries(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|items| {
        items.flatten().all(|item| item.file_name().to_str().is_some_and(|n| n.starts_with("sha256-") || n.starts_with(TEMP_PREFIX)))
    })
}

/// A path strictly below `/tmp`, with no `..`: inside the container, on the run's tmpfs.
fn under_tmp(path: &Path) -> bool {
    use std::path::Component;
    path.strip_prefix("/tmp")
        .is_ok_and(|rest| !rest.as_os_str().is_empty() && rest.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)))
}

fn unique() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// Sets `path`'s modification time to now (the entry's last use); best effort: an entry
/// whose use was not recorded is only evicted sooner.
fn touch(path: &Path) {
    if let Ok(file) = fs::OpenOptions::new().write(true).create(true).truncate(false).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

fn read_meta(dir: &Path) -> io::Result<Meta> {
    let mut text = Vec::new();
    File::open(dir.join(META))?.take(MAX_META_BYTES + 1).read_to_end(&mut text)?;
    if text.len() as u64 > MAX_META_BYTES {
        return Err(io::Error::other(format!("{META} is over {MAX_META_BYTES} bytes")));
    }
    serde_json::from_slice(&text).map_err(|e| io::Error::other(format!("{META}: {e}")))
}

/// Writes `entry.json` in `dir` whole: a new file, flushed to disk, renamed over the old.
fn write_meta(dir: &Path, meta: &Meta) -> io::Result<()> {
    let text = serde_json::to_vec_pretty(meta).map_err(io::Error::other)?;
    let part = dir.join(format!("{META}.part-{}-{}", std::process::id(), unique()));
    let mut file = fs::OpenOptions::new().write(true).create_new(true).mode_0600().open(&part)?;
    file.write_all(&text)?;
    file.sync_all()?;
    fs::rename(&part, dir.join(META))
}

trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}

impl Mode0600 for fs::OpenOptions {
    fn mode_0600(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::mode(self, 0o600)
    }
}

fn lock_shared(path: &Path) -> io::Result<File> {
    let file = File::open(path)?;
    // SAFETY: flock on a descriptor we own; the result is checked.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// Takes `file`'s exclusive lock if no one holds it: `false` when someone does.
fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    // SAFETY: flock on a descriptor we own; the result is checked.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Ok(false);
    }
    Err(error)
}

/// A root's seal, with what its walk counted.
struct Sealed {
    seal: String,
    disk_bytes: u64,
    names: u64,
}

/// The seal over `root`: sha256 of the digest, the config, and the sorted digests of every
/// name's listing line (see the module's comment for what a line holds).
fn seal(root: &Path, digest: &str, config: &Config) -> io::Result<Sealed> {
    let max_names = Limits::default().max_entries.saturating_add(SEALED_NAMES_OVER_ENTRIES);
    let mut lines: Vec<[u8; 32]> = Vec::new();
    let mut disk_bytes: u64 = 0;
    let mut pending: Vec<PathBuf> = vec![PathBuf::new()];
    lines.push(line(Path::new(""), &fs::symlink_metadata(root)?, None));
    while let Some(relative) = pending.pop() {
        for item in fs::read_dir(root.join(&relative))? {
            let item = item?;
            let path = relative.join(item.file_name());
            let meta = item.metadata()?;
            disk_bytes = disk_bytes.saturating_add(meta.blocks().saturating_mul(512));
            let target = if meta.file_type().is_symlink() { Some(fs::read_link(root.join(&path))?) } else { None };
            lines.push(line(&path, &meta, target.as_deref()));
            if lines.len() as u64 > max_names {
                return Err(io::Error::other(format!("more than {max_names} names")));
            }
            if meta.is_dir() {
                pending.push(path);
            }
        }
    }
    lines.sort_unstable();
    let mut hasher = sha2::Sha256::new();
    hasher.update(b"checkfu-wire image store seal 1\0");
    hasher.update(digest.as_bytes());
    hasher.update([0]);
    hasher.update(serde_json::to_vec(config).map_err(io::Error::other)?);
    for line in &lines {
        hasher.update(line);
    }
    let seal = format!("sha256:{}", hex(&hasher.finalize()));
    Ok(Sealed { seal, disk_bytes, names: lines.len() as u64 })
}

/// The digest of one name's listing line.
fn line(path: &Path, meta: &fs::Metadata, target: Option<&Path>) -> [u8; 32] {
    let mut hasher = sha2::Sha256::new();
    hasher.update((path.as_os_str().len() as u64).to_le_bytes());
    hasher.update(path.as_os_str().as_bytes());
    let fields = [
        u64::from(meta.mode()),
        meta.uid().into(),
        meta.gid().into(),
        meta.size(),
        meta.nlink(),
        meta.ino(),
        meta.mtime() as u64,
        meta.mtime_nsec() as u64,
        meta.ctime() as u64,
        meta.ctime_nsec() as u64,
    ];
    for field in fields {
        hasher.update(field.to_le_bytes());
    }
    if let Some(target) = target {
        hasher.update(target.as_os_str().as_bytes());
    }
    hasher.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A size as `--image-cache-max` takes it: bytes, or a number with `K`, `M`, `G`, `T`
/// (powers of 1024, optionally `KiB`, `MiB`, …).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: u64 = number.parse().map_err(|_| format!("`{text}` is not a size: a number of bytes, or with K, M, G or T"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("`{text}`: the unit is one of K, M, G, T (powers of 1024)")),
    };
    number.checked_mul(1u64 << shift).ok_or_else(|| format!("`{text}` is too large"))
}

/// How long ago `epoch_seconds` was, for `image ls`.
pub fn age(epoch_seconds: u64) -> Duration {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    Duration::from_secs(now.saturating_sub(epoch_seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_in_powers_of_1024() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("10G"), Ok(10 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("3k"), Ok(3 << 10));
        assert!(parse_size("ten").unwrap_err().contains("not a size"));
        assert!(parse_size("1P").unwrap_err().contains("unit"));
        assert!(parse_size("99999999999T").unwrap_err().contains("too large"));
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
        let sealed = seal(&root, "sha256:aa", &config).unwrap();
        assert_eq!(sealed.names, 4, "the root, bin, cli and link");
        assert_eq!(seal(&root, "sha256:aa", &config).unwrap().seal, sealed.seal);
        assert_ne!(seal(&root, "sha256:bb", &config).unwrap().seal, sealed.seal, "another digest");
        // The same length, the modification time set back: the change time still moves.
        let cli = root.join("bin/cli");
        let modified = fs::metadata(&cli).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        fs::write(&cli, b"#!/bin/sh\necho ho\n").unwrap();
        File::options().write(true).open(&cli).unwrap().set_modified(modified).unwrap();
        assert_ne!(seal(&root, "sha256:aa", &config).unwrap().seal, sealed.seal);
    }

    #[test]
    fn an_entry_without_its_description_or_of_another_digest_is_not_taken() {
        let dir = TempDir::new("checkfu-store-open").unwrap();
        let store = Store::open(&StorePlan { dir: dir.path().join("images"), max_bytes: 1 << 30 }).unwrap();
        let digest = crate::image::digest_of(b"image");
        let pending = store.begin().unwrap();
        fs::write(pending.root().join("file"), b"x").unwrap();
        let new = NewEntry { digest: &digest, reference: String::from("r"), config: &Config::default(), unpacked_bytes: 1 };
        let entry = store.commit(pending, &new).map_err(|(_, why)| why).unwrap();
        drop(entry);
        assert!(matches!(store.lookup(&digest), Lookup::Hit(_)));
        let other = crate::image::digest_of(b"other");
        fs::rename(store.entry_dir(digest.as_ref()), store.entry_dir(other.as_ref())).unwrap();
        let Lookup::Miss(Some(why)) = store.lookup(&other) else { panic!("taken") };
        assert!(why.contains("another format or digest") && why.contains("removed"), "{why}");
        assert!(store.list().unwrap().is_empty());
    }

    #[test]
    fn a_directory_of_other_files_is_not_taken_for_a_store() {
        let dir = TempDir::new("checkfu-store-other").unwrap();
        let other = dir.path().join("home");
        fs::create_dir(&other).unwrap();
        fs::write(other.join("notes.txt"), b"mine").unwrap();
        fs::set_permissions(&other, fs::Permissions::from_mode(0o755)).unwrap();
        let refused = Store::open(&StorePlan { dir: other.clone(), max_bytes: 1 << 30 }).unwrap_err();
        assert!(refused.to_string().contains("not the store's"), "{refused}");
        assert_eq!(fs::metadata(&other).unwrap().mode() & 0o777, 0o755, "left as it was");
        // An empty one is made private.
        let empty = dir.path().join("empty");
        fs::create_dir(&empty).unwrap();
        fs::set_permissions(&empty, fs::Permissions::from_mode(0o755)).unwrap();
        Store::open(&StorePlan { dir: empty.clone(), max_bytes: 1 << 30 }).unwrap();
        assert_eq!(fs::metadata(&empty).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn an_entry_in_use_is_not_pruned() {
        let dir = TempDir::new("checkfu-store-held").unwrap();
        let store = Store::open(&StorePlan { dir: dir.path().join("images"), max_bytes: 1 << 30 }).unwrap();
        let digest = crate::image::digest_of(b"held");
        let new = NewEntry { digest: &digest, reference: String::from("r"), config: &Config::default(), unpacked_bytes: 0 };
        let held = store.commit(store.begin().unwrap(), &new).map_err(|(_, why)| why).unwrap();
        let pruned = store.prune(&[]).unwrap();
        assert_eq!(pruned.in_use, vec![digest.to_string()]);
        drop(held);
        assert_eq!(store.prune(&[]).unwrap().removed, vec![digest.to_string()]);
    }
}
