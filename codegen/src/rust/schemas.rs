//! One Rust module per input schema: the exact types, the generated checks, and a decoder
//! per definition tying the two together. Each module is a file of its own
//! (`generated/schemas/<module>.rs`), so a large input does not swell one file.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

use crate::diagnostic::{Class, Diagnostic};
use crate::schema::dialect::Dialect;
use crate::schema::normalize;

/// Rust keywords, which a module name must not be.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self",
    "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become",
    "box", "do", "final", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// The names a schema file gets: `acp-v1-extension-vectors.schema.json` →
/// module `acp_v1_extension_vectors`, root type `AcpV1ExtensionVectors`. Both are valid
/// Rust identifiers whatever the file is called (`2fa.json` → `s_2fa` and `N2fa`,
/// `ü.json` → `u_fc` and `Ufc`, `self.json` → `self_` and `SelfDef`).
pub fn names(file: &str) -> (String, String) {
    let stem = file.trim_end_matches(".json").trim_end_matches(".schema");
    let mut module = String::new();
    for c in stem.chars() {
        if c.is_ascii_alphanumeric() {
            module.push(c.to_ascii_lowercase());
        } else if c.is_ascii() {
            module.push('_');
        } else {
            module.push_str(&format!("u_{:x}", c as u32));
        }
    }
    if module.chars().all(|c| c == '_') {
        module = format!("schema{module}");
    }
    if module.starts_with(|c: char| c.is_ascii_digit()) {
        module.insert_str(0, "s_");
    }
    if KEYWORDS.contains(&module.as_str()) {
        module.push('_');
    }
    let root = normalize::type_name(stem);
    (module, root)
}

/// One schema file's generated module.
pub struct SchemaModule {
    /// The module name (`acp_v1_extension_vectors`).
    pub module: String,
    /// The module's contents: `pub mod types { … } pub mod checks { … }`.
    pub tokens: TokenStream,
    /// Definitions typify could not name, which got newtypes instead.
    pub warnings: Vec<String>,
}

/// Generates the module for one schema file.
pub fn generate(file: &str, raw: &Value) -> Result<SchemaModule, Vec<Diagnostic>> {
    generate_pinned(file, raw, &BTreeMap::new())
}

fn diagnostic(file: &str, pointer: &str, message: &str) -> Diagnostic {
    Diagnostic::new(Class::Generation, format!("schemas/{file}#{pointer}: {message}"))
}

/// Generates the module for one schema file, with extra named entry points. Every
/// problem of the file is reported, not only the first.
pub fn generate_pinned(file: &str, raw: &Value, pins: &BTreeMap<String, String>) -> Result<SchemaModule, Vec<Diagnostic>> {
    generate_in(file, raw, pins, Dialect::Draft2020)
}

/// [`generate_pinned`], reading a schema without `$schema` in `default`'s dialect.
pub fn generate_in(file: &str, raw: &Value, pins: &BTreeMap<String, String>, default: Dialect) -> Result<SchemaModule, Vec<Diagnostic>> {
    let (module, root_name) = names(file);
    let normalized = normalize::normalize_in(&root_name, raw, pins, default);
    let mut errors: Vec<Diagnostic> = normalized.errors.iter().map(|e| diagnostic(file, &e.pointer, &e.message)).collect();
    errors.extend(crate::schema::loops::find(&normalized).iter().map(|e| diagnostic(file, &e.pointer, &e.message)));
    let checks = match super::checks::generate(&normalized) {
        Ok(checks) => checks,
        Err(unsupported) => {
            errors.extend(unsupported.iter().map(|u| diagnostic(file, &u.pointer, &u.message)));
            TokenStream::new()
        }
    };
    if !errors.is_empty() {
        errors.dedup_by(|a, b| a.message == b.message);
        return Err(errors);
    }
    let types = super::types::generate(&normalized);
    let warnings = types
        .fallbacks
        .iter()
        .map(|name| {
            let origin = normalized.origins.get(name).map_or("", String::as_str);
            format!("schemas/{file}#{origin}: typify could not name the members of `{name}`; it is a `serde_json` newtype")
        })
        .collect();
    let types = types.tokens;
    Ok(SchemaModule {
        module,
        tokens: quote! {
            pub mod types {
                #types
            }
            pub mod checks {
                #checks
            }
        },
        warnings,
    })
}
