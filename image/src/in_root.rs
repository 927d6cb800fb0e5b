//! Directories the probe makes inside an unpacked root before any runtime starts: the
//! working directory and the mount points, resolved as the container will see them.
//!
//! A runtime creates a missing mount point itself, and bubblewrap does so before it switches
//! roots, while the host's root is still reachable: an image whose `WorkingDir` climbs out
//! (`../oldroot/tmp/x`), or whose `/workspace` is a symlink to `../oldroot/…`, had it create
//! those directories on the host. So the root is held by descriptor ([`open`], or a stored
//! image's, the one its seal was checked through), every path is resolved beneath it under
//! the sandbox's one rule ([`Root::resolve`]: `..` and absolute symlinks stop at the root,
//! as they do inside the container), missing directories are made there, and the runtime is
//! given the result with every symlink already resolved ([`Root::locate`]), which exists: it
//! creates nothing. The path itself may hold no `..` ([`names`]): it is refused, not folded.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use checkfu_wire_sandbox::root::{names, ResolveError, Root};

/// The most components a working directory may have (a bound on the walk, far above any
/// real image's).
const MAX_COMPONENTS: usize = 256;

/// Why a directory could not be made inside the image: each names the path and what is
/// wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum InRootError {
    #[error("a directory inside the image of {0} bytes: at most 4096")]
    TooLong(usize),
    #[error("the directory {path:?} inside the image: {why}")]
    Refused { path: String, why: String },
    #[error("the image's root {}: {source}", root.display())]
    Root { root: PathBuf, source: io::Error },
    #[error("the mount point {} is not UTF-8", .0.display())]
    NotUtf8(PathBuf),
    #[error("cannot mount {path} inside the image: the image has a symlink on the way (it resolves to {resolved})")]
    SymlinkOnTheWay { path: String, resolved: String },
}

/// The image's root at `path`, held by descriptor: what every function here resolves in.
pub fn open(path: &Path) -> Result<Root, InRootError> {
    Root::open(path).map_err(|source| InRootError::Root { root: path.to_owned(), source })
}

/// Makes the directory `path` names inside the image at `root` (an absolute path as the
/// container sees it), and returns it with every symlink resolved. `Err` names the path and
/// what is wrong: not absolute, a `..` component, a component that is not a directory or a
/// symlink to nothing.
pub fn make_dir(root: &Root, path: &str) -> Result<String, InRootError> {
    let refuse = |why: &str| InRootError::Refused { path: path.to_owned(), why: why.to_owned() };
    resolve_dir(root, path, true)?.ok_or_else(|| refuse("it could not be made"))
}

/// [`make_dir`] without making anything: `None` when a component is missing. A root the
/// probe must not write (a stored image's, [`super::store`]) is asked this first.
pub fn find_dir(root: &Root, path: &str) -> Result<Option<String>, InRootError> {
    resolve_dir(root, path, false)
}

/// Resolves `path` beneath `root` as the container sees it ([`Root::resolve`]), making
/// each missing component when `create` (else answering `None` at the first one missing).
fn resolve_dir(root: &Root, path: &str, create: bool) -> Result<Option<String>, InRootError> {
    let refuse = |why: &str| InRootError::Refused { path: path.to_owned(), why: why.to_owned() };
    if path.len() > 4096 {
        return Err(InRootError::TooLong(path.len()));
    }
    let given = Path::new(path);
    if !given.is_absolute() {
        return Err(refuse("not an absolute path"));
    }
    let components = names(given.as_os_str().as_bytes()).map_err(|_| refuse("it has a `..` component"))?;
    if components.len() > MAX_COMPONENTS {
        return Err(refuse(&format!("more than {MAX_COMPONENTS} components")));
    }
    let mut prefix = PathBuf::new();
    let mut dir = root.resolve(&prefix).map_err(|e| refuse(&e.to_string()))?;
    for name in components {
        prefix.push(name);
        dir = match root.resolve(&prefix) {
            Ok(fd) => fd,
            Err(ResolveError::Missing) if !create => return Ok(None),
            Err(ResolveError::Missing) => {
                // The parent was resolved beneath the root; the name is made in it, not
                // through any link (mkdirat never follows its last component).
                dir.mkdir_at(name, 0o755).map_err(|e| match e.raw_os_error() {
                    Some(libc::EEXIST) => refuse(&format!("{} is a symlink to nothing", prefix.display())),
                    _ => refuse(&format!("cannot make {}: {e}", prefix.display())),
                })?;
                root.resolve(&prefix).map_err(|e| refuse(&e.to_string()))?
            }
            Err(ResolveError::NotADirectory) => return Err(refuse(&format!("{} is not a directory", prefix.display()))),
            Err(e) => return Err(refuse(&format!("{}: {e}", prefix.display()))),
        };
    }
    let inside = root.locate(&dir).map_err(|e| refuse(&e.to_string()))?;
    Ok(Some(inside.display().to_string()))
}

