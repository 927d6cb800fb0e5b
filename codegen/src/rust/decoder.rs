//! Emits the decoder tables (`generated/decoder_tables.rs`, included by
//! `src/decode/tables.rs`) from the plan: every row names the generated check of its
//! definition; and the typed tables of `checkfu-wire-typed` (`typed/generated/typed_tables.rs`),
//! whose rows decode into the generated types. Analysis is the plan's (`plan::decoder`); nothing is decided here.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::names::{decode_fn, def_fn};
use super::plan::model::{Carrier, MethodPlan};
use super::plan::{Def, Part, Plan};
use crate::catalog::model::{Direction, Side, SlotClass};

fn decoder(def: &Def) -> TokenStream {
    let module = format_ident!("{}", def.module);
    let decode = decode_fn(&def.name);
    quote! { |v: &Value| crate::schemas::#module::checks::#decode(v).map(drop) }
}

fn checker(def: &Def) -> TokenStream {
    let module = format_ident!("{}", def.module);
    let check = def_fn(&def.name);
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

/// The generated tables, included by `src/decode/tables.rs`.
pub fn generate(plan: &Plan) -> TokenStream {
    let slots = plan.slots.iter().map(|s| {
        let key = &s.key;
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
        let check = checker(&s.payload);
        let safety = s.safety_profile;
        let requires = match &s.requires {
            Some((slot, value)) => quote! { Some((#slot, #value)) },
            None => quote! { None },
        };
        quote! {
            SlotDecoder { key: #key, direction: #direction, class: #class,
                check: #check, safety_profile: #safety, requires: #requires }
        }
    });
    let carriers = plan.slots.iter().map(|s| slot_carrier(&Carrier { method: s.method.clone(), part: s.part }));
    let method_names: Vec<&str> = plan.methods.iter().map(|m| m.name.as_str()).collect();
    let method_enum = super::tables::names::named_enum(
        "Method",
        " A method the decoder knows (ACP's and the catalog's extension methods), by its wire name.",
        &method_names,
        quote! {},
    );
    // The `_meta` slot keys get an enum of their own (the extension methods are `Method`'s),
    // so a consumer names a slot by a variant: a catalog that renamed one would not compile.
    let slot_names: Vec<&str> = plan.slots.iter().map(|s| s.key.as_str()).filter(|k| k.starts_with(plan.namespace.as_str())).collect();
    let slot_enum =
        super::tables::names::named_enum("Slot", " A `checkfu.*` `_meta` slot the decoder knows, by its key.", &slot_names, quote! {});
    let (methods, arms) = method_rows(plan.methods.iter());
    let slot_arms = plan.slots.iter().enumerate().map(|(i, s)| {
        let key = &s.key;
        quote! { #key => Some(#i), }
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
        /// Where ACP v1 carries each slot of `SLOTS`, in its order.
        pub const SLOT_CARRIERS: &[SlotCarrier] = &[#(#carriers),*];
        #slot_enum
        #method_enum
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
    }
}

/// A row of `SLOT_CARRIERS`.
fn slot_carrier(c: &Carrier) -> TokenStream {
    let method = match &c.method {
        Some(m) => quote! { Some(#m) },
        None => quote! { None },
    };
    let part = match c.part {
        Part::Request => quote! { Part::Request },
        Part::Response => quote! { Part::Response },
        Part::Member => quote! { Part::Member },
        Part::Method => quote! { Part::Method },
    };
    quote! { SlotCarrier { method: #method, part: #part } }
}

/// The rows of `METHODS` and the arms of `method()` that find them, for `methods` in order.
fn method_rows<'p>(methods: impl Iterator<Item = &'p MethodPlan>) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let (mut rows, mut arms) = (Vec::new(), Vec::new());
    for (i, m) in methods.enumerate() {
        let (name, source, notification) = (&m.name, &m.source, m.notification);
        let side = match m.side {
            Side::Agent => quote! { Side::Agent },
            Side::Client => quote! { Side::Client },
            Side::Protocol => quote! { Side::Protocol },
        };
        let (params_check, result_check, envelope_check) = (opt_checker(&m.params), opt_checker(&m.result), opt_checker(&m.envelope));
        rows.push(quote! {
            MethodDecoder { name: #name, source: #source, side: #side, notification: #notification,
                params_check: #params_check, result_check: #result_check, envelope_check: #envelope_check }
        });
        arms.push(quote! { #name => Some(&METHODS[#i]), });
    }
    (rows, arms)
}

/// The ACP v2 decoder tables (`generated/decoder_tables_acp_v2.rs`, included by
/// `src/decode/tables.rs` with the runtime's `acp-v2` feature): v2's grammar, its methods
/// with the v2 schema's checks, and the extension methods, which ride both versions. The
/// slots are v1's table, shared; where v2 carries each is v2's own (`SLOT_CARRIERS`).
pub fn generate_v2(plan: &Plan) -> TokenStream {
    let v2 = &plan.v2;
    let carriers = plan.slots.iter().map(|s| slot_carrier(&s.v2));
    let extensions = plan.methods.iter().filter(|m| m.source != "acp");
    let names: Vec<&str> = v2.methods.iter().chain(extensions.clone()).map(|m| m.name.as_str()).collect();
    // v2's own method names (`auth/login`, …) as an enum, as v1's `Method`: the probe names
    // the method it sends by a variant.
    let method_enum = super::tables::names::named_enum(
        "Method",
        " A method an ACP v2 stream may carry (v2's and the catalog's extension methods), by its wire name.",
        &names,
        quote! {},
    );
    let (methods, arms) = method_rows(v2.methods.iter().chain(extensions));
    let g = &v2.grammar;
    let (version, version_method, update_method) = (g.protocol_version, g.version_method.as_str(), g.update_method.as_str());
    let (kinds, fidelity) = (&g.session_update_kinds, &v2.fidelity_updates);
    quote! {
        /// The method whose response carries `protocolVersion`.
        pub const VERSION_METHOD: &str = #version_method;
        /// The notification whose `params.update` is a session update member.
        pub const UPDATE_METHOD: &str = #update_method;
        /// ACP protocol version the decoder accepts in `initialize`.
        pub const PROTOCOL_VERSION: u64 = #version as u64;
        /// `sessionUpdate` kinds the pinned ACP v2 schema names (its enumeration is open).
        pub const SESSION_UPDATE_KINDS: &[&str] = &[#(#kinds),*];
        /// `sessionUpdate` kinds that carry only optional fidelity (the catalog's
        /// `[acp_v2] optional_fidelity_updates`): one that fails its schema is ignored, not rejected.
        pub const FIDELITY_UPDATE_KINDS: &[&str] = &[#(#fidelity),*];
        /// Where ACP v2 carries each slot of the shared `SLOTS`, in its order (the catalog's
        /// `carrier_v2`, else the slot's v1 carrier).
        pub const SLOT_CARRIERS: &[SlotCarrier] = &[#(#carriers),*];
        #method_enum
        /// Every method a v2 stream may carry, with its checks.
        pub const METHODS: &[MethodDecoder] = &[#(#methods),*];
        /// The method of that wire name.
        pub fn method(name: &str) -> Option<&'static MethodDecoder> {
            match name {
                #(#arms)*
                _ => None,
            }
        }
    }
}

/// The typed tables `checkfu-wire-typed` includes (`typed/src/lib.rs`): the golden-vector
/// kinds, each with the exact decoder of its wire message into its generated type.
pub fn typed(plan: &Plan) -> TokenStream {
    let vectors = plan.vectors.iter().map(|v| {
        let (name, direction) = (&v.name, &v.direction);
        let decode = decoder(&v.wire);
        quote! { VectorDecoder { name: #name, direction: #direction, decode: #decode } }
    });
    quote! {
        /// Golden-vector kinds: name → direction → decoder of the wire message.
        pub const VECTORS: &[VectorDecoder] = &[#(#vectors),*];
    }
}
