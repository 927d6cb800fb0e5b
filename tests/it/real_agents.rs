//! The probe on real ACP agents that nobody here wrote, offline, through the relay:
//! `@zed-industries/claude-code-acp` 0.16.2 (Anthropic Messages) and
//! `@zed-industries/codex-acp` 0.16.0 (OpenAI Responses), each with its launch recipe
//! (`recipes/`) and both model scripts, and fault scripts on them and on
//! `@zed-industries/claude-agent-acp` 0.23.1 (with claude-code-acp's recipe). Installed by `tests/real-agents/install.sh DIR`;
//! `CHECKFU_REAL_AGENTS=DIR` when the tests are built runs them (`.ci/run` does, and sets
//! `CHECKFU_REQUIRE_REAL_AGENTS` so that there they cannot be ignored); otherwise the runner
//! lists them as ignored. Both agents also take a turn with the probe unprivileged (uid
//! 65534 through `setpriv` when the tests run as root), fenced in a user namespace from
//! which the host's loopback is out of reach. OpenCode, Kilo and GitHub Copilot CLI (each
//! pinned by the same script, in a tree of their own) take a turn and a cancel with generic
//! flags only.

use crate::probe_support;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use probe_support::{
    assert_no_process_in_group, probe_env, probe_unprivileged, unprivileged, unprivileged_uid, Run, Scratch, Staged, PROBE,
};
use serde_json::{json, Value};

/// The agents' bin directory (the tests using it are ignored unless `CHECKFU_REAL_AGENTS`
/// was set when they were built).
fn agents() -> Option<PathBuf> {
    std::env::var_os("CHECKFU_REAL_AGENTS").map(|dir| PathBuf::from(dir).join("node_modules/.bin"))
}

const IGNORED: &str = "CHECKFU_REAL_AGENTS is not set: run tests/real-agents/install.sh DIR and set it to DIR";

