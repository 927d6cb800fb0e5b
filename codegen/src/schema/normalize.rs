//! Normalization: gives every schema node that needs a Rust type a name of its own, and
//! rewrites every reference to point at such a name.
//!
//! The checks and the types read one flat set of named definitions, so this pass:
//!
//! - names the root after the file, and every top-level `$defs` (or legacy
//!   `definitions`) entry after its key, made a valid Rust type name;
//! - hoists every inline object schema in a value position (a property, an item, a union
//!   alternative, `additionalProperties`) into the definitions, named after its path and
//!   its discriminating single-value property (`RootVStarted`) or its `title`;
//! - hoists every node a `$ref` points at (`#/$defs/A/properties/b`, `#/properties/x`,
//!   percent-encoded or `~`-escaped) and every node the decoder tables pin, so that every
//!   reference names a whole definition;
//! - rewrites each `$ref` to `#/$defs/<Name>`.
//!
//! It walks schema positions only (`properties`, `items`, `anyOf`, …): `const`, `enum`,
//! `default`, `examples` and unknown keywords are data and are never rewritten.
//!
//! When a preferred name is taken by a different schema, the node is named after its JSON
//! Pointer (`DefsCreateElicitationRequestAnyOf2`), then after its pointer plus a short hash
//! of it; generation fails only if even that is taken. Identical hoisted schemas share a
//! name. Names are deterministic: they depend only on the input.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use checkfu_wire_vocab::schema_syntax::{self, applicator, escape, Holds, PointerError};

use super::dialect::{ref_hides_siblings, translate, Dialect, Entry};
pub use super::error::NormalizeError;
use super::pointer::get as node_at;

/// Keywords that are annotations only: they never change what validates. The table is
/// `checkfu-wire-vocab`'s, with the keywords that hold subschemas beside it.
pub use checkfu_wire_vocab::schema_syntax::ANNOTATIONS;

/// Properties preferred as discriminators when naming a hoisted variant, in this order.
const DISCRIMINATORS: &[&str] = &["name", "method", "phase", "sessionUpdate", "type", "kind", "status"];

/// The normalized schema: every named definition, the root among them.
#[derive(Debug, Clone)]
pub struct Normalized {
    /// The root's definition name.
    pub root_name: String,
    /// Definition name → normalized schema; references are `#/$defs/<Name>`.
    pub defs: Map<String, Value>,
    /// Definition name → JSON Pointer (in the input) of the schema it came from.
    pub origins: BTreeMap<String, String>,
    /// Problems found; the definitions are still as complete as they could be made.
    pub errors: Vec<NormalizeError>,
}

/// PascalCase of the alphanumeric runs of `s`, as a valid Rust type name:
/// `initialize.full-declaration` → `InitializeFullDeclaration`, `_meta` → `Meta`,
/// `2fa` → `N2fa`, `日本` → `U65e5U672c`, `self` → `SelfDef`. Empty when `s` has no
/// letter, digit or non-ASCII character.
pub fn pascal(s: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(if upper { c.to_ascii_uppercase() } else { c });
            upper = false;
        } else if !c.is_ascii() {
            // Spelled out so that names stay ASCII and distinct characters stay distinct.
            out.push_str(&format!("U{:x}", c as u32));
            upper = true;
        } else {
            upper = true;
        }
    }
    if out.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        out.insert(0, 'N');
    }
    if out == "Self" {
        out.push_str("Def");
    }
    out
}

/// A Rust type name for a definition key: its PascalCase, or `Unnamed` when it has none.
pub fn type_name(key: &str) -> String {
    let name = pascal(key);
    if name.is_empty() {
        "Unnamed".into()
    } else {
        name
    }
}

/// The name a node gets after its JSON Pointer: `/$defs/A/anyOf/2` → `DefsAAnyOf2`.
fn pointer_name(root_name: &str, pointer: &str) -> String {
    // Every pointer named here was built by this pass or checked by `ref_target`; one that
    // is not a pointer is named after its text, still a valid type name.
    let segments: String = match schema_syntax::parse(pointer) {
        Ok(tokens) => tokens.iter().map(|token| type_name(token)).collect(),
        Err(_) => type_name(pointer),
    };
    if segments.is_empty() {
        root_name.to_string()
    } else {
        segments
    }
}

