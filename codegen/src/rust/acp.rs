//! Emits the pinned ACP grammar as the docs page and `generated/acp-grammar.json` show it,
//! from the plan (`plan::grammar` reads it from the schema).

use serde_json::Value;

use super::plan::{side, Plan};
use crate::catalog::model::Catalog;

/// The pinned grammar as the docs page and `generated/acp-grammar.json` show it: every ACP
/// method of the schema with its side and definitions, and the closed vocabularies.
pub fn projection(plan: &Plan, catalog: &Catalog, provenance: Option<&crate::schema::provenance::Provenance>) -> Value {
    let methods: Vec<Value> = plan
        .methods
        .iter()
        .filter(|m| m.source == "acp")
        .map(|m| {
            serde_json::json!({
                "method": m.name,
                "handled_by": side(m.side),
                "kind": if m.notification { "notification" } else { "request" },
                "params": m.params.as_ref().map(|d| d.name.clone()),
                "result": m.result.as_ref().map(|d| d.name.clone()),
            })
        })
        .collect();
    serde_json::json!({
        "schema": format!("schemas/{}", catalog.acp.schema.as_str()),
        "revision": catalog.revisions.acp_schema.as_str(),
        "provenance": provenance,
        "protocol_version": plan.grammar.protocol_version,
        "methods": methods,
        "session_update_kinds": plan.grammar.session_update_kinds,
        "optional_fidelity_updates": plan.fidelity_updates,
        "stop_reasons": plan.grammar.stop_reasons,
    })
}
