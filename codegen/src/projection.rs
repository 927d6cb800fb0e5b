//! The support snapshot: what `GET /v1/support/harnesses` would serve, generated from the
//! same catalog as the docs page's support and ceiling tables.
//!
//! The snapshot is a typed model so that its shape has a JSON Schema of its own
//! (`generated/support-harnesses.schema.json`); the `support` revision literal pins that
//! schema, so a change of shape needs a new projection identity while new data does not.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::catalog::routes::{Route, Routes};
use crate::catalog::{Compiled, Index};
use crate::docs::tables;

/// The support projection.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SupportSnapshot {
    #[serde(rename = "$comment")]
    pub comment: String,
    /// The projection identity, e.g. `checkfu:harness-support@1`.
    pub projection: String,
    /// `sha256:` and the hex sha256 of the catalog's canonical form.
    pub catalog: String,
    pub experience: String,
    pub conformance: String,
    pub conformance_case_set: String,
    pub evidence_identity: String,
    pub evidence_manifest: String,
    pub readiness: String,
    pub harnesses: Vec<HarnessSupport>,
}

/// One harness entry as the support endpoint serves it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HarnessSupport {
    pub harness: String,
    /// `packaged` or `connected`.
    pub mode: String,
    pub supply: String,
    pub availability: String,
    pub adoption: String,
    /// `null` when the entry is not released over a protocol.
    pub release_protocol: Option<String>,
    /// The Runner driver, or the lane of a connected entry.
    pub execution_lane: String,
    pub model_lane: String,
    pub mcp_delivery: String,
    /// Conformance cases with exact-adapter signed evidence.
    pub catalog_evidence: Vec<String>,
    pub tuple_support: String,
    /// Axis → ceiling value, in axis order; `null` for an undeclared axis.
    pub ceiling: BTreeMap<String, Option<String>>,
    /// Axes whose ceiling is above the envelope by declaration admission.
    pub declaration_admitted: Vec<String>,
    /// Model wire dialects; empty when undeclared.
    pub declared_dialects: Vec<String>,
    /// Provider → whether the wire fits; `null` when the entry declares no dialect.
    pub reachability: BTreeMap<String, Option<bool>>,
}

fn owned<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    items.into_iter().map(str::to_string).collect()
}

pub fn support_snapshot(compiled: &Compiled, banner: &str) -> SupportSnapshot {
    let c = &compiled.catalog;
    let index = Index::new(c);
    let routes = Routes::new(c);
    let r = &c.revisions;
    let mut harnesses = Vec::new();
    for (i, h) in c.harnesses.iter().enumerate() {
        let mut ceiling = BTreeMap::new();
        let mut admitted = Vec::new();
        for (axis, value, star) in tables::ceiling_cells(&index, compiled, i) {
            if star {
                admitted.push(axis.clone());
            }
            ceiling.insert(axis, value);
        }
        let reachability =
            (c.providers.iter().enumerate()).map(|(p, provider)| (provider.name.value.clone(), routes.reachable(i, p))).collect();
        harnesses.push(HarnessSupport {
            harness: h.name.value.clone(),
            mode: h.mode.value.as_str().to_string(),
            supply: h.supply.value.clone(),
            availability: h.supply.value.clone(),
            adoption: h.adoption.value.clone(),
            release_protocol: h.release_protocol.as_ref().map(|p| p.value.clone()),
            execution_lane: tables::execution_lane(h),
            model_lane: h.model_lane.value.clone(),
            mcp_delivery: h.mcp_delivery.value.clone(),
            catalog_evidence: owned(h.evidence.iter().map(|e| e.as_str())),
            tuple_support: h.tuple_support.value.clone(),
            ceiling,
            declaration_admitted: admitted,
            declared_dialects: owned(h.dialects.iter().map(|d| d.as_str())),
            reachability,
        });
    }
    SupportSnapshot {
        comment: banner.to_string(),
        projection: r.support.value.clone(),
        catalog: format!("sha256:{}", compiled.sha256),
        experience: r.experience.value.clone(),
        conformance: r.conformance.value.clone(),
        conformance_case_set: r.conformance_case_set.value.clone(),
        evidence_identity: r.evidence_identity.value.clone(),
        evidence_manifest: r.evidence_manifest.value.clone(),
        readiness: r.readiness.value.clone(),
        harnesses,
    }
}

/// JSON Schema of the snapshot's shape.
pub fn support_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(SupportSnapshot)).unwrap_or_default()
}

/// The platform model gateway's per-provider request-path allow-list: the derived routes
/// (`catalog::routes`) that the runtime's tables and the reachability matrix carry too, so
/// that a path the gateway forwards, the relay serves and the platform reasons about cannot
/// disagree.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GatewayAllowList {
    #[serde(rename = "$comment")]
    pub comment: String,
    /// Reviewed provider → the request paths of the dialects it accepts.
    pub providers: BTreeMap<String, Vec<String>>,
    /// The paths of a provider without a reviewed entry.
    pub unlisted_provider: Vec<String>,
}

pub fn gateway_allow_list(compiled: &Compiled, banner: &str) -> GatewayAllowList {
    let routes = Routes::new(&compiled.catalog);
    let paths = |routes: &[Route]| -> Vec<String> { routes.iter().map(|r| r.path.to_string()).collect() };
    GatewayAllowList {
        comment: banner.to_string(),
        providers: routes.providers.iter().map(|p| (p.provider.to_string(), paths(&p.routes))).collect(),
        unlisted_provider: paths(&routes.unlisted),
    }
}
