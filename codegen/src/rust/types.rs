//! Rust types for a normalized schema: exact by construction, with typify naming the
//! members and variants.
//!
//! A generated type never has to decide validity: the generated check runs first. So a
//! type only has to hold every value its check accepts, and give it back unchanged. Each
//! definition gets one of three shapes:
//!
//! - an object schema (`type: object`) becomes a struct: one field per property, plus a
//!   flattened map of every other member unless `additionalProperties: false` rules them
//!   out;
//! - a string enumeration becomes an enum;
//! - anything else (unions, `allOf`, scalars, `false`) becomes a newtype over the widest
//!   lossless Rust type of its values (`serde_json::Value` for a union).
//!
//! Field types are chosen here, not by typify, from what the property's schema admits:
//! `String`, `bool`, `serde_json::Number` for every number (so integers stay exact beyond
//! 2^53 and `format: uint32` narrows nothing), `Vec<_>`, the referenced definition, or
//! `Value`; `Option<_>` when `null` is allowed. An optional member is an `Option` that
//! keeps `null` apart from absent and `[]` apart from absent. References that close a
//! cycle are boxed.
//!
//! typify runs once per struct or enum, on a view of the definition whose properties are
//! all `{}`: it then only names fields and variants (and writes their serde renames), and
//! never merges `allOf`s, invents names or reaches for a crate the project lacks. Its
//! output is verified (one item of the expected name, one field per property, no
//! duplicate identifiers); a definition typify mishandles, or panics on, falls back to a
//! newtype and is reported in `fallbacks`.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::{json, Map, Value};
use syn::{parse_quote, Fields, Item};
use typify::{TypeSpace, TypeSpaceSettings};

use crate::schema::normalize::Normalized;

/// The Rust type of a value position, before it is rendered.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    Value,
    String,
    Bool,
    Number,
    Map,
    Vec(Box<Ty>),
    Option(Box<Ty>),
    Def(String),
}

/// What a definition becomes.
enum Shape {
    Struct { fields: Vec<(String, Ty, bool)>, extra: bool },
    Enum(Vec<String>),
    Newtype(Ty),
}

/// The generated types, and the definitions typify could not name (which got newtypes).
pub struct Types {
    pub tokens: TokenStream,
    pub fallbacks: Vec<String>,
}

