//! Generated checks: Rust functions that accept exactly what a normalized schema accepts.
//!
//! typify drops numeric bounds, `const`, boolean enums, some `maxLength`s, `null` versus
//! absent, and is lax on unions; rather than patch its types, every definition gets a
//! check function compiled from the schema itself, and the generated decoder runs the
//! check before deserializing into the typify type. The supported keywords are listed in
//! `SUPPORTED`; any other assertion keyword fails generation with its JSON Pointer, so the
//! generator never silently accepts more than the schema does.
//!
//! Checks read `crate::exact::Json`, a borrowed tree with objects as member slices, so the
//! runtime decoder can check a `_meta` member parsed straight from the wire without
//! building a `serde_json::Value`; `decode_*` and the `DEFINITIONS` table take a `Value`
//! and check a view of it.

use std::collections::BTreeMap;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use serde_json::{Map, Value};

use crate::schema::normalize::{escape_pointer, ANNOTATIONS};

/// Assertion and applicator keywords the checks implement.
pub const SUPPORTED: &[&str] = &[
    "type", "enum", "const", "properties", "required", "additionalProperties", "items",
    "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minProperties", "maxProperties", "anyOf", "oneOf", "allOf", "not", "$ref",
];

struct Emitter<'d> {
    /// The definitions, to look through `$ref`s when a union's alternatives are inspected.
    defs: &'d Map<String, Value>,
    functions: Vec<TokenStream>,
    counter: usize,
}

/// The check function name of a definition.
pub fn def_fn(name: &str) -> Ident {
    format_ident!("check_{}", name)
}

/// The decode function name of a definition.
pub fn decode_fn(name: &str) -> Ident {
    format_ident!("decode_{}", name)
}

