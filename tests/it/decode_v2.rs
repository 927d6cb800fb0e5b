//! ACP v2, decoded beside v1 (`Decoder::reading(Protocol::AcpV2)`, `decode --protocol
//! acp-v2`): a v2 session in the shapes of the pinned official v2 schema decodes whole; the
//! same session read as v1 is refused where v2 differs; v1's methods that v2 removed are
//! unknown; and broken variants of every message are rejected exactly when `jsonschema`
//! rejects them against the official v2 schema, at a JSON Pointer it names too (or dropped,
//! where ACP marks a member lenient, as the official SDK reads it).

use checkfu_wire::decode::{tables, DecodeError, Decoder, Protocol, Report, WireDirection};
use serde_json::{json, Value};

use crate::sdk_traffic::{broken, definition};

const TO_AGENT: WireDirection = WireDirection::RunnerToAgent;
const TO_RUNNER: WireDirection = WireDirection::AgentToRunner;

fn schema() -> Value {
    let path = crate::support::project::project_root().join("schemas/acp-v2.schema.json");
    serde_json::from_slice(&std::fs::read(path).expect("the v2 schema")).expect("json")
}

fn update(update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update}})
}

/// A v2 session as the migration guide describes it: `info` and object-marker
/// capabilities, the prompt answered with a receipt, the user message echoed with its
/// `messageId`, `running` then an idle `state_update` that carries the stop reason.
fn session() -> Vec<(WireDirection, Value)> {
    vec![
        (
            TO_AGENT,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2,
            "info": {"name": "client", "version": "1.0"}, "capabilities": {"auth": {}, "elicitation": {}}}}),
        ),
        (
            TO_RUNNER,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "info": {"name": "agent", "version": "2.4.0"},
            "capabilities": {"session": {}}, "authMethods": [], "_meta": {"checkfu.capabilities": {"subagents": "observed"}}}}),
        ),
        (
            TO_AGENT,
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/workspace", "mcpServers": [],
            "_meta": {"checkfu.builtin_tools": ["bash", "read"]}}}),
        ),
        (TO_RUNNER, json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}})),
        (
            TO_AGENT,
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s1",
            "prompt": [{"type": "text", "text": "hello"}]}}),
        ),
        (TO_RUNNER, update(json!({"sessionUpdate": "state_update", "state": "running"}))),
        (TO_RUNNER, update(json!({"sessionUpdate": "user_message", "messageId": "m1", "content": [{"type": "text", "text": "hello"}]}))),
        (TO_RUNNER, json!({"jsonrpc": "2.0", "id": 2, "result": {"messageId": "m1"}})),
        (
            TO_RUNNER,
            update(json!({"sessionUpdate": "agent_message_chunk", "messageId": "m2", "content": {"type": "text", "text": "hi"},
            "_meta": {"checkfu.subagent": {"phase": "activity", "subagent": "t1"}}})),
        ),
        (TO_RUNNER, update(json!({"sessionUpdate": "usage_update", "used": 10, "size": 1000}))),
        (TO_RUNNER, update(json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))),
        (TO_AGENT, json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})),
    ]
}

fn read(protocol: Protocol, messages: &[(WireDirection, Value)]) -> Vec<Report> {
    let mut decoder = Decoder::new().reading(protocol);
    messages.iter().map(|(way, m)| decoder.decode(m.to_string().as_bytes(), Some(*way))).collect()
}

#[test]
fn a_v2_session_decodes_whole_and_is_refused_as_v1() {
    let reports = read(Protocol::AcpV2, &session());
    for (i, report) in reports.iter().enumerate() {
        assert!(report.accepted, "message {i}: {:?}", report.error);
        assert!(report.diagnostics.is_empty(), "message {i}: {:?}", report.diagnostics);
    }
    // The Checkfu members ride v2 as they ride v1: the declaration and the fidelity member
    // were decoded by their slots.
    let slots: Vec<String> = reports.iter().flat_map(|r| r.slots.iter().map(|s| s.key.to_string())).collect();
    assert_eq!(slots, ["checkfu.capabilities", "checkfu.builtin_tools", "checkfu.subagent"]);
    // Read as v1, the same stream is refused where v2 differs, each for its own reason.
    let codes: Vec<Option<String>> = read(Protocol::AcpV1, &session())
        .iter()
        .map(|r| r.error.as_ref().and_then(|e| serde_json::to_value(e).ok()).and_then(|e| e["code"].as_str().map(String::from)))
        .collect();
    assert_eq!(codes[1].as_deref(), Some("protocol_version"), "{codes:?}");
    assert_eq!(codes[5].as_deref(), Some("unknown_update_kind"), "{codes:?}");
    assert_eq!(codes[7].as_deref(), Some("unknown_stop_reason"), "{codes:?}");
}

