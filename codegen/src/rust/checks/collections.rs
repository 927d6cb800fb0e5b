//! Checks of objects and arrays: members and items, in one pass each, and the
//! `unevaluated*` keywords where the schema decides statically which members and items
//! are evaluated.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::{Map, Value};

use super::emitter::{count, resolve, Emitter};
use checkfu_wire_vocab::schema_syntax::escape;

/// ACP's leniency annotations on a member's schema.
enum Lenient {
    /// `x-deserialize-default-on-error`: an invalid value is read as the default.
    OnError,
    /// `x-deserialize-default-on-null`: `null` is read as the default.
    OnNull,
}

fn leniency(schema: &Value) -> Option<Lenient> {
    if schema.get("x-deserialize-default-on-error") == Some(&Value::Bool(true)) {
        Some(Lenient::OnError)
    } else if schema.get("x-deserialize-default-on-null") == Some(&Value::Bool(true)) {
        Some(Lenient::OnNull)
    } else {
        None
    }
}

/// What a schema and its `allOf`/`$ref` closure evaluate, for `unevaluated*`.
#[derive(Default)]
struct Evaluated {
    names: BTreeSet<String>,
    patterns: Vec<String>,
    all_members: bool,
    prefix: usize,
    all_items: bool,
}

/// Keywords whose annotations depend on which subschema validated: `unevaluated*` next
/// to them cannot be decided from the schema alone.
const DYNAMIC_MEMBERS: &[&str] = &["anyOf", "oneOf", "if", "then", "else", "dependentSchemas"];
const DYNAMIC_ITEMS: &[&str] = &["anyOf", "oneOf", "if", "then", "else", "contains"];

/// How an object's check marks the required members it has met: one bit per name the
/// match knows (`names[i]` is bit `i`), in a `u128` while they fit, as in nearly every
/// schema, else in `u64` words (biome's schema names more than 128 properties in two
/// definitions).
struct Seen {
    words: Option<usize>,
}

impl Seen {
    fn new(names: usize) -> Seen {
        Seen { words: (names > 128).then(|| names.div_ceil(64)) }
    }

