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
        // typed/generated/ is checkfu-wire-typed's share of the outputs.
        for sub in ["catalog", "schemas", "templates", "generated", "docs", "golden", "typed/generated"] {
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

/// Everything `generate` checks about a catalog, run in-process on edited text against the
/// project's own schemas, golden vectors and revision lock (read, never written): decoding,
/// parsing, the pinned axis order, validation, realizability and the revision literals.
/// Nothing is rendered, so a check takes milliseconds.
pub struct Checker {
    root: PathBuf,
    schemas: checkfu_wire_codegen::schema::SchemaSet,
}

impl Checker {
    pub fn new() -> Checker {
        let root = project_root();
        let mut loading = Diagnostics::default();
        let schemas = checkfu_wire_codegen::schema::SchemaSet::load(&root.join("schemas"), &mut loading);
        assert!(loading.is_empty(), "{}", loading.render());
        Checker { root, schemas }
    }

    /// The real catalog's text.
    pub fn catalog(&self) -> String {
        fs::read_to_string(self.root.join("catalog/catalog.toml")).expect("read catalog")
    }

    pub fn check(&self, text: &str) -> Result<checkfu_wire_codegen::catalog::Compiled, Diagnostics> {
        self.check_bytes(text.as_bytes().to_vec())
    }

    pub fn check_bytes(&self, bytes: Vec<u8>) -> Result<checkfu_wire_codegen::catalog::Compiled, Diagnostics> {
        use checkfu_wire_codegen::{catalog, revisions};
        let mut d = Diagnostics::default();
        let file = match catalog::decode(bytes, PathBuf::from("catalog/catalog.toml"), &mut d.sources) {
            Ok(file) => file,
            Err(e) => {
                d.push(e);
                return Err(d);
            }
        };
        let parsed = match catalog::parse(d.sources.text(file), file) {
            Ok(parsed) => parsed,
            Err(e) => {
                d.push(e);
                return Err(d);
            }
        };
        d.items.extend(revisions::check_axis_order(&self.root, &parsed, file));
        match catalog::compile(parsed, file, &self.schemas) {
            // The ACP floor the lock records: what the pipeline's plan keeps when the
            // pinned schema keeps it, as it does in every catalog mutation.
            Ok(compiled) if d.is_empty() => match revisions::recorded_floor(&self.root, &compiled.catalog, file)
                .map_err(|e| vec![e])
                .and_then(|floor| revisions::lock(&self.root, &compiled, file, &self.schemas, &floor.unwrap_or_default(), ""))
            {
                Ok(_) => Ok(compiled),
                Err(items) => {
                    d.items.extend(items);
                    Err(d)
                }
            },
            Ok(_) => Err(d),
            Err(items) => {
                d.items.extend(items);
                Err(d)
            }
        }
    }

    /// The diagnostics of a text that must be refused.
    pub fn refused(&self, text: &str) -> Diagnostics {
        match self.check(text) {
            Ok(_) => panic!("the edited catalog was accepted"),
            Err(d) => d,
        }
    }
}

/// `text` with the first occurrence of `from` after `anchor` replaced; panics when absent,
/// so that a stale edit cannot silently test nothing.
pub fn replaced_after(text: &str, anchor: &str, from: &str, to: &str) -> String {
    let base = text.find(anchor).unwrap_or_else(|| panic!("anchor `{anchor}` not in catalog"));
    let offset = text[base..].find(from).unwrap_or_else(|| panic!("`{from}` not after `{anchor}`")) + base;
    format!("{}{}{}", &text[..offset], to, &text[offset + from.len()..])
}

/// One-based line and column of the first `needle` after `anchor`.
pub fn line_column(text: &str, anchor: &str, needle: &str) -> (usize, usize) {
    let base = text.find(anchor).expect("anchor");
    let offset = text[base..].find(needle).expect("needle") + base;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    (text[..offset].matches('\n').count() + 1, text[line_start..offset].chars().count() + 1)
}

/// Generation fails with an E0001 whose message holds `message`, at the first `needle`
/// after `anchor`.
pub fn refused_at(s: &Scratch, message: &str, anchor: &str, needle: &str) {
    let d = s.generate_err();
    let rendered = d.render();
    let item = of_class(&d, Class::UnknownOrDuplicate)
        .into_iter()
        .find(|i| i.message.contains(message))
        .unwrap_or_else(|| panic!("no E0001 with {message:?}: {rendered}"));
    let text = s.catalog();
    let base = text.find(anchor).expect("anchor");
    let offset = text[base..].find(needle).expect("needle") + base;
    let line = text[..offset].matches('\n').count() + 1;
    let column = offset - text[..offset].rfind('\n').map_or(0, |n| n + 1) + 1;
    assert_eq!(item.position(&d.sources).expect("position"), format!("catalog/catalog.toml:{line}:{column}"), "{rendered}");
}
