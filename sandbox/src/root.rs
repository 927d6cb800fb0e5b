//! The one path resolver: a directory held by descriptor ([`Root`]) and every path inside
//! it resolved under one `..` rule, by the kernel ([`Root::resolve`]) or a step at a time
//! for a caller that makes or checks each directory on the way ([`Root::walk`]).
//!
//! # The rule
//!
//! A path is resolved as a process chrooted at the root would resolve it:
//!
//! - `..` takes the last directory away, and at the root stays at the root;
//! - a symlink is followed, an absolute target starting again from the root, a relative
//!   one from the directory that holds the link;
//! - at most [`MAX_SYMLINKS`] symlinks are followed (a loop is refused, as the kernel
//!   refuses it, `ELOOP`);
//! - a magic link (`/proc/self/root` and the like) is refused, not followed.
//!
//! Nothing is ever resolved outside the root, whatever the tree holds.
//! [`Root::resolve`] is `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS |
//! RESOLVE_NO_XDEV)` (a mount point on the way refused besides); [`Walk`] is the same rule
//! written out, used where the kernel has no `openat2` and by the callers that look at
//! each name. The tests hold the two to the same answers. [`fold`] is the rule applied to
//! a path's text alone (`..` at `/` stays at `/`), for a path that names no tree we hold;
//! [`names`] splits a path given as data (an archive entry's name), in which `..` is
//! refused before anything is resolved.
//!
//! Why the rule is the right one for each caller:
//! - an image's working directory and mount points (`checkfu_wire_image::in_root`): the
//!   container resolves them this way once it runs, so the directory made before it starts
//!   is the one it will see, and nothing is made outside the root;
//! - the unpacker's entry parents (`checkfu_wire_image::unpack`): a lower layer's symlink
//!   on an entry's path is followed as the container will see it, so the entry lands where
//!   the container looks for it, and never outside the root;
//! - the store (`checkfu_wire_image::store`): its path is walked from the host's `/` (a
//!   root like any other) checking each directory's owner, and a stored image's root is
//!   held by the descriptor its seal was checked through, every path in it resolved here;
//! - the harness's workspace (`checkfu_wire_probe`): a path the harness sends that does
//!   not exist is [`fold`]ed, then must lie inside the workspace.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::dir::Dir;

/// The most symlinks one resolution follows: the kernel's own bound (`MAXSYMLINKS`).
pub const MAX_SYMLINKS: usize = 40;

/// The longest symlink target a [`Walk`] reads, as the kernel's (`PATH_MAX`).
const MAX_TARGET_BYTES: usize = 4096;

/// A directory every path is resolved beneath, as if it were `/`.
#[derive(Debug)]
pub struct Root(Dir);

/// Why a path did not resolve to a directory inside the root.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("no such directory inside the root")]
    Missing,
    #[error("a component is not a directory")]
    NotADirectory,
    #[error("a symlink loop, more than {MAX_SYMLINKS} symlinks, or a magic link")]
    Loop,
    #[error("it crosses a mount point")]
    Crosses,
    #[error(transparent)]
    Walk(WalkError),
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

