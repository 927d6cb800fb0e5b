//! Every branch of the decode policy: slots by class, unknown keys, the cross-field rule,
//! the closed ACP grammar, and JSON-RPC envelope errors.

use checkfu_wire::decode::{Decoder, Kind, Report, SlotStatus, WireDirection};
use serde_json::{json, Value};

fn decode(message: &Value) -> Report {
    Decoder::new().decode(message.to_string().as_bytes(), None)
}

fn error_code(report: &Report) -> String {
    let error = report.error.as_ref().expect("rejected");
    serde_json::to_value(&error.error).expect("serializes")["code"].as_str().unwrap_or_default().to_string()
}

fn slot_status(report: &Report, key: &str) -> SlotStatus {
    report.slots.iter().find(|s| s.key == key).unwrap_or_else(|| panic!("no slot {key} in {report:?}")).status
}

fn session_new(meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": [], "_meta": meta}})
}

fn update(meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "_meta": meta}}})
}

fn prompt_response(meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 9, "result": {"stopReason": "end_turn", "_meta": meta}})
}

fn initialize_response(meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {}, "_meta": meta}})
}

fn turn() -> Value {
    json!({"execution": "shell", "shell_commands": 1, "filesystem_commands": 2, "mcp_calls": 0, "model_calls": 3, "wall_time_ms": 1200})
}

// ---- a valid member of each slot ---------------------------------------------------------

#[test]
fn valid_member_of_every_slot_is_decoded() {
    let cases = [
        ("checkfu.capabilities", initialize_response(json!({"checkfu.capabilities": {"subagents": "observed"}}))),
        ("checkfu.subagent", update(json!({"checkfu.subagent": {"phase": "activity", "subagent": "t1"}}))),
        ("checkfu.turn", prompt_response(json!({"checkfu.turn": turn()}))),
        ("checkfu.builtin_tools", session_new(json!({"checkfu.builtin_tools": ["bash", "read"]}))),
        ("checkfu.continuity", session_new(json!({"checkfu.continuity": "fresh"}))),
        ("checkfu.runtime_config", session_new(json!({"checkfu.runtime_config": {"context_window": 200000}}))),
        ("checkfu.output_schema", session_new(json!({"checkfu.output_schema": {"type": "object"}}))),
        ("checkfu.resume", session_new(json!({"checkfu.continuity": "same_run_resume", "checkfu.resume": {"version": 1, "state": "b64"}}))),
        (
            "checkfu.journal_checkpoint",
            update(json!({"checkfu.journal_checkpoint": {"status": "too_large", "version": 1, "size_bytes": 99999999}})),
        ),
        (
            "checkfu.compaction",
            update(
                json!({"checkfu.compaction": {"strategy": "summarize", "tokens_before": 180000, "tokens_after": 40000, "compacted_messages": 61}}),
            ),
        ),
    ];
    for (key, message) in cases {
        let report = decode(&message);
        assert!(report.accepted, "{key}: {report:?}");
        assert_eq!(slot_status(&report, key), SlotStatus::Decoded, "{key}");
    }
    let steer =
        json!({"jsonrpc": "2.0", "id": 3, "method": "_checkfu/session/steer", "params": {"sessionId": "s", "id": "e1", "content": "stop"}});
    let interrupt = json!({"jsonrpc": "2.0", "id": 4, "method": "_checkfu/session/interrupt", "params": {"sessionId": "s"}});
    for message in [steer, interrupt] {
        let report = decode(&message);
        assert!(report.accepted, "{report:?}");
        assert_eq!(report.source, Some("checkfu"));
        assert_eq!(report.direction, Some(WireDirection::RunnerToAgent));
    }
}

// ---- fail-open ---------------------------------------------------------------------------