fn path_with(bin: &std::path::Path) -> OsString {
    let mut path = OsString::from(bin);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

pub(crate) fn recipe(name: &str) -> String {
    format!("{}/recipes/{name}.json", crate::support::project::project_root().display())
}

/// One agent, one script: every assertion the issue lists.
fn turn(bin: &std::path::Path, entry: &str, dialect: &str, script: &str, declaration_mismatches: usize) {
    turn_with(entry, dialect, script, declaration_mismatches, &[], &[("PATH", path_with(bin))], false);
}

/// [`turn`] with more options (`--image REF`: the agent inside an image) and the probe's
/// variables, the probe run [`unprivileged`] when asked.
pub(crate) fn turn_with(
    entry: &str,
    dialect: &str,
    script: &str,
    declaration_mismatches: usize,
    more: &[&str],
    env: &[(&str, OsString)],
    unprivileged: bool,
) -> Run {
    let scratch = Scratch::new(&format!("real-{entry}-{script}"));
    if unprivileged {
        // The unprivileged probe writes its record and trace here.
        std::fs::set_permissions(&scratch.0, std::os::unix::fs::PermissionsExt::from_mode(0o777)).expect("chmod");
    }
    let (record, trace) = (scratch.path("record.jsonl"), scratch.path("trace.jsonl"));
    // Uid 65534 reads the recipe from a staged copy (the clone may be private).
    let staged = Staged::new(&format!("real-{entry}"));
    let recipe = if unprivileged { staged.file(&recipe(entry)) } else { recipe(entry) };
    let mut options = vec![
        "--recipe",
        &recipe,
        "--model-script",
        script,
        "--record",
        &record,
        "--trace",
        &trace,
        "--deadline",
        "180",
        "--step-timeout",
        "90",
    ];
    options.extend_from_slice(more);
    let run = if unprivileged { probe_unprivileged(&options, &[], env) } else { probe_env(&options, &[], env) };
    let context = format!("{entry} / {script}: {}", run.pretty());
    for step in ["initialize_handshake", "session_start", "prompt_exchange", "cancellation", "teardown"] {
        assert_eq!(run.step(step).0, "passed", "{step}: {context}");
    }
    // Both agents stream: the cancel went out on the first words of the model's answer,
    // and the agent closed that stream.
    assert_eq!(run.json["cancellation"]["trigger"], "first_chunk", "{context}");
    assert_eq!(run.json["cancellation"]["stop_reason"], "cancelled", "{context}");
    let plane = run.plane();
    if unprivileged {
        assert_eq!(plane["fence"], "user_namespace", "{context}");
    }
    assert_eq!(plane["nonce_at_relay"], true, "{context}");
    assert_eq!(plane["nonce_in_output"], true, "{context}");
    // The agent passed the model's answer on: the reply token the relay minted for the call.
    assert!(plane["reply_in_output"].as_str().is_some_and(|t| t.starts_with("cfr-")), "{context}");
    // The dialect spoken is the one the catalog declares for the entry (its generated table,
    // as the report carries it), and the one this test expects of the agent.
    assert_eq!(plane["dialects_used"], plane["catalog"]["dialects"], "{context}");
    assert_eq!(plane["dialects_used"], json!([dialect]), "{context}");
    assert_eq!(plane["catalog"]["harness"], entry);
    // Every refusal is an egress attempt (403) or a path the allow-list lacks (404): reported,
    // not fatal.
    for refusal in plane["refused"].as_array().expect("list") {
        assert!(refusal["status"] == 403 || refusal["status"] == 404, "{refusal}: {context}");
    }
    let egress_refusals = plane["refused"].as_array().expect("list").iter().filter(|r| r["status"] == 403).count();
    assert_eq!(plane["egress_attempts"].as_array().map(Vec::len), Some(egress_refusals), "each egress attempt is recorded");
    let mismatches = plane["catalog"]["mismatches"].as_array().expect("list");
    assert_eq!(mismatches.len(), declaration_mismatches, "{context}");
    assert!(mismatches.iter().all(|m| m.as_str().unwrap_or_default().contains("declares")), "only declaration differences: {context}");
    let missed = measured_misses(entry, &run);
    assert_eq!(run.status, if declaration_mismatches == 0 && missed.is_empty() { 0 } else { 1 }, "{context}");
    if script == "tool" {
        assert_eq!(plane["tool"], json!({"called": true, "result_returned": true}), "{context}");
        assert_eq!(run.check("tool_correlation"), "pass", "{context}");
        let settled = std::fs::read_to_string(&trace).expect("trace").lines().any(|l| l.contains("\"tool_result\""));
        assert!(settled, "a tool use and its result: {context}");
    }
    // --record decodes with zero rejections, unless the run failed the schema's requirement
    // (the record then holds what it refused: codex-acp's fresh process answers a
    // notification with an error that has no id).
    let decoded = Command::new(PROBE).args(["decode", &record]).output().expect("decode runs");
    let refused = run.json["requirements"].as_array().into_iter().flatten().any(|r| r["id"] == "ACP-SCHEMA-001" && r["status"] == "failed");
    if !refused {
        assert!(decoded.status.success(), "decode rejected part of the record: {}", String::from_utf8_lossy(&decoded.stdout));
    }
    // conform on --trace gives the probe's verdicts.
    let conform = Command::new(PROBE).args(["conform", "--format", "json", &trace]).output().expect("conform runs");
    let verdicts: Value = serde_json::from_slice(&conform.stdout).expect("conform JSON");
    assert_eq!(verdicts["checks"], run.json["checks"], "{context}");
    run
}

/// What each real agent was measured not to meet (2026-12-07, the pinned versions of
/// `tests/real-agents/install.sh`): the steps it may fail and the binding requirements
/// (mandatory, or of a capability it offers) it may fail. A run may miss fewer (some misses
/// depend on timing: codex-acp's update for its other session), never another: a new miss is
/// a regression or a probe bug to look at. `docs/guide/probing-acp.md` lists them.
const MEASURED_MISSES: &[(&str, &[&str], &[&str])] = &[
    // codex-acp starts the granted MCP servers (stdio, and HTTP, which it advertises) and
    // lists their tools, but never offers them to the model; it answers an unknown `_`
    // notification with an error (with no id), sends an update for another session while one
    // is prompted, and fails `session/load` and `session/resume` (-32002) that it advertises.
    // The id-less error is read past by the fresh process (it used to fail whichever request
    // was out: `session/set_mode`, in some runs `session/list`).
    ("codex", &["platform_tool", "platform_tool_http"], &["ACP-SCHEMA-001", "ACP-PROMPT-002", "ACP-LOAD-001", "ACP-RESUME-001"]),
    // claude-code-acp meets every requirement put to it on the host in most runs (in one of
    // three, its `session/load` failed there too, as it does in an image); in an image
    // (`image_real`), its fresh process answered `session/load`, `session/resume` and the
    // image and embedded-context prompts it advertises with -32603 ("Session not found",
    // "Query closed", "Claude Code process exited with code 1"): not examined yet.
    ("claude-code", &[], &["ACP-LOAD-001", "ACP-RESUME-001", "ACP-PROMPTCAP-001", "ACP-PROMPTCAP-003"]),
    // Copilot never starts the granted MCP server, its advertised `session/load` refuses
    // a session it has loaded already, and its `session/close` of a session whose prompt is
    // in flight is answered `{}` while the prompt is not answered within 5 s.
    ("Copilot", &["platform_tool"], &["ACP-LOAD-001", "ACP-CLOSE-002"]),
];

/// The misses of `run` by the agent `name` (a catalog entry, or the test's name for it),
/// each held to [`MEASURED_MISSES`]: a failed step or a failed binding requirement the
/// table does not list for it fails the test.
fn measured_misses(name: &str, run: &Run) -> Vec<String> {
    let (steps, requirements) =
        MEASURED_MISSES.iter().find(|(agent, _, _)| *agent == name).map_or((&[][..], &[][..]), |(_, s, r)| (*s, *r));
    let mut missed = Vec::new();
    for (step, value) in run.json["steps"].as_object().into_iter().flatten() {
        if value["status"] == "failed" {
            assert!(steps.contains(&step.as_str()), "{name} failed step `{step}`, not a measured miss: {}", run.pretty());
            missed.push(step.clone());
        }
    }
    let verdict = &run.json["requirements_verdict"];
    let failed = ["mandatory_failed", "capability_failed"].iter().flat_map(|k| verdict[*k].as_array().cloned().unwrap_or_default());
    for id in failed {
        let id = id.as_str().unwrap_or_default().to_owned();
        assert!(requirements.contains(&id.as_str()), "{name} failed requirement {id}, not a measured miss: {}", run.pretty());
        missed.push(id);
    }
    missed
}

#[test]
#[cfg_attr(not(checkfu_real_agents), ignore = "CHECKFU_REAL_AGENTS is not set: run tests/real-agents/install.sh DIR and set it to DIR")]
fn claude_code_acp_takes_whole_turns_through_the_relay() {
    let bin = agents().expect(IGNORED);
    // The catalog records that claude-code declares `subagents: observed`; this upstream
    // adapter declares nothing, which the probe reports as a mismatch (and exit 1).
    turn(&bin, "claude-code", "anthropic_messages", "nonce", 1);
    turn(&bin, "claude-code", "anthropic_messages", "tool", 1);
}

#[test]
#[cfg_attr(not(checkfu_real_agents), ignore = "CHECKFU_REAL_AGENTS is not set: run tests/real-agents/install.sh DIR and set it to DIR")]
fn codex_acp_takes_whole_turns_through_the_relay() {
    let bin = agents().expect(IGNORED);
    turn(&bin, "codex", "openai_responses", "nonce", 0);
    turn(&bin, "codex", "openai_responses", "tool", 0);
}

/// Both agents, the probe unprivileged: the fence is a user namespace, the turn passes
/// through the relay with the `tool` script, and a port on the host's 127.0.0.1 cannot be
/// reached from inside (probed by a wrapper that then execs the agent, in the fence).
#[test]
#[cfg_attr(not(checkfu_real_agents), ignore = "CHECKFU_REAL_AGENTS is not set: run tests/real-agents/install.sh DIR and set it to DIR")]
fn both_agents_take_a_turn_unprivileged_fenced_through_the_relay() {
    let bin = agents().expect(IGNORED);
    let host = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("a host loopback listener");
    let port = host.local_addr().expect("addr").port();
    for (entry, program) in [("claude-code", "claude-code-acp"), ("codex", "codex-acp")] {
        let scratch = Scratch::new(&format!("real-unprivileged-{entry}"));
        std::fs::set_permissions(&scratch.0, std::os::unix::fs::PermissionsExt::from_mode(0o777)).expect("chmod");
        let seen = scratch.path("seen.txt");
        let script = format!("(id -u; if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo reached; else echo unreachable; fi) > {seen}; exec {program}");
        let staged = Staged::new(&format!("real-unprivileged-{entry}"));
        let recipes = staged.tree(&crate::support::project::project_root().join("recipes"));
        let recipe = format!("{}/{entry}.json", recipes.display());
        let mut command = unprivileged(&staged.file(PROBE));
        command.args([
            "probe",
            "--format",
            "json",
            "--recipe",
            &recipe,
            "--model-script",
            "tool",
            "--deadline",
            "180",
            "--step-timeout",
            "90",
        ]);
        command.args(["--", "bash", "-c", &script]).env("PATH", path_with(&bin)).env("TMPDIR", "/tmp");
        let output = command.output().expect("probe runs");
        let json: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        let context =
            format!("{entry}: {}\n{}", serde_json::to_string_pretty(&json).unwrap_or_default(), String::from_utf8_lossy(&output.stderr));
        if let Some(pid) = json["harness"]["pid"].as_u64() {
            assert_no_process_in_group(pid as i32);
        }
        for step in ["initialize_handshake", "session_start", "prompt_exchange", "cancellation", "teardown"] {
            assert_eq!(json["steps"][step]["status"], "passed", "{step}: {context}");
        }
        let plane = &json["model_plane"];
        assert_eq!(plane["fence"], "user_namespace", "{context}");
        assert_eq!(plane["tool"], json!({"called": true, "result_returned": true}), "{context}");
        let text = std::fs::read_to_string(&seen).expect("the wrapper wrote what it saw");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.first().copied(), Some(unprivileged_uid().as_str()), "{text}");
        assert_eq!(lines.get(1).copied(), Some("unreachable"), "the host's 127.0.0.1:{port} from inside: {text}");
    }
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(), "reachable from outside: the check is not vacuous");
}