/// Why a [`Walk`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("more than {0} symlinks on the way")]
    TooManySymlinks(usize),
    #[error("a symlink on the way with a target of more than {0} bytes")]
    LongTarget(usize),
    #[error("a directory on the way was moved while it was walked")]
    Moved,
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What one [`Walk`] may follow.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The most symlinks followed.
    pub links: usize,
    /// The longest symlink target read.
    pub target_bytes: usize,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds { links: MAX_SYMLINKS, target_bytes: MAX_TARGET_BYTES }
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
    /// `path` is taken from the root; the empty path is the root). By the kernel in one
    /// call; where it has no `openat2` (before Linux 5.6, or a seccomp filter refusing it)
    /// or the path is longer than it takes, by a [`Walk`].
    pub fn resolve(&self, path: &Path) -> Result<Dir, ResolveError> {
        let bytes = path.as_os_str().as_bytes();
        let text = if bytes.is_empty() { b".".as_slice() } else { bytes };
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let rule = ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS | ResolveFlags::NO_XDEV;
        loop {
            match rustix::fs::openat2(self.0.as_fd(), text, flags, Mode::empty(), rule) {
                Ok(fd) => return Ok(Dir::from(fd)),
                Err(Errno::INTR) => continue,
                Err(Errno::NOSYS | Errno::PERM | Errno::NAMETOOLONG) => return self.resolve_by_walk(path),
                Err(e) => return Err(ResolveError::of(e.into())),
            }
        }
    }

    /// [`Root::resolve`] a name at a time, every symlink followed.
    fn resolve_by_walk(&self, path: &Path) -> Result<Dir, ResolveError> {
        let mut walk = self.walk(path, Bounds::default()).map_err(ResolveError::Io)?;
        while let Some(name) = walk.next_name().map_err(ResolveError::Walk)? {
            match walk.dir().stat_at(&name) {
                Ok(stat) if stat.is_symlink() => walk.follow(&name).map_err(|e| match e {
                    WalkError::TooManySymlinks(_) => ResolveError::Loop,
                    e => ResolveError::Walk(e),
                })?,
                Ok(stat) if stat.is_dir() => walk.enter(&name).map_err(ResolveError::of)?,
                Ok(_) => return Err(ResolveError::NotADirectory),
                Err(e) => return Err(ResolveError::of(e)),
            }
        }
        Ok(walk.into_dir())
    }

    /// Where `dir` (a directory resolved beneath the root) is, as an absolute path inside
    /// the root: what a runtime is given, every symlink already resolved. Read from
    /// `/proc/self/fd`, the kernel's own name for each descriptor; a directory the kernel
    /// does not place beneath the root is an error.
    pub fn locate(&self, dir: &Dir) -> io::Result<PathBuf> {
        let path_of = |dir: &Dir| std::fs::read_link(format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd()));
        let (root, found) = (path_of(&self.0)?, path_of(dir)?);
        let inside = found
            .strip_prefix(&root)
            .map_err(|_| io::Error::other(format!("{} is not inside the root {}", found.display(), root.display())))?;
        Ok(Path::new("/").join(inside))
    }

    /// A walk of `path` beneath the root, a name at a time: for a caller that makes or
    /// checks each directory on the way. See [`Walk`].
    pub fn walk(&self, path: &Path, bounds: Bounds) -> io::Result<Walk<'_>> {
        let mut pending = Vec::new();
        push_names(&mut pending, path.as_os_str().as_bytes());
        Ok(Walk { root: self, dir: self.0.duplicate()?, entered: Vec::new(), pending, links: 0, bounds })
    }
}

impl From<Dir> for Root {
    fn from(dir: Dir) -> Root {
        Root(dir)
    }
}

/// The module's rule a name at a time. The caller asks for each name ([`Walk::next_name`],
/// which has already dealt with `.` and `..`), looks at it beneath [`Walk::dir`], and
/// either enters it ([`Walk::enter`], a directory, opened without following anything) or
/// follows it ([`Walk::follow`], a symlink); it may make a missing directory first. Every
/// open is one name beneath a directory held, and `..` is the directory's own parent,
/// checked to be the one walked through, so nothing outside the root is reached.
#[derive(Debug)]
pub struct Walk<'r> {
    root: &'r Root,
    dir: Dir,
    /// The directories entered from the root, each its name and identity; `dir` is the last.
    entered: Vec<(OsString, (u64, u64))>,
    /// The names still to walk, the next one last.
    pending: Vec<OsString>,
    links: usize,
    bounds: Bounds,
}

impl Walk<'_> {
    /// The next name to look at beneath [`Walk::dir`], `None` once the path is walked.
    pub fn next_name(&mut self) -> Result<Option<OsString>, WalkError> {
        while let Some(name) = self.pending.pop() {
            match name.as_bytes() {
                b"" | b"." => {}
                b".." => self.up()?,
                _ => return Ok(Some(name)),
            }
        }
        Ok(None)
    }

    /// `..`: the last directory entered is left; at the root, the walk stays there.
    fn up(&mut self) -> Result<(), WalkError> {
        if self.entered.pop().is_none() {
            return Ok(());
        }
        let expected = match self.entered.last() {
            Some((_, identity)) => *identity,
            None => self.root.0.stat()?.identity(),
        };
        let parent = self.dir.open_parent()?;
        if parent.stat()?.identity() != expected {
            return Err(WalkError::Moved);
        }
        self.dir = parent;
        Ok(())
    }

    /// Whether the name [`Walk::next_name`] gave was the path's last (nothing but `.` after it).
    pub fn is_last(&self) -> bool {
        self.pending.iter().all(|name| matches!(name.as_bytes(), b"" | b"."))
    }

    /// Enters the directory `name` beneath [`Walk::dir`]; a symlink there is refused.
    pub fn enter(&mut self, name: &OsStr) -> io::Result<()> {
        let child = self.dir.open_child(name)?;
        let identity = child.stat()?.identity();
        self.entered.push((name.to_owned(), identity));
        self.dir = child;
        Ok(())
    }

    /// Follows the symlink `name` beneath [`Walk::dir`]: its target is walked next, from
    /// the root if it is absolute.
    pub fn follow(&mut self, name: &OsStr) -> Result<(), WalkError> {
        self.links += 1;
        if self.links > self.bounds.links {
            return Err(WalkError::TooManySymlinks(self.bounds.links));
        }
        let target = self.dir.read_link_at(name)?;
        if target.len() > self.bounds.target_bytes {
            return Err(WalkError::LongTarget(self.bounds.target_bytes));
        }
        if target.starts_with(b"/") {
            self.dir = self.root.0.duplicate()?;
            self.entered.clear();
        }
        push_names(&mut self.pending, &target);
        Ok(())
    }

    /// The directory the walk is in.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// How many directories beneath the root the walk is (0 at the root).
    pub fn depth(&self) -> usize {
        self.entered.len()
    }

    /// The path of [`Walk::dir`] inside the root, as walked (for a message).
    pub fn path(&self) -> PathBuf {
        let mut path = PathBuf::from("/");
        path.extend(self.entered.iter().map(|(name, _)| name));
        path
    }

    /// The directory the walk ended in.
    pub fn into_dir(self) -> Dir {
        self.dir
    }
}

