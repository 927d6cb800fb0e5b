//! The one path resolver: a directory held by descriptor ([`Root`]) and every path inside
//! it resolved by the kernel under one `..` rule.
//!
//! # The rule
//!
//! A path is resolved as a process chrooted at the root would resolve it: `..` at the root
//! stays at the root, and an absolute symlink starts again from the root
//! (`openat2(RESOLVE_IN_ROOT)`). Nothing is ever resolved outside the root, whatever the
//! tree holds; magic links (`/proc/self/root` and the like) and mount points on the way are
//! refused (`RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV`). [`fold`] is the same rule applied to
//! a path's text alone, for a path that names no tree we hold.
//!
//! Why this rule is safe, and correct, for each caller:
//! - an image's working directory and mount points (`checkfu_wire_image::in_root`): the
//!   container resolves them this way once it runs, so the directory made before it starts
//!   is the one it will see; nothing is made outside the root;
//! - the unpacker's entry parents (`checkfu_wire_image::unpack`): a lower layer's symlink
//!   on an entry's path is followed as the container will see it, so the entry lands where
//!   the container looks for it, and never outside the root. An entry's *name* holding `..`
//!   is refused before anything is resolved ([`names`]): that is a check of the tar's
//!   data, not a resolution;
//! - the store's stored roots, resolved through the same `in_root` functions;
//! - the harness's workspace (`checkfu_wire_probe`): a path the harness sends is folded by
//!   [`fold`] (the same rule at `/`), then must lie inside the workspace.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::dir::{self, Dir};

/// A directory every path is resolved beneath, as if it were `/`.
#[derive(Debug)]
pub struct Root(Dir);

/// What may be on the way, besides directories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Symlinks are followed, under the rule (an absolute target from the root).
    Follow,
    /// A symlink anywhere on the way is refused ([`ResolveError::Loop`]; as the last name,
    /// [`ResolveError::NotADirectory`]): for a caller that
    /// follows symlinks itself, step by step, to see each directory it passes.
    NoSymlinks,
}

/// Why a path did not resolve to a directory inside the root.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("no such directory inside the root")]
    Missing,
    #[error("a component is not a directory")]
    NotADirectory,
    #[error("a symlink loop, too many symlinks, or a symlink where none may be")]
    Loop,
    #[error("it crosses a mount point or a magic link")]
    Crosses,
    #[error(transparent)]
    Io(io::Error),
}

impl ResolveError {
    fn of(error: io::Error) -> ResolveError {
        match error.raw_os_error() {
            Some(libc::ENOENT) => ResolveError::Missing,
            Some(libc::ENOTDIR) => ResolveError::NotADirectory,
            Some(libc::ELOOP) => ResolveError::Loop,
            Some(libc::EXDEV) => ResolveError::Crosses,
            _ => ResolveError::Io(error),
        }
    }
}

impl Root {
    /// Opens the directory at `path` as a root (its last component must not be a symlink).
    pub fn open(path: &Path) -> io::Result<Root> {
        Dir::open(path).map(Root)
    }

    /// The root itself.
    pub fn dir(&self) -> &Dir {
        &self.0
    }

    /// The directory `path` names beneath the root, under the module's rule (an absolute
    /// `path` is taken from the root; the empty path is the root). With
    /// [`Rule::NoSymlinks`] and a path of plain names only, a kernel without `openat2` (or
    /// a path longer than it takes) is served one name at a time, each opened beneath the
    /// last without following anything.
    pub fn resolve(&self, path: &Path, rule: Rule) -> Result<Dir, ResolveError> {
        let bytes = path.as_os_str().as_bytes();
        let text = if bytes.is_empty() { b".".as_slice() } else { bytes };
        let mut resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS | libc::RESOLVE_NO_XDEV;
        if rule == Rule::NoSymlinks {
            resolve |= libc::RESOLVE_NO_SYMLINKS;
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | if rule == Rule::NoSymlinks { libc::O_NOFOLLOW } else { 0 };
        match dir::openat2(self.0.as_fd(), text, flags, resolve) {
            Ok(fd) => Ok(Dir::from(fd)),
            Err(e) if rule == Rule::NoSymlinks && step_by_step(&e) => {
                let names = names(bytes).map_err(|DotDot| ResolveError::Io(e))?;
                let mut dir = self.0.duplicate().map_err(ResolveError::Io)?;
                for name in names {
                    dir = dir.open_child(name).map_err(ResolveError::of)?;
                }
                Ok(dir)
            }
            Err(e) => Err(ResolveError::of(e)),
        }
    }
}

impl From<Dir> for Root {
    fn from(dir: Dir) -> Root {
        Root(dir)
    }
}

/// Whether an `openat2` failure leaves a walk one name at a time to do the same: no
/// `openat2` in the kernel (before Linux 5.6) or a seccomp filter refusing it, or a path
/// longer than one call takes.
fn step_by_step(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::ENAMETOOLONG))
}

/// A `..` component in a name that must have none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a `..` component")]
pub struct DotDot;