#[test]
fn unknown_checkfu_key_is_ignored_with_a_diagnostic() {
    let report = decode(&update(json!({"checkfu.telepathy": {"x": 1}, "vendor.thing": 3})));
    assert!(report.accepted);
    assert_eq!(slot_status(&report, "checkfu.telepathy"), SlotStatus::Ignored);
    assert!(report.diagnostics.iter().any(|d| d.contains("checkfu.telepathy")));
    assert!(!report.slots.iter().any(|s| s.key == "vendor.thing"), "other namespaces are not ours to judge");
}

#[test]
fn malformed_fidelity_member_is_dropped_with_a_diagnostic() {
    let report = decode(&update(json!({"checkfu.subagent": {"phase": "started", "subagent": ""}})));
    assert!(report.accepted, "{report:?}");
    assert_eq!(slot_status(&report, "checkfu.subagent"), SlotStatus::Dropped);
    assert!(report.diagnostics.iter().any(|d| d.contains("checkfu.subagent") && d.contains("dropped")));
    let report = decode(&prompt_response(json!({"checkfu.turn": {"execution": "shell", "wall_time_ms": -1}})));
    assert!(report.accepted);
    assert_eq!(slot_status(&report, "checkfu.turn"), SlotStatus::Dropped);
}

#[test]
fn a_known_key_outside_its_carrier_is_ignored() {
    let report = decode(&session_new(json!({"checkfu.turn": turn()})));
    assert!(report.accepted);
    assert_eq!(slot_status(&report, "checkfu.turn"), SlotStatus::Ignored);
}

/// v1 is read with v1's carriers: `checkfu.turn` rides the prompt's answer, where a
/// malformed one is dropped at its JSON Pointer, and a session update member (where ACP v2
/// carries it) is outside its carrier.
#[test]
fn under_v1_checkfu_turn_keeps_the_prompt_answer_as_its_carrier() {
    let mut lying = turn();
    lying["model_calls"] = json!("0");
    let report = decode(&prompt_response(json!({"checkfu.turn": lying})));
    assert!(report.accepted, "{report:?}");
    assert_eq!(slot_status(&report, "checkfu.turn"), SlotStatus::Dropped);
    assert!(report.diagnostics.iter().any(|d| d.contains("at `/model_calls`")), "{:?}", report.diagnostics);
    let report = decode(&update(json!({"checkfu.turn": turn()})));
    assert!(report.accepted, "{report:?}");
    assert_eq!(slot_status(&report, "checkfu.turn"), SlotStatus::Ignored);
}

// ---- fail-closed -------------------------------------------------------------------------

#[test]
fn malformed_authority_member_rejects_session_new() {
    for meta in [
        json!({"checkfu.builtin_tools": ["bash", "rm_rf"]}),
        json!({"checkfu.continuity": "yesterday"}),
        json!({"checkfu.runtime_config": {"context_window": 0}}),
        json!({"checkfu.runtime_config": {"context_window": 1000, "surprise": true}}),
        json!({"checkfu.output_schema": null}),
    ] {
        let report = decode(&session_new(meta.clone()));
        assert!(!report.accepted, "{meta}");
        assert_eq!(error_code(&report), "authority_rejected", "{meta}");
    }
}

#[test]
fn an_output_schema_outside_the_safety_profile_is_rejected() {
    let schema = json!({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}});
    let report = decode(&session_new(json!({"checkfu.output_schema": schema})));
    assert_eq!(error_code(&report), "authority_rejected");
    assert!(report.error.as_ref().expect("error").message.contains("unique-items"), "{report:?}");
}

#[test]
fn malformed_declaration_rejects_the_handshake() {
    let report = decode(&initialize_response(json!({"checkfu.capabilities": {"subagents": "maybe"}})));
    assert_eq!(error_code(&report), "invalid_declaration");
    let report = decode(&initialize_response(json!({"checkfu.capabilities": {"mid_run_input": "native"}})));
    assert_eq!(error_code(&report), "invalid_declaration");
}