/// Checks and decoders for every definition; `Err` is ` #pointer: message`.
pub fn generate(defs: &Map<String, Value>, origins: &BTreeMap<String, String>) -> Result<TokenStream, String> {
    let mut e = Emitter { defs, functions: Vec::new(), counter: 0 };
    let mut decoders = Vec::new();
    let mut table = Vec::new();
    for (name, schema) in defs {
        let pointer = format!("/$defs/{}", escape_pointer(name));
        let body = e.body(schema, &pointer)?;
        let check = def_fn(name);
        let decode = decode_fn(name);
        let ty = format_ident!("{}", name);
        let doc = format!(" Checks a value against `#/$defs/{name}`.");
        e.functions.push(quote! {
            #[doc = #doc]
            pub fn #check(v: &Json<'_>) -> Result<(), Invalid> { #body }
        });
        let doc = format!(" Decodes `{name}` exactly: the generated check, then the typify type.");
        let roundtrip = format_ident!("roundtrip_{}", name);
        let origin = origins.get(name).map_or(pointer.as_str(), String::as_str);
        decoders.push(quote! {
            #[doc = #doc]
            pub fn #decode(v: &Value) -> Result<super::types::#ty, Invalid> {
                crate::exact::check_value(v, #check)?;
                crate::exact::deserialize(v)
            }
            fn #roundtrip(v: &Value) -> Result<Value, Invalid> {
                crate::exact::encode(&#decode(v)?)
            }
        });
        table.push(quote! {
            crate::exact::Definition { name: #name, origin: #origin, check: |v: &Value| crate::exact::check_value(v, #check), roundtrip: #roundtrip }
        });
    }
    let functions = e.functions;
    Ok(quote! {
        use serde_json::Value;
        use crate::exact::{Invalid, Json};
        #(#functions)*
        #(#decoders)*
        /// Every definition: its name, where it came from in the input schema, its check,
        /// and a decode-then-encode round trip through its generated type.
        pub const DEFINITIONS: &[crate::exact::Definition] = &[#(#table),*];
    })
}

impl Emitter<'_> {
    /// A function checking `schema`, for use as a child check.
    fn child(&mut self, schema: &Value, pointer: &str) -> Result<Ident, String> {
        if let Some(Value::String(r)) = schema.get("$ref") {
            if schema.as_object().is_some_and(|o| o.keys().all(|k| k == "$ref" || ANNOTATIONS.contains(&k.as_str()))) {
                return reference(r, pointer);
            }
        }
        let body = self.body(schema, pointer)?;
        self.counter += 1;
        let name = format_ident!("node_{}", self.counter);
        let doc = format!(" Checks `{pointer}`.");
        self.functions.push(quote! {
            #[doc = #doc]
            fn #name(v: &Json<'_>) -> Result<(), Invalid> { #body }
        });
        Ok(name)
    }

    fn body(&mut self, schema: &Value, pointer: &str) -> Result<TokenStream, String> {
        let object = match schema {
            Value::Bool(true) => return Ok(quote! { Ok(()) }),
            Value::Bool(false) => return Ok(quote! { Err(Invalid::new("no value is allowed here")) }),
            Value::Object(object) => object,
            _ => return Err(format!("#{pointer}: a schema must be an object or a boolean")),
        };
        for key in object.keys() {
            let known = SUPPORTED.contains(&key.as_str()) || ANNOTATIONS.contains(&key.as_str());
            if !known && !key.starts_with("x-") && key != "$defs" {
                return Err(format!("#{pointer}: unsupported keyword `{key}`"));
            }
        }
        let mut checks = Vec::new();
        if let Some(ty) = object.get("type") {
            checks.push(type_check(ty, pointer)?);
        }
        if let Some(values) = object.get("enum") {
            let values = values.as_array().ok_or(format!("#{pointer}/enum: not an array"))?;
            let tests = values.iter().map(equals);
            checks.push(quote! {
                if !(false #(|| #tests)*) { return Err(Invalid::new("not one of the allowed values")); }
            });
        }
        if let Some(value) = object.get("const") {
            let test = equals(value);
            checks.push(quote! { if !(#test) { return Err(Invalid::new("not the constant value")); } });
        }
        checks.extend(self.object_checks(object, pointer)?);
        checks.extend(self.array_checks(object, pointer)?);
        checks.extend(scalar_checks(object, pointer)?);
        checks.extend(self.combinators(object, pointer)?);
        if let Some(Value::String(r)) = object.get("$ref") {
            let f = reference(r, pointer)?;
            checks.push(quote! { #f(v)?; });
        }
        Ok(quote! { #(#checks)* Ok(()) })
    }

    /// Object keywords in one pass over the members: each member is matched by name (no
    /// hashing), checked against its property schema or `additionalProperties`, and
    /// required members are tracked in a bit set.
    fn object_checks(&mut self, object: &Map<String, Value>, pointer: &str) -> Result<Vec<TokenStream>, String> {
        let empty = Map::new();
        let properties = match object.get("properties") {
            Some(Value::Object(p)) => p,
            Some(_) => return Err(format!("#{pointer}/properties: not an object")),
            None => &empty,
        };
        let required: Vec<&str> =
            object.get("required").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        // Every name the match needs: the properties, then required names without a schema.
        let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
        for name in &required {
            if !names.contains(name) {
                names.push(name);
            }
        }
        if names.len() > 128 {
            return Err(format!("#{pointer}: more than 128 named properties are not supported"));
        }
        let mut arms = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let bit = 1u128 << i;
            let check = match properties.get(*name) {
                Some(schema) => {
                    let f = self.child(schema, &format!("{pointer}/properties/{}", escape_pointer(name)))?;
                    quote! { #f(p).map_err(|e| e.at(#name))?; }
                }
                None => quote! {},
            };
            let mark = if required.contains(name) { quote! { seen |= #bit; } } else { quote! {} };
            arms.push(quote! { #name => { #mark #check } });
        }
        let other = match object.get("additionalProperties") {
            None | Some(Value::Bool(true)) => quote! {},
            Some(Value::Bool(false)) => quote! { return Err(Invalid::new("property not allowed here").at(k.to_string())); },
            Some(schema) => {
                let f = self.child(schema, &format!("{pointer}/additionalProperties"))?;
                quote! { #f(p).map_err(|e| e.at(k.to_string()))?; }
            }
        };
        let mut checks = Vec::new();
        if !arms.is_empty() {
            let seen = if required.is_empty() { quote! {} } else { quote! { let mut seen: u128 = 0; } };
            checks.push(quote! {
                #seen
                for (k, p) in o {
                    match &**k {
                        #(#arms)*
                        _ => { #other }
                    }
                }
            });
        } else if !other.is_empty() {
            checks.push(quote! { for (k, p) in o { #other } });
        }
        for name in &required {
            let i = names.iter().position(|n| n == name).unwrap_or(0);
            let bit = 1u128 << i;
            let message = format!("missing required property `{name}`");
            checks.push(quote! { if seen & #bit == 0 { return Err(Invalid::new(#message)); } });
        }
        for (key, cmp, message) in [("minProperties", quote! { < }, "too few properties"), ("maxProperties", quote! { > }, "too many properties")] {
            if let Some(n) = object.get(key) {
                let n = n.as_u64().ok_or(format!("#{pointer}/{key}: not a count"))? as usize;
                checks.push(quote! { if o.len() #cmp #n { return Err(Invalid::new(#message)); } });
            }
        }
        if checks.is_empty() {
            return Ok(checks);
        }
        Ok(vec![quote! { if let Some(o) = v.as_object() { #(#checks)* } }])
    }

    fn array_checks(&mut self, object: &Map<String, Value>, pointer: &str) -> Result<Vec<TokenStream>, String> {
        let mut checks = Vec::new();
        if let Some(items) = object.get("items") {
            let f = self.child(items, &format!("{pointer}/items"))?;
            checks.push(quote! {
                for (i, item) in a.iter().enumerate() { #f(item).map_err(|e| e.at(i.to_string()))?; }
            });
        }
        for (key, cmp, message) in [("minItems", quote! { < }, "too few items"), ("maxItems", quote! { > }, "too many items")] {
            if let Some(n) = object.get(key) {
                let n = n.as_u64().ok_or(format!("#{pointer}/{key}: not a count"))? as usize;
                checks.push(quote! { if a.len() #cmp #n { return Err(Invalid::new(#message)); } });
            }
        }
        if checks.is_empty() {
            return Ok(checks);
        }
        Ok(vec![quote! { if let Some(a) = v.as_array() { #(#checks)* } }])
    }

    fn combinators(&mut self, object: &Map<String, Value>, pointer: &str) -> Result<Vec<TokenStream>, String> {
        let mut checks = Vec::new();
        for key in ["anyOf", "oneOf", "allOf"] {
            let Some(members) = object.get(key) else { continue };
            let members = members.as_array().ok_or(format!("#{pointer}/{key}: not an array"))?;
            let mut fns = Vec::new();
            for (i, member) in members.iter().enumerate() {
                fns.push(self.child(member, &format!("{pointer}/{key}/{i}"))?);
            }
            if key != "allOf" {
                if let Some((property, tags)) = discriminator(members, self.defs) {
                    checks.push(dispatch(key, &property, &tags, &fns));
                    continue;
                }
            }
            checks.push(match key {
                "anyOf" => quote! {
                    if !(false #(|| #fns(v).is_ok())*) { return Err(Invalid::new("matches none of the allowed shapes")); }
                },
                "oneOf" => quote! {
                    if [#(#fns(v).is_ok()),*].iter().filter(|ok| **ok).count() != 1 {
                        return Err(Invalid::new("does not match exactly one of the allowed shapes"));
                    }
                },
                _ => quote! { #(#fns(v)?;)* },
            });
        }
        if let Some(not) = object.get("not") {
            let f = self.child(not, &format!("{pointer}/not"))?;
            checks.push(quote! { if #f(v).is_ok() { return Err(Invalid::new("matches a shape that is not allowed")); } });
        }
        Ok(checks)
    }
}

/// A property that tells a union's alternatives apart: every alternative is an object
/// schema that requires it and allows it exactly one string, different in each. Then at
/// most the alternative named by the value's tag can match, so checking only that one
/// decides `anyOf` and `oneOf` exactly, without trying (and failing) the others first.
fn discriminator(members: &[Value], defs: &Map<String, Value>) -> Option<(String, Vec<String>)> {
    let resolve = |schema: &'_ Value| -> Option<Map<String, Value>> {
        let object = schema.as_object()?;
        match object.get("$ref").and_then(Value::as_str) {
            Some(r) if object.keys().all(|k| k == "$ref" || ANNOTATIONS.contains(&k.as_str())) => {
                defs.get(defined(r)?)?.as_object().cloned()
            }
            Some(_) => None,
            None => Some(object.clone()),
        }
    };
    let alternatives: Vec<Map<String, Value>> = members.iter().map(resolve).collect::<Option<_>>()?;
    if alternatives.len() < 2 || alternatives.iter().any(|a| a.get("type") != Some(&Value::String("object".into()))) {
        return None;
    }
    let tag_of = |alternative: &Map<String, Value>, property: &str| -> Option<String> {
        let required = alternative.get("required")?.as_array()?;
        if !required.iter().any(|r| r == property) {
            return None;
        }
        let schema = alternative.get("properties")?.get(property)?;
        match (schema.get("const"), schema.get("enum").and_then(Value::as_array)) {
            (Some(Value::String(tag)), _) => Some(tag.clone()),
            (None, Some(values)) if values.len() == 1 => values[0].as_str().map(String::from),
            _ => None,
        }
    };
    let first = alternatives.first()?.get("properties")?.as_object()?;
    first.keys().find_map(|property| {
        let tags: Vec<String> = alternatives.iter().map(|a| tag_of(a, property)).collect::<Option<_>>()?;
        let distinct = tags.iter().enumerate().all(|(i, t)| !tags[..i].contains(t));
        distinct.then(|| (property.clone(), tags))
    })
}

/// `anyOf`/`oneOf` by the discriminator: only the alternative the tag names is checked.
fn dispatch(key: &str, property: &str, tags: &[String], fns: &[Ident]) -> TokenStream {
    let message = match key {
        "anyOf" => "matches none of the allowed shapes",
        _ => "does not match exactly one of the allowed shapes",
    };
    quote! {
        let matched = match v.get(#property).and_then(Json::as_str) {
            #(Some(#tags) => #fns(v).is_ok(),)*
            _ => false,
        };
        if !matched { return Err(Invalid::new(#message)); }
    }
}

/// The definition a `$ref` names, when it names a whole local one (`#/$defs/Name`).
fn defined(r: &str) -> Option<&str> {
    r.strip_prefix("#/$defs/").filter(|name| !name.contains('/') && !name.is_empty())
}

fn reference(r: &str, pointer: &str) -> Result<Ident, String> {
    if !r.starts_with("#/$defs/") {
        return Err(format!("#{pointer}/$ref: only local `#/$defs/` references are supported"));
    }
    let name = defined(r).ok_or(format!("#{pointer}/$ref: only references to whole definitions are supported"))?;
    Ok(def_fn(name))
}

fn type_check(ty: &Value, pointer: &str) -> Result<TokenStream, String> {
    let names: Vec<&str> = match ty {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => return Err(format!("#{pointer}/type: not a type name")),
    };
    let mut tests = Vec::new();
    for name in &names {
        tests.push(match *name {
            "null" => quote! { v.is_null() },
            "boolean" => quote! { v.is_boolean() },
            "object" => quote! { v.is_object() },
            "array" => quote! { v.is_array() },
            "number" => quote! { v.is_number() },
            "integer" => quote! { crate::exact::is_integer(v) },
            "string" => quote! { v.is_string() },
            other => return Err(format!("#{pointer}/type: unknown type `{other}`")),
        });
    }
    let message = format!("expected {}", names.join(" or "));
    Ok(quote! { if !(#(#tests)||*) { return Err(Invalid::new(#message)); } })
}

/// A test that `v` equals `value`, numbers compared by value.
fn equals(value: &Value) -> TokenStream {
    match value {
        Value::Null => quote! { v.is_null() },
        Value::Bool(b) => quote! { v.as_bool() == Some(#b) },
        Value::String(s) => quote! { v.as_str() == Some(#s) },
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            quote! { crate::exact::number_equals(v, #f) }
        }
        other => {
            let text = other.to_string();
            quote! { crate::exact::json_equals(v, #text) }
        }
    }
}

fn scalar_checks(object: &Map<String, Value>, pointer: &str) -> Result<Vec<TokenStream>, String> {
    let mut string = Vec::new();
    // Lengths count characters; a string of `b` UTF-8 bytes has between `b / 4` and `b`
    // of them, so the count is taken only when the byte length cannot decide.
    if let Some(n) = object.get("minLength") {
        let n = n.as_u64().ok_or(format!("#{pointer}/minLength: not a length"))? as usize;
        string.push(quote! {
            if s.len() < #n || (s.len() / 4 < #n && s.chars().count() < #n) { return Err(Invalid::new("too short")); }
        });
    }
    if let Some(n) = object.get("maxLength") {
        let n = n.as_u64().ok_or(format!("#{pointer}/maxLength: not a length"))? as usize;
        string.push(quote! {
            if s.len() > #n && (s.len() / 4 > #n || s.chars().count() > #n) { return Err(Invalid::new("too long")); }
        });
    }
    let mut number = Vec::new();
    let bounds = [
        ("minimum", quote! { < }, "below the minimum"),
        ("maximum", quote! { > }, "above the maximum"),
        ("exclusiveMinimum", quote! { <= }, "not above the exclusive minimum"),
        ("exclusiveMaximum", quote! { >= }, "not below the exclusive maximum"),
    ];
    for (key, cmp, message) in bounds {
        if let Some(n) = object.get(key) {
            let n = n.as_f64().ok_or(format!("#{pointer}/{key}: not a number"))?;
            number.push(quote! { if n #cmp #n { return Err(Invalid::new(#message)); } });
        }
    }
    let mut checks = Vec::new();
    if !string.is_empty() {
        checks.push(quote! { if let Some(s) = v.as_str() { #(#string)* } });
    }
    if !number.is_empty() {
        checks.push(quote! { if let Some(n) = v.as_f64() { #(#number)* } });
    }
    Ok(checks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tagged(tag: Value) -> Value {
        json!({"type": "object", "required": ["kind", "x"], "properties": {"x": {"type": "integer"}, "kind": tag}})
    }

    #[test]
    fn a_union_is_dispatched_only_when_its_tag_decides_it() {
        let defs = json!({"B": tagged(json!({"type": "string", "enum": ["b"]}))});
        let defs = defs.as_object().expect("object");
        let found = discriminator(&[tagged(json!({"const": "a"})), json!({"$ref": "#/$defs/B"})], defs);
        assert_eq!(found, Some(("kind".to_string(), vec!["a".to_string(), "b".to_string()])));
        let declined = [
            // The same tag twice: both alternatives could match.
            vec![tagged(json!({"const": "a"})), tagged(json!({"enum": ["a"]}))],
            // Two allowed values: the tag names no single alternative.
            vec![tagged(json!({"const": "a"})), tagged(json!({"enum": ["b", "c"]}))],
            // Not required: a value without the tag could still match.
            vec![tagged(json!({"const": "a"})), json!({"type": "object", "properties": {"kind": {"const": "b"}}})],
            // Not an object schema: a non-object passes `required` vacuously.
            vec![tagged(json!({"const": "a"})), json!({"required": ["kind"], "properties": {"kind": {"const": "b"}}})],
            // A reference the definitions do not hold.
            vec![tagged(json!({"const": "a"})), json!({"$ref": "#/$defs/Missing"})],
            // One alternative is no union.
            vec![tagged(json!({"const": "a"}))],
        ];
        for members in declined {
            assert_eq!(discriminator(&members, defs), None, "{members:?}");
        }
    }
}