/// `model_recovery` as the relay's record (a report's `model_plane`) shows it, worked out here
/// apart from the probe's `verdict::recovery`: the status the step must have, and the call
/// (from 1) whose fault a failure must name. A transient fault is recovered when a later call
/// of its turn asks again what it asked (the prompt when it carried it), a rate limit's not
/// before its `retry_after`; the turn is answered when a reply token reached the output; a
/// failure after every retry names the first turn's last fault.
pub(crate) fn recovery_in_record(plane: &Value) -> (&'static str, Option<usize>) {
    let calls = plane["calls"].as_array().expect("calls");
    let ms = |call: &Value| call["started_ms"].as_u64().expect("started_ms");
    for (i, call) in calls.iter().enumerate() {
        if call["fault"].is_null() || call["fault"] == "context_overflow" {
            continue;
        }
        let again = |c: &&Value| c["turn"] == call["turn"] && c["nonce_in_request"] == call["nonce_in_request"];
        let Some(retry) = calls[i + 1..].iter().find(again) else { return ("failed", Some(i + 1)) };
        if call["retry_after"].as_u64().is_some_and(|s| ms(retry) + 10 < ms(call) + s * 1000) {
            return ("failed", Some(i + 1));
        }
    }
    if plane["reply_in_output"].is_string() {
        return ("passed", None);
    }
    let first = calls.first().map(|c| c["turn"].clone()).unwrap_or_default();
    ("failed", calls.iter().rposition(|c| c["fault"].is_string() && c["turn"] == first).map(|i| i + 1))
}

