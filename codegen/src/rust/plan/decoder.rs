//! Plans the decoder tables from the catalog and the schemas: the slot table (`_meta` key →
//! carrier → direction → class → payload definition), the method table (the ACP base
//! grammar, the Checkfu extension methods, and the method families the catalog reads from
//! schemas: Goose's `x-method` annotations, khy-os's method enum) and the golden-vector
//! table.
//!
//! Planning runs before the schema types are generated: it decides which schema nodes
//! need a named definition (an entry point) so that every row names a generated check.

use std::collections::BTreeMap;

use serde_json::Value;

use super::annotated::annotated_methods;
use super::model::{Carrier, Grammar, MethodPlan, Part, Plan, SlotPlan, VectorPlan};
use crate::catalog::model::{Catalog, Direction, Side, SourceStyle};
use crate::diagnostic::{Class, Diagnostic};
use crate::schema::normalize::pascal;
use crate::schema::SchemaSet;

/// Parses a carrier as the docs write it: `initialize response _meta`, `session/new
/// request _meta`, `session/update member _meta`, `ACP extension request`.
fn carrier(text: &str) -> Option<Carrier> {
    if text == "ACP extension request" {
        return Some(Carrier { method: None, part: Part::Method });
    }
    let rest = text.strip_suffix(" _meta")?;
    let (method, part) = rest.rsplit_once(' ')?;
    let part = match part {
        "request" => Part::Request,
        "response" => Part::Response,
        "member" => Part::Member,
        _ => return None,
    };
    Some(Carrier { method: Some(method.to_string()), part })
}

/// A slot's carrier under ACP v2: its `carrier_v2`, else its v1 carrier (`v1`), judged
/// against v2's grammar (`v2_methods`; `None` when it could not be read) as v1's carrier is
/// against v1's. The diagnostic points at the line that names the carrier.
fn carrier_v2(
    slot: &crate::catalog::model::Slot,
    v1: &Carrier,
    v2_methods: Option<&[String]>,
    file: crate::diagnostic::FileId,
) -> Result<Carrier, Diagnostic> {
    let key = slot.key.as_str();
    let (named, span, what) = match &slot.carrier_v2 {
        Some(c) => (c.as_str(), c.span.clone(), "this ACP v2 carrier"),
        None => (slot.carrier.as_str(), slot.key.span.clone(), "this slot (its v1 carrier, which v2 keeps)"),
    };
    let at = |message: String| Diagnostic::new(Class::DeadVocabulary, message).at(file, span.clone(), what).entry(key);
    let Some(v2) = carrier(named) else {
        return Err(at(format!("slot `{key}` has an ACP v2 carrier no decoder reads: `{named}`")));
    };
    // An extension method stays one, and a `_meta` member stays a member: the slot's
    // class and payload were judged for what it is.
    if (v2.part == Part::Method) != (v1.part == Part::Method) {
        return Err(at(format!("slot `{key}` is {} under v1 but `{named}` under ACP v2", carrier_words(v1))));
    }
    if let (Some(m), Some(methods)) = (&v2.method, v2_methods) {
        if !methods.contains(m) {
            return Err(at(format!(
                "slot `{key}` rides `{m}` under ACP v2, which is not a method of the pinned v2 schema (name its v2 carrier with `carrier_v2`)"
            )));
        }
    }
    Ok(v2)
}

fn carrier_words(c: &Carrier) -> String {
    match (&c.method, c.part) {
        (None, _) | (_, Part::Method) => "an extension request".into(),
        (Some(m), Part::Request) => format!("`{m} request _meta`"),
        (Some(m), Part::Response) => format!("`{m} response _meta`"),
        (Some(m), Part::Member) => format!("`{m} member _meta`"),
    }
}

