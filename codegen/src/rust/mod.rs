//! The Rust stage: source files the runtime crate includes from `OUT_DIR`.
//!
//! `plan` analyses first (the decoder tables' rows, the ACP grammar, call graphs, reach);
//! the emitters (`checks`, `types`, `schemas`, `decoder`, `tables`, `acp`) read the plan and
//! the shared helpers here and in `names`, and none imports another emitter except
//! `schemas`, which assembles a schema's module from `types` and `checks`.

pub mod acp;
pub mod checks;
pub mod decoder;
pub mod names;
pub mod plan;
pub mod schemas;
pub mod tables;
pub mod types;

/// Text from the input (a pointer, a name) made safe for a doc comment: control
/// characters, which a doc comment may not hold (a bare CR is a compile error), are
/// written as escapes.
pub fn doc_safe(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

/// Formats a token stream as a source file under the do-not-edit banner.
pub fn format_file(banner: &str, tokens: proc_macro2::TokenStream) -> Result<String, String> {
    let file = syn::parse2::<syn::File>(tokens).map_err(|e| format!("generated Rust does not parse: {e}"))?;
    Ok(format!("{banner}\n\n{}", prettyplease::unparse(&file)))
}
