//! Checks of strings and numbers: lengths in characters, `pattern` with ECMA-262's
//! meaning run by the `regex` crate (linear time; see `pattern`), and numeric bounds and `multipleOf` compared exactly.

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::{Map, Value};

use super::emitter::{count, number, Emitter};

impl Emitter<'_> {
    pub(super) fn scalar_checks(&mut self, object: &Map<String, Value>, pointer: &str) -> Vec<TokenStream> {
        let mut string = Vec::new();
        // Lengths count characters; a string of `b` UTF-8 bytes has between `b / 4` and `b`
        // of them, so the count is taken only when the byte length cannot decide.
        for key in ["minLength", "maxLength"] {
            let Some(n) = object.get(key) else { continue };
            let Some(n) = count(n) else {
                self.unsupported(&format!("{pointer}/{key}"), format!("`{key}` must be a non-negative integer"));
                continue;
            };
            string.push(if key == "minLength" {
                quote! { if s.len() < #n || (s.len() / 4 < #n && s.chars().count() < #n) { return Err(Invalid::new("too short")); } }
            } else {
                quote! { if s.len() > #n && (s.len() / 4 > #n || s.chars().count() > #n) { return Err(Invalid::new("too long")); } }
            });
        }
        if let Some(pattern) = object.get("pattern") {
            match pattern.as_str() {
                Some(source) => match super::pattern::compile(source) {
                    Ok(translated) => {
                        let compiled = self.static_item(quote! { crate::exact::Pattern }, &translated);
                        string.push(quote! {
                            match #compiled.is_match(s) {
                                Some(true) => {}
                                Some(false) => return Err(Invalid::new("does not match the pattern")),
                                None => return Err(Invalid::new("the pattern cannot be compiled here")),
                            }
                        });
                    }
                    Err(message) => self.unsupported(&format!("{pointer}/pattern"), message),
                },
                None => self.unsupported(&format!("{pointer}/pattern"), "`pattern` must be a string"),
            }
        }
        let mut numeric = Vec::new();
        let bounds = [
            ("minimum", quote! { Less }, "below the minimum"),
            ("maximum", quote! { Greater }, "above the maximum"),
            ("exclusiveMinimum", quote! { Less | ::std::cmp::Ordering::Equal }, "not above the exclusive minimum"),
            ("exclusiveMaximum", quote! { Greater | ::std::cmp::Ordering::Equal }, "not below the exclusive maximum"),
        ];
        for (key, rejected, message) in bounds {
            let Some(bound) = object.get(key) else { continue };
            let Some(bound) = bound.as_number() else {
                self.unsupported(&format!("{pointer}/{key}"), format!("`{key}` must be a number"));
                continue;
            };
            let bound = number(bound);
            numeric.push(quote! {
                if matches!(crate::exact::compare_number(n, #bound), ::std::cmp::Ordering::#rejected) {
                    return Err(Invalid::new(#message));
                }
            });
        }
        if let Some(divisor) = object.get("multipleOf") {
            let text = divisor.as_number().map(|d| d.to_string()).unwrap_or_default();
            match checkfu_wire_vocab::decimal::Decimal::parse(&text) {
                Some(d) if d.is_positive() && d.significant_digits() <= checkfu_wire_vocab::decimal::DIVISOR_DIGITS => {
                    numeric.push(quote! {
                        if !crate::exact::multiple_of(n, #text) { return Err(Invalid::new("not a multiple of the divisor")); }
                    });
                }
                Some(d) if d.is_positive() => self.unsupported(
                    &format!("{pointer}/multipleOf"),
                    format!(
                        "`multipleOf` has {} significant digits; the checks decide divisors of at most {}",
                        d.significant_digits(),
                        checkfu_wire_vocab::decimal::DIVISOR_DIGITS
                    ),
                ),
                _ => self.unsupported(&format!("{pointer}/multipleOf"), "`multipleOf` must be a number above 0"),
            }
        }
        let mut checks = Vec::new();
        if !string.is_empty() {
            checks.push(quote! { if let Some(s) = v.as_str() { #(#string)* } });
        }
        if !numeric.is_empty() {
            checks.push(quote! { if let Json::Number(n) = v { #(#numeric)* } });
        }
        checks
    }
}