/// The run's `model_recovery` is what its record shows ([`recovery_in_record`]), a failure
/// naming the call the record says; and a fault fell on a call of the turn, so the verdict is
/// about the turn. Returns the status and the reason.
pub(crate) fn recovery_as_recorded(run: &Run) -> (String, String) {
    let context = run.pretty();
    let calls = run.plane()["calls"].as_array().expect("calls");
    assert!(calls.iter().any(|c| c["fault"].is_string() && c["nonce_in_request"] == true), "a fault on the turn's call: {context}");
    let (status, named) = recovery_in_record(run.plane());
    let (step, reason) = run.step("model_recovery");
    assert_eq!(step, status, "the verdict the record shows: {context}");
    if let Some(call) = named {
        let fault = calls[call - 1]["fault"].as_str().expect("a fault");
        let named = format!("{} of call {call} ", fault.replace("rate_limit", "rate limit"));
        assert!(reason.contains(&named) || reason.contains(&format!("{fault} of call {call} ")), "names {named}: {context}");
    }
    (step.to_owned(), reason.to_owned())
}

/// A fault script's run of a real agent through its recipe, judged by the record alone.
fn recovery_run(bin: &std::path::Path, entry: &str, script: &str, command: &[&str]) -> Run {
    let recipe = recipe(entry);
    let options = ["--recipe", &recipe, "--model-script", script, "--deadline", "180", "--step-timeout", "90"];
    let run = probe_env(&options, command, &[("PATH", path_with(bin))]);
    if let Some(pid) = run.json["harness"]["pid"].as_u64() {
        assert_no_process_in_group(pid as i32);
    }
    run
}

