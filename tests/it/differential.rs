//! Differential test of the generated types and checks against the `jsonschema` crate.
//!
//! For every input schema and every one of its definitions (hoisted ones included),
//! instances are generated from the raw schema (valid ones, and mutations that each break
//! one constraint once). Each is decoded by the generated check + type and validated by
//! `jsonschema` against the raw, un-normalized schema; the two must agree on
//! accept/reject, and accepted instances must re-encode to equal JSON (integers exactly,
//! other numbers by value).

use crate::support;

use checkfu_wire::exact::Definition;
use checkfu_wire_typed::schemas;
use serde_json::Value;
use support::oracle::{cases, compare, Tally, Verdict};

fn raw(file: &str) -> Value {
    let path = crate::support::project::project_root().join("schemas").join(file);
    serde_json::from_slice(&std::fs::read(path).expect("schema file")).expect("schema JSON")
}

fn differential(file: &str, definitions: &[Definition], budget: usize) -> Tally {
    let document = raw(file);
    let named: Vec<(String, String)> = definitions.iter().map(|d| (d.name.to_string(), d.origin.to_string())).collect();
    let cases = cases(&document, &named, budget);
    let verdicts: Vec<Verdict> = cases
        .iter()
        .map(|case| {
            let def = definitions.iter().find(|d| d.name == case.def).expect("the case's definition");
            Verdict { checked: (def.check)(&case.instance).is_ok(), roundtrip: (def.roundtrip)(&case.instance).map_err(|e| e.to_string()) }
        })
        .collect();
    let (tally, disagreements) = compare(&cases, &verdicts);
    assert!(
        disagreements.is_empty(),
        "{} disagreement(s) in {file}:\n{}",
        disagreements.len(),
        disagreements.iter().take(12).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(tally.accepted > 0 && tally.rejected > 0, "{file}: the generator must produce both valid and invalid instances");
    eprintln!("{file}: {} definitions, {} accepted, {} rejected, all agreeing", definitions.len(), tally.accepted, tally.rejected);
    tally
}

#[test]
fn official_acp_schema_agrees_with_jsonschema() {
    let t = differential("acp-v1.schema.json", schemas::acp_v1::checks::DEFINITIONS, 400);
    assert!(schemas::acp_v1::checks::DEFINITIONS.len() >= 178, "every $defs entry of the ACP schema is a definition");
    assert!(t.accepted >= 1000, "{t:?}");
}

/// The official ACP v2 schema (SDK 2.4.0), compiled beside v1's.
#[test]
fn official_acp_v2_schema_agrees_with_jsonschema() {
    let t = differential("acp-v2.schema.json", schemas::acp_v2::checks::DEFINITIONS, 400);
    assert!(schemas::acp_v2::checks::DEFINITIONS.len() >= 197, "every $defs entry of the ACP v2 schema is a definition");
    assert!(t.accepted > 197 && t.rejected > 197, "{t:?}");
}

#[test]
fn vectors_schema_agrees_with_jsonschema() {
    let t = differential("acp-v1-extension-vectors.schema.json", schemas::acp_v1_extension_vectors::checks::DEFINITIONS, 4000);
    assert!(t.accepted >= 13, "at least one instance per vector kind");
}

#[test]
fn khy_os_schema_agrees_with_jsonschema() {
    differential("khy-os-acp-message.schema.json", schemas::khy_os_acp_message::checks::DEFINITIONS, 4000);
}

#[test]
fn goose_schema_agrees_with_jsonschema() {
    differential("goose-acp-extensions.schema.json", schemas::goose_acp_extensions::checks::DEFINITIONS, 4000);
}

#[test]
fn slot_payload_schema_agrees_with_jsonschema() {
    differential("checkfu-slots.schema.json", schemas::checkfu_slots::checks::DEFINITIONS, 4000);
}

#[test]
fn mcp_schema_agrees_with_jsonschema() {
    // Draft-07, read with draft-07's meaning (`definitions`, `$ref` hiding its siblings).
    let t = differential("mcp-2025-06-18.schema.json", schemas::mcp_2025_06_18::checks::DEFINITIONS, 400);
    assert!(schemas::mcp_2025_06_18::checks::DEFINITIONS.len() >= 100, "every definition of the MCP schema is one");
    assert!(t.accepted >= 500, "{t:?}");
}

#[test]
fn seventeen_digit_floats_keep_their_value_through_decode_and_encode() {
    // ACP `Cost.amount`: read from the text, checked, decoded, encoded; the number written
    // back is the text's (serde_json's default float reader turned it into `0.45`).
    let cost = schemas::acp_v1::checks::DEFINITIONS.iter().find(|d| d.name == "Cost").expect("ACP defines Cost");
    for text in ["0.44999999999999996", "0.09999999999999999", "9007199254740991.0", "1.7976931348623157e308", "4.9406564584124654e-324"] {
        let value: Value = serde_json::from_str(&format!(r#"{{"amount":{text},"currency":"USD"}}"#)).expect("JSON");
        let expected: f64 = text.parse().expect("float");
        assert_eq!(value["amount"].as_f64(), Some(expected), "{text} is read as the f64 nearest its text");
        (cost.check)(&value).expect("a valid Cost");
        let encoded = (cost.roundtrip)(&value).expect("round trip");
        let again: f64 = encoded["amount"].to_string().parse().expect("float");
        assert_eq!(again, expected, "{text} re-encodes as {}", encoded["amount"]);
    }
}