#[test]
fn resume_needs_same_run_resume_continuity() {
    let resume = json!({"version": 1, "state": "b64"});
    let report = decode(&session_new(json!({"checkfu.resume": resume.clone()})));
    assert_eq!(error_code(&report), "missing_requirement");
    let report = decode(&session_new(json!({"checkfu.resume": resume.clone(), "checkfu.continuity": "fresh"})));
    assert_eq!(error_code(&report), "missing_requirement");
    let report = decode(&session_new(json!({"checkfu.resume": resume, "checkfu.continuity": "same_run_resume"})));
    assert!(report.accepted);
}

#[test]
fn malformed_extension_params_and_results_are_rejected() {
    let steer =
        json!({"jsonrpc": "2.0", "id": 3, "method": "_checkfu/session/steer", "params": {"sessionId": "s", "id": "", "content": "x"}});
    assert_eq!(error_code(&decode(&steer)), "invalid_params");
    let mut decoder = Decoder::new();
    let request =
        json!({"jsonrpc": "2.0", "id": 3, "method": "_checkfu/session/steer", "params": {"sessionId": "s", "id": "e1", "content": "x"}});
    assert!(decoder.decode(request.to_string().as_bytes(), None).accepted);
    let ack = json!({"jsonrpc": "2.0", "id": 3, "result": {"disposition": "maybe"}});
    let report = decoder.decode(ack.to_string().as_bytes(), None);
    assert_eq!(error_code(&report), "invalid_result");
    assert_eq!(report.method, Some("_checkfu/session/steer"));
}

/// Typed bodies are read in the envelope pass when the method (or the id of the request
/// answered) comes first, and by a second parse otherwise: the verdict must not depend on
/// which, so every exchange is decoded with its members in both orders.
#[test]
fn member_order_does_not_change_the_verdict() {
    let exchanges = [
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"_checkfu/session/steer","params":{"sessionId":"s","id":"e1","content":"x","_meta":{"checkfu.turn":{},"v.x":1}}}"#,
            r#"{"params":{"sessionId":"s","id":"e1","content":"x","_meta":{"checkfu.turn":{},"v.x":1}},"id":3,"method":"_checkfu/session/steer","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"disposition":"delivered"}}"#,
            r#"{"result":{"disposition":"delivered"},"jsonrpc":"2.0","id":3}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"_checkfu/session/steer","params":{"sessionId":"s","id":"e1","content":"x"}}"#,
            r#"{"params":{"sessionId":"s","id":"e1","content":"x"},"id":3,"method":"_checkfu/session/steer","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"disposition":"delivered"}}"#,
            r#"{"result":{"disposition":"delivered"},"jsonrpc":"2.0","id":3}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"_checkfu/session/interrupt","params":{"sessionId":"s"}}"#,
            r#"{"params":{"sessionId":"s"},"jsonrpc":"2.0","method":"_checkfu/session/interrupt","id":4}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{"disposition":"sideways"}}"#,
            r#"{"result":{"disposition":"sideways"},"id":4,"jsonrpc":"2.0"}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"g","method":"_goose/tools","params":[1]}"#,
            r#"{"params":[1],"jsonrpc":"2.0","id":"g","method":"_goose/tools"}"#,
            r#"{"jsonrpc":"2.0","id":"g","result":{"tools":[]}}"#,
            r#"{"result":{"tools":[]},"jsonrpc":"2.0","id":"g"}"#,
        ),
    ];
    let mut verdicts = Vec::new();
    for (request, request_reordered, response, response_reordered) in exchanges {
        let mut first = Decoder::new();
        let mut second = Decoder::new();
        for (message, reordered) in [(request, request_reordered), (response, response_reordered)] {
            let a = first.decode(message.as_bytes(), None);
            let b = second.decode(reordered.as_bytes(), None);
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{message}");
            verdicts.push(a.error.map(|e| serde_json::to_value(e.error).expect("serializes")["code"].clone()));
        }
    }
    // Accepted and rejected bodies both, in each order: steer params are closed, so its
    // `_meta` (read into the tree with every member) is rejected, and the answer to a
    // rejected request is untyped; the second steer exchange is accepted; the interrupt
    // result and the Goose params are not.
    let invalid = |code: &str| Some(json!(code));
    assert_eq!(verdicts, [invalid("invalid_params"), None, None, None, None, invalid("invalid_result"), invalid("invalid_params"), None]);
}

