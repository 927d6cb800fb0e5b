//! One enum for each kind of thing the catalog names (a conformance check, a one-shot step, a
//! protocol, a revision identity, a driver, a retention mode, a wire method), so the runtime
//! matches variants, never strings: a catalog entry added to a kind is a variant that every
//! exhaustive `match` on that kind must handle before the runtime compiles again.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

/// The variant names of `names`, in order: each name's PascalCase (the generator's one, as
/// for `Dialect`), with the position appended to a name whose PascalCase an earlier one took
/// (`a-b` after `a_b`), so that the enum always compiles and keeps one variant per name.
pub(crate) fn variants(names: &[&str]) -> Vec<Ident> {
    let mut taken: Vec<String> = Vec::new();
    for (index, name) in names.iter().enumerate() {
        let mut variant = crate::schema::normalize::pascal(name);
        if variant.is_empty() {
            variant = String::from("Unnamed");
        }
        if taken.contains(&variant) {
            variant = format!("{variant}{index}");
        }
        taken.push(variant);
    }
    taken.iter().map(|v| Ident::new(v, Span::call_site())).collect()
}

/// The variant of `name` among `names` (the one [`variants`] gives it), as a path
/// (`Check::ReadyHandshake`); `None` when `names` does not hold it.
pub(crate) fn path(ident: &str, names: &[&str], name: &str) -> Option<TokenStream> {
    let at = names.iter().position(|n| *n == name)?;
    let variant = variants(names).swap_remove(at);
    let ident = Ident::new(ident, Span::call_site());
    Some(quote! { #ident::#variant })
}

/// `pub enum IDENT` with one variant per name, `ALL` in the catalog's order, `name()` (a
/// `const fn`, so a name can be a constant) and `from_name()`, and `Display` as the name.
/// `extra` goes into the `impl` block (a method that maps each variant to more data).
pub(crate) fn named_enum(ident: &str, doc: &str, names: &[&str], extra: TokenStream) -> TokenStream {
    let enum_ident = Ident::new(ident, Span::call_site());
    let variants = variants(names);
    let docs = names.iter().map(|n| format!(" `{n}`."));
    quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum #enum_ident {
            #(#[doc = #docs] #variants,)*
        }
        impl #enum_ident {
            /// Every variant, in the catalog's order.
            pub const ALL: &'static [#enum_ident] = &[#(#enum_ident::#variants),*];
            /// The name the catalog (and the wire) spells.
            pub const fn name(self) -> &'static str {
                match self {
                    #(#enum_ident::#variants => #names,)*
                }
            }
            /// The variant of a name; `None` for a name the catalog does not have.
            pub fn from_name(name: &str) -> Option<#enum_ident> {
                match name {
                    #(#names => Some(#enum_ident::#variants),)*
                    _ => None,
                }
            }
            #extra
        }
        impl core::fmt::Display for #enum_ident {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_whose_pascal_case_is_taken_gets_its_position() {
        let names: Vec<String> = variants(&["a_b", "a-b", "self", "1x"]).iter().map(|v| v.to_string()).collect();
        assert_eq!(names, ["AB", "AB1", "SelfDef", "N1x"]);
    }
}
