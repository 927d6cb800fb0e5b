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
            Just("2.0"), Just("session/new"), Just("session/update"), Just("initialize"), Just("checkfu.subagent"),
            Just("checkfu.resume"), Just("_checkfu/session/steer"), Just("agent.spawn"), Just("_goose/tools"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        let keys = prop_oneof![
            Just("jsonrpc"), Just("id"), Just("method"), Just("params"), Just("result"), Just("error"), Just("_meta"),
            Just("update"), Just("sessionUpdate"), Just("stopReason"), Just("protocolVersion"), Just("checkfu.turn"),
            Just("checkfu.capabilities"), Just("checkfu.output_schema"), Just("checkfu.continuity"), Just("code"),
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

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