/// What both Claude adapters do with a stream cut, as the record shows: `model_recovery` fails,
/// naming the cut, because the retry (made without a stream) was answered with a reply token
/// that never reached the output.
fn assert_cut_retry_lost(cut: &Run) {
    let (status, reason) = recovery_as_recorded(cut);
    assert_eq!(status, "failed");
    let calls = cut.plane()["calls"].as_array().expect("calls");
    let retry = calls.iter().rev().find(|c| c["nonce_in_request"] == true).expect("a retry");
    assert_eq!((&retry["stream"], retry["reply_token"].is_string()), (&json!(false), true), "{}", cut.pretty());
    assert!(reason.contains("retried the stream_cut") && reason.contains("no reply token"), "{}", cut.pretty());
}

/// A script file: one fault entry, then answers as `nonce` gives them.
fn one_fault(scratch: &Scratch, fault: Value) -> String {
    let answer = json!({"text": "The nonce is {nonce}. The reply token is {reply_token}."});
    let file = scratch.path("fault.json");
    std::fs::write(&file, json!([fault, answer, answer, answer]).to_string()).expect("script");
    file
}

/// The faults on the two agents, as the record shows them (docs/measurements/fault-recovery.md):
/// claude-code-acp waits out the `faults` script's rate limit and answers; codex-acp 0.16.0
/// gives up on a 429 with no second call ("exceeded retry limit, last status: 429"); and
/// claude-code-acp retries a stream cut without a stream, whose answer it never passes on.
#[test]
#[cfg_attr(not(checkfu_real_agents), ignore = "CHECKFU_REAL_AGENTS is not set: run tests/real-agents/install.sh DIR and set it to DIR")]
fn real_agents_recover_from_faults_as_their_records_show() {
    let bin = agents().expect(IGNORED);
    let claude = recovery_run(&bin, "claude-code", "faults", &[]);
    assert_eq!(claude.step("prompt_exchange").0, "passed", "{}", claude.pretty());
    assert_eq!(recovery_as_recorded(&claude).0, "passed");
    let codex = recovery_run(&bin, "codex", "faults", &[]);
    let (status, reason) = recovery_as_recorded(&codex);
    assert_eq!(status, "failed");
    assert!(reason.contains("gave up on the rate_limit of call 1 (status 429)"), "{}", codex.pretty());
    let scratch = Scratch::new("real-claude-code-stream-cut");
    let cut = recovery_run(&bin, "claude-code", &one_fault(&scratch, json!({"fault": "stream_cut", "after_events": 2})), &[]);
    assert_cut_retry_lost(&cut);
}

