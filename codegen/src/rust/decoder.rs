//! Decoder tables: where the runtime decoder looks up what a message means.
//!
//! - the slot table: `_meta` key → carrier → direction → class → typed payload decoder;
//! - the method table: JSON-RPC method → side, notification or request, typed params and
//!   result decoders, for the ACP base grammar, the Checkfu extension methods, and the
//!   method families the catalog reads from schemas (Goose's `x-method` annotations,
//!   khy-os's method enum);
//! - the golden-vector table: vector name → direction → decoder of its wire message.
//!
//! Planning runs before the schema types are generated: it decides which schema nodes
//! need a named definition (an entry point) so that every decoder is a generated type.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;

use crate::catalog::model::{Catalog, Direction, Side, SlotClass, SourceStyle};
use crate::diagnostic::{Class, Diagnostic};
use crate::schema::normalize::{escape_pointer, pascal, ANNOTATIONS};
use crate::schema::SchemaSet;

/// Schema file → raw JSON Pointer → the definition name to hoist that node under.
pub type Pins = BTreeMap<String, BTreeMap<String, String>>;

/// A generated definition: the module of its schema file and its type name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Def {
    pub module: String,
    pub name: String,
}

/// Where a slot rides (shared with the runtime, which reads the tables written here).
pub use checkfu_wire_vocab::Part;

pub struct SlotPlan {
    pub key: String,
    pub method: Option<String>,
    pub part: Part,
    pub direction: Direction,
    pub class: SlotClass,
    pub payload: Def,
    pub result: Option<Def>,
    pub safety_profile: bool,
    pub requires: Option<(String, String)>,
}

pub struct MethodPlan {
    pub name: String,
    pub source: String,
    pub side: Side,
    pub notification: bool,
    pub params: Option<Def>,
    pub result: Option<Def>,
    /// For families whose root schema is the whole message.
    pub envelope: Option<Def>,
}

pub struct VectorPlan {
    pub name: String,
    pub direction: String,
    pub wire: Def,
}

#[derive(Default)]
pub struct Plan {
    /// The namespace of the `_meta` slot keys (`checkfu.`): what the decoder judges.
    pub namespace: String,
    pub pins: Pins,
    pub slots: Vec<SlotPlan>,
    pub methods: Vec<MethodPlan>,
    /// The closed part of the pinned ACP schema's grammar.
    pub grammar: super::acp::Grammar,
    /// The ACP grammar the protocol literal promises, for the revisions lock to record.
    pub floor: super::acp::Grammar,
    /// The catalog's optional-fidelity `sessionUpdate` kinds (`[acp]
    /// optional_fidelity_updates`), each a kind of `grammar`. Kept apart from the grammar:
    /// it is Checkfu's decision about the schema, not part of what the literal promises.
    pub fidelity_updates: Vec<String>,
    pub vectors: Vec<VectorPlan>,
    pub warnings: Vec<String>,
}


