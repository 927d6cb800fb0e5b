//! The temporary workspace a session hands the harness as its `cwd`, and the confinement of
//! the harness's `fs/*` requests to it.
//!
//! Confinement is decided on resolved paths: a path must be absolute (ACP requires it), and
//! what it names after `..` and every symlink are resolved must lie inside the workspace's
//! own resolved root. A write resolves the parent directory and then opens the file with
//! `O_NOFOLLOW`, so a symlink planted in place of the file is refused rather than followed.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// The largest file a harness may read through `fs/read_text_file`.
pub const MAX_READ: u64 = 16 * 1024 * 1024;

/// A directory created for one session and removed with it.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    /// Where the harness sees the workspace when that is not its own path: the working
    /// directory of an image it runs in. Paths under it name the same files as under `root`.
    alias: Option<PathBuf>,
}

/// Why an `fs/*` request was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    NotAbsolute,
    Outside,
    NotFound,
    Io(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotAbsolute => f.write_str("the path is not absolute"),
            Refusal::Outside => f.write_str("the path resolves outside the session's workspace"),
            Refusal::NotFound => f.write_str("no such file in the workspace"),
            Refusal::Io(e) => write!(f, "{e}"),
        }
    }
}

impl Workspace {
    /// Creates a fresh, private directory under the system's temporary directory.
    pub fn create() -> io::Result<Workspace> {
        Ok(Workspace { root: private_dir("checkfu-probe")?, alias: None })
    }

    /// The resolved root, on this machine.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Removes it now, saying what could not be removed (dropping it says nothing).
    pub fn remove(mut self) -> io::Result<()> {
        // Dropping it with an empty root removes nothing: the removal is this one.
        let root = std::mem::take(&mut self.root);
        checkfu_wire_sandbox::dir::remove_tree(&root)
    }

    /// Says that the harness sees the workspace at `alias` (an image's working directory,
    /// where the runner mounts it); `/` is no alias (the workspace is then seen at its own
    /// path).
    pub fn see_at(&mut self, alias: &Path) {
        self.alias = Some(alias.to_path_buf()).filter(|a| a.is_absolute() && a != Path::new("/"));
    }

    /// The root as the harness sees it: its `cwd` in `session/new`.
    pub fn harness_root(&self) -> &Path {
        self.alias.as_deref().unwrap_or(&self.root)
    }

    /// A path under the root as the harness sees it.
    pub fn harness_path(&self, path: &Path) -> PathBuf {
        match (&self.alias, path.strip_prefix(&self.root)) {
            (Some(alias), Ok(rest)) if rest.as_os_str().is_empty() => alias.clone(),
            (Some(alias), Ok(rest)) => alias.join(rest),
            _ => path.to_path_buf(),
        }
    }

    /// A path the harness gave, on this machine: under the alias, the same place under the
    /// root (lexically; what it then names is confined as any path is).
    fn local(&self, path: &Path) -> PathBuf {
        match self.alias.as_deref().map(|alias| path.strip_prefix(alias)) {
            Some(Ok(rest)) => self.root.join(rest),
            _ => path.to_path_buf(),
        }
    }

    /// Resolves `path` for reading: it must name an existing file inside the workspace.
    pub fn resolve_read(&self, path: &str) -> Result<PathBuf, Refusal> {
        let path = Path::new(path);
        if !path.is_absolute() {
            return Err(Refusal::NotAbsolute);
        }
        let path = &self.local(path);
        match path.canonicalize() {
            Ok(resolved) if resolved.starts_with(&self.root) => Ok(resolved),
            Ok(_) => Err(Refusal::Outside),
            // A path that does not exist may still point outside; say which it is lexically.
            Err(_) if !lexically_inside(path, &self.root) => Err(Refusal::Outside),
            Err(_) => Err(Refusal::NotFound),
        }
    }

    /// Resolves `path` for writing: its parent must exist inside the workspace and its last
    /// component must be a plain name.
    pub fn resolve_write(&self, path: &str) -> Result<PathBuf, Refusal> {
        let path = Path::new(path);
        if !path.is_absolute() {
            return Err(Refusal::NotAbsolute);
        }
        let path = &self.local(path);
        let (Some(parent), Some(Component::Normal(name))) = (path.parent(), path.components().next_back()) else {
            return Err(Refusal::Outside);
        };
        match parent.canonicalize() {
            Ok(dir) if dir.starts_with(&self.root) => Ok(dir.join(name)),
            Ok(_) => Err(Refusal::Outside),
            Err(_) if !lexically_inside(path, &self.root) => Err(Refusal::Outside),
            Err(_) => Err(Refusal::NotFound),
        }
    }

    /// Reads a text file for `fs/read_text_file`: `line` is 1-based, `limit` a line count.
    pub fn read_text(&self, path: &str, line: Option<u64>, limit: Option<u64>) -> Result<String, Refusal> {
        let resolved = self.resolve_read(path)?;
        let file = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&resolved).map_err(|e| Refusal::Io(e.to_string()))?;
        let mut text = String::new();
        file.take(MAX_READ).read_to_string(&mut text).map_err(|e| Refusal::Io(e.to_string()))?;
        if line.is_none() && limit.is_none() {
            return Ok(text);
        }
        let skip = line.unwrap_or(1).saturating_sub(1) as usize;
        let take = limit.map_or(usize::MAX, |l| l as usize);
        Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
    }

    /// Writes a text file for `fs/write_text_file`, creating or truncating it.
    pub fn write_text(&self, path: &str, content: &str) -> Result<(), Refusal> {
        let resolved = self.resolve_write(path)?;
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).custom_flags(libc::O_NOFOLLOW).open(&resolved).map_err(
            |e| match e.raw_os_error() {
                // O_NOFOLLOW on a symlink: the link would lead the write elsewhere.
                Some(libc::ELOOP) => Refusal::Outside,
                _ => Refusal::Io(e.to_string()),
            },
        )?;
        file.write_all(content.as_bytes()).map_err(|e| Refusal::Io(e.to_string()))
    }
}

