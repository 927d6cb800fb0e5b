//! The bounded safety profile for configuration schemas.
//!
//! Authors hand the platform JSON Schemas (harness configuration, and the
//! Agent output schema in `checkfu.output_schema`). Before such a schema may
//! reach a Runner, this crate decides whether it stays inside a profile of
//! JSON Schema 2020-12 that every consumer can handle in bounded work: a
//! small document, bounded nesting, schema count and combinator count,
//! references local to the document and free of cycles and blow-up,
//! `pattern`s in a linear-work subset, and no `uniqueItems: true`.
//!
//! The linter itself does bounded work on any input. The size bound is
//! checked before parsing; the extent pass walks with an explicit stack; the
//! schema walk recurses only to [`limits::MAX_DEPTH`]; references are counted
//! by dynamic programming, never inlined; patterns are parsed, never
//! compiled. Every violation is reported, each with a JSON Pointer.
//!
//! Layout, one module per concept: [`limits`] (the bounds), `node` (the
//! read-only JSON tree the linter reads, [`Node`], implemented here for
//! `serde_json::Value`), `extent` (size and depth of a parsed value),
//! `walker` (schema positions and per-keyword rules), `pattern` (the regex
//! subset), `refs` (the reference graph), `pointer` (RFC 6901), [`report`]
//! (rules, violations, verdicts) and `cli` (`checkfu-wire lint-schema`).

// `unsafe` lives in `checkfu-wire-sandbox` alone (tests/it/layers.rs holds this).
#![forbid(unsafe_code)]

pub mod limits;
pub mod report;

#[cfg(feature = "cli")]
mod cli;
mod extent;
mod node;
mod pattern;
mod pointer;
mod refs;
mod walker;

use serde_json::Value;

#[cfg(feature = "cli")]
pub use cli::run_cli;
pub use extent::raw_depth;
pub use node::{MapMembers, Node, Object, View};
pub use report::{Rule, Verdict, Violation};

use crate::limits::{MAX_DEPTH, MAX_DOCUMENT_BYTES};
use crate::report::Findings;

/// serde_json refuses input whose containers nest this deep while parsing (its
/// recursion limit; the runtime decoder holds wire messages to it too).
pub const SERDE_RECURSION_LIMIT: usize = 128;

/// How serde_json's message for that limit begins (the error has no code of its own).
pub const RECURSION_LIMIT_MESSAGE: &str = "recursion limit exceeded";

/// Lints a schema document given as raw bytes (a file, a request body).
///
/// Oversized input is refused before it is parsed, so the cost of a hostile
/// file is bounded by [`MAX_DOCUMENT_BYTES`]; non-UTF-8, malformed JSON and
/// nesting beyond serde_json's recursion limit are violations, not errors.
pub fn lint_bytes(input: &[u8]) -> Verdict {
    let mut findings = Findings::default();
    if input.len() > MAX_DOCUMENT_BYTES {
        return too_large(Some(input.len() as u64));
    }
    let text = match std::str::from_utf8(input) {
        Ok(text) => text,
        Err(error) => {
            findings.push(
                Rule::NotUtf8,
                String::new(),
                format!("the document is not UTF-8 (first bad byte at offset {})", error.valid_up_to()),
            );
            return findings.into_verdict();
        }
    };
    match serde_json::from_str::<Value>(text) {
        Ok(doc) => lint_value(&doc),
        Err(error) => {
            let message = error.to_string();
            if message.starts_with(RECURSION_LIMIT_MESSAGE) || extent::raw_depth(input) >= SERDE_RECURSION_LIMIT {
                findings.push(
                    Rule::TooDeep,
                    String::new(),
                    format!("values nest deeper than {SERDE_RECURSION_LIMIT} levels, far beyond the bound of {MAX_DEPTH}"),
                );
            } else {
                findings.push(Rule::InvalidJson, String::new(), format!("the document is not JSON: {message}"));
            }
            findings.into_verdict()
        }
    }
}

/// The verdict on a document over [`MAX_DOCUMENT_BYTES`], stating its real size when
/// known (a caller that read only the first bytes past the bound knows it from elsewhere,
/// such as the file's length).
pub(crate) fn too_large(size: Option<u64>) -> Verdict {
    let mut findings = Findings::default();
    let message = match size {
        Some(size) => format!("the document is {size} bytes, more than {MAX_DOCUMENT_BYTES}"),
        None => format!("the document is more than {MAX_DOCUMENT_BYTES} bytes"),
    };
    findings.push(Rule::DocumentTooLarge, String::new(), message);
    findings.into_verdict()
}

/// Lints a schema that is already parsed into a `serde_json::Value`; the
/// same as [`lint`].
pub fn lint_value(doc: &Value) -> Verdict {
    lint(doc)
}

