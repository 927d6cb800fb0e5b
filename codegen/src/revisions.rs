//! Revision identities: each compatibility literal is pinned, in a checked-in lock, to the
//! sha256 of the canonical content behind it. Changing that content while keeping the
//! literal is an in-place reinterpretation, and generation refuses it, naming the literal
//! to bump. A new literal simply records the new content.
//!
//! What each literal covers:
//! - `extension_vectors`: the vectors schema and the golden vectors;
//! - `driver`: the driver's envelopes, the declaration slot, the slots and gated emissions;
//! - `protocol` (with `wire_protocol_version`): the ACP floor it promises, the extension
//!   method families, and the slots' carriers and directions: the wire surface it names.
//!   The floor is kept in the lock as data (`acp_floor`), recorded from the pinned schema
//!   when the literal is new; a schema pinned later must keep it (`rust::acp`);
//! - `acp_schema`: the official ACP JSON Schema that `[acp] schema` names, byte for
//!   byte as parsed (replacing it with a new release means bumping this literal);
//! - `acp_v2_schema`: the official ACP v2 JSON Schema that `[acp_v2] schema` names, as
//!   `acp_schema` pins v1's;
//! - `support`: the JSON Schema of the support snapshot (its shape, not its data);
//! - `conformance`: the checks with their requirements, the observation vocabulary and
//!   the gating; `conformance_case_set`: the check names and which are opt-in;
//! - `oneshot_protocol`: the one-shot wire surface, what a declaration may hold (the
//!   authoring schema) and the stream's event kinds;
//! - `oneshot_driver`: the authoring schema, derived from the release decoder's type, and
//!   the `[oneshot]` lane as the catalog states it;
//! - `oneshot_stream`: the normalized stream schema file, as parsed;
//! - `oneshot_exchanges`: every file under the exchanges directory, each by its path and
//!   the sha256 of its bytes (an absent directory is the empty set, so the first exchange
//!   written under an unchanged literal is refused like any later change).
//!
//! `experience`, `evidence_identity`, `evidence_manifest` and `readiness` name
//! projections this project carries as literals but does not produce, so nothing pins them.
//!
//! Axis order is pinned by the `driver` literal too, since the envelopes and every ceiling
//! are read through it. The lock keeps each axis's values in order (not a hash), because
//! what must not change is the relative order of values both versions know: appending a
//! stronger value or dropping one is a catalog edit, while swapping two is a different
//! lattice and needs a new literal.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::catalog::model::{Catalog, Name};
use crate::catalog::{canonical_json, sha256_hex, Compiled};
use crate::diagnostic::{Class, Diagnostic, FileId};
use crate::rust::plan::Grammar;
use crate::schema::SchemaSet;
use crate::write::Output;

pub const LOCK_FILE: &str = "generated/revisions.lock.json";

/// The lock's key for the pinned axis order.
const AXIS_ORDER: &str = "axis_order";

/// The lock's key for the ACP floor the protocol literal promises.
const ACP_FLOOR: &str = "acp_floor";

/// The checked-in lock, when it exists and is JSON.
fn read_lock(root: &Path) -> Option<Value> {
    std::fs::read(root.join(LOCK_FILE)).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok())
}

/// Every axis's values, weakest first, under the literal that pins them.
fn axis_order(catalog: &Catalog) -> Value {
    let axes: Map<String, Value> =
        catalog.axes.iter().map(|a| (a.name.value.clone(), a.values.iter().map(|v| Value::from(v.as_str())).collect())).collect();
    json!({"literal": catalog.revisions.driver.as_str(), "axes": axes})
}

