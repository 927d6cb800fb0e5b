//! The input JSON Schemas under `schemas/`: loading them, and resolving the
//! `file#/json/pointer` references the catalog uses to name slot payloads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub mod dialect;
pub mod error;
pub mod loops;
pub mod normalize;
pub mod pointer;
pub mod provenance;
pub mod reader;

use crate::diagnostic::{Class, Diagnostic, Diagnostics};

/// Every schema file, by file name.
#[derive(Clone, Debug, Default)]
pub struct SchemaSet {
    pub files: BTreeMap<String, Value>,
    /// Each file's text and where its nodes are, for diagnostics that point into it. A
    /// file of `files` may lack one (a set built in memory); its diagnostics then name the
    /// pointer alone.
    pub texts: BTreeMap<String, SchemaText>,
}

/// One schema file as it was read.
#[derive(Clone, Debug)]
pub struct SchemaText {
    /// The path diagnostics show (`schemas/<file>`).
    pub path: PathBuf,
    pub text: String,
    /// Where each node of the file's document is in `text`.
    pub spans: reader::Spans,
}

/// The files of `dir` whose names pass `keep`, sorted, as (name, display path under
/// `schemas/`, text); each unreadable one is reported and skipped.
pub(crate) fn read_dir_files(
    dir: &Path,
    keep: impl Fn(&str) -> bool,
    diagnostics: &mut Diagnostics,
) -> Vec<(String, std::path::PathBuf, String)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            diagnostics.push(Diagnostic::new(Class::Input, format!("cannot read {}: {e}", dir.display())));
            return Vec::new();
        }
    };
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.retain(|p| p.file_name().is_some_and(|n| keep(&n.to_string_lossy())));
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let display = Path::new("schemas").join(&name);
        match std::fs::read_to_string(&path) {
            Ok(text) => out.push((name, display, text)),
            Err(e) => diagnostics.push(Diagnostic::new(Class::Input, format!("cannot read {}: {e}", display.display()))),
        }
    }
    out
}

impl SchemaSet {
    /// Reads every `*.json` in `dir`, reporting each unreadable or ill-formed file.
    pub fn load(dir: &Path, diagnostics: &mut Diagnostics) -> SchemaSet {
        let mut set = SchemaSet::default();
        for (name, display, text) in read_dir_files(dir, |name| name.ends_with(".json"), diagnostics) {
            if Path::new(&name).extension().is_none() {
                // `.json` alone is a hidden file with no stem: no module could be named
                // after it, and skipping it would drop a schema without a word.
                diagnostics.push(Diagnostic::new(
                    Class::Input,
                    format!("{}: a schema file's name gives its module's name, and `{name}` has no name before `.json`", display.display()),
                ));
                continue;
            }
            match reader::read(&text) {
                Ok((value, spans)) => {
                    let inexact = spans.inexact_numbers(&value, &text);
                    if !inexact.is_empty() {
                        let file = diagnostics.sources.add(display, text.clone());
                        for span in inexact {
                            let written = &text[span.clone()];
                            diagnostics.push(
                                Diagnostic::new(
                                    Class::Input,
                                    format!("the number `{written}` is not held exactly: without the `exact-numbers` feature (serde_json's `arbitrary_precision`) a schema number is an i64, a u64 or the nearest f64, so the check would compile another value; build with `exact-numbers`"),
                                )
                                .at(file, span, "not held exactly"),
                            );
                        }
                        continue;
                    }
                    set.files.insert(name.clone(), value);
                    set.texts.insert(name, SchemaText { path: display, text, spans });
                }
                // Refused: serde_json is asked again only for its words and position, so the
                // message is the one serde_json has always given here. Should it accept what
                // the reader refused (a fault of the reader, which
                // `codegen/tests/it/reader_differential.rs` is there to catch), the file is read as
                // serde_json reads it, and its diagnostics lose their line and column only.
                Err(_) => match serde_json::from_str::<Value>(&text) {
                    Ok(value) => {
                        set.files.insert(name, value);
                    }
                    Err(e) => {
                        let offset = line_column_offset(&text, e.line(), e.column());
                        let file = diagnostics.sources.add(display, text);
                        diagnostics.push(Diagnostic::new(Class::Input, format!("invalid JSON: {e}")).at(file, offset..offset, "here"));
                    }
                },
            }
        }
        set
    }

    /// Resolves `file#/pointer` to the schema node it names.
    pub fn resolve(&self, reference: &str) -> Result<&Value, String> {
        let (file, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        let document = self.files.get(file).ok_or_else(|| format!("no schema file `{file}`"))?;
        match self::pointer::get(document, pointer) {
            Ok(Some(node)) => Ok(node),
            Ok(None) => Err(format!("`{file}` has nothing at `{pointer}`")),
            Err(e) => Err(format!("`{pointer}` is not a JSON Pointer: {e}")),
        }
    }
}

/// Byte offset of serde_json's one-based line and column.
fn line_column_offset(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (start + column.saturating_sub(1)).min(text.len())
}
