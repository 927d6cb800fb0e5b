//! Revision identities: each compatibility literal is pinned, in a checked-in lock, to the
//! sha256 of the canonical content behind it. Changing that content while keeping the
//! literal is an in-place reinterpretation, and generation refuses it, naming the literal
//! to bump. A new literal simply records the new content.
//!
//! What each literal covers:
//! - `extension_vectors`: the vectors schema and the golden vectors;
//! - `driver`: the driver's envelopes, the declaration slot, the slots and gated emissions;
//! - `protocol` (with `wire_protocol_version`): the ACP base grammar, the extension
//!   method families, and the slots' carriers and directions: the wire surface it names;
//! - `support`: the JSON Schema of the support snapshot (its shape, not its data);
//! - `conformance`: the checks with their requirements, the observation vocabulary and
//!   the gating; `conformance_case_set`: the check names and which are opt-in.
//!
//! `experience`, `evidence_identity`, `evidence_manifest` and `readiness` name
//! projections this project carries as literals but does not produce, so nothing pins them.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::catalog::model::Name;
use crate::catalog::{canonical_json, sha256_hex, Compiled};
use crate::diagnostic::{Class, Diagnostic, FileId};
use crate::schema::SchemaSet;
use crate::write::Output;

pub const LOCK_FILE: &str = "generated/revisions.lock.json";

/// (key, literal as written, content) for every pinned identity.
fn identities<'c>(compiled: &'c Compiled, schemas: &SchemaSet, golden: &Value) -> Vec<(&'static str, &'c Name, Value)> {
    let c = &compiled.catalog;
    let r = &c.revisions;
    let slots_surface: Vec<Value> = c
        .slots
        .iter()
        .map(|s| json!({"key": s.key, "carrier": s.carrier, "direction": s.direction}))
        .collect();
    let case_set: Vec<Value> = c.conformance.iter().map(|k| json!({"name": k.name, "opt_in": k.opt_in})).collect();
    vec![
        ("extension_vectors", &r.extension_vectors, json!({"schema": schemas.files.get(c.golden.schema.as_str()), "golden": golden})),
        (
            "driver",
            &r.driver,
            json!({"drivers": c.drivers, "declaration": c.declaration, "slots": c.slots, "gated": c.gated_emissions}),
        ),
        (
            "protocol",
            &r.protocol,
            json!({"wire_protocol_version": r.wire_protocol_version, "acp": c.acp, "method_sources": c.method_sources, "slots": slots_surface}),
        ),
        ("support", &r.support, crate::projection::support_schema()),
        (
            "conformance",
            &r.conformance,
            json!({"checks": c.conformance, "observations": c.observations, "gated": c.gated_emissions}),
        ),
        ("conformance_case_set", &r.conformance_case_set, Value::Array(case_set)),
    ]
}

/// The literal with its trailing `@N` incremented, as a suggestion.
fn bumped(literal: &str) -> String {
    match literal.rsplit_once('@') {
        Some((stem, n)) => match n.parse::<u64>() {
            Ok(n) => format!("{stem}@{}", n + 1),
            Err(_) => format!("{literal}@2"),
        },
        None => format!("{literal}@2"),
    }
}

/// Checks the content behind every literal against the lock and returns the new lock.
pub fn lock(
    root: &Path,
    compiled: &Compiled,
    file: FileId,
    schemas: &SchemaSet,
    banner: &str,
) -> Result<Output, Vec<Diagnostic>> {
    let path = compiled.catalog.golden.vectors.as_str();
    let golden = std::fs::read(root.join(path))
        .map_err(|e| format!("cannot read {path}: {e}"))
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| format!("{path}: invalid JSON: {e}")))
        .map_err(|m| vec![Diagnostic::new(Class::Input, m)])?;
    let previous: Map<String, Value> = std::fs::read(root.join(LOCK_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v.get("identities").and_then(Value::as_object).cloned())
        .unwrap_or_default();
    let mut errors = Vec::new();
    let mut entries = Map::new();
    for (key, literal, content) in identities(compiled, schemas, &golden) {
        let sha = sha256_hex(canonical_json(&content).as_bytes());
        if let Some(old) = previous.get(key) {
            let same_literal = old.get("literal").and_then(Value::as_str) == Some(literal.as_str());
            let old_sha = old.get("sha256").and_then(Value::as_str).unwrap_or_default();
            if same_literal && old_sha != sha {
                let pinned = format!(
                    "{LOCK_FILE} pins revisions.{key} to sha256:{old_sha}; the content now hashes to sha256:{sha} \
                     (if the lock was edited by hand, restore it with git)"
                );
                errors.push(
                    Diagnostic::new(
                        Class::Reinterpretation,
                        format!("the content behind `{}` changed but the literal did not", literal.as_str()),
                    )
                    .at(file, literal.span.clone(), format!("bump this literal, e.g. to `{}`", bumped(literal.as_str())))
                    .note(pinned)
                    .note("changing a revision's meaning in place is not allowed: bump the literal, then regenerate"),
                );
            }
        }
        entries.insert(key.to_string(), json!({"literal": literal.as_str(), "sha256": sha}));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut contents = serde_json::to_string_pretty(&json!({"$comment": banner, "identities": entries})).unwrap_or_default();
    contents.push('\n');
    Ok(Output { path: LOCK_FILE.into(), contents })
}
