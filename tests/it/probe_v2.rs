//! `checkfu-wire probe` and ACP v2 (issue 54): the fixture agent's v2 mode
//! (`tests/fixture-agent/v2.rs`) passes the v2 run, proven by the relay's record; each of its
//! hostile twins fails naming what it broke; the v1 fixture asked for 2 negotiates down and is
//! judged as v1; the v2 fixture asked for 1 answers `-32022` and is asked again in 2. Under
//! v2 every declared-mechanism step, the platform tools and the scripted steer and drain run
//! as in v1, and the v1 fixture's over-declaring twins fail them in v2 mode, naming the value.

use serde_json::Value;

use crate::probe_support::{self, Run, AGENT};

fn probe(options: &[&str], switches: &[&str]) -> Run {
    let mut options = options.to_vec();
    options.extend(["--step-timeout", "10"]);
    let mut harness = vec![AGENT];
    harness.extend_from_slice(switches);
    probe_support::probe(&options, &harness)
}

fn v2(switches: &[&'static str]) -> Vec<&'static str> {
    let mut all = vec!["--acp-version", "2"];
    all.extend_from_slice(switches);
    all
}

/// The relay's record of the first turn: a call was served, its latest user turn held the
/// nonce, and its reply token reached the normalized output.
fn governed_turn_recorded(run: &Run) {
    let plane = run.plane();
    let calls = plane["calls"].as_array().cloned().unwrap_or_default();
    let first: Vec<&Value> = calls.iter().filter(|c| c["turn"] == 1).collect();
    assert!(!first.is_empty(), "no call of the first turn in the relay's record: {}", run.pretty());
    assert_eq!(plane["nonce_in_output"], true, "{}", run.pretty());
    let reply = plane["reply_in_output"].as_str().unwrap_or_default();
    assert!(!reply.is_empty() && first.iter().any(|c| c["reply_token"] == reply), "{}", run.pretty());
}

#[test]
fn the_honest_v2_agent_passes_the_v2_run() {
    let run = probe(&["--acp-version", "2"], &v2(&[]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["acp_version"], 2);
    assert_eq!(run.json["negotiation"]["asked"], 2);
    for step in ["initialize_handshake", "session_start", "prompt_exchange", "cancellation", "teardown"] {
        assert_eq!(run.step(step).0, "passed", "{step}: {}", run.pretty());
    }
    assert_eq!(run.check("terminal_observation"), "pass", "{}", run.pretty());
    assert_eq!(run.json["harness"]["agent_info"]["name"], "checkfu-fixture-agent");
    governed_turn_recorded(&run);
    // The cancelled turn ended idle `cancelled`, and no call started after the cancel.
    assert_eq!(run.json["cancellation"]["stop_reason"], "cancelled", "{}", run.pretty());
    assert_eq!(run.json["cancellation"]["calls_after_cancel"], 0);
}

#[test]
fn the_v2_agent_asked_for_1_answers_32022_and_runs_as_v2() {
    let run = probe(&[], &v2(&[]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["acp_version"], 2);
    assert_eq!(run.json["negotiation"]["asked"], 1);
    assert_eq!(run.json["negotiation"]["supported"], serde_json::json!([2]));
    assert_eq!(run.step("prompt_exchange").0, "passed", "{}", run.pretty());
    governed_turn_recorded(&run);
}

#[test]
fn the_v1_agent_asked_for_2_negotiates_down_and_passes_as_v1() {
    let run = probe(&["--acp-version", "2"], &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["acp_version"], 1);
    assert_eq!(run.json["negotiation"]["asked"], 2);
    assert_eq!(run.step("prompt_exchange").0, "passed", "{}", run.pretty());
    assert_eq!(run.step("cancellation").0, "passed", "{}", run.pretty());
    governed_turn_recorded(&run);
}

/// Each twin fails the run, the step that judges what it broke naming it.
#[test]
fn each_hostile_v2_twin_fails_naming_what_it_broke() {
    let cases: [(&str, &str, &str); 6] = [
        ("--no-receipt-id", "prompt_exchange", "messageId"),
        ("--boolean-capability", "initialize_handshake", "boolean"),
        ("--unprefixed-update", "prompt_exchange", "scratchpad"),
        ("--idle-without-running", "prompt_exchange", "running"),
        ("--v1-answer", "prompt_exchange", "state_update"),
        ("--never-cancelled", "cancellation", "cancelled"),
    ];
    for (twin, step, keyword) in cases {
        let run = probe(&["--acp-version", "2"], &v2(&[twin]));
        assert_eq!(run.status, 1, "{twin}: {}", run.pretty());
        let (status, reason) = run.step(step);
        assert_eq!(status, "failed", "{twin}: {}", run.pretty());
        assert!(reason.contains(keyword), "{twin}: `{reason}` does not name `{keyword}`");
    }
}

/// Under v2 `checkfu.turn` rides the idle `state_update`, and the decoder judges it there as
/// it judges v1's on the prompt's answer: a malformed claim (`"model_calls": "0"`) is dropped
/// under the fail-open rule, and turn telemetry fails saying why, rather than comparing the
/// raw claim (v1's twin of the same name: `probe.rs`).
#[test]
fn a_malformed_v2_turn_claim_fails_turn_telemetry_with_why_it_was_dropped() {
    let run = probe(&["--acp-version", "2"], &v2(&["--string-turn"]));
    assert_eq!(run.json["acp_version"], 2, "{}", run.pretty());
    assert_eq!(run.status, 1, "{}", run.pretty());
    let mismatch = run.json["turn_telemetry"]["mismatches"][0].as_str().unwrap_or_default();
    assert!(mismatch.contains("fail-open") && mismatch.contains("/model_calls"), "{}", run.pretty());
    // The honest agent's claim on its idle is decoded, compared and agrees with the record.
    let honest = probe(&["--acp-version", "2"], &v2(&[]));
    assert_eq!(honest.json["turn_telemetry"]["mismatches"], serde_json::json!([]), "{}", honest.pretty());
    assert_eq!(honest.json["turn_telemetry"]["claimed"]["model_calls"], honest.json["turn_telemetry"]["recorded"]["model_calls"]);
}

/// `--authenticate` under v2 sends v2's `auth/login` (v1's `authenticate` is no v2 method):
/// the v2 agent that needs credentials starts its session after it, and a method it does
/// not know is refused naming `auth/login`.
#[test]
fn authenticate_under_v2_logs_in_with_auth_login() {
    let run = probe(&["--acp-version", "2", "--authenticate", "fixture-key"], &v2(&["--need-credentials"]));
    assert_eq!(run.json["acp_version"], 2, "{}", run.pretty());
    assert_eq!(run.step("session_start").0, "passed", "{}", run.pretty());
    assert_eq!(run.step("prompt_exchange").0, "passed", "{}", run.pretty());
    let wrong = probe(&["--acp-version", "2", "--authenticate", "nope"], &v2(&["--need-credentials"]));
    let (status, reason) = wrong.step("session_start");
    assert_eq!(status, "failed", "{}", wrong.pretty());
    assert!(reason.contains("auth/login (nope) answered an error: -32602"), "{reason}");
    // Without it, the session is refused: the agent does need the login.
    let without = probe(&["--acp-version", "2"], &v2(&["--need-credentials"]));
    assert_eq!(without.step("session_start").0, "failed", "{}", without.pretty());
}

/// The test kit's requirements are ACP v1's, and a v2 run puts none of them to the agent:
/// its verdict is "not judged", saying why, never "not conformant" for requirements it did
/// not run, and each requirement says it was not run under v2.
#[test]
fn a_v2_run_has_no_kit_verdict_rather_than_a_misleading_one() {
    let run = probe(&["--acp-version", "2"], &v2(&[]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    let verdict = &run.json["requirements_verdict"];
    assert!(verdict["not_judged"].as_str().is_some_and(|w| w.contains("not run under ACP v2")), "{}", run.pretty());
    assert_eq!(verdict["mandatory_not_tested"], serde_json::json!([]), "{}", run.pretty());
    let requirements = run.json["requirements"].as_array().cloned().unwrap_or_default();
    assert!(!requirements.is_empty());
    for r in &requirements {
        assert_eq!(r["status"], "not_tested", "{r}");
        assert!(r["reason"].as_str().is_some_and(|w| w.starts_with("not run under ACP v2")), "{r}");
    }
    // A v1 run keeps its verdict, with no `not_judged`.
    let v1 = probe(&[], &[]);
    assert_eq!(v1.json["requirements_verdict"].get("not_judged"), None, "{}", v1.pretty());
}

/// A `--record` of a v2 run reads back through `decode` with no rejection, without being
/// told the version: the record names the version its client read, including the v1
/// `initialize` that the v2 agent refused with `-32022` before the handshake was asked
/// again in v2, and the v2 `initialize` a v1 agent answered in v1.
#[test]
fn a_recorded_v2_run_decodes_whole() {
    let scratch = crate::probe_support::Scratch::new("v2-record");
    for (name, options, switches) in [
        ("retried", vec![], v2(&[])),
        ("asked-2", vec!["--acp-version", "2"], v2(&[])),
        ("negotiated-down", vec!["--acp-version", "2"], vec![]),
    ] {
        let record = scratch.path(&format!("{name}.jsonl"));
        let mut options = options.clone();
        options.extend(["--record", &record]);
        let run = probe(&options, &switches);
        assert_eq!(run.status, 0, "{name}: {}", run.pretty());
        let text = std::fs::read_to_string(&record).expect("the record");
        let decoded = std::process::Command::new(crate::probe_support::PROBE).arg("decode").arg(&record).output().expect("decode");
        let stdout = String::from_utf8_lossy(&decoded.stdout);
        assert_eq!(decoded.status.code(), Some(0), "{name}: {stdout}\n{}\n{text}", String::from_utf8_lossy(&decoded.stderr));
        let wanted = if name == "retried" { r#"{"protocol":"acp-v1"}"# } else { r#"{"protocol":"acp-v2"}"# };
        assert!(text.lines().nth(1) == Some(wanted), "{name}: {text}");
        if name == "retried" {
            // The refused v1 exchange is recorded as v1, then the record says v2.
            assert!(text.lines().any(|l| l == r#"{"protocol":"acp-v2"}"#), "{text}");
        }
    }
}

/// Every mechanism the v1 fixture serves, declared and served under v2.
const FULL: &str = "subagents,steer,interrupt,builtin_tool_scoping,staged_files,structured_output,native_checkpoint";

/// Under v2 the fully declared fixture runs every step it declares, as in v1, and passes
/// each: the turns of the mechanism steps end with v2's receipt and idle, the platform tools
/// are granted over stdio and HTTP (each with v2's `type`) and called from inside the fence,
/// and the scripted steer reaches the model mid-turn (the relay's record decides). Each
/// declared value is realized only because its step passed.
#[test]
fn under_v2_every_declared_mechanism_step_runs_and_the_honest_agent_passes_it() {
    let run = probe(&["--acp-version", "2"], &v2(&["--declare", FULL, "--mcp-http"]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["acp_version"], 2);
    // Every step ran and passed: none of them was skipped under v2.
    let steps = run.json["steps"].as_object().cloned().unwrap_or_default();
    assert!(steps.contains_key("native_checkpoint") && steps.contains_key("platform_tool_http"), "{}", run.pretty());
    for (step, outcome) in &steps {
        assert_eq!(outcome["status"], "passed", "{step}: {}", run.pretty());
    }
    for check in ["steering_correlation", "steering_delivered", "subagent_correlation", "tool_correlation"] {
        assert_eq!(run.check(check), "pass", "{check}: {}", run.pretty());
    }
    let realized = &run.json["admission"]["realized"];
    for (member, value) in [
        ("subagents", "observed"),
        ("mid_run_input", "native"),
        ("builtin_tool_scoping", "enforced"),
        ("staged_files", "resource_links"),
        ("structured_output", "response_format"),
        ("native_checkpoint", "external_custody"),
    ] {
        assert_eq!(realized[member], value, "{member}: {}", run.pretty());
    }
    // The first turn was governed: a served call's reply token reached normalized output
    // (the steer asks for the nonce alone, which the model's follow-up answer words its way).
    let reply = run.plane()["reply_in_output"].as_str().unwrap_or_default();
    let calls = run.plane()["calls"].as_array().cloned().unwrap_or_default();
    assert!(!reply.is_empty() && calls.iter().any(|c| c["turn"] == 1 && c["reply_token"] == reply), "{}", run.pretty());
    // The steer sent mid-turn reached the model in the first turn, by the relay's record.
    assert!(calls.iter().any(|c| c["turn"] == 1 && c["steer_in_request"] == true), "{}", run.pretty());
    // v2 has no client file system: the agent read and wrote the workspace itself, and
    // nothing it sent broke v2's grammar.
    assert_eq!(run.json["wire"]["grammar_violations"], serde_json::json!([]), "{}", run.pretty());
}

/// `--interrupt` under v2: the scripted drain goes out mid-turn, is acknowledged `draining`,
/// and the turn ends idle with nothing the model streamed cut off.
#[test]
fn under_v2_a_declared_cooperative_interrupt_drains_the_first_turn() {
    let run = probe(&["--acp-version", "2", "--interrupt"], &v2(&["--declare", "steer,interrupt"]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.check("cooperative_interrupt_drained"), "pass", "{}", run.pretty());
    assert_eq!(run.json["admission"]["realized"]["interrupt"], "cooperative", "{}", run.pretty());
    assert!(run.json["drain"]["trigger"].is_string(), "{}", run.pretty());
    // The drained call, by the relay's record, streamed to its end: nothing was cut off.
    let calls = run.plane()["calls"].as_array().cloned().unwrap_or_default();
    let paced: Vec<&Value> = calls.iter().filter(|c| c["turn"] == 1).map(|c| &c["paced"]).filter(|p| p.is_object()).collect();
    let last = paced.last().expect("a paced call in the first turn");
    assert_eq!((last["ended"].as_str(), &last["events_sent"]), (Some("finished"), &last["events"]), "{}", run.pretty());
}

/// The v1 fixture's over-declaring twins, in v2 mode: each fails the step of the value it
/// does not serve, naming it, and the value is not realized.
#[test]
fn under_v2_each_over_declaring_twin_fails_naming_the_value() {
    let cases: [(&str, &str, &str, &str); 6] = [
        ("subagents", "--no-subagent", "subagent_delegation", "no subagent started"),
        ("builtin_tool_scoping", "--run-outside-scope", "builtin_tool_scoping", "declared `builtin_tool_scoping: enforced` is not served"),
        ("staged_files", "--ignore-staged", "staged_files", "declared `staged_files: resource_links` is not served"),
        ("structured_output", "--schema-unsent", "structured_output", "response_format"),
        ("native_checkpoint", "--no-checkpoint", "native_checkpoint", "declared `native_checkpoint: external_custody` is not served"),
        ("none", "--ignore-mcp", "platform_tool", "the harness ignored `mcpServers`"),
    ];
    for (member, twin, step, words) in cases {
        let run = probe(&["--acp-version", "2", "--no-cancellation"], &v2(&["--declare", member, twin]));
        assert_eq!(run.status, 1, "{twin}: {}", run.pretty());
        assert_eq!(run.json["acp_version"], 2);
        assert_eq!(run.step("prompt_exchange").0, "passed", "{twin}: {}", run.pretty());
        let (status, reason) = run.step(step);
        assert_eq!(status, "failed", "{twin}: {}", run.pretty());
        assert!(reason.contains(words), "{twin}: `{reason}` does not say `{words}`");
        assert!(run.json["admission"]["realized"].get(member).is_none_or(|v| v == "absent"), "{twin}: {}", run.pretty());
    }
    // The steer acknowledged and dropped: the relay's record fails the steer's check.
    let dropped = probe(&["--acp-version", "2", "--no-cancellation"], &v2(&["--declare", "steer", "--drop-steer"]));
    assert_eq!(dropped.status, 1, "{}", dropped.pretty());
    assert_eq!(dropped.check("steering_delivered"), "fail", "{}", dropped.pretty());
    assert_eq!(dropped.json["admission"]["realized"]["mid_run_input"], "unsupported", "{}", dropped.pretty());
}
