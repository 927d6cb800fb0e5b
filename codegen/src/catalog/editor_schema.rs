//! The catalog's JSON Schema (`generated/catalog.schema.json`), for editors.
//!
//! Its shape is derived with `schemars` from the model the generator deserializes, so a key
//! the generator does not read cannot be completed. The closed vocabularies, though, are
//! catalog data, not Rust types: this module writes them into the derived schema as `enum`s
//! (axis values per axis, published fields, dialects, evidence cases, declaration values,
//! drivers, lanes, the one-shot lane's declaration values, stream event kinds, observations
//! and optional declaration members), and the gateway path grammar and the dialect names'
//! snake_case as `pattern`s, so an editor completes and checks them.
//! The generator still refuses a wrong value itself, with a span; the schema only helps.

use serde_json::{json, Map, Value};

use super::model::{Axis, Catalog, Name};
use crate::diagnostic::{Class, Diagnostic};

fn names(names: &[Name]) -> Value {
    Value::Array(names.iter().map(|n| Value::from(n.as_str())).collect())
}

/// The object at `path` (a chain of keys), or a diagnostic naming the path: the derived
/// shape changed and this module must follow it.
fn object<'v>(schema: &'v mut Value, path: &[&str]) -> Result<&'v mut Map<String, Value>, Diagnostic> {
    let mut at = schema;
    for key in path {
        at = at.get_mut(*key).ok_or_else(|| missing(path))?;
    }
    at.as_object_mut().ok_or_else(|| missing(path))
}

fn missing(path: &[&str]) -> Diagnostic {
    Diagnostic::new(Class::Generation, format!("the derived catalog schema has no object at `{}`", path.join("/")))
}

/// An object whose keys are the given axes, each with its vocabulary; no other key.
fn axis_map<'a>(axes: impl Iterator<Item = &'a Axis>) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for axis in axes {
        properties.insert(axis.name.value.clone(), json!({ "enum": names(&axis.values) }));
        if axis.absent.is_none() {
            required.push(Value::from(axis.name.as_str()));
        }
    }
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// The regular expression form of the gateway path grammar (see `gateway`), minus the
/// checks a pattern cannot make cheaply (`.` segments, a placeholder used twice).
fn path_pattern(placeholders: &[Name]) -> String {
    let names: Vec<&str> = placeholders.iter().map(|p| p.as_str()).collect();
    format!("^(/([A-Za-z0-9._~-]+|\\{{({})\\}}))+$", names.join("|"))
}

pub fn editor_schema(catalog: &Catalog) -> Result<Value, Diagnostic> {
    let mut schema = serde_json::to_value(schemars::schema_for!(Catalog))
        .map_err(|e| Diagnostic::new(Class::Generation, format!("catalog schema: {e}")))?;
    let dialects: Vec<Name> = catalog.dialects.iter().map(|d| d.name.clone()).collect();
    let checks: Vec<Name> = catalog.conformance.iter().map(|k| k.name.clone()).collect();
    let item_enum = |items: &[Name]| json!({ "enum": names(items) });

    let harness = object(&mut schema, &["$defs", "Harness", "properties"])?;
    for (field, values) in catalog.vocabularies.fields() {
        let property = harness.get_mut(field).and_then(Value::as_object_mut).ok_or_else(|| missing(&["Harness", field]))?;
        property.insert("enum".into(), names(values));
    }
    let drivers: Vec<Name> = catalog.drivers.iter().map(|d| d.name.clone()).collect();
    let lanes: Vec<Name> = catalog.lanes.iter().map(|l| l.name.clone()).collect();
    for (field, values) in [("driver", &drivers), ("lane", &lanes)] {
        let property = harness.get_mut(field).and_then(Value::as_object_mut).ok_or_else(|| missing(&["Harness", field]))?;
        property.insert("enum".into(), names(values));
    }
    for (field, items) in [("evidence", &checks), ("dialects", &dialects)] {
        let property = harness.get_mut(field).and_then(Value::as_object_mut).ok_or_else(|| missing(&["Harness", field]))?;
        property.insert("items".into(), item_enum(items));
        property.insert("uniqueItems".into(), true.into());
    }
    if let Some(property) = harness.get_mut("dialects").and_then(Value::as_object_mut) {
        // Omit the key for an undeclared entry; a written list names a dialect.
        property.insert("minItems".into(), 1.into());
    }
    harness.insert("ceiling".into(), axis_map(catalog.axes.iter()));
    let mut declares = Map::new();
    for upgrade in &catalog.declaration.upgrades {
        declares.insert(upgrade.member.value.clone(), json!({ "enum": [upgrade.value.as_str()] }));
    }
    for mechanism in &catalog.declaration.mechanisms {
        declares.insert(mechanism.member.value.clone(), json!({ "enum": names(&mechanism.values) }));
    }
    harness.insert("declares".into(), json!({ "type": "object", "properties": declares, "additionalProperties": false }));

    let envelope_axes = || axis_map(catalog.axes.iter().filter(|a| a.in_envelope));
    object(&mut schema, &["$defs", "Envelope", "properties"])?.insert("axes".into(), envelope_axes());
    object(&mut schema, &["$defs", "Lane", "properties"])?.insert("envelope".into(), envelope_axes());
    for owner in ["Provider", "UnlistedProvider"] {
        let accepts = object(&mut schema, &["$defs", owner, "properties", "accepts"])?;
        accepts.insert("items".into(), item_enum(&dialects));
        accepts.insert("uniqueItems".into(), true.into());
    }
    let path = object(&mut schema, &["$defs", "Dialect", "properties", "gateway_path"])?;
    path.insert("pattern".into(), path_pattern(&catalog.gateway.placeholders).into());
    // A dialect's name becomes a variant of the runtime's `Dialect` enum (`gateway::dialect_name_problem`).
    let name = object(&mut schema, &["$defs", "Dialect", "properties", "name"])?;
    name.insert("pattern".into(), "^[a-z][a-z0-9]*(_[a-z][a-z0-9]*)*$".into());
    oneshot(&mut schema, catalog)?;
    Ok(schema)
}

/// The `[oneshot]` lane's closed values: validated equal to the release decoder's and the
/// stream schema's, so the catalog's own lists are the ones to offer.
fn oneshot(schema: &mut Value, catalog: &Catalog) -> Result<(), Diagnostic> {
    let lane = &catalog.oneshot;
    let mut declares = Map::new();
    for (member, values) in lane.declares.iter() {
        let list = json!({ "type": "array", "items": { "enum": names(values) }, "uniqueItems": true });
        declares.insert(member.value.clone(), list);
    }
    let required: Vec<Value> = lane.declares.keys().map(|m| Value::from(m.as_str())).collect();
    let declares = json!({ "type": "object", "properties": declares, "required": required, "additionalProperties": false });
    object(schema, &["$defs", "Oneshot", "properties"])?.insert("declares".into(), declares);
    let optional = crate::oneshot::members(&crate::oneshot::authoring_schema()).optional;
    object(schema, &["$defs", "OneshotStep", "properties", "declared"])?.insert("enum".into(), optional.into());
    let kinds: Vec<Name> = lane.events.iter().map(|e| e.kind.clone()).collect();
    let event = object(schema, &["$defs", "OneshotEvent", "properties"])?;
    event
        .get_mut("kind")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| missing(&["OneshotEvent", "kind"]))?
        .insert("enum".into(), names(&kinds));
    let observation =
        event.get_mut("observation").and_then(Value::as_object_mut).ok_or_else(|| missing(&["OneshotEvent", "observation"]))?;
    observation.insert("enum".into(), names(&catalog.observations.kinds));
    Ok(())
}