/// Refuses a change of axis order under an unchanged `driver` literal: for every axis the
/// lock knows, the values both versions share must keep their order.
pub fn check_axis_order(root: &Path, catalog: &Catalog, file: FileId) -> Vec<Diagnostic> {
    let Some(pinned) = read_lock(root).and_then(|lock| lock.get(AXIS_ORDER).cloned()) else { return Vec::new() };
    let literal = &catalog.revisions.driver;
    if pinned.get("literal").and_then(Value::as_str) != Some(literal.as_str()) {
        // A new literal records a new order.
        return Vec::new();
    }
    let mut out = Vec::new();
    for axis in &catalog.axes {
        let Some(old) = pinned.get("axes").and_then(|a| a.get(axis.name.as_str())).and_then(Value::as_array) else {
            continue;
        };
        let old: Vec<&str> = old.iter().filter_map(Value::as_str).collect();
        let now: Vec<&Name> = axis.values.iter().filter(|v| old.contains(&v.as_str())).collect();
        let was: Vec<&str> = old.iter().copied().filter(|o| axis.values.iter().any(|v| v.as_str() == *o)).collect();
        let Some(i) = now.iter().zip(&was).position(|(n, w)| n.as_str() != *w) else { continue };
        let render = |values: Vec<&str>| values.join(" < ");
        out.push(
            Diagnostic::new(
                Class::Reinterpretation,
                format!("the order of axis `{}` changed but `{}` did not", axis.name.as_str(), literal.as_str()),
            )
            .at(file, now[i].span.clone(), format!("the pinned order has `{}` here", was[i]))
            .related(literal.span.clone(), format!("bump this literal, e.g. to `{}`", bumped(literal.as_str())))
            .axis(axis.name.as_str())
            .field("values")
            .note(format!("pinned by `{}` in {LOCK_FILE}: {}", literal.as_str(), render(was.clone())))
            .note(format!("the catalog now says: {}", render(now.iter().map(|n| n.as_str()).collect())))
            .note("an axis vocabulary runs weakest to strongest; reordering it changes every envelope and ceiling, so bump revisions.driver, then regenerate"),
        );
    }
    out
}

/// The ACP floor the lock records for the catalog's protocol literal: `Ok(None)` when there
/// is no lock or it records another literal (a new literal records a new floor).
pub fn recorded_floor(root: &Path, catalog: &Catalog, file: FileId) -> Result<Option<Grammar>, Diagnostic> {
    let Some(pinned) = read_lock(root).and_then(|lock| lock.get(ACP_FLOOR).cloned()) else { return Ok(None) };
    let literal = &catalog.revisions.protocol;
    if pinned.get("literal").and_then(Value::as_str) != Some(literal.as_str()) {
        return Ok(None);
    }
    serde_json::from_value(pinned.get("grammar").cloned().unwrap_or_default()).map(Some).map_err(|e| {
        Diagnostic::new(Class::Input, format!("{LOCK_FILE}: the ACP floor recorded for `{}` cannot be read: {e}", literal.as_str()))
            .at(file, literal.span.clone(), "the protocol literal it belongs to")
            .note("the lock is generated: if it was edited by hand, restore it with git")
    })
}

/// Every file under `dir`, recursively: its path relative to `dir` with `/` separators, and
/// its full path; sorted by the relative path. A missing directory has none.
pub fn files_under(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else { continue };
        for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(dir) {
                let parts: Vec<String> = relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
                out.push((parts.join("/"), path));
            }
        }
    }
    out.sort();
    out
}

/// The one-shot exchanges as content: relative path → sha256 of the file's bytes.
fn exchanges(root: &Path, dir: &str) -> Result<Value, String> {
    let mut files = Map::new();
    for (relative, path) in files_under(&root.join(dir)) {
        let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {dir}/{relative}: {e}"))?;
        files.insert(relative, Value::from(sha256_hex(&bytes)));
    }
    Ok(Value::Object(files))
}

