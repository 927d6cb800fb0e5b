//! The catalog stage: load `catalog/catalog.toml` with spans, check it, and compute its
//! identity (the sha256 of its canonical JSON form).

mod editor_schema;
mod fields;
mod gateway;
mod index;
pub mod model;
mod oneshot;
mod realize;
mod requirements;
pub mod routes;
pub mod spanned;
mod validate;

use sha2::{Digest, Sha256};

pub use editor_schema::editor_schema;
pub use gateway::Segment;
pub use index::Index;
pub use model::Catalog;
pub use realize::Realization;

use std::path::PathBuf;

use crate::diagnostic::{Class, Diagnostic, FileId, Sources};
use crate::schema::SchemaSet;

/// A catalog that passed every check, with what the checks learned.
#[derive(Debug)]
pub struct Compiled {
    pub catalog: Catalog,
    /// Hex sha256 of the canonical form.
    pub sha256: String,
    /// One per harness, in catalog order.
    pub realizations: Vec<Realization>,
}

/// Adds the catalog's bytes to `sources` as text. Bytes that are not UTF-8 are reported at
/// the first bad byte (line, column and byte offset); the source then holds a lossy copy,
/// identical up to that byte, so the snippet can show the line.
pub fn decode(bytes: Vec<u8>, path: PathBuf, sources: &mut Sources) -> Result<FileId, Diagnostic> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(sources.add(path, text)),
        Err(e) => {
            let offset = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let bad = bytes.get(offset).copied().unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let display = path.display().to_string();
            let file = sources.add(path, text);
            let (line, column) = sources.line_column(file, offset);
            // U+FFFD, which stands for the bad byte in the lossy copy, is three bytes long.
            let replacement = offset..offset + '\u{FFFD}'.len_utf8();
            Err(Diagnostic::new(
                Class::Input,
                format!("{display} is not valid UTF-8: byte 0x{bad:02x} at line {line}, column {column} (byte offset {offset})"),
            )
            .at(file, replacement, "invalid UTF-8 starts here")
            .note("save the catalog as UTF-8"))
        }
    }
}

/// Parses the catalog text; a syntax or shape error points at its span.
pub fn parse(text: &str, file: FileId) -> Result<Catalog, Diagnostic> {
    toml::from_str::<Catalog>(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        Diagnostic::new(Class::Input, format!("invalid catalog: {}", e.message())).at(file, span, "here")
    })
}

/// Runs every check; on any failure returns all diagnostics.
pub fn compile(catalog: Catalog, file: FileId, schemas: &SchemaSet) -> Result<Compiled, Vec<Diagnostic>> {
    let index = Index::new(&catalog);
    let mut validator = validate::Validator::new(file, &index);
    validator.run(schemas);
    let mut diagnostics = validator.out;
    let realizations = catalog.harnesses.iter().map(|h| realize::realize(&index, file, h, &mut diagnostics)).collect();
    if !diagnostics.is_empty() {
        diagnostics.sort_by_key(|d| d.location.as_ref().map(|(_, s)| s.start));
        return Err(diagnostics);
    }
    let sha256 = sha256_hex(canonical_json(&catalog).as_bytes());
    Ok(Compiled { catalog, sha256, realizations })
}

/// The canonical form: compact JSON of the model with object keys sorted, so formatting,
/// comments and key order in the TOML do not change the identity but any fact does.
pub fn canonical_json<T: serde::Serialize>(value: &T) -> String {
    let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
    serde_json::to_string(&sorted(value)).unwrap_or_default()
}

fn sorted(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
