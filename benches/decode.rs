//! Decode throughput of the runtime decoder with the full policy, on a mixed stream of ACP
//! messages, against two baselines measured in the same run:
//! - the parse floor: `serde_json::from_slice::<IgnoredAny>` over the same bytes;
//! - parse-plus-validate: `serde_json::Value` plus `jsonschema` validation against the
//!   union of the extension vectors' wire schemas.

use checkfu_wire::decode::Decoder;
use serde_json::{json, Value};

fn main() {
    divan::main();
}

/// One cycle of a realistic turn: updates with and without `checkfu.subagent`, a
/// `session/new` with authority members, a prompt response with `checkfu.turn`, steer
/// and interrupt requests with their acknowledgements.
fn stream() -> Vec<Vec<u8>> {
    let text = "Reading the failing test first; the assertion compares the rendered table against the golden file, so the fix belongs in the renderer rather than in the fixture. ";
    let mut messages = vec![json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/workspace", "mcpServers": [],
        "_meta": {"checkfu.builtin_tools": ["bash", "read", "write", "edit"], "checkfu.continuity": "fresh",
                  "checkfu.runtime_config": {"context_window": 200000, "compaction": {"strategy": "summarize", "trigger_tokens": 160000}},
                  "checkfu.output_schema": {"type": "object", "properties": {"summary": {"type": "string", "maxLength": 2000}}, "required": ["summary"]}}}})];
    for i in 0..20 {
        messages.push(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess-1",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}}));
        messages.push(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess-1",
            "update": {"sessionUpdate": "tool_call", "toolCallId": format!("call-{i}"), "title": "Run tests", "kind": "execute", "status": "pending",
                       "_meta": {"checkfu.subagent": {"phase": "activity", "subagent": "thread-7"}}}}}));
    }
    messages.push(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess-1",
        "update": {"sessionUpdate": "session_info_update", "updatedAt": "2026-11-29T10:00:00Z",
                   "_meta": {"checkfu.subagent": {"phase": "started", "subagent": "thread-7", "name": "researcher"}}}}}));
    messages.push(json!({"jsonrpc": "2.0", "id": 3, "method": "_checkfu/session/steer", "params": {"sessionId": "sess-1", "id": "steer-01", "content": "Prefer the smaller fix."}}));
    messages.push(json!({"jsonrpc": "2.0", "id": 3, "result": {"disposition": "delivered"}}));
    messages.push(json!({"jsonrpc": "2.0", "id": 4, "method": "_checkfu/session/interrupt", "params": {"sessionId": "sess-1"}}));
    messages.push(json!({"jsonrpc": "2.0", "id": 4, "result": {"disposition": "draining"}}));
    messages.push(json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn", "_meta": {"checkfu.turn": {"execution": "shell",
        "shell_commands": 12, "filesystem_commands": 30, "mcp_calls": 2, "model_calls": 9, "wall_time_ms": 84210}}}}));
    messages.iter().map(|m| m.to_string().into_bytes()).collect()
}

fn total_bytes(messages: &[Vec<u8>]) -> usize {
    messages.iter().map(Vec::len).sum()
}

#[divan::bench]
fn parse_floor_ignored_any(bencher: divan::Bencher) {
    let messages = stream();
    bencher.counter(divan::counter::BytesCount::new(total_bytes(&messages))).bench(|| {
        for m in &messages {
            let _ = divan::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(m));
        }
    });
}

#[divan::bench]
fn decoder_full_policy(bencher: divan::Bencher) {
    let messages = stream();
    bencher.counter(divan::counter::BytesCount::new(total_bytes(&messages))).bench(|| {
        let mut decoder = Decoder::new();
        let mut accepted = 0;
        for m in &messages {
            accepted += usize::from(decoder.decode(m, None).accepted);
        }
        assert_eq!(accepted, messages.len());
        accepted
    });
}

#[divan::bench]
fn value_plus_jsonschema(bencher: divan::Bencher) {
    let messages = stream();
    let schema: Value = serde_json::from_str(include_str!("../schemas/acp-v1-extension-vectors.schema.json")).expect("schema");
    let wires: Vec<Value> = schema["properties"]["vectors"]["items"]["anyOf"]
        .as_array()
        .expect("variants")
        .iter()
        .map(|v| v["properties"]["wire"].clone())
        .collect();
    let union = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": schema["$defs"], "anyOf": wires});
    let validator = jsonschema::validator_for(&union).expect("compiles");
    bencher.counter(divan::counter::BytesCount::new(total_bytes(&messages))).bench(|| {
        let mut valid = 0;
        for m in &messages {
            let value: Value = serde_json::from_slice(m).expect("json");
            valid += usize::from(validator.is_valid(&value));
        }
        valid
    });
}

// ---- real SDK traffic ----------------------------------------------------------------------

/// A turn of real traffic recorded from the official TypeScript SDK (every update kind and
/// client method, two concurrent sessions), with each message's direction.
fn sdk_turn() -> Vec<(Vec<u8>, checkfu_wire::decode::WireDirection)> {
    use checkfu_wire::decode::WireDirection;
    let mut out = Vec::new();
    for file in ["ts-turn", "ts-concurrent"] {
        let path = format!("{}/tests/data/sdk-traffic/{file}.capture.jsonl", env!("CARGO_MANIFEST_DIR"));
        for line in std::fs::read_to_string(path).expect("capture").lines() {
            let record: Value = serde_json::from_str(line).expect("record");
            let direction =
                if record["direction"] == "client_to_agent" { WireDirection::RunnerToAgent } else { WireDirection::AgentToRunner };
            out.push((record["message"].to_string().into_bytes(), direction));
        }
    }
    out
}