/// Members the policy does not read are skipped, and those it keeps as text (`error`,
/// `protocolVersion`) are read raw, on serde_json's iterative path that counts no
/// depth. At every place such a member can sit, the decoder must reject exactly the
/// messages serde_json's own limit rejects.
#[test]
fn skipped_members_are_held_to_serde_jsons_depth_limit() {
    let sites = [
        r#"{"jsonrpc":X,"id":1,"method":"session/new","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[],"deep":X}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":[X]}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"_meta":{"vendor.deep":X}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":X}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":[X]}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","_meta":{"v.x":X}}}}"#,
        r#"{"jsonrpc":"2.0","id":9,"result":{"stopReason":"end_turn","usage":X}}"#,
        r#"{"jsonrpc":"2.0","id":9,"result":{"protocolVersion":X}}"#,
        r#"{"jsonrpc":"2.0","id":9,"error":X}"#,
        r#"X"#,
    ];
    for site in sites {
        let mut verdicts = Vec::new();
        for depth in 115..=130 {
            // Nested arrays and objects, with brackets inside strings that must not count.
            let value = format!("{}\"[{{\\\"\"{}", "[{\"k\":".repeat(depth / 2), "}]".repeat(depth / 2));
            let value = if depth % 2 == 1 { format!("[{value}]") } else { value };
            let message = site.replace('X', &value);
            let parses = serde_json::from_str::<Value>(&message).is_ok();
            let report = Decoder::new().decode(message.as_bytes(), None);
            let too_deep = report.error.as_ref().is_some_and(|_| error_code(&report) == "too_deep");
            assert_eq!(!parses, too_deep, "depth {depth} at {site}: {report:?}");
            verdicts.push(too_deep);
        }
        assert!(verdicts.contains(&true) && verdicts.contains(&false), "{site}: the boundary lies in the range");
    }
}

#[test]
fn jsonrpc_is_the_string_two_point_zero_however_escaped() {
    let message = |version: &str| format!(r#"{{"jsonrpc":{version},"method":"session/cancel","params":{{"sessionId":"s"}}}}"#);
    assert!(Decoder::new().decode(message(r#""2.0""#).as_bytes(), None).accepted);
    assert!(Decoder::new().decode(message(r#""2\u002e0""#).as_bytes(), None).accepted);
    for other in [r#""2.00""#, "2.0", "2", r#"["2.0"]"#, r#"{"v":"2.0"}"#, "null", "true"] {
        let report = Decoder::new().decode(message(other).as_bytes(), None);
        assert_eq!(error_code(&report), "bad_jsonrpc", "{other}");
    }
}

// ---- the closed ACP grammar ----------------------------------------------------------------

#[test]
fn unknown_method_update_kind_and_stop_reason_are_rejected() {
    let report = decode(&json!({"jsonrpc": "2.0", "id": 1, "method": "session/teleport", "params": {}}));
    assert_eq!(error_code(&report), "unknown_method");
    let report = decode(
        &json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "mind_reading"}}}),
    );
    assert_eq!(error_code(&report), "unknown_update_kind");
    let report = decode(&json!({"jsonrpc": "2.0", "id": 9, "result": {"stopReason": "bored"}}));
    assert_eq!(error_code(&report), "unknown_stop_reason");
    let report = decode(&json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "agentCapabilities": {}}}));
    assert_eq!(error_code(&report), "protocol_version");
}