/// Lints a schema that is already parsed, in any tree that implements
/// [`Node`], such as `checkfu.output_schema` inside a `session/new` request
/// as the runtime decoder holds it.
///
/// The value is measured first with a budget of [`MAX_DOCUMENT_BYTES`] of
/// compact JSON, so a huge or deeply nested value costs no more than a
/// 32 KiB one; an oversized value is reported with that one violation.
pub fn lint<N: Node>(doc: &N) -> Verdict {
    let mut findings = Findings::default();
    if extent::measure(doc, &mut findings) == extent::Extent::Oversize {
        return findings.into_verdict();
    }
    let schemas = walker::walk(doc, &mut findings);
    refs::check(doc, &schemas, &mut findings);
    findings.into_verdict()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn booleans_and_empty_object_pass() {
        for text in ["true", "false", "{}", " { } "] {
            assert!(lint_bytes(text.as_bytes()).accepted, "{text}");
        }
    }

    #[test]
    fn document_level_rules() {
        let cases: Vec<(Vec<u8>, Rule)> = vec![
            (vec![b' '; MAX_DOCUMENT_BYTES + 1], Rule::DocumentTooLarge),
            (vec![b'"', 0xff, b'"'], Rule::NotUtf8),
            (b"{\"type\": }".to_vec(), Rule::InvalidJson),
            (b"".to_vec(), Rule::InvalidJson),
            (b"{} {}".to_vec(), Rule::InvalidJson),
            (b"[]".to_vec(), Rule::NotASchema),
            (b"\"string\"".to_vec(), Rule::NotASchema),
            (b"null".to_vec(), Rule::NotASchema),
            ([&[b'['; 200][..], &[b']'; 200][..]].concat(), Rule::TooDeep),
            ([&[b'['; 200][..], &[b']'; 10][..]].concat(), Rule::TooDeep),
        ];
        for (input, rule) in cases {
            let verdict = lint_bytes(&input);
            assert_eq!(verdict.rules(), vec![rule], "{:?}", String::from_utf8_lossy(&input));
            assert!(!verdict.accepted);
        }
    }

    #[test]
    fn depth_between_bound_and_parser_limit_points_at_the_node() {
        let text = format!("{}{}", "[".repeat(40), "]".repeat(40));
        let verdict = lint_bytes(text.as_bytes());
        // The root is an array, so it is also not a schema.
        assert_eq!(verdict.rules(), vec![Rule::NotASchema, Rule::TooDeep]);
        let deep = verdict.violations.iter().find(|v| v.rule == Rule::TooDeep).expect("too-deep");
        assert_eq!(deep.pointer, "/0".repeat(MAX_DEPTH));
    }

    /// `{"not": {"not": … {}}}`, built by moving values (the `json!` macro
    /// would re-serialize the inner value recursively at every level).
    fn nest_under_not(levels: usize) -> Value {
        let mut doc = json!({});
        for _ in 0..levels {
            let mut map = serde_json::Map::new();
            map.insert("not".to_owned(), doc);
            doc = Value::Object(map);
        }
        doc
    }

    #[test]
    fn lint_value_survives_extreme_nesting() {
        let doc = nest_under_not(100_000);
        let verdict = lint_value(&doc);
        assert_eq!(verdict.rules(), vec![Rule::DocumentTooLarge]);
        // serde_json drops values recursively; leak this one rather than
        // overflow the test thread's stack on the way out.
        std::mem::forget(doc);
    }

    #[test]
    fn lint_value_reports_depth_under_the_size_bound() {
        let doc = nest_under_not(1000);
        let verdict = lint_value(&doc);
        assert!(verdict.rules().contains(&Rule::TooDeep));
        std::mem::forget(doc);
    }

    #[test]
    fn every_violation_is_reported() {
        let doc = json!({
            "properties": {
                "a": {"type": "array", "uniqueItems": true},
                "b": {"type": "string", "pattern": "^(a+)+$"},
                "c": {"$ref": "https://example.com/c.json"},
                "d": {"$dynamicRef": "#meta"}
            },
            "uniqueItems": true
        });
        let verdict = lint_value(&doc);
        let found: Vec<(&str, &str)> = verdict.violations.iter().map(|v| (v.rule.id(), v.pointer.as_str())).collect();
        assert_eq!(
            found,
            vec![
                ("unique-items", "/properties/a/uniqueItems"),
                ("pattern-group", "/properties/b/pattern"),
                ("pattern-unbounded-repetition", "/properties/b/pattern"),
                ("dynamic-ref", "/properties/d/$dynamicRef"),
                ("unique-items", "/uniqueItems"),
                ("remote-ref", "/properties/c/$ref"),
            ]
        );
    }
}
