//! The Rust names a schema file gets (its module and root type): shared by the plan, which
//! names the definitions the tables point at, and the emitters, which write them.

use proc_macro2::Ident;
use quote::format_ident;

use crate::schema::normalize;

/// Rust keywords, which a module name must not be.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn", "for", "gen", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "static", "struct", "super", "trait",
    "true", "type", "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
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

/// The check function name of a definition.
pub fn def_fn(name: &str) -> Ident {
    format_ident!("check_{}", name)
}

/// The decode function name of a definition.
pub fn decode_fn(name: &str) -> Ident {
    format_ident!("decode_{}", name)
}