#[test]
fn responses_are_read_as_answers_to_their_requests() {
    let mut decoder = Decoder::new();
    let prompt = json!({"jsonrpc": "2.0", "id": "p1", "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}});
    assert!(decoder.decode(prompt.to_string().as_bytes(), None).accepted);
    let answer = json!({"jsonrpc": "2.0", "id": "p1", "result": {"stopReason": "cancelled"}});
    let report = decoder.decode(answer.to_string().as_bytes(), None);
    assert!(report.accepted);
    assert_eq!(
        (report.method, report.kind, report.direction),
        (Some("session/prompt"), Some(Kind::Response), Some(WireDirection::AgentToRunner))
    );
    let stray = json!({"jsonrpc": "2.0", "id": 77, "result": {}});
    let report = decoder.decode(stray.to_string().as_bytes(), None);
    assert!(report.accepted);
    assert_eq!(report.method, None);
    let error = json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "Method not found"}});
    assert_eq!(decoder.decode(error.to_string().as_bytes(), None).kind, Some(Kind::ErrorResponse));
}

#[test]
fn ids_are_strings_numbers_or_null_and_match_by_value() {
    let mut decoder = Decoder::new();
    let prompt = r#"{"jsonrpc":"2.0","id":"a\u0062","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#;
    assert!(decoder.decode(prompt.as_bytes(), None).accepted);
    // The same id, written without the escape: answered, so typed by the request.
    let answer = r#"{"jsonrpc":"2.0","id":"ab","result":{"stopReason":"end_turn"}}"#;
    let report = decoder.decode(answer.as_bytes(), None);
    assert_eq!((report.accepted, report.method), (true, Some("session/prompt")));
    assert_eq!(report.direction, Some(WireDirection::AgentToRunner));
    // A number id and a string id with the same digits are different ids.
    assert!(decoder.decode(prompt.replace(r#""a\u0062""#, "7").as_bytes(), None).accepted);
    let report = decoder.decode(br#"{"jsonrpc":"2.0","id":"7","result":{}}"#, None);
    assert_eq!(report.method, None, "the string \"7\" answers nothing");
    for id in ["true", "[1]", r#"{"n":1}"#] {
        let report = decoder.decode(prompt.replace(r#""a\u0062""#, id).as_bytes(), None);
        assert_eq!(error_code(&report), "bad_envelope", "{id}");
    }
}

#[test]
fn goose_and_khy_os_methods_dispatch_through_their_tables() {
    let goose = json!({"jsonrpc": "2.0", "id": "g1", "method": "_goose/tools", "params": {"session_id": "s"}});
    let report = decode(&goose);
    assert!(report.accepted, "{report:?}");
    assert_eq!(report.source, Some("goose"));
    let bad = json!({"jsonrpc": "2.0", "id": "g1", "method": "_goose/tools", "params": {"session": "s"}});
    assert_eq!(error_code(&decode(&bad)), "invalid_params");
    let khy = json!({"jsonrpc": "2.0", "id": 1, "method": "agent.spawn", "params": {"role": "researcher"}});
    let report = decode(&khy);
    assert!(report.accepted, "{report:?}");
    assert_eq!(report.source, Some("khy-os"));
    let khy_bad = json!({"jsonrpc": "2.0", "id": 1, "method": "agent.spawn", "params": {"name": "x"}});
    assert_eq!(error_code(&decode(&khy_bad)), "invalid_params");
}

#[test]
fn direction_conflicts_are_rejected() {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/a"}});
    let report = Decoder::new().decode(request.to_string().as_bytes(), Some(WireDirection::RunnerToAgent));
    assert_eq!(error_code(&report), "wrong_direction");
    let report = Decoder::new().decode(request.to_string().as_bytes(), Some(WireDirection::AgentToRunner));
    assert!(report.accepted);
}

#[test]
fn responses_answer_only_requests_that_flowed_the_other_way() {
    // Both sides number their requests from 0, as the SDKs do.
    let prompt = json!({"jsonrpc": "2.0", "id": 0, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}});
    let permission = json!({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
        "sessionId": "s", "toolCall": {"toolCallId": "t"}, "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]}});
    let granted = json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "a"}}});
    let finished = json!({"jsonrpc": "2.0", "id": 0, "result": {"stopReason": "end_turn"}});
    // With directions stated: each answer finds the request of the other direction.
    let mut decoder = Decoder::new();
    assert!(decoder.decode(prompt.to_string().as_bytes(), Some(WireDirection::RunnerToAgent)).accepted);
    assert!(decoder.decode(permission.to_string().as_bytes(), Some(WireDirection::AgentToRunner)).accepted);
    let report = decoder.decode(granted.to_string().as_bytes(), Some(WireDirection::RunnerToAgent));
    assert_eq!((report.accepted, report.method), (true, Some("session/request_permission")), "{report:?}");
    let report = decoder.decode(finished.to_string().as_bytes(), Some(WireDirection::AgentToRunner));
    assert_eq!((report.accepted, report.method), (true, Some("session/prompt")), "{report:?}");
    // One direction only: the runner's own requests are never answered by its own messages.
    let mut decoder = Decoder::new();
    assert!(decoder.decode(prompt.to_string().as_bytes(), Some(WireDirection::RunnerToAgent)).accepted);
    let report = decoder.decode(granted.to_string().as_bytes(), Some(WireDirection::RunnerToAgent));
    assert_eq!((report.accepted, report.method), (true, None), "{report:?}");
    // Interleaved without directions: the answer goes to the request whose result it fits.
    let mut decoder = Decoder::new();
    assert!(decoder.decode(prompt.to_string().as_bytes(), None).accepted);
    assert!(decoder.decode(permission.to_string().as_bytes(), None).accepted);
    let report = decoder.decode(finished.to_string().as_bytes(), None);
    assert_eq!((report.accepted, report.method), (true, Some("session/prompt")), "{report:?}");
    let report = decoder.decode(granted.to_string().as_bytes(), None);
    assert_eq!((report.accepted, report.method), (true, Some("session/request_permission")), "{report:?}");
}

#[test]
fn other_vendors_extensions_are_well_formed_but_unsupported() {
    let mut decoder = Decoder::new();
    let request = json!({"jsonrpc": "2.0", "id": 4, "method": "_zed.dev/workspace/buffers", "params": {}});
    let report = decoder.decode(request.to_string().as_bytes(), Some(WireDirection::AgentToRunner));
    assert!(report.accepted, "{report:?}");
    assert_eq!(report.extension.as_ref().map(|e| e.method.as_str()), Some("_zed.dev/workspace/buffers"));
    assert!(report.diagnostics.iter().any(|d| d.contains("-32601")), "{report:?}");
    let answer = json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "Method not found"}});
    let report = decoder.decode(answer.to_string().as_bytes(), Some(WireDirection::RunnerToAgent));
    assert_eq!((report.accepted, report.kind), (true, Some(Kind::ErrorResponse)), "{report:?}");
    let notification = json!({"jsonrpc": "2.0", "method": "_acme/progress", "params": {"pct": 50}});
    let report = decode(&notification);
    assert_eq!((report.accepted, report.kind), (true, Some(Kind::Notification)));
    assert!(report.diagnostics.iter().any(|d| d.contains("ignored")), "{report:?}");
    // Without the prefix the grammar stays closed.
    let unknown = json!({"jsonrpc": "2.0", "method": "acme/progress", "params": {}});
    assert_eq!(error_code(&decode(&unknown)), "unknown_method");
}