fn short_hash(s: &str) -> String {
    Sha256::digest(s.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect()
}

/// Resolves a local `$ref` to a JSON Pointer in canonical (escaped, not percent-encoded)
/// form; `Err` says why it is not supported. A `~` followed by anything but `0` or `1` is
/// refused (RFC 6901 §3), as the safety profile refuses it.
pub fn ref_target(reference: &str) -> Result<String, String> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(format!("`{reference}` is not a local reference (`#…`); remote references are not supported"));
    };
    schema_syntax::fragment_pointer(fragment).map_err(|e| match e {
        PointerError::NoLeadingSlash => format!("`{reference}` names an anchor; anchor references are not supported"),
        PointerError::BadPercentEncoding | PointerError::NotUtf8 => format!("`{reference}` is not valid percent-encoding"),
        PointerError::BadEscape => format!("`{reference}` is not a JSON Pointer: {e}"),
    })
}

/// Calls `f(pointer, schema)` for every subschema directly under a schema object read as
/// `entries` (pointers follow the input keyword each entry came from).
fn for_each_child<'v>(entries: &'v [Entry], pointer: &str, mut f: impl FnMut(String, &'v Value)) {
    for Entry { key, from, value } in entries {
        let Some(holds) = applicator(key).map(|s| s.holds) else { continue };
        let at = format!("{pointer}/{}", escape(from));
        match (holds, value) {
            (Holds::Map, Value::Object(children)) => children.iter().for_each(|(k, v)| f(format!("{at}/{}", escape(k)), v)),
            // A keyword of one schema holding an array is walked as a list all the same, so
            // that the references in it are found and reported where they are.
            (Holds::One | Holds::OneOrList | Holds::List, Value::Array(items)) => {
                items.iter().enumerate().for_each(|(i, v)| f(format!("{at}/{i}"), v))
            }
            (Holds::One | Holds::OneOrList, other) => f(at, other),
            _ => {}
        }
    }
}

/// Every `$ref` in schema positions of `dialect`: (pointer of the referring node, reference).
fn references(value: &Value, pointer: &str, dialect: Dialect, out: &mut Vec<(String, String)>) {
    let Value::Object(object) = value else { return };
    // Problems of the translation are reported when the node itself is normalized.
    let entries = translate(dialect, object, pointer, &mut Vec::new());
    if let Some(Entry { value: Value::String(r), .. }) = entries.iter().find(|e| e.key == "$ref") {
        out.push((pointer.to_string(), r.clone()));
    }
    for_each_child(&entries, pointer, |at, child| references(child, &at, dialect, out));
}

/// The names every top-level definition of `raw` gets (raw JSON Pointer → name), with the
/// root under `root_name`. The decoder tables use this to name entry points.
pub fn definition_names(root_name: &str, raw: &Value) -> BTreeMap<String, String> {
    let mut names = Names::new(root_name);
    names.claim_definitions(raw);
    names.by_pointer
}

struct Names {
    root_name: String,
    /// Name → input pointer of its owner.
    taken: BTreeMap<String, String>,
    by_pointer: BTreeMap<String, String>,
}

impl Names {
    fn new(root_name: &str) -> Self {
        let mut names = Names { root_name: root_name.to_string(), taken: BTreeMap::new(), by_pointer: BTreeMap::new() };
        names.taken.insert(root_name.to_string(), String::new());
        names.by_pointer.insert(String::new(), root_name.to_string());
        names
    }

    /// The first free name of `preferred`, the pointer's name, and the pointer's name with a
    /// hash of the pointer; `None` when all are taken.
    fn claim(&mut self, preferred: &str, pointer: &str) -> Option<String> {
        let by_pointer = pointer_name(&self.root_name, pointer);
        let hashed = format!("{by_pointer}H{}", short_hash(pointer));
        let name = [preferred.to_string(), by_pointer, hashed].into_iter().find(|n| !self.taken.contains_key(n))?;
        self.taken.insert(name.clone(), pointer.to_string());
        self.by_pointer.insert(pointer.to_string(), name.clone());
        Some(name)
    }