impl Plan {
    /// The definition for `file#pointer`: an existing definition when the node is one or
    /// refers to one, else a pinned hoist under `wanted`.
    pub(crate) fn entry(&mut self, schemas: &SchemaSet, reference: &str, wanted: &str) -> Result<Def, String> {
        let (file, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        let document = schemas.files.get(file).ok_or_else(|| format!("no schema file `{file}`"))?;
        let node = document.pointer(pointer).ok_or_else(|| format!("`{file}` has nothing at `{pointer}`"))?;
        let (module, root) = super::schemas::names(file);
        let definitions = crate::schema::normalize::definition_names(&root, document);
        let name = if let Some(name) = definitions.get(pointer) {
            name.clone()
        } else if let Some(name) = referenced_def(node).and_then(|target| definitions.get(&target)) {
            name.clone()
        } else {
            self.pins.entry(file.to_string()).or_default().insert(pointer.to_string(), wanted.to_string());
            wanted.to_string()
        };
        Ok(Def { module, name })
    }
}

/// The pointer of the definition a node stands for, when it is `{"$ref": "#/$defs/X"}` or
/// `{"allOf": [{"$ref": …}]}` plus annotations.
fn referenced_def(node: &Value) -> Option<String> {
    let object = node.as_object()?;
    let asserts = |k: &String| !ANNOTATIONS.contains(&k.as_str());
    let reference = match object.keys().filter(|k| asserts(k)).collect::<Vec<_>>().as_slice() {
        [k] if *k == "$ref" => object.get("$ref")?.as_str()?.to_string(),
        [k] if *k == "allOf" => match object.get("allOf")?.as_array()?.as_slice() {
            [only] if only.as_object()?.len() == 1 => only.get("$ref")?.as_str()?.to_string(),
            _ => return None,
        },
        _ => return None,
    };
    crate::schema::normalize::ref_target(&reference).ok()
}

/// Parses a carrier as the docs write it: `initialize response _meta`, `session/new
/// request _meta`, `session/update member _meta`, `ACP extension request`.
fn carrier(text: &str) -> Option<(Option<String>, Part)> {
    if text == "ACP extension request" {
        return Some((None, Part::Method));
    }
    let rest = text.strip_suffix(" _meta")?;
    let (method, part) = rest.rsplit_once(' ')?;
    let part = match part {
        "request" => Part::Request,
        "response" => Part::Response,
        "member" => Part::Member,
        _ => return None,
    };
    Some((Some(method.to_string()), part))
}

/// Plans every decoder table from the catalog and the schemas.
/// `recorded` is the ACP floor the revisions lock holds for the protocol literal, if any.
pub fn plan(catalog: &Catalog, schemas: &SchemaSet, file: crate::diagnostic::FileId, recorded: Option<&super::acp::Grammar>) -> Result<Plan, Vec<Diagnostic>> {
    let mut plan = Plan::default();
    let mut errors = Vec::new();
    // When the grammar could not be read, the slots' carriers are not judged against it:
    // every one would be reported missing, burying the cause.
    let mut grammar_read = true;
    match super::acp::grammar(&mut plan, schemas, catalog, recorded) {
        Ok((grammar, floor)) => (plan.grammar, plan.floor) = (grammar, floor),
        Err(problems) => {
            grammar_read = !plan.methods.is_empty();
            let span = catalog.acp.schema.span.clone();
            errors.extend(problems.into_iter().map(|p| Diagnostic::new(Class::UnknownOrDuplicate, p).at(file, span.clone(), "the pinned ACP schema")));
        }
    }
    for (i, kind) in catalog.acp.optional_fidelity_updates.iter().enumerate() {
        let at = |message: String| Diagnostic::new(Class::UnknownOrDuplicate, message).at(file, kind.span.clone(), "this kind");
        if catalog.acp.optional_fidelity_updates[..i].iter().any(|k| k.as_str() == kind.as_str()) {
            errors.push(at(format!("[acp] optional_fidelity_updates names `{}` twice", kind.as_str())));
        } else if grammar_read && !plan.grammar.session_update_kinds.iter().any(|k| k == kind.as_str()) {
            errors.push(at(format!(
                "[acp] optional_fidelity_updates names `{}`, which is not a sessionUpdate kind of the pinned schema (it has: {})",
                kind.as_str(),
                plan.grammar.session_update_kinds.join(", ")
            )));
        } else {
            plan.fidelity_updates.push(kind.as_str().to_owned());
        }
    }
    let acp_methods: Vec<String> = plan.methods.iter().map(|m| m.name.clone()).collect();
    for slot in &catalog.slots {
        let key = slot.key.as_str();
        let at = |message: String| Diagnostic::new(Class::DeadVocabulary, message).at(file, slot.key.span.clone(), "this slot").entry(key);
        let Some((method, part)) = carrier(slot.carrier.as_str()) else {
            errors.push(at(format!("slot `{key}` has a carrier no decoder reads: `{}`", slot.carrier.as_str())));
            continue;
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

/// A method read from `x-method`/`x-side` annotations, with the keys (under `$defs`) of
/// the definitions of its params and result.
pub(crate) struct AnnotatedMethod {
    pub plan: MethodPlan,
    pub params_def: Option<String>,
    pub result_def: Option<String>,
}

/// Every method a schema's definitions annotate with `x-method` (prefixed with `prefix`)
/// and `x-side`: a `*Response` definition is its result, a `*Request` or `*Notification`
/// one its params (a notification gets no `id`). Shared by the pinned ACP schema and the
/// annotation-style method sources.
pub(crate) fn annotated_methods(
    plan: &mut Plan,
    schemas: &SchemaSet,
    file: &str,
    prefix: &str,
    source: &str,
) -> Result<BTreeMap<String, AnnotatedMethod>, Vec<String>> {
    let Some(document) = schemas.files.get(file) else { return Err(vec![format!("no schema file `{file}`")]) };
    let mut methods: BTreeMap<String, AnnotatedMethod> = BTreeMap::new();
    let mut errors = Vec::new();
    for (def, schema) in document.get("$defs").and_then(Value::as_object).into_iter().flatten() {
        let Some(annotation) = schema.get("x-method").and_then(Value::as_str) else { continue };
        let side = match schema.get("x-side").and_then(Value::as_str) {
            Some("agent") => Side::Agent,
            Some("client") => Side::Client,
            Some("protocol") => Side::Protocol,
            other => {
                errors.push(format!("`{file}#/$defs/{}`: unknown x-side {other:?}", escape_pointer(def)));
                continue;
            }
        };
        let wire = format!("{prefix}{annotation}");
        if let Some(named) = described_method(schema).filter(|named| *named != wire) {
            plan.warnings.push(format!(
                "schemas/{file}#/$defs/{}: the description names method `{named}`, but `x-method` makes it `{wire}`; the decoder uses `{wire}`",
                escape_pointer(def)
            ));
        }
        let target = match plan.entry(schemas, &format!("{file}#/$defs/{}", escape_pointer(def)), def) {
            Ok(target) => target,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let entry = methods.entry(wire.clone()).or_insert_with(|| AnnotatedMethod {
            plan: MethodPlan { name: wire.clone(), source: source.to_string(), side, notification: false, params: None, result: None, envelope: None },
            params_def: None,
            result_def: None,
        });
        if entry.plan.side != side {
            errors.push(format!("schemas/{file}: method `{wire}` has definitions for two sides"));
        }
        if def.ends_with("Response") {
            entry.plan.result = Some(target);
            entry.result_def = Some(def.clone());
        } else {
            entry.plan.notification = def.ends_with("Notification");
            entry.plan.params = Some(target);
            entry.params_def = Some(def.clone());
        }
    }
    if errors.is_empty() {
        Ok(methods)
    } else {
        Err(errors)
    }
}

/// The method a definition's description names (`Method: `_agent/tools``), if any.
fn described_method(schema: &Value) -> Option<String> {
    let description = schema.get("description")?.as_str()?;
    let after = description.split("Method: `").nth(1)?;
    Some(after.split('`').next()?.to_string())
}

fn vectors(plan: &mut Plan, schemas: &SchemaSet, file: &str) -> Result<(), String> {
    // An unknown file was reported by validation.
    let Some(document) = schemas.files.get(file) else { return Ok(()) };
    let variants = document
        .pointer("/properties/vectors/items/anyOf")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("`{file}` has no `/properties/vectors/items/anyOf`"))?;
    for (i, variant) in variants.iter().enumerate() {
        let single = |p: &str| variant.pointer(p).and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_str).map(str::to_string);
        let (Some(name), Some(direction)) = (single("/properties/name/enum"), single("/properties/direction/enum")) else {
            return Err(format!("`{file}`: vector variant {i} has no single name and direction"));
        };
        let pointer = format!("{file}#/properties/vectors/items/anyOf/{i}/properties/wire");
        let wire = plan.entry(schemas, &pointer, &format!("Wire{}", pascal(&name)))?;
        plan.vectors.push(VectorPlan { name, direction, wire });
    }
    Ok(())
}

fn decoder(def: &Def) -> TokenStream {
    let module = format_ident!("{}", def.module);
    let decode = format_ident!("decode_{}", def.name);
    quote! { |v: &Value| crate::schemas::#module::checks::#decode(v).map(drop) }
}

fn checker(def: &Def) -> TokenStream {
    let module = format_ident!("{}", def.module);
    let check = format_ident!("check_{}", def.name);
    quote! { crate::schemas::#module::checks::#check }
}

fn opt_checker(def: &Option<Def>) -> TokenStream {
    match def {
        Some(def) => {
            let c = checker(def);
            quote! { Some(#c) }
        }
        None => quote! { None },
    }
}

fn opt_decoder(def: &Option<Def>) -> TokenStream {
    match def {
        Some(def) => {
            let d = decoder(def);
            quote! { Some(#d) }
        }
        None => quote! { None },
    }
}

/// The generated tables, included by `src/decode/tables.rs`.
pub fn generate(plan: &Plan) -> TokenStream {
    let slots = plan.slots.iter().map(|s| {
        let key = &s.key;
        let method = match &s.method {
            Some(m) => quote! { Some(#m) },
            None => quote! { None },
        };
        let part = match s.part {
            Part::Request => quote! { Part::Request },
            Part::Response => quote! { Part::Response },
            Part::Member => quote! { Part::Member },
            Part::Method => quote! { Part::Method },
        };
        let direction = match s.direction {
            Direction::HarnessToClient => quote! { Direction::HarnessToClient },
            Direction::ClientToHarness => quote! { Direction::ClientToHarness },
        };
        let class = match s.class {
            SlotClass::Declaration => quote! { SlotClass::Declaration },
            SlotClass::Fidelity => quote! { SlotClass::Fidelity },
            SlotClass::Authority => quote! { SlotClass::Authority },
            SlotClass::Method => quote! { SlotClass::Method },
        };
        let decode = decoder(&s.payload);
        let check = checker(&s.payload);
        let result = opt_decoder(&s.result);
        let safety = s.safety_profile;
        let requires = match &s.requires {
            Some((slot, value)) => quote! { Some((#slot, #value)) },
            None => quote! { None },
        };
        quote! {
            SlotDecoder { key: #key, method: #method, part: #part, direction: #direction, class: #class,
                check: #check, decode: #decode, result: #result, safety_profile: #safety, requires: #requires }
        }
    });
    let methods: Vec<TokenStream> = plan
        .methods
        .iter()
        .map(|m| {
            let (name, source, notification) = (&m.name, &m.source, m.notification);
            let side = match m.side {
                Side::Agent => quote! { Side::Agent },
                Side::Client => quote! { Side::Client },
                Side::Protocol => quote! { Side::Protocol },
            };
            let (params, result, envelope) = (opt_decoder(&m.params), opt_decoder(&m.result), opt_decoder(&m.envelope));
            let (params_check, result_check, envelope_check) =
                (opt_checker(&m.params), opt_checker(&m.result), opt_checker(&m.envelope));
            quote! {
                MethodDecoder { name: #name, source: #source, side: #side, notification: #notification,
                    params: #params, result: #result, envelope: #envelope,
                    params_check: #params_check, result_check: #result_check, envelope_check: #envelope_check }
            }
        })
        .collect();
    let arms = plan.methods.iter().enumerate().map(|(i, m)| {
        let name = &m.name;
        quote! { #name => Some(&METHODS[#i]), }
    });
    let slot_arms = plan.slots.iter().enumerate().map(|(i, s)| {
        let key = &s.key;
        quote! { #key => Some(#i), }
    });
    let vectors = plan.vectors.iter().map(|v| {
        let (name, direction) = (&v.name, &v.direction);
        let decode = decoder(&v.wire);
        quote! { VectorDecoder { name: #name, direction: #direction, decode: #decode } }
    });
    let v = &plan.grammar;
    let (kinds, stops, fidelity) = (&v.session_update_kinds, &v.stop_reasons, &plan.fidelity_updates);
    let (version, version_method, update_method, prompt_method) =
        (v.protocol_version, v.version_method.as_str(), v.update_method.as_str(), v.prompt_method.as_str());
    let namespace = plan.namespace.as_str();
    quote! {
        /// The namespace of the `_meta` slot keys: keys in it are judged, others ignored.
        pub const META_NAMESPACE: &str = #namespace;
        /// The method whose response carries `protocolVersion`.
        pub const VERSION_METHOD: &str = #version_method;
        /// The notification whose `params.update` is a session update member.
        pub const UPDATE_METHOD: &str = #update_method;
        /// The method whose response carries `stopReason`.
        pub const PROMPT_METHOD: &str = #prompt_method;
        /// ACP protocol version the decoder accepts in `initialize`.
        pub const PROTOCOL_VERSION: u64 = #version as u64;
        /// `sessionUpdate` kinds of the pinned ACP schema.
        pub const SESSION_UPDATE_KINDS: &[&str] = &[#(#kinds),*];
        /// Stop reasons of the pinned ACP schema.
        pub const STOP_REASONS: &[&str] = &[#(#stops),*];
        /// `sessionUpdate` kinds that carry only optional fidelity (the catalog's
        /// `[acp] optional_fidelity_updates`): one that fails its schema is ignored, not rejected.
        pub const FIDELITY_UPDATE_KINDS: &[&str] = &[#(#fidelity),*];
        /// Every `checkfu.*` slot and extension method, with its decode policy.
        pub const SLOTS: &[SlotDecoder] = &[#(#slots),*];
        /// Every method the decoder knows, with its typed decoders.
        pub const METHODS: &[MethodDecoder] = &[#(#methods),*];
        /// The method of that wire name.
        pub fn method(name: &str) -> Option<&'static MethodDecoder> {
            match name {
                #(#arms)*
                _ => None,
            }
        }
        /// The index in `SLOTS` of the slot with that key.
        pub fn slot(key: &str) -> Option<usize> {
            match key {
                #(#slot_arms)*
                _ => None,
            }
        }
        /// Golden-vector kinds: name → direction → decoder of the wire message.
        pub const VECTORS: &[VectorDecoder] = &[#(#vectors),*];
    }
}
