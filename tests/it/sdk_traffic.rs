//! Real traffic recorded from both official ACP SDKs (`tests/data/sdk-traffic/`, recorded
//! by `tests/sdk-traffic/record.sh`): every message decodes (as a capture with
//! directions, as one-direction files, and interleaved without directions), the SDKs'
//! own malformed probes are rejected with a pointer, and shape-broken variants of every
//! real request, notification and result are rejected exactly when the official schema
//! rejects them (or dropped, where ACP marks a member lenient).

use std::path::{Path, PathBuf};

use checkfu_wire::decode::{Decoder, Report, WireDirection};
use serde_json::{json, Value};

fn data() -> PathBuf {
    crate::support::project::project_root().join("tests/data/sdk-traffic")
}

fn files(suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data()).expect("corpus").filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.retain(|p| p.to_string_lossy().ends_with(suffix));
    files.sort();
    assert!(!files.is_empty(), "no {suffix} files");
    files
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).expect("read").lines().filter(|l| !l.trim().is_empty()).map(String::from).collect()
}

fn direction(record: &Value) -> WireDirection {
    match record["direction"].as_str() {
        Some("client_to_agent") => WireDirection::RunnerToAgent,
        Some("agent_to_client") => WireDirection::AgentToRunner,
        other => panic!("direction {other:?}"),
    }
}

fn rejections(reports: &[Report]) -> Vec<String> {
    reports.iter().enumerate().filter(|(_, r)| !r.accepted).map(|(i, r)| format!("line {}: {:?}", i + 1, r.error)).collect()
}

#[test]
fn every_recorded_message_decodes_in_every_reading() {
    let mut messages = 0;
    for capture in files(".capture.jsonl") {
        let name = capture.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let invalid_probe = name.contains("-invalid.");
        let records: Vec<Value> = lines(&capture).iter().map(|l| serde_json::from_str(l).expect("record")).collect();
        // With directions.
        let mut decoder = Decoder::new();
        let with: Vec<Report> = records.iter().map(|r| decoder.decode(r["message"].to_string().as_bytes(), Some(direction(r)))).collect();
        // Interleaved, no directions.
        let interleaved = capture.with_file_name(name.replace(".capture.", ".interleaved."));
        let mut decoder = Decoder::new();
        let without: Vec<Report> = lines(&interleaved).iter().map(|l| decoder.decode(l.as_bytes(), None)).collect();
        // Each direction alone, as `--direction` reads it.
        let mut alone = Vec::new();
        for (suffix, way) in [(".client_to_agent.", WireDirection::RunnerToAgent), (".agent_to_client.", WireDirection::AgentToRunner)] {
            let mut decoder = Decoder::new();
            alone.extend(
                lines(&capture.with_file_name(name.replace(".capture.", suffix))).iter().map(|l| decoder.decode(l.as_bytes(), Some(way))),
            );
        }
        messages += records.len();
        if invalid_probe {
            // The three malformed requests the SDKs' own agents refuse with -32602.
            for reports in [&with, &without, &alone] {
                let rejected: Vec<&Report> = reports.iter().filter(|r| !r.accepted).collect();
                assert_eq!(rejected.len(), 3, "{name}: {:?}", rejections(reports));
                for r in rejected {
                    let error = serde_json::to_value(&r.error).expect("error");
                    assert_eq!(error["code"], "invalid_params", "{name}: {error}");
                    assert!(error.get("pointer").is_some(), "{name}: {error}");
                }
            }
        } else {
            for (reading, reports) in [("with directions", &with), ("interleaved", &without), ("one direction", &alone)] {
                assert!(rejections(reports).is_empty(), "{name} {reading}: {:?}", rejections(reports));
            }
            // Every response was matched to its request.
            let untyped: Vec<usize> =
                with.iter().enumerate().filter(|(_, r)| r.method.is_none() && r.extension.is_none()).map(|(i, _)| i + 1).collect();
            let foreign_answers = with.iter().filter(|r| r.diagnostics.iter().any(|d| d.contains("unsupported extension request"))).count();
            assert!(untyped.len() <= foreign_answers, "{name}: unmatched responses at lines {untyped:?}");
        }
    }
    assert!(messages > 250, "{messages}");
}