pub use checkfu_wire_sandbox::tempdir::private_dir;

impl Drop for Workspace {
    fn drop(&mut self) {
        // The harness may have made directories in it unreadable or unwritable (mode 000):
        // the removal gives them back to their owner on the way down.
        if !self.root.as_os_str().is_empty() {
            let _ = checkfu_wire_sandbox::dir::remove_tree(&self.root);
        }
    }
}

/// Whether `path`, with `.` and `..` folded lexically by the one rule of
/// [`checkfu_wire_sandbox::root`] (`..` at `/` stays there), lies under `root`.
fn lexically_inside(path: &Path, root: &Path) -> bool {
    checkfu_wire_sandbox::root::fold(path).starts_with(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn confinement_holds_against_dotdot_symlinks_and_relative_paths() {
        let ws = Workspace::create().expect("workspace");
        let root = ws.root().to_path_buf();
        fs::write(root.join("a.txt"), "one\ntwo\nthree\n").expect("write");
        let inside = root.join("a.txt");
        assert_eq!(ws.read_text(inside.to_str().unwrap(), Some(2), Some(1)).unwrap(), "two\n");
        assert_eq!(ws.resolve_read("a.txt"), Err(Refusal::NotAbsolute));
        let escape = format!("{}/../../etc/hostname", root.display());
        assert_eq!(ws.resolve_read(&escape), Err(Refusal::Outside));
        assert_eq!(ws.resolve_read("/etc/hostname"), Err(Refusal::Outside));
        std::os::unix::fs::symlink("/etc", root.join("etc")).expect("symlink");
        assert_eq!(ws.resolve_read(&format!("{}/etc/hostname", root.display())), Err(Refusal::Outside));
        assert_eq!(ws.resolve_write(&format!("{}/etc/new", root.display())), Err(Refusal::Outside));
        // A symlink in place of the file itself: the write does not follow it.
        let target = tempfile::NamedTempFile::new().expect("temp");
        std::os::unix::fs::symlink(target.path(), root.join("link")).expect("symlink");
        assert_eq!(ws.write_text(&format!("{}/link", root.display()), "x"), Err(Refusal::Outside));
        assert_eq!(fs::read_to_string(target.path()).unwrap(), "");
        ws.write_text(&format!("{}/b.txt", root.display()), "hi").expect("write inside");
        assert_eq!(fs::read_to_string(root.join("b.txt")).unwrap(), "hi");
        assert_eq!(ws.resolve_read(&format!("{}/missing", root.display())), Err(Refusal::NotFound));
        drop(ws);
        assert!(!root.exists());
    }

    #[test]
    fn a_workspace_the_harness_locked_is_still_removed() {
        // What a harness may leave: directories without their owner's permission (000, or
        // write-only), deep, with files under them. (As an ordinary user this is the case
        // that matters; `dirfd`'s tests run it as uid 65534.)
        use std::os::unix::fs::PermissionsExt;
        let ws = Workspace::create().expect("workspace");
        let root = ws.root().to_path_buf();
        let mut deep = root.join("locked");
        for _ in 0..50 {
            deep.push("d");
        }
        fs::create_dir_all(&deep).expect("dirs");
        fs::write(deep.join("f"), "x").expect("file");
        fs::set_permissions(root.join("locked/d"), fs::Permissions::from_mode(0o000)).expect("chmod");
        fs::set_permissions(root.join("locked"), fs::Permissions::from_mode(0o200)).expect("chmod");
        drop(ws);
        assert!(!root.exists());
    }

    #[test]
    fn paths_under_the_alias_name_the_workspace_and_stay_confined() {
        let mut ws = Workspace::create().expect("workspace");
        let root = ws.root().to_path_buf();
        fs::write(root.join("a.txt"), "one\n").expect("write");
        ws.see_at(Path::new("/workspace"));
        assert_eq!(ws.harness_root(), Path::new("/workspace"));
        assert_eq!(ws.read_text("/workspace/a.txt", None, None).unwrap(), "one\n");
        // The workspace's own path still works (the runner mounts it there too).
        assert_eq!(ws.resolve_read(root.join("a.txt").to_str().unwrap()), Ok(root.join("a.txt")));
        ws.write_text("/workspace/b.txt", "two").expect("write through the alias");
        assert_eq!(fs::read_to_string(root.join("b.txt")).unwrap(), "two");
        assert_eq!(ws.resolve_read("/workspace/../etc/hostname"), Err(Refusal::Outside));
        assert_eq!(ws.resolve_read("/workspacex/a.txt"), Err(Refusal::Outside));
        assert_eq!(ws.harness_path(&root.join("sub")), PathBuf::from("/workspace/sub"));
        assert_eq!(ws.harness_path(&root), PathBuf::from("/workspace"));
        // `/` is no alias: the harness sees the workspace at its own path.
        ws.see_at(Path::new("/"));
        assert_eq!(ws.harness_root(), root.as_path());
    }
}