/// claude-agent-acp 0.23.1, Zed's newer adapter, meets a stream cut as claude-code-acp does:
/// its SDK retries without a stream, and the answer to that retry never reaches the client.
/// Without the fault it passes, its cancel included.
#[test]
#[cfg_attr(not(checkfu_real_agents), ignore = "CHECKFU_REAL_AGENTS is not set: run tests/real-agents/install.sh DIR and set it to DIR")]
fn claude_agent_acp_loses_the_answer_to_its_retry_of_a_cut_stream() {
    let dir = std::env::var_os("CHECKFU_REAL_AGENTS").map(PathBuf::from).expect(IGNORED);
    let bin = dir.join("claude-agent-acp/node_modules/.bin");
    let scratch = Scratch::new("real-claude-agent-acp-stream-cut");
    let script = one_fault(&scratch, json!({"fault": "stream_cut", "after_events": 2}));
    let cut = recovery_run(&bin, "claude-code", &script, &["claude-agent-acp"]);
    assert_cut_retry_lost(&cut);
    assert_eq!(cut.step("prompt_exchange").0, "failed", "{}", cut.pretty());
    // Without the fault it takes the turn, and its second prompt, cancelled on the first
    // streamed words, is answered `cancelled` with the model's stream closed.
    // (The run exits 1 all the same: like claude-code-acp, it does not declare the subagents
    // the catalog's `claude-code` entry declares.)
    let plain = recovery_run(&bin, "claude-code", "nonce", &["claude-agent-acp"]);
    for step in ["prompt_exchange", "cancellation", "teardown"] {
        assert_eq!(plain.step(step).0, "passed", "{step}: {}", plain.pretty());
    }
    let cancel = &plain.json["cancellation"];
    assert_eq!((cancel["trigger"].as_str(), cancel["stop_reason"].as_str()), (Some("first_chunk"), Some("cancelled")), "{cancel}");
    assert_eq!((cancel["calls_after_cancel"].as_u64(), cancel["streams_open"].as_u64()), (Some(0), Some(0)), "{cancel}");
}

/// Both agents under a window smaller than their first request (their system prompts alone
/// pass it), with a compaction policy admitted: neither refuses `checkfu.runtime_config` (they
/// do not know it), neither compacts on the context-length error, and `context_compaction`
/// says each gave up after the overflow the relay recorded, while `prompt_exchange` fails on
/// the turn the agent ended. What the adapters do today, held so a change shows.
#[test]
#[cfg_attr(not(checkfu_real_agents), ignore = "CHECKFU_REAL_AGENTS is not set: run tests/real-agents/install.sh DIR and set it to DIR")]
fn both_agents_meet_an_enforced_window_and_do_not_compact() {
    let bin = agents().expect(IGNORED);
    for entry in ["claude-code", "codex"] {
        let recipe = recipe(entry);
        let options =
            ["--recipe", &recipe, "--context-window", "2000", "--compaction", "summarize", "--deadline", "180", "--step-timeout", "90"];
        let run = probe_env(&options, &[], &[("PATH", path_with(&bin))]);
        let context = format!("{entry}: {}", run.pretty());
        assert_eq!(run.step("session_start").0, "passed", "{context}");
        assert_eq!(run.step("prompt_exchange").0, "failed", "{context}");
        let (status, reason) = run.step("context_compaction");
        assert_eq!(status, "failed", "{context}");
        assert!(reason.starts_with("the harness gave up after the context overflow of call"), "{context}");
        let calls = run.plane()["calls"].as_array().cloned().unwrap_or_default();
        let overflowed = calls.iter().find(|c| c["fault"] == "context_overflow").expect(&context);
        assert!(overflowed["status"] == 400 && overflowed["estimated_tokens"].as_u64() > Some(2000), "{context}");
        assert_eq!(run.json["context_compaction"]["claimed"], json!([]), "{context}");
    }
}

