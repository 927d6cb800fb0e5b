//! Normalization: rewrites an input schema into the subset typify maps faithfully.
//!
//! typify 0.8 panics on some constructs (`allOf` of bare bounds under `type: integer`),
//! silently merges distinct inline schemas that it names alike, and drops `const` and
//! integer-valued number enums. Before it sees a schema, this pass:
//!
//! - flattens an `allOf` whose members carry only assertion keywords the parent lacks
//!   (`{"type": "string", "allOf": [{"minLength": 1}, {"maxLength": 256}]}` becomes one
//!   node), and replaces `{"allOf": [{"$ref": …}]}` wrappers by the reference;
//! - rewrites a scalar `const` as a one-value `enum` (with its `type`);
//! - types a `number` enum whose values are all integers as `integer`;
//! - renames legacy `definitions` to `$defs`;
//! - drops `default` (an annotation typify would otherwise fill in, breaking round trips)
//!   and spells an open object's `additionalProperties` as `{}` so typify keeps unknown
//!   members instead of silently dropping them;
//! - hoists every inline object schema into `$defs` under a name derived from its path and
//!   its discriminating single-value `enum`, so typify never invents a name.
//!
//! Two different schemas that would get the same name are a diagnostic naming both JSON
//! Pointers; identical ones share the definition.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Keywords that only assert and may be merged from an `allOf` member into its parent.
const MERGEABLE: &[&str] = &[
    "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minItems", "maxItems", "minProperties", "maxProperties", "multipleOf", "pattern",
];

/// Keywords that are annotations only: they never change what validates.
pub const ANNOTATIONS: &[&str] = &[
    "title", "description", "default", "examples", "$comment", "$schema", "$id", "deprecated",
    "readOnly", "writeOnly", "format",
];

/// Properties preferred as discriminators when naming a hoisted variant, in this order.
const DISCRIMINATORS: &[&str] = &["name", "method", "phase", "sessionUpdate", "type", "kind", "status"];

/// A schema node that could not be normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizeError {
    pub pointer: String,
    pub message: String,
}

/// The normalized schema: the root node with every named definition under `$defs`.
#[derive(Debug, Clone)]
pub struct Normalized {
    pub root: Value,
    /// Definition name → JSON Pointer (in the input) of the schema it came from.
    pub origins: BTreeMap<String, String>,
}

pub fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// PascalCase of the alphanumeric runs of `s`: `initialize.full-declaration` →
/// `InitializeFullDeclaration`, `_meta` → `Meta`.
pub fn pascal(s: &str) -> String {
    let mut out = String::new();
    for part in s.split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| !p.is_empty()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        out.insert(0, 'N');
    }
    out
}

struct Normalizer<'p> {
    /// Raw pointer → name: nodes the decoder tables need as named definitions.
    pins: &'p BTreeMap<String, String>,
    pinned: Vec<String>,
    defs: Map<String, Value>,
    origins: BTreeMap<String, String>,
    errors: Vec<NormalizeError>,
}

/// Normalizes `raw`; `root_name` names the root type when it is an object.
pub fn normalize(root_name: &str, raw: &Value) -> Result<Normalized, Vec<NormalizeError>> {
    normalize_pinned(root_name, raw, &BTreeMap::new())
}