fn type_names(schema: &Map<String, Value>) -> Option<BTreeSet<&str>> {
    match schema.get("type") {
        Some(Value::String(s)) => Some(BTreeSet::from([s.as_str()])),
        Some(Value::Array(items)) => Some(items.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

fn referenced(schema: &Map<String, Value>) -> Option<&str> {
    schema.get("$ref")?.as_str()?.strip_prefix("#/$defs/")
}

/// The widest lossless type of the values `schema` admits.
fn field_type(schema: &Value, defs: &Map<String, Value>) -> Ty {
    let Value::Object(o) = schema else { return Ty::Value };
    if let Some(name) = referenced(o).filter(|n| defs.contains_key(*n)) {
        return Ty::Def(name.to_string());
    }
    let mut kinds: BTreeSet<&str> = match type_names(o) {
        Some(kinds) => kinds,
        None => match o.get("enum").and_then(Value::as_array).map(Vec::as_slice).or(o.get("const").map(std::slice::from_ref)) {
            Some(values) => values.iter().map(json_kind).collect(),
            None => return Ty::Value,
        },
    };
    let nullable = kinds.remove("null");
    if kinds.remove("integer") {
        kinds.insert("number");
    }
    let base = match kinds.into_iter().collect::<Vec<_>>().as_slice() {
        ["string"] => Ty::String,
        ["boolean"] => Ty::Bool,
        ["number"] => Ty::Number,
        ["object"] => Ty::Map,
        ["array"] => match (o.get("items"), o.get("prefixItems")) {
            (Some(items), None) if !items.is_array() => Ty::Vec(Box::new(field_type(items, defs))),
            (None, None) => Ty::Vec(Box::new(Ty::Value)),
            _ => Ty::Vec(Box::new(Ty::Value)),
        },
        _ => return Ty::Value,
    };
    if nullable {
        Ty::Option(Box::new(base))
    } else {
        base
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn shape(schema: &Value, defs: &Map<String, Value>) -> Shape {
    let Value::Object(o) = schema else { return Shape::Newtype(Ty::Value) };
    let kinds = type_names(o);
    if kinds.as_ref().is_some_and(|k| k.len() == 1 && k.contains("object")) {
        let required: BTreeSet<&str> =
            o.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let properties = o.get("properties").and_then(Value::as_object);
        let fields = properties
            .into_iter()
            .flatten()
            .map(|(name, property)| (name.clone(), field_type(property, defs), !required.contains(name.as_str())))
            .collect();
        let closed = o.get("additionalProperties") == Some(&Value::Bool(false)) && !o.contains_key("patternProperties");
        return Shape::Struct { fields, extra: !closed };
    }
    let strings = |values: &[Value]| -> Option<Vec<String>> {
        let values: Vec<String> = values.iter().map(|v| v.as_str().map(String::from)).collect::<Option<_>>()?;
        let distinct = values.iter().enumerate().all(|(i, v)| !values[..i].contains(v));
        (distinct && !values.is_empty()).then_some(values)
    };
    let string_typed = kinds.as_ref().is_none_or(|k| k.len() == 1 && k.contains("string"));
    if string_typed && !o.contains_key("$ref") {
        let values = match (o.get("enum").and_then(Value::as_array), o.get("const")) {
            (Some(values), None) => strings(values),
            (None, Some(value)) => strings(std::slice::from_ref(value)),
            _ => None,
        };
        if let Some(values) = values {
            return Shape::Enum(values);
        }
    }
    Shape::Newtype(field_type(schema, defs))
}

/// Definitions held by value (not behind a `Vec` or map) in a type.
fn by_value(ty: &Ty, out: &mut Vec<String>) {
    match ty {
        Ty::Def(name) => out.push(name.clone()),
        Ty::Option(inner) => by_value(inner, out),
        _ => {}
    }
}

/// Definitions a type holds anywhere (by value, in an `Option` or a `Vec`).
fn anywhere(ty: &Ty, out: &mut Vec<String>) {
    match ty {
        Ty::Def(name) => out.push(name.clone()),
        Ty::Option(inner) | Ty::Vec(inner) => anywhere(inner, out),
        _ => {}
    }
}

/// How definitions hold each other: by-value edges (a cycle of them needs a box) and the
/// edges that hold their target as `crate::exact::Deferred` (see `indirection`).
struct Graph {
    by_value: BTreeMap<String, Vec<String>>,
    deferred: BTreeSet<(String, String)>,
}

/// Whether `from` reaches `to` through by-value edges.
fn reaches(edges: &BTreeMap<String, Vec<String>>, from: &str, to: &str) -> bool {
    let mut stack = vec![from.to_string()];
    let mut seen = BTreeSet::new();
    while let Some(at) = stack.pop() {
        if at == to {
            return true;
        }
        if seen.insert(at.clone()) {
            stack.extend(edges.get(&at).into_iter().flatten().cloned());
        }
    }
    false
}

fn render(ty: &Ty, owner: &str, graph: &Graph) -> TokenStream {
    render_in(ty, owner, graph, false)
}

/// `ty` as a field type of `owner`; `in_vec` once inside a `Vec`, which is indirection
/// enough for `Sized` but not for drop check.
fn render_in(ty: &Ty, owner: &str, graph: &Graph, in_vec: bool) -> TokenStream {
    match ty {
        Ty::Value => quote! { ::serde_json::Value },
        Ty::String => quote! { ::std::string::String },
        Ty::Bool => quote! { bool },
        Ty::Number => quote! { ::serde_json::Number },
        Ty::Map => quote! { ::serde_json::Map<::std::string::String, ::serde_json::Value> },
        Ty::Vec(inner) => {
            // A `Vec` is already indirection: nothing inside it needs a box.
            let inner = render_in(inner, owner, graph, true);
            quote! { ::std::vec::Vec<#inner> }
        }
        Ty::Option(inner) => {
            let inner = render_in(inner, owner, graph, in_vec);
            quote! { ::std::option::Option<#inner> }
        }
        Ty::Def(name) => {
            let ident = format_ident!("{}", name);
            if graph.deferred.contains(&(owner.to_string(), name.clone())) {
                quote! { crate::exact::Deferred<#ident> }
            } else if !in_vec && !owner.is_empty() && reaches(&graph.by_value, name, owner) {
                quote! { ::std::boxed::Box<#ident> }
            } else {
                quote! { #ident }
            }
        }
    }
}

/// Runs `f` with panics caught and their default report (message and backtrace) silenced.
/// The hook is process-wide, so a lock keeps two generations from swapping it at once.
fn quietly<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    static HOOK: Mutex<()> = Mutex::new(());
    let _guard = HOOK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    outcome
}

/// typify's items for one view schema, parsed; `None` when it fails or panics.
fn typify(name: &str, view: Value) -> Option<syn::File> {
    let schema: schemars08::schema::Schema = serde_json::from_value(view).ok()?;
    let mut settings = TypeSpaceSettings::default();
    settings.with_struct_builder(false);
    let mut space = TypeSpace::new(&settings);
    space.add_ref_types(vec![(name.to_string(), schema)]).ok()?;
    syn::parse2::<syn::File>(space.to_stream()).ok()
}

/// The JSON member name of a typify field: its `#[serde(rename = "…")]`, else its name.
fn wire_name(field: &syn::Field) -> Option<String> {
    let mut renamed = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let value: syn::LitStr = meta.value()?.parse()?;
                renamed = Some(value.value());
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    renamed.or_else(|| field.ident.as_ref().map(|i| i.to_string().trim_start_matches("r#").to_string()))
}

struct Builder {
    graph: Graph,
    error_module: Option<Item>,
    fallbacks: Vec<String>,
}

impl Builder {
    fn derive() -> TokenStream {
        quote! { #[derive(::serde::Deserialize, ::serde::Serialize, Clone, Debug, PartialEq)] }
    }

    fn newtype(&self, name: &str, ty: &Ty, origin: &str) -> TokenStream {
        let ident = format_ident!("{}", name);
        let inner = render(ty, name, &self.graph);
        let derive = Self::derive();
        let doc = format!(" Any value `#{}` of the input schema accepts (checked by `check_{name}`).", crate::rust::doc_safe(origin));
        quote! {
            #[doc = #doc]
            #derive
            #[serde(transparent)]
            pub struct #ident(pub #inner);
        }
    }

    fn string_enum(&mut self, name: &str, values: &[String], origin: &str) -> Option<TokenStream> {
        let file = typify(name, json!({"type": "string", "enum": values}))?;
        let mut out = Vec::new();
        let mut found = false;
        for item in file.items {
            match item {
                Item::Enum(e) if e.ident == name && e.variants.len() == values.len() && e.variants.iter().all(|v| v.fields.is_empty()) => {
                    found = true;
                    out.push(Item::Enum(e));
                }
                Item::Mod(m) if m.ident == "error" => {
                    self.error_module.get_or_insert(Item::Mod(m));
                }
                Item::Impl(i) => out.push(Item::Impl(i)),
                _ => return None,
            }
        }
        let doc = format!(" One of the strings `#{}` of the input schema allows.", crate::rust::doc_safe(origin));
        found.then(|| quote! { #[doc = #doc] #(#out)* })
    }

    fn structure(&mut self, name: &str, fields: &[(String, Ty, bool)], extra: bool, origin: &str) -> Option<TokenStream> {
        let properties: Map<String, Value> = fields.iter().map(|(n, _, _)| (n.clone(), json!({}))).collect();
        let required: Vec<&str> = fields.iter().filter(|(_, _, optional)| !optional).map(|(n, _, _)| n.as_str()).collect();
        let view = json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
        let file = typify(name, view)?;
        let mut item = None;
        for candidate in file.items {
            match candidate {
                Item::Struct(s) if s.ident == name && item.is_none() => item = Some(s),
                // `impl From<&X> for X` and `Default`: not kept, their bodies assume typify's field types.
                Item::Impl(_) => {}
                Item::Mod(m) if m.ident == "error" => {
                    self.error_module.get_or_insert(Item::Mod(m));
                }
                _ => return None,
            }
        }
        let mut item = item?;
        let Fields::Named(named) = &mut item.fields else { return if fields.is_empty() { self.unit(name, extra, origin) } else { None } };
        if named.named.len() != fields.len() {
            return None;
        }
        let by_wire: BTreeMap<&str, (&Ty, bool)> = fields.iter().map(|(n, t, o)| (n.as_str(), (t, *o))).collect();
        let mut idents = BTreeSet::new();
        for field in named.named.iter_mut() {
            let wire = wire_name(field)?;
            let (ty, optional) = by_wire.get(wire.as_str())?;
            idents.insert(field.ident.as_ref()?.to_string()).then_some(())?;
            let rendered = render(ty, name, &self.graph);
            field.attrs.retain(|a| !a.path().is_ident("serde"));
            if *optional {
                field.ty = parse_quote! { ::std::option::Option<#rendered> };
                field.attrs.push(parse_quote! {
                    #[serde(rename = #wire, default, with = "crate::exact::present", skip_serializing_if = "::std::option::Option::is_none")]
                });
            } else {
                field.ty = parse_quote! { #rendered };
                field.attrs.push(parse_quote! { #[serde(rename = #wire)] });
            }
        }
        if extra {
            let mut ident = "extra".to_string();
            while idents.contains(&ident) {
                ident.push('_');
            }
            let ident = format_ident!("{}", ident);
            named.named.push(parse_quote! {
                /// Every other member, as written.
                #[serde(flatten)]
                pub #ident: ::serde_json::Map<::std::string::String, ::serde_json::Value>
            });
        }
        item.attrs.retain(|a| a.path().is_ident("doc"));
        let derive = Self::derive();
        let closed = if extra {
            quote! {}
        } else {
            quote! { #[serde(deny_unknown_fields)] }
        };
        let doc = format!(" An object `#{}` of the input schema accepts.", crate::rust::doc_safe(origin));
        Some(quote! { #[doc = #doc] #derive #closed #item })
    }

    /// An object schema without properties: only its other members.
    fn unit(&self, name: &str, extra: bool, origin: &str) -> Option<TokenStream> {
        let ident = format_ident!("{}", name);
        let derive = Self::derive();
        let doc = format!(" An object `#{}` of the input schema accepts.", crate::rust::doc_safe(origin));
        Some(if extra {
            quote! {
                #[doc = #doc]
                #derive
                #[serde(transparent)]
                pub struct #ident(pub ::serde_json::Map<::std::string::String, ::serde_json::Value>);
            }
        } else {
            quote! {
                #[doc = #doc]
                #derive
                #[serde(deny_unknown_fields)]
                pub struct #ident {}
            }
        })
    }
}

/// Types for every definition of `normalized`.
pub fn generate(normalized: &Normalized) -> Types {
    let defs = &normalized.defs;
    let shapes: Vec<(&String, Shape)> = defs.iter().map(|(name, schema)| (name, shape(schema, defs))).collect();
    let (mut edges, mut all): (BTreeMap<String, Vec<String>>, BTreeMap<String, Vec<String>>) = Default::default();
    for (name, shape) in &shapes {
        let (entry, every) = (edges.entry((*name).clone()).or_default(), all.entry((*name).clone()).or_default());
        match shape {
            Shape::Struct { fields, .. } => fields.iter().for_each(|(_, ty, _)| {
                by_value(ty, entry);
                anywhere(ty, every);
            }),
            Shape::Newtype(ty) => {
                by_value(ty, entry);
                anywhere(ty, every);
            }
            Shape::Enum(_) => {}
        }
    }
    let deferred = super::plan::indirection::cuts(&all);
    let mut b = Builder { graph: Graph { by_value: edges, deferred }, error_module: None, fallbacks: Vec::new() };
    let outcome = quietly(|| {
        let mut items = Vec::new();
        for (name, shape) in &shapes {
            let origin = normalized.origins.get(*name).map_or("", String::as_str);
            let typed = match shape {
                Shape::Struct { fields, extra } => b.structure(name, fields, *extra, origin).ok_or(Ty::Map),
                Shape::Enum(values) => b.string_enum(name, values, origin).ok_or(Ty::String),
                Shape::Newtype(ty) => Ok(b.newtype(name, ty, origin)),
            };
            items.push(typed.unwrap_or_else(|widest| {
                b.fallbacks.push((*name).clone());
                b.newtype(name, &widest, origin)
            }));
        }
        items
    });
    let items = match outcome {
        Ok(items) => items,
        // A panic outside typify's own calls: every definition becomes a newtype.
        Err(_) => defs.keys().map(|name| b.newtype(name, &field_type(&defs[name.as_str()], defs), "")).collect(),
    };
    let error_module = b.error_module.take();
    Types { tokens: quote! { #error_module #(#items)* }, fallbacks: b.fallbacks }
}
