//! Method tables come from the schemas: adding a method to a schema fixture is enough for
//! the generated decoder to dispatch it, with no code change.

use crate::common;

use common::Scratch;
use serde_json::{json, Value};

fn edit_json(s: &Scratch, file: &str, edit: impl FnOnce(&mut Value)) {
    edit_json_only(s, file, edit);
    // An upstream schema is replaced together with its provenance record, as a maintainer
    // updating it would.
    let record = s.root().join("schemas").join(file.replace(".schema.json", ".provenance.toml"));
    if let Ok(text) = std::fs::read_to_string(&record) {
        let bytes = std::fs::read(s.root().join("schemas").join(file)).expect("read");
        let sha = checkfu_wire_codegen::catalog::sha256_hex(&bytes);
        let updated: String =
            text.lines().map(|l| if l.starts_with("sha256 = ") { format!("sha256 = \"{sha}\"\n") } else { format!("{l}\n") }).collect();
        std::fs::write(&record, updated).expect("write record");
    }
}

fn edit_json_only(s: &Scratch, file: &str, edit: impl FnOnce(&mut Value)) {
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
    // The runtime's row checks the params with their definition's check (the typed decoder
    // is checkfu-wire-typed's).
    assert!(after.contains("check_ListRecipesRequest"), "params check");
    assert!(!warnings.iter().any(|w| w.contains("ListRecipesRequest")), "its description agrees: no warning");
}

#[test]
fn a_description_naming_another_method_is_a_warning() {
    let s = Scratch::new();
    // Reviewed in catalog/acknowledged.toml: given, and kept out of the printed warnings.
    let generation = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render()));
    assert!(!generation.warnings.iter().any(|w| w.contains("GetToolsRequest")));
    let reviewed = generation.acknowledged.iter().find(|a| a.warning.contains("GetToolsRequest")).expect("acknowledged");
    assert!(reviewed.warning.contains("`_agent/tools`") && reviewed.warning.contains("`_goose/tools`"), "{}", reviewed.warning);
    // Without the review it is printed.
    std::fs::remove_file(s.root().join(checkfu_wire_codegen::acknowledged::ACKNOWLEDGED_FILE)).expect("remove");
    let (_, warnings) = tables(&s);
    let warning = warnings.iter().find(|w| w.contains("GetToolsRequest")).expect("warning for GetToolsRequest");
    assert_eq!(warning, &reviewed.warning);
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
    assert!(after.contains("check_MemoryRecallParams"));
}

fn edit_lock(s: &Scratch, edit: impl FnOnce(&mut Value)) {
    let path = s.root().join("generated/revisions.lock.json");
    let mut value: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    edit(&mut value);
    std::fs::write(&path, serde_json::to_vec_pretty(&value).expect("json")).expect("write");
}

fn lock_output(s: &Scratch) -> Value {
    let generation = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render()));
    let lock = generation.outputs.iter().find(|o| o.path.ends_with("revisions.lock.json")).expect("lock");
    serde_json::from_str(&lock.contents).expect("lock is JSON")
}

/// Drops the stop reason `refusal` and hands `session/set_mode` to the client.
fn narrow_the_acp_schema(s: &Scratch) {
    edit_json(s, "acp-v1.schema.json", |schema| {
        let reasons = schema["$defs"]["StopReason"]["oneOf"].as_array_mut().expect("StopReason alternatives");
        reasons.retain(|r| r["const"] != "refusal");
        schema["$defs"]["SetSessionModeRequest"]["x-side"] = json!("client");
        schema["$defs"]["SetSessionModeResponse"]["x-side"] = json!("client");
    });
}

/// What `acp-v1` promises (its floor, recorded in the lock) is not the grammar: a new ACP
/// schema that drops a stop reason of the floor, or hands a floor method to the other side,
/// fails generation naming each, even with `acp_schema` bumped.
#[test]
fn an_acp_schema_that_breaks_the_acp_v1_floor_fails_generation() {
    let s = Scratch::new();
    narrow_the_acp_schema(&s);
    s.edit_nth("acp:schema-v1@1", "acp:schema-v1@2", 0);
    let d = s.generate_err();
    let rendered = d.render();
    assert!(
        rendered.contains("`acp-v1` promises stop reason `refusal` (its floor, recorded in the revisions lock), which the pinned schema `acp-v1.schema.json` does not keep"),
        "{rendered}"
    );
    assert!(rendered.contains("`acp-v1` promises method `session/set_mode` as a request handled by the agent"), "{rendered}");
    assert!(rendered.contains("bump revisions.protocol"), "{rendered}");
    assert!(!rendered.contains("which is not an ACP method"), "no cascade onto the slots: {rendered}");
}