#[test]
fn v1_methods_that_v2_removed_are_unknown_and_v1_versions_refused() {
    for method in ["authenticate", "session/load", "session/set_mode", "fs/read_text_file", "terminal/create"] {
        let message = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": {}});
        let report = read(Protocol::AcpV2, &[(TO_AGENT, message)]).remove(0);
        assert_eq!(report.error.map(|e| e.error), Some(DecodeError::UnknownMethod { method: method.into() }), "{method}");
    }
    let mut v1_answer = session()[..2].to_vec();
    v1_answer[1].1["result"]["protocolVersion"] = json!(1);
    let report = read(Protocol::AcpV2, &v1_answer).remove(1);
    assert_eq!(report.error.map(|e| e.error), Some(DecodeError::ProtocolVersion { found: "1".into() }));
    // v2's own methods are known, with their sides.
    let login = json!({"jsonrpc": "2.0", "id": 3, "method": "auth/login", "params": {"methodId": "m"}});
    assert!(read(Protocol::AcpV2, &[(TO_AGENT, login.clone())])[0].accepted);
    assert!(!read(Protocol::AcpV2, &[(TO_RUNNER, login)])[0].accepted, "auth/login is handled by the agent");
    assert!(tables::acp_v2::method("session/resume").is_some() && tables::method("auth/login").is_none());
}

/// The named breaks of v2's new shapes.
#[test]
fn broken_v2_shapes_are_rejected_where_the_schema_rejects_them() {
    let s = session();
    // The receipt without its messageId.
    let mut receipt = s[..8].to_vec();
    receipt[7].1["result"] = json!({});
    let report = read(Protocol::AcpV2, &receipt).remove(7);
    assert!(
        matches!(&report.error.as_ref().map(|e| &e.error), Some(DecodeError::InvalidResult { method, pointer, .. })
            if method == "session/prompt" && pointer.is_empty()),
        "{:?}",
        report.error
    );
    // Updates that v2 keys by messageId, without it.
    for kind in ["user_message", "agent_message", "agent_message_chunk", "agent_thought"] {
        let message = update(json!({"sessionUpdate": kind, "content": {"type": "text", "text": "x"}}));
        let report = read(Protocol::AcpV2, &[(TO_RUNNER, message)]).remove(0);
        assert!(
            matches!(&report.error.as_ref().map(|e| &e.error), Some(DecodeError::InvalidParams { pointer, .. }) if pointer.starts_with("/update")),
            "{kind}: {:?}",
            report.error
        );
    }
    // A state that is not a string.
    let report = read(Protocol::AcpV2, &[(TO_RUNNER, update(json!({"sessionUpdate": "state_update", "state": true})))]).remove(0);
    assert!(!report.accepted);
    // A malformed declaration is fail-closed in v2 too; a malformed fidelity member is dropped.
    let mut declared = s[..2].to_vec();
    declared[1].1["result"]["_meta"] = json!({"checkfu.capabilities": {"subagents": "maybe"}});
    assert!(!read(Protocol::AcpV2, &declared)[1].accepted);
    let fidelity = update(json!({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "x"},
        "_meta": {"checkfu.subagent": {"phase": "started", "subagent": ""}}}));
    let report = read(Protocol::AcpV2, &[(TO_RUNNER, fidelity)]).remove(0);
    assert!(report.accepted && report.diagnostics.iter().any(|d| d.contains("checkfu.subagent")), "{report:?}");
}

/// A boolean where v2 wants an object marker: the official schema rejects it, and marks
/// the member lenient (`x-deserialize-default-on-error`), so the official SDK reads it as
/// absent. The decoder does what the SDK does and says so: the capability is dropped with
/// a diagnostic, never taken as declared.
#[test]
fn a_boolean_capability_is_dropped_as_the_official_sdk_drops_it() {
    let schema = schema();
    let registry = jsonschema::Registry::new().add("urn:acp", schema).and_then(|r| r.prepare()).expect("registry");
    let oracle =
        jsonschema::options().with_registry(&registry).build(&json!({"$ref": "urn:acp#/$defs/InitializeResponse"})).expect("oracle");
    let mut answer = session()[..2].to_vec();
    answer[1].1["result"]["capabilities"] = json!({"session": true});
    assert!(!oracle.is_valid(&answer[1].1["result"]), "the official schema rejects a boolean capability");
    let report = read(Protocol::AcpV2, &answer).remove(1);
    assert!(report.accepted, "{:?}", report.error);
    assert!(report.diagnostics.iter().any(|d| d.starts_with("lenient ACP member dropped")), "{:?}", report.diagnostics);
}

