//! The decoder never panics, whatever it is fed: arbitrary bytes, arbitrary JSON, and
//! mutations of real messages (the shapes most likely to reach deep into the policy).

use checkfu_wire::decode::{Decoder, WireDirection};
use proptest::prelude::*;
use serde_json::{json, Value};

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        "[a-z_./]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("2.0"),
            Just("session/new"),
            Just("session/update"),
            Just("initialize"),
            Just("checkfu.subagent"),
            Just("checkfu.resume"),
            Just("_checkfu/session/steer"),
            Just("agent.spawn"),
            Just("_goose/tools"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        let keys = prop_oneof![
            Just("jsonrpc"),
            Just("id"),
            Just("method"),
            Just("params"),
            Just("result"),
            Just("error"),
            Just("_meta"),
            Just("update"),
            Just("sessionUpdate"),
            Just("stopReason"),
            Just("protocolVersion"),
            Just("checkfu.turn"),
            Just("checkfu.capabilities"),
            Just("checkfu.output_schema"),
            Just("checkfu.continuity"),
            Just("code"),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((keys, inner), 0..8)
                .prop_map(|pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

fn directions() -> impl Strategy<Value = Option<WireDirection>> {
    prop_oneof![Just(None), Just(Some(WireDirection::AgentToRunner)), Just(Some(WireDirection::RunnerToAgent))]
}

/// Real messages of every family, for byte-level mutation.
fn seeds() -> Vec<String> {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": [],
            "_meta": {"checkfu.continuity": "fresh", "checkfu.builtin_tools": ["bash"], "vendor.x": {"a": [1, 2.5e3]},
                      "checkfu.output_schema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {}}}}}}),
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "tool_call",
            "toolCallId": "c1", "content": [{"type": "text", "text": "é\n"}], "_meta": {"checkfu.subagent": {"phase": "activity", "subagent": "t"}}}}}),
        json!({"jsonrpc": "2.0", "id": "p", "result": {"stopReason": "end_turn", "_meta": {"checkfu.turn": {"execution": "shell",
            "shell_commands": 1, "filesystem_commands": 2, "mcp_calls": 0, "model_calls": 3, "wall_time_ms": 12}}}}),
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {}, "_meta": {"checkfu.capabilities": {"subagents": "observed"}}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "_checkfu/session/steer", "params": {"sessionId": "s", "id": "e", "content": "x"}}),
        json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "no", "data": {"k": [null, true]}}}),
        json!({"jsonrpc": "2.0", "id": "g", "method": "_goose/tools", "params": {"session_id": "s"}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect()
}

/// Bytes that change what JSON means where they land: structure, escapes, number parts,
/// a lone surrogate escape and a multibyte character.
fn mutation() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::sample::select(vec![
            "\\", "\"", "{", "}", "[", "]", ",", ":", "0", "-", "e", "E", "+", ".", "1e400", "\\ud800", "\\u00e9", "é", " ", "\t", "\u{1}",
            "null", "[[[[", "]]]]",
        ])
        .prop_map(|s: &str| s.as_bytes().to_vec()),
        Just(Vec::new()),
    ]
}

/// Raw JSON texts serde_json's `Value` refuses or treats specially, to put where a value
/// (or, the strings among them, a key) was.
const NASTY: &[&str] = &[
    "1e400",
    "-1e400",
    "\"\\ud800\"",
    "\"\\udc00x\"",
    "\"\\ud83d\\ude00\"",
    "\"\\u0000\"",
    "\"\u{1}\"",
    "1.5e308",
    "123456789012345678901234567890",
    "[[[[[[[[[[1]]]]]]]]]]",
    "{\"a\":{\"b\":[]}}",
    "\"\\q\"",
    "tru",
    "01",
];

/// Whether every number of `value` is within an `f64`'s reach. serde_json's defaults refuse
/// `1e400` ("number out of range") and so does the decoder; this build's serde_json keeps
/// numbers' texts (`arbitrary_precision`, the `exact-numbers` feature), whose `Value` holds
/// it, so the range is checked here to ask what serde_json's defaults would say.
fn within_f64(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.as_f64().is_some(),
        Value::Array(items) => items.iter().all(within_f64),
        Value::Object(members) => members.values().all(within_f64),
        _ => true,
    }
}