fn sdk_bytes(messages: &[(Vec<u8>, checkfu_wire::decode::WireDirection)]) -> usize {
    messages.iter().map(|(m, _)| m.len()).sum()
}

#[divan::bench]
fn sdk_parse_floor_ignored_any(bencher: divan::Bencher) {
    let messages = sdk_turn();
    bencher.counter(divan::counter::BytesCount::new(sdk_bytes(&messages))).bench(|| {
        for (m, _) in &messages {
            let _ = divan::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(m));
        }
    });
}

#[divan::bench]
fn sdk_decoder_full_acp_validation(bencher: divan::Bencher) {
    let messages = sdk_turn();
    bencher.counter(divan::counter::BytesCount::new(sdk_bytes(&messages))).bench(|| {
        let mut decoder = Decoder::new();
        let mut accepted = 0;
        for (m, direction) in &messages {
            accepted += usize::from(decoder.decode(m, Some(*direction)).accepted);
        }
        assert_eq!(accepted, messages.len());
        accepted
    });
}

/// `Value` plus `jsonschema`, each message's params or result validated against its
/// method's ACP definition (which definition each message needs is worked out before
/// timing, which favours this baseline).
#[divan::bench]
fn sdk_value_plus_jsonschema_per_method(bencher: divan::Bencher) {
    let messages = sdk_turn();
    let schema: Value = serde_json::from_str(include_str!("../schemas/acp-v1.schema.json")).expect("schema");
    let registry = jsonschema::Registry::new().add("urn:acp", schema.clone()).and_then(|r| r.prepare()).expect("registry");
    let mut validators = std::collections::HashMap::new();
    let mut plan = Vec::new();
    let mut pending: std::collections::HashMap<(bool, String), String> = std::collections::HashMap::new();
    for (m, direction) in &messages {
        let value: Value = serde_json::from_slice(m).expect("json");
        let to_agent = *direction == checkfu_wire::decode::WireDirection::RunnerToAgent;
        let (method, part, suffix) = match value["method"].as_str() {
            Some(method) => {
                if value.get("id").is_some() {
                    pending.insert((to_agent, value["id"].to_string()), method.to_string());
                }
                (Some(method.to_string()), "params", if value.get("id").is_some() { "Request" } else { "Notification" })
            }
            None => (pending.remove(&(!to_agent, value["id"].to_string())), "result", "Response"),
        };
        let def = method.and_then(|method| {
            schema["$defs"]
                .as_object()?
                .iter()
                .find(|(n, d)| d["x-method"] == method.as_str() && n.ends_with(suffix))
                .map(|(n, _)| n.clone())
        });
        if let Some(def) = &def {
            validators.entry(def.clone()).or_insert_with(|| {
                jsonschema::options().with_registry(&registry).build(&json!({"$ref": format!("urn:acp#/$defs/{def}")})).expect("compiles")
            });
        }
        plan.push((def, part));
    }
    bencher.counter(divan::counter::BytesCount::new(sdk_bytes(&messages))).bench(|| {
        let mut valid = 0;
        for ((m, _), (def, part)) in messages.iter().zip(&plan) {
            let value: Value = serde_json::from_slice(m).expect("json");
            valid += match def {
                Some(def) => usize::from(validators[def].is_valid(&value[*part])),
                None => 1,
            };
        }
        valid
    });
}

/// The official Rust SDK's types (`agent-client-protocol-schema`), used as a user of that
/// crate would: each line into a small envelope, then `ClientRequest::from_method_and_params`
/// and its siblings by direction, with each request's method remembered per direction for
/// its response.
#[divan::bench]
fn sdk_official_rust_types(bencher: divan::Bencher) {
    use agent_client_protocol_schema::v1::{
        AgentNotification, AgentRequest, AgentResponse, ClientNotification, ClientRequest, ClientResponse,
    };
    use checkfu_wire::decode::WireDirection;

    #[derive(serde::Deserialize)]
    struct Envelope {
        #[serde(default)]
        id: Option<agent_client_protocol_schema::v1::RequestId>,
        method: Option<String>,
        #[serde(default)]
        params: Option<Value>,
        result: Option<Value>,
        #[allow(dead_code)]
        error: Option<Value>,
    }

    let messages = sdk_turn();
    bencher.counter(divan::counter::BytesCount::new(sdk_bytes(&messages))).bench(|| {
        let mut pending: std::collections::HashMap<(bool, String), String> = std::collections::HashMap::new();
        let mut typed = 0;
        for (m, direction) in &messages {
            let Ok(envelope) = serde_json::from_slice::<Envelope>(m) else { continue };
            let to_agent = *direction == WireDirection::RunnerToAgent;
            let params = envelope.params.unwrap_or(Value::Null);
            let ok = match (envelope.method, envelope.id) {
                (Some(method), Some(id)) => {
                    pending.insert((to_agent, id.to_string()), method.clone());
                    if to_agent {
                        ClientRequest::from_method_and_params(&method, &params).is_ok()
                    } else {
                        AgentRequest::from_method_and_params(&method, &params).is_ok()
                    }
                }
                (Some(method), None) if to_agent => ClientNotification::from_method_and_params(&method, &params).is_ok(),
                (Some(method), None) => AgentNotification::from_method_and_params(&method, &params).is_ok(),
                (None, Some(id)) => match (pending.remove(&(!to_agent, id.to_string())), envelope.result) {
                    (Some(method), Some(result)) if !to_agent => AgentResponse::from_method_and_result(&method, result).is_ok(),
                    (Some(method), Some(result)) => ClientResponse::from_method_and_result(&method, result).is_ok(),
                    _ => true,
                },
                (None, None) => false,
            };
            typed += usize::from(ok);
        }
        typed
    });
}