/// Every message of the session, broken one way at a time (the body replaced, each
/// required member removed, each member given a wrong type), against the official v2
/// schema: the decoder rejects exactly what `jsonschema` rejects, at a pointer among those
/// `jsonschema` reports, or drops a member ACP marks lenient, or ignores an optional
/// fidelity update.
#[test]
fn broken_variants_agree_with_the_official_v2_schema() {
    let tally = agreement(&session(), broken);
    assert!(tally.disagreements.is_empty(), "{} disagreement(s):\n{}", tally.disagreements.len(), tally.disagreements.join("\n"));
    assert!(tally.rejected > 40 && tally.lenient > 0, "{tally:?}");
    eprintln!("broken v2 variants: {tally:?}");
}

/// How the broken variants of a v2 stream were judged.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub agreed: usize,
    pub rejected: usize,
    pub lenient: usize,
    pub ignored: usize,
    pub disagreements: Vec<String>,
}

/// Each message of `s` (in order, each answer after its request) must be valid v2; each
/// variant `variants` makes of its params or result is decoded after the messages before
/// it and judged against `jsonschema` on the official v2 schema.
pub(crate) fn agreement(s: &[(WireDirection, Value)], variants: impl Fn(&Value, &[String]) -> Vec<Value>) -> Tally {
    let schema = schema();
    let registry = jsonschema::Registry::new().add("urn:acp", schema.clone()).and_then(|r| r.prepare()).expect("registry");
    let mut tally = Tally::default();
    for (i, (way, message)) in s.iter().enumerate() {
        let (part, method, suffix) = match message.get("method").and_then(Value::as_str) {
            Some(method) => ("params", method.to_string(), if message.get("id").is_some() { "Request" } else { "Notification" }),
            None => {
                let asked = s[..i].iter().rev().find(|(w, m)| *w != *way && m["id"] == message["id"] && m.get("method").is_some());
                let method = asked.and_then(|(_, m)| m["method"].as_str()).expect("the request").to_string();
                ("result", method, "Response")
            }
        };
        let def = definition(&schema, &method, suffix).unwrap_or_else(|| panic!("{method} {suffix}"));
        let oracle =
            jsonschema::options().with_registry(&registry).build(&json!({"$ref": format!("urn:acp#/$defs/{def}")})).expect("oracle");
        assert!(oracle.is_valid(&message[part]), "message {i} is valid v2: {message}");
        let required: Vec<String> =
            schema["$defs"][def]["required"].as_array().into_iter().flatten().filter_map(|r| r.as_str().map(String::from)).collect();
        for mutated in variants(&message[part], &required) {
            let mut copy = s[..=i].to_vec();
            copy[i].1[part] = mutated.clone();
            let report = read(Protocol::AcpV2, &copy).remove(i);
            let pointers: Vec<String> = oracle.iter_errors(&mutated).map(|e| e.instance_path().to_string()).collect();
            judge(&mut tally, &report, &pointers, &format!("{method} {part}: {mutated}"));
        }
    }
    tally
}

fn judge(tally: &mut Tally, report: &Report, pointers: &[String], what: &str) {
    let valid = pointers.is_empty();
    let dropped = report.diagnostics.iter().any(|d| d.starts_with("lenient ACP member dropped"));
    let pointer = match report.error.as_ref().map(|e| &e.error) {
        Some(DecodeError::InvalidParams { pointer, .. } | DecodeError::InvalidResult { pointer, .. }) => Some(pointer.clone()),
        _ => None,
    };
    let by_policy = matches!(report.error.as_ref().map(|e| &e.error), Some(DecodeError::ProtocolVersion { .. }));
    if report.accepted && !valid && dropped {
        tally.lenient += 1;
    } else if report.accepted && !valid && report.ignored.is_some() {
        tally.ignored += 1;
    } else if report.accepted == valid && !dropped
        || !report.accepted && !valid && (by_policy || pointer.as_ref().is_some_and(|p| pointers.contains(p)))
    {
        tally.agreed += 1;
        tally.rejected += usize::from(!report.accepted);
    } else {
        tally.disagreements.push(format!("schema {pointers:?}, decoder {:?}\n  {what}", report.error));
    }
}

