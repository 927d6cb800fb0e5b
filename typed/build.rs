//! Puts `checkfu-wire-typed`'s generated Rust into `OUT_DIR/generated/`, where `src/`
//! includes it from: the same pipeline and the same two ways as the runtime's `build.rs`.
//!
//! - With the `regenerate` feature (the default) it runs the generator over the
//!   workspace's catalog, schemas and templates, and keeps the outputs under
//!   `typed/generated/` (every schema's whole module and the typed tables), written to
//!   `OUT_DIR/generated/…`.
//! - Without it, it copies the checked-in `typed/generated/*.rs` there unchanged;
//!   `checkfu-wire check` proves them identical to a fresh generation.
//!
//! It never writes outside `OUT_DIR`: only `checkfu-wire generate` writes `typed/generated/`.

use std::path::{Path, PathBuf};
use std::process::exit;

/// Where this crate's outputs live in the workspace, and in `OUT_DIR` once stripped of it.
#[cfg(feature = "regenerate")]
const PREFIX: &str = "typed";
#[cfg(not(feature = "regenerate"))]
const GENERATED: &str = "generated";

fn main() {
    let manifest = env_path("CARGO_MANIFEST_DIR");
    let out_dir = env_path("OUT_DIR");
    for (path, bytes) in outputs(&manifest) {
        write_if_changed(&out_dir.join(path), &bytes);
    }
}

/// This crate's outputs of a fresh generation, relative to this crate.
#[cfg(feature = "regenerate")]
fn outputs(manifest: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    use checkfu_wire_codegen as generator;
    let Some(root) = manifest.parent() else {
        eprintln!("error: {} has no parent (the workspace root)", manifest.display());
        exit(1);
    };
    for input in generator::inputs(root) {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    match generator::generate(root) {
        // The runtime's build prints the warnings; they are the same.
        Ok(generation) => generation
            .outputs
            .into_iter()
            .filter_map(|output| Some((output.path.strip_prefix(PREFIX).ok()?.to_path_buf(), output.contents.into_bytes())))
            .collect(),
        Err(diagnostics) => {
            eprintln!("{diagnostics}");
            exit(1);
        }
    }
}

/// The checked-in Rust under `typed/generated/`, relative to this crate.
#[cfg(not(feature = "regenerate"))]
fn outputs(manifest: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut outputs = Vec::new();
    let mut dirs = vec![PathBuf::from(GENERATED)];
    while let Some(dir) = dirs.pop() {
        println!("cargo:rerun-if-changed={}", manifest.join(&dir).display());
        let entries = std::fs::read_dir(manifest.join(&dir)).unwrap_or_else(|e| fail(&manifest.join(&dir), &e));
        for entry in entries {
            let path = entry.unwrap_or_else(|e| fail(&manifest.join(&dir), &e)).path();
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
        eprintln!("error: no generated Rust under {}; run `cargo run -- generate`", manifest.join(GENERATED).display());
        exit(1);
    }
    outputs
}

fn env_path(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(value) => PathBuf::from(value),
        None => {
            eprintln!("error: {name} is not set (build.rs runs under cargo)");
            exit(1);
        }
    }
}

fn fail(path: &Path, error: &std::io::Error) -> ! {
    eprintln!("error: {}: {error}", path.display());
    exit(1);
}

fn write_if_changed(target: &Path, bytes: &[u8]) {
    if std::fs::read(target).is_ok_and(|old| old == bytes) {
        return;
    }
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| fail(dir, &e));
    }
    std::fs::write(target, bytes).unwrap_or_else(|e| fail(target, &e));
}
