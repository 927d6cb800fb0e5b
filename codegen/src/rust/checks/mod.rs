//! Generated checks: Rust functions that accept exactly what a schema accepts.
//!
//! Every definition of the normalized schema gets a check function compiled from the
//! schema itself, and the generated decoder runs the check before deserializing into the
//! generated type. The keywords are those of JSON Schema 2020-12 (`SUPPORTED`); the few
//! that cannot be compiled here (`$dynamicRef`, an embedded `$id`, `unevaluated*` that
//! depends on which alternative matched, …) are diagnostics with the JSON Pointer of the
//! input node and the keyword. Every such construct of a file is reported, not only the
//! first. Unknown keywords are annotations, as the specification says.
//!
//! Checks read `crate::exact::Json`, a borrowed tree with objects as member slices, so the
//! runtime decoder can check a `_meta` member parsed straight from the wire without
//! building a `serde_json::Value`; `decode_*` and the `DEFINITIONS` table take a `Value`
//! and check a view of it.

mod collections;
mod emitter;
mod module;
mod pattern;
mod scalars;

pub use emitter::Unsupported;
pub use module::Checks;

use emitter::{number, Emitter};

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use serde_json::{Map, Value};

use crate::rust::plan::calls::{call_graph, defined};
use crate::schema::normalize::{Normalized, ANNOTATIONS};
use checkfu_wire_vocab::schema_syntax::escape;

/// Assertion and applicator keywords the checks implement.
pub const SUPPORTED: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "patternProperties",
    "additionalProperties",
    "required",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "minProperties",
    "maxProperties",
    "items",
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "minItems",
    "maxItems",
    "uniqueItems",
    "unevaluatedItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "$ref",
];

/// Keywords of JSON Schema 2020-12 that change validation and that the checks do not
/// implement: a schema using one fails generation.
pub const REFUSED: &[&str] = &["$dynamicRef", "$recursiveRef", "$recursiveAnchor"];

use crate::rust::names::{decode_fn, def_fn};

