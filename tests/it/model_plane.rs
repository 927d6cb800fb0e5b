//! The probe's model plane on the fixture agent: a turn through the relay in each dialect,
//! the `tool` script's round trip, and one test per misbehaviour of the model plane (an
//! undeclared dialect, a call without the key, an egress attempt, a nonce answered without
//! the model, a malformed and a 100 MB body), each asserting the report and the exit code.

use crate::probe_support;

use probe_support::{probe, Scratch, AGENT};
use serde_json::{json, Value};

/// The fixture agent with `switches`. The model plane's tests count the calls of a turn, so
/// unless a test says what to declare, the agent declares no `subagents` (whose exercise adds
/// the subagent's own call; `probe.rs` tests it): steer and interrupt, as by default.
fn agent(switches: &[&'static str]) -> Vec<&'static str> {
    let mut command = vec![AGENT];
    command.extend_from_slice(switches);
    if !switches.contains(&"--declare") {
        command.extend(["--declare", "steer,interrupt"]);
    }
    command
}

fn refused_statuses(plane: &Value) -> Vec<u64> {
    plane["refused"].as_array().map(|r| r.iter().filter_map(|x| x["status"].as_u64()).collect()).unwrap_or_default()
}

#[test]
fn a_turn_goes_through_the_relay_in_each_dialect() {
    for dialect in ["anthropic_messages", "openai_chat", "openai_responses"] {
        let run = probe(&[], &agent(&["--dialect", dialect]));
        assert_eq!(run.status, 0, "{dialect}: {}", run.pretty());
        let plane = run.plane();
        assert_eq!(plane["calls"][0]["dialect"], dialect);
        assert_eq!(plane["calls"][0]["status"], 200);
        assert_eq!(plane["calls"][0]["nonce_in_request"], true);
        assert_eq!(plane["dialects_used"], json!([dialect]));
        assert_eq!(plane["nonce_at_relay"], true);
        assert_eq!(plane["nonce_in_output"], true);
        assert_eq!(plane["provider"], "unlisted_provider");
        assert!(plane["fence"] == "network_namespace" || plane["fence_note"].is_string(), "the fence or why not: {plane}");
        assert_eq!(refused_statuses(plane), Vec::<u64>::new());
    }
}

#[test]
fn the_tool_script_reads_the_token_file_and_then_answers_with_the_nonce() {
    let scratch = Scratch::new("tool-script");
    let model = scratch.path("model.jsonl");
    // One turn, and no steer: the cancellation step's second prompt, and a steer's request,
    // would add calls of their own.
    let run = probe(
        &["--model-script", "tool", "--record-model", &model, "--no-cancellation"],
        &agent(&["--dialect", "openai_responses", "--declare", "none"]),
    );
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.plane()["tool"], json!({"called": true, "result_returned": true}));
    assert_eq!(run.check("tool_correlation"), "pass");
    let reads: Vec<&Value> =
        run.json["client_requests"].as_array().expect("list").iter().filter(|r| r["method"] == "fs/read_text_file").collect();
    assert!(reads.iter().any(|r| r["detail"].as_str().unwrap_or_default().contains("checkfu-probe-token.txt")), "{reads:?}");
    // --record-model: the served calls with their bodies, one JSON object a line.
    let text = std::fs::read_to_string(&model).expect("record-model written");
    let calls: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    // The first turn's: the platform tool's turn follows it.
    let calls: Vec<Value> = calls.into_iter().filter(|c| c["turn"] == 1).collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["response"]["output"][0]["type"], "function_call");
    assert_eq!(calls[1]["request"]["input"].as_array().map(|i| i.len()), Some(3), "the tool result went back: {}", calls[1]["request"]);
}

