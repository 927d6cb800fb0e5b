//! The ACP base grammar, read from the official ACP schema the catalog pins
//! (`[acp] schema`): methods and the side that handles each from `x-method`/`x-side`,
//! each method's params and result definitions (so every ACP message is checked against
//! its ACP definition), and the closed vocabularies (`sessionUpdate` kinds, stop reasons)
//! from the schema's own enumerations. Nothing here is transcribed.
//!
//! The catalog's `[acp]` lists are not a transcription but the floor `acp-v1` promises the
//! platform's consumers (the methods, sides, kinds and stop reasons they rely on): every
//! schema pinned under `acp-v1` must define them, so a new ACP release that drops or changes
//! one (a method it lacks, another side, a kind or stop reason it does not name) fails
//! generation instead of silently narrowing the lane.

use serde_json::Value;

use super::decoder::{annotated_methods, Plan};
use crate::catalog::model::{Catalog, Side};
use crate::schema::normalize::ref_target;
use crate::schema::SchemaSet;

/// What the schema says beyond its methods.
#[derive(Default)]
pub struct Vocabularies {
    pub update_kinds: Vec<String>,
    pub stop_reasons: Vec<String>,
}

/// Adds every ACP method of the pinned schema to `plan`; `Err` lists what is wrong.
pub fn grammar(plan: &mut Plan, schemas: &SchemaSet, catalog: &Catalog) -> Result<Vocabularies, Vec<String>> {
    let file = catalog.acp.schema.as_str();
    let document = schemas.files.get(file).ok_or_else(|| vec![format!("[acp] schema `{file}` is not a file under schemas/")])?;
    let methods = annotated_methods(plan, schemas, file, "", "acp")?;
    let mut errors = Vec::new();
    for listed in &catalog.acp.methods {
        match methods.get(listed.name.as_str()).map(|m| &m.plan) {
            None => errors.push(format!("the acp-v1 floor ([acp]) requires method `{}`, which the pinned schema `{file}` does not define", listed.name.as_str())),
            Some(m) if m.side != listed.side.value || m.notification != listed.notification => errors.push(format!(
                "the acp-v1 floor ([acp]) has method `{}` with another side or kind than the pinned schema `{file}`",
                listed.name.as_str()
            )),
            Some(_) => {}
        }
    }
    // The kinds and stop reasons are the alternatives of a member of a method's params or
    // result definition, found by its key in the schema.
    let tags = |method: &str, result: bool, property: &str, tag: Option<&str>| -> Result<Vec<String>, String> {
        let m = methods.get(method).ok_or_else(|| format!("the pinned schema `{file}` has no method `{method}`"))?;
        let part = if result { "result" } else { "params" };
        let key = if result { m.result_def.as_ref() } else { m.params_def.as_ref() };
        let key = key.ok_or_else(|| format!("`{method}` has no {part} definition in `{file}`"))?;
        let member = document["$defs"][key.as_str()]["properties"].get(property).ok_or_else(|| format!("`{method}` {part} has no `{property}`"))?;
        Ok(alternatives(document, resolve(document, member), tag))
    };
    let update_kinds = tags(catalog.acp.update_method.as_str(), false, "update", Some("sessionUpdate")).and_then(|kinds| {
        // The update member's kinds are its alternatives' `sessionUpdate` constants.
        (!kinds.is_empty()).then_some(kinds).ok_or_else(|| format!("no `sessionUpdate` kinds found in `{file}`"))
    });
    let stop_reasons = tags(catalog.acp.prompt_method.as_str(), true, "stopReason", None);
    let mut vocabularies = Vocabularies::default();
    match (update_kinds, stop_reasons) {
        (Ok(kinds), Ok(reasons)) if !reasons.is_empty() => {
            vocabularies = Vocabularies { update_kinds: kinds, stop_reasons: reasons };
        }
        (kinds, reasons) => {
            errors.extend(kinds.err());
            errors.extend(reasons.err());
        }
    }
    for kind in &catalog.acp.session_update_kinds {
        if !vocabularies.update_kinds.iter().any(|k| k == kind.as_str()) {
            errors.push(format!("the acp-v1 floor ([acp]) requires sessionUpdate kind `{}`, which the pinned schema does not name", kind.as_str()));
        }
    }
    for reason in &catalog.acp.stop_reasons {
        if !vocabularies.stop_reasons.iter().any(|r| r == reason.as_str()) {
            errors.push(format!("the acp-v1 floor ([acp]) requires stop reason `{}`, which the pinned schema does not name", reason.as_str()));
        }
    }
    for name in [&catalog.acp.version_method, &catalog.acp.update_method, &catalog.acp.prompt_method] {
        if !methods.contains_key(name.as_str()) {
            errors.push(format!("[acp] names method `{}`, which the pinned schema `{file}` does not define", name.as_str()));
        }
    }
    plan.methods.extend(methods.into_values().map(|m| m.plan));
    if errors.is_empty() {
        Ok(vocabularies)
    } else {
        Err(errors)
    }
}

/// Follows `$ref`s, and `allOf` wrappers of one reference.
fn resolve<'d>(document: &'d Value, mut schema: &'d Value) -> &'d Value {
    for _ in 0..16 {
        let next = match (schema.get("$ref").and_then(Value::as_str), schema.get("allOf").and_then(Value::as_array)) {
            (Some(r), _) => r,
            (None, Some(members)) if members.len() == 1 => match members[0].get("$ref").and_then(Value::as_str) {
                Some(r) => r,
                None => return schema,
            },
            _ => return schema,
        };
        match ref_target(next).ok().and_then(|p| document.pointer(&p)) {
            Some(target) => schema = target,
            None => return schema,
        }
    }
    schema
}

/// The string constants a union's alternatives carry: their own `const`/single `enum`, or
/// (for objects) that of their `tag` member.
fn alternatives(document: &Value, schema: &Value, tag: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let single = |s: &Value| -> Option<String> {
        s.get("const").and_then(Value::as_str).map(String::from).or_else(|| match s.get("enum")?.as_array()?.as_slice() {
            [Value::String(v)] => Some(v.clone()),
            _ => None,
        })
    };
    for key in ["oneOf", "anyOf"] {
        for member in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
            // The tag sits on the alternative itself, or on the definition it refers to.
            let own = |m: &Value| single(m).or_else(|| m.get("properties")?.get(tag?).and_then(single));
            let value = own(member).or_else(|| own(resolve(document, member)));
            out.extend(value);
        }
    }
    if out.is_empty() {
        out.extend(single(schema));
    }
    out
}

/// The pinned grammar as the docs page and `generated/acp-grammar.json` show it: every ACP
/// method of the schema with its side and definitions, and the closed vocabularies.
pub fn projection(plan: &Plan, catalog: &Catalog) -> Value {
    let side = |s: Side| match s {
        Side::Agent => "agent",
        Side::Client => "client",
        Side::Protocol => "protocol",
    };
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
        "protocol_version": catalog.acp.protocol_version.value,
        "methods": methods,
        "session_update_kinds": plan.vocabularies.update_kinds,
        "stop_reasons": plan.vocabularies.stop_reasons,
    })
}
