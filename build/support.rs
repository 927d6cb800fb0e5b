//! What both build scripts (the runtime's `build.rs` and `typed/build.rs`) do around the
//! generator: read the environment cargo sets, copy the checked-in generated Rust, and write
//! into `OUT_DIR` only the files whose bytes change. Each includes this file with
//! `#[path]`, since a build script cannot depend on a crate of its own workspace without
//! that crate joining every build's graph.

use std::path::{Path, PathBuf};
use std::process::exit;

/// A path cargo gives a build script through the environment.
pub fn env_path(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(value) => PathBuf::from(value),
        None => {
            eprintln!("error: {name} is not set (build.rs runs under cargo)");
            exit(1);
        }
    }
}

pub fn fail(path: &Path, error: &std::io::Error) -> ! {
    eprintln!("error: {}: {error}", path.display());
    exit(1);
}

/// Writes `bytes` to `target` unless it already holds them, so that an unchanged output
/// does not make cargo rebuild what includes it.
pub fn write_if_changed(target: &Path, bytes: &[u8]) {
    if std::fs::read(target).is_ok_and(|old| old == bytes) {
        return;
    }
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| fail(dir, &e));
    }
    std::fs::write(target, bytes).unwrap_or_else(|e| fail(target, &e));
}

/// The checked-in Rust under `base/generated/` (the directory and its subdirectories), each
/// by its path relative to `base`, for a build without the `regenerate` feature. Every file
/// and directory read is watched, so an edit or a new file is noticed.
#[cfg_attr(feature = "regenerate", allow(dead_code))]
pub fn checked_in_rust(base: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    const GENERATED: &str = "generated";
    let mut outputs = Vec::new();
    let mut dirs = vec![PathBuf::from(GENERATED)];
    while let Some(dir) = dirs.pop() {
        println!("cargo:rerun-if-changed={}", base.join(&dir).display());
        let entries = std::fs::read_dir(base.join(&dir)).unwrap_or_else(|e| fail(&base.join(&dir), &e));
        for entry in entries {
            let path = entry.unwrap_or_else(|e| fail(&base.join(&dir), &e)).path();
            let relative = dir.join(path.file_name().unwrap_or_default());
            if path.is_dir() {
                dirs.push(relative);
            } else if path.extension().is_some_and(|x| x == "rs") {
                println!("cargo:rerun-if-changed={}", path.display());
                let bytes = std::fs::read(&path).unwrap_or_else(|e| fail(&path, &e));
                outputs.push((relative, bytes));
            }
        }
    }
    if outputs.is_empty() {
        eprintln!("error: no generated Rust under {}; run `cargo run -- generate`", base.join(GENERATED).display());
        exit(1);
    }
    outputs
}