/// Normalizes `raw`, hoisting each node of `pins` (raw JSON Pointer → name) under its name
/// whatever its type, so that it gets a generated type and decoder of its own.
pub fn normalize_pinned(root_name: &str, raw: &Value, pins: &BTreeMap<String, String>) -> Result<Normalized, Vec<NormalizeError>> {
    let mut raw = raw.clone();
    rename_definitions(&mut raw);
    let mut n = Normalizer { pins, pinned: Vec::new(), defs: Map::new(), origins: BTreeMap::new(), errors: Vec::new() };
    let input_defs = raw.as_object_mut().and_then(|o| o.remove("$defs"));
    // Existing definitions keep their names; they are claimed first so hoisted names that
    // clash with them are caught.
    // Definitions are renamed to the Rust names typify would give them (`Objects_1` →
    // `Objects1`), so that two names that only differ in punctuation are caught here.
    let mut pending = Vec::new();
    let mut renames = BTreeMap::new();
    if let Some(Value::Object(defs)) = input_defs {
        for (original, schema) in defs {
            let pointer = format!("/$defs/{}", escape_pointer(&original));
            let name = pascal(&original);
            if let Some(first) = n.origins.get(&name) {
                n.errors.push(NormalizeError {
                    pointer: pointer.clone(),
                    message: format!("two different schemas would both be named `{name}`: `{first}` and `{pointer}`"),
                });
                continue;
            }
            n.origins.insert(name.clone(), pointer.clone());
            n.defs.insert(name.clone(), Value::Null);
            renames.insert(format!("#/$defs/{}", escape_pointer(&original)), format!("#/$defs/{name}"));
            pending.push((name, schema, pointer));
        }
    }
    let mut pending: Vec<_> = pending.into_iter().map(|(name, mut schema, pointer)| {
        rename_refs(&mut schema, &renames);
        (name, schema, pointer)
    }).collect();
    rename_refs(&mut raw, &renames);
    pending.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, schema, pointer) in pending {
        let schema = n.node(schema, &pointer, &name, true);
        n.defs.insert(name, schema);
    }
    let mut root = n.node(raw, "", &pascal(root_name), true);
    for (pointer, name) in pins {
        if !n.pinned.contains(pointer) {
            n.errors.push(NormalizeError {
                pointer: pointer.clone(),
                message: format!("entry point `{name}` at `{pointer}` is not a schema node the normalized schema keeps"),
            });
        }
    }
    if !n.errors.is_empty() {
        return Err(n.errors);
    }
    if let Value::Object(object) = &mut root {
        if !n.defs.is_empty() {
            object.insert("$defs".into(), Value::Object(n.defs));
        }
    }
    Ok(Normalized { root, origins: n.origins })
}

fn rename_definitions(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(defs) = object.remove("definitions") {
                object.entry("$defs").or_insert(defs);
            }
            if let Some(Value::String(r)) = object.get_mut("$ref") {
                if let Some(rest) = r.strip_prefix("#/definitions/") {
                    *r = format!("#/$defs/{rest}");
                }
            }
            object.values_mut().for_each(rename_definitions);
        }
        Value::Array(items) => items.iter_mut().for_each(rename_definitions),
        _ => {}
    }
}

fn rename_refs(value: &mut Value, renames: &BTreeMap<String, String>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(r)) = object.get_mut("$ref") {
                if let Some(new) = renames.get(r.as_str()) {
                    *r = new.clone();
                }
            }
            object.values_mut().for_each(|v| rename_refs(v, renames));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_refs(v, renames)),
        _ => {}
    }
}

fn is_object_schema(object: &Map<String, Value>) -> bool {
    object.contains_key("properties") || object.get("type").and_then(Value::as_str) == Some("object")
}

/// The single value of a `{"enum": [v]}` property, used to name variants.
fn discriminator(object: &Map<String, Value>) -> Option<String> {
    let properties = object.get("properties")?.as_object()?;
    let single = |name: &str| -> Option<String> {
        let property = properties.get(name)?;
        if let Some(Value::String(s)) = property.get("const") {
            return Some(s.clone());
        }
        match property.get("enum")?.as_array()?.as_slice() {
            [Value::String(s)] => Some(s.clone()),
            _ => None,
        }
    };
    DISCRIMINATORS.iter().find_map(|d| single(d)).or_else(|| properties.keys().find_map(|k| single(k)))
}