#[test]
fn a_fractional_id_is_no_id() {
    let prompt = |id: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s","prompt":[]}}}}"#);
    assert_eq!(error_code(&Decoder::new().decode(prompt("1.5").as_bytes(), None)), "bad_envelope");
    let mut decoder = Decoder::new();
    assert!(decoder.decode(prompt("2.0").as_bytes(), None).accepted, "an integer written with a fraction is an integer");
    let report = decoder.decode(br#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#, None);
    assert_eq!(report.method, Some("session/prompt"), "2.0 and 2 are one id");
}

/// Whether an answer with the id `answered` is read as the answer to a request with the id
/// `asked`. The request is one no table types, so that only the id can tie the answer to it
/// (a prompt's answer is typed by its `stopReason` even without the request).
fn answers(asked: &str, answered: &str) -> bool {
    let request = format!(r#"{{"jsonrpc":"2.0","id":{asked},"method":"_zed.dev/workspace/buffers","params":{{}}}}"#);
    let mut decoder = Decoder::new();
    assert!(decoder.decode(request.as_bytes(), None).accepted, "{asked}");
    let report = decoder.decode(format!(r#"{{"jsonrpc":"2.0","id":{answered},"result":{{}}}}"#).as_bytes(), None);
    assert!(report.accepted, "{report:?}");
    report.diagnostics.iter().any(|d| d.contains("answer to an unsupported extension request"))
}

/// With `exact-numbers` ids are decided on their texts' values. Without it a number is what
/// an i64, a u64 or the nearest f64 holds, as a consumer on serde_json's defaults reads it
/// (`number_ids_match_by_the_value_serde_json_defaults_hold`, below).
#[cfg(feature = "exact-numbers")]
#[test]
fn number_ids_match_by_their_exact_value() {
    let prompt = |id: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s","prompt":[]}}}}"#);
    // One value, however written; past u64 and i64 too.
    for (asked, answered) in [
        ("1e0", "1"),
        ("10e-1", "1.0"),
        ("-0", "0"),
        ("18446744073709551617", "18446744073709551617"),
        ("1.8446744073709551617e19", "18446744073709551617"),
        ("-9223372036854775809", "-9223372036854775809.0"),
        ("1e300", "1e300"),
    ] {
        assert!(answers(asked, answered), "{asked} and {answered} are one id");
    }
    // Two values, even where the nearest f64s are one (or `as` would saturate to one).
    for (asked, answered) in [
        ("18446744073709551617", "18446744073709551616"),
        ("18446744073709551616", "18446744073709551615"),
        ("9007199254740993", "9007199254740992.0"),
        ("-9223372036854775809", "-9223372036854775808"),
        ("1e300", "1.0000000000000000001e300"),
    ] {
        assert!(!answers(asked, answered), "{asked} and {answered} are two ids");
    }
    // A fraction past an f64's precision is still a fraction.
    assert_eq!(error_code(&Decoder::new().decode(prompt("1.0000000000000000001").as_bytes(), None)), "bad_envelope");
}

// ---- JSON-RPC envelope errors ------------------------------------------------------------

#[test]
fn envelope_errors_are_typed() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (br#"{"jsonrpc": "1.0", "id": 1, "method": "initialize", "params": {}}"#.to_vec(), "bad_jsonrpc"),
        (br#"{"id": 1, "method": "initialize", "params": {}}"#.to_vec(), "bad_jsonrpc"),
        (br#"{"jsonrpc": "2.0", "method": "session/prompt", "params": {}}"#.to_vec(), "missing_id"),
        (br#"{"jsonrpc": "2.0", "id": 2, "method": "session/cancel", "params": {}}"#.to_vec(), "unexpected_id"),
        (br#"{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {}, "extra": 1}"#.to_vec(), "bad_envelope"),
        (br#"{"jsonrpc": "2.0", "id": 2, "id": 3, "method": "session/prompt", "params": {}}"#.to_vec(), "bad_envelope"),
        (br#"{"jsonrpc": "2.0", "id": 2, "result": {}, "error": {"code": 1, "message": "x"}}"#.to_vec(), "bad_envelope"),
        (br#"{"jsonrpc": "2.0", "id": 2, "error": {"code": "x"}}"#.to_vec(), "bad_envelope"),
        (br#"{"jsonrpc": "2.0"}"#.to_vec(), "bad_envelope"),
        (br#"[1, 2]"#.to_vec(), "not_an_object"),
        (br#"{"jsonrpc": "2.0", "id": 1, "method": "initialize""#.to_vec(), "invalid_json"),
        (b"not json at all".to_vec(), "invalid_json"),
        (vec![b'{', b'"', 0xff, 0xfe, b'"', b':', b'1', b'}'], "invalid_utf8"),
        (format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(), "too_deep"),
        (
            format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/new\",\"params\":{}1{}}}", "{\"a\":".repeat(200), "}".repeat(200))
                .into_bytes(),
            "too_deep",
        ),
    ];
    for (bytes, code) in cases {
        let report = Decoder::new().decode(&bytes, None);
        assert!(!report.accepted, "{}", String::from_utf8_lossy(&bytes[..bytes.len().min(80)]));
        assert_eq!(error_code(&report), code, "{}", String::from_utf8_lossy(&bytes[..bytes.len().min(80)]));
    }
}

/// Fail-open fidelity: an update of a kind the catalog names optional fidelity, broken
/// inside the update, is accepted and marked ignored; everything around it stays closed.
#[test]
fn a_malformed_fidelity_update_is_ignored_and_nothing_else_is() {
    let usage = |update: Value, session: Value| json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}});
    let report = decode(&usage(json!({"sessionUpdate": "usage_update", "used": null, "size": 1000}), json!("s")));
    assert!(report.accepted, "{report:?}");
    let ignored = report.ignored.as_ref().expect("marked ignored");
    assert_eq!(ignored.kind, "usage_update");
    assert!(ignored.reason.contains("/update/used"), "{ignored:?}");
    assert!(report.diagnostics.iter().any(|d| d.starts_with("ignored a malformed `usage_update` update")), "{report:?}");
    // A member the update lacks is its own failure too.
    let missing = decode(&usage(json!({"sessionUpdate": "current_mode_update"}), json!("s")));
    assert!(missing.accepted && missing.ignored.as_ref().is_some_and(|i| i.reason.contains("currentModeId")), "{missing:?}");
    // A well-formed one is not ignored.
    let well = decode(&usage(json!({"sessionUpdate": "usage_update", "used": 10, "size": 1000}), json!("s")));
    assert!(well.accepted && well.ignored.is_none(), "{well:?}");
    // Broken outside the update (the session id), it is ACP's own shape: rejected.
    assert!(!decode(&usage(json!({"sessionUpdate": "usage_update", "used": null, "size": 1000}), json!(7))).accepted);
    // Content stays fail-closed, and so does the kind itself.
    assert!(!decode(&usage(json!({"sessionUpdate": "agent_message_chunk", "content": 7}), json!("s"))).accepted);
    assert!(!decode(&usage(json!({"sessionUpdate": "usage_updates", "used": 1}), json!("s"))).accepted);
}

/// Without `exact-numbers`: an id is the number serde_json's defaults hold, so two texts
/// whose nearest f64 is one are one id (a peer on those defaults answers with that f64),
/// and integers that a u64 or an i64 holds stay exact.
#[cfg(not(feature = "exact-numbers"))]
#[test]
fn number_ids_match_by_the_value_serde_json_defaults_hold() {
    for (asked, answered) in [("1e0", "1"), ("10e-1", "1.0"), ("-0", "0"), ("18446744073709551617", "18446744073709551616")] {
        assert!(answers(asked, answered), "{asked} and {answered} are one id");
    }
    for (asked, answered) in [("18446744073709551615", "18446744073709551614"), ("-9223372036854775808", "-9223372036854775807")] {
        assert!(!answers(asked, answered), "{asked} and {answered} are two ids");
    }
}