/// (key, literal as written, content) for every pinned identity.
fn identities<'c>(
    compiled: &'c Compiled,
    schemas: &SchemaSet,
    golden: &Value,
    exchanges: Value,
    floor: &Grammar,
) -> Vec<(&'static str, &'c Name, Value)> {
    let c = &compiled.catalog;
    let r = &c.revisions;
    let slots_surface: Vec<Value> = c.slots.iter().map(|s| json!({"key": s.key, "carrier": s.carrier, "direction": s.direction})).collect();
    let case_set: Vec<Value> = c.conformance.iter().map(|k| json!({"name": k.name, "opt_in": k.opt_in})).collect();
    let authoring = crate::oneshot::authoring_schema();
    let stream = schemas.files.get(c.oneshot.stream_schema.as_str());
    let event_kinds = stream.map(crate::oneshot::event_kinds).unwrap_or_default();
    vec![
        ("extension_vectors", &r.extension_vectors, json!({"schema": schemas.files.get(c.golden.schema.as_str()), "golden": golden})),
        (
            "driver",
            &r.driver,
            json!({"drivers": c.drivers, "declaration": admitted_declaration(c), "slots": v1_slots(c), "gated": c.gated_emissions}),
        ),
        (
            "protocol",
            &r.protocol,
            json!({"wire_protocol_version": r.wire_protocol_version, "acp": floor, "method_sources": c.method_sources, "slots": slots_surface}),
        ),
        ("acp_schema", &r.acp_schema, json!({"file": c.acp.schema, "schema": schemas.files.get(c.acp.schema.as_str())})),
        ("acp_v2_schema", &r.acp_v2_schema, json!({"file": c.acp_v2.schema, "schema": schemas.files.get(c.acp_v2.schema.as_str())})),
        ("support", &r.support, crate::projection::support_schema()),
        ("conformance", &r.conformance, json!({"checks": c.conformance, "observations": c.observations, "gated": c.gated_emissions})),
        ("conformance_case_set", &r.conformance_case_set, Value::Array(case_set)),
        ("oneshot_protocol", &r.oneshot_protocol, json!({"declaration": authoring, "events": event_kinds})),
        ("oneshot_driver", &r.oneshot_driver, json!({"authoring_schema": authoring, "lane": c.oneshot})),
        ("oneshot_stream", &r.oneshot_stream, json!({"file": c.oneshot.stream_schema, "schema": stream})),
        ("oneshot_exchanges", &r.oneshot_exchanges, json!({"directory": c.oneshot.exchanges, "files": exchanges})),
    ]
}

/// The slots as the v1 driver reads them: a slot's ACP v2 carrier (`carrier_v2`) is no
/// part of the v1 driver's surface, so naming one does not reinterpret `driver`.
fn v1_slots(c: &Catalog) -> Value {
    let mut slots = json!(c.slots);
    for slot in slots.as_array_mut().into_iter().flatten().filter_map(Value::as_object_mut) {
        slot.remove("carrier_v2");
    }
    slots
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
    floor: &Grammar,
    banner: &str,
) -> Result<Output, Vec<Diagnostic>> {
    let path = compiled.catalog.golden.vectors.as_str();
    let golden = std::fs::read(root.join(path))
        .map_err(|e| format!("cannot read {path}: {e}"))
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| format!("{path}: invalid JSON: {e}")))
        .map_err(|m| vec![Diagnostic::new(Class::Input, m)])?;
    let exchanges = exchanges(root, compiled.catalog.oneshot.exchanges.as_str()).map_err(|m| {
        vec![Diagnostic::new(Class::Input, m).at(file, compiled.catalog.oneshot.exchanges.span.clone(), "the exchanges directory")]
    })?;
    let previous: Map<String, Value> =
        read_lock(root).and_then(|v| v.get("identities").and_then(Value::as_object).cloned()).unwrap_or_default();
    let mut errors = Vec::new();
    let mut entries = Map::new();
    for (key, literal, content) in identities(compiled, schemas, &golden, exchanges, floor) {
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
    let floor = json!({"literal": compiled.catalog.revisions.protocol.as_str(), "grammar": floor});
    let mut contents = serde_json::to_string_pretty(
        &json!({"$comment": banner, "identities": entries, AXIS_ORDER: axis_order(&compiled.catalog), ACP_FLOOR: floor}),
    )
    .unwrap_or_default();
    contents.push('\n');
    Ok(Output { path: LOCK_FILE.into(), contents })
}

/// The declaration as the driver admits it. A member's `proof` says how the local probe
/// exercises a declared value, not what the driver admits or promotes, so it stays outside
/// the driver's identity: a new probe step never reinterprets `checkfu:acp-v1@1`.
fn admitted_declaration(c: &crate::catalog::model::Catalog) -> Value {
    let mut declaration = json!(c.declaration);
    for list in ["upgrades", "mechanisms"] {
        for member in declaration[list].as_array_mut().into_iter().flatten() {
            if let Some(member) = member.as_object_mut() {
                member.remove("proof");
            }
        }
    }
    declaration
}