/// A new protocol literal records the grammar of the schema pinned with it as its floor.
#[test]
fn a_new_protocol_literal_records_a_new_floor() {
    let s = Scratch::new();
    narrow_the_acp_schema(&s);
    s.edit_nth("acp:schema-v1@1", "acp:schema-v1@2", 0);
    // Every use of the protocol literal (revisions, driver, harness rows) moves with it, and
    // the driver that speaks it is a new driver.
    let renamed = s.catalog().replace("\"acp-v1\"", "\"acp-v1@2\"").replace("\"checkfu:acp-v1@1\"", "\"checkfu:acp-v1@2\"");
    std::fs::write(s.root().join("catalog/catalog.toml"), renamed).expect("write catalog");
    let lock = lock_output(&s);
    let floor = &lock["acp_floor"];
    assert_eq!(floor["literal"], "acp-v1@2");
    let reasons = floor["grammar"]["stop_reasons"].as_array().expect("stop reasons");
    assert!(!reasons.contains(&json!("refusal")) && reasons.contains(&json!("end_turn")), "{floor}");
    // The schema's whole grammar, including the kinds SDK 2.4.0 added after the first pin.
    let kinds = floor["grammar"]["session_update_kinds"].as_array().expect("kinds");
    assert!(kinds.contains(&json!("compaction_update")), "{floor}");
    let set_mode = floor["grammar"]["methods"].as_array().expect("methods").iter().find(|m| m["name"] == "session/set_mode").cloned();
    assert_eq!(set_mode, Some(json!({"name": "session/set_mode", "side": "client"})));
}

/// What a schema adds to the floor is taken (the decoder admits it) and the floor, and so
/// the protocol literal's content, stays as it was.
#[test]
fn a_schema_that_adds_to_the_floor_is_taken() {
    let s = Scratch::new();
    let before = lock_output(&s);
    edit_json(&s, "acp-v1.schema.json", |schema| {
        let reasons = schema["$defs"]["StopReason"]["oneOf"].as_array_mut().expect("StopReason alternatives");
        reasons.push(json!({"type": "string", "const": "paused", "description": "The turn paused."}));
    });
    s.edit_nth("acp:schema-v1@1", "acp:schema-v1@2", 0);
    let (tables, _) = tables(&s);
    assert!(tables.contains("\"paused\""), "the decoder admits the new stop reason");
    let after = lock_output(&s);
    assert_eq!(before["acp_floor"], after["acp_floor"]);
    assert_eq!(before["identities"]["protocol"], after["identities"]["protocol"]);
    assert_ne!(before["identities"]["acp_schema"], after["identities"]["acp_schema"]);
}

/// The recorded floor is part of the protocol literal's content: narrowing it in the lock by
/// hand is an in-place reinterpretation, and a floor that cannot be read is named.
#[test]
fn a_hand_edited_floor_is_refused() {
    let s = Scratch::new();
    edit_lock(&s, |lock| {
        lock["acp_floor"]["grammar"]["session_update_kinds"].as_array_mut().expect("kinds").retain(|k| k != "usage_update");
    });
    let rendered = s.generate_err().render();
    assert!(rendered.contains("the content behind `acp-v1` changed but the literal did not"), "{rendered}");

    let s = Scratch::new();
    edit_lock(&s, |lock| lock["acp_floor"]["grammar"]["methods"] = json!(5));
    let rendered = s.generate_err().render();
    assert!(rendered.contains("the ACP floor recorded for `acp-v1` cannot be read"), "{rendered}");
}

/// The methods that carry the closed vocabularies are found in the schema by the members the
/// decoder reads; a schema where none (or several) carries one is named, not guessed at.
#[test]
fn a_schema_without_a_stop_reason_carrier_is_named() {
    let s = Scratch::new();
    edit_json(&s, "acp-v1.schema.json", |schema| {
        let response = schema["$defs"]["PromptResponse"].as_object_mut().expect("PromptResponse");
        response["properties"].as_object_mut().expect("properties").remove("stopReason");
        response["required"] = json!([]);
    });
    let rendered = s.generate_err().render();
    assert!(rendered.contains("no method of the pinned schema `acp-v1.schema.json` has a result carrying `stopReason`"), "{rendered}");

    let s = Scratch::new();
    edit_json(&s, "acp-v1.schema.json", |schema| {
        schema["$defs"]["SetSessionModeResponse"]["properties"]["stopReason"] = json!({"$ref": "#/$defs/StopReason"});
    });
    let rendered = s.generate_err().render();
    assert!(rendered.contains("has a result carrying `stopReason`: `session/prompt`, `session/set_mode`"), "{rendered}");
}

