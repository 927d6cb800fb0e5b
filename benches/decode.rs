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