#[test]
fn a_call_in_an_undeclared_dialect_is_a_catalog_mismatch() {
    // codex is catalogued as openai_responses, and declares nothing.
    let run = probe(&["--harness", "codex"], &agent(&["--dialect", "openai_chat", "--declare", "none"]));
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(run.step("prompt_exchange").0, "passed");
    let catalog = &run.plane()["catalog"];
    assert_eq!(catalog["harness"], "codex");
    assert_eq!(catalog["dialects"], json!(["openai_responses"]));
    let mismatches = catalog["mismatches"].as_array().expect("list");
    assert_eq!(mismatches.len(), 1, "{mismatches:?}");
    assert!(mismatches[0].as_str().unwrap_or_default().contains("spoke `openai_chat`"));
    // The same harness in its catalogued dialect matches.
    let run = probe(&["--harness", "codex"], &agent(&["--dialect", "openai_responses", "--declare", "none"]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.plane()["catalog"]["mismatches"], json!([]));
}

#[test]
fn an_unreachable_cell_is_said_and_the_relay_serves_only_that_providers_paths() {
    let run = probe(&["--harness", "codex", "--provider", "anthropic"], &agent(&["--dialect", "openai_responses", "--declare", "none"]));
    assert_eq!(run.status, 1);
    let plane = run.plane();
    assert_eq!(plane["provider"], "anthropic");
    assert_eq!(plane["catalog"]["reachable"], false);
    assert_eq!(refused_statuses(plane), vec![404]);
    assert_eq!(plane["refused"][0]["path"], "/v1/responses");
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.contains("the relay refused during the turn: 404 /v1/responses"), "the refusal is named: {reason}");
}

#[test]
fn a_call_without_the_key_is_refused_and_recorded() {
    let run = probe(&[], &agent(&["--no-key"]));
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(refused_statuses(run.plane()), vec![401]);
    assert_eq!(run.plane()["calls"], json!([]));
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("no call reached the model"), "{reason}");
    assert!(reason.contains("the relay refused during the turn: 401 /v1/chat/completions"), "{reason}");
}

#[test]
fn an_egress_attempt_is_refused_recorded_and_not_fatal() {
    // One turn: the cancellation step's second prompt would try again.
    let run = probe(&["--no-cancellation"], &agent(&["--egress"]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.plane()["egress_attempts"], json!([{"host": "api.example.com", "port": 443}]));
    assert_eq!(refused_statuses(run.plane()), vec![403]);
}

#[test]
fn a_nonce_answered_without_any_model_call_fails_the_exchange() {
    let run = probe(&[], &agent(&["--no-model"]));
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(run.plane()["nonce_in_output"], true);
    assert_eq!(run.plane()["nonce_at_relay"], false);
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("no call reached the model") && reason.contains("the harness could write without the model"), "{reason}");
}

