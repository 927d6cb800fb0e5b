//! One Rust module per input schema: the exact types, the generated checks, and a decoder
//! per definition tying the two together. Each module is a file of its own
//! (`typed/generated/schemas/<module>.rs`, and the runtime's part of it, only the checks
//! the catalog reaches, `generated/schemas/<module>.rs`), so a large input does not swell
//! one file.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

use super::plan::{calls, reach};
use crate::diagnostic::{Class, Diagnostic, FileId, Sources};
use crate::schema::dialect::{as_written, Dialect};
use crate::schema::{normalize, SchemaText};

pub use super::names::names;

/// One schema file's generated module.
pub struct SchemaModule {
    /// The module name (`acp_v1_extension_vectors`).
    pub module: String,
    /// The module's contents: `pub mod types { … } pub mod checks { … }` (what
    /// `checkfu-wire-typed` compiles).
    pub tokens: TokenStream,
    /// What the runtime compiles of it: `pub mod checks { … }` with the checks `roots`
    /// reach (`plan::reach`), or `None` when they reach none.
    pub runtime: Option<TokenStream>,
    /// Definitions typify could not name, which got newtypes instead.
    pub warnings: Vec<String>,
}

/// Generates the module for one schema file.
pub fn generate(file: &str, raw: &Value) -> Result<SchemaModule, Vec<Diagnostic>> {
    generate_pinned(file, raw, &BTreeMap::new())
}

/// Where a schema file's diagnostics point: the file as it was read, and the run's
/// sources, which get its text only when the file has a problem.
pub struct Placement<'a> {
    pub text: &'a SchemaText,
    pub sources: &'a mut Sources,
}

/// A problem of a schema file, at a JSON Pointer into it.
struct Problem<'p> {
    pointer: &'p str,
    message: &'p str,
}

/// The diagnostic of a problem: `schemas/{file}#{pointer}: {message}`, and, with a
/// placement, the span of the node the pointer names in the file as written. A pointer
/// may be into the document as the checks read it, where every draft is 2020-12
/// (`/prefixItems/0` for a draft-07 `/items/0`): it is first read back in the file's own
/// keywords, and what the file still does not have is shown at its nearest enclosing node
/// that the file has. The label says which of the three it is.
fn diagnostic(file: &str, raw: &Value, problem: &Problem, placed: Option<(&SchemaText, FileId)>) -> Diagnostic {
    let Problem { pointer, message } = problem;
    let diagnostic = Diagnostic::new(Class::Generation, format!("schemas/{file}#{pointer}: {message}"));
    let Some((text, id)) = placed else { return diagnostic };
    let written = as_written(raw, pointer);
    let location = text.spans.locate(raw, &written);
    let label = match (location.exact, written == *pointer) {
        (true, true) => "here".to_string(),
        (true, false) => format!("here: the file writes it `#{written}`"),
        (false, _) => format!("in here: the file has no `#{written}`, and this is `#{}`", location.found),
    };
    diagnostic.at(id, location.span, label)
}

/// Generates the module for one schema file, with extra named entry points. Every
/// problem of the file is reported, not only the first.
pub fn generate_pinned(file: &str, raw: &Value, pins: &BTreeMap<String, String>) -> Result<SchemaModule, Vec<Diagnostic>> {
    generate_in(file, raw, pins, Dialect::Draft2020)
}

/// [`generate_pinned`], reading a schema without `$schema` in `default`'s dialect.
pub fn generate_in(file: &str, raw: &Value, pins: &BTreeMap<String, String>, default: Dialect) -> Result<SchemaModule, Vec<Diagnostic>> {
    generate_placed(file, raw, pins, default, None)
}

/// [`generate_in`], with each diagnostic pointing into the file's text when `placement`
/// gives it (`raw` is then the document read with that text).
pub fn generate_placed(
    file: &str,
    raw: &Value,
    pins: &BTreeMap<String, String>,
    default: Dialect,
    placement: Option<Placement>,
) -> Result<SchemaModule, Vec<Diagnostic>> {
    generate_rooted(file, raw, pins, default, placement, &BTreeSet::new())
}

/// [`generate_placed`], with the runtime's module (`SchemaModule::runtime`) holding the
/// checks `roots` reach.
pub fn generate_rooted(
    file: &str,
    raw: &Value,
    pins: &BTreeMap<String, String>,
    default: Dialect,
    placement: Option<Placement>,
    roots: &BTreeSet<String>,
) -> Result<SchemaModule, Vec<Diagnostic>> {
    let (module, root_name) = names(file);
    let normalized = normalize::normalize_in(&root_name, raw, pins, default);
    let loops = crate::schema::loops::find(&normalized);
    let (checks, unsupported) = match super::checks::generate(&normalized) {
        Ok(checks) => (Some(checks), Vec::new()),
        Err(unsupported) => (None, unsupported),
    };
    let problems: Vec<Problem> = (normalized.errors.iter().map(|e| Problem { pointer: &e.pointer, message: &e.message }))
        .chain(loops.iter().map(|e| Problem { pointer: &e.pointer, message: &e.message }))
        .chain(unsupported.iter().map(|u| Problem { pointer: &u.pointer, message: &u.message }))
        .collect();
    if !problems.is_empty() {
        let placed = placement.map(|p| (p.text, p.sources.add(p.text.path.clone(), p.text.text.clone())));
        let mut errors: Vec<Diagnostic> = problems.iter().map(|p| diagnostic(file, raw, p, placed)).collect();
        errors.dedup_by(|a, b| a.message == b.message);
        return Err(errors);
    }
    let Some(checks) = checks else { return Err(vec![Diagnostic::new(Class::Generation, format!("schemas/{file}: no checks"))]) };
    let reached = reach::closure(&calls::call_graph(&normalized.defs), roots);
    let runtime = (!reached.is_empty()).then(|| {
        let checks = checks.reached(&reached);
        quote! {
            pub mod checks {
                #checks
            }
        }
    });
    let checks = checks.full();
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
        runtime,
        warnings,
    })
}
