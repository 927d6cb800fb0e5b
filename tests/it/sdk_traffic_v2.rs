//! ACP v2 traffic recorded from the official SDK's v2 API (`tests/data/sdk-traffic/v2/`,
//! recorded by `tests/sdk-traffic/record.sh` from `tests/sdk-traffic/ts-v2/`): every line
//! decodes with the v2 decoder in every reading and validates against the official v2
//! schema; the recording holds the v2 turn it was made for; and broken variants of every
//! recorded line, one level deep, are rejected where `jsonschema` rejects them, at a JSON
//! Pointer it names too, or dropped where ACP marks the member lenient.

use std::path::PathBuf;

use checkfu_wire::decode::{Decoder, Protocol, Report, WireDirection};
use serde_json::{json, Value};

use crate::decode_v2::agreement;
use crate::sdk_traffic::broken;

fn capture(reading: &str) -> PathBuf {
    crate::support::project::project_root().join(format!("tests/data/sdk-traffic/v2/ts-v2-turn.{reading}.jsonl"))
}

fn lines(reading: &str) -> Vec<String> {
    let text = std::fs::read_to_string(capture(reading)).expect("the recorded v2 traffic");
    text.lines().filter(|l| !l.trim().is_empty()).map(String::from).collect()
}

fn recorded() -> Vec<(WireDirection, Value)> {
    lines("capture")
        .iter()
        .map(|l| {
            let record: Value = serde_json::from_str(l).expect("record");
            let way = match record["direction"].as_str() {
                Some("client_to_agent") => WireDirection::RunnerToAgent,
                Some("agent_to_client") => WireDirection::AgentToRunner,
                other => panic!("direction {other:?}"),
            };
            (way, record["message"].clone())
        })
        .collect()
}

/// Reports refused, or (`strict`) accepted with a diagnostic.
fn refused(reports: &[Report], strict: bool) -> Vec<String> {
    let bad = |r: &&Report| !r.accepted || strict && !r.diagnostics.is_empty();
    reports.iter().filter(bad).map(|r| format!("{r:?}")).collect()
}

#[test]
fn recorded_v2_traffic_decodes_in_every_reading() {
    let with = {
        let mut decoder = Decoder::new().reading(Protocol::AcpV2);
        recorded().iter().map(|(way, m)| decoder.decode(m.to_string().as_bytes(), Some(*way))).collect::<Vec<_>>()
    };
    let interleaved = {
        let mut decoder = Decoder::new().reading(Protocol::AcpV2);
        lines("interleaved").iter().map(|l| decoder.decode(l.as_bytes(), None)).collect::<Vec<_>>()
    };
    let mut alone = Vec::new();
    for (reading, way) in [("client_to_agent", WireDirection::RunnerToAgent), ("agent_to_client", WireDirection::AgentToRunner)] {
        let mut decoder = Decoder::new().reading(Protocol::AcpV2);
        alone.extend(lines(reading).iter().map(|l| decoder.decode(l.as_bytes(), Some(way))));
    }
    // Read one direction at a time, answers are untyped (their requests are in the other file).
    for (reading, reports, strict) in
        [("with directions", &with, true), ("interleaved", &interleaved, true), ("one direction", &alone, false)]
    {
        assert_eq!(reports.len(), recorded().len(), "{reading}");
        assert!(refused(reports, strict).is_empty(), "{reading}: {:?}", refused(reports, strict));
    }
    // Every answer was matched to its request and typed by it.
    assert!(with.iter().all(|r| r.method.is_some()), "{with:?}");
    // Read as v1, the same recording is refused.
    let mut v1 = Decoder::new();
    assert!(recorded().iter().any(|(way, m)| !v1.decode(m.to_string().as_bytes(), Some(*way)).accepted));
}

