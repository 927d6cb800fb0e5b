//! Private temporary directories: made `0700` under the system's temporary directory with
//! a name no other run picks, and removed whole (without following symlinks) when dropped.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::dir::remove_tree;

/// A fresh directory under the system's temporary directory, `0700`, named from `prefix`,
/// the process id, a counter and the clock; its canonical path.
pub fn private_dir(prefix: &str) -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    for _ in 0..64 {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let name = format!("{prefix}-{}-{}-{nanos:08x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let path = base.join(name);
        let mut builder = fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(&path) {
            Ok(()) => return path.canonicalize(),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("could not create a unique private directory"))
}

/// A directory a run made (a workspace, a registry's store, a builder's storage, an
/// unpacked root filesystem), removed with [`remove_tree`] when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// A fresh private directory under the system's temporary directory.
    pub fn new(prefix: &str) -> io::Result<TempDir> {
        Ok(TempDir { path: private_dir(prefix)? })
    }

    /// A directory the caller just made, removed with it from now on.
    pub fn adopt(path: PathBuf) -> TempDir {
        TempDir { path }
    }

    /// Keeps the directory: it is no longer removed when this drops (an image store's
    /// entry, renamed into place).
    pub fn keep(self) -> PathBuf {
        let path = self.path.clone();
        std::mem::forget(self);
        path
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes it now, reporting a failure that dropping would swallow.
    pub fn remove(self) -> io::Result<()> {
        let path = self.path.clone();
        std::mem::forget(self);
        remove_tree(&path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = remove_tree(&self.path);
    }
}
