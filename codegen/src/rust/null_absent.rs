//! Keeps `null` and absent apart in typify's structs.
//!
//! typify maps an optional property that admits `null` to `Option<T>` with
//! `skip_serializing_if = "Option::is_none"`, so `{"k": null}` decodes to `None` and
//! re-encodes as `{}`: the distinction the wire makes is lost. This pass rewrites such
//! fields to `Option<Option<T>>` (absent → `None`, `null` → `Some(None)`), decoded and
//! encoded through `crate::exact::double_option`.

use serde_json::{Map, Value};
use syn::visit_mut::VisitMut;
use syn::{parse_quote, Field, Fields, ItemStruct, Type};

/// Rewrites the structs of `file` generated from `defs`.
pub fn patch(file: &mut syn::File, defs: &Map<String, Value>) {
    Patcher { defs }.visit_file_mut(file);
}

struct Patcher<'d> {
    defs: &'d Map<String, Value>,
}

impl VisitMut for Patcher<'_> {
    fn visit_item_struct_mut(&mut self, item: &mut ItemStruct) {
        let Some(schema) = self.defs.get(&item.ident.to_string()) else { return };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
        let Fields::Named(fields) = &mut item.fields else { return };
        for field in fields.named.iter_mut() {
            let name = wire_name(field);
            if required.contains(&name.as_str()) {
                continue;
            }
            let Some(property) = properties.get(&name) else { continue };
            if !admits_null(property, self.defs, 0) {
                continue;
            }
            let Some(inner) = option_inner(&field.ty) else { continue };
            field.ty = parse_quote! { ::std::option::Option<::std::option::Option<#inner>> };
            field.attrs.push(parse_quote! { #[serde(default, with = "crate::exact::double_option")] });
        }
    }
}

/// The JSON member name of a field: its `#[serde(rename = "…")]`, else its identifier.
fn wire_name(field: &Field) -> String {
    for attr in &field.attrs {
        if !attr.path().is_ident("serde") {
            continue;
        }
        let mut renamed = None;
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let value: syn::LitStr = meta.value()?.parse()?;
                renamed = Some(value.value());
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
        if let Some(name) = renamed {
            return name;
        }
    }
    let ident = field.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
    ident.trim_start_matches("r#").to_string()
}

/// `T` of a field typed `Option<T>` (written as typify writes it).
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.first()? {
        syn::GenericArgument::Type(inner) => Some(inner),
        _ => None,
    }
}

/// Whether a (normalized) schema accepts `null`.
fn admits_null(schema: &Value, defs: &Map<String, Value>, depth: usize) -> bool {
    if depth > 32 {
        return false;
    }
    let object = match schema {
        Value::Bool(b) => return *b,
        Value::Object(object) => object,
        _ => return false,
    };
    if let Some(r) = object.get("$ref").and_then(Value::as_str) {
        let target = r.strip_prefix("#/$defs/").and_then(|name| defs.get(name));
        if !target.is_some_and(|t| admits_null(t, defs, depth + 1)) {
            return false;
        }
    }
    if let Some(ty) = object.get("type") {
        let allows = match ty {
            Value::String(t) => t == "null",
            Value::Array(ts) => ts.iter().any(|t| t == "null"),
            _ => false,
        };
        if !allows {
            return false;
        }
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        if !values.iter().any(Value::is_null) {
            return false;
        }
    }
    if object.get("const").is_some_and(|c| !c.is_null()) {
        return false;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = object.get(key).and_then(Value::as_array) {
            if !branches.iter().any(|b| admits_null(b, defs, depth + 1)) {
                return false;
            }
        }
    }
    if let Some(members) = object.get("allOf").and_then(Value::as_array) {
        if !members.iter().all(|m| admits_null(m, defs, depth + 1)) {
            return false;
        }
    }
    true
}
