//! Method tables come from the schemas: adding a method to a schema fixture is enough for
//! the generated decoder to dispatch it, with no code change.

mod common;

use common::Scratch;
use serde_json::{json, Value};

fn edit_json(s: &Scratch, file: &str, edit: impl FnOnce(&mut Value)) {
    let path = s.root().join("schemas").join(file);
    let mut value: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    edit(&mut value);
    std::fs::write(&path, serde_json::to_vec_pretty(&value).expect("json")).expect("write");
}

fn tables(s: &Scratch) -> (String, Vec<String>) {
    let generation = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render()));
    let tables = generation.outputs.iter().find(|o| o.path.ends_with("decoder_tables.rs")).expect("tables");
    (tables.contents.clone(), generation.warnings)
}

#[test]
fn a_new_goose_method_is_dispatched_with_its_typed_params() {
    let s = Scratch::new();
    let (before, _) = tables(&s);
    assert!(!before.contains("_goose/recipes/list"));
    edit_json(&s, "goose-acp-extensions.schema.json", |schema| {
        schema["$defs"]["ListRecipesRequest"] = json!({
            "type": "object",
            "properties": {"session_id": {"type": "string"}},
            "required": ["session_id"],
            "description": "List recipes.\nMethod: `_goose/recipes/list`",
            "x-side": "agent",
            "x-method": "recipes/list"
        });
    });
    let (after, warnings) = tables(&s);
    assert!(after.contains("\"_goose/recipes/list\" => Some(&METHODS["), "{after}");
    assert!(after.contains("decode_ListRecipesRequest"), "typed params decoder");
    assert!(!warnings.iter().any(|w| w.contains("ListRecipesRequest")), "its description agrees: no warning");
}

#[test]
fn a_description_naming_another_method_is_a_warning() {
    let s = Scratch::new();
    let (_, warnings) = tables(&s);
    let warning = warnings.iter().find(|w| w.contains("GetToolsRequest")).expect("warning for GetToolsRequest");
    assert!(warning.contains("`_agent/tools`") && warning.contains("`_goose/tools`"), "{warning}");
}

#[test]
fn a_new_khy_os_method_is_dispatched() {
    let s = Scratch::new();
    edit_json(&s, "khy-os-acp-message.schema.json", |schema| {
        schema["properties"]["method"]["enum"].as_array_mut().expect("enum").push(json!("memory.recall"));
        schema["$defs"]["MemoryRecallParams"] = json!({"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}}});
    });
    let (after, _) = tables(&s);
    assert!(after.contains("\"memory.recall\" => Some(&METHODS["), "{after}");
    assert!(after.contains("decode_MemoryRecallParams"));
}

/// The catalog's `[acp]` lists are the floor `acp-v1` promises, not the grammar: a new ACP
/// schema that drops a stop reason of the floor, or hands a floor method to the other side,
/// fails generation naming each, while the kinds it adds are simply taken.
#[test]
fn an_acp_schema_that_breaks_the_acp_v1_floor_fails_generation() {
    let s = Scratch::new();
    edit_json(&s, "acp-v1.schema.json", |schema| {
        let reasons = schema["$defs"]["StopReason"]["oneOf"].as_array_mut().expect("StopReason alternatives");
        reasons.retain(|r| r["const"] != "refusal");
        schema["$defs"]["SetSessionModeRequest"]["x-side"] = json!("client");
        schema["$defs"]["SetSessionModeResponse"]["x-side"] = json!("client");
    });
    let d = s.generate_err();
    let rendered = d.render();
    assert!(rendered.contains("the acp-v1 floor ([acp]) requires stop reason `refusal`, which the pinned schema does not name"), "{rendered}");
    assert!(rendered.contains("the acp-v1 floor ([acp]) has method `session/set_mode` with another side or kind"), "{rendered}");
    assert!(!rendered.contains("which is not an ACP method"), "no cascade onto the slots: {rendered}");
}
