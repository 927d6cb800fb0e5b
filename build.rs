//! Regenerates the runtime's tables from the catalog and schemas on every input change.
//!
//! It runs the same pipeline as `checkfu-wire generate`, writes only into `OUT_DIR`, and
//! fails the build with the generator's diagnostics when the catalog is not realizable.
//! The checked-in copies under `generated/` and `docs/` are never touched here: only
//! `checkfu-wire generate` writes them and `checkfu-wire check` verifies them, so a build
//! cannot hide drift.

use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    optional_test_inputs();
    for input in checkfu_wire_codegen::inputs(&root) {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    let outputs = match checkfu_wire_codegen::generate(&root) {
        Ok(generation) => {
            for warning in &generation.warnings {
                println!("cargo:warning={warning}");
            }
            generation.outputs
        }
        Err(diagnostics) => {
            eprintln!("{diagnostics}");
            std::process::exit(1);
        }
    };
    for output in outputs {
        // Mirror the checked-in layout under OUT_DIR: OUT_DIR/generated/…, OUT_DIR/docs/….
        let target = out_dir.join(&output.path);
        write_if_changed(&target, output.contents.as_bytes());
    }
}

fn write_if_changed(target: &Path, bytes: &[u8]) {
    if std::fs::read(target).is_ok_and(|old| old == bytes) {
        return;
    }
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).expect("create a directory under OUT_DIR");
    }
    std::fs::write(target, bytes).expect("write under OUT_DIR");
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
    ];
    for (variable, cfg) in inputs {
        println!("cargo:rerun-if-env-changed={variable}");
        println!("cargo:rustc-check-cfg=cfg({cfg})");
        if std::env::var_os(variable).is_some() {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}
