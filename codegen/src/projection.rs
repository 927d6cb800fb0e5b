//! The support snapshot as JSON: what `GET /v1/support/harnesses` would serve, generated
//! from the same catalog as the docs page's support and ceiling tables.

use serde_json::{json, Map, Value};

use crate::catalog::{Compiled, Index};
use crate::docs::tables;

pub fn support_snapshot(compiled: &Compiled, banner: &str) -> Value {
    let c = &compiled.catalog;
    let index = Index::new(c);
    let r = &c.revisions;
    let mut harnesses = Vec::new();
    for (i, h) in c.harnesses.iter().enumerate() {
        let mut ceiling = Map::new();
        let mut admitted = Vec::new();
        for (axis, value, star) in tables::ceiling_cells(&index, compiled, i) {
            if star {
                admitted.push(Value::String(axis.clone()));
            }
            ceiling.insert(axis, value.map_or(Value::Null, Value::String));
        }
        let reachability: Map<String, Value> = c
            .providers
            .iter()
            .map(|p| {
                let cell = match tables::reachable(&index, h, p.name.as_str()) {
                    None => Value::Null,
                    Some(reachable) => Value::Bool(reachable),
                };
                (p.name.value.clone(), cell)
            })
            .collect();
        harnesses.push(json!({
            "harness": h.name.as_str(),
            "mode": h.mode.value.as_str(),
            "supply": h.supply.as_str(),
            "availability": h.supply.as_str(),
            "adoption": h.adoption.as_str(),
            "release_protocol": h.release_protocol.as_ref().map(|p| p.as_str()),
            "execution_lane": tables::execution_lane(h),
            "model_lane": h.model_lane.as_str(),
            "mcp_delivery": h.mcp_delivery.as_str(),
            "catalog_evidence": h.evidence.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
            "tuple_support": h.tuple_support.as_str(),
            "ceiling": ceiling,
            "declaration_admitted": admitted,
            "declared_dialects": h.dialects.iter().map(|d| d.as_str()).collect::<Vec<_>>(),
            "reachability": reachability,
        }));
    }
    json!({
        "$comment": banner,
        "projection": r.support.as_str(),
        "catalog": format!("sha256:{}", compiled.sha256),
        "experience": r.experience.as_str(),
        "conformance": r.conformance.as_str(),
        "conformance_case_set": r.conformance_case_set.as_str(),
        "evidence_identity": r.evidence_identity.as_str(),
        "evidence_manifest": r.evidence_manifest.as_str(),
        "readiness": r.readiness.as_str(),
        "harnesses": harnesses,
    })
}