    fn declare(&self) -> TokenStream {
        match self.words {
            None => quote! { let mut seen: u128 = 0; },
            Some(n) => quote! { let mut seen = [0u64; #n]; },
        }
    }

    /// Where name `i`'s bit is (`seen` or one of its words), and the bit.
    fn bit(&self, i: usize) -> (TokenStream, TokenStream) {
        match self.words {
            None => {
                let bit = 1u128 << i;
                (quote! { seen }, quote! { #bit })
            }
            Some(_) => {
                let (word, bit) = (i / 64, 1u64 << (i % 64));
                (quote! { seen[#word] }, quote! { #bit })
            }
        }
    }

    /// The expression that marks name `i` met.
    fn mark(&self, i: usize) -> TokenStream {
        let (place, bit) = self.bit(i);
        quote! { #place |= #bit }
    }

    /// The condition that name `i` was not met.
    fn unseen(&self, i: usize) -> TokenStream {
        let (place, bit) = self.bit(i);
        quote! { #place & #bit == 0 }
    }
}

impl Emitter<'_> {
    /// Collects what `object` evaluates; `Err` names the keyword that makes it dynamic.
    fn evaluated(
        &self,
        object: &Map<String, Value>,
        members: bool,
        own: bool,
        seen: &mut BTreeSet<String>,
        out: &mut Evaluated,
    ) -> Result<(), String> {
        let dynamic = if members { DYNAMIC_MEMBERS } else { DYNAMIC_ITEMS };
        if let Some(key) = object.keys().find(|k| dynamic.contains(&k.as_str())) {
            return Err(key.clone());
        }
        if let Some(Value::Object(p)) = object.get("properties") {
            out.names.extend(p.keys().cloned());
        }
        if let Some(Value::Object(p)) = object.get("patternProperties") {
            out.patterns.extend(p.keys().cloned());
        }
        out.all_members |= object.contains_key("additionalProperties");
        out.all_members |= !own && object.contains_key("unevaluatedProperties");
        if let Some(Value::Array(p)) = object.get("prefixItems") {
            out.prefix = out.prefix.max(p.len());
        }
        out.all_items |= object.contains_key("items") || (!own && object.contains_key("unevaluatedItems"));
        for member in object.get("allOf").and_then(Value::as_array).into_iter().flatten() {
            if let Value::Object(member) = member {
                self.evaluated(member, members, false, seen, out)?;
            }
        }
        if let Some(Value::String(r)) = object.get("$ref") {
            if let Some((name, Value::Object(target))) = resolve(self.defs, r) {
                if seen.insert(name.to_string()) {
                    self.evaluated(target, members, false, seen, out)?;
                }
            }
        }
        Ok(())
    }

    /// Object keywords in one pass over the members: each member is matched by name (no
    /// hashing) against `properties`, then against `patternProperties`, and only if
    /// neither names it, against `additionalProperties`; required members are tracked in
    /// a bit set.
    pub(super) fn object_checks(&mut self, object: &Map<String, Value>, pointer: &str) -> Vec<TokenStream> {
        let empty = Map::new();
        let properties = match object.get("properties") {
            Some(Value::Object(p)) => p,
            Some(_) => {
                self.unsupported(&format!("{pointer}/properties"), "`properties` must be an object");
                &empty
            }
            None => &empty,
        };
        let required: Vec<&str> = match object.get("required") {
            Some(Value::Array(r)) if r.iter().all(Value::is_string) => r.iter().filter_map(Value::as_str).collect(),
            Some(_) => {
                self.unsupported(&format!("{pointer}/required"), "`required` must be an array of strings");
                Vec::new()
            }
            None => Vec::new(),
        };
        // Every name the match needs: the properties, then required names without a schema.
        let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
        for name in &required {
            if !names.contains(name) {
                names.push(name);
            }
        }
        let seen = Seen::new(names.len());
        let patterns = self.patterns(object, pointer);
        let additional = match object.get("additionalProperties") {
            None | Some(Value::Bool(true)) => None,
            Some(Value::Bool(false)) => Some(quote! { return Err(Invalid::new("property not allowed here").at(k.to_string())); }),
            Some(schema) => {
                let f = self.child(schema, &format!("{pointer}/additionalProperties"));
                Some(quote! { #f(p).map_err(|e| e.at(k.to_string()))?; })
            }
        };
        let unevaluated = self.unevaluated_members(object, pointer);
        let names_check = object.get("propertyNames").map(|schema| {
            let f = self.child(schema, &format!("{pointer}/propertyNames"));
            quote! { #f(&Json::String(*k)).map_err(|e| e.at(k.to_string()))?; }
        });
        let mut arms = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mark = if required.contains(name) {
                let mark = seen.mark(i);
                quote! { #mark; }
            } else {
                quote! {}
            };
            arms.push(match properties.get(*name) {
                Some(schema) => {
                    let f = self.child(schema, &format!("{pointer}/properties/{}", escape(name)));
                    match leniency(schema) {
                        // ACP's own leniency: a lenient reader drops the member to its
                        // default (with a note); a strict one rejects, as the schema does.
                        Some(Lenient::OnError) => quote! {
                            #name => { #mark if let Err(e) = #f(p) { crate::exact::lenient(e.at(#name))?; } true }
                        },
                        Some(Lenient::OnNull) => quote! {
                            #name => { #mark match #f(p) {
                                Err(e) if p.is_null() => crate::exact::lenient(e.at(#name))?,
                                other => other.map_err(|e| e.at(#name))?,
                            } true }
                        },
                        None => quote! { #name => { #mark #f(p).map_err(|e| e.at(#name))?; true } },
                    }
                }
                // Required but without a schema: still unmatched for `additionalProperties`.
                None => quote! { #name => { #mark false } },
            });
        }
        let mut per_member = Vec::new();
        per_member.extend(names_check);
        if !arms.is_empty() || !patterns.is_empty() || additional.is_some() {
            let matched = if arms.is_empty() {
                quote! { false }
            } else {
                quote! { match &**k { #(#arms)* _ => false } }
            };
            let mut pattern_tests = Vec::new();
            for (pattern, f, source) in &patterns {
                pattern_tests.push(quote! {
                    match #pattern.is_match(k) {
                        Some(true) => { matched = true; #f(p).map_err(|e| e.at(k.to_string()))?; }
                        Some(false) => {}
                        None => return Err(Invalid::new(concat!("the pattern `", #source, "` cannot be compiled here"))),
                    }
                });
            }
            let other = additional.clone().unwrap_or_default();
            per_member.push(quote! {
                #[allow(unused_mut)]
                let mut matched = #matched;
                #(#pattern_tests)*
                if !matched { #other }
            });
        }
        if let Some(check) = unevaluated {
            per_member.push(check);
        }
        let mut checks = Vec::new();
        if !per_member.is_empty() {
            let declare = if required.is_empty() {
                quote! {}
            } else {
                seen.declare()
            };
            checks.push(quote! { #declare for (k, p) in o { #(#per_member)* } });
        } else if !required.is_empty() {
            // No member check but required names: mark them in a plain pass.
            let marks = required.iter().map(|name| {
                let mark = seen.mark(names.iter().position(|n| n == name).unwrap_or(0));
                quote! { #name => #mark, }
            });
            let declare = seen.declare();
            checks.push(quote! { #declare for (k, _) in o { match &**k { #(#marks)* _ => {} } } });
        }
        for name in &required {
            let unseen = seen.unseen(names.iter().position(|n| n == name).unwrap_or(0));
            let message = format!("missing required property `{name}`");
            checks.push(quote! { if #unseen { return Err(Invalid::new(#message)); } });
        }
        checks.extend(self.dependencies(object, pointer));
        for (key, cmp, message) in
            [("minProperties", quote! { < }, "too few properties"), ("maxProperties", quote! { > }, "too many properties")]
        {
            if let Some(n) = object.get(key) {
                match count(n) {
                    Some(n) => checks.push(quote! { if o.len() #cmp #n { return Err(Invalid::new(#message)); } }),
                    None => self.unsupported(&format!("{pointer}/{key}"), format!("`{key}` must be a non-negative integer")),
                }
            }
        }
        if checks.is_empty() {
            return checks;
        }
        vec![quote! { if let Some(o) = v.as_object() { #(#checks)* } }]
    }

    /// `patternProperties`: (static pattern, check function, source) per pattern.
    fn patterns(&mut self, object: &Map<String, Value>, pointer: &str) -> Vec<(proc_macro2::Ident, proc_macro2::Ident, String)> {
        let Some(Value::Object(patterns)) = object.get("patternProperties") else { return Vec::new() };
        let mut out = Vec::new();
        for (source, schema) in patterns {
            let at = format!("{pointer}/patternProperties/{}", escape(source));
            let translated = match super::pattern::compile(source) {
                Ok(translated) => translated,
                Err(message) => {
                    self.unsupported(&at, message);
                    continue;
                }
            };
            let f = self.child(schema, &at);
            let pattern = self.static_item(quote! { crate::exact::Pattern }, &translated);
            out.push((pattern, f, source.clone()));
        }
        out
    }

    /// `unevaluatedProperties`: a check per member that no evaluating keyword names.
    fn unevaluated_members(&mut self, object: &Map<String, Value>, pointer: &str) -> Option<TokenStream> {
        let schema = object.get("unevaluatedProperties")?;
        if schema == &Value::Bool(true) {
            return None;
        }
        let at = format!("{pointer}/unevaluatedProperties");
        let mut evaluated = Evaluated::default();
        if let Err(key) = self.evaluated(object, true, true, &mut BTreeSet::new(), &mut evaluated) {
            self.unsupported(&at, format!("unsupported keyword `unevaluatedProperties` next to `{key}`: which members are evaluated depends on which subschema matched"));
            return None;
        }
        if evaluated.all_members {
            return None;
        }
        let f = self.child(schema, &at);
        let names: Vec<&String> = evaluated.names.iter().collect();
        let named = if names.is_empty() {
            quote! { false }
        } else {
            quote! { matches!(&**k, #(#names)|*) }
        };
        let mut pattern_tests = Vec::new();
        for source in &evaluated.patterns {
            let Ok(translated) = super::pattern::compile(source) else {
                continue; // reported where the pattern is defined
            };
            let pattern = self.static_item(quote! { crate::exact::Pattern }, &translated);
            pattern_tests.push(quote! { || #pattern.is_match(k) == Some(true) });
        }
        Some(quote! {
            let evaluated = #named #(#pattern_tests)*;
            if !evaluated { #f(p).map_err(|e| e.at(k.to_string()))?; }
        })
    }

    /// `dependentRequired` and `dependentSchemas`.
    fn dependencies(&mut self, object: &Map<String, Value>, pointer: &str) -> Vec<TokenStream> {
        let mut checks = Vec::new();
        if let Some(dependent) = object.get("dependentRequired") {
            let Some(dependent) = dependent.as_object() else {
                self.unsupported(&format!("{pointer}/dependentRequired"), "`dependentRequired` must be an object");
                return checks;
            };
            for (property, needed) in dependent {
                let Some(needed) = needed.as_array().filter(|n| n.iter().all(Value::is_string)) else {
                    self.unsupported(&format!("{pointer}/dependentRequired/{}", escape(property)), "must be an array of strings");
                    continue;
                };
                for name in needed.iter().filter_map(Value::as_str) {
                    let message = format!("`{property}` requires property `{name}`");
                    checks.push(quote! {
                        if o.iter().any(|(k, _)| *k == #property) && !o.iter().any(|(k, _)| *k == #name) {
                            return Err(Invalid::new(#message));
                        }
                    });
                }
            }
        }
        if let Some(Value::Object(dependent)) = object.get("dependentSchemas") {
            for (property, schema) in dependent {
                let f = self.child(schema, &format!("{pointer}/dependentSchemas/{}", escape(property)));
                checks.push(quote! { if o.iter().any(|(k, _)| *k == #property) { #f(v)?; } });
            }
        }
        checks
    }

    pub(super) fn array_checks(&mut self, object: &Map<String, Value>, pointer: &str) -> Vec<TokenStream> {
        let mut checks = Vec::new();
        let mut prefix = 0usize;
        if let Some(items) = object.get("prefixItems") {
            match items.as_array() {
                Some(items) => {
                    prefix = items.len();
                    for (i, schema) in items.iter().enumerate() {
                        let f = self.child(schema, &format!("{pointer}/prefixItems/{i}"));
                        checks.push(quote! { if let Some(item) = a.get(#i) { #f(item).map_err(|e| e.at(#i.to_string()))?; } });
                    }
                }
                None => self.unsupported(&format!("{pointer}/prefixItems"), "`prefixItems` must be an array"),
            }
        }
        match object.get("items") {
            Some(Value::Array(_)) => self.unsupported(
                &format!("{pointer}/items"),
                "unsupported keyword `items` as an array (draft 2019 and older); use `prefixItems`",
            ),
            Some(items) => {
                let f = self.child(items, &format!("{pointer}/items"));
                if object.get("x-deserialize-skip-invalid-items") == Some(&Value::Bool(true)) {
                    // ACP's leniency for lists: a lenient reader skips an invalid item.
                    checks.push(quote! {
                        for (i, item) in a.iter().enumerate().skip(#prefix) {
                            if let Err(e) = #f(item) { crate::exact::lenient(e.at(i.to_string()))?; }
                        }
                    });
                } else {
                    checks.push(quote! {
                        for (i, item) in a.iter().enumerate().skip(#prefix) { #f(item).map_err(|e| e.at(i.to_string()))?; }
                    });
                }
            }
            None => {}
        }
        if let Some(contains) = object.get("contains") {
            let f = self.child(contains, &format!("{pointer}/contains"));
            let min = object.get("minContains").and_then(count).unwrap_or(1);
            let max = object.get("maxContains").and_then(count).map_or(quote! {}, |max| {
                quote! { if matching > #max { return Err(Invalid::new("too many items match `contains`")); } }
            });
            checks.push(quote! {
                let matching = a.iter().filter(|item| #f(item).is_ok()).count();
                if matching < #min { return Err(Invalid::new("too few items match `contains`")); }
                #max
            });
        }
        for (key, cmp, message) in [("minItems", quote! { < }, "too few items"), ("maxItems", quote! { > }, "too many items")] {
            if let Some(n) = object.get(key) {
                match count(n) {
                    Some(n) => checks.push(quote! { if a.len() #cmp #n { return Err(Invalid::new(#message)); } }),
                    None => self.unsupported(&format!("{pointer}/{key}"), format!("`{key}` must be a non-negative integer")),
                }
            }
        }
        if object.get("uniqueItems") == Some(&Value::Bool(true)) {
            checks.push(quote! { if !crate::exact::unique_items(a) { return Err(Invalid::new("items are not unique")); } });
        }
        if let Some(schema) = object.get("unevaluatedItems").filter(|s| **s != Value::Bool(true)) {
            let at = format!("{pointer}/unevaluatedItems");
            let mut evaluated = Evaluated::default();
            match self.evaluated(object, false, true, &mut BTreeSet::new(), &mut evaluated) {
                Err(key) => self.unsupported(&at, format!("unsupported keyword `unevaluatedItems` next to `{key}`: which items are evaluated depends on which subschema matched")),
                Ok(()) if evaluated.all_items => {}
                Ok(()) => {
                    let f = self.child(schema, &at);
                    let from = evaluated.prefix;
                    checks.push(quote! {
                        for (i, item) in a.iter().enumerate().skip(#from) { #f(item).map_err(|e| e.at(i.to_string()))?; }
                    });
                }
            }
        }
        if checks.is_empty() {
            return checks;
        }
        vec![quote! { if let Some(a) = v.as_array() { #(#checks)* } }]
    }
}
