//! The Rust files of a generated tree, read for comparison: shared by the runtime's and the
//! typed crate's regeneration tests (the typed crate includes this file with `#[path]`), which hold the
//! Rust a build compiled in `OUT_DIR` to the checked-in copy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, by its path relative to `dir`.
pub fn rust_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let entries = std::fs::read_dir(dir.join(&relative)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(&relative).display()));
        for entry in entries {
            let entry = entry.expect("directory entry");
            let name = relative.join(entry.file_name());
            let path = entry.path();
            if path.is_dir() {
                pending.push(name);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.insert(name, std::fs::read(&path).expect("read"));
            }
        }
    }
    files
}

/// Asserts that the Rust under `OUT_DIR/generated/` is the Rust under `checked_in`, file
/// for file and byte for byte; `label` names the checked-in directory in messages.
pub fn assert_compiled_is_checked_in(checked_in: &Path, out_dir: &Path, label: &str) {
    let checked = rust_files(checked_in);
    let compiled = rust_files(&out_dir.join("generated"));
    // The tables, the schema module index and one module per schema file at least.
    assert!(checked.len() >= 4, "{label} holds {} Rust files", checked.len());
    assert_eq!(compiled.keys().collect::<Vec<_>>(), checked.keys().collect::<Vec<_>>(), "the same files");
    let build = if cfg!(feature = "regenerate") { "a fresh generation" } else { "the copy build.rs made" };
    for (path, bytes) in &checked {
        assert!(compiled[path] == *bytes, "OUT_DIR/generated/{} ({build}) differs from {label}{0}", path.display());
    }
}