    fn claim_definitions(&mut self, raw: &Value) {
        let Some(root) = raw.as_object() else { return };
        for container in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = root.get(container) {
                for key in defs.keys() {
                    let pointer = format!("/{container}/{}", escape(key));
                    // `claim` can only fail after the hashed name is taken too, which a
                    // distinct pointer never hits for a definition: its hash is unique.
                    let _ = self.claim(&type_name(key), &pointer);
                }
            }
        }
    }
}

struct Normalizer {
    dialect: Dialect,
    names: Names,
    /// Raw pointer → name: nodes that must become definitions (pins and `$ref` targets).
    wanted: BTreeMap<String, String>,
    defs: Map<String, Value>,
    /// Hoisted nodes by name, to let identical inline schemas share one.
    hoisted: BTreeSet<String>,
    origins: BTreeMap<String, String>,
    errors: Vec<NormalizeError>,
}

/// Normalizes `raw`; `root_name` names the root.
pub fn normalize(root_name: &str, raw: &Value) -> Normalized {
    normalize_pinned(root_name, raw, &BTreeMap::new())
}

/// Normalizes `raw`, hoisting each node of `pins` (raw JSON Pointer → name) under its name
/// whatever its type, so that it gets a generated type and decoder of its own.
pub fn normalize_pinned(root_name: &str, raw: &Value, pins: &BTreeMap<String, String>) -> Normalized {
    normalize_in(root_name, raw, pins, Dialect::Draft2020)
}

/// [`normalize_pinned`], reading a document without `$schema` in `default`'s dialect.
pub fn normalize_in(root_name: &str, raw: &Value, pins: &BTreeMap<String, String>, default: Dialect) -> Normalized {
    let (dialect, dialect_error) = match Dialect::of(raw, default) {
        Ok(dialect) => (dialect, None),
        Err(e) => (default, Some(e)),
    };
    let mut n = Normalizer {
        dialect,
        names: Names::new(root_name),
        wanted: BTreeMap::new(),
        defs: Map::new(),
        hoisted: BTreeSet::new(),
        origins: BTreeMap::new(),
        errors: dialect_error.into_iter().collect(),
    };
    n.names.claim_definitions(raw);
    for (pointer, name) in pins {
        if n.names.taken.contains_key(name) {
            n.errors.push(NormalizeError {
                pointer: pointer.clone(),
                message: format!("entry point `{name}` is already the name of `{}`", n.names.taken[name]),
            });
            continue;
        }
        n.names.taken.insert(name.clone(), pointer.clone());
        n.names.by_pointer.insert(pointer.clone(), name.clone());
        n.wanted.insert(pointer.clone(), name.clone());
    }
    let mut refs = Vec::new();
    references(raw, "", dialect, &mut refs);
    n.claim_targets(raw, &refs);
    // Top-level definitions first, in input order, then the root.
    if let Some(root) = raw.as_object() {
        for container in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = root.get(container) {
                for (key, schema) in defs {
                    let pointer = format!("/{container}/{}", escape(key));
                    if let Some(name) = n.names.by_pointer.get(&pointer).cloned() {
                        let rewritten = n.node(schema, &pointer, &name);
                        n.define(&name, rewritten, &pointer);
                    }
                }
            }
        }
    }
    let root = n.node(raw, "", root_name);
    n.define(root_name, root, "");
    n.define_the_rest(raw);
    Normalized { root_name: root_name.to_string(), defs: n.defs, origins: n.origins, errors: n.errors }
}

fn is_object_schema(object: &Map<String, Value>) -> bool {
    object.contains_key("properties") || object.get("type").and_then(Value::as_str) == Some("object")
}