/// Three more ACP agents nobody here configured, each launched with the generic flags a harness
/// author would pass, its provider pointed at the relay by a home file or variables: OpenCode
/// 1.18.33 and Kilo 7.7.9 (`acp`; an OpenAI-compatible provider in their config speaks Chat
/// Completions) and GitHub Copilot CLI 1.0.102 (`--acp`, its bring-your-own-key variables). Each
/// takes a turn, passes the model's answer on, and when its second prompt is cancelled on the
/// first streamed words answers `cancelled` having closed the model's stream, with no call after.
#[test]
#[cfg_attr(not(checkfu_real_agents), ignore = "CHECKFU_REAL_AGENTS is not set: run tests/real-agents/install.sh DIR and set it to DIR")]
fn opencode_kilo_and_copilot_take_a_turn_and_stop_on_the_cancel() {
    let dir = PathBuf::from(std::env::var_os("CHECKFU_REAL_AGENTS").expect(IGNORED)).join("more/node_modules");
    let provider = r#"{"provider": {"relay": {"npm": "@ai-sdk/openai-compatible", "name": "relay", "options": {"baseURL": "{relay_url}/v1", "apiKey": "{api_key}"}, "models": {"stub": {"name": "stub"}}}}, "model": "relay/stub", "autoupdate": false, "share": "disabled"}"#;
    let (opencode_config, kilo_config) =
        (format!(".config/opencode/opencode.json={provider}"), format!(".config/kilo/kilo.json={provider}"));
    let binary = |path: &str| dir.join(path).to_string_lossy().into_owned();
    let (opencode, kilo, copilot) =
        (binary("opencode-linux-x64/bin/opencode"), binary("@kilocode/cli-linux-x64/bin/kilo"), binary(".bin/copilot"));
    let copilot_env =
        ["--env", "COPILOT_PROVIDER_BASE_URL={relay_url}/v1", "--env", "COPILOT_PROVIDER_API_KEY={api_key}", "--env", "COPILOT_MODEL=stub"];
    let agents: [(&str, Vec<&str>, Vec<&str>); 3] = [
        ("OpenCode", vec!["--home-file", &opencode_config], vec![&opencode, "acp"]),
        ("Kilo", vec!["--home-file", &kilo_config], vec![&kilo, "acp"]),
        ("Copilot", copilot_env.to_vec(), vec![&copilot, "--acp"]),
    ];
    for (name, mut options, command) in agents {
        options.extend(["--deadline", "180", "--step-timeout", "90"]);
        let run = probe_env(&options, &command, &[]);
        let context = format!("{name}: {}", run.pretty());
        let missed = measured_misses(name, &run);
        assert_eq!(run.status, if missed.is_empty() { 0 } else { 1 }, "{context}");
        for step in ["initialize_handshake", "session_start", "prompt_exchange", "cancellation", "teardown"] {
            assert_eq!(run.step(step).0, "passed", "{step}: {context}");
        }
        let cancel = &run.json["cancellation"];
        // OpenCode, since it is granted the MCP server over HTTP (which it reaches, and whose
        // turn comes before the cancellation's), sent no chunk of the cancellation turn's
        // answer within the probe's hold in two runs of two (2026-12-07), so the cancel went
        // out on the call in flight; the cause is not examined yet. The others still cancel on
        // the first chunk.
        let triggers: &[&str] = if name == "OpenCode" { &["first_chunk", "call_in_flight"] } else { &["first_chunk"] };
        assert!(triggers.iter().any(|t| cancel["trigger"] == *t), "{context}");
        assert_eq!(cancel["stop_reason"], "cancelled", "{context}");
        assert_eq!((cancel["calls_after_cancel"].as_u64(), cancel["streams_open"].as_u64()), (Some(0), Some(0)), "{context}");
        let plane = run.plane();
        assert_eq!((&plane["nonce_at_relay"], &plane["nonce_in_output"]), (&json!(true), &json!(true)), "{context}");
        assert!(plane["reply_in_output"].as_str().is_some_and(|t| t.starts_with("cfr-")), "{context}");
        assert_eq!(plane["dialects_used"], json!(["openai_chat"]), "{context}");
    }
}
