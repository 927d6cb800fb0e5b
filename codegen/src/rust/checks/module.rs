//! A schema's generated checks as items, each owned by the definition whose check it
//! belongs to, so that one generation gives both modules: the whole `checks` module
//! (`checkfu-wire-typed`: every check, the exact decoders, `DEFINITIONS`) and the runtime's,
//! which keeps the items of the definitions the runtime reaches, token for token.

use std::collections::BTreeSet;

use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::{format_ident, quote};

use crate::rust::names::def_fn;

/// What `checks::generate` emitted for one schema.
pub struct Checks {
    /// `(owner, item)`: the statics the checks read.
    pub(super) statics: Vec<(String, TokenStream)>,
    /// `(name, item)`: the node functions no definition owns, each written once and called
    /// from wherever its body recurs (`Emitter::child`).
    pub(super) shared: Vec<(Ident, TokenStream)>,
    /// `(owner, item)`: check functions, node functions and the `deferred_*` calls, in order.
    pub(super) functions: Vec<(String, TokenStream)>,
    /// The callees of `DEFERRED`, in table order.
    pub(super) deferred: Vec<String>,
    /// `decode_*` and `roundtrip_*` per definition (typed: they name `super::types`).
    pub(super) decoders: Vec<TokenStream>,
    /// The rows of `DEFINITIONS`.
    pub(super) definitions: Vec<TokenStream>,
}

impl Checks {
    /// Every check, decoder and `DEFINITIONS`: the module `checkfu-wire-typed` compiles.
    pub fn full(&self) -> TokenStream {
        let statics = self.statics.iter().map(|(_, item)| item);
        let shared = self.shared.iter().map(|(_, item)| item);
        let functions = self.functions.iter().map(|(_, item)| item);
        let table = self.table(|_| true);
        let (decoders, definitions) = (&self.decoders, &self.definitions);
        quote! {
            use serde_json::Value;
            use crate::exact::{Invalid, Json};
            #(#statics)*
            #(#shared)*
            #(#functions)*
            #table
            #(#decoders)*
            /// Every definition: its name, where it came from in the input schema, its check,
            /// and a decode-then-encode round trip through its generated type.
            pub const DEFINITIONS: &[crate::exact::Definition] = &[#(#definitions),*];
        }
    }

    /// The items of the definitions in `reached` (closed under calls, `plan::reach`): the
    /// module the runtime compiles. Each item is the one `full` writes; `DEFERRED` keeps its
    /// length and order, with `unreached` where a callee is not compiled (no compiled check
    /// calls it: its callers are not reached either).
    pub fn reached(&self, reached: &BTreeSet<String>) -> TokenStream {
        let keep = |items: &'_ [(String, TokenStream)]| -> Vec<TokenStream> {
            items.iter().filter(|(owner, _)| reached.contains(owner)).map(|(_, item)| item.clone()).collect()
        };
        let (statics, functions) = (keep(&self.statics), keep(&self.functions));
        // A shared function is kept when a kept function names it.
        let called: BTreeSet<String> = functions.iter().flat_map(|item| item.clone()).flat_map(idents).collect();
        let shared: Vec<&TokenStream> =
            self.shared.iter().filter(|(name, _)| called.contains(&name.to_string())).map(|(_, item)| item).collect();
        let table = self.table(|name| reached.contains(name));
        let stub = if self.deferred.iter().any(|name| !reached.contains(name)) {
            quote! {
                /// Stands in `DEFERRED` for a check the runtime does not compile: no compiled
                /// check calls it (the whole module is in `checkfu-wire-typed`).
                fn unreached(_: &Json<'_>) -> Result<(), Invalid> {
                    Err(Invalid::new("a check the runtime does not compile"))
                }
            }
        } else {
            TokenStream::new()
        };
        quote! {
            use crate::exact::{Invalid, Json};
            #(#statics)*
            #(#shared)*
            #(#functions)*
            #stub
            #table
        }
    }

    /// `DEFERRED`, with the callees `compiled` refuses replaced by `unreached`.
    fn table(&self, compiled: impl Fn(&str) -> bool) -> TokenStream {
        if self.deferred.is_empty() {
            return TokenStream::new();
        }
        let length = self.deferred.len();
        let entries = self.deferred.iter().map(|name| if compiled(name) { def_fn(name) } else { format_ident!("unreached") });
        quote! {
            /// The checks that long chains and cycles of definitions call through a table
            /// rather than by name, so that rustc does not walk the whole chain at once.
            static DEFERRED: [fn(&Json<'_>) -> Result<(), Invalid>; #length] = [#(#entries),*];
        }
    }
}

/// Every identifier in `tree`, groups included (literals are not identifiers).
pub(super) fn idents(tree: TokenTree) -> Vec<String> {
    match tree {
        TokenTree::Ident(ident) => vec![ident.to_string()],
        TokenTree::Group(group) => group.stream().into_iter().flat_map(idents).collect(),
        _ => Vec::new(),
    }
}
