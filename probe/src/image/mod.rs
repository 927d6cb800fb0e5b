//! The image lane's foundation: images without a daemon.
//!
//! - [`reference`]: an image reference pinned by digest (`NAME@sha256:<64 hex>`);
//! - [`layout`]: an OCI image layout read and unpacked in the crate (every blob checked
//!   against its digest and size, layers applied in order with whiteouts, bounded);
//! - [`distribution`]: a loopback registry pulled by the probe itself over plain HTTP
//!   (bounded, to the registry named only, by the run's deadline);
//! - [`tools`]: buildah, skopeo, the distribution registry, podman and docker, driven as the
//!   external tools they are (bounded capture, every child reaped, nothing left on disk);
//! - [`source`]: where `--image` is read from (its registry, podman's or docker's storage,
//!   an OCI layout directory), tied to its digest;
//! - [`run`]: an image pulled by its digest, unpacked, and run inside the probe's fence;
//! - [`runtime`]: the runtime that runs it (bubblewrap, podman or docker), and
//!   [`forward`]: the relay's port inside docker's pause container.
//!
//! An image is untrusted input: nothing here panics on it, every read of it is bounded, and
//! an error names the blob or the entry at fault.

pub mod distribution;
pub mod forward;
pub mod host_env;
pub mod in_root;
pub mod layout;
pub mod reference;
pub mod run;
pub mod runtime;
pub mod source;
pub mod tools;

pub use layout::{ImageConfig, Limits, OciLayout, Selector, UnpackReport};
pub use reference::{Digest, ImageReference, ReferenceError};

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A directory the image lane made (a registry's store, a builder's storage, an unpacked
/// root filesystem), removed with [`remove_tree`] when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// A fresh private directory under the system's temporary directory.
    pub fn new(prefix: &str) -> io::Result<TempDir> {
        Ok(TempDir { path: crate::session::workspace::private_dir(prefix)? })
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

/// Removes `path` and everything under it, without following symlinks. An image's
/// directories may be read-only (`0555`), which stops an unprivileged `remove_dir_all`; a
/// directory that refuses is made writable by its owner and the removal retried, so an
/// unpacked root filesystem never stays behind.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(_) => {}
    }
    make_dirs_writable(path, 0)?;
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Deeper than any path an unpacked image can hold ([`layout::MAX_PATH_BYTES`] / 2).
const MAX_REMOVE_DEPTH: usize = 4096;

fn make_dirs_writable(dir: &Path, depth: usize) -> io::Result<()> {
    let metadata = std::fs::symlink_metadata(dir)?;
    if !metadata.is_dir() || depth > MAX_REMOVE_DEPTH {
        return Ok(());
    }
    let mode = metadata.permissions().mode();
    if mode & 0o700 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700))?;
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            make_dirs_writable(&entry.path(), depth + 1)?;
        }
    }
    Ok(())
}
