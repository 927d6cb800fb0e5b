//! `checkfu-wire probe` against live harnesses: the fixture agent (`checkfu-fixture-agent`,
//! `tests/fixture-agent/agent.rs`) well-behaved and in each misbehaviour, and an agent written
//! with the official TypeScript SDK when node and the SDK are installed. Every test asserts
//! the step statuses, the check verdicts and the exit code, and that no process of the
//! harness's group and no workspace directory is left behind.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::probe_support;

use probe_support::{Run, AGENT, PROBE};

/// Runs the probe (`--format json`) on `harness` with 5 s steps unless told otherwise; the
/// shared runner asserts that nothing was left behind.
fn probe(options: &[&str], harness: &[&str]) -> Run {
    let mut options = options.to_vec();
    if !options.contains(&"--step-timeout") {
        options.extend(["--step-timeout", "5"]);
    }
    probe_support::probe(&options, harness)
}

fn agent(switches: &[&'static str]) -> Vec<&'static str> {
    let mut command = vec![AGENT];
    command.extend_from_slice(switches);
    command
}

/// A path in a fresh directory of its own, removed with it when this drops, so that a test
/// leaves nothing in the temporary directory.
struct TempPath {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for TempPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempPath {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for TempPath {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

fn temp_file(name: &str) -> TempPath {
    let dir = tempfile::Builder::new().prefix("checkfu-probe-test-").tempdir().expect("dir");
    TempPath { path: dir.path().join(name), _dir: dir }
}

#[test]
fn a_test_s_files_are_removed_with_it() {
    let record = temp_file("gone.jsonl");
    std::fs::write(&record, b"{}").expect("write");
    let dir = record.parent().expect("its directory").to_path_buf();
    drop(record);
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn a_well_behaved_harness_passes_and_the_probe_agrees_with_decode_and_conform() {
    let record = temp_file("well.record.jsonl");
    let trace = temp_file("well.trace.jsonl");
    let run = probe(&["--interrupt", "--record", record.to_str().unwrap(), "--trace", trace.to_str().unwrap()], &agent(&[]));
    assert_eq!(run.status, 0, "{}", serde_json::to_string_pretty(&run.json).unwrap());
    assert_eq!(run.json["qualification"], "unsigned_local_only");
    for step in ["initialize_handshake", "session_start", "prompt_exchange", "cancellation", "teardown"] {
        assert_eq!(run.step(step).0, "passed", "{step}");
    }
    for check in [
        "ready_handshake",
        "terminal_observation",
        "tool_correlation",
        "steering_correlation",
        "steering_delivered",
        "cooperative_interrupt_drained",
        "subagent_correlation",
    ] {
        assert_eq!(run.check(check), "pass", "{check}");
    }
    assert_eq!(run.json["admission"]["admitted_axes"], serde_json::json!(["subagents", "mid_run_input", "interrupt"]));
    assert_eq!(run.json["admission"]["realized"]["interrupt"], "cooperative");
    assert_eq!(run.json["harness"]["agent_info"]["name"], "checkfu-fixture-agent");
    assert_eq!(run.json["harness"]["ending"], "exited_on_eof");
    let requests: Vec<(&str, &str)> = run.json["client_requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["method"].as_str().unwrap(), r["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        requests,
        [("session/request_permission", "answered"), ("fs/write_text_file", "answered"), ("fs/read_text_file", "answered")]
    );

    // The recorded wire decodes with zero rejections, both directions, through `decode`.
    let decoded = Command::new(PROBE).arg("decode").arg(&record).output().expect("decode");
    assert!(decoded.status.success(), "{}", String::from_utf8_lossy(&decoded.stdout));
    let lines = String::from_utf8_lossy(&decoded.stdout).lines().count();
    // One line for each message of the main process and of the requirement probes' one.
    let count = |of: &Value| of["messages_in"].as_u64().unwrap() + of["messages_out"].as_u64().unwrap();
    assert_eq!(lines as u64, count(&run.json["wire"]) + count(&run.json["requirement_probe"]));
    // And the trace gives the same verdicts through `conform`.
    let conform = Command::new(PROBE).args(["conform", "--format", "json"]).arg(&trace).output().expect("conform");
    assert!(conform.status.success());
    let verdicts: Value = serde_json::from_slice(&conform.stdout).expect("json");
    assert_eq!(verdicts["checks"], run.json["checks"]);
}

#[test]
fn an_undeclared_gated_emission_fails_subagent_correlation() {
    let run = probe(&[], &agent(&["--undeclared-emission"]));
    assert_eq!(run.status, 1);
    assert_eq!(run.step("prompt_exchange").0, "passed");
    assert_eq!(run.check("subagent_correlation"), "fail");
    assert!(
        run.check_reason("subagent_correlation").contains("without the declared subagents"),
        "{}",
        run.check_reason("subagent_correlation")
    );
    assert_eq!(run.json["admission"]["admitted_axes"], serde_json::json!(["mid_run_input", "interrupt"]));
}

/// A declared `subagents: observed` is exercised: the honest fixture's subagent asks the
/// model on its own and reports its answer, and passes; its twins that narrate a subagent
/// with no model call, or declare one and never start it, fail naming what the record lacks,
/// and do not realize the axis. Undeclared, the step is skipped, saying so.
#[test]
fn a_declared_subagent_is_exercised_and_a_narrated_or_missing_one_fails() {
    let honest = probe(&[], &agent(&[]));
    assert_eq!(honest.status, 0, "{}", honest.pretty());
    assert_eq!(honest.step("subagent_delegation").0, "passed", "{}", honest.pretty());
    assert_eq!(honest.json["admission"]["realized"]["subagents"], "observed");
    let narrated = probe(&[], &agent(&["--narrate-subagent"]));
    assert_eq!(narrated.status, 1);
    let (status, reason) = narrated.step("subagent_delegation");
    assert_eq!(status, "failed");
    assert!(reason.contains("\"researcher\"") && reason.contains("narrated"), "{reason}");
    // The lifecycle itself is well formed: only the record tells the two apart.
    assert_eq!(narrated.check("subagent_correlation"), "pass");
    assert_eq!(narrated.json["admission"]["realized"]["subagents"], "absent");
    let missing = probe(&[], &agent(&["--no-subagent"]));
    assert_eq!(missing.status, 1);
    let (status, reason) = missing.step("subagent_delegation");
    assert_eq!((status, reason.contains("no subagent started")), ("failed", true), "{reason}");
    assert_eq!(missing.json["admission"]["realized"]["subagents"], "absent");
    let undeclared = probe(&[], &agent(&["--declare", "steer,interrupt"]));
    assert_eq!(undeclared.step("subagent_delegation"), ("skipped", "`subagents` is not declared"));
}

/// The fixture declaring `member` alone and serving it, without the cancellation: the run
/// passes, the member's step passes, and `value` is realized.
fn honest_declaring(member: &'static str, value: &str) -> Run {
    let honest = probe(&["--no-cancellation"], &agent(&["--declare", member]));
    assert_eq!(honest.status, 0, "{}", honest.pretty());
    assert_eq!(honest.step(member).0, "passed", "{}", honest.pretty());
    assert_eq!(honest.json["admission"]["realized"][member], value);
    honest
}

/// A declared `builtin_tool_scoping: enforced` is exercised: the honest fixture is handed
/// `checkfu.builtin_tools`, runs the model's `write` (inside the list) and refuses its `bash`
/// (outside it) back to the model, and passes; its twin that runs `bash` anyway fails naming
/// the value, and the value is not realized. Undeclared, the step is skipped, saying so.
#[test]
fn a_declared_builtin_tool_scoping_is_exercised_and_a_tool_run_outside_the_list_fails() {
    let honest = honest_declaring("builtin_tool_scoping", "enforced");
    // The turn of its own, by the relay's record: `write`, then `bash`, then the answer, whose
    // request carried one tool result more than the one that got `bash` (the refusal).
    let calls = honest.plane()["calls"].as_array().cloned().unwrap_or_default();
    let scoping: Vec<(String, u64)> = calls
        .iter()
        .filter_map(|c| c.get("scoping"))
        .map(|s| (s["phase"].as_str().unwrap_or("?").to_owned(), s["tool_results"].as_u64().unwrap_or(99)))
        .collect();
    let phases: Vec<(&str, u64)> = scoping.iter().map(|(p, n)| (p.as_str(), *n)).collect();
    assert_eq!(phases, [("inside", 0), ("outside", 1), ("answer", 2)], "{}", honest.pretty());

    let escaped = probe(&["--no-cancellation"], &agent(&["--declare", "builtin_tool_scoping", "--run-outside-scope"]));
    assert_eq!(escaped.status, 1, "{}", escaped.pretty());
    let (status, reason) = escaped.step("builtin_tool_scoping");
    assert_eq!(status, "failed");
    assert!(reason.contains("declared `builtin_tool_scoping: enforced` is not served") && reason.contains("`bash`"), "{reason}");
    assert!(escaped.json["admission"]["realized"].get("builtin_tool_scoping").is_none(), "{}", escaped.pretty());
    // The other steps and checks pass: only the exercise tells the two apart.
    assert_eq!(escaped.step("prompt_exchange").0, "passed");

    let undeclared = probe(&["--no-cancellation"], &agent(&["--declare", "none"]));
    assert_eq!(undeclared.step("builtin_tool_scoping"), ("skipped", "`builtin_tool_scoping` is not declared"));
}

/// A declared `staged_files: resource_links` is exercised: the honest fixture reads the
/// prompt's resource links in order and passes their text to the model, which the relay's
/// record shows in link order; the files are as staged afterwards. Its twin that ignores the
/// links fails naming the value. Undeclared, the step is skipped, saying so.
#[test]
fn declared_staged_files_are_exercised_and_ignored_links_fail() {
    let honest = honest_declaring("staged_files", "resource_links");
    let calls = honest.plane()["calls"].as_array().cloned().unwrap_or_default();
    assert!(calls.iter().any(|c| c["marks_in_request"] == serde_json::json!([0, 1, 2])), "{}", honest.pretty());

    let ignoring = probe(&["--no-cancellation"], &agent(&["--declare", "staged_files", "--ignore-staged"]));
    assert_eq!(ignoring.status, 1, "{}", ignoring.pretty());
    let (status, reason) = ignoring.step("staged_files");
    assert_eq!(status, "failed");
    assert!(reason.contains("declared `staged_files: resource_links` is not served") && reason.contains("no staged file"), "{reason}");
    assert!(ignoring.json["admission"]["realized"].get("staged_files").is_none(), "{}", ignoring.pretty());

    let undeclared = probe(&["--no-cancellation"], &agent(&["--declare", "none"]));
    assert_eq!(undeclared.step("staged_files"), ("skipped", "`staged_files` is not declared"));
}

/// A declared `native_checkpoint: external_custody` is exercised: the honest fixture emits a
/// checkpoint carrying its turns, and a fresh process of it (a fresh workspace and home),
/// handed that checkpoint in `checkfu.resume`, opens its next model request with the first
/// turn's nonce, as the relay's record shows. Its twins fail naming the value: one that
/// emits no checkpoint, one whose checkpoint the decoder drops as malformed, and one that
/// takes `checkfu.resume` and drops it. Undeclared, the step is skipped, saying so.
#[test]
fn a_declared_native_checkpoint_is_resumed_in_a_fresh_process_and_its_twins_fail() {
    let honest = honest_declaring("native_checkpoint", "external_custody");
    let calls = honest.plane()["calls"].as_array().cloned().unwrap_or_default();
    let last = calls.iter().map(|c| c["turn"].as_u64().unwrap_or(0)).max().unwrap_or(0);
    let resumed: Vec<&serde_json::Value> = calls.iter().filter(|c| c["turn"].as_u64() == Some(last)).collect();
    assert_eq!(resumed.first().map(|c| c["marks_in_request"].clone()), Some(serde_json::json!([0])), "{}", honest.pretty());

    let named = |run: &Run, fault: &str| {
        assert_eq!(run.status, 1, "{}", run.pretty());
        let (status, reason) = run.step("native_checkpoint");
        assert_eq!(status, "failed", "{}", run.pretty());
        assert!(reason.contains("declared `native_checkpoint: external_custody` is not served") && reason.contains(fault), "{reason}");
        assert!(run.json["admission"]["realized"].get("native_checkpoint").is_none(), "{}", run.pretty());
    };
    let silent = probe(&["--no-cancellation"], &agent(&["--declare", "native_checkpoint", "--no-checkpoint"]));
    named(&silent, "emitted no `checkfu.journal_checkpoint`");
    let malformed = probe(&["--no-cancellation"], &agent(&["--declare", "native_checkpoint", "--malformed-checkpoint"]));
    named(&malformed, "`checkfu.journal_checkpoint` is malformed");
    let forgetful = probe(&["--no-cancellation"], &agent(&["--declare", "native_checkpoint", "--ignore-resume"]));
    named(&forgetful, "does not carry the first turn's nonce");

    let undeclared = probe(&["--no-cancellation"], &agent(&["--declare", "none"]));
    assert_eq!(undeclared.step("native_checkpoint"), ("skipped", "`native_checkpoint` is not declared"));
}

/// The platform tool is exercised in every run, declared or not (ACP asks every agent to
/// accept stdio MCP servers): the honest fixture starts the server `session/new` granted,
/// inside the fence, offers its tool, and relays the model's call to it, and passes; the
/// relay's record shows the tool offered under the fixture's name for it and its result in a
/// later request. Its twins that ignore `mcpServers`, or narrate a call they never made,
/// fail naming it, as an agent that declares nothing does.
#[test]
fn the_granted_mcp_servers_tool_is_called_inside_the_sandbox_and_an_ignored_or_narrated_one_fails() {
    const OFFERED: &str = "mcp__checkfu__checkfu_platform_probe";
    let honest = probe(&["--no-cancellation"], &agent(&["--declare", "none"]));
    assert_eq!(honest.status, 0, "{}", honest.pretty());
    assert_eq!(honest.step("platform_tool").0, "passed", "{}", honest.pretty());
    let calls = honest.plane()["calls"].as_array().cloned().unwrap_or_default();
    let platform: Vec<&Value> = calls.iter().map(|c| &c["platform"]).filter(|p| p.is_object()).collect();
    assert!(platform.iter().any(|p| p["offered"] == OFFERED && p["called"] == true), "{}", honest.pretty());
    assert!(platform.iter().any(|p| p["result_in_request"] == true && p["called"] == false), "{}", honest.pretty());

    let ignoring = probe(&["--no-cancellation"], &agent(&["--ignore-mcp"]));
    assert_eq!(ignoring.status, 1, "{}", ignoring.pretty());
    let (status, reason) = ignoring.step("platform_tool");
    assert_eq!(status, "failed");
    assert!(reason.contains("the harness ignored `mcpServers`") && reason.contains("the server was never started"), "{reason}");

    let narrating = probe(&["--no-cancellation"], &agent(&["--narrate-mcp-call"]));
    assert_eq!(narrating.status, 1, "{}", narrating.pretty());
    let (status, reason) = narrating.step("platform_tool");
    assert_eq!(status, "failed");
    assert!(reason.contains(&format!("the model called `{OFFERED}` and no call reached the probe's MCP server")), "{reason}");
    assert!(reason.contains("narrated a call it never made"), "{reason}");
    // The prompt exchange itself is not what failed.
    assert_eq!(narrating.step("prompt_exchange").0, "passed", "{}", narrating.pretty());
}

/// Where the agent advertises `mcpCapabilities.http`, `session/new` grants beside the stdio
/// server one of the probe's own over streamable HTTP on the fence's loopback, and
/// `platform_tool_http` judges it as `platform_tool` judges the stdio one: the honest fixture
/// (`--mcp-http`) reaches it, offers its tool and relays the model's call, and passes both;
/// the twin that advertises HTTP and never reaches the server, and the one that narrates the
/// call, fail it naming what they did. An agent that does not advertise HTTP is granted no
/// such server and the step says why it is skipped.
#[test]
fn the_granted_http_mcp_servers_tool_is_called_from_inside_the_fence_and_an_ignored_or_narrated_one_fails() {
    const OFFERED: &str = "mcp__checkfu_http__checkfu_platform_probe_http";
    let honest = probe(&["--no-cancellation"], &agent(&["--declare", "none", "--mcp-http"]));
    assert_eq!(honest.status, 0, "{}", honest.pretty());
    assert_eq!(honest.step("platform_tool").0, "passed", "{}", honest.pretty());
    assert_eq!(honest.step("platform_tool_http").0, "passed", "{}", honest.pretty());
    let calls = honest.plane()["calls"].as_array().cloned().unwrap_or_default();
    let platform: Vec<&Value> = calls.iter().map(|c| &c["platform"]).filter(|p| p.is_object()).collect();
    assert!(platform.iter().any(|p| p["offered"] == OFFERED && p["called"] == true), "{}", honest.pretty());

    let ignoring = probe(&["--no-cancellation"], &agent(&["--declare", "none", "--ignore-mcp-http"]));
    assert_eq!(ignoring.status, 1, "{}", ignoring.pretty());
    assert_eq!(ignoring.step("platform_tool").0, "passed", "{}", ignoring.pretty());
    let (status, reason) = ignoring.step("platform_tool_http");
    assert_eq!(status, "failed");
    assert!(reason.contains("the harness ignored `mcpServers`") && reason.contains("the server was never started"), "{reason}");
    assert!(reason.contains("checkfu_platform_probe_http"), "{reason}");

    let narrating = probe(&["--no-cancellation"], &agent(&["--declare", "none", "--mcp-http", "--narrate-mcp-call"]));
    assert_eq!(narrating.status, 1, "{}", narrating.pretty());
    let (status, reason) = narrating.step("platform_tool_http");
    assert_eq!(status, "failed");
    assert!(reason.contains(&format!("the model called `{OFFERED}` and no call reached the probe's MCP server")), "{reason}");

    let silent = probe(&["--no-cancellation"], &agent(&["--declare", "none"]));
    assert_eq!(silent.step("platform_tool_http"), ("skipped", "the agent does not advertise `mcpCapabilities.http` at initialize"));
}

/// The evidence of the HTTP server is out of the harness's reach: a twin that never calls a
/// granted tool, writes the stdio server's log lines into the workspace itself and answers
/// the result the stdio server's arguments name fails `platform_tool_http` (the server's
/// memory holds no call, and the result it would have answered is in no entry). The stdio
/// server's log lies in the workspace, so the same forgery passes `platform_tool`: a known
/// gap, asserted here so that closing it shows.
#[test]
fn a_harness_that_forges_the_mcp_servers_log_fails_the_http_step_and_still_fools_the_stdio_one() {
    let forger = probe(&["--no-cancellation"], &agent(&["--declare", "none", "--mcp-http", "--forge-mcp-log"]));
    assert_eq!(forger.status, 1, "{}", forger.pretty());
    let (status, reason) = forger.step("platform_tool_http");
    assert_eq!(status, "failed", "{}", forger.pretty());
    assert!(reason.contains("no call reached the probe's MCP server"), "{reason}");
    assert_eq!(forger.step("platform_tool").0, "passed", "the stdio log is forgeable: {}", forger.pretty());
}

#[test]
fn a_missing_steer_acknowledgement_fails_both_steering_checks() {
    let run = probe(&[], &agent(&["--no-ack"]));
    assert_eq!(run.status, 1);
    assert_eq!(run.check("steering_correlation"), "fail");
    assert_eq!(run.check("steering_delivered"), "fail");
    assert!(run.check_reason("steering_delivered").contains("never acknowledged"));
    // Admitted, but not realized: its case did not pass.
    assert_eq!(run.json["admission"]["admitted"]["mid_run_input"], "native");
    assert_eq!(run.json["admission"]["realized"]["mid_run_input"], "unsupported");
}

#[test]
fn a_duplicate_terminal_fails_terminal_observation() {
    let run = probe(&[], &agent(&["--duplicate-terminal"]));
    assert_eq!(run.status, 1);
    assert_eq!(run.step("prompt_exchange").0, "passed");
    assert_eq!(run.check("terminal_observation"), "fail");
    assert!(run.check_reason("terminal_observation").contains("second terminal"));
}

#[test]
fn a_crash_mid_turn_fails_the_prompt_exchange_and_teardown_names_the_early_exit() {
    let run = probe(&[], &agent(&["--crash-mid-turn"]));
    assert_eq!(run.status, 1);
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.contains("exited"), "{reason}");
    // It left before teardown: the step says so, with the exit, and the ending is that.
    let (status, reason) = run.step("teardown");
    assert_eq!(
        (status, reason),
        ("failed", "the harness exited before teardown (exit {\"code\":3}): an ACP agent serves until its stdin closes")
    );
    assert_eq!(run.json["harness"]["ending"], "exited_before_teardown");
    assert_eq!(run.json["harness"]["exit"], serde_json::json!({"code": 3}));
    assert_eq!(run.check("terminal_observation"), "fail");
}

#[test]
fn silence_after_initialize_times_out_the_session_start() {
    let started = Instant::now();
    let run = probe(&["--step-timeout", "1"], &agent(&["--silent-after-initialize"]));
    assert_eq!(run.status, 1);
    assert_eq!(run.step("initialize_handshake").0, "passed");
    let (status, reason) = run.step("session_start");
    assert_eq!(status, "failed");
    assert!(reason.contains("no answer within 1.0 s"), "{reason}");
    assert_eq!(run.step("prompt_exchange").0, "skipped");
    assert_eq!(run.step("teardown").0, "passed");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn garbage_on_stdout_fails_the_step_and_is_recorded_as_it_was() {
    let record = temp_file("garbage.record.jsonl");
    let run = probe(&["--record", record.to_str().unwrap()], &agent(&["--garbage-stdout"]));
    assert_eq!(run.status, 1);
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.contains("not a JSON-RPC message"), "{reason}");
    // `decode` rejects exactly that line of the record.
    let decoded = Command::new(PROBE).arg("decode").arg(&record).output().expect("decode");
    let rejected: Vec<String> =
        String::from_utf8_lossy(&decoded.stdout).lines().filter(|l| l.contains("\"accepted\":false")).map(str::to_owned).collect();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
}

#[test]
fn a_malformed_usage_update_is_ignored_as_optional_fidelity_with_a_warning() {
    let record = temp_file("usage.record.jsonl");
    let run = probe(&["--record", record.to_str().unwrap()], &agent(&["--malformed-usage"]));
    assert_eq!(run.status, 0, "{}", serde_json::to_string_pretty(&run.json).unwrap());
    assert_eq!(run.step("prompt_exchange").0, "passed");
    let ignored = run.json["wire"]["ignored"].as_array().expect("wire.ignored");
    assert_eq!(ignored.len(), 1, "{ignored:?}");
    assert_eq!(ignored[0]["kind"], "usage_update");
    let reason = ignored[0]["reason"].as_str().expect("the decoder's reason");
    assert!(reason.contains("/update/used"), "the reason points at the member: {reason}");
    // `decode` reads the record the same way: accepted, the update ignored with a diagnostic.
    let decoded = Command::new(PROBE).arg("decode").arg(&record).output().expect("decode");
    assert!(decoded.status.success(), "{}", String::from_utf8_lossy(&decoded.stdout));
    assert!(String::from_utf8_lossy(&decoded.stdout).contains("ignored a malformed `usage_update` update"));
    // The text format says it as a warning line.
    let text = Command::new(PROBE).args(["probe", "--", AGENT, "--malformed-usage"]).output().expect("probe");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.lines().any(|l| l.starts_with("warning  ignored a malformed `usage_update` update")), "{text}");
    assert!(text.trim_end().ends_with("PASSED"), "{text}");
}

#[test]
fn a_malformed_message_chunk_still_fails_the_turn() {
    let run = probe(&[], &agent(&["--malformed-chunk"]));
    assert_eq!(run.status, 1);
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.contains("rejects") && reason.contains("agent_message_chunk"), "{reason}");
    assert_eq!(run.json["wire"]["ignored"], serde_json::json!([]));
}

#[test]
fn an_oversize_line_fails_the_step_without_holding_it() {
    let run = probe(&[], &agent(&["--oversize-line"]));
    assert_eq!(run.status, 1);
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.contains("over 16777216 bytes"), "{reason}");
    assert_eq!(run.step("teardown").0, "passed");
}

#[test]
fn a_read_outside_the_workspace_is_refused() {
    let run = probe(&[], &agent(&["--read-outside"]));
    let refused: Vec<&Value> = run.json["client_requests"].as_array().unwrap().iter().filter(|r| r["outcome"] == "refused").collect();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["method"], "fs/read_text_file");
    assert!(refused[0]["detail"].as_str().unwrap().contains("outside the session's workspace"));
    // The agent reports what it got back in its output; the probe recorded the trace's text.
    assert_eq!(run.status, 0, "a refused read is the client's answer, not a failed check");
}

#[test]
fn another_vendors_extension_request_is_answered_method_not_found() {
    let record = temp_file("foreign.record.jsonl");
    let run = probe(&["--record", record.to_str().unwrap()], &agent(&["--foreign-extension"]));
    assert_eq!(run.status, 0, "a foreign extension is well-formed ACP");
    let request = &run.json["client_requests"][0];
    assert_eq!(request["method"], "_acme/progress");
    assert_eq!(request["outcome"], "refused");
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(text.contains(r#""error":{"code":-32601"#), "the answer is -32601");
    let decoded = Command::new(PROBE).arg("decode").arg(&record).output().expect("decode");
    assert!(decoded.status.success(), "{}", String::from_utf8_lossy(&decoded.stdout));
}

#[test]
fn a_vendor_method_without_the_extension_prefix_is_answered_method_not_found_and_fails_the_run() {
    let record = temp_file("unprefixed.record.jsonl");
    let run = probe(&["--record", record.to_str().unwrap()], &agent(&["--unprefixed-method"]));
    // The turn went on past it, so every step is judged as it would be without it...
    for step in ["initialize_handshake", "session_start", "prompt_exchange", "teardown"] {
        assert_eq!(run.step(step).0, "passed", "{step}: {}", run.pretty());
    }
    assert_eq!(run.check("terminal_observation"), "pass");
    // ...and the violation alone fails the run.
    assert_eq!(run.status, 1, "{}", run.pretty());
    let violations = run.json["wire"]["grammar_violations"].as_array().expect("grammar_violations");
    let kinds: Vec<(&str, &str)> = violations.iter().map(|v| (v["method"].as_str().unwrap(), v["kind"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("craft/drainMidTurnQueue", "notification"), ("craft/drainMidTurnQueue", "request")]);
    assert!(violations[1]["reason"].as_str().unwrap().contains("answered -32601"), "{violations:?}");
    let request = &run.json["client_requests"][0];
    assert_eq!((&request["method"], &request["outcome"]), (&Value::from("craft/drainMidTurnQueue"), &Value::from("refused")));
    // The agent got -32601 for the request (it says so in its message), and nothing for the
    // notification: one answer in all, in the main process's wire (the requirement probes'
    // process follows it in the record, from its own launch line).
    let text = std::fs::read_to_string(&record).unwrap();
    let fresh = text.match_indices(r#"{"launch""#).nth(1).map_or(text.len(), |(at, _)| at);
    let text = &text[..fresh];
    assert_eq!(text.matches(r#""error":{"code":-32601"#).count(), 1, "{text}");
    assert!(text.contains("(craft/drainMidTurnQueue answered -32601)"), "{text}");
    // `decode` rejects the lines as the grammar says.
    let decoded = Command::new(PROBE).arg("decode").arg(&record).output().expect("decode");
    assert!(!decoded.status.success() && String::from_utf8_lossy(&decoded.stdout).contains("unknown method `craft/drainMidTurnQueue`"));

    let text = Command::new(PROBE).args(["probe", "--", AGENT, "--unprefixed-method"]).output().expect("probe");
    assert_eq!(text.status.code(), Some(1));
    let text = String::from_utf8_lossy(&text.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("grammar  violated: `craft/drainMidTurnQueue`")).collect();
    assert_eq!(lines.len(), 2, "one line per violation: {text}");
    assert!(text.contains("step     prompt_exchange        passed"), "{text}");
    // The last line names the cause: no step failed, the grammar did.
    let last = text.trim_end().lines().last().unwrap_or_default();
    assert!(last.starts_with("FAILED: grammar violated: `craft/drainMidTurnQueue`"), "{text}");
}

#[test]
fn terminals_are_refused_unless_allowed_and_then_run_in_the_workspace() {
    // Unadvertised, a terminal is refused, and calling one anyway breaks ACP-CLIENTCAP-002.
    let refused = probe(&[], &agent(&["--use-terminal", "--ignore-terminal-capability"]));
    assert_eq!(refused.json["client_requests"][0]["method"], "terminal/create");
    assert_eq!(refused.json["client_requests"][0]["outcome"], "refused");
    assert_eq!(refused.status, 1);
    assert_eq!(refused.json["wire"]["breaches"][0]["requirement"], "ACP-CLIENTCAP-002");

    let record = temp_file("terminal.record.jsonl");
    let run = probe(&["--allow-terminals", "--record", record.to_str().unwrap()], &agent(&["--use-terminal"]));
    assert_eq!(run.status, 0, "{}", serde_json::to_string_pretty(&run.json).unwrap());
    let methods: Vec<&str> =
        run.json["client_requests"].as_array().unwrap().iter().take(4).map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"]);
    let text = std::fs::read_to_string(&record).unwrap();
    // The exit (3) was awaited without blocking the session, and the output read back.
    assert!(text.contains(r#"(terminal exit 3 output \"hello from a terminal\\n\")"#), "{text}");
    assert!(text.contains(r#""clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}"#));
    let decoded = Command::new(PROBE).arg("decode").arg(&record).output().expect("decode");
    assert!(decoded.status.success(), "{}", String::from_utf8_lossy(&decoded.stdout));
}

#[test]
fn a_harness_that_needs_credentials_fails_session_start_with_its_error() {
    let run = probe(&[], &agent(&["--need-credentials"]));
    assert_eq!(run.status, 1);
    assert_eq!(run.step("initialize_handshake").0, "passed");
    let (status, reason) = run.step("session_start");
    assert_eq!(status, "failed");
    assert!(reason.contains("-32000") && reason.contains("Authentication required"), "{reason}");
    assert_eq!(run.step("prompt_exchange").0, "skipped");
    assert_eq!(run.step("teardown").0, "passed");
    assert!(run.stderr.is_empty(), "the probe itself reports no error: {}", run.stderr);
}

#[test]
fn authenticate_with_an_advertised_method_lets_the_session_start() {
    let run = probe(&["--authenticate", "fixture-key"], &agent(&["--need-credentials"]));
    assert_eq!(run.status, 0, "{}", serde_json::to_string_pretty(&run.json).unwrap());
    let wrong = probe(&["--authenticate", "nope"], &agent(&["--need-credentials"]));
    let (status, reason) = wrong.step("session_start");
    assert_eq!(status, "failed");
    assert!(reason.contains("authenticate (nope) answered an error: -32602"), "{reason}");
}

#[test]
fn a_turn_given_up_on_is_cancelled_before_teardown() {
    let record = temp_file("stall.record.jsonl");
    let run = probe(&["--step-timeout", "1", "--record", record.to_str().unwrap()], &agent(&["--stall-turn"]));
    assert_eq!(run.status, 1);
    assert!(run.step("prompt_exchange").1.contains("no answer within 1.0 s"));
    let text = std::fs::read_to_string(&record).unwrap();
    let last_out = text.lines().rfind(|l| l.contains(r#""direction":"runner_to_agent""#)).unwrap_or_default();
    assert!(last_out.contains(r#""method":"session/cancel""#), "{last_out}");
}

#[test]
fn an_echo_of_the_runners_request_is_rejected() {
    let run = probe(&[], &agent(&["--echo-requests"]));
    assert_eq!(run.status, 1);
    let (status, reason) = run.step("initialize_handshake");
    assert_eq!(status, "failed");
    assert!(reason.contains("`initialize` does not flow"), "{reason}");
    assert_eq!(run.step("session_start").0, "skipped");
}

#[test]
fn a_stderr_flood_is_drained_and_only_its_tail_kept() {
    // One turn: the cancellation step's second prompt would flood again.
    let run = probe(&["--no-cancellation"], &agent(&["--flood-stderr"]));
    assert_eq!(run.status, 0);
    assert_eq!(run.json["harness"]["stderr_bytes"], 8 * 1024 * 1024);
    assert!(run.json["harness"]["stderr_tail"].as_str().unwrap().len() <= 4096);
}

#[test]
fn a_stdout_flood_is_cut_at_the_step_timeout() {
    let started = Instant::now();
    // No steer: the probe would hold the model's answer until it is sent.
    let run = probe(&["--step-timeout", "1"], &agent(&["--flood-stdout", "--declare", "subagents"]));
    assert_eq!(run.status, 1);
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    // A fast machine may fill what the probe keeps (small chunks, many of them) first.
    assert!(reason.contains("no answer within 1.0 s") || reason.contains("more than the probe keeps"), "{reason}");
    assert!(run.json["wire"]["messages_in"].as_u64().unwrap() > 100);
    // It never reads its stdin again, so teardown needs SIGTERM.
    assert_eq!(run.json["harness"]["ending"], "terminated");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_flood_of_big_chunks_is_stopped_at_what_the_probe_keeps() {
    let started = Instant::now();
    let run = probe(&["--step-timeout", "60"], &agent(&["--flood-big-chunks"]));
    assert_eq!(run.status, 1);
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.contains("more than the probe keeps in one turn"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(30), "stopped by the budget, not the step's time");
}

#[test]
fn children_left_in_the_group_are_ended_at_teardown() {
    let run = probe(&[], &agent(&["--spawn-child"]));
    assert_eq!(run.status, 0);
    assert_eq!(run.step("teardown").0, "passed");
    assert!(run.json["harness"]["reaped_children"].as_u64().unwrap() >= 1);
}

#[test]
fn a_harness_ignoring_eof_and_sigterm_is_killed_with_its_children() {
    let run = probe(&[], &agent(&["--hang", "--spawn-child"]));
    assert_eq!(run.status, 1);
    let (status, reason) = run.step("teardown");
    assert_eq!(status, "failed");
    assert!(reason.contains("killed"), "{reason}");
    assert_eq!(run.json["harness"]["ending"], "killed");
    assert_eq!(run.json["harness"]["exit"], serde_json::json!({"signal": libc::SIGKILL}));
}

#[test]
fn the_session_deadline_bounds_the_whole_run() {
    let started = Instant::now();
    let run = probe(&["--deadline", "0.5", "--step-timeout", "30"], &agent(&["--silent-after-initialize"]));
    assert_eq!(run.status, 1);
    let (status, reason) = run.step("session_start");
    assert_eq!(status, "failed");
    assert!(reason.contains("deadline"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn authority_flags_ride_session_new_and_the_permission_policy_is_applied() {
    let schema = temp_file("output.schema.json");
    std::fs::write(&schema, r#"{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}"#).unwrap();
    let record = temp_file("authority.record.jsonl");
    let run = probe(
        &[
            "--builtin-tools",
            "bash,read",
            "--continuity",
            "fresh",
            "--runtime-config",
            r#"{"context_window": 200000}"#,
            "--output-schema",
            schema.to_str().unwrap(),
            "--permission",
            "reject",
            "--record",
            record.to_str().unwrap(),
        ],
        &agent(&[]),
    );
    assert_eq!(run.status, 0, "{}", serde_json::to_string_pretty(&run.json).unwrap());
    let text = std::fs::read_to_string(&record).unwrap();
    let new_session: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["message"]["method"] == "session/new")
        .expect("session/new recorded");
    let meta = &new_session["message"]["params"]["_meta"];
    assert_eq!(meta["checkfu.builtin_tools"], serde_json::json!(["bash", "read"]));
    assert_eq!(meta["checkfu.continuity"], "fresh");
    assert_eq!(meta["checkfu.runtime_config"]["context_window"], 200000);
    assert_eq!(meta["checkfu.output_schema"]["required"], serde_json::json!(["answer"]));
    // Rejected permission: the agent wrote nothing.
    let requests = run.json["client_requests"].as_array().unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["detail"], "selected option \"reject\"");
}

#[test]
fn usage_errors_exit_2_before_anything_starts() {
    let unsafe_schema = temp_file("unsafe.schema.json");
    std::fs::write(&unsafe_schema, r#"{"type": "array", "uniqueItems": true}"#).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--", "/nonexistent/harness"], "cannot start"),
        (vec!["--driver", "nope", "--", AGENT], "the catalog has no driver `nope`"),
        (vec!["--retention", "forever", "--", AGENT], "the catalog has no retention mode `forever`"),
        (vec!["--continuity", "forever", "--", AGENT], "authority members are refused"),
        (vec!["--output-schema", unsafe_schema.to_str().unwrap(), "--", AGENT], "safety profile"),
        (vec!["--runtime-config", "{", "--", AGENT], "not JSON"),
        (vec![], "no harness command"),
    ];
    for (args, expected) in cases {
        let output = Command::new(PROBE).arg("probe").args(&args).output().expect("probe");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn text_output_is_for_a_person() {
    let output = Command::new(PROBE).args(["probe", "--", AGENT]).output().expect("probe");
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("checkfu-wire probe (unsigned_local_only"), "{text}");
    assert!(text.contains("step     prompt_exchange        passed"), "{text}");
    assert!(text.trim_end().ends_with("PASSED"), "{text}");
}

/// The TypeScript SDK agent (`tests/fixture-agent/ts/agent.mjs`), run when
/// `CHECKFU_TS_AGENT` names an installed copy (`tests/fixture-agent/ts/install.sh DIR`;
/// `.ci/run` does this).
/// Without `CHECKFU_TS_AGENT` when this was built (build.rs sets the cfg), the runner reports
/// the test as ignored, with the reason.
#[test]
#[cfg_attr(
    not(checkfu_ts_agent),
    ignore = "CHECKFU_TS_AGENT is not set: run tests/fixture-agent/ts/install.sh DIR and set it to DIR/agent.mjs"
)]
fn an_agent_written_with_the_official_typescript_sdk_passes() {
    let agent = std::env::var("CHECKFU_TS_AGENT").expect("CHECKFU_TS_AGENT was set when the tests were built, and is not now");
    let record = temp_file("ts.record.jsonl");
    // Under the faults script and with the drain: it retries, drains and cancels as well.
    let run = probe(&["--record", record.to_str().unwrap(), "--interrupt", "--model-script", "faults"], &["node", &agent]);
    assert_eq!(run.status, 0, "{}", serde_json::to_string_pretty(&run.json).unwrap());
    assert_eq!(run.json["harness"]["agent_info"]["name"], "checkfu-probe-ts-agent");
    assert_eq!(run.step("model_recovery").0, "passed", "{}", run.pretty());
    assert_eq!(run.json["turn_telemetry"]["mismatches"], serde_json::json!([]), "{}", run.pretty());
    assert_eq!(run.json["turn_telemetry"]["recorded"]["model_transient_retries"], 1, "{}", run.pretty());
    assert_eq!(run.check("cooperative_interrupt_drained"), "pass");
    assert_eq!(run.check("steering_delivered"), "pass");
    assert_eq!(run.check("subagent_correlation"), "pass");
    // Its prompt handler aborts the model call on session/cancel and answers `cancelled`.
    assert_eq!(run.step("cancellation").0, "passed", "{}", run.pretty());
    assert_eq!(run.json["cancellation"]["stop_reason"], "cancelled");
    // It acknowledges the steer `queued`, and the next turn's request (the built-in tool
    // scoping step's prompt) carries it: what `steering_delivered` passed on.
    let calls = run.plane()["calls"].as_array().cloned().unwrap_or_default();
    let carried: Vec<(u64, bool)> = calls.iter().map(|c| (c["turn"].as_u64().unwrap_or(0), c["steer_in_request"] == true)).collect();
    // The rate limit and its retry, then the second turn's first call.
    assert_eq!(carried.get(..3), Some(&[(1, false), (1, false), (2, true)][..]), "{}", run.pretty());
    // It declares built-in tool scoping and staged files, and serves both.
    assert_eq!(run.step("builtin_tool_scoping").0, "passed", "{}", run.pretty());
    assert_eq!(run.step("staged_files").0, "passed", "{}", run.pretty());
    assert_eq!(run.json["admission"]["realized"]["builtin_tool_scoping"], "enforced");
    assert_eq!(run.json["admission"]["realized"]["staged_files"], "resource_links");
    // It starts the MCP server session/new granted and relays the model's call to it.
    assert_eq!(run.step("platform_tool").0, "passed", "{}", run.pretty());
    // It declares a native checkpoint: a fresh process handed its checkpoint goes on with the
    // first turn's context.
    assert_eq!(run.step("native_checkpoint").0, "passed", "{}", run.pretty());
    assert_eq!(run.json["admission"]["realized"]["native_checkpoint"], "external_custody");
    let decoded = Command::new(PROBE).arg("decode").arg(&record).output().expect("decode");
    assert!(decoded.status.success(), "{}", String::from_utf8_lossy(&decoded.stdout));
}

/// The TypeScript SDK agent's hostile twins: each says in its own trace what the honest
/// agent says (a turn's counters, `cancelled`, `draining`, `queued`), and each fails on the
/// relay's record, naming what it did. Run when `CHECKFU_TS_AGENT` names an installed copy.
#[test]
#[cfg_attr(
    not(checkfu_ts_agent),
    ignore = "CHECKFU_TS_AGENT is not set: run tests/fixture-agent/ts/install.sh DIR and set it to DIR/agent.mjs"
)]
fn the_typescript_sdk_agents_hostile_twins_each_fail_on_the_record() {
    let agent = std::env::var("CHECKFU_TS_AGENT").expect("CHECKFU_TS_AGENT was set when the tests were built, and is not now");
    let twin = |options: &[&str], flag: &str| probe(options, &["node", &agent, flag]);

    let liar = twin(&[], "--lie-turn");
    assert_eq!(liar.status, 1, "{}", liar.pretty());
    // The prompt's call and its worker's own.
    assert_eq!(liar.json["turn_telemetry"]["mismatches"], serde_json::json!(["model_calls claimed 0, recorded 2"]));
    assert_eq!(liar.step("subagent_delegation").0, "passed", "{}", liar.pretty());

    let narrator = twin(&[], "--narrate-subagent");
    assert_eq!(narrator.status, 1, "{}", narrator.pretty());
    let (status, reason) = narrator.step("subagent_delegation");
    assert_eq!(status, "failed");
    assert!(reason.contains("\"worker\"") && reason.contains("narrated"), "{reason}");
    assert_eq!(narrator.check("subagent_correlation"), "pass", "the lifecycle alone would pass it");
    assert_eq!(liar.step("cancellation").0, "passed", "the lie alone fails the run: {}", liar.pretty());

    for (flag, step) in [
        ("--run-outside-scope", "builtin_tool_scoping"),
        ("--ignore-staged", "staged_files"),
        ("--no-checkpoint", "native_checkpoint"),
        ("--ignore-resume", "native_checkpoint"),
    ] {
        let over = twin(&["--no-cancellation"], flag);
        assert_eq!(over.status, 1, "{}", over.pretty());
        let (status, reason) = over.step(step);
        assert_eq!(status, "failed", "{}", over.pretty());
        assert!(reason.contains(&format!("declared `{step}: ")) && reason.contains("is not served"), "{reason}");
        assert!(over.json["admission"]["realized"].get(step).is_none(), "{}", over.pretty());
    }

    for (flag, words) in [("--ignore-mcp", "ignored `mcpServers`"), ("--narrate-mcp-call", "narrated a call it never made")] {
        let run = twin(&["--no-cancellation"], flag);
        assert_eq!(run.status, 1, "{}", run.pretty());
        let (status, reason) = run.step("platform_tool");
        assert_eq!(status, "failed", "{}", run.pretty());
        assert!(reason.contains(words), "{reason}");
    }

    let deaf = twin(&[], "--ignore-cancel");
    assert_eq!(deaf.status, 1, "{}", deaf.pretty());
    let (status, reason) = deaf.step("cancellation");
    assert_eq!(status, "failed");
    assert!(reason.contains("not answered") && reason.contains("still in flight"), "{reason}");

    let late = twin(&[], "--call-after-cancel");
    assert_eq!(late.status, 1, "{}", late.pretty());
    let (status, reason) = late.step("cancellation");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("a model call started ") && reason.ends_with(" ms after the cancel"), "{reason}");

    let cut = twin(&["--interrupt"], "--truncate-drain");
    assert_eq!(cut.status, 1, "{}", cut.pretty());
    assert_eq!(cut.check("cooperative_interrupt_drained"), "fail");
    let reason = cut.check_reason("cooperative_interrupt_drained");
    assert!(reason.contains("cut the answer off"), "{reason}");

    let dropped = twin(&[], "--drop-steer");
    assert_eq!(dropped.status, 1, "{}", dropped.pretty());
    assert_eq!(dropped.check("steering_delivered"), "fail");
    assert_eq!(
        dropped.check_reason("steering_delivered"),
        "the steer was acknowledged `queued`, but no model request of the next turn carried it"
    );
    // Acknowledged, so the trace alone would pass it.
    assert_eq!(dropped.check("steering_correlation"), "pass");
}

#[test]
fn the_agent_starts_in_the_workspace_with_its_pwd_and_no_oldpwd() {
    let scratch = probe_support::Scratch::new("acp-pwd");
    let seen = scratch.path("seen.json");
    let env = [("CHECKFU_FIXTURE_SEEN", std::ffi::OsString::from(&seen)), ("OLDPWD", std::ffi::OsString::from("/root"))];
    let run = probe_support::probe_env(&[], &agent(&[]), &env);
    assert_eq!(run.status, 0, "{}", run.pretty());
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&seen).expect("the agent wrote where it started")).expect("JSON");
    let cwd = seen["cwd"].as_str().expect("cwd");
    assert!(cwd.contains("checkfu-probe-"), "the workspace, not the caller's directory: {seen}");
    assert_eq!(seen["pwd"], cwd, "PWD names where it started: {seen}");
    assert_eq!(seen["oldpwd"], Value::Null, "{seen}");
}

/// Each fixture twin carries one fault of the wire around the turn that the probe used to
/// let pass; each fails naming the requirement it breaks, found as it happened (no step
/// waits out its timeout for it), and the honest agent under the same flags passes.
#[test]
fn each_fault_of_the_wire_fails_naming_its_requirement() {
    let cases: &[(&[&str], &[&str], &str)] = &[
        (&[], &["--float-id"], "ACP-JSONRPC-001"),
        (&[], &["--string-id"], "ACP-JSONRPC-001"),
        (&[], &["--answer-cancel"], "ACP-JSONRPC-003"),
        (&[], &["--update-after-cancel"], "ACP-CANCEL-002"),
        (&["--no-client-fs"], &["--ignore-fs-capability"], "ACP-CLIENTCAP-001"),
        (&[], &["--elicit"], "ACP-CLIENTCAP-003"),
        (&["--permission", "reject"], &["--write-after-reject"], "CHECKFU-PERMISSION-001"),
    ];
    for (options, switches, requirement) in cases {
        let mut harness = agent(&["--declare", "steer,interrupt"]);
        harness.extend_from_slice(switches);
        let started = Instant::now();
        let run = probe(options, &harness);
        let pretty = serde_json::to_string_pretty(&run.json).unwrap();
        assert_eq!(run.status, 1, "{switches:?}: {pretty}");
        assert_eq!(run.json["wire"]["breaches"][0]["requirement"], *requirement, "{switches:?}: {pretty}");
        assert!(started.elapsed() < Duration::from_secs(5), "{switches:?} waited out a step: {pretty}");
    }
    // The honest agent keeps to what the client advertised and to a rejected permission.
    for options in [&["--no-client-fs"][..], &["--permission", "reject"][..]] {
        let run = probe(options, &agent(&["--declare", "steer,interrupt"]));
        assert_eq!(run.status, 0, "{options:?}: {}", serde_json::to_string_pretty(&run.json).unwrap());
        assert_eq!(run.json["wire"]["breaches"], serde_json::json!([]));
    }
}

/// Each requirement's status in a run's report, by id.
fn requirement_statuses(run: &Run) -> std::collections::BTreeMap<String, String> {
    let requirements = run.json["requirements"].as_array().expect("requirements");
    requirements.iter().map(|r| (r["id"].as_str().expect("id").to_owned(), r["status"].as_str().expect("status").to_owned())).collect()
}

/// The registry over runs of the fixture: every requirement is reported, the honest agent
/// fails none, and a requirement the run did not put to it is `not_tested` (never passed
/// for want of a breach), which keeps the kit's verdict from conformant without failing the
/// run. Put to it in the main process too (`--no-client-fs`, a refused permission), the same
/// requirements pass; the `--float-id` twin fails ACP-JSONRPC-001 with the breach's words.
#[test]
fn every_requirement_is_judged_and_one_the_run_did_not_exercise_is_not_tested() {
    let honest = probe(&[], &agent(&["--declare", "steer,interrupt"]));
    let pretty = honest.pretty();
    assert_eq!(honest.status, 0, "{pretty}");
    let ids: Vec<&str> = checkfu_wire::catalog::Requirement::ALL.iter().map(|r| r.id()).collect();
    let reported: Vec<&str> =
        honest.json["requirements"].as_array().expect("requirements").iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(reported, ids, "one entry per requirement of the registry, in its order");
    let statuses = requirement_statuses(&honest);
    assert!(!statuses.values().any(|s| s == "failed"), "{pretty}");
    for (id, status) in [
        // Judged by a step, a check, and the wire the run exercised.
        ("CHECKFU-TURN-001", "passed"),
        ("ACP-SESSION-001", "passed"),
        ("ACP-PROMPT-001", "passed"),
        ("ACP-JSONRPC-001", "passed"),
        ("ACP-JSONRPC-003", "passed"),
        ("ACP-INIT-002", "passed"),
        ("ACP-CANCEL-001", "passed"),
        ("ACP-CANCEL-002", "passed"),
        ("ACP-CLIENTCAP-002", "passed"),
        // Put to the fresh agent process of the requirement probes (`requirement_probes.rs`).
        ("ACP-CLIENTCAP-001", "passed"),
        ("CHECKFU-PERMISSION-001", "passed"),
        ("ACP-INIT-003", "passed"),
        // No fault script ran: not put to the agent.
        ("CHECKFU-FAULTS-001", "not_tested"),
    ] {
        assert_eq!(statuses[id], status, "{id}: {pretty}");
    }
    let verdict = &honest.json["requirements_verdict"];
    assert_eq!(verdict["conformant"], false, "{pretty}");
    assert_eq!(verdict["mandatory_failed"], serde_json::json!([]));
    let untested: Vec<&str> =
        verdict["mandatory_not_tested"].as_array().expect("mandatory_not_tested").iter().filter_map(Value::as_str).collect();
    assert_eq!(untested, ["CHECKFU-FAULTS-001"], "{pretty}");

    let put_to_it = probe(&["--no-client-fs", "--permission", "reject"], &agent(&["--declare", "steer,interrupt"]));
    assert_eq!(put_to_it.status, 0, "{}", put_to_it.pretty());
    let statuses = requirement_statuses(&put_to_it);
    assert_eq!(statuses["ACP-CLIENTCAP-001"], "passed", "{}", put_to_it.pretty());
    assert_eq!(statuses["CHECKFU-PERMISSION-001"], "passed", "{}", put_to_it.pretty());

    let twin = probe(&[], &agent(&["--declare", "steer,interrupt", "--float-id"]));
    let pretty = twin.pretty();
    assert_eq!(twin.status, 1, "{pretty}");
    let requirements = twin.json["requirements"].as_array().expect("requirements");
    let jsonrpc = requirements.iter().find(|r| r["id"] == "ACP-JSONRPC-001").expect("ACP-JSONRPC-001");
    assert_eq!(jsonrpc["status"], "failed", "{pretty}");
    assert_eq!(jsonrpc["tier"], "mandatory");
    assert!(jsonrpc["reason"].as_str().is_some_and(|r| r.contains("must come back unchanged")), "{pretty}");
    assert!(twin.json["requirements_verdict"]["mandatory_failed"].as_array().expect("failed").contains(&Value::from("ACP-JSONRPC-001")));
}

/// A `checkfu.turn` the decoder drops (`"model_calls": "0"`) is one the platform never
/// reads: the turn telemetry fails saying so, rather than comparing nothing.
#[test]
fn a_malformed_turn_claim_fails_turn_telemetry_with_why_it_was_dropped() {
    let run = probe(&[], &agent(&["--declare", "steer,interrupt", "--string-turn"]));
    let pretty = serde_json::to_string_pretty(&run.json).unwrap();
    assert_eq!(run.status, 1, "{pretty}");
    let mismatch = run.json["turn_telemetry"]["mismatches"][0].as_str().unwrap_or_default();
    assert!(mismatch.contains("fail-open") && mismatch.contains("/model_calls"), "{pretty}");
}

/// An agent that quits right after its first turn fails teardown, and the ending is the same
/// on every run (its exit and the probe's look at it no longer race).
#[test]
fn an_agent_that_exits_after_its_turn_fails_teardown_with_one_ending() {
    for _ in 0..5 {
        let run = probe(&["--no-cancellation"], &agent(&["--declare", "steer,interrupt", "--exit-after-turn"]));
        let pretty = serde_json::to_string_pretty(&run.json).unwrap();
        assert_eq!(run.status, 1, "{pretty}");
        assert_eq!(run.step("prompt_exchange").0, "passed", "{pretty}");
        assert_eq!(run.step("teardown").0, "failed", "{pretty}");
        assert_eq!(run.json["harness"]["ending"], "exited_before_teardown", "{pretty}");
    }
}
