//! Puts the runtime's generated Rust into `OUT_DIR`, where `src/` includes it from.
//!
//! - With the `regenerate` feature (this repository's own builds: the `checkfu-wire`
//!   command's crate turns it on) it runs the same pipeline as `checkfu-wire generate` over
//!   the catalog, schemas and templates, on every input change, and fails the build with the
//!   generator's diagnostics when the catalog is not realizable.
//! - Without it (a dependent crate, by default) it copies the checked-in `generated/*.rs`
//!   files unchanged: no generator is compiled, and `checkfu-wire check`
//!   in CI proves those files identical to a fresh generation, so either way the Rust that
//!   gets compiled is the same bytes (the unit test in `src/regeneration/` compares them).
//!
//! Either way it writes only into `OUT_DIR`, mirroring the checked-in layout there
//! (`OUT_DIR/generated/…`), and never touches `generated/` or `docs/`: only
//! `checkfu-wire generate` writes them, so a build cannot hide drift.

#[path = "build/support.rs"]
mod support;

use std::path::{Path, PathBuf};
// Only the generator's diagnostics end a build here; the copy fails through `support`.
#[cfg(feature = "regenerate")]
use std::process::exit;

use support::{env_path, write_if_changed};

fn main() {
    let root = env_path("CARGO_MANIFEST_DIR");
    let out_dir = env_path("OUT_DIR");
    for (path, bytes) in outputs(&root) {
        write_if_changed(&out_dir.join(path), &bytes);
    }
}

/// Every output of a fresh generation, relative to the project root.
#[cfg(feature = "regenerate")]
fn outputs(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    use checkfu_wire_codegen as generator;
    for input in generator::inputs(root) {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    match generator::generate(root) {
        Ok(generation) => {
            for warning in &generation.warnings {
                println!("cargo:warning={warning}");
            }
            generation.outputs.into_iter().map(|output| (output.path, output.contents.into_bytes())).collect()
        }
        Err(diagnostics) => {
            eprintln!("{diagnostics}");
            exit(1);
        }
    }
}

/// The checked-in Rust under `generated/`, relative to the project root.
#[cfg(not(feature = "regenerate"))]
fn outputs(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    support::checked_in_rust(root)
}
