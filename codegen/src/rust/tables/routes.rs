//! The model plane's part of `catalog_tables.rs`: the `Dialect` enum, each provider's
//! gateway routes, the unlisted provider's routes and the reachability matrix, written from
//! the one derivation in `catalog::routes`. The runtime matches the enum and reads the
//! tables; it joins no path, applies no reachability rule and spells no dialect name.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use crate::catalog::routes::{self, Route, Routes};
use crate::catalog::Segment;

/// The variant of a dialect, as a path (`Dialect::OpenaiChat`).
fn dialect(name: &str) -> TokenStream {
    let variant = Ident::new(&routes::variant(name), Span::call_site());
    quote! { Dialect::#variant }
}

/// A list of dialects as a slice of variants.
pub(super) fn dialects<'a>(names: impl Iterator<Item = &'a str>) -> TokenStream {
    let items = names.map(dialect);
    quote! { &[#(#items),*] }
}

fn route(r: &Route) -> TokenStream {
    let dialect = dialect(r.dialect.name.as_str());
    let path = r.path;
    let segments = r.segments.iter().map(|s| match s {
        Segment::Literal(text) => quote! { Segment::Literal(#text) },
        Segment::Placeholder(name) => quote! { Segment::Placeholder(#name) },
    });
    quote! { Route { dialect: #dialect, path: #path, segments: &[#(#segments),*] } }
}

fn cell(value: Option<bool>) -> TokenStream {
    match value {
        Some(v) => quote! { Some(#v) },
        None => quote! { None },
    }
}

pub(super) fn generate(derived: &Routes) -> TokenStream {
    let names: Vec<&str> = derived.dialects.iter().map(|d| d.name.as_str()).collect();
    let variants: Vec<Ident> = names.iter().map(|n| Ident::new(&routes::variant(n), Span::call_site())).collect();
    let paths = derived.dialects.iter().map(|d| d.gateway_path.as_str());
    let docs = names.iter().map(|n| format!(" `{n}`."));
    let unlisted_name = routes::UNLISTED_PROVIDER;
    let providers = derived.providers.iter().map(|p| {
        let provider = p.provider;
        let routes = p.routes.iter().map(route);
        quote! { GatewayRoutes { provider: #provider, routes: &[#(#routes),*] } }
    });
    let unlisted = derived.unlisted.iter().map(route);
    let matrix = derived.reachability.iter().map(|row| {
        let harness = row.harness;
        let cells = row.providers.iter().copied().map(cell);
        let unlisted = cell(row.unlisted);
        quote! { Reachability { harness: #harness, providers: &[#(#cells),*], unlisted: #unlisted } }
    });
    quote! {
        /// A model wire dialect of the catalog: one variant per `[[dialects]]` entry.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Dialect {
            #(#[doc = #docs] #variants,)*
        }
        impl Dialect {
            /// Every dialect, in the catalog's order.
            pub const ALL: &'static [Dialect] = &[#(Dialect::#variants),*];
            /// The dialect's name in the catalog.
            pub fn name(self) -> &'static str {
                match self {
                    #(Dialect::#variants => #names,)*
                }
            }
            /// The dialect of a catalog name; `None` for a name the catalog does not have.
            pub fn from_name(name: &str) -> Option<Dialect> {
                match name {
                    #(#names => Some(Dialect::#variants),)*
                    _ => None,
                }
            }
            /// The gateway request path as the catalog writes it.
            pub fn gateway_path(self) -> &'static str {
                match self {
                    #(Dialect::#variants => #paths,)*
                }
            }
        }
        /// The name of the route of a provider the catalog does not list.
        pub const UNLISTED_PROVIDER: &str = #unlisted_name;
        /// Each reviewed provider's gateway routes, in the catalog's provider order.
        pub const GATEWAY_ROUTES: &[GatewayRoutes] = &[#(#providers),*];
        /// The gateway routes of a provider the catalog does not list.
        pub const UNLISTED_PROVIDER_ROUTES: &[Route] = &[#(#unlisted),*];
        /// The reachability matrix: one row per harness entry (in `HARNESSES` order), one
        /// cell per provider (in `GATEWAY_ROUTES` order); `None` where the entry declares no
        /// dialect.
        pub const REACHABILITY: &[Reachability] = &[#(#matrix),*];
    }
}