/// The recording holds what it was made to show; a re-recording that lost a step fails here.
#[test]
fn the_recording_holds_the_v2_turn() {
    let s = recorded();
    let messages: Vec<&Value> = s.iter().map(|(_, m)| m).collect();
    let updates: Vec<&Value> = messages.iter().filter(|m| m["method"] == "session/update").map(|m| &m["params"]["update"]).collect();
    let init = messages.iter().find(|m| m["id"] == 0 && m.get("result").is_some()).expect("initialize answered");
    assert_eq!(init["result"]["protocolVersion"], 2);
    for side in [&messages[0]["params"], &init["result"]] {
        assert!(side["info"]["name"].is_string() && side["info"]["version"].is_string(), "{side}");
        let markers = side["capabilities"].as_object().expect("capabilities");
        assert!(!markers.is_empty() && markers.values().all(Value::is_object), "object markers, never booleans: {side}");
    }
    // Each prompt is answered with a receipt whose messageId the echoed user message carries.
    let prompts: Vec<&Value> = messages.iter().copied().filter(|m| m["method"] == "session/prompt").collect();
    assert_eq!(prompts.len(), 2);
    for prompt in prompts {
        let receipt = messages.iter().find(|m| m["id"] == prompt["id"] && m.get("result").is_some()).expect("receipt");
        let id = &receipt["result"]["messageId"];
        assert!(updates.iter().any(|u| u["sessionUpdate"] == "user_message" && u["messageId"] == *id), "{id}");
    }
    let kinds: Vec<&str> = updates.iter().filter_map(|u| u["sessionUpdate"].as_str()).collect();
    for kind in ["agent_message_chunk", "agent_message", "tool_call_update"] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }
    let states: Vec<String> =
        updates.iter().filter(|u| u["sessionUpdate"] == "state_update").map(|u| format!("{}:{}", u["state"], u["stopReason"])).collect();
    assert_eq!(states, [r#""running":null"#, r#""idle":"end_turn""#, r#""running":null"#, r#""idle":"cancelled""#]);
    let cancel = messages.iter().position(|m| m["method"] == "session/cancel").expect("a cancel");
    assert_eq!(messages[cancel + 1]["params"]["update"]["stopReason"], "cancelled", "the cancel is confirmed by an idle");
}

/// Copies of a body with one thing broken, and copies with one thing broken inside each
/// object member (the update inside `session/update`, the capabilities, `info`).
fn deep(body: &Value, required: &[String]) -> Vec<Value> {
    let mut out = broken(body, required);
    for (name, member) in body.as_object().into_iter().flatten() {
        let keys: Vec<String> = member.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
        for inner in broken(member, &keys).into_iter().skip(2) {
            let mut copy = body.clone();
            copy[name] = inner;
            out.push(copy);
        }
    }
    out
}

#[test]
fn broken_variants_of_recorded_v2_traffic_agree_with_the_official_v2_schema() {
    let tally = agreement(&recorded(), deep);
    assert!(tally.disagreements.is_empty(), "{} disagreement(s):\n{}", tally.disagreements.len(), tally.disagreements.join("\n"));
    assert!(tally.rejected > 100 && tally.lenient > 0, "{tally:?}");
    eprintln!("broken variants of recorded v2 traffic: {tally:?}");
}

/// The capability members are `x-deserialize-default-on-error` in the official schema: a
/// boolean where v2 wants an object marker is invalid, and read as absent by the SDK. The
/// decoder drops each recorded one with a diagnostic that names it, never takes it as declared.
#[test]
fn recorded_capabilities_made_boolean_are_dropped_as_the_schema_marks_them() {
    let s = recorded();
    let mut dropped = 0;
    for i in [0, 1] {
        let part = if i == 0 { "params" } else { "result" };
        let names: Vec<String> = s[i].1[part]["capabilities"].as_object().expect("capabilities").keys().cloned().collect();
        for name in names {
            let mut copy = s[..=i].to_vec();
            copy[i].1[part]["capabilities"][&name] = json!(true);
            let mut decoder = Decoder::new().reading(Protocol::AcpV2);
            let report = copy.iter().map(|(way, m)| decoder.decode(m.to_string().as_bytes(), Some(*way))).last().expect("report");
            assert!(report.accepted, "{name}: {:?}", report.error);
            // The diagnostic's pointer is relative to the object holding the lenient member.
            let note = format!("): /{name}: ");
            assert!(report.diagnostics.iter().any(|d| d.starts_with("lenient ACP member dropped") && d.contains(&note)), "{report:?}");
            dropped += 1;
        }
    }
    assert!(dropped >= 4, "{dropped}");
}
