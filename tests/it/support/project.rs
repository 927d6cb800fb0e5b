//! Scratch copies of the project's inputs and outputs, for runs of `generate` and `check`
//! that may edit them.

use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root: this crate (`checkfu-wire-tests`) is its `tests/` directory.
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read_dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            fs::copy(&path, to.join(entry.file_name())).expect("copy");
        }
    }
}

/// A copy of everything `generate` reads and writes, removed when the guard drops.
pub fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    // typed/generated/ is checkfu-wire-typed's share of the outputs.
    for sub in ["catalog", "schemas", "templates", "generated", "docs", "golden", "typed/generated"] {
        copy_dir(&project_root().join(sub), &dir.path().join(sub));
    }
    dir
}
