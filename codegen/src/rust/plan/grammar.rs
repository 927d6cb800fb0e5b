//! The ACP base grammar, read from the official ACP schema the catalog pins
//! (`[acp] schema`): methods and the side that handles each from `x-method`/`x-side`,
//! each method's params and result definitions (so every ACP message is checked against
//! its ACP definition), the methods that carry the closed vocabularies (found by the
//! members the decoder reads: `protocolVersion`, `update.sessionUpdate`, `stopReason`), and
//! those vocabularies from the schema's own enumerations. Nothing here is transcribed.
//!
//! The part of the grammar that `acp-v1` promises the platform's consumers (its floor) is
//! recorded, by the generator, in the revisions lock when the protocol literal is first
//! pinned: then it is the whole grammar of the schema pinned at that moment. Every schema
//! pinned later under the same literal must still define all of it, so a new ACP release
//! that drops or changes something `acp-v1` promised (a method, its side, a kind, a stop
//! reason) fails generation instead of silently narrowing the lane, while what it adds is
//! simply taken. Dropping something on purpose is a new protocol literal, which records a
//! new floor.

use std::collections::BTreeMap;

use serde_json::Value;

use super::annotated::{annotated_methods, AnnotatedMethod};
use super::model::{kind, side, Grammar, GrammarMethod, GrammarV2, Plan};
use crate::catalog::model::Catalog;
use crate::schema::normalize::ref_target;
use crate::schema::SchemaSet;

/// Adds every ACP method of the pinned schema to `plan`, and returns the schema's grammar
/// with the floor to record: the one the lock recorded for the protocol literal
/// (`recorded`), which the schema must keep, or, when none is, the schema's whole grammar.
/// `Err` lists what is wrong.
pub fn grammar(
    plan: &mut Plan,
    schemas: &SchemaSet,
    catalog: &Catalog,
    recorded: Option<&Grammar>,
) -> Result<(Grammar, Grammar), Vec<String>> {
    let file = catalog.acp.schema.as_str();
    let document = schemas.files.get(file).ok_or_else(|| vec![format!("[acp] schema `{file}` is not a file under schemas/")])?;
    let methods = annotated_methods(plan, schemas, file, "", "acp")?;
    let read = read(document, file, &methods, catalog);
    plan.methods.extend(methods.into_values().map(|m| m.plan));
    let now = read?;
    let floor = recorded.cloned().unwrap_or_else(|| now.clone());
    let unkept = unkept(&floor, &now, catalog);
    if unkept.is_empty() {
        Ok((now, floor))
    } else {
        Err(unkept)
    }
}

/// A pinned ACP schema's methods, as the grammar readers look into them.
struct Lookup<'d> {
    document: &'d Value,
    file: &'d str,
    methods: &'d BTreeMap<String, AnnotatedMethod>,
}