/// Checks and decoders for every definition, or every unsupported construct.
pub fn generate(normalized: &Normalized) -> Result<Checks, Vec<Unsupported>> {
    let defs = &normalized.defs;
    let mut e = Emitter {
        defs,
        functions: Vec::new(),
        statics: Vec::new(),
        counter: 0,
        errors: Vec::new(),
        current: None,
        callers: BTreeMap::new(),
        calling: BTreeSet::new(),
        deferred: crate::rust::plan::indirection::cuts(&call_graph(defs)),
        table: Vec::new(),
        shared: BTreeMap::new(),
        shared_items: Vec::new(),
    };
    let mut decoders = Vec::new();
    let mut table = Vec::new();
    let mut checks = Vec::new();
    for (name, schema) in defs {
        let origin = normalized.origins.get(name).cloned().unwrap_or_default();
        e.current = Some(name.clone());
        let body = e.body(schema, &origin);
        e.current = None;
        let check = def_fn(name);
        let decode = decode_fn(name);
        let ty = format_ident!("{}", name);
        let doc = format!(" Checks a value against `#{}` of the input schema.", crate::rust::doc_safe(&origin));
        // The function is written once every call to it is known (see `memoize`); its place
        // is kept, after the node functions its body emitted.
        checks.push((name, doc, body, e.functions.len()));
        e.functions.push((name.clone(), TokenStream::new()));
        let doc = format!(" Decodes `{name}` exactly: the generated check, then the generated type.");
        let roundtrip = format_ident!("roundtrip_{}", name);
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
    if !e.errors.is_empty() {
        return Err(e.errors);
    }
    for (index, (name, doc, body, at)) in checks.into_iter().enumerate() {
        let check = def_fn(name);
        let body = if e.memoize(name) {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            quote! { crate::exact::memoized(#index, v, |v: &Json<'_>| -> Result<(), Invalid> { #body }) }
        } else {
            body
        };
        e.functions[at].1 = quote! {
            #[doc = #doc]
            pub fn #check(v: &Json<'_>) -> Result<(), Invalid> { #body }
        };
    }
    Ok(Checks { statics: e.statics, shared: e.shared_items, functions: e.functions, deferred: e.table, decoders, definitions: table })
}

/// Whether a node's `body` reads only the value: none of its identifiers names an item the
/// checks emit (`node_*`, `check_*`, `STATIC_*`, `deferred_*`) or their memo table
/// (`crate::exact::memoized`). Only identifiers count, as `Checks::reached` counts them, so
/// a string literal that happens to spell one (a `const`, a pattern, a message) does not.
fn reads_only_the_value(body: &TokenStream) -> bool {
    const EMITTED: [&str; 5] = ["node_", "check_", "STATIC_", "deferred", "memoized"];
    !body.clone().into_iter().flat_map(module::idents).any(|ident| EMITTED.iter().any(|emitted| ident.contains(emitted)))
}

impl Emitter<'_> {
    /// The definition whose check is being emitted: every item is emitted inside one.
    fn owner(&self) -> String {
        self.current.clone().unwrap_or_default()
    }

    /// Whether a definition's check answers repeated questions from a table
    /// (`crate::exact::memoized`): when two or more emitted calls lead to it, so that it can
    /// be asked twice about one node, and it calls other definitions, so that asking twice
    /// could multiply down a chain. A definition with one caller is asked at most as often
    /// as that caller; one that calls nothing costs its own size once per question. Either
    /// way every check's work stays polynomial in instance size × schema size.
    fn memoize(&self, name: &str) -> bool {
        self.callers.get(name).copied().unwrap_or(0) >= 2 && self.calling.contains(name)
    }

    fn unsupported(&mut self, pointer: &str, message: impl Into<String>) {
        self.errors.push(Unsupported { pointer: pointer.to_string(), message: message.into() });
    }

    /// A function checking `schema` (at input pointer `pointer`), for use as a child check.
    fn child(&mut self, schema: &Value, pointer: &str) -> Ident {
        if let Some(Value::String(r)) = schema.get("$ref") {
            if schema.as_object().is_some_and(|o| o.keys().all(|k| k == "$ref" || ANNOTATIONS.contains(&k.as_str()))) {
                if let Some(f) = self.reference(r) {
                    return f;
                }
            }
        }
        let body = self.body(schema, pointer);
        // A body that reads only the value (a type test, bounds, an enum: no call, no
        // static) is the same check wherever it recurs, as `_meta`'s "object or null" does
        // in nearly every definition: one function, owned by no definition, serves them all.
        let alone = reads_only_the_value(&body);
        let text = body.to_string();
        if alone {
            if let Some(name) = self.shared.get(&text) {
                return name.clone();
            }
        }
        self.counter += 1;
        let name = format_ident!("node_{}", self.counter);
        if alone {
            let doc = format!(" Checks `#{}`, and every node of this schema with the same check.", crate::rust::doc_safe(pointer));
            self.shared.insert(text, name.clone());
            self.shared_items.push((
                name.clone(),
                quote! {
                    #[doc = #doc]
                    fn #name(v: &Json<'_>) -> Result<(), Invalid> { #body }
                },
            ));
            return name;
        }
        let doc = format!(" Checks `#{}`.", crate::rust::doc_safe(pointer));
        let owner = self.owner();
        self.functions.push((
            owner,
            quote! {
                #[doc = #doc]
                fn #name(v: &Json<'_>) -> Result<(), Invalid> { #body }
            },
        ));
        name
    }

    /// A static the checks share: a compiled pattern or a structural literal.
    fn static_item(&mut self, ty: TokenStream, text: &str) -> Ident {
        self.counter += 1;
        let name = format_ident!("STATIC_{}", self.counter);
        let owner = self.owner();
        self.statics.push((owner, quote! { static #name: #ty = <#ty>::new(#text); }));
        name
    }

    fn body(&mut self, schema: &Value, pointer: &str) -> TokenStream {
        let object = match schema {
            Value::Bool(true) => return quote! { Ok(()) },
            Value::Bool(false) => return quote! { Err(Invalid::new("no value is allowed here")) },
            Value::Object(object) => object,
            _ => {
                self.unsupported(pointer, "a schema must be an object or a boolean");
                return quote! { Ok(()) };
            }
        };
        for key in object.keys() {
            if REFUSED.contains(&key.as_str()) {
                self.unsupported(&format!("{pointer}/{}", escape(key)), format!("unsupported keyword `{key}`"));
            }
            if key == "$id" && !pointer.is_empty() {
                self.unsupported(&format!("{pointer}/$id"), "unsupported keyword `$id` below the root: it changes the base of references");
            }
        }
        let mut checks = Vec::new();
        if let Some(ty) = object.get("type") {
            checks.extend(self.type_check(ty, pointer));
        }
        if let Some(values) = object.get("enum") {
            match values.as_array() {
                Some(values) => {
                    let tests: Vec<TokenStream> = values.iter().map(|value| self.equals(value)).collect();
                    checks.push(quote! {
                        if !(false #(|| #tests)*) { return Err(Invalid::new("not one of the allowed values")); }
                    });
                }
                None => self.unsupported(&format!("{pointer}/enum"), "`enum` must be an array"),
            }
        }
        if let Some(value) = object.get("const") {
            let test = self.equals(value);
            checks.push(quote! { if !(#test) { return Err(Invalid::new("not the constant value")); } });
        }
        checks.extend(self.object_checks(object, pointer));
        checks.extend(self.array_checks(object, pointer));
        checks.extend(self.scalar_checks(object, pointer));
        checks.extend(self.combinators(object, pointer));
        if let Some(Value::String(r)) = object.get("$ref") {
            if let Some(f) = self.reference(r) {
                checks.push(quote! { #f(v)?; });
            }
        }
        quote! { #(#checks)* Ok(()) }
    }

    fn combinators(&mut self, object: &Map<String, Value>, pointer: &str) -> Vec<TokenStream> {
        let mut checks = Vec::new();
        for key in ["anyOf", "oneOf", "allOf"] {
            let Some(members) = object.get(key) else { continue };
            let Some(members) = members.as_array().filter(|m| !m.is_empty()) else {
                self.unsupported(&format!("{pointer}/{key}"), format!("`{key}` must be a non-empty array"));
                continue;
            };
            if key != "allOf" {
                if let Some(constants) = string_constants(members) {
                    checks.push(constant_union(key, &constants));
                    continue;
                }
            }
            let fns: Vec<Ident> = members.iter().enumerate().map(|(i, m)| self.child(m, &format!("{pointer}/{key}/{i}"))).collect();
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
            let f = self.child(not, &format!("{pointer}/not"));
            checks.push(quote! { if #f(v).is_ok() { return Err(Invalid::new("matches a shape that is not allowed")); } });
        }
        if let Some(condition) = object.get("if") {
            let test = self.child(condition, &format!("{pointer}/if"));
            let branch = |e: &mut Self, key: &str| match object.get(key) {
                Some(schema) => {
                    let f = e.child(schema, &format!("{pointer}/{key}"));
                    quote! { #f(v)?; }
                }
                None => quote! {},
            };
            let (then, otherwise) = (branch(self, "then"), branch(self, "else"));
            checks.push(quote! { if #test(v).is_ok() { #then } else { #otherwise } });
        }
        checks
    }

    /// The check function of a referenced definition.
    /// `None` for a reference normalization could not resolve (it reported each one).
    fn reference(&mut self, r: &str) -> Option<Ident> {
        let name = defined(r).filter(|name| self.defs.contains_key(*name))?;
        *self.callers.entry(name.to_string()).or_default() += 1;
        let Some(current) = self.current.clone() else { return Some(def_fn(name)) };
        self.calling.insert(current.clone());
        if self.deferred.contains(&(current, name.to_string())) {
            return Some(self.deferred_call(name));
        }
        Some(def_fn(name))
    }

    /// A function calling `name`'s check through the table `DEFERRED`. rustc walks the
    /// calls of a function it compiles into the functions called, depth first: a chain of a
    /// thousand definitions, each check calling the next by name, overflowed its stack.
    /// Where the types hold a `Deferred` (`indirection::cuts`, on the same graph), the
    /// check calls through the table, which rustc walks once, breadth first.
    fn deferred_call(&mut self, name: &str) -> Ident {
        let via = format_ident!("deferred_{}", name);
        if !self.table.iter().any(|n| n == name) {
            let index = self.table.len();
            self.table.push(name.to_string());
            // It belongs to the callee: whichever caller emitted it first, every caller of
            // `name` uses it, and a caller the runtime compiles reaches `name` too.
            self.functions.push((
                name.to_string(),
                quote! {
                    fn #via(v: &Json<'_>) -> Result<(), Invalid> { (DEFERRED[#index])(v) }
                },
            ));
        }
        via
    }

    fn type_check(&mut self, ty: &Value, pointer: &str) -> Option<TokenStream> {
        let names: Vec<&str> = match ty {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) if items.iter().all(Value::is_string) => items.iter().filter_map(Value::as_str).collect(),
            _ => {
                self.unsupported(&format!("{pointer}/type"), "`type` must be a type name or an array of them");
                return None;
            }
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
                other => {
                    self.unsupported(&format!("{pointer}/type"), format!("unknown type `{other}`"));
                    return None;
                }
            });
        }
        let message = format!("expected {}", names.join(" or "));
        Some(quote! { if !(false #(|| #tests)*) { return Err(Invalid::new(#message)); } })
    }

    /// A test that `v` equals `value`: numbers by value, arrays and objects structurally.
    fn equals(&mut self, value: &Value) -> TokenStream {
        match value {
            Value::Null => quote! { v.is_null() },
            Value::Bool(b) => quote! { v.as_bool() == Some(#b) },
            Value::String(s) => quote! { v.as_str() == Some(#s) },
            Value::Number(n) => {
                let n = number(n);
                quote! { crate::exact::number_is(v, #n) }
            }
            other => {
                let literal = self.static_item(quote! { crate::exact::Literal }, &other.to_string());
                quote! { #literal.matches(v) }
            }
        }
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

/// The strings of a union whose alternatives are each a string constant and nothing else
/// (an ACP enumeration such as `ToolKind` or `StopReason`), when they are all different.
/// Then a value matches exactly one alternative when it is one of the strings and none
/// otherwise, so `anyOf` and `oneOf` alike are decided by comparing the value with each,
/// without running every alternative's check and building (then dropping) an error for
/// each that fails. Alternatives that are references are left to the general path.
fn string_constants(members: &[Value]) -> Option<Vec<String>> {
    let constant = |member: &Value| -> Option<String> {
        let object = member.as_object()?;
        let plain = object.keys().all(|k| k == "const" || k == "type" || ANNOTATIONS.contains(&k.as_str()));
        let string = object.get("type").is_none_or(|t| t == "string");
        match object.get("const") {
            Some(Value::String(value)) if plain && string => Some(value.clone()),
            _ => None,
        }
    };
    let constants: Vec<String> = members.iter().map(constant).collect::<Option<_>>()?;
    let distinct = constants.iter().enumerate().all(|(i, c)| !constants[..i].contains(c));
    distinct.then_some(constants)
}

/// `anyOf`/`oneOf` of string constants ([`string_constants`]): the union's own error,
/// where the general path reports it, when the value is none of them.
fn constant_union(key: &str, constants: &[String]) -> TokenStream {
    let message = match key {
        "anyOf" => "matches none of the allowed shapes",
        _ => "does not match exactly one of the allowed shapes",
    };
    quote! {
        if !matches!(v.as_str(), Some(#(#constants)|*)) {
            return Err(Invalid::new(#message));
        }
    }
}

/// `anyOf`/`oneOf` by the discriminator: only the alternative the tag names is checked,
/// and its error (with the pointer into it) is the union's.
fn dispatch(key: &str, property: &str, tags: &[String], fns: &[Ident]) -> TokenStream {
    let message = match key {
        "anyOf" => "matches none of the allowed shapes",
        _ => "does not match exactly one of the allowed shapes",
    };
    // Only the alternative the tag names can match, so its error is the reason.
    quote! {
        match v.get(#property).and_then(Json::as_str) {
            #(Some(#tags) => #fns(v)?,)*
            _ => return Err(Invalid::new(#message)),
        }
    }
}

#[cfg(test)]
mod tests;
