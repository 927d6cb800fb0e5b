//! Property tests: the linter never panics, whatever it is given, and its
//! verdicts are internally consistent.
//!
//! Values are generated from a vocabulary biased towards the keywords and
//! strings the linter looks at (`$ref`s of every kind, patterns, combinators)
//! so that the interesting paths are reached, not just random maps.

use checkfu_wire_safety::{limits::MAX_DOCUMENT_BYTES, lint_bytes, lint_value, Verdict};
use proptest::prelude::*;
use serde_json::{Map, Value};

const KEYS: &[&str] = &[
    "$ref",
    "$defs",
    "definitions",
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "properties",
    "patternProperties",
    "additionalProperties",
    "items",
    "prefixItems",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependencies",
    "pattern",
    "uniqueItems",
    "enum",
    "const",
    "type",
    "a",
    "a/b",
    "m~n",
    "0",
];

const STRINGS: &[&str] = &[
    "#",
    "",
    "#/",
    "#/$defs/a",
    "#/$defs/a/b",
    "#/definitions/a",
    "#/properties/a",
    "#/$defs",
    "#/allOf/0",
    "#/allOf/01",
    "#/a~1b",
    "#/m~0n",
    "#/%24defs/a",
    "#/%zz",
    "#/~2",
    "#anchor",
    "https://example.com/x.json",
    "x.json#/a",
    "urn:x",
    "//host/x",
    "^a*$",
    "(a+)+",
    "^[a-z]{1,3}$",
    "\\d{1,4}\\d{1,4}",
    "[",
    "a{2}{3}",
    "(?=a)",
    "\\1",
    "a{1,3}?",
    "\\Aa\\z",
    "\\pL",
    "[[:alpha:]]",
    ".{0,9}x.{0,9}",
    "a{99999}",
    "\u{10FFFF}{1,2}\u{10FFFF}?",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(STRINGS).prop_map(|s| Value::String(s.to_owned())),
        ".{0,12}".prop_map(Value::String),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(KEYS).prop_map(str::to_owned),
        1 => ".{0,6}",
        1 => prop::sample::select(STRINGS).prop_map(str::to_owned),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(8, 256, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6).prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// What must hold of every verdict on a parsed document.
fn check_consistent(doc: &Value, verdict: &Verdict) {
    assert_eq!(verdict.accepted, verdict.violations.is_empty());
    for violation in &verdict.violations {
        assert!(doc.pointer(&violation.pointer).is_some(), "pointer {:?} ({}) does not resolve", violation.pointer, violation.rule);
        assert!(!violation.message.is_empty());
        assert!(!violation.message.contains('\n'));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn values_never_panic(doc in value()) {
        let verdict = lint_value(&doc);
        check_consistent(&doc, &verdict);
        let bytes = serde_json::to_vec(&doc).expect("a Value serializes");
        if bytes.len() <= MAX_DOCUMENT_BYTES {
            prop_assert_eq!(lint_bytes(&bytes), verdict);
        }
    }

    #[test]
    fn schema_shaped_values_never_panic(
        defs in prop::collection::vec((key(), value()), 0..6),
        body in prop::collection::vec((key(), value()), 0..6),
    ) {
        let mut root: Map<String, Value> = body.into_iter().collect();
        root.insert("$defs".into(), Value::Object(defs.into_iter().collect()));
        let doc = Value::Object(root);
        check_consistent(&doc, &lint_value(&doc));
    }

    #[test]
    fn bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let verdict = lint_bytes(&bytes);
        prop_assert_eq!(verdict.accepted, verdict.violations.is_empty());
    }

    #[test]
    fn mutated_json_never_panics(doc in value(), cut in any::<prop::sample::Index>(), junk in any::<u8>()) {
        let mut bytes = serde_json::to_vec(&doc).expect("a Value serializes");
        if !bytes.is_empty() {
            let at = cut.index(bytes.len());
            bytes[at] = junk;
        }
        let verdict = lint_bytes(&bytes);
        prop_assert_eq!(verdict.accepted, verdict.violations.is_empty());
    }
}
