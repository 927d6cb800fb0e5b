//! Provenance records of upstream schemas (`schemas/NAME.provenance.toml`): where a schema
//! checked in unmodified comes from, under which license, and the sha256 of its bytes.
//!
//! Generation holds each record to its file: a schema replaced without its record (or a
//! record naming a file that is not there) is an input error pointing at the record, so the
//! version the docs page states can never drift from the bytes that are compiled.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::diagnostic::{Class, Diagnostic, Diagnostics};

/// The suffix that marks a provenance record in the schemas directory.
pub const SUFFIX: &str = ".provenance.toml";

/// One record, as written; what the docs page may say about an upstream schema.
#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    #[serde(skip_serializing)]
    file: Spanned<String>,
    pub upstream: String,
    pub package: String,
    pub version: String,
    pub path_in_package: String,
    pub license: String,
    sha256: Spanned<String>,
}

/// The records of a schemas directory.
#[derive(Debug, Default)]
pub struct Provenances {
    /// The records that hold, by schema file name.
    pub held: BTreeMap<String, Provenance>,
    /// Every file some readable record names, whether or not it holds.
    pub named: BTreeSet<String>,
}

/// Reads every record in `dir` and checks it against the file it names.
pub fn load(dir: &Path, diagnostics: &mut Diagnostics) -> Provenances {
    let mut out = Provenances::default();
    // The directory itself is the schema set's to report.
    if !dir.is_dir() {
        return out;
    }
    for (_, display, text) in super::read_dir_files(dir, |name| name.ends_with(SUFFIX), diagnostics) {
        let parsed = toml::from_str::<Provenance>(&text);
        let source = diagnostics.sources.add(display.clone(), text);
        let record = match parsed {
            Ok(record) => record,
            Err(e) => {
                let span = e.span().unwrap_or(0..0);
                diagnostics
                    .push(Diagnostic::new(Class::Input, format!("invalid provenance record: {}", e.message())).at(source, span, "here"));
                continue;
            }
        };
        let file = record.file.get_ref().clone();
        out.named.insert(file.clone());
        let bytes =
            match std::fs::read(dir.join(&file)) {
                Ok(bytes) => bytes,
                Err(e) => {
                    diagnostics.push(
                        Diagnostic::new(Class::Input, format!("the provenance record names `schemas/{file}`, which cannot be read: {e}"))
                            .at(source, record.file.span(), "this file"),
                    );
                    continue;
                }
            };
        let actual = crate::catalog::sha256_hex(&bytes);
        if !actual.eq_ignore_ascii_case(record.sha256.get_ref()) {
            diagnostics.push(
                Diagnostic::new(Class::Input, format!("`schemas/{file}` is not the file its provenance records"))
                    .at(source, record.sha256.span(), format!("the file hashes to {actual}"))
                    .note("an upstream schema is checked in unmodified: when it is replaced, update version and sha256 here (and bump the revision literal that pins it)"),
            );
            continue;
        }
        out.held.insert(file, record);
    }
    out
}
