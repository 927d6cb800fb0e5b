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

#[path = "../build/support.rs"]
mod support;

use std::path::{Path, PathBuf};
// Only the generator's diagnostics end a build here; the copy fails through `support`.
#[cfg(feature = "regenerate")]
use std::process::exit;

use support::{env_path, write_if_changed};

/// Where this crate's outputs live in the workspace, and in `OUT_DIR` once stripped of it.
#[cfg(feature = "regenerate")]
const PREFIX: &str = "typed";

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
    support::checked_in_rust(manifest)
}
