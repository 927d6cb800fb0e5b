//! A declared `structured_output`, exercised on the fixture agent: `session/new` carries an
//! output schema (the probe's own when none is given), the relay answers the first request
//! for it with a value that breaks it, and the step passes only when the relay saw the
//! exact schema the way the declaration says and the turn's final value validates and was
//! served. Each hostile twin fails naming the value it does not serve, and does not realize
//! it; undeclared, the step is skipped.

use serde_json::{json, Value};

use crate::probe_support::{self, Run, AGENT};

/// The fixture agent with `declare` and `switches`, probed with 5 s steps, no cancellation
/// (the step under test comes before it) and `options`.
fn probe(options: &[&str], declare: &str, switches: &[&str]) -> Run {
    let mut all = vec!["--step-timeout", "5", "--no-cancellation"];
    all.extend_from_slice(options);
    let mut harness = vec![AGENT, "--declare", declare];
    harness.extend_from_slice(switches);
    probe_support::probe(&all, &harness)
}

/// The calls of `run`'s structured turn in the relay's record: the turn of the broken answer,
/// else the second (the one after the prompt's, when no other declared value adds a turn).
fn structured_calls(run: &Run) -> Vec<Value> {
    let calls = run.plane()["calls"].as_array().cloned().unwrap_or_default();
    let turn = calls.iter().find(|c| c["structured_broken"] == true).map_or(json!(2), |c| c["turn"].clone());
    calls.into_iter().filter(|c| c["turn"] == turn).collect()
}

/// `run` failed on `structured_output`, naming the declared `value` and saying `fact`, and
/// realized no mechanism.
fn fails_naming(run: &Run, value: &str, fact: &str) {
    assert_eq!(run.status, 1, "{}", run.pretty());
    let (status, reason) = run.step("structured_output");
    assert_eq!(status, "failed", "{}", run.pretty());
    assert!(reason.contains(&format!("`structured_output: {value}`")) && reason.contains(fact), "{reason}");
    assert_eq!(run.json["admission"]["realized"].get("structured_output"), None);
}

#[test]
fn response_format_served_honestly_passes_on_the_probes_own_schema() {
    // Beside every other declared value: the steer reaches the model after the value, the
    // subagent asks without the schema, and the scoping and staged-files turns run their tools
    // and read their links under it.
    let run = probe(&[], "subagents,steer,interrupt,builtin_tool_scoping,staged_files,structured_output", &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.step("structured_output").0, "passed", "{}", run.pretty());
    assert_eq!(run.json["admission"]["realized"]["structured_output"], "response_format");
    let calls = structured_calls(&run);
    let first = calls.iter().find(|c| c["structured_output"].is_string()).expect("a structured call");
    assert_eq!(
        (&first["structured_output"], &first["schema_exact"], &first["structured_broken"]),
        (&json!("response_format"), &json!(true), &json!(true))
    );
    assert!(calls.iter().any(|c| c["structured_digest"].is_string()), "a repaired answer was served: {calls:?}");
    // The prompt exchange and the subagents are judged on the first turn, which the relay
    // answered truly, under the same schema.
    assert_eq!(run.step("prompt_exchange").0, "passed");
    assert_eq!(run.step("subagent_delegation").0, "passed");
    assert_eq!((run.step("builtin_tool_scoping").0, run.step("staged_files").0), ("passed", "passed"));
}

#[test]
fn a_harness_that_never_passes_the_schema_fails_naming_the_value() {
    let run = probe(&[], "structured_output", &["--schema-unsent"]);
    fails_naming(&run, "response_format", "never passed `checkfu.output_schema`");
    assert!(structured_calls(&run).iter().all(|c| c.get("structured_output").is_none()));
}

#[test]
fn submit_tool_served_honestly_passes_with_the_authors_schema() {
    let scratch = probe_support::Scratch::new("structured-schema");
    let schema = scratch.path("schema.json");
    let authored = json!({"type": "object", "properties": {"verdict": {"enum": ["ok", "not ok"]}, "note": {"type": "string"}},
        "required": ["verdict", "note"], "additionalProperties": false});
    std::fs::write(&schema, authored.to_string()).expect("schema");
    let run = probe(&["--output-schema", &schema], "subagents,steer,structured_output=submit_tool", &["--dialect", "anthropic_messages"]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.step("structured_output").0, "passed", "{}", run.pretty());
    assert_eq!(run.json["admission"]["realized"]["structured_output"], "submit_tool");
    let calls = structured_calls(&run);
    let broken = calls.iter().find(|c| c["structured_broken"] == true).expect("a broken submission");
    assert_eq!((&broken["structured_output"], &broken["schema_exact"]), (&json!("tool"), &json!(true)));
    assert!(calls.iter().filter(|c| c["structured_output"] == "tool").count() >= 2, "submitted again: {calls:?}");
}

#[test]
fn a_harness_that_accepts_an_invalid_submission_fails_naming_the_value() {
    let run = probe(&[], "structured_output=submit_tool", &["--accept-invalid"]);
    fails_naming(&run, "submit_tool", "broken submission reached the output");
    // The same twin under `response_format` emits the broken answer as final.
    let run = probe(&[], "structured_output", &["--accept-invalid"]);
    fails_naming(&run, "response_format", "the final value is the model's broken first answer, emitted unvalidated");
}

#[test]
fn undeclared_the_step_is_skipped_and_no_schema_is_sent() {
    let run = probe(&[], "steer", &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.step("structured_output"), ("skipped", "`structured_output` is not declared"));
    let calls = run.plane()["calls"].as_array().cloned().unwrap_or_default();
    assert!(calls.iter().all(|c| c.get("structured_output").is_none()), "{calls:?}");
}

/// The TypeScript SDK agent (`tests/fixture-agent/ts/agent.mjs`) with `--structured
/// response_format`: honest, it passes and realizes the value; with `--accept-invalid` it shows
/// the broken first answer as its final value, and fails naming the value. Run when
/// `CHECKFU_TS_AGENT` names an installed copy.
#[test]
#[cfg_attr(
    not(checkfu_ts_agent),
    ignore = "CHECKFU_TS_AGENT is not set: run tests/fixture-agent/ts/install.sh DIR and set it to DIR/agent.mjs"
)]
fn the_typescript_sdk_agent_serves_response_format_and_its_twin_fails() {
    let agent = std::env::var("CHECKFU_TS_AGENT").expect("CHECKFU_TS_AGENT was set when the tests were built, and is not now");
    let options = ["--step-timeout", "5", "--no-cancellation"];
    let honest = probe_support::probe(&options, &["node", &agent, "--structured", "response_format"]);
    assert_eq!(honest.status, 0, "{}", honest.pretty());
    assert_eq!(honest.step("structured_output").0, "passed", "{}", honest.pretty());
    assert_eq!(honest.json["admission"]["realized"]["structured_output"], "response_format");
    let twin = probe_support::probe(&options, &["node", &agent, "--structured", "response_format", "--accept-invalid"]);
    fails_naming(&twin, "response_format", "broken first answer");
}