impl Normalizer<'_> {
    /// Rewrites one schema node and its children; `name` is the name a hoisted object here
    /// would get; `top` is true for a definition's own root (never hoisted again).
    fn node(&mut self, value: Value, pointer: &str, name: &str, top: bool) -> Value {
        let Value::Object(mut object) = value else { return value };
        // `default` is an annotation; typify would fill it in on decode and emit it on
        // encode, so a value without the key would not round-trip.
        object.remove("default");
        // An open object keeps its unknown members: typify flattens them into a map only
        // when `additionalProperties` is a schema, and `{}` accepts exactly what absence does.
        if is_object_schema(&object) && matches!(object.get("additionalProperties"), None | Some(Value::Bool(true))) {
            object.insert("additionalProperties".into(), Value::Object(Map::new()));
        }
        self.const_to_enum(&mut object);
        self.flatten_all_of(&mut object);
        integer_enum(&mut object);
        // Children first, so a parent compares equal to another only if its children do.
        for key in ["properties", "patternProperties", "$defs", "dependentSchemas"] {
            if let Some(Value::Object(children)) = object.remove(key) {
                let mut rewritten = Map::new();
                for (child, schema) in children {
                    let at = format!("{pointer}/{key}/{}", escape_pointer(&child));
                    let child_name = format!("{name}{}", pascal(&child));
                    rewritten.insert(child.clone(), self.node(schema, &at, &child_name, false));
                }
                object.insert(key.into(), Value::Object(rewritten));
            }
        }
        for (key, suffix) in [("items", "Item"), ("additionalProperties", "Value"), ("not", "Not"), ("contains", "Contains")] {
            if let Some(child) = object.remove(key) {
                let at = format!("{pointer}/{key}");
                object.insert(key.into(), self.node(child, &at, &format!("{name}{suffix}"), false));
            }
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(variants)) = object.remove(key) {
                let mut rewritten = Vec::new();
                for (i, variant) in variants.into_iter().enumerate() {
                    let at = format!("{pointer}/{key}/{i}");
                    let label = variant.as_object().and_then(discriminator).map(|d| pascal(&d));
                    let variant_name = format!("{name}{}", label.unwrap_or_else(|| format!("Variant{i}")));
                    rewritten.push(self.node(variant, &at, &variant_name, false));
                }
                object.insert(key.into(), Value::Array(rewritten));
            }
        }
        if !top {
            if let Some(pinned) = self.pins.get(pointer) {
                self.pinned.push(pointer.to_string());
                let pinned = pinned.clone();
                return self.hoist(&pinned, Value::Object(object), pointer);
            }
        }
        if !top && is_object_schema(&object) {
            return self.hoist(name, Value::Object(object), pointer);
        }
        Value::Object(object)
    }

    fn hoist(&mut self, name: &str, schema: Value, pointer: &str) -> Value {
        let reference = Value::Object(Map::from_iter([("$ref".to_string(), Value::String(format!("#/$defs/{name}")))]));
        match self.defs.get(name) {
            Some(existing) if *existing == schema => reference,
            Some(_) => {
                let first = self.origins.get(name).cloned().unwrap_or_default();
                self.errors.push(NormalizeError {
                    pointer: pointer.to_string(),
                    message: format!(
                        "two different schemas would both be named `{name}`: `{first}` and `{pointer}`"
                    ),
                });
                reference
            }
            None => {
                self.defs.insert(name.to_string(), schema);
                self.origins.insert(name.to_string(), pointer.to_string());
                reference
            }
        }
    }

    fn const_to_enum(&mut self, object: &mut Map<String, Value>) {
        let Some(value) = object.remove("const") else { return };
        let ty = match &value {
            Value::String(_) => Some("string"),
            Value::Bool(_) => Some("boolean"),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
            Value::Number(_) => Some("number"),
            Value::Null => Some("null"),
            // An object or array const stays a const: typify cannot enumerate it, and the
            // generated check compares it as a whole.
            _ => None,
        };
        match ty {
            Some(ty) => {
                object.entry("type").or_insert(Value::String(ty.into()));
                object.insert("enum".into(), Value::Array(vec![value]));
            }
            None => {
                object.insert("const".into(), value);
            }
        }
    }

    fn flatten_all_of(&mut self, object: &mut Map<String, Value>) {
        let Some(Value::Array(members)) = object.get("allOf") else { return };
        // `{"allOf": [{"$ref": X}]}` plus annotations is the reference itself.
        if let [Value::Object(only)] = members.as_slice() {
            if only.len() == 1 && only.contains_key("$ref") {
                let reference = only["$ref"].clone();
                let asserts = object.keys().any(|k| k != "allOf" && !ANNOTATIONS.contains(&k.as_str()));
                if !asserts {
                    object.clear();
                    object.insert("$ref".into(), reference);
                    return;
                }
            }
        }
        let mergeable = members.iter().all(|m| {
            m.as_object().is_some_and(|m| m.keys().all(|k| MERGEABLE.contains(&k.as_str()) || ANNOTATIONS.contains(&k.as_str())))
        });
        if !mergeable {
            return;
        }
        let mut merged = Map::new();
        for member in members.iter().filter_map(Value::as_object) {
            for (k, v) in member {
                if ANNOTATIONS.contains(&k.as_str()) {
                    continue;
                }
                if object.contains_key(k) || merged.contains_key(k) {
                    // Two bounds of the same kind: keep the allOf, the generated check
                    // enforces both.
                    return;
                }
                merged.insert(k.clone(), v.clone());
            }
        }
        object.remove("allOf");
        object.extend(merged);
    }
}