/// The names of a path given as data (an archive entry's, a link's target), relative:
/// `/` and `.` dropped, `..` refused. The check made before anything is resolved.
pub fn names(path: &[u8]) -> Result<Vec<&OsStr>, DotDot> {
    let mut names = Vec::new();
    for part in path.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err(DotDot),
            part => names.push(OsStr::from_bytes(part)),
        }
    }
    Ok(names)
}

/// `path` with `.` dropped and `..` folded by the module's rule, on its text alone: `..`
/// takes the last name away, and at the root stays there (`/a/../../b` is `/b`).
pub fn fold(path: &Path) -> PathBuf {
    let mut folded = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                folded.pop();
            }
            Component::CurDir => {}
            other => folded.push(other),
        }
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn scratch() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root/sub/deeper")).unwrap();
        std::fs::write(dir.path().join("root/file"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        let root = Root::open(&dir.path().join("root")).unwrap();
        (dir, root)
    }

    fn identity(dir: &Dir) -> (u64, u64) {
        dir.stat().unwrap().identity()
    }

    fn inside(dir: &tempfile::TempDir, path: &str) -> (u64, u64) {
        identity(&Dir::open(&dir.path().join("root").join(path)).unwrap())
    }

    #[test]
    fn dot_dot_past_the_root_stays_at_the_root() {
        let (dir, root) = scratch();
        for path in ["../../../sub", "/../sub", "sub/../../../sub"] {
            let found = root.resolve(Path::new(path), Rule::Follow).unwrap();
            assert_eq!(identity(&found), inside(&dir, "sub"), "{path}");
        }
        for path in ["../outside", "../outside/../sub"] {
            assert!(matches!(root.resolve(Path::new(path), Rule::Follow), Err(ResolveError::Missing)), "{path}");
        }
        assert_eq!(identity(&root.resolve(Path::new(".."), Rule::Follow).unwrap()), identity(root.dir()));
    }

    #[test]
    fn an_absolute_symlink_starts_again_from_the_root() {
        let (dir, root) = scratch();
        symlink("/sub", dir.path().join("root/absolute")).unwrap();
        symlink(dir.path().join("outside"), dir.path().join("root/host")).unwrap();
        symlink("../../../../sub", dir.path().join("root/sub/climbing")).unwrap();
        assert_eq!(identity(&root.resolve(Path::new("absolute/deeper"), Rule::Follow).unwrap()), inside(&dir, "sub/deeper"));
        assert_eq!(identity(&root.resolve(Path::new("sub/climbing"), Rule::Follow).unwrap()), inside(&dir, "sub"));
        // The host's directory is not reached: its path is looked for inside the root.
        assert!(matches!(root.resolve(Path::new("host"), Rule::Follow), Err(ResolveError::Missing)));
        // Refused as the last name (`O_NOFOLLOW`: not a directory) and on the way.
        assert!(matches!(root.resolve(Path::new("absolute"), Rule::NoSymlinks), Err(ResolveError::NotADirectory)));
        assert!(matches!(root.resolve(Path::new("absolute/deeper"), Rule::NoSymlinks), Err(ResolveError::Loop)));
    }

    #[test]
    fn a_symlink_loop_is_refused() {
        let (dir, root) = scratch();
        symlink("b", dir.path().join("root/a")).unwrap();
        symlink("/a", dir.path().join("root/b")).unwrap();
        symlink("self/x", dir.path().join("root/self")).unwrap();
        for path in ["a", "b/x", "self"] {
            assert!(matches!(root.resolve(Path::new(path), Rule::Follow), Err(ResolveError::Loop)), "{path}");
        }
    }

    #[test]
    fn a_symlink_to_proc_self_root_stays_inside() {
        let (dir, root) = scratch();
        symlink("/proc/self/root", dir.path().join("root/escape")).unwrap();
        symlink("/proc/self/cwd", dir.path().join("root/cwd")).unwrap();
        // `/proc` is looked for inside the root, where there is none.
        for path in ["escape", "escape/etc", "cwd"] {
            assert!(matches!(root.resolve(Path::new(path), Rule::Follow), Err(ResolveError::Missing)), "{path}");
        }
        // Even were the root to hold the host's `/proc`, its magic links are not followed.
        let host = Root::open(Path::new("/")).unwrap();
        assert!(matches!(host.resolve(Path::new("proc/self/root/etc"), Rule::Follow), Err(ResolveError::Loop | ResolveError::Crosses)));
    }

    #[test]
    fn a_path_through_a_file_is_refused() {
        let (_dir, root) = scratch();
        assert!(matches!(root.resolve(Path::new("file/sub"), Rule::Follow), Err(ResolveError::NotADirectory)));
        assert!(matches!(root.resolve(Path::new("file"), Rule::NoSymlinks), Err(ResolveError::NotADirectory)));
    }

    #[test]
    fn names_refuse_dot_dot_and_fold_clamps_it_at_the_root() {
        assert_eq!(names(b"/a/./b//c/").unwrap(), [OsStr::new("a"), OsStr::new("b"), OsStr::new("c")]);
        assert_eq!(names(b"a/../b"), Err(DotDot));
        assert_eq!(names(b"./"), Ok(vec![]));
        assert_eq!(fold(Path::new("/a/../../b/./c/..")), Path::new("/b"));
        assert_eq!(fold(Path::new("/../../etc")), Path::new("/etc"));
    }
}
