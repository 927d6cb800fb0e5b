//! Golden vectors and messages: every valid one validates under `jsonschema` and
//! round-trips through the generated decoder; every invalid or mutated one is rejected by
//! both.

use crate::support;

use std::path::{Path, PathBuf};

use checkfu_wire::exact::Definition;
use checkfu_wire_typed::schemas;
use serde_json::{json, Value};
use support::instances::same;

fn root() -> PathBuf {
    crate::support::project::project_root()
}

fn load(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON")
}

fn root_definition(definitions: &'static [Definition]) -> &'static Definition {
    definitions.iter().find(|d| d.origin.is_empty()).expect("the root definition")
}

/// Asserts both sides accept and the value round-trips, or both reject.
fn agree(schema: &Value, def: &Definition, instance: &Value, valid: bool, what: &str) {
    let oracle = jsonschema::validator_for(schema).expect("schema compiles");
    assert_eq!(oracle.is_valid(instance), valid, "jsonschema on {what}");
    match (def.roundtrip)(instance) {
        Ok(encoded) => {
            assert!(valid, "generated decoder accepted invalid {what}");
            assert!(same(&encoded, instance), "{what} re-encodes as {encoded}");
        }
        Err(e) => assert!(!valid, "generated decoder rejected valid {what}: {e}"),
    }
}

#[test]
fn golden_vectors_validate_and_round_trip() {
    let schema = load(&root().join("schemas/acp-v1-extension-vectors.schema.json"));
    let golden = load(&root().join("golden/acp-v1-extension-vectors.json"));
    let def = root_definition(schemas::acp_v1_extension_vectors::checks::DEFINITIONS);
    agree(&schema, def, &golden, true, "the golden vectors document");
    // Every vector kind the schema names is present.
    let kinds: Vec<&str> = schema["properties"]["vectors"]["items"]["anyOf"]
        .as_array()
        .expect("vector kinds")
        .iter()
        .filter_map(|k| k["properties"]["name"]["enum"][0].as_str())
        .collect();
    let names: Vec<&str> = golden["vectors"].as_array().expect("vectors").iter().filter_map(|v| v["name"].as_str()).collect();
    for kind in &kinds {
        assert!(names.contains(kind), "no golden vector of kind {kind}");
    }
    assert!(kinds.len() >= 12);
}

/// Mutations each vector's schema forbids outright: a closed object gains a member, a
/// required member goes, a discriminator or constant changes.
fn mutations(vector: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut m = vector.clone();
    m["name"] = json!("initialize.unknown-kind");
    out.push(("unknown name".into(), m));
    let mut m = vector.clone();
    let flipped = if vector["direction"] == "agent_to_runner" { "runner_to_agent" } else { "agent_to_runner" };
    m["direction"] = json!(flipped);
    out.push(("flipped direction".into(), m));
    let mut m = vector.clone();
    m["wire"]["smuggled"] = json!(true);
    out.push(("extra wire member".into(), m));
    let mut m = vector.clone();
    m["wire"]["jsonrpc"] = json!("1.0");
    out.push(("jsonrpc 1.0".into(), m));
    let mut m = vector.clone();
    if let Some(o) = m["wire"].as_object_mut() {
        o.remove("jsonrpc");
    }
    out.push(("missing jsonrpc".into(), m));
    let mut m = vector.clone();
    if let Some(o) = m.as_object_mut() {
        o.remove("wire");
    }
    out.push(("missing wire".into(), m));
    out
}

#[test]
fn every_mutated_golden_vector_is_rejected_by_both() {
    let schema = load(&root().join("schemas/acp-v1-extension-vectors.schema.json"));
    let golden = load(&root().join("golden/acp-v1-extension-vectors.json"));
    let def = root_definition(schemas::acp_v1_extension_vectors::checks::DEFINITIONS);
    let mut count = 0;
    for (i, vector) in golden["vectors"].as_array().expect("vectors").iter().enumerate() {
        for (what, mutated) in mutations(vector) {
            let mut document = golden.clone();
            document["vectors"][i] = mutated;
            agree(&schema, def, &document, false, &format!("vector {} with {what}", vector["name"]));
            count += 1;
        }
    }
    assert_eq!(count, 13 * 6);
}

fn messages(dir: &str, schema_file: &str, definitions: &'static [Definition]) {
    let schema = load(&root().join("schemas").join(schema_file));
    let def = root_definition(definitions);
    for (sub, valid) in [("valid", true), ("invalid", false)] {
        let dir = root().join("golden").join(dir).join(sub);
        let mut files: Vec<_> = std::fs::read_dir(&dir).expect("golden dir").flatten().map(|e| e.path()).collect();
        files.sort();
        assert!(files.len() >= 3, "a handful of {sub} messages under {}", dir.display());
        for file in files {
            agree(&schema, def, &load(&file), valid, &file.display().to_string());
        }
    }
}

#[test]
fn khy_os_golden_messages() {
    messages("khy-os", "khy-os-acp-message.schema.json", schemas::khy_os_acp_message::checks::DEFINITIONS);
}

#[test]
fn goose_golden_messages() {
    messages("goose", "goose-acp-extensions.schema.json", schemas::goose_acp_extensions::checks::DEFINITIONS);
}

/// The generated golden-vector table: every vector's wire decodes through the decoder its
/// name selects, flows the direction the table says, and the runtime decoder accepts it.
#[test]
fn golden_vector_table_dispatches_every_vector() {
    use checkfu_wire::decode::{Decoder, WireDirection};
    use checkfu_wire_typed::tables::VECTORS;
    let golden = load(&root().join("golden/acp-v1-extension-vectors.json"));
    let vectors = golden["vectors"].as_array().expect("vectors");
    assert_eq!(VECTORS.len(), vectors.len());
    for vector in vectors {
        let name = vector["name"].as_str().expect("name");
        let entry = VECTORS.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no table row for {name}"));
        assert_eq!(vector["direction"], entry.direction, "{name}");
        (entry.decode)(&vector["wire"]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut broken = vector["wire"].clone();
        broken["smuggled"] = json!(1);
        assert!((entry.decode)(&broken).is_err(), "{name} accepted an extra member");
        let direction = match entry.direction {
            "agent_to_runner" => WireDirection::AgentToRunner,
            _ => WireDirection::RunnerToAgent,
        };
        let report = Decoder::new().decode(vector["wire"].to_string().as_bytes(), Some(direction));
        assert!(report.accepted, "{name}: {report:?}");
    }
}