/// The label a union alternative is named by: for the first property (preferred ones
/// first) whose single value differs in every alternative that has one, that value; else
/// the alternative's `title` when titles are distinct.
fn variant_labels(variants: &[Value]) -> Vec<Option<String>> {
    let single = |variant: &Value, name: &str| -> Option<String> {
        let property = variant.get("properties")?.get(name)?;
        if let Some(Value::String(s)) = property.get("const") {
            return Some(s.clone());
        }
        match property.get("enum")?.as_array()?.as_slice() {
            [Value::String(s)] => Some(s.clone()),
            _ => None,
        }
    };
    let distinct = |labels: &[Option<String>]| {
        let present: Vec<&String> = labels.iter().flatten().collect();
        !present.is_empty() && present.iter().enumerate().all(|(i, l)| !present[..i].contains(l))
    };
    let mut candidates: Vec<String> = DISCRIMINATORS.iter().map(|s| s.to_string()).collect();
    for variant in variants {
        if let Some(Value::Object(properties)) = variant.get("properties") {
            candidates.extend(properties.keys().cloned());
        }
    }
    for property in &candidates {
        let labels: Vec<Option<String>> = variants.iter().map(|v| single(v, property)).collect();
        if distinct(&labels) {
            return labels;
        }
    }
    let titles: Vec<Option<String>> = variants.iter().map(|v| v.get("title").and_then(Value::as_str).map(String::from)).collect();
    if distinct(&titles) {
        return titles;
    }
    vec![None; variants.len()]
}

impl Normalizer {
    /// Gives every target of `refs` (referring pointer, reference) a name it is wanted under,
    /// or reports why it cannot have one.
    fn claim_targets(&mut self, raw: &Value, refs: &[(String, String)]) {
        for (at, reference) in refs {
            match ref_target(reference) {
                Ok(target) if !matches!(node_at(raw, &target), Ok(Some(_))) => self.errors.push(NormalizeError {
                    pointer: format!("{at}/$ref"),
                    message: format!("`{reference}` points at nothing in this document"),
                }),
                Ok(target) => {
                    if !self.names.by_pointer.contains_key(&target) {
                        let name = pointer_name(&self.names.root_name, &target);
                        match self.names.claim(&name, &target) {
                            Some(name) => {
                                self.wanted.insert(target, name);
                            }
                            None => self.errors.push(NormalizeError { pointer: target, message: format!("no free name for `{name}`") }),
                        }
                    }
                }
                Err(message) => self.errors.push(NormalizeError { pointer: format!("{at}/$ref"), message }),
            }
        }
    }

    /// Defines every wanted node the walk of schema positions did not define: a reference
    /// may point into data or an unknown keyword (travis's `#/definitions/notificationObject/slack`,
    /// where `notificationObject` holds schemas under keys no draft defines). JSON Pointer
    /// reaches such a node all the same, and validators evaluate what is there as a schema;
    /// so it is here, as a definition of its own whose references are collected as it is
    /// read, until no wanted node is left undefined.
    fn define_the_rest(&mut self, raw: &Value) {
        loop {
            let undefined: Vec<(String, String)> =
                self.wanted.iter().filter(|(_, name)| !self.defs.contains_key(*name)).map(|(p, name)| (p.clone(), name.clone())).collect();
            if undefined.is_empty() {
                return;
            }
            for (pointer, name) in undefined {
                match node_at(raw, &pointer) {
                    Ok(Some(node @ (Value::Object(_) | Value::Bool(_)))) => {
                        let mut refs = Vec::new();
                        references(node, &pointer, self.dialect, &mut refs);
                        self.claim_targets(raw, &refs);
                        let rewritten = self.node(node, &pointer, &name);
                        self.define(&name, rewritten, &pointer);
                    }
                    _ => {
                        self.errors.push(NormalizeError {
                            pointer: pointer.clone(),
                            message: format!("`{name}` at `{pointer}` is not a schema (a schema is an object or a boolean)"),
                        });
                        // Defined as what accepts nothing, so the loop ends; the error fails generation.
                        self.define(&name, Value::Bool(false), &pointer);
                    }
                }
            }
        }
    }

    fn define(&mut self, name: &str, schema: Value, pointer: &str) {
        self.defs.insert(name.to_string(), schema);
        self.origins.insert(name.to_string(), pointer.to_string());
    }

