//! Differential test of the generated types and checks against the `jsonschema` crate.
//!
//! For every input schema, instances are generated from the raw schema (valid ones, and
//! mutations that each break one constraint once). Each is decoded by the generated
//! check + typify type and validated by `jsonschema` against the raw, un-normalized
//! schema; the two must agree on accept/reject, and accepted instances must re-encode to
//! equal JSON (numbers compared by value).

mod support;

use checkfu_wire::exact::Definition;
use checkfu_wire::schemas;
use serde_json::{json, Value};
use support::instances::{same, Generator};

fn raw(file: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas").join(file);
    serde_json::from_slice(&std::fs::read(path).expect("schema file")).expect("schema JSON")
}

/// The raw schema a definition came from, as a document `jsonschema` can compile: the
/// root itself, or a wrapper that refers to an original `$defs` entry.
fn oracle_schema(document: &Value, def: &Definition) -> Option<Value> {
    if def.origin.is_empty() {
        return Some(document.clone());
    }
    let name = def.origin.strip_prefix("/$defs/")?;
    if name.contains('/') {
        return None; // hoisted from inside another schema: covered through its parent
    }
    let mut wrapper = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": format!("#{}", def.origin)});
    wrapper["$defs"] = document.get("$defs").cloned().unwrap_or(json!({}));
    Some(wrapper)
}

struct Tally {
    accepted: usize,
    rejected: usize,
}

fn differential(file: &str, definitions: &[Definition]) -> Tally {
    let document = raw(file);
    let generator = Generator { document: &document };
    let mut tally = Tally { accepted: 0, rejected: 0 };
    let mut disagreements = Vec::new();
    for def in definitions {
        let Some(schema) = oracle_schema(&document, def) else { continue };
        let oracle = jsonschema::validator_for(&schema).expect("jsonschema compiles the raw schema");
        let target = if def.origin.is_empty() { document.clone() } else { json!({"$ref": format!("#{}", def.origin)}) };
        let mut instances = generator.valid(&target, 0);
        let mut mutated = Vec::new();
        for instance in &instances {
            generator.mutations(&target, instance, 0, &mut mutated, 4000);
        }
        instances.extend(mutated);
        for instance in &instances {
            let expected = oracle.is_valid(instance);
            let ours = (def.check)(instance);
            let decoded = (def.roundtrip)(instance);
            match (expected, &ours, &decoded) {
                (true, Ok(()), Ok(encoded)) => {
                    tally.accepted += 1;
                    if !same(encoded, instance) {
                        disagreements.push(format!("{} re-encodes differently:\n  in:  {instance}\n  out: {encoded}", def.name));
                    }
                }
                (false, Err(_), Err(_)) => tally.rejected += 1,
                _ => disagreements.push(format!(
                    "{}: jsonschema says {}, check says {:?}, decode says {:?}\n  instance: {instance}",
                    def.name,
                    if expected { "valid" } else { "invalid" },
                    ours.as_ref().map_err(|e| e.to_string()),
                    decoded.as_ref().map(|_| "ok").map_err(|e| e.to_string()),
                )),
            }
        }
    }
    assert!(disagreements.is_empty(), "{} disagreement(s) in {file}:\n{}", disagreements.len(), disagreements.iter().take(12).cloned().collect::<Vec<_>>().join("\n"));
    assert!(tally.accepted > 0 && tally.rejected > 0, "{file}: the generator must produce both valid and invalid instances");
    eprintln!("{file}: {} accepted, {} rejected, all agreeing", tally.accepted, tally.rejected);
    tally
}

#[test]
fn vectors_schema_agrees_with_jsonschema() {
    let t = differential("acp-v1-extension-vectors.schema.json", schemas::acp_v1_extension_vectors::checks::DEFINITIONS);
    assert!(t.accepted >= 13, "at least one instance per vector kind");
}

#[test]
fn khy_os_schema_agrees_with_jsonschema() {
    differential("khy-os-acp-message.schema.json", schemas::khy_os_acp_message::checks::DEFINITIONS);
}

#[test]
fn goose_schema_agrees_with_jsonschema() {
    differential("goose-acp-extensions.schema.json", schemas::goose_acp_extensions::checks::DEFINITIONS);
}

#[test]
fn slot_payload_schema_agrees_with_jsonschema() {
    differential("checkfu-slots.schema.json", schemas::checkfu_slots::checks::DEFINITIONS);
}
