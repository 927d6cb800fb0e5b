//! `generate` and `check`: the write and verify halves of the same pipeline.

use std::path::Path;

use checkfu_wire_codegen::acknowledged::Acknowledged;
use checkfu_wire_codegen::{drift, generate as run_pipeline, write_changed, Change, Output, CATALOG_FILE, GENERATE_COMMAND};

/// Exit status of `generate` and `check` when `root` is not a project root.
const NOT_A_PROJECT: i32 = 2;

/// Whether `root` holds a catalog; if not, says so with the way out, instead of letting
/// every input fail to load.
fn is_project(root: &Path) -> bool {
    if root.join(CATALOG_FILE).is_file() {
        return true;
    }
    eprintln!("error: {} is not a checkfu-wire project root: it has no {CATALOG_FILE}", root.display());
    eprintln!("help: run from the project's directory, or pass `--root DIR` naming it");
    false
}

/// Runs the pipeline in memory, printing its warnings (and with `verbose` the acknowledged
/// ones), or its diagnostics on failure.
fn outputs(root: &Path, verbose: bool) -> Option<Vec<Output>> {
    match run_pipeline(root) {
        Ok(generation) => {
            for warning in &generation.warnings {
                eprintln!("warning: {warning}");
            }
            if verbose {
                show_acknowledged(&generation.acknowledged);
            }
            Some(generation.outputs)
        }
        Err(diagnostics) => {
            eprintln!("{diagnostics}");
            None
        }
    }
}

/// Each review once, followed by the warnings it covers.
fn show_acknowledged(acknowledged: &[Acknowledged]) {
    let mut reviews: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for item in acknowledged {
        match reviews.iter_mut().find(|(what, why, _)| *what == item.what && *why == item.why) {
            Some((_, _, warnings)) => warnings.push(&item.warning),
            None => reviews.push((&item.what, &item.why, vec![&item.warning])),
        }
    }
    for (what, why, warnings) in reviews {
        eprintln!("acknowledged: {what}\n  = why: {why}");
        for warning in warnings {
            eprintln!("  = warning: {warning}");
        }
    }
}

pub fn generate(root: &Path, verbose: bool) -> i32 {
    if !is_project(root) {
        return NOT_A_PROJECT;
    }
    let Some(outputs) = outputs(root, verbose) else { return 1 };
    match write_changed(root, &outputs) {
        Ok(written) if written.is_empty() => {
            eprintln!("checkfu-wire: {} outputs up to date", outputs.len());
            0
        }
        Ok(written) => {
            for (path, change) in &written {
                let done = match change {
                    Change::Wrote => "wrote",
                    Change::Removed => "removed",
                };
                eprintln!("checkfu-wire: {done} {}", path.display());
            }
            0
        }
        Err(e) => {
            eprintln!("error: writing outputs failed: {e}");
            1
        }
    }
}

pub fn check(root: &Path, verbose: bool) -> i32 {
    if !is_project(root) {
        return NOT_A_PROJECT;
    }
    let Some(outputs) = outputs(root, verbose) else { return 1 };
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