fn integer_enum(object: &mut Map<String, Value>) {
    if object.get("type").and_then(Value::as_str) != Some("number") {
        return;
    }
    let Some(Value::Array(values)) = object.get("enum") else { return };
    let integral = values.iter().all(|v| v.as_i64().is_some() || v.as_u64().is_some() || v.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.0e15));
    if integral {
        let values: Vec<Value> = values
            .iter()
            .map(|v| v.as_i64().map(Value::from).or_else(|| v.as_u64().map(Value::from)).unwrap_or_else(|| Value::from(v.as_f64().unwrap_or(0.0) as i64)))
            .collect();
        object.insert("type".into(), Value::String("integer".into()));
        object.insert("enum".into(), Value::Array(values));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn norm(v: Value) -> Value {
        normalize("Root", &v).expect("normalizes").root
    }

    #[test]
    fn flattens_keyword_only_all_of() {
        let out = norm(json!({"type": "integer", "allOf": [{"minimum": 0}, {"maximum": 9}], "default": 3}));
        assert_eq!(out, json!({"type": "integer", "minimum": 0, "maximum": 9}));
    }

    #[test]
    fn keeps_all_of_with_repeated_bounds() {
        let input = json!({"type": "integer", "minimum": 1, "allOf": [{"minimum": 0}]});
        assert_eq!(norm(input.clone()), input);
    }

    #[test]
    fn single_ref_all_of_becomes_the_reference() {
        let out = norm(json!({"$defs": {"A": {"type": "string"}}, "anyOf": [{"allOf": [{"$ref": "#/$defs/A"}], "title": "A"}]}));
        assert_eq!(out["anyOf"][0], json!({"$ref": "#/$defs/A"}));
    }

    #[test]
    fn scalar_const_becomes_a_typed_single_enum() {
        assert_eq!(norm(json!({"const": "2.0"})), json!({"type": "string", "enum": ["2.0"]}));
        assert_eq!(norm(json!({"const": true})), json!({"type": "boolean", "enum": [true]}));
        assert_eq!(norm(json!({"const": {"a": 1}})), json!({"const": {"a": 1}}));
    }

    #[test]
    fn integral_number_enum_becomes_integer() {
        assert_eq!(norm(json!({"type": "number", "enum": [1]})), json!({"type": "integer", "enum": [1]}));
        let fractional = json!({"type": "number", "enum": [1.5]});
        assert_eq!(norm(fractional.clone()), fractional);
    }

    #[test]
    fn hoists_variants_by_discriminator_and_properties_by_path() {
        let out = norm(json!({
            "type": "object",
            "properties": {"v": {"anyOf": [
                {"type": "object", "properties": {"phase": {"enum": ["started"]}, "meta": {"type": "object"}}},
                {"type": "object", "properties": {"phase": {"enum": ["done"]}}}
            ]}}
        }));
        assert_eq!(out["properties"]["v"]["anyOf"][0], json!({"$ref": "#/$defs/RootVStarted"}));
        assert_eq!(out["properties"]["v"]["anyOf"][1], json!({"$ref": "#/$defs/RootVDone"}));
        assert_eq!(out["$defs"]["RootVStarted"]["properties"]["meta"], json!({"$ref": "#/$defs/RootVStartedMeta"}));
    }

    #[test]
    fn identical_schemas_share_a_name_and_different_ones_collide() {
        let same = json!({"anyOf": [
            {"type": "object", "properties": {"k": {"enum": ["a"]}}},
            {"type": "object", "properties": {"k": {"enum": ["a"]}}}
        ]});
        assert_eq!(norm(same)["anyOf"][1], json!({"$ref": "#/$defs/RootA"}));
        let different = json!({"anyOf": [
            {"type": "object", "properties": {"k": {"enum": ["a"]}}},
            {"type": "object", "properties": {"k": {"enum": ["a"]}, "x": {"type": "string"}}}
        ]});
        let errors = normalize("Root", &different).expect_err("collides");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.contains("`/anyOf/0`") && errors[0].message.contains("`/anyOf/1`"), "{errors:?}");
    }

    #[test]
    fn a_hoisted_name_colliding_with_a_definition_is_reported() {
        let input = json!({
            "$defs": {"RootX": {"type": "string"}},
            "type": "object",
            "properties": {"x": {"type": "object", "properties": {}}}
        });
        let errors = normalize("Root", &input).expect_err("collides");
        assert!(errors[0].message.contains("`/$defs/RootX`") && errors[0].message.contains("`/properties/x`"));
    }

    #[test]
    fn open_objects_keep_unknown_members() {
        let out = norm(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        assert_eq!(out["additionalProperties"], json!({}));
        let closed = norm(json!({"type": "object", "additionalProperties": false}));
        assert_eq!(closed["additionalProperties"], json!(false));
    }

    #[test]
    fn legacy_definitions_are_renamed() {
        let out = norm(json!({"definitions": {"A": {"type": "string"}}, "$ref": "#/definitions/A"}));
        assert_eq!(out, json!({"$ref": "#/$defs/A", "$defs": {"A": {"type": "string"}}}));
    }

    #[test]
    fn definitions_get_rust_names_and_punctuation_twins_collide() {
        let out = norm(json!({"$defs": {"Objects_1": {"type": "string"}}, "$ref": "#/$defs/Objects_1"}));
        assert_eq!(out, json!({"$ref": "#/$defs/Objects1", "$defs": {"Objects1": {"type": "string"}}}));
        let twins = json!({"$defs": {"Union_": {"type": "string"}, "Union": {"type": "number"}}});
        let errors = normalize("Root", &twins).expect_err("collides");
        assert!(errors[0].message.contains("`/$defs/Union`") && errors[0].message.contains("`/$defs/Union_`"), "{errors:?}");
    }

    #[test]
    fn pinned_nodes_are_hoisted_under_their_name_and_missing_pins_are_reported() {
        let input = json!({"type": "object", "properties": {"tools": {"type": "array", "items": {"type": "string"}}}});
        let pins = BTreeMap::from([("/properties/tools".to_string(), "Tools".to_string())]);
        let out = normalize_pinned("Root", &input, &pins).expect("normalizes").root;
        assert_eq!(out["properties"]["tools"], json!({"$ref": "#/$defs/Tools"}));
        assert_eq!(out["$defs"]["Tools"]["type"], json!("array"));
        let missing = BTreeMap::from([("/properties/nope".to_string(), "Nope".to_string())]);
        let errors = normalize_pinned("Root", &input, &missing).expect_err("unreachable pin");
        assert!(errors[0].message.contains("entry point `Nope`"));
    }

    #[test]
    fn pascal_case_names() {
        assert_eq!(pascal("initialize.full-declaration"), "InitializeFullDeclaration");
        assert_eq!(pascal("_meta"), "Meta");
        assert_eq!(pascal("checkfu.subagent"), "CheckfuSubagent");
        assert_eq!(pascal("2fa"), "N2fa");
    }
}
