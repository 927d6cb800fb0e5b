//! A scratch copy of the project's inputs, edited one way per test.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use checkfu_wire_codegen::diagnostic::{Class, Diagnostic, Diagnostics};

pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    /// Copies catalog/, schemas/, templates/ (and generated/, docs/ when asked).
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["catalog", "schemas", "templates", "generated", "docs", "golden"] {
            copy_dir(&project_root().join(sub), &dir.path().join(sub));
        }
        Scratch { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn catalog(&self) -> String {
        fs::read_to_string(self.root().join("catalog/catalog.toml")).expect("read catalog")
    }

    /// Replaces the `n`th (0-based) occurrence of `from` in the catalog; panics when absent
    /// so that a stale edit cannot silently test nothing.
    pub fn edit_nth(&self, from: &str, to: &str, n: usize) {
        let text = self.catalog();
        let (start, _) = text.match_indices(from).nth(n).unwrap_or_else(|| panic!("`{from}` #{n} not in catalog"));
        let edited = format!("{}{}{}", &text[..start], to, &text[start + from.len()..]);
        fs::write(self.root().join("catalog/catalog.toml"), edited).expect("write catalog");
    }

    /// Replaces the first occurrence of `from` after the first occurrence of `anchor`.
    pub fn edit_after(&self, anchor: &str, from: &str, to: &str) {
        let text = self.catalog();
        let base = text.find(anchor).unwrap_or_else(|| panic!("anchor `{anchor}` not in catalog"));
        let offset = text[base..].find(from).unwrap_or_else(|| panic!("`{from}` not after `{anchor}`")) + base;
        let edited = format!("{}{}{}", &text[..offset], to, &text[offset + from.len()..]);
        fs::write(self.root().join("catalog/catalog.toml"), edited).expect("write catalog");
    }

    /// One-based line of the first occurrence of `needle` after `anchor`.
    pub fn line_of(&self, anchor: &str, needle: &str) -> usize {
        let text = self.catalog();
        let base = text.find(anchor).expect("anchor");
        let offset = text[base..].find(needle).expect("needle") + base;
        text[..offset].matches('\n').count() + 1
    }

    pub fn generate_err(&self) -> Diagnostics {
        match checkfu_wire_codegen::generate(self.root()) {
            Ok(_) => panic!("generation succeeded on a broken catalog"),
            Err(d) => d,
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    let Ok(entries) = fs::read_dir(from) else { return };
    fs::create_dir_all(to).expect("mkdir");
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            fs::copy(&path, to.join(entry.file_name())).expect("copy");
        }
    }
}

/// The diagnostics of one class.
pub fn of_class(d: &Diagnostics, class: Class) -> Vec<&Diagnostic> {
    d.items.iter().filter(|i| i.class == class).collect()
}