impl<'d> Lookup<'d> {
    /// The member `property` of a method's params or result definition, resolved.
    fn member(&self, m: &AnnotatedMethod, result: bool, property: &str) -> Option<&'d Value> {
        let key = if result { m.result_def.as_ref() } else { m.params_def.as_ref() }?;
        self.document["$defs"][key.as_str()]["properties"].get(property).map(|v| resolve(self.document, v))
    }

    /// The one method that `what` describes: none or several is an error, since the decoder
    /// must know where each closed vocabulary rides.
    fn only(&self, what: &str, found: Vec<&AnnotatedMethod>) -> Result<String, String> {
        let file = self.file;
        match found.as_slice() {
            [one] => Ok(one.plan.name.clone()),
            [] => Err(format!("no method of the pinned schema `{file}` {what}")),
            many => Err(format!(
                "several methods of the pinned schema `{file}` {what}: {}",
                many.iter().map(|m| format!("`{}`", m.plan.name)).collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// The request whose result carries `property`.
    fn result_carrying(&self, property: &str) -> Result<String, String> {
        let found = self.methods.values().filter(|m| !m.plan.notification && self.member(m, true, property).is_some()).collect();
        self.only(&format!("has a result carrying `{property}`"), found)
    }

    /// The `sessionUpdate` kinds a method's `update` member names.
    fn update_kinds(&self, m: &AnnotatedMethod) -> Vec<String> {
        self.member(m, false, "update").map(|u| alternatives(self.document, u, Some("sessionUpdate"))).unwrap_or_default()
    }

    /// The notification whose `update` member is tagged by `sessionUpdate`.
    fn update_method(&self) -> Result<String, String> {
        let found = self.methods.values().filter(|m| m.plan.notification && !self.update_kinds(m).is_empty()).collect();
        self.only("is a notification whose `update` member is tagged by `sessionUpdate`", found)
    }

    /// `Err` when `version` (Checkfu's pin, named `what`) is outside the range the schema
    /// allows for `version_method`'s `protocolVersion`.
    fn version_in_range(&self, version_method: &str, version: u32, what: &str) -> Result<(), String> {
        let Some(range) = self.member(&self.methods[version_method], true, "protocolVersion") else { return Ok(()) };
        let bound = |key: &str| range.get(key).and_then(Value::as_f64);
        let v = f64::from(version);
        if bound("minimum").is_some_and(|min| v < min) || bound("maximum").is_some_and(|max| v > max) {
            return Err(format!("{what} {version} is outside the range `{}` allows for `protocolVersion`", self.file));
        }
        Ok(())
    }

    fn grammar_methods(&self) -> Vec<GrammarMethod> {
        self.methods
            .values()
            .map(|m| GrammarMethod { name: m.plan.name.clone(), side: m.plan.side, notification: m.plan.notification })
            .collect()
    }
}

/// The schema's grammar: its methods, the vocabularies and the methods that carry them.
fn read(document: &Value, file: &str, methods: &BTreeMap<String, AnnotatedMethod>, catalog: &Catalog) -> Result<Grammar, Vec<String>> {
    let lookup = Lookup { document, file, methods };
    let (version, prompt, update) =
        (lookup.result_carrying("protocolVersion"), lookup.result_carrying("stopReason"), lookup.update_method());
    let mut errors = Vec::new();
    let (Ok(version_method), Ok(prompt_method), Ok(update_method)) = (&version, &prompt, &update) else {
        errors.extend([version.err(), prompt.err(), update.err()].into_iter().flatten());
        return Err(errors);
    };
    let stop_reasons = alternatives(document, lookup.member(&methods[prompt_method], true, "stopReason").unwrap_or(&Value::Null), None);
    if stop_reasons.is_empty() {
        errors.push(format!("`{prompt_method}`'s `stopReason` in `{file}` names no stop reasons"));
    }
    // The version is Checkfu's pin; the schema bounds it.
    let protocol_version = catalog.revisions.wire_protocol_version.value;
    errors.extend(lookup.version_in_range(version_method, protocol_version, "revisions.wire_protocol_version").err());
    let grammar = Grammar {
        protocol_version,
        version_method: version_method.clone(),
        update_method: update_method.clone(),
        prompt_method: prompt_method.clone(),
        session_update_kinds: lookup.update_kinds(&methods[update_method]),
        stop_reasons,
        methods: lookup.grammar_methods(),
    };
    if errors.is_empty() {
        Ok(grammar)
    } else {
        Err(errors)
    }
}

/// ACP v2's grammar, from the schema `[acp_v2]` pins, with its methods added to `plan.v2`.
/// v2 carries no stop reason on the prompt's answer (a turn ends with an idle
/// `state_update`), and its enumerations are open, so only the version method, the update
/// method and the kinds the schema names are read.
pub fn grammar_v2(plan: &mut Plan, schemas: &SchemaSet, catalog: &Catalog) -> Result<(), Vec<String>> {
    let file = catalog.acp_v2.schema.as_str();
    let document = schemas.files.get(file).ok_or_else(|| vec![format!("[acp_v2] schema `{file}` is not a file under schemas/")])?;
    let methods = annotated_methods(plan, schemas, file, "", "acp")?;
    let lookup = Lookup { document, file, methods: &methods };
    let (version, update) = (lookup.result_carrying("protocolVersion"), lookup.update_method());
    let (Ok(version_method), Ok(update_method)) = (&version, &update) else {
        return Err([version.err(), update.err()].into_iter().flatten().collect());
    };
    let protocol_version = catalog.acp_v2.protocol_version.value;
    lookup.version_in_range(version_method, protocol_version, "[acp_v2] protocol_version").map_err(|e| vec![e])?;
    plan.v2.grammar = GrammarV2 {
        protocol_version,
        version_method: version_method.clone(),
        update_method: update_method.clone(),
        session_update_kinds: lookup.update_kinds(&methods[update_method]),
        methods: lookup.grammar_methods(),
    };
    plan.v2.methods = methods.into_values().map(|m| m.plan).collect();
    Ok(())
}

/// What the schema's grammar (and the wire version) no longer keeps of the floor.
fn unkept(floor: &Grammar, now: &Grammar, catalog: &Catalog) -> Vec<String> {
    let literal = catalog.revisions.protocol.as_str();
    let file = catalog.acp.schema.as_str();
    let mut errors = Vec::new();
    let mut broken = |what: String| {
        errors.push(format!(
            "`{literal}` promises {what} (its floor, recorded in the revisions lock), which the pinned schema `{file}` does not keep"
        ))
    };
    for promised in &floor.methods {
        match now.methods.iter().find(|m| m.name == promised.name) {
            None => broken(format!("method `{}`", promised.name)),
            Some(m) if m.side != promised.side || m.notification != promised.notification => {
                broken(format!("method `{}` as {} handled by the {}", promised.name, kind(promised.notification), side(promised.side)))
            }
            Some(_) => {}
        }
    }
    for k in floor.session_update_kinds.iter().filter(|k| !now.session_update_kinds.contains(k)) {
        broken(format!("sessionUpdate kind `{k}`"));
    }
    for r in floor.stop_reasons.iter().filter(|r| !now.stop_reasons.contains(r)) {
        broken(format!("stop reason `{r}`"));
    }
    for (what, was, is) in [
        ("`protocolVersion` in the result of", &floor.version_method, &now.version_method),
        ("`sessionUpdate` kinds in", &floor.update_method, &now.update_method),
        ("`stopReason` in the result of", &floor.prompt_method, &now.prompt_method),
    ] {
        if was != is {
            broken(format!("{what} `{was}` (the schema now carries them on `{is}`)"));
        }
    }
    if floor.protocol_version != now.protocol_version {
        errors.push(format!(
            "`{literal}` was pinned with ACP protocol version {}, and revisions.wire_protocol_version is now {}",
            floor.protocol_version, now.protocol_version
        ));
    }
    if !errors.is_empty() {
        errors.push(format!("to drop or change what `{literal}` promised, bump revisions.protocol: a new literal records the new floor"));
    }
    errors
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
        match ref_target(next).ok().and_then(|p| crate::schema::pointer::get(document, &p).ok().flatten()) {
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
