//! Writing outputs and detecting drift.
//!
//! `generate` writes only files whose bytes change, each atomically (a temporary file in
//! the same directory, then a rename), and stages every temporary file before renaming any,
//! so an I/O failure while staging leaves every output as it was. `check` compares the
//! checked-in files with a fresh in-memory generation and reports a unified diff per file.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use similar::TextDiff;

/// One generated file: its path relative to the project root, and its contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub path: PathBuf,
    pub contents: String,
}

/// What [`write_changed`] did to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Wrote,
    /// A module file of a schema that is gone (removed or renamed).
    Removed,
}

/// Writes the outputs whose bytes differ from what is on disk and removes stale module
/// files; returns each path with what was done to it.
pub fn write_changed(root: &Path, outputs: &[Output]) -> io::Result<Vec<(PathBuf, Change)>> {
    let mut staged = Vec::new();
    let result = stage(root, outputs, &mut staged);
    if let Err(e) = result {
        for (temp, _) in &staged {
            let _ = fs::remove_file(temp);
        }
        return Err(e);
    }
    let mut written = Vec::new();
    for (temp, output) in staged {
        fs::rename(&temp, root.join(&output.path))?;
        written.push((output.path.clone(), Change::Wrote));
    }
    // A schema that was removed or renamed leaves its module file behind; it is no output
    // any more, so it goes.
    for path in stale(root, outputs) {
        fs::remove_file(root.join(&path))?;
        written.push((path, Change::Removed));
    }
    Ok(written)
}

/// Files in the per-schema module directories (the runtime's and `checkfu-wire-typed`'s)
/// that no output produces.
fn stale(root: &Path, outputs: &[Output]) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    for dir in [crate::SCHEMA_MODULES_DIR, crate::TYPED_SCHEMA_MODULES_DIR] {
        let dir = Path::new(dir);
        let Ok(entries) = fs::read_dir(root.join(dir)) else { continue };
        stale.extend(
            entries
                .filter_map(|e| e.ok())
                .map(|e| dir.join(e.file_name()))
                .filter(|p| p.extension().is_some_and(|x| x == "rs") && !outputs.iter().any(|o| o.path == *p)),
        );
    }
    stale.sort();
    stale
}

fn stage<'o>(root: &Path, outputs: &'o [Output], staged: &mut Vec<(PathBuf, &'o Output)>) -> io::Result<()> {
    for output in outputs {
        let target = root.join(&output.path);
        if fs::read(&target).is_ok_and(|bytes| bytes == output.contents.as_bytes()) {
            continue;
        }
        let dir = target.parent().unwrap_or(root);
        fs::create_dir_all(dir)?;
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        fs::write(&temp, output.contents.as_bytes())?;
        staged.push((temp, output));
    }
    Ok(())
}

/// A checked-in output that differs from a fresh generation.
#[derive(Clone, Debug)]
pub struct Drift {
    pub path: PathBuf,
    /// Unified diff from the checked-in file to the expected one.
    pub diff: String,
}

/// Compares each output with the checked-in file.
pub fn drift(root: &Path, outputs: &[Output]) -> Vec<Drift> {
    let mut drifted = Vec::new();
    for output in outputs {
        let on_disk = fs::read(root.join(&output.path)).ok();
        if on_disk.as_deref() == Some(output.contents.as_bytes()) {
            continue;
        }
        let old = on_disk.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        let name = output.path.display().to_string();
        let diff = TextDiff::from_lines(&old, &output.contents)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{name} (checked in)"), &format!("b/{name} (generated)"))
            .to_string();
        let diff = if diff.is_empty() { format!("{name}: bytes differ (line endings or encoding)\n") } else { diff };
        drifted.push(Drift { path: output.path.clone(), diff });
    }
    for path in stale(root, outputs) {
        let diff = format!("{}: no longer generated; `generate` removes it\n", path.display());
        drifted.push(Drift { path, diff });
    }
    drifted
}