/// Plans every decoder table from the catalog and the schemas.
/// `recorded` is the ACP floor the revisions lock holds for the protocol literal, if any.
pub fn plan(
    catalog: &Catalog,
    schemas: &SchemaSet,
    file: crate::diagnostic::FileId,
    recorded: Option<&Grammar>,
) -> Result<Plan, Vec<Diagnostic>> {
    let mut plan = Plan::default();
    let mut errors = Vec::new();
    // When the grammar could not be read, the slots' carriers are not judged against it:
    // every one would be reported missing, burying the cause.
    let mut grammar_read = true;
    match super::grammar::grammar(&mut plan, schemas, catalog, recorded) {
        Ok((grammar, floor)) => (plan.grammar, plan.floor) = (grammar, floor),
        Err(problems) => {
            grammar_read = !plan.methods.is_empty();
            let span = catalog.acp.schema.span.clone();
            errors.extend(
                problems.into_iter().map(|p| Diagnostic::new(Class::UnknownOrDuplicate, p).at(file, span.clone(), "the pinned ACP schema")),
            );
        }
    }
    let kinds = grammar_read.then_some(plan.grammar.session_update_kinds.as_slice());
    plan.fidelity_updates = fidelity_updates("[acp]", &catalog.acp.optional_fidelity_updates, kinds, file, &mut errors);
    let v2_read = super::grammar::grammar_v2(&mut plan, schemas, catalog);
    let v2_methods: Option<Vec<String>> = v2_read.is_ok().then(|| plan.v2.grammar.methods.iter().map(|m| m.name.clone()).collect());
    match v2_read {
        Ok(()) => {
            let kinds = Some(plan.v2.grammar.session_update_kinds.as_slice());
            plan.v2.fidelity_updates = fidelity_updates("[acp_v2]", &catalog.acp_v2.optional_fidelity_updates, kinds, file, &mut errors);
        }
        Err(problems) => {
            let span = catalog.acp_v2.schema.span.clone();
            errors.extend(
                problems
                    .into_iter()
                    .map(|p| Diagnostic::new(Class::UnknownOrDuplicate, p).at(file, span.clone(), "the pinned ACP v2 schema")),
            );
        }
    }
    let acp_methods: Vec<String> = plan.methods.iter().map(|m| m.name.clone()).collect();
    for slot in &catalog.slots {
        let key = slot.key.as_str();
        let at = |message: String| Diagnostic::new(Class::DeadVocabulary, message).at(file, slot.key.span.clone(), "this slot").entry(key);
        let Some(Carrier { method, part }) = carrier(slot.carrier.as_str()) else {
            errors.push(at(format!("slot `{key}` has a carrier no decoder reads: `{}`", slot.carrier.as_str())));
            continue;
        };
        let v2 = match carrier_v2(slot, &Carrier { method: method.clone(), part }, v2_methods.as_deref(), file) {
            Ok(v2) => v2,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if let Some(m) = &method {
            if grammar_read && !acp_methods.contains(m) {
                errors.push(at(format!("slot `{key}` rides `{m}`, which is not an ACP method of the catalog")));
                continue;
            }
        }
        let is_method = part == Part::Method;
        let wanted = if is_method { format!("{}Params", pascal(key)) } else { pascal(key) };
        let payload = match plan.entry(schemas, slot.schema.as_str(), &wanted) {
            Ok(def) => def,
            Err(why) => {
                errors.push(at(format!("slot `{key}`: {why}")));
                continue;
            }
        };
        let result = match &slot.result_schema {
            Some(r) => match plan.entry(schemas, r.as_str(), &format!("{}Result", pascal(key))) {
                Ok(def) => Some(def),
                Err(why) => {
                    errors.push(at(format!("slot `{key}` result: {why}")));
                    continue;
                }
            },
            None if is_method => {
                errors.push(at(format!("extension method `{key}` has no `result_schema`")));
                continue;
            }
            None => None,
        };
        if let Some(req) = &slot.requires {
            if !catalog.slots.iter().any(|s| s.key == req.slot) {
                errors.push(at(format!("slot `{key}` requires unknown slot `{}`", req.slot.as_str())));
            }
        }
        if is_method {
            let side = match slot.direction.value {
                Direction::ClientToHarness => Side::Agent,
                Direction::HarnessToClient => Side::Client,
            };
            plan.methods.push(MethodPlan {
                name: key.to_string(),
                source: "checkfu".into(),
                side,
                notification: false,
                params: Some(payload.clone()),
                result: result.clone(),
                envelope: None,
            });
        }
        plan.slots.push(SlotPlan {
            key: key.to_string(),
            method,
            part,
            direction: slot.direction.value,
            class: slot.class.value,
            payload,
            result,
            safety_profile: slot.safety_profile,
            requires: slot.requires.as_ref().map(|r| (r.slot.value.clone(), r.value.value.clone())),
            v2,
        });
    }
    for source in &catalog.method_sources {
        if let Err(e) = method_source(&mut plan, schemas, source) {
            errors.push(Diagnostic::new(Class::DeadVocabulary, e).at(file, source.name.span.clone(), "this method source"));
        }
    }
    if let Err(e) = vectors(&mut plan, schemas, catalog.golden.schema.as_str()) {
        errors.push(Diagnostic::new(Class::DeadVocabulary, e));
    }
    // Every `_meta` slot key shares one namespace; the decoder judges exactly the keys in it
    // (including unknown ones), so it is derived here rather than written twice.
    for slot in plan.slots.iter().filter(|s| s.part != Part::Method) {
        let Some((prefix, _)) = slot.key.split_once('.') else {
            errors.push(Diagnostic::new(Class::DeadVocabulary, format!("`_meta` slot `{}` has no `namespace.` prefix", slot.key)));
            continue;
        };
        let namespace = format!("{prefix}.");
        if plan.namespace.is_empty() {
            plan.namespace = namespace;
        } else if plan.namespace != namespace {
            errors.push(Diagnostic::new(
                Class::DeadVocabulary,
                format!("`_meta` slot `{}` is outside the namespace `{}` of the other slots", slot.key, plan.namespace),
            ));
        }
    }
    let mut seen = BTreeMap::new();
    for m in &plan.methods {
        if let Some(first) = seen.insert(m.name.clone(), m.source.clone()) {
            errors.push(Diagnostic::new(
                Class::UnknownOrDuplicate,
                format!("method `{}` is defined by both `{first}` and `{}`", m.name, m.source),
            ));
        }
    }
    if errors.is_empty() {
        Ok(plan)
    } else {
        Err(errors)
    }
}

/// The optional-fidelity kinds `section` lists, each once and each a kind of `kinds` (the
/// pinned schema's; `None` when it could not be read, and the kinds are not judged).
fn fidelity_updates(
    section: &str,
    listed: &[crate::catalog::model::Name],
    kinds: Option<&[String]>,
    file: crate::diagnostic::FileId,
    errors: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (i, kind) in listed.iter().enumerate() {
        let at = |message: String| Diagnostic::new(Class::UnknownOrDuplicate, message).at(file, kind.span.clone(), "this kind");
        if listed[..i].iter().any(|k| k.as_str() == kind.as_str()) {
            errors.push(at(format!("{section} optional_fidelity_updates names `{}` twice", kind.as_str())));
        } else if let Some(kinds) = kinds.filter(|kinds| !kinds.iter().any(|k| k == kind.as_str())) {
            errors.push(at(format!(
                "{section} optional_fidelity_updates names `{}`, which is not a sessionUpdate kind of the pinned schema (it has: {})",
                kind.as_str(),
                kinds.join(", ")
            )));
        } else {
            out.push(kind.as_str().to_owned());
        }
    }
    out
}

fn method_source(plan: &mut Plan, schemas: &SchemaSet, source: &crate::catalog::model::MethodSource) -> Result<(), String> {
    let file = source.schema.as_str();
    let document = schemas.files.get(file).ok_or_else(|| format!("method source `{}`: no schema file `{file}`", source.name.as_str()))?;
    let defs = document.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default();
    let name = source.name.value.clone();
    match source.style.value {
        SourceStyle::Annotations => {
            let prefix = source.prefix.as_ref().map_or("", |p| p.as_str());
            let methods = annotated_methods(plan, schemas, file, prefix, &name).map_err(|errors| errors.join("; "))?;
            plan.methods.extend(methods.into_values().map(|m| m.plan));
        }
        SourceStyle::MethodEnum => {
            let envelope = plan.entry(schemas, &format!("{file}#"), "")?;
            let methods = document
                .pointer("/properties/method/enum")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("`{file}` has no `/properties/method/enum`"))?;
            for method in methods.iter().filter_map(Value::as_str) {
                let def = format!("{}Params", pascal(method));
                let params = if defs.contains_key(&def) {
                    Some(plan.entry(schemas, &format!("{file}#/$defs/{def}"), &def)?)
                } else {
                    // The envelope still checks the message; its params stay untyped.
                    plan.warnings.push(format!(
                        "schemas/{file}: method `{method}` has no `{def}` definition; its params are checked only by the envelope"
                    ));
                    None
                };
                plan.methods.push(MethodPlan {
                    name: method.to_string(),
                    source: name.clone(),
                    side: Side::Agent,
                    notification: false,
                    params,
                    result: None,
                    envelope: Some(envelope.clone()),
                });
            }
        }
    }
    Ok(())
}

fn vectors(plan: &mut Plan, schemas: &SchemaSet, file: &str) -> Result<(), String> {
    // An unknown file was reported by validation.
    let Some(document) = schemas.files.get(file) else { return Ok(()) };
    let variants = document
        .pointer("/properties/vectors/items/anyOf")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("`{file}` has no `/properties/vectors/items/anyOf`"))?;
    for (i, variant) in variants.iter().enumerate() {
        let single =
            |p: &str| variant.pointer(p).and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_str).map(str::to_string);
        let (Some(name), Some(direction)) = (single("/properties/name/enum"), single("/properties/direction/enum")) else {
            return Err(format!("`{file}`: vector variant {i} has no single name and direction"));
        };
        let pointer = format!("{file}#/properties/vectors/items/anyOf/{i}/properties/wire");
        let wire = plan.entry(schemas, &pointer, &format!("Wire{}", pascal(&name)))?;
        plan.vectors.push(VectorPlan { name, direction, wire });
    }
    Ok(())
}