    /// Rewrites one schema node and its children; `name` is the name this node has or
    /// would have if hoisted (children are named after it).
    fn node(&mut self, value: &Value, pointer: &str, name: &str) -> Value {
        let Value::Object(input) = value else { return value.clone() };
        let entries = translate(self.dialect, input, pointer, &mut self.errors);
        let mut object = Map::new();
        for Entry { key, from, value: child } in &entries {
            let at = format!("{pointer}/{}", escape(from));
            let holds = applicator(key).map(|s| s.holds);
            let rewritten = if key == "$ref" {
                self.reference(child)
            } else if key == "$defs" || key == "definitions" {
                // Nested definitions are reached only through references; the root's are
                // definitions of their own. Either way they leave the node.
                if let Value::Object(defs) = child {
                    for (k, v) in defs {
                        if !pointer.is_empty() {
                            let at = format!("{at}/{}", escape(k));
                            let _ = self.child(v, &at, &format!("{name}{}", type_name(k)), false);
                        }
                    }
                }
                continue;
            } else if holds == Some(Holds::Map) {
                match child {
                    Value::Object(children) => {
                        let hoist = key == "properties" || key == "patternProperties";
                        let mut rewritten = Map::new();
                        for (k, v) in children {
                            let at = format!("{at}/{}", escape(k));
                            rewritten.insert(k.clone(), self.child(v, &at, &format!("{name}{}", type_name(k)), hoist));
                        }
                        Value::Object(rewritten)
                    }
                    other => other.clone(),
                }
            } else if matches!(holds, Some(Holds::One | Holds::OneOrList)) && !child.is_array() {
                let (suffix, hoist) = match key.as_str() {
                    "items" => ("Item", true),
                    "additionalProperties" => ("Value", true),
                    other => (other, false),
                };
                self.child(child, &at, &format!("{name}{}", type_name(suffix)), hoist)
            } else if matches!(holds, Some(Holds::List)) || (holds == Some(Holds::OneOrList) && child.is_array()) {
                match child {
                    Value::Array(variants) => {
                        let labels = variant_labels(variants);
                        let hoist = key != "allOf";
                        let rewritten = variants.iter().enumerate().map(|(i, v)| {
                            let label = labels[i].as_deref().map(type_name).unwrap_or_else(|| format!("Variant{i}"));
                            let label = if key == "prefixItems" || key == "items" { format!("Item{i}") } else { label };
                            self.child(v, &format!("{at}/{i}"), &format!("{name}{label}"), hoist)
                        });
                        Value::Array(rewritten.collect())
                    }
                    other => other.clone(),
                }
            } else {
                child.clone()
            };
            object.insert(key.clone(), rewritten);
        }
        if ref_hides_siblings(self.dialect, input) {
            // Walked all the same, so that references into the siblings still resolve.
            object.retain(|key, _| key == "$ref");
        }
        Value::Object(object)
    }

    /// A child node: rewritten, then hoisted when it must be a definition (a pin or a
    /// reference target) or, in a value position, when it is an object schema.
    fn child(&mut self, value: &Value, pointer: &str, name: &str, value_position: bool) -> Value {
        if let Some(wanted) = self.wanted.get(pointer).cloned() {
            let rewritten = self.node(value, pointer, &wanted);
            self.define(&wanted, rewritten, pointer);
            self.hoisted.insert(wanted.clone());
            return reference_to(&wanted);
        }
        let rewritten = self.node(value, pointer, name);
        let hoist = value_position && rewritten.as_object().is_some_and(is_object_schema);
        if !hoist {
            return rewritten;
        }
        if self.hoisted.contains(name) && self.defs.get(name) == Some(&rewritten) {
            return reference_to(name);
        }
        match self.names.claim(name, pointer) {
            Some(claimed) => {
                self.define(&claimed, rewritten, pointer);
                self.hoisted.insert(claimed.clone());
                reference_to(&claimed)
            }
            None => {
                self.errors.push(NormalizeError {
                    pointer: pointer.to_string(),
                    message: format!("no free name for this schema: `{name}` and its pointer-derived names are taken"),
                });
                rewritten
            }
        }
    }

    fn reference(&mut self, reference: &Value) -> Value {
        let Value::String(r) = reference else { return reference.clone() };
        match ref_target(r).ok().and_then(|target| self.names.by_pointer.get(&target)) {
            Some(name) => Value::String(format!("#/$defs/{name}")),
            // Already reported while collecting references.
            None => reference.clone(),
        }
    }
}

fn reference_to(name: &str) -> Value {
    Value::Object(Map::from_iter([("$ref".to_string(), Value::String(format!("#/$defs/{name}")))]))
}

#[cfg(test)]
mod tests;
