//! The checks emitter's state and the helpers its parts share: `mod.rs` (definitions,
//! references, combinators), `scalars` and `collections` each implement part of `Emitter`
//! and import it from here, none from another.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Ident, TokenStream};
use quote::quote;
use serde_json::{Map, Value};

use crate::rust::plan::calls::defined;

/// A construct the checks cannot compile, at a JSON Pointer into the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    pub pointer: String,
    pub message: String,
}

pub(super) struct Emitter<'d> {
    /// The definitions, to look through `$ref`s when a union or `unevaluated*` needs to.
    pub(super) defs: &'d Map<String, Value>,
    /// Each function with the definition whose check it belongs to (see `Checks`).
    pub(super) functions: Vec<(String, TokenStream)>,
    /// Each static with the definition whose check reads it.
    pub(super) statics: Vec<(String, TokenStream)>,
    pub(super) counter: usize,
    pub(super) errors: Vec<Unsupported>,
    /// The definition whose check is being emitted.
    pub(super) current: Option<String>,
    /// How many emitted calls each definition's check has (see `memoize`).
    pub(super) callers: BTreeMap<String, usize>,
    /// The definitions whose checks call another definition's.
    pub(super) calling: BTreeSet<String>,
    /// Calls `(caller, callee)` made through the table `DEFERRED` (see `deferred_call`).
    pub(super) deferred: BTreeSet<(String, String)>,
    /// The callees in `DEFERRED`, in table order.
    pub(super) table: Vec<String>,
    /// Node functions that read nothing but the value (no other function, no static), by
    /// their body: written once per schema and called wherever that body recurs.
    pub(super) shared: BTreeMap<String, Ident>,
    /// Those functions, in the order they were first needed (see `Checks::shared`).
    pub(super) shared_items: Vec<(Ident, TokenStream)>,
}

/// A non-negative integer keyword value (`3` or `3.0`).
pub(super) fn count(value: &Value) -> Option<usize> {
    value.as_u64().map(|n| n as usize).or_else(|| value.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0).map(|f| f as usize))
}

/// A schema number as a `crate::exact::Num` expression: an integer that fits an `i128`,
/// or the number's text. With `arbitrary_precision` that is the text the schema wrote;
/// without it, `SchemaSet::load` has already refused any number an `i64`, a `u64` or an
/// `f64` does not hold exactly, so the text is the value's own.
pub(super) fn number(n: &serde_json::Number) -> TokenStream {
    match n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)) {
        Some(i) => quote! { crate::exact::Num::Int(#i) },
        None => {
            let text = n.to_string();
            quote! { crate::exact::Num::Dec(#text) }
        }
    }
}

/// The definitions a definition's `$ref`s lead to, with their schemas.
pub(super) fn resolve<'d>(defs: &'d Map<String, Value>, r: &str) -> Option<(&'d str, &'d Value)> {
    let name = defined(r)?;
    defs.get_key_value(name).map(|(k, v)| (k.as_str(), v))
}