/// An upstream schema replaced without its provenance record, or pinned without one, fails
/// generation pointing at the record; the page states the release the record names.
#[test]
fn the_pinned_schema_is_held_to_its_provenance_record() {
    let s = Scratch::new();
    edit_json_only(&s, "acp-v1.schema.json", |schema| schema["title"] = json!("Agent Client Protocol (edited)"));
    let rendered = s.generate_err().render();
    assert!(rendered.contains("`schemas/acp-v1.schema.json` is not the file its provenance records"), "{rendered}");
    assert!(rendered.contains("schemas/acp-v1.provenance.toml"), "points at the record: {rendered}");
    assert!(rendered.contains("sha256 = "), "quotes the recorded line: {rendered}");

    let s = Scratch::new();
    std::fs::remove_file(s.root().join("schemas/acp-v1.provenance.toml")).expect("remove record");
    let rendered = s.generate_err().render();
    assert!(rendered.contains("the pinned ACP schema `schemas/acp-v1.schema.json` has no provenance record"), "{rendered}");

    let s = Scratch::new();
    let record = s.root().join("schemas/acp-v1.provenance.toml");
    let text = std::fs::read_to_string(&record).expect("record").replace("version = \"2.4.0\"", "version = \"2.5.0\"");
    std::fs::write(&record, text).expect("write record");
    let generation = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render()));
    let page = generation.outputs.iter().find(|o| o.path.ends_with("harness-wire-extensions.md")).expect("page");
    assert!(page.contents.contains("npm @agentclientprotocol/sdk `2.5.0`"), "the page states the recorded release");
}

/// The catalog's `[acp]` transcribes nothing of the schema: it names the file, and
/// Checkfu's one decision about it, which `sessionUpdate` kinds are optional fidelity (a
/// few of the schema's kinds, chosen, not its list copied).
#[test]
fn the_catalog_acp_section_only_names_the_schema() {
    let text = std::fs::read_to_string(common::project_root().join("catalog/catalog.toml")).expect("catalog");
    let table: toml::Table = toml::from_str(&text).expect("toml");
    let acp = table["acp"].as_table().expect("[acp]");
    let mut keys: Vec<&String> = acp.keys().collect();
    keys.sort();
    assert_eq!(keys, vec!["optional_fidelity_updates", "schema"]);
    let chosen = acp["optional_fidelity_updates"].as_array().expect("a list").len();
    let kinds = checkfu_wire_codegen::generate(&common::project_root()).unwrap_or_else(|d| panic!("{}", d.render()));
    let grammar = kinds.outputs.iter().find(|o| o.path.ends_with("acp-grammar.json")).expect("acp-grammar.json");
    let grammar: serde_json::Value = serde_json::from_str(&grammar.contents).expect("JSON");
    let all = grammar["session_update_kinds"].as_array().expect("kinds").len();
    assert!(chosen > 0 && chosen < all, "{chosen} of {all} kinds");
}

/// ACP v2's tables are read from the pinned v2 schema as v1's are from v1's: its own methods
/// with the v2 schema's checks, none of v1's removed ones, and the extension methods of both.
#[test]
fn the_v2_tables_are_the_v2_schemas() {
    let s = Scratch::new();
    let generation = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render()));
    let v2 = generation.outputs.iter().find(|o| o.path.ends_with("decoder_tables_acp_v2.rs")).expect("the v2 tables");
    for present in ["\"auth/login\" =>", "\"session/resume\" =>", "\"_checkfu/session/steer\" =>", "acp_v2::checks::check_PromptResponse"] {
        assert!(v2.contents.contains(present), "{present} not in the v2 tables");
    }
    for absent in ["\"authenticate\" =>", "\"session/set_mode\" =>", "\"fs/read_text_file\" =>", "acp_v1::"] {
        assert!(!v2.contents.contains(absent), "{absent} in the v2 tables");
    }
    assert!(v2.contents.contains("PROTOCOL_VERSION: u64 = 2u32"), "v2's version");
    // And a v2 method added to the v2 schema is dispatched, with no change to v1's tables.
    let (v1_before, _) = tables(&s);
    edit_json(&s, "acp-v2.schema.json", |schema| {
        schema["$defs"]["PingRequest"] = json!({"type": "object", "x-method": "session/ping", "x-side": "agent"});
        schema["$defs"]["PingResponse"] = json!({"type": "object", "x-method": "session/ping", "x-side": "agent"});
    });
    s.edit_nth("acp:schema-v2@1", "acp:schema-v2@2", 0);
    let generation = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render()));
    let v2 = generation.outputs.iter().find(|o| o.path.ends_with("decoder_tables_acp_v2.rs")).expect("the v2 tables");
    assert!(v2.contents.contains("\"session/ping\" =>") && v2.contents.contains("check_PingResponse"), "the new method dispatches");
    assert_eq!(tables(&s).0, v1_before, "v1's tables do not move");
}

/// v2 has no `current_mode_update`: naming it optional fidelity of v2 is refused where it
/// is written.
#[test]
fn a_v2_fidelity_kind_must_be_a_v2_kind() {
    let s = Scratch::new();
    s.edit_after("\n[acp_v2]\n", "\"usage_update\"", "\"current_mode_update\"");
    common::refused_at(&s, "[acp_v2] optional_fidelity_updates names `current_mode_update`", "\n[acp_v2]\n", "\"current_mode_update\"");
}