/// A client that negotiates (`Decoder::negotiating`, as the probe's session reads) takes a
/// v1 answer to its v2 `initialize` as the agent's choice of v1: that answer is read in v1's
/// grammar, and so is the rest of the stream. A capture reader keeps refusing it (above).
#[test]
fn a_negotiating_decoder_reads_a_v1_answer_to_a_v2_initialize_as_v1() {
    let mut decoder = Decoder::new().reading(Protocol::AcpV2).negotiating();
    let ask = session()[0].1.clone();
    assert!(decoder.decode(ask.to_string().as_bytes(), Some(TO_AGENT)).accepted);
    let v1_answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": false}}});
    let report = decoder.decode(v1_answer.to_string().as_bytes(), Some(TO_RUNNER));
    assert!(report.accepted, "{:?}", report.error);
    assert_eq!(decoder.protocol(), Protocol::AcpV1);
    // v1's prompt answer now decodes, v2's removed methods are v1's again.
    let prompt = json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}});
    assert!(decoder.decode(prompt.to_string().as_bytes(), Some(TO_AGENT)).accepted);
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}});
    assert!(decoder.decode(answer.to_string().as_bytes(), Some(TO_RUNNER)).accepted);
    // A version neither grammar reads is refused, negotiating or not.
    let mut decoder = Decoder::new().reading(Protocol::AcpV2).negotiating();
    decoder.decode(ask.to_string().as_bytes(), Some(TO_AGENT));
    let v7 = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 7, "info": {"name": "a", "version": "1"}}});
    let report = decoder.decode(v7.to_string().as_bytes(), Some(TO_RUNNER));
    assert_eq!(report.error.map(|e| e.error), Some(DecodeError::ProtocolVersion { found: "7".into() }));
    assert_eq!(decoder.protocol(), Protocol::AcpV2);
}

fn turn() -> Value {
    json!({"execution": "shell", "shell_commands": 1, "filesystem_commands": 0, "mcp_calls": 0, "model_calls": 2, "wall_time_ms": 900})
}

fn idle(meta: Value) -> Value {
    update(json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn", "_meta": meta}))
}

fn slot(report: &Report, key: &str) -> Option<checkfu_wire::decode::SlotStatus> {
    report.slots.iter().find(|s| s.key == key).map(|s| s.status)
}

/// v2 answers the prompt with a receipt and ends the turn with an idle `state_update`, so
/// `checkfu.turn` rides that member's `_meta` (the catalog's `carrier_v2`): a valid one
/// decodes, a malformed one is dropped (fail-open) with a diagnostic at its JSON Pointer,
/// and one on the receipt is outside its carrier.
#[test]
fn checkfu_turn_rides_the_idle_state_update_under_v2() {
    use checkfu_wire::decode::SlotStatus;
    let report = read(Protocol::AcpV2, &[(TO_RUNNER, idle(json!({"checkfu.turn": turn()})))]).remove(0);
    assert!(report.accepted && report.diagnostics.is_empty(), "{report:?}");
    assert_eq!(slot(&report, "checkfu.turn"), Some(SlotStatus::Decoded));

    let mut lying = turn();
    lying["model_calls"] = json!("0");
    let report = read(Protocol::AcpV2, &[(TO_RUNNER, idle(json!({"checkfu.turn": lying})))]).remove(0);
    assert!(report.accepted, "fidelity is fail-open: {report:?}");
    assert_eq!(slot(&report, "checkfu.turn"), Some(SlotStatus::Dropped));
    assert!(
        report.diagnostics.iter().any(|d| d.contains("`checkfu.turn` dropped") && d.contains("at `/model_calls`")),
        "{:?}",
        report.diagnostics
    );

    // On the receipt, `checkfu.turn` is not where v2 carries it.
    let mut receipt = session()[4..8].to_vec();
    receipt[3].1["result"]["_meta"] = json!({"checkfu.turn": turn()});
    let report = read(Protocol::AcpV2, &receipt).remove(3);
    assert!(report.accepted, "{report:?}");
    assert_eq!(slot(&report, "checkfu.turn"), Some(SlotStatus::Ignored));
    assert!(report.diagnostics.iter().any(|d| d.contains("not carried by this message")), "{:?}", report.diagnostics);
}

/// The authority slots ride v2's `session/new` request as v1's: fail-closed, before any
/// model work, and the cross-field rule holds.
#[test]
fn authority_slots_on_v2_session_new_are_fail_closed() {
    let new =
        |meta: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": [], "_meta": meta}});
    let report = read(Protocol::AcpV2, &[(TO_AGENT, new(json!({"checkfu.builtin_tools": "bash"})))]).remove(0);
    match report.error.map(|e| e.error) {
        Some(DecodeError::AuthorityRejected { slot, .. }) => assert_eq!(slot, "checkfu.builtin_tools"),
        other => panic!("expected an authority rejection, got {other:?}"),
    }
    let report = read(Protocol::AcpV2, &[(TO_AGENT, new(json!({"checkfu.resume": {"version": 1, "state": "b64"}})))]).remove(0);
    assert!(matches!(report.error.map(|e| e.error), Some(DecodeError::MissingRequirement { .. })));
    let report = read(Protocol::AcpV2, &[(TO_AGENT, new(json!({"checkfu.continuity": "fresh"})))]).remove(0);
    assert!(report.accepted, "{report:?}");
}
