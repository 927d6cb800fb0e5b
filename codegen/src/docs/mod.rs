//! The docs stage: the page `docs/harness-wire-extensions.md`, rendered with minijinja from
//! the templates under `templates/`. Prose lives in the templates; every table comes from
//! `tables`, so no fact is typed twice; `table` splits the wide ones to fit GitHub's
//! column, and `lattice` feeds the one diagram.

pub mod cell;
pub mod lattice;
pub mod table;
pub mod tables;

use std::collections::BTreeMap;
use std::path::Path;

use minijinja::{context, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::catalog::routes::Routes;
use crate::catalog::{Compiled, Index};
use crate::diagnostic::{Class, Diagnostic, Diagnostics};
use cell::Cell;

/// The page's template, relative to `templates/`.
pub const PAGE_TEMPLATE: &str = "harness-wire-extensions.md.j2";

/// Template sources by name, read from `templates/`.
pub struct Templates {
    sources: BTreeMap<String, String>,
}

impl Templates {
    pub fn load(dir: &Path, diagnostics: &mut Diagnostics) -> Templates {
        let mut sources = BTreeMap::new();
        match std::fs::read_dir(dir) {
            Ok(entries) => {
                for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
                    if path.extension().is_none_or(|x| x != "j2") {
                        continue;
                    }
                    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    match std::fs::read_to_string(&path) {
                        Ok(text) => {
                            sources.insert(name, text);
                        }
                        Err(e) => diagnostics.push(Diagnostic::new(Class::Input, format!("cannot read {}: {e}", path.display()))),
                    }
                }
            }
            Err(e) => diagnostics.push(Diagnostic::new(Class::Input, format!("cannot read {}: {e}", dir.display()))),
        }
        Templates { sources }
    }
}

#[derive(Serialize)]
struct Mechanism<'a> {
    member: &'a str,
    values: Vec<&'a str>,
}

/// A JSON array of strings as identifiers set as code, comma-separated.
fn code_list(values: &serde_json::Value) -> String {
    Cell::codes(values.as_array().into_iter().flatten().filter_map(|v| v.as_str()), ", ").markdown()
}

pub fn render(compiled: &Compiled, templates: &Templates, acp_grammar: &serde_json::Value) -> Result<String, Diagnostic> {
    let c = &compiled.catalog;
    let index = Index::new(c);
    let routes = Routes::new(c);
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_keep_trailing_newline(true);
    for (name, source) in &templates.sources {
        env.add_template(name, source).map_err(template_error)?;
    }
    let mechanisms: Vec<_> = c
        .declaration
        .mechanisms
        .iter()
        .map(|m| Mechanism { member: m.member.as_str(), values: m.values.iter().map(|v| v.as_str()).collect() })
        .collect();
    // The unlisted provider's dialects as its derived routes carry them (dialect-table order).
    let unlisted: Vec<&str> = routes.unlisted.iter().map(|r| r.dialect.name.as_str()).collect();
    let ctx = context! {
        revisions => &c.revisions,
        acp => &c.acp,
        acp_provenance => &acp_grammar["provenance"],
        acp_method_groups => tables::acp_methods(acp_grammar),
        acp_update_kinds => code_list(&acp_grammar["session_update_kinds"]),
        acp_fidelity_updates => code_list(&acp_grammar["optional_fidelity_updates"]),
        acp_stop_reasons => code_list(&acp_grammar["stop_reasons"]),
        acp_v2 => &c.acp_v2,
        acp_v2_provenance => &acp_grammar["acp_v2"]["provenance"],
        acp_v2_method_groups => tables::acp_methods(&acp_grammar["acp_v2"]),
        acp_v2_update_kinds => code_list(&acp_grammar["acp_v2"]["session_update_kinds"]),
        acp_v2_fidelity_updates => code_list(&acp_grammar["acp_v2"]["optional_fidelity_updates"]),
        catalog_sha256 => &compiled.sha256,
        declaration_slot => c.declaration.slot.as_str(),
        lattices => lattice::lattices(c),
        axis_orders => tables::axis_orders(c),
        mechanisms => mechanisms,
        unlisted_accepts => Cell::codes(unlisted, ", ").markdown(),
        slots => tables::slots(c),
        slots_v2 => tables::slots_v2(c),
        handshake => tables::handshake(c),
        conformance => tables::conformance(c),
        support => tables::support(c),
        ceilings => tables::ceilings(&index, compiled),
        envelopes => tables::envelopes(c),
        gated => tables::gated(c),
        dialects => tables::dialects(&routes),
        reachability => tables::reachability(&routes, c),
        oneshot => &c.oneshot,
        oneshot_schema => crate::ONESHOT_SCHEMA_OUT,
        oneshot_declares => tables::oneshot_declares(c),
        acp_passes => tables::acp_passes(c),
        declared_proofs => tables::declared_proofs(c),
        requirements => tables::requirements(c),
        requirement_gates => tables::requirement_gates(c),
        run_passes => tables::run_passes(c),
        oneshot_steps => tables::oneshot_steps(c),
        oneshot_passes => tables::oneshot_passes(c),
        oneshot_events => tables::oneshot_events(c),
    };
    let template = env.get_template(PAGE_TEMPLATE).map_err(template_error)?;
    template.render(ctx).map_err(template_error)
}

fn template_error(e: minijinja::Error) -> Diagnostic {
    let mut message = format!("template error: {e}");
    if let (Some(name), Some(line)) = (e.name(), e.line()) {
        message = format!("templates/{name}:{line}: {message}");
    }
    Diagnostic::new(Class::Generation, message)
}
