//! One Rust module per input schema: the typify types, the generated checks that complete
//! what typify drops, and an `Exact` implementation per type tying the two together.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;

use crate::diagnostic::{Class, Diagnostic};
use crate::schema::normalize::{self, pascal};

/// The names a schema file gets: `acp-v1-extension-vectors.schema.json` →
/// module `acp_v1_extension_vectors`, root type `AcpV1ExtensionVectors`.
pub fn names(file: &str) -> (String, String) {
    let stem = file.trim_end_matches(".json").trim_end_matches(".schema");
    let module = stem.replace(|c: char| !c.is_ascii_alphanumeric(), "_").to_ascii_lowercase();
    (module, pascal(stem))
}

/// Generates the module for one schema file.
pub fn generate(file: &str, raw: &Value) -> Result<TokenStream, Vec<Diagnostic>> {
    generate_pinned(file, raw, &std::collections::BTreeMap::new())
}

/// Generates the module for one schema file, with extra named entry points.
pub fn generate_pinned(
    file: &str,
    raw: &Value,
    pins: &std::collections::BTreeMap<String, String>,
) -> Result<TokenStream, Vec<Diagnostic>> {
    let (module, root_name) = names(file);
    let normalized = normalize::normalize_pinned(&root_name, raw, pins).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| Diagnostic::new(Class::Generation, format!("schemas/{file}#{}: {}", e.pointer, e.message)))
            .collect::<Vec<_>>()
    })?;
    let defs = super::types::definitions(&root_name, &normalized.root);
    let mut origins = normalized.origins.clone();
    origins.insert(root_name.clone(), String::new());
    let checks = super::checks::generate(&defs, &origins)
        .map_err(|e| vec![Diagnostic::new(Class::Generation, format!("schemas/{file}{e}"))])?;
    // typify runs after the checks: a construct outside the supported subset gets the
    // checks' precise diagnostic rather than typify's panic.
    let types = super::types::generate(&defs)
        .map_err(|e| vec![Diagnostic::new(Class::Generation, format!("schemas/{file}: {e}"))])?;
    let module = format_ident!("{}", module);
    let doc = format!(" Types and checks generated from `schemas/{file}`.");
    Ok(quote! {
        #[doc = #doc]
        #[allow(clippy::all, clippy::pedantic, dead_code, unused_imports, unused_variables, non_snake_case, irrefutable_let_patterns)]
        pub mod #module {
            pub mod types {
                #types
            }
            pub mod checks {
                #checks
            }
        }
    })
}
