//! The context window the relay enforces, and compaction judged by its record: the fixture
//! agent, told the window and a `truncate_oldest` policy in `checkfu.runtime_config`, opens
//! its conversation with earlier exchanges (`--history`) that make its first request too
//! long; the relay answers that request with the dialect's context-length error, the agent
//! drops its oldest messages, says so in `checkfu.compaction` and asks again. The honest
//! agent passes `context_compaction` in every dialect; its twin that misreports the count or
//! the tokens fails, naming the lie.

use crate::probe_support;

use probe_support::{probe, AGENT};
use serde_json::{json, Value};

/// 8 earlier exchanges are 16 messages of about 70 tokens each by the relay's rule (about
/// 1100 with the prompt): far past a window of 400, which the prompt alone fits.
const HISTORY: &str = "8";
const WINDOW: &str = "400";

/// The agent declares no steer, and the runs make no cancellation turn: a steer's request and
/// the cancellation's prompt would be calls of their own, which these tests do not count.
fn agent(switches: &[&'static str]) -> Vec<&'static str> {
    let mut command = vec![AGENT, "--history", HISTORY, "--declare", "none"];
    command.extend_from_slice(switches);
    command
}

fn windowed(policy: bool) -> Vec<&'static str> {
    let mut options = vec!["--context-window", WINDOW, "--no-cancellation"];
    if policy {
        options.extend(["--compaction", "truncate_oldest"]);
    }
    options
}

/// The first turn's calls: the one the window is judged on (the probe's turns of its own, such
/// as `platform_tool`'s, come after it).
fn calls(run: &probe_support::Run) -> Vec<Value> {
    let all = run.plane()["calls"].as_array().cloned().unwrap_or_default();
    all.into_iter().filter(|c| c["turn"] == 1).collect()
}

#[test]
fn an_honest_compaction_passes_in_every_dialect_and_agrees_with_the_record() {
    for dialect in ["anthropic_messages", "openai_chat", "openai_responses"] {
        let run = probe(&windowed(true), &agent(&["--dialect", dialect]));
        assert_eq!(run.status, 0, "{dialect}: {}", run.pretty());
        assert_eq!(run.step("context_compaction"), ("passed", ""), "{dialect}");
        let calls = calls(&run);
        assert_eq!(calls.len(), 2, "{dialect}: {calls:?}");
        // The first request was past the window: refused by the relay in the dialect's
        // shape, recorded as a context overflow with the relay's estimate.
        assert_eq!((calls[0]["fault"].as_str(), calls[0]["status"].as_u64()), (Some("context_overflow"), Some(400)), "{dialect}");
        assert_eq!(calls[0]["messages"], 17, "{dialect}: 16 earlier messages and the prompt");
        assert!(calls[0]["estimated_tokens"].as_u64() > Some(400), "{dialect}: {}", calls[0]);
        assert!(calls[1]["estimated_tokens"].as_u64() <= Some(400) && calls[1]["fault"].is_null(), "{dialect}: {}", calls[1]);
        let check = &run.json["context_compaction"];
        let recorded = &check["recorded"][0];
        let claimed = &check["claimed"][0];
        assert_eq!(check["overflows"], 1, "{check}");
        assert_eq!(check["policy"], json!({"strategy": "truncate_oldest", "trigger_tokens": 400}));
        // The agent counts by the relay's published rule, so its claim is the record's.
        assert_eq!(claimed["tokens_before"], recorded["tokens_before"], "{check}");
        assert_eq!(claimed["tokens_after"], recorded["tokens_after"], "{check}");
        let fell = recorded["messages_before"].as_u64().unwrap_or(0) - recorded["messages_after"].as_u64().unwrap_or(0);
        assert_eq!(claimed["compacted_messages"].as_u64(), Some(fell), "{check}");
        assert_eq!(check["mismatches"], json!([]));
        // Its checkfu.turn counts the overflow it recovered from, as the record does.
        assert_eq!(run.json["turn_telemetry"]["recorded"]["model_overflow_recoveries"], 1);
        assert_eq!(run.json["turn_telemetry"]["mismatches"], json!([]));
    }
    let steps = probe(&windowed(true), &agent(&[]));
    let names: Vec<&String> = steps.json["steps"].as_object().expect("steps").keys().collect();
    assert_eq!(
        names,
        [
            "initialize_handshake",
            "session_start",
            "prompt_exchange",
            "subagent_delegation",
            "builtin_tool_scoping",
            "staged_files",
            "structured_output",
            "platform_tool",
            "platform_tool_http",
            "cancellation",
            "native_checkpoint",
            "context_compaction",
            "teardown"
        ]
    );
}

#[test]
fn a_lie_in_checkfu_compaction_fails_naming_the_counter_the_claim_and_the_record() {
    let count = probe(&windowed(true), &agent(&["--lie-compaction", "count"]));
    assert_eq!(count.status, 1, "{}", count.pretty());
    let (status, reason) = count.step("context_compaction");
    assert_eq!(status, "failed");
    let recorded = &count.json["context_compaction"]["recorded"][0];
    let fell = recorded["messages_before"].as_u64().unwrap_or(0) - recorded["messages_after"].as_u64().unwrap_or(0);
    assert!(reason.starts_with(&format!("checkfu.compaction #1: compacted_messages claimed {}, recorded {fell}", fell + 1)), "{reason}");
    // Everything else about the turn was right: the lie alone fails the run.
    assert_eq!(count.step("prompt_exchange").0, "passed");

    let tokens = probe(&windowed(true), &agent(&["--lie-compaction", "tokens"]));
    assert_eq!(tokens.status, 1, "{}", tokens.pretty());
    let (status, reason) = tokens.step("context_compaction");
    let before = tokens.json["context_compaction"]["recorded"][0]["tokens_before"].as_u64().unwrap_or(0);
    assert_eq!(status, "failed");
    assert!(reason.starts_with(&format!("checkfu.compaction #1: tokens_before claimed {}, recorded {before}", before * 10)), "{reason}");
}

#[test]
fn without_a_compaction_policy_the_overflow_stands_and_the_harness_does_not_compact() {
    // The runtime config names the window and no policy: the agent must not compact, and
    // does not; the turn then has no answer, which prompt_exchange says. The window given in
    // --runtime-config is enforced as --context-window's is.
    let run = probe(&["--runtime-config", r#"{"context_window": 400}"#], &agent(&[]));
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(run.step("context_compaction").0, "passed", "{}", run.pretty());
    assert_eq!(run.step("prompt_exchange").0, "failed");
    let calls = calls(&run);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["fault"], "context_overflow");
    assert_eq!(run.json["context_compaction"]["policy"], Value::Null);
    assert_eq!(run.json["context_compaction"]["window"], 400);
    let windowed = probe(&windowed(false), &agent(&[]));
    assert_eq!((windowed.step("context_compaction").0, windowed.step("prompt_exchange").0), ("passed", "failed"));
}

#[test]
fn a_window_nothing_reaches_is_a_skip_and_no_window_no_step() {
    let scratch = probe_support::Scratch::new("compaction-meta");
    let record = scratch.path("record.jsonl");
    let run = probe(&["--context-window", "100000", "--compaction", "truncate_oldest", "--record", &record], &agent(&[]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    // The window and the policy went to the harness as checkfu.runtime_config.
    let text = std::fs::read_to_string(&record).expect("record");
    let new_session = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|l| l["message"]["method"] == "session/new");
    assert_eq!(
        new_session.expect("session/new recorded")["message"]["params"]["_meta"]["checkfu.runtime_config"],
        json!({"context_window": 100000, "compaction": {"strategy": "truncate_oldest", "trigger_tokens": 100000}})
    );
    let (status, reason) = run.step("context_compaction");
    assert_eq!(status, "skipped");
    assert!(reason.starts_with("no request reached the window of 100000 tokens (the largest the relay estimated was "), "{reason}");
    let plain = probe(&[], &agent(&[]));
    assert!(plain.json["steps"].get("context_compaction").is_none(), "{}", plain.pretty());
    assert!(plain.json.get("context_compaction").is_none());
    // Every call is estimated, window or not.
    assert!(plain.plane()["calls"][0]["estimated_tokens"].as_u64() > Some(800), "{}", plain.plane());
}

#[test]
fn a_policy_outside_the_slots_schema_is_a_usage_error_before_anything_starts() {
    let run = probe(&["--context-window", "400", "--compaction", "forget_everything"], &agent(&[]));
    assert_eq!(run.status, 2, "{}", run.pretty());
    assert!(run.stderr.contains("the session/new authority members are refused"), "{}", run.stderr);
}

/// The TypeScript SDK agent (`tests/fixture-agent/ts/agent.mjs`) compacts the same way, by
/// the relay's published rule: its claim agrees with the record. Run when `CHECKFU_TS_AGENT`
/// names an installed copy, as `.ci/run` makes one.
#[test]
#[cfg_attr(
    not(checkfu_ts_agent),
    ignore = "CHECKFU_TS_AGENT is not set: run tests/fixture-agent/ts/install.sh DIR and set it to DIR/agent.mjs"
)]
fn the_typescript_sdk_agent_compacts_honestly_too() {
    let agent = std::env::var("CHECKFU_TS_AGENT").expect("CHECKFU_TS_AGENT was set when the tests were built, and is not now");
    let run = probe(&windowed(true), &["node", &agent, "--history", HISTORY]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.step("context_compaction"), ("passed", ""));
    let check = &run.json["context_compaction"];
    assert_eq!(check["claimed"].as_array().map(Vec::len), Some(1), "{check}");
    assert_eq!(check["claimed"][0]["tokens_before"], check["recorded"][0]["tokens_before"], "{check}");
    assert_eq!(check["mismatches"], json!([]));
    assert_eq!(run.json["turn_telemetry"]["claimed"]["model_overflow_recoveries"], 1);
    assert_eq!(run.json["turn_telemetry"]["mismatches"], json!([]));
}

/// Authority is fail-closed: a harness that does not take `checkfu.runtime_config` refuses
/// `session/new`, which `session_start` reports naming the member; no turn, so the step is a
/// skip.
#[test]
fn a_harness_that_does_not_take_the_runtime_config_refuses_the_session() {
    let run = probe(&windowed(true), &agent(&["--refuse-runtime-config"]));
    assert_eq!(run.status, 1, "{}", run.pretty());
    let (status, reason) = run.step("session_start");
    assert_eq!(status, "failed");
    assert!(reason.contains("not supported") && reason.contains("carried the authority members checkfu.runtime_config"), "{reason}");
    assert_eq!(run.step("context_compaction"), ("skipped", "no turn was observed"));
    assert_eq!(run.plane()["calls"], json!([]));
}

/// The probe's compaction strategies are the slots' schema's, in its order (the schema is the
/// project's: `schemas/checkfu-slots.schema.json`, `CompactionStrategy`).
#[test]
fn the_strategies_the_step_reads_are_the_slots_schemas() {
    use checkfu_wire_probe::verdict::compaction::Strategy;
    let path = crate::support::project::project_root().join("schemas/checkfu-slots.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("the schema")).expect("JSON");
    let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(schema["$defs"]["CompactionStrategy"]["enum"], json!(names));
    assert!(names.iter().all(|n| Strategy::of(&Value::from(*n)).is_some_and(|s| s.name() == *n)));
    assert_eq!(Strategy::of(&json!("forget_everything")), None);
}
