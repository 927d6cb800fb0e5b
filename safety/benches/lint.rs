//! How long the linter takes on a hostile 32 KiB document, next to the cost
//! of merely parsing the same bytes with serde_json, in the same run.
//!
//! Two documents, both just under the size bound:
//! - `accepted`: in the profile but as expensive as the profile allows:
//!   nesting to the depth bound, a reference DAG whose expansion sits just
//!   under the bound, hundreds of `$ref`s, and long patterns of many pieces.
//! - `rejected`: every kind of trouble at once: reference bombs and cycles,
//!   remote references, nested quantifiers and ambiguous patterns.
//!
//! Run with `cargo bench -p checkfu-wire-safety --bench lint`.

use checkfu_wire_safety::{limits, lint_bytes, lint_value};
use serde_json::{json, Map, Value};

fn main() {
    divan::main();
}

/// A chain of `properties` nested right up to the depth bound.
fn deep_chain(levels: usize) -> Value {
    let mut schema = json!({"type": "string", "pattern": "^[a-z]{1,8}$"});
    for level in 0..levels {
        schema = json!({"type": "object", "properties": {format!("n{level}"): schema}});
    }
    schema
}

/// Adds `make(i)` fields under `properties` until the document nearly fills
/// the size bound, tracking the serialized size incrementally.
fn fill(mut doc: Value, make: impl Fn(usize) -> Value) -> Vec<u8> {
    let mut size = serde_json::to_vec(&doc).expect("serializes").len();
    let mut i = 0;
    loop {
        let key = format!("f{i}");
        let field = make(i);
        // `"key":` plus the value plus a separating comma.
        let grows = key.len() + 3 + serde_json::to_vec(&field).expect("serializes").len() + 1;
        if size + grows > limits::MAX_DOCUMENT_BYTES {
            let bytes = serde_json::to_vec(&doc).expect("serializes");
            assert!(bytes.len() <= limits::MAX_DOCUMENT_BYTES);
            assert!(bytes.len() > limits::MAX_DOCUMENT_BYTES - 200);
            return bytes;
        }
        doc["properties"][key] = field;
        size += grows;
        i += 1;
    }
}

fn accepted_doc() -> Vec<u8> {
    let mut defs = Map::new();
    defs.insert("d0".into(), json!({"type": "string", "pattern": "^\\w\\d\\s[a-z]\\.\\-[^x]$"}));
    // d_k = 4 * 2^k - 3 schemas when inlined: d8 = 1021. With the many small
    // references below the whole document expands to several thousand
    // schemas, under the bound of 8192.
    for k in 1..=8 {
        let previous = format!("#/$defs/d{}", k - 1);
        defs.insert(format!("d{k}"), json!({"allOf": [{"$ref": previous}, {"$ref": previous}]}));
    }
    // Root, `properties`, `deep`, then two levels per nested schema: the
    // innermost schema's keywords sit one level short of the bound.
    let depth = limits::MAX_DEPTH / 2 - 2;
    let doc = json!({"$defs": defs, "properties": {"deep": deep_chain(depth)}});
    // Distinct patterns of many pieces (every carry check runs) until the
    // pattern budget is nearly spent, then references, nullable unions that
    // reuse those patterns (cache hits) and plain fields.
    let piece = "[a-m]{1,2}[n-z]{1,2}".repeat(4);
    let distinct = limits::MAX_PATTERN_TEXT_BYTES / (piece.len() + 8);
    let pattern = move |i: usize| format!("^{i:04}-{piece}$");
    fill(doc, |i| {
        if i < distinct {
            return json!({"type": "string", "pattern": pattern(i)});
        }
        match i % 8 {
            0 | 3 | 6 => json!({"$ref": format!("#/$defs/d{}", i % 4)}),
            1 => {
                json!({"anyOf": [{"type": "string", "pattern": pattern(i % distinct)}, {"type": "null"}]})
            }
            2 | 5 => json!({"type": "string", "pattern": pattern(i % distinct)}),
            _ => {
                json!({"type": "integer", "minimum": 0, "maximum": i, "description": "a field that pads the document"})
            }
        }
    })
}

fn rejected_doc() -> Vec<u8> {
    let mut defs = Map::new();
    defs.insert("b0".into(), json!({"type": "string"}));
    for k in 1..=40 {
        let previous = format!("#/$defs/b{}", k - 1);
        defs.insert(format!("b{k}"), json!({"anyOf": [{"$ref": previous}, {"$ref": previous}]}));
    }
    for k in 0..30 {
        defs.insert(format!("c{k}"), json!({"$ref": format!("#/$defs/c{}", (k + 1) % 30)}));
    }
    let doc = json!({"$defs": defs, "properties": {"deep": deep_chain(limits::MAX_DEPTH)}});
    fill(doc, |i| match i % 4 {
        0 => json!({"pattern": "^(a+)+b*?\\1(?=x)[[:alpha:]]{2,}$"}),
        1 => json!({"pattern": "\\d{1,9}\\d{1,9}.{0,99}x.{0,99}"}),
        2 => json!({"$ref": "https://example.com/remote.json#/x", "uniqueItems": true}),
        _ => json!({"$ref": "#/$defs/b40"}),
    })
}

#[divan::bench(args = ["accepted", "rejected"])]
fn serde_json_parse_only(bencher: divan::Bencher, which: &str) {
    let bytes = if which == "accepted" { accepted_doc() } else { rejected_doc() };
    bencher.bench(|| serde_json::from_slice::<Value>(divan::black_box(&bytes)).is_ok());
}

#[divan::bench(args = ["accepted", "rejected"])]
fn lint_bytes_parse_and_lint(bencher: divan::Bencher, which: &str) {
    let bytes = if which == "accepted" { accepted_doc() } else { rejected_doc() };
    let verdict = lint_bytes(&bytes);
    assert_eq!(verdict.accepted, which == "accepted", "{:?}", verdict.violations.first());
    bencher.bench(|| lint_bytes(divan::black_box(&bytes)).accepted);
}

#[divan::bench(args = ["accepted", "rejected"])]
fn lint_value_already_parsed(bencher: divan::Bencher, which: &str) {
    let bytes = if which == "accepted" { accepted_doc() } else { rejected_doc() };
    let doc: Value = serde_json::from_slice(&bytes).expect("valid JSON");
    bencher.bench(|| lint_value(divan::black_box(&doc)).accepted);
}
