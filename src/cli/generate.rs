//! `generate` and `check`: the write and verify halves of the same pipeline.

use std::path::Path;

use checkfu_wire_codegen::{drift, generate as run_pipeline, write_changed, Output, GENERATE_COMMAND};

/// Runs the pipeline in memory, printing its warnings, or its diagnostics on failure.
fn outputs(root: &Path) -> Option<Vec<Output>> {
    match run_pipeline(root) {
        Ok(generation) => {
            for warning in &generation.warnings {
                eprintln!("warning: {warning}");
            }
            Some(generation.outputs)
        }
        Err(diagnostics) => {
            eprintln!("{diagnostics}");
            None
        }
    }
}

pub fn generate(root: &Path) -> i32 {
    let Some(outputs) = outputs(root) else { return 1 };
    match write_changed(root, &outputs) {
        Ok(written) if written.is_empty() => {
            eprintln!("checkfu-wire: {} outputs up to date", outputs.len());
            0
        }
        Ok(written) => {
            for path in &written {
                eprintln!("checkfu-wire: wrote {}", path.display());
            }
            0
        }
        Err(e) => {
            eprintln!("error: writing outputs failed: {e}");
            1
        }
    }
}

pub fn check(root: &Path) -> i32 {
    let Some(outputs) = outputs(root) else { return 1 };
    let drifted = drift(root, &outputs);
    if drifted.is_empty() {
        eprintln!("checkfu-wire: {} outputs match the catalog", outputs.len());
        return 0;
    }
    for d in &drifted {
        print!("{}", d.diff);
        eprintln!("error: {} differs from a fresh generation", d.path.display());
    }
    eprintln!("error: {} generated file(s) drifted; run `{GENERATE_COMMAND}` and commit the result", drifted.len());
    1
}
