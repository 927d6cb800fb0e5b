//! The harness's own `HOME`: a fresh private directory per session, so a user's real
//! credentials and configuration are never read or written, with the files a launch
//! recipe or `--home-file` asks for written into it.

use std::io;
use std::path::{Component, Path, PathBuf};

use super::workspace;

/// A file that cannot be written into the home.
#[derive(Debug, thiserror::Error)]
pub enum HomeFileError {
    #[error("`{0}` is not a relative path inside the home (no `/` at the start, no `..`)")]
    Outside(String),
    #[error("cannot create {}: {source}", path.display())]
    Create { path: PathBuf, source: io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// A directory made for one session's harness and removed with it.
#[derive(Debug)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    pub fn create() -> io::Result<Home> {
        let home = Home { root: workspace::private_dir("checkfu-probe-home")? };
        std::fs::create_dir(home.tmp())?;
        Ok(home)
    }

    /// Its temporary directory, made with it: the harness's `TMPDIR`.
    pub fn tmp(&self) -> PathBuf {
        self.root.join(".tmp")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Removes it now, saying what could not be removed (dropping it says nothing).
    pub fn remove(mut self) -> io::Result<()> {
        // Dropping it with an empty root removes nothing: the removal is this one.
        let root = std::mem::take(&mut self.root);
        checkfu_wire_sandbox::dir::remove_tree(&root)
    }

    /// The XDG base directories inside it, as `(variable, path)`.
    pub fn xdg(&self) -> [(&'static str, PathBuf); 4] {
        [
            ("XDG_CONFIG_HOME", self.root.join(".config")),
            ("XDG_DATA_HOME", self.root.join(".local/share")),
            ("XDG_STATE_HOME", self.root.join(".local/state")),
            ("XDG_CACHE_HOME", self.root.join(".cache")),
        ]
    }

    /// Writes `contents` at `relative` inside the home; the path must stay inside it
    /// (relative, no `..`), and its directories are made.
    pub fn write(&self, relative: &str, contents: &str) -> Result<(), HomeFileError> {
        let path = Path::new(relative);
        if relative.is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(HomeFileError::Outside(relative.to_owned()));
        }
        let target = self.root.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|source| HomeFileError::Create { path: parent.to_path_buf(), source })?;
        }
        std::fs::write(&target, contents).map_err(|source| HomeFileError::Write { path: target, source })
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        // The harness may have made directories in it unreadable or unwritable (mode 000):
        // the removal gives them back to their owner on the way down.
        if !self.root.as_os_str().is_empty() {
            let _ = checkfu_wire_sandbox::dir::remove_tree(&self.root);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_stay_inside_and_the_home_goes_with_its_session() {
        let home = Home::create().expect("home");
        let root = home.root().to_path_buf();
        home.write(".codex/config.toml", "x = 1\n").expect("writes");
        assert_eq!(std::fs::read_to_string(root.join(".codex/config.toml")).expect("reads"), "x = 1\n");
        assert!(home.write("../escape", "").is_err());
        assert!(home.write("/etc/passwd", "").is_err());
        drop(home);
        assert!(!root.exists());
    }
}
