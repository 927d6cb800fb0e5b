//! Puts the runtime's generated Rust into `OUT_DIR`, where `src/` includes it from.
//!
//! - With the `regenerate` feature (the default, this repository's own builds) it runs the
//!   same pipeline as `checkfu-wire generate` over the catalog, schemas and templates, on
//!   every input change, and fails the build with the generator's diagnostics when the
//!   catalog is not realizable.
//! - Without it (a dependent crate with `default-features = false`) it copies the checked-in
//!   `generated/*.rs` files unchanged: no generator is compiled, and `checkfu-wire check`
//!   in CI proves those files identical to a fresh generation, so either way the Rust that
//!   gets compiled is the same bytes (`tests/regeneration.rs` compares them).
//!
//! Either way it writes only into `OUT_DIR`, mirroring the checked-in layout there
//! (`OUT_DIR/generated/…`), and never touches `generated/` or `docs/`: only
//! `checkfu-wire generate` writes them, so a build cannot hide drift.

use std::path::{Path, PathBuf};
use std::process::exit;

fn main() {
    let root = env_path("CARGO_MANIFEST_DIR");
    let out_dir = env_path("OUT_DIR");
    optional_test_inputs();
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

/// The checked-in Rust under `generated/` (the directory and its subdirectories), relative
/// to the project root.
#[cfg(not(feature = "regenerate"))]
fn outputs(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    const GENERATED: &str = "generated";
    let mut outputs = Vec::new();
    let mut dirs = vec![PathBuf::from(GENERATED)];
    while let Some(dir) = dirs.pop() {
        println!("cargo:rerun-if-changed={}", root.join(&dir).display());
        let entries = std::fs::read_dir(root.join(&dir)).unwrap_or_else(|e| fail(&root.join(&dir), &e));
        for entry in entries {
            let path = entry.unwrap_or_else(|e| fail(&root.join(&dir), &e)).path();
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
        eprintln!("error: no generated Rust under {}; run `cargo run -- generate`", root.join(GENERATED).display());
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

/// Tests that need what a machine may lack (the JSON-Schema-Test-Suite, an installed copy of
/// the TypeScript SDK agent, the real agents, the model SDKs) are compiled as ignored, with their reason, unless the variable
/// naming it is set, so that the test runner never reports them as passed.
fn optional_test_inputs() {
    let inputs = [
        ("JSTS_DIR", "checkfu_jsts"),
        ("CHECKFU_TS_AGENT", "checkfu_ts_agent"),
        // The real ACP agents (tests/real-agents/install.sh DIR) and the model SDKs the relay
        // is checked with (pip install -r tests/relay-sdk/requirements.txt, then
        // CHECKFU_RELAY_SDK=1).
        ("CHECKFU_REAL_AGENTS", "checkfu_real_agents"),
        ("CHECKFU_RELAY_SDK", "checkfu_relay_sdk"),
        // The real one-shot CLIs (tests/real-agents/install-oneshot.sh DIR).
        ("CHECKFU_REAL_ONESHOT", "checkfu_real_oneshot"),
        // Public schemas fetched by tests/public-schemas/fetch.sh DIR.
        ("CHECKFU_PUBLIC_SCHEMAS", "checkfu_public_schemas"),
    ];
    for (variable, cfg) in inputs {
        println!("cargo:rerun-if-env-changed={variable}");
        println!("cargo:rustc-check-cfg=cfg({cfg})");
        if std::env::var_os(variable).is_some() {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}