#[test]
fn a_malformed_body_and_a_100_mb_body_are_refused_and_the_turn_goes_on() {
    // One turn each, and no steer: the cancellation step's second prompt would send its
    // bodies again, and a steer's request would be a call more.
    let run = probe(&["--no-cancellation"], &agent(&["--malformed-body", "--declare", "none"]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(refused_statuses(run.plane()), vec![400]);
    assert!(run.plane()["refused"][0]["reason"].as_str().unwrap_or_default().contains("not JSON"));
    let run = probe(&["--no-cancellation"], &agent(&["--huge-body", "--declare", "none"]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(refused_statuses(run.plane()), vec![413]);
    let first: Vec<&Value> = run.plane()["calls"].as_array().into_iter().flatten().filter(|c| c["turn"] == 1).collect();
    assert_eq!(first.len(), 1, "{first:?}");
}

#[test]
fn the_harness_gets_a_fresh_home_the_relay_and_expanded_placeholders() {
    let scratch = Scratch::new("launch-env");
    let seen = scratch.path("seen.txt");
    let script = format!(
        "printf '%s\\n' \"$HOME\" \"$ANTHROPIC_BASE_URL\" \"$OPENAI_BASE_URL\" \"$HTTPS_PROXY\" \"$NO_PROXY\" \"$CHECKFU_X\" \"$(cat \"$HOME/conf/a.toml\")\" \"$1\" > {seen}; exec {AGENT}"
    );
    let run = probe(
        &["--env", "CHECKFU_X={relay_url}/x", "--home-file", "conf/a.toml=key = \"{api_key}\" ws = \"{workspace}\""],
        &["sh", "-c", &script, "sh", "{home}"],
    );
    assert_eq!(run.status, 0, "{}", run.pretty());
    let text = std::fs::read_to_string(&seen).expect("the harness wrote what it saw");
    let lines: Vec<&str> = text.lines().collect();
    let home = lines[0];
    assert!(home.contains("checkfu-probe-home-"), "a fresh home: {home}");
    assert_ne!(Some(home), std::env::var("HOME").ok().as_deref());
    assert!(lines[1].starts_with("http://127.0.0.1:") && !lines[1].ends_with('/'), "{}", lines[1]);
    assert_eq!(lines[2], format!("{}/v1", lines[1]));
    assert_eq!(lines[3], lines[1], "the proxy is the relay");
    assert!(lines[4].contains("127.0.0.1"));
    assert_eq!(lines[5], format!("{}/x", lines[1]));
    assert!(lines[6].starts_with("key = \"cfk") && lines[6].contains("ws = \"/"), "{}", lines[6]);
    // Two keys on one line are not TOML: the file is written as given, and the report says
    // where the parser stopped.
    let warning = run.json["warnings"][0].as_str().unwrap_or_default();
    assert!(warning.starts_with("the home file conf/a.toml does not parse as TOML at line 1, column "), "{}", run.pretty());
    assert_eq!(lines[7], home, "{{home}} expanded in an argument");
    assert!(!std::path::Path::new(home).exists(), "the home went with the session");
}

#[test]
fn an_output_path_that_cannot_be_written_stops_the_run_before_anything_starts() {
    let scratch = Scratch::new("output-paths");
    let marker = scratch.path("started");
    for flag in ["--record", "--trace", "--record-model"] {
        let run = probe(&[flag, "/nonexistent-dir/x.jsonl"], &["sh", "-c", &format!("touch {marker}")]);
        assert_eq!(run.status, 2, "{flag}");
        assert!(run.stderr.contains("/nonexistent-dir"), "{flag}: {}", run.stderr);
        assert!(!std::path::Path::new(&marker).exists(), "{flag}: the harness was started");
    }
}

#[test]
fn without_a_turn_the_turn_checks_are_skipped_not_passed() {
    let run = probe(&[], &["true"]);
    assert_eq!(run.status, 1);
    for check in ["terminal_observation", "tool_correlation", "steering_correlation", "steering_delivered", "subagent_correlation"] {
        assert_eq!(run.check(check), "skip", "{check}");
        assert_eq!(run.json["checks"][check]["reason"], "no turn was observed", "{check}");
    }
    assert_eq!(run.check("ready_handshake"), "fail");
}

#[test]
fn a_home_file_template_is_read_from_at_file_and_the_argv_is_reported_as_run() {
    let scratch = Scratch::new("at-file");
    let template = scratch.path("template.json");
    std::fs::write(&template, "{\"url\": \"{relay_url}\"}\n").expect("template");
    let seen = scratch.path("seen.txt");
    let record = scratch.path("record.jsonl");
    let script = format!("cat \"$HOME/conf/b.json\" \"$HOME/c.txt\" > {seen}; echo >> {seen}; echo \"$1\" >> {seen}; exec {AGENT}");
    let from_file = format!("conf/b.json=@{template}");
    let run = probe(
        &["--home-file", &from_file, "--home-file", "c.txt=@@literal", "--record", &record],
        &["sh", "-c", &script, "sh", "{home}/x"],
    );
    assert_eq!(run.status, 0, "{}", run.pretty());
    let text = std::fs::read_to_string(&seen).expect("the harness wrote what it saw");
    let lines: Vec<&str> = text.lines().collect();
    let url = lines[0].strip_prefix("{\"url\": \"").unwrap_or_default();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("\"}"),
        "the file's template, expanded, its braces as written: {}",
        lines[0]
    );
    assert_eq!(lines[1], "@literal", "`@@` writes a literal `@`");
    // `harness.command` and the record's first line are the argv as run.
    let command = &run.json["harness"]["command"];
    assert_eq!(command[4], lines[2], "the argument the harness got: {command}");
    assert!(command[4].as_str().is_some_and(|c| c.contains("checkfu-probe-home-") && !c.contains('{')), "{command}");
    let first = std::fs::read_to_string(&record).expect("record").lines().next().map(String::from).unwrap_or_default();
    let launch: Value = serde_json::from_str(&first).expect("the launch line");
    assert_eq!(&launch["launch"]["command"], command);
    let decoded = std::process::Command::new(probe_support::PROBE).arg("decode").arg(&record).output().expect("decode");
    assert!(decoded.status.success(), "decode skips the launch line: {}", String::from_utf8_lossy(&decoded.stdout));
    // The banner (text format, on stderr) shows the same argv.
    let text = std::process::Command::new(probe_support::PROBE).args(["probe", "--", AGENT, "{workspace}"]).output().expect("probe");
    let banner = String::from_utf8_lossy(&text.stderr).lines().next().map(String::from).unwrap_or_default();
    assert!(banner.contains(&format!("{AGENT} /")) && banner.contains("checkfu-probe-") && !banner.contains("{workspace}"), "{banner}");
}

#[test]
fn an_unknown_placeholder_or_an_unreadable_template_starts_nothing() {
    let scratch = Scratch::new("placeholders");
    let marker = scratch.path("started");
    let template = scratch.path("bad.toml");
    std::fs::write(&template, "url = \"{relay_ur}\"\n").expect("template");
    let from_file = format!("a.toml=@{template}");
    let cases: Vec<(Vec<&str>, Vec<String>, &str)> = vec![
        (vec![], vec!["{relay_ur}".into()], "unknown placeholder `{relay_ur}`"),
        (vec!["--env", "X={api_kee}"], vec![], "--env X: unknown placeholder `{api_kee}`"),
        (vec!["--home-file", &from_file], vec![], "--home-file a.toml: unknown placeholder `{relay_ur}`"),
        (vec!["--home-file", "a.toml=@/nonexistent/template"], vec![], "cannot read the template `/nonexistent/template`"),
        (vec!["--env", "X={\"a\": {\"b\": \"{Home}\"}}"], vec![], "--env X: unknown placeholder `{Home}`"),
    ];
    for (options, extra, says) in cases {
        let mut harness = vec!["sh".to_owned(), "-c".to_owned(), format!("touch {marker}"), "sh".to_owned()];
        harness.extend(extra);
        let harness: Vec<&str> = harness.iter().map(String::as_str).collect();
        let run = probe(&options, &harness);
        assert_eq!(run.status, 2, "{options:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{options:?}: {}", run.stderr);
        assert!(!std::path::Path::new(&marker).exists(), "{options:?}: the harness was started");
    }
}

#[test]
fn a_blocked_entry_is_said_before_the_run_and_is_not_a_failure_by_itself() {
    let run = probe(&["--harness", "openclaw"], &agent(&["--dialect", "openai_responses", "--declare", "none"]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    let note = run.stderr.lines().find(|l| l.starts_with("note ")).unwrap_or_default();
    assert!(note.contains("`openclaw` blocked (supply blocked, adoption blocked)"), "said on stderr, in JSON format too: {}", run.stderr);
    let catalog = &run.plane()["catalog"];
    assert_eq!((&catalog["blocked"], &catalog["supply"], &catalog["adoption"]), (&json!(true), &json!("blocked"), &json!("blocked")));
    assert_eq!(catalog["mismatches"], json!([]));
    let run = probe(&["--harness", "codex"], &agent(&["--dialect", "openai_responses", "--declare", "none"]));
    assert_eq!(run.plane()["catalog"]["blocked"], false);
    assert!(!run.stderr.contains("blocked"), "{}", run.stderr);
}

#[test]
fn realized_is_reported_beside_the_ceiling_and_the_judged_set_is_named() {
    // pi's ceiling says multiagent_shared_environment false; the envelope gives true.
    let run = probe(&["--harness", "pi"], &agent(&["--declare", "none"]));
    assert_eq!(run.status, 0, "a ceiling below the envelope is legal: {}", run.pretty());
    let admission = &run.json["admission"];
    assert_eq!(admission["judged_against"], "envelope");
    assert_eq!(admission["envelope"]["multiagent_shared_environment"], "true");
    assert_eq!(admission["ceiling"]["multiagent_shared_environment"], "false");
    assert_eq!(admission["realized"]["multiagent_shared_environment"], "true");
    assert_eq!(admission["above_ceiling"], json!([{"axis": "multiagent_shared_environment", "realized": "true", "ceiling": "false"}]));
    let unbound = probe(&[], &agent(&[]));
    assert_eq!((&unbound.json["admission"]["ceiling"], &unbound.json["admission"]["above_ceiling"]), (&Value::Null, &json!([])));
    let text = std::process::Command::new(probe_support::PROBE)
        .args(["probe", "--harness", "pi", "--", AGENT, "--declare", "none"])
        .output()
        .expect("probe");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("ceiling  {") && text.contains("judged against the envelope"), "{text}");
    assert!(text.contains("ceiling  realized multiagent_shared_environment: true is above the entry's ceiling false"), "{text}");
}

#[test]
fn model_plane_has_the_same_keys_on_every_run() {
    let keys =
        |run: &probe_support::Run| -> Vec<String> { run.plane().as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default() };
    let nonce = probe(&[], &agent(&[]));
    let tool = probe(&["--model-script", "tool"], &agent(&[]));
    let bound = probe(&["--harness", "codex", "--no-netns"], &agent(&["--dialect", "openai_responses", "--declare", "none"]));
    assert_eq!(keys(&nonce), keys(&tool));
    assert_eq!(keys(&nonce), keys(&bound));
    for key in ["fence_note", "catalog", "tool", "dropped"] {
        assert!(keys(&nonce).iter().any(|k| k == key), "{key}: {:?}", keys(&nonce));
    }
    assert_eq!(nonce.plane()["tool"], json!({"called": false, "result_returned": false}));
    assert_eq!(nonce.plane()["catalog"], Value::Null);
}

#[test]
fn tmpdir_is_inside_the_fresh_home_unless_env_sets_it() {
    let scratch = Scratch::new("tmpdir");
    let seen = scratch.path("seen.txt");
    let script = format!("printf '%s\\n' \"$TMPDIR\" \"$HOME\" > {seen}; test -d \"$TMPDIR\" && touch \"$TMPDIR/left\"; exec {AGENT}");
    let run = probe(&[], &["sh", "-c", &script]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    let text = std::fs::read_to_string(&seen).expect("seen");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("{}/.tmp", lines[1]), "TMPDIR in the fresh home");
    assert!(!std::path::Path::new(lines[0]).exists(), "and it went with the home");
    let run = probe(&["--env", "TMPDIR=/var/tmp"], &["sh", "-c", &script]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(std::fs::read_to_string(&seen).expect("seen").lines().next(), Some("/var/tmp"));
    let _ = std::fs::remove_file("/var/tmp/left");
}

#[test]
fn an_agent_that_asks_the_model_and_sends_the_prompt_back_fails_the_exchange() {
    // No steer: the agent shows the model's first answer before it passes a steer on.
    let run = probe(&[], &agent(&["--echo-prompt", "--declare", "none"]));
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(run.plane()["nonce_at_relay"], true, "the model was asked");
    assert_eq!(run.plane()["nonce_in_output"], true, "and the prompt's nonce was sent back");
    assert_eq!(run.plane()["reply_in_output"], Value::Null);
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("no reply token of the model's answer"), "{reason}");
    assert!(!reason.contains("the relay refused"), "no refusal is named as the cause: {reason}");
}

#[test]
fn a_passing_turn_shows_the_reply_token_the_model_answered_with() {
    let run = probe(&[], &agent(&[]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    let token = run.plane()["reply_in_output"].as_str().expect("a reply token reached the output").to_owned();
    assert_eq!(run.plane()["calls"][0]["reply_token"], json!(token));
    assert!(token.starts_with("cfr-") && !token.contains(run.json["nonce"].as_str().unwrap_or("-")));
}

/// The `faults` script's first fault is a rate limit with `retry-after: 1`: the agent's
/// recovery is judged by the record alone (`model_recovery`), in every dialect.
#[test]
fn a_harness_that_retries_after_retry_after_recovers_from_the_faults_script() {
    for dialect in ["anthropic_messages", "openai_chat", "openai_responses"] {
        let run = probe(&["--model-script", "faults"], &agent(&["--dialect", dialect, "--retry"]));
        assert_eq!(run.status, 0, "{dialect}: {}", run.pretty());
        assert_eq!(run.step("model_recovery").0, "passed", "{dialect}: {}", run.pretty());
        let calls = run.plane()["calls"].as_array().expect("calls").clone();
        assert_eq!(
            (calls[0]["fault"].as_str(), calls[0]["status"].as_u64(), calls[0]["retry_after"].as_u64()),
            (Some("rate_limit"), Some(429), Some(1))
        );
        let waited = calls[1]["started_ms"].as_u64().unwrap_or(0) - calls[0]["started_ms"].as_u64().unwrap_or(0);
        assert!(waited >= 1000 && calls[1]["fault"].is_null(), "{dialect}: the retry waited {waited} ms: {calls:?}");
        // The step is the run's: before teardown, after the lane's own.
        let steps: Vec<&String> = run.json["steps"].as_object().expect("steps").keys().collect();
        assert_eq!(
            steps,
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
                "model_recovery",
                "teardown"
            ]
        );
    }
}

#[test]
fn a_harness_that_retries_before_retry_after_or_gives_up_fails_model_recovery_naming_the_fault() {
    let early = probe(&["--model-script", "faults"], &agent(&["--retry-early"]));
    assert_eq!(early.status, 1, "{}", early.pretty());
    let (status, reason) = early.step("model_recovery");
    assert_eq!(status, "failed");
    assert!(reason.contains("retried the rate limit of call 1 after") && reason.contains("before its retry-after of 1 s"), "{reason}");

    let gave_up = probe(&["--model-script", "faults"], &agent(&[]));
    assert_eq!(gave_up.status, 1, "{}", gave_up.pretty());
    let (status, reason) = gave_up.step("model_recovery");
    assert_eq!(status, "failed");
    assert!(reason.contains("gave up on the rate_limit of call 1 (status 429)"), "{reason}");
    // No script that fails calls, no step.
    let plain = probe(&[], &agent(&[]));
    assert!(plain.json["steps"].get("model_recovery").is_none(), "{}", plain.pretty());
}

/// `checkfu.turn` set against the record: the fixture agent's honest counters agree with it
/// (a retried rate limit included), and its twin that claims no model call fails the run,
/// naming the counter, the claim and the record.
#[test]
fn the_turns_telemetry_is_held_to_the_relays_record() {
    // No steer: its request would be a third call (counted alike by both, but not this test's).
    let honest = probe(&["--model-script", "faults"], &agent(&["--retry", "--declare", "none"]));
    assert_eq!(honest.status, 0, "{}", honest.pretty());
    let telemetry = &honest.json["turn_telemetry"];
    assert_eq!(telemetry["recorded"]["model_calls"], 2, "{telemetry}");
    assert_eq!(telemetry["recorded"]["model_transient_retries"], 1, "{telemetry}");
    assert_eq!(telemetry["claimed"]["model_calls"], 2, "{telemetry}");
    assert_eq!(telemetry["mismatches"], json!([]));
    assert!(telemetry["claimed"]["wall_time_ms"].as_u64() <= telemetry["recorded"]["turn_ms"].as_u64(), "{telemetry}");

    let liar = probe(&[], &agent(&["--lie-turn", "--declare", "none"]));
    assert_eq!(liar.status, 1, "{}", liar.pretty());
    assert_eq!(liar.json["turn_telemetry"]["mismatches"], json!(["model_calls claimed 0, recorded 1"]));
    // Every step passed: the lie alone fails the run.
    for step in ["initialize_handshake", "session_start", "prompt_exchange", "teardown"] {
        assert_eq!(liar.step(step).0, "passed", "{step}: {}", liar.pretty());
    }
    // The other way: more calls and a retry it never made, each counter named.
    let inflated = probe(&[], &agent(&["--inflate-turn", "--declare", "none"]));
    assert_eq!(inflated.status, 1, "{}", inflated.pretty());
    assert_eq!(
        inflated.json["turn_telemetry"]["mismatches"],
        json!(["model_calls claimed 3, recorded 1", "model_transient_retries claimed 1, recorded 0"])
    );
}