/// [`make_dir`] for a mount point that must be exactly `path` (a host directory the
/// runtime binds at its own path, `/tmp`, `/dev`, `/proc`): a symlink on the way is refused.
pub fn make_mount_point(root: &Root, path: &Path) -> Result<(), InRootError> {
    let text = path.to_str().ok_or_else(|| InRootError::NotUtf8(path.to_owned()))?;
    let made = make_dir(root, text)?;
    exactly(text, made)
}

/// [`make_mount_point`] without making anything: `false` when a component is missing.
pub fn find_mount_point(root: &Root, path: &Path) -> Result<bool, InRootError> {
    let text = path.to_str().ok_or_else(|| InRootError::NotUtf8(path.to_owned()))?;
    match find_dir(root, text)? {
        Some(found) => exactly(text, found).map(|()| true),
        None => Ok(false),
    }
}

fn exactly(path: &str, resolved: String) -> Result<(), InRootError> {
    if Path::new(&resolved) != Path::new(path) {
        return Err(InRootError::SymlinkOnTheWay { path: path.to_owned(), resolved });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn scratch(name: &str) -> (crate::TempDir, Root, PathBuf, PathBuf) {
        let dir = crate::TempDir::new(&format!("checkfu-in-root-{name}")).unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&outside).unwrap();
        (dir, open(&root).unwrap(), root, outside)
    }

    #[test]
    fn a_working_directory_is_made_inside_the_root() {
        let (_dir, root, path, _) = scratch("plain");
        assert_eq!(make_dir(&root, "/workspace/x/sub").unwrap(), "/workspace/x/sub");
        assert!(path.join("workspace/x/sub").is_dir());
        assert_eq!(make_dir(&root, "/").unwrap(), "/");
    }

    #[test]
    fn a_climbing_path_is_refused_and_a_climbing_symlink_stays_inside() {
        let (_dir, root, path, outside) = scratch("climb");
        for path in ["../oldroot/tmp/x/sub", "/workspace/../../x", "relative"] {
            assert!(make_dir(&root, path).is_err(), "{path}");
        }
        // `/workspace` -> a path out of the root, relative and absolute: both resolve
        // inside it, as they do in the container; nothing is made outside.
        let up = format!("../../..{}", outside.display());
        symlink(&up, path.join("workspace")).unwrap();
        symlink(&outside, path.join("absolute")).unwrap();
        // While the link's target does not exist inside the root, it is a link to nothing.
        assert!(make_dir(&root, "/workspace/x/sub").is_err());
        assert!(make_dir(&root, "/absolute/y").is_err());
        // Once it does, the path is made there.
        std::fs::create_dir_all(path.join(outside.strip_prefix("/").unwrap())).unwrap();
        let made = make_dir(&root, "/workspace/x/sub").unwrap();
        assert_eq!(made, format!("{}/x/sub", outside.display()));
        assert!(path.join(made.trim_start_matches('/')).is_dir());
        make_dir(&root, "/absolute/y").unwrap();
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing made outside the root");
        assert!(make_mount_point(&root, Path::new("/workspace/x")).is_err());
        make_mount_point(&root, &outside.join("x")).unwrap();
    }

    #[test]
    fn a_file_or_a_dangling_link_on_the_way_is_refused() {
        let (_dir, root, path, _) = scratch("file");
        std::fs::write(path.join("file"), b"x").unwrap();
        assert!(make_dir(&root, "/file/sub").unwrap_err().to_string().contains("not a directory"));
        symlink("/nowhere/at/all", path.join("dangling")).unwrap();
        let error = make_dir(&root, "/dangling").unwrap_err().to_string();
        assert!(error.contains("nothing") || error.contains("No such"), "{error}");
    }
}