/// The ACP definition of a message's params or result, by `x-method` and its suffix.
pub(crate) fn definition<'s>(schema: &'s Value, method: &str, suffix: &str) -> Option<&'s str> {
    schema["$defs"]
        .as_object()?
        .iter()
        .find(|(name, def)| def["x-method"] == method && name.ends_with(suffix))
        .map(|(name, _)| name.as_str())
}

/// Copies of a params or result object with one thing broken.
pub(crate) fn broken(body: &Value, required: &[String]) -> Vec<Value> {
    let mut out = vec![json!([]), json!("text")];
    if let Value::Object(object) = body {
        for name in required {
            let mut without = object.clone();
            if without.remove(name).is_some() {
                out.push(Value::Object(without));
            }
        }
        for (name, value) in object {
            for wrong in [json!(null), json!(-1.5), json!("zz-not-allowed"), json!([{"zz": 1}]), json!({"zz": []})] {
                if wrong != *value {
                    let mut copy = object.clone();
                    copy.insert(name.clone(), wrong);
                    out.push(Value::Object(copy));
                }
            }
        }
    }
    out
}

#[test]
fn broken_variants_of_real_messages_are_rejected_exactly_when_the_schema_rejects_them() {
    let schema: Value =
        serde_json::from_slice(&std::fs::read(crate::support::project::project_root().join("schemas/acp-v1.schema.json")).expect("schema"))
            .expect("json");
    let registry = jsonschema::Registry::new().add("urn:acp", schema.clone()).and_then(|r| r.prepare()).expect("registry");
    let (mut agreed, mut rejected, mut lenient, mut families) = (0, 0, 0, std::collections::BTreeSet::new());
    let mut ignored_fidelity = 0;
    let mut disagreements = Vec::new();
    for capture in files(".capture.jsonl").into_iter().filter(|p| p.to_string_lossy().contains("ts-")) {
        let records: Vec<Value> = lines(&capture).iter().map(|l| serde_json::from_str(l).expect("record")).collect();
        // Requests by (direction, id), for the responses.
        let mut asked: std::collections::HashMap<(String, String), Value> = std::collections::HashMap::new();
        for (i, record) in records.iter().enumerate() {
            let message = &record["message"];
            let way = record["direction"].as_str().unwrap_or_default().to_string();
            if message.get("method").is_some() && message.get("id").is_some() {
                asked.insert((way.clone(), message["id"].to_string()), message.clone());
            }
            if message.get("method").is_none() {
                let back = if way == "client_to_agent" { "agent_to_client" } else { "client_to_agent" };
                let Some(request) = asked.get(&(back.to_string(), message["id"].to_string())) else { continue };
                let (Some(result), Some(method)) = (message.get("result"), request["method"].as_str()) else { continue };
                let Some(def) = definition(&schema, method, "Response") else { continue };
                let oracle = jsonschema::options()
                    .with_registry(&registry)
                    .build(&json!({"$ref": format!("urn:acp#/$defs/{def}")}))
                    .expect("oracle");
                let required: Vec<String> = schema["$defs"][def]["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r.as_str().map(String::from))
                    .collect();
                for mutated in broken(result, &required) {
                    let mut copy = message.clone();
                    copy["result"] = mutated.clone();
                    let mut decoder = Decoder::new();
                    let ask_way = if back == "client_to_agent" { WireDirection::RunnerToAgent } else { WireDirection::AgentToRunner };
                    decoder.decode(request.to_string().as_bytes(), Some(ask_way));
                    let report = decoder.decode(copy.to_string().as_bytes(), Some(direction(record)));
                    let valid = oracle.is_valid(&mutated);
                    let dropped = report.diagnostics.iter().any(|d| d.starts_with("lenient ACP member dropped"));
                    // The closed fields keep their own checks (protocol version, stop reason).
                    let policy = serde_json::to_value(&report.error).ok().and_then(|e| e["code"].as_str().map(String::from));
                    let by_policy = matches!(policy.as_deref(), Some("protocol_version" | "unknown_stop_reason"));
                    if report.accepted && !valid && dropped {
                        lenient += 1;
                    } else if report.accepted == valid && !dropped || !report.accepted && valid && by_policy {
                        agreed += 1;
                        if !report.accepted {
                            rejected += 1;
                            families.insert(def.to_string());
                        }
                    } else {
                        disagreements.push(format!("{method} result: schema says {valid}, decoder {:?}\n  {copy}", report.error));
                    }
                }
                continue;
            }
            let Some(method) = message["method"].as_str() else { continue };
            let Some(params) = message.get("params") else { continue };
            let suffix = if message.get("id").is_some() { "Request" } else { "Notification" };
            let Some(def) = definition(&schema, method, suffix) else { continue };
            if capture.to_string_lossy().contains("-invalid.") || i == 0 && method != "initialize" {
                continue;
            }
            let oracle =
                jsonschema::options().with_registry(&registry).build(&json!({"$ref": format!("urn:acp#/$defs/{def}")})).expect("oracle");
            if !oracle.is_valid(params) {
                continue; // the SDK's own probe, not a real message
            }
            let required: Vec<String> =
                schema["$defs"][def]["required"].as_array().into_iter().flatten().filter_map(|r| r.as_str().map(String::from)).collect();
            for mutated in broken(params, &required) {
                let mut copy = message.clone();
                copy["params"] = mutated.clone();
                let report = Decoder::new().decode(copy.to_string().as_bytes(), Some(direction(record)));
                let valid = oracle.is_valid(&mutated);
                let dropped = report.diagnostics.iter().any(|d| d.starts_with("lenient ACP member dropped"));
                if report.accepted && !valid && dropped {
                    // ACP's own leniency: a member marked x-deserialize-* was dropped.
                    lenient += 1;
                    continue;
                }
                if report.accepted && !valid && report.ignored.is_some() {
                    // Fail-open fidelity: an update of a kind the catalog names optional
                    // fidelity, broken inside the update, is ignored (never handed on).
                    let kind = mutated["update"]["sessionUpdate"].as_str().unwrap_or_default();
                    assert!(checkfu_wire::decode::tables::FIDELITY_UPDATE_KINDS.contains(&kind), "{copy}");
                    ignored_fidelity += 1;
                    continue;
                }
                if report.accepted != valid || dropped {
                    disagreements.push(format!("{method}: schema says {valid}, decoder {:?}\n  {copy}", report.error));
                } else {
                    agreed += 1;
                    if !valid {
                        rejected += 1;
                        families.insert(def.to_string());
                        let error = serde_json::to_value(&report.error).expect("error");
                        assert!(error.get("pointer").is_some() || error["code"] == "unknown_update_kind", "{error}");
                    }
                }
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreement(s):\n{}",
        disagreements.len(),
        disagreements.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(families.len() >= 30, "{families:?}");
    assert!(lenient > 0, "some broken variant hits a lenient member");
    eprintln!(
        "{agreed} broken variants agree with the schema ({rejected} rejected), {lenient} dropped leniently, {ignored_fidelity} fidelity updates ignored, over {} definitions",
        families.len()
    );
}

#[test]
fn acp_leniency_drops_marked_members_with_a_diagnostic() {
    // A real tool_call_update, with a `kind` and a content item no schema admits: both are
    // marked lenient (x-deserialize-default-on-error, x-deserialize-skip-invalid-items).
    let update = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {
        "sessionUpdate": "tool_call_update", "toolCallId": "t1", "kind": "teleport",
        "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}, {"type": "hologram"}]}}});
    let report = Decoder::new().decode(update.to_string().as_bytes(), Some(WireDirection::AgentToRunner));
    assert!(report.accepted, "{report:?}");
    let notes: Vec<&String> = report.diagnostics.iter().filter(|d| d.starts_with("lenient ACP member dropped")).collect();
    assert_eq!(notes.len(), 2, "{report:?}");
    assert!(notes.iter().any(|d| d.contains("/kind")) && notes.iter().any(|d| d.contains("/1")), "{notes:?}");
    // Not marked: a tool call without its id is rejected with a pointer.
    let mut broken = update.clone();
    broken["params"]["update"].as_object_mut().expect("object").remove("toolCallId");
    let report = Decoder::new().decode(broken.to_string().as_bytes(), Some(WireDirection::AgentToRunner));
    assert!(!report.accepted, "{report:?}");
    // The generated check itself stays strict, as the schema is.
    let strict =
        checkfu_wire_typed::schemas::acp_v1::checks::DEFINITIONS.iter().find(|d| d.name == "SessionNotification").expect("definition");
    assert!((strict.check)(&update["params"]).is_err());
}