/// Pushes `path`'s names onto `pending` (a stack: the first name last), `..` kept.
fn push_names(pending: &mut Vec<OsString>, path: &[u8]) {
    pending.extend(path.split(|b| *b == b'/').rev().map(|name| OsStr::from_bytes(name).to_owned()));
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

    /// The kernel's answer and the walk's, which must be the same: the identity of the
    /// directory found, or the kind of refusal.
    fn both(root: &Root, path: &str) -> [Result<(u64, u64), String>; 2] {
        let answer = |found: Result<Dir, ResolveError>| found.map(|dir| identity(&dir)).map_err(|e| format!("{e:?}"));
        [answer(root.resolve(Path::new(path))), answer(root.resolve_by_walk(Path::new(path)))]
    }

    fn found(root: &Root, path: &str) -> (u64, u64) {
        let [kernel, walk] = both(root, path);
        assert_eq!(kernel, walk, "{path}: the kernel and the walk differ");
        kernel.unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn refused(root: &Root, path: &str) -> String {
        let [kernel, walk] = both(root, path);
        assert_eq!(kernel, walk, "{path}: the kernel and the walk differ");
        kernel.expect_err(path)
    }

    #[test]
    fn dot_dot_at_the_root_stays_at_the_root() {
        let (dir, root) = scratch();
        for path in ["../../../sub", "/../sub", "sub/../../../sub", "sub/deeper/../../../sub"] {
            assert_eq!(found(&root, path), inside(&dir, "sub"), "{path}");
        }
        assert_eq!(found(&root, ".."), identity(root.dir()));
        assert_eq!(found(&root, "sub/deeper/.."), inside(&dir, "sub"));
        // The directory beside the root is never reached by climbing: `outside` is looked
        // for inside the root, where there is none.
        for path in ["../outside", "../outside/../sub"] {
            assert_eq!(refused(&root, path), "Missing", "{path}");
        }
    }

    #[test]
    fn an_absolute_symlink_starts_again_from_the_root() {
        let (dir, root) = scratch();
        symlink("/sub", dir.path().join("root/absolute")).unwrap();
        symlink(dir.path().join("outside"), dir.path().join("root/host")).unwrap();
        symlink("../../../../sub", dir.path().join("root/sub/climbing")).unwrap();
        symlink("deeper/..", dir.path().join("root/sub/relative")).unwrap();
        assert_eq!(found(&root, "absolute/deeper"), inside(&dir, "sub/deeper"));
        assert_eq!(found(&root, "sub/climbing"), inside(&dir, "sub"));
        assert_eq!(found(&root, "sub/relative/deeper"), inside(&dir, "sub/deeper"));
        assert_eq!(found(&root, "absolute/.."), identity(root.dir()), "`..` after a link leaves its target");
        // The host's directory is not reached: its path is looked for inside the root.
        assert_eq!(refused(&root, "host"), "Missing");
        std::fs::create_dir_all(dir.path().join("root").join(dir.path().join("outside").strip_prefix("/").unwrap())).unwrap();
        assert_eq!(found(&root, "host"), inside(&dir, dir.path().join("outside").strip_prefix("/").unwrap().to_str().unwrap()));
    }

    #[test]
    fn a_symlink_loop_is_refused() {
        let (dir, root) = scratch();
        symlink("b", dir.path().join("root/a")).unwrap();
        symlink("/a", dir.path().join("root/b")).unwrap();
        symlink("self/x", dir.path().join("root/self")).unwrap();
        for path in ["a", "b/x", "self", "sub/../a/.."] {
            assert_eq!(refused(&root, path), "Loop", "{path}");
        }
        // A chain of exactly the bound is followed; one more is a loop.
        let mut previous = String::from("sub");
        for i in 0..=MAX_SYMLINKS {
            let name = format!("chain{i}");
            symlink(&previous, dir.path().join("root").join(&name)).unwrap();
            previous = name;
        }
        assert_eq!(found(&root, &format!("chain{}", MAX_SYMLINKS - 1)), inside(&dir, "sub"));
        assert_eq!(refused(&root, &format!("chain{MAX_SYMLINKS}")), "Loop");
    }

    #[test]
    fn a_magic_link_is_refused() {
        // `/proc` as the root: `self` is a plain symlink (to the pid's directory), and is
        // followed; `self/root`, `self/cwd` and `thread-self/root` are magic links.
        let proc = Root::open(Path::new("/proc")).unwrap();
        let pid = proc.resolve(Path::new("self")).expect("the plain symlink `self`");
        assert_eq!(proc.locate(&pid).unwrap(), Path::new("/").join(std::fs::read_link("/proc/self").unwrap()));
        for path in ["self/root", "self/root/etc", "self/cwd", "thread-self/root"] {
            assert!(matches!(proc.resolve(Path::new(path)), Err(ResolveError::Loop)), "{path}");
        }
        // Inside an image's root, the same link names that root's own `/proc`.
        let (dir, root) = scratch();
        symlink("/proc/self/root", dir.path().join("root/escape")).unwrap();
        for path in ["escape", "escape/etc"] {
            assert_eq!(refused(&root, path), "Missing", "{path}");
        }
    }

    #[test]
    fn a_path_through_a_file_is_refused() {
        let (_dir, root) = scratch();
        assert_eq!(refused(&root, "file/sub"), "NotADirectory");
        assert_eq!(refused(&root, "file"), "NotADirectory");
        assert_eq!(refused(&root, "nothing/sub"), "Missing");
    }

    #[test]
    fn a_resolved_directory_is_located_inside_the_root() {
        let (dir, root) = scratch();
        symlink("/sub/deeper", dir.path().join("root/link")).unwrap();
        let found = root.resolve(Path::new("link")).unwrap();
        assert_eq!(root.locate(&found).unwrap(), Path::new("/sub/deeper"));
        assert_eq!(root.locate(&root.resolve(Path::new("")).unwrap()).unwrap(), Path::new("/"));
        let beside = Dir::open(&dir.path().join("outside")).unwrap();
        assert!(root.locate(&beside).is_err(), "a directory beside the root is not inside it");
    }

    #[test]
    fn a_walk_tells_its_caller_where_it_is() {
        let (dir, root) = scratch();
        symlink("/sub", dir.path().join("root/absolute")).unwrap();
        let mut walk = root.walk(Path::new("sub/deeper/../../absolute/deeper/."), Bounds::default()).unwrap();
        let mut seen = Vec::new();
        while let Some(name) = walk.next_name().unwrap() {
            seen.push((name.clone(), walk.depth(), walk.is_last()));
            if walk.dir().stat_at(&name).unwrap().is_symlink() {
                walk.follow(&name).unwrap();
            } else {
                walk.enter(&name).unwrap();
            }
        }
        let expect = [("sub", 0, false), ("deeper", 1, false), ("absolute", 0, false), ("sub", 0, false), ("deeper", 1, true)];
        let seen: Vec<_> = seen.iter().map(|(name, depth, last)| (name.to_str().unwrap(), *depth, *last)).collect();
        assert_eq!(seen, expect);
        assert_eq!(walk.path(), Path::new("/sub/deeper"));
        assert_eq!(identity(walk.dir()), inside(&dir, "sub/deeper"));
        let bounded = Bounds { links: 0, ..Bounds::default() };
        let mut walk = root.walk(Path::new("absolute"), bounded).unwrap();
        let name = walk.next_name().unwrap().unwrap();
        assert!(matches!(walk.follow(&name), Err(WalkError::TooManySymlinks(0))));
    }

    #[test]
    fn names_refuse_dot_dot_and_fold_keeps_it_at_the_root() {
        assert_eq!(names(b"/a/./b//c/").unwrap(), [OsStr::new("a"), OsStr::new("b"), OsStr::new("c")]);
        assert_eq!(names(b"a/../b"), Err(DotDot));
        assert_eq!(names(b"./"), Ok(vec![]));
        assert_eq!(fold(Path::new("/a/../../b/./c/..")), Path::new("/b"));
        assert_eq!(fold(Path::new("/../../etc")), Path::new("/etc"));
    }
}
