//! Emits the pinned ACP grammar as the docs page and `generated/acp-grammar.json` show it,
//! from the plan (`plan::grammar` reads it from the schema).

use serde_json::Value;

use super::plan::model::MethodPlan;
use super::plan::{side, Plan};
use crate::catalog::model::Catalog;

/// The pinned grammar as the docs page and `generated/acp-grammar.json` show it: every ACP
/// method of the schema with its side and definitions, and the closed vocabularies.
/// `v2` is the provenance of the pinned ACP v2 schema, shown beside its grammar.
pub fn projection(
    plan: &Plan,
    catalog: &Catalog,
    provenance: Option<&crate::schema::provenance::Provenance>,
    v2: Option<&crate::schema::provenance::Provenance>,
) -> Value {
    let methods = acp_methods(&plan.methods);
    let g = &plan.v2.grammar;
    let acp_v2 = serde_json::json!({
        "schema": format!("schemas/{}", catalog.acp_v2.schema.as_str()),
        "revision": catalog.revisions.acp_v2_schema.as_str(),
        "provenance": v2,
        "protocol_version": g.protocol_version,
        "methods": acp_methods(&plan.v2.methods),
        "session_update_kinds": g.session_update_kinds,
        "optional_fidelity_updates": plan.v2.fidelity_updates,
    });
    serde_json::json!({
        "schema": format!("schemas/{}", catalog.acp.schema.as_str()),
        "revision": catalog.revisions.acp_schema.as_str(),
        "provenance": provenance,
        "protocol_version": plan.grammar.protocol_version,
        "methods": methods,
        "session_update_kinds": plan.grammar.session_update_kinds,
        "optional_fidelity_updates": plan.fidelity_updates,
        "stop_reasons": plan.grammar.stop_reasons,
        "acp_v2": acp_v2,
    })
}

/// Every ACP method of `methods` with its side and definitions.
fn acp_methods(methods: &[MethodPlan]) -> Vec<Value> {
    methods
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
        .collect()
}