/// A message the decoder accepts parses as a `Value` on serde_json's defaults; one it calls
/// bad JSON does not.
fn agrees_with_serde_json(bytes: &[u8]) -> Result<(), TestCaseError> {
    let report = Decoder::new().decode(bytes, None);
    let parses = serde_json::from_slice::<Value>(bytes).is_ok_and(|v| within_f64(&v));
    if report.accepted {
        prop_assert!(parses, "accepted but serde_json refuses: {}", String::from_utf8_lossy(bytes));
    }
    let code = report.error.as_ref().map(|e| serde_json::to_value(&e.error).expect("serializes")["code"].clone());
    if matches!(code.as_ref().and_then(Value::as_str), Some("invalid_json" | "invalid_utf8" | "too_deep")) {
        prop_assert!(!parses, "called bad JSON but serde_json parses it: {}", String::from_utf8_lossy(bytes));
    }
    Ok(())
}

/// What a chosen value or key is replaced by before the hostile text is put in its place.
const HOLE: &str = "@@hole@@";

/// Counts the places in `value` where a value or a key sits, in pre-order.
fn places(value: &Value, count: &mut usize) {
    *count += 1;
    match value {
        Value::Array(items) => items.iter().for_each(|v| places(v, count)),
        Value::Object(map) => map.values().for_each(|v| {
            *count += 1;
            places(v, count)
        }),
        _ => {}
    }
}

/// Replaces the value (or key) at pre-order `target` with a placeholder string, returning
/// whether it was a key.
fn mark(value: &mut Value, target: usize, count: &mut usize) -> Option<bool> {
    if *count == target {
        *value = Value::String(HOLE.into());
        return Some(false);
    }
    *count += 1;
    match value {
        Value::Array(items) => items.iter_mut().find_map(|v| mark(v, target, count)),
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if *count == target {
                    let v = map.shift_remove(&key).expect("present");
                    map.insert(HOLE.into(), v);
                    return Some(true);
                }
                *count += 1;
                if let Some(found) = map.get_mut(&key).and_then(|v| mark(v, target, count)) {
                    return Some(found);
                }
            }
            None
        }
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// The same agreement, for hostile texts put exactly where a value or key of a real
    /// message sits: an id, an error's data, a skipped member, a `_meta` member.
    #[test]
    fn hostile_values_anywhere_are_refused_as_serde_json_refuses_them(seed in 0usize..7, place in any::<usize>(), nasty in 0usize..NASTY.len()) {
        let mut value: Value = serde_json::from_str(&seeds()[seed]).expect("seed");
        let mut total = 0;
        places(&value, &mut total);
        let is_key = mark(&mut value, place % total, &mut 0).expect("a place");
        let text = NASTY[nasty];
        if is_key && !text.starts_with('"') {
            return Ok(());
        }
        let bytes = value.to_string().replacen(&format!("\"{HOLE}\""), text, 1).into_bytes();
        agrees_with_serde_json(&bytes)?;
    }

    /// Whatever the decoder accepts, a consumer parsing it with serde_json's defaults can
    /// parse too; and when the decoder calls a line bad JSON, serde_json agrees.
    #[test]
    fn accepted_messages_parse_and_bad_json_is_bad_json(
        seed in 0usize..7, at in 0usize..600, cut in 0usize..3, insert in mutation(),
    ) {
        let mut bytes = seeds()[seed].clone().into_bytes();
        let at = at % (bytes.len() + 1);
        let end = (at + cut).min(bytes.len());
        bytes.splice(at..end, insert);
        agrees_with_serde_json(&bytes)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512), direction in directions()) {
        let report = Decoder::new().decode(&bytes, direction);
        prop_assert!(report.accepted || report.error.is_some());
    }

    #[test]
    fn arbitrary_json_never_panics(value in arbitrary_json(), direction in directions()) {
        let mut decoder = Decoder::new();
        let bytes = value.to_string();
        let report = decoder.decode(bytes.as_bytes(), direction);
        prop_assert!(report.accepted || report.error.is_some());
        // A second message through the same decoder exercises the pending-request path.
        let _ = decoder.decode(bytes.as_bytes(), direction);
    }

    #[test]
    fn truncated_and_spliced_messages_never_panic(cut in 0usize..400, splice in any::<u8>()) {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": [],
            "_meta": {"checkfu.continuity": "same_run_resume", "checkfu.resume": {"version": 1, "state": "x"},
                      "checkfu.output_schema": {"type": "object", "properties": {"a": {"pattern": "^[a-z]{1,3}$"}}}}}}).to_string();
        let mut bytes = message.into_bytes();
        let at = cut.min(bytes.len());
        bytes.truncate(at);
        bytes.push(splice);
        let report = Decoder::new().decode(&bytes, None);
        prop_assert!(report.accepted || report.error.is_some());
    }
}
