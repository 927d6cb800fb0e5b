//! The probe's one-shot lane on real CLIs that nobody here wrote, offline, through the relay:
//! `@anthropic-ai/claude-code` (`claude -p`, Anthropic Messages) and `@openai/codex`
//! (`codex exec`, OpenAI Responses), each through its shim and recipe
//! (`recipes/oneshot/`), every declared step: prompt path, stream JSON, resume, output
//! schema. And once with a model that fails every call, which both CLIs meet with an error
//! the probe must report as a failed turn. And a third CLI with no shim and no recipe, Qwen
//! Code (`qwen -p`, OpenAI Chat), through its stdin/text floor with the generic flags only. Installed by `tests/real-agents/install-oneshot.sh
//! DIR`; `CHECKFU_REAL_ONESHOT=DIR` when the tests are built runs them (`.ci/run` does, and
//! sets `CHECKFU_REQUIRE_REAL_ONESHOT`, under which they cannot be ignored).

use crate::probe_support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use probe_support::{assert_no_process_in_group, assert_nothing_left, probe_env, unprivileged, Run, Scratch, Staged, PROBE};
use serde_json::{json, Value};

fn clis() -> Option<PathBuf> {
    std::env::var_os("CHECKFU_REAL_ONESHOT").map(|dir| PathBuf::from(dir).join("node_modules/.bin"))
}

fn path_with(bin: &Path) -> OsString {
    let mut path = OsString::from(bin);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

fn probe(name: &str, extra: &[&str]) -> Run {
    let bin = clis().expect("CHECKFU_REAL_ONESHOT");
    let recipe = format!("{}/recipes/oneshot/{name}.json", crate::support::project::project_root().display());
    let mut options = vec!["--recipe", recipe.as_str(), "--step-timeout", "90", "--deadline", "300"];
    options.extend_from_slice(extra);
    probe_env(&options, &[], &[("PATH", path_with(&bin))])
}

/// The structured answer every output_schema step asks for.
pub(crate) const ANSWER_SCHEMA: &str =
    r#"{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"], "additionalProperties": false}"#;

fn every_step(name: &str, dialect: &str, delivered_as: &str) {
    let scratch = Scratch::new(&format!("real-oneshot-{name}"));
    let schema = scratch.path("answer.schema.json");
    std::fs::write(&schema, ANSWER_SCHEMA).unwrap();
    let run = probe(name, &["--output-schema", &schema]);
    passed_every_step(&run, dialect, delivered_as);
}

/// A CLI's run with resume and an output schema passed every step, by the relay's record:
/// each run's structured answer is a reply token the relay minted for a call of that run,
/// the resume's request carried the first turn's reply, and nothing tried to leave.
pub(crate) fn passed_every_step(run: &Run, dialect: &str, delivered_as: &str) {
    let context = run.pretty();
    assert_eq!(run.status, 0, "{context}");
    for step in ["prompt_exchange", "resume", "output_schema", "teardown"] {
        assert_eq!(run.step(step).0, "passed", "{step}: {context}");
    }
    let runs = run.json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    let session = runs[0]["session_id"].as_str().expect("the first run's session id");
    assert!(runs[1]["argv"].as_array().unwrap().contains(&json!(format!("--resume={session}"))), "{context}");
    let plane = run.plane();
    let calls = plane["calls"].as_array().unwrap();
    for (i, run_) in runs.iter().enumerate() {
        // The answer is the structured value the model answered with: its strings are the
        // reply token the relay minted for a call of that run.
        let answer: Value = serde_json::from_str(run_["answer"].as_str().unwrap()).expect("the answer is JSON");
        let token = answer["answer"].as_str().unwrap_or_default();
        let minted = calls.iter().any(|c| c["turn"] == i + 1 && c["reply_token"] == token);
        assert!(token.starts_with("cfr-") && minted, "run {}: {context}", i + 1);
        assert_eq!(run_["exit"], json!({"code": 0}));
    }
    assert_eq!(plane["dialects_used"], json!([dialect]), "{context}");
    assert_eq!(plane["egress_attempts"], json!([]), "{context}");
    assert_eq!(plane["catalog"]["mismatches"], json!([]), "{context}");
    assert!(calls.iter().any(|c| c["turn"] == 2 && c["earlier_reply_in_request"] == true), "{context}");
    assert_eq!(run.json["output_schema_delivery"], json!([delivered_as]), "{context}");
}

fn failing_model(name: &str) {
    let scratch = Scratch::new(&format!("real-oneshot-fail-{name}"));
    let script = scratch.path("empty.json");
    std::fs::write(&script, "[]").unwrap();
    let run = probe(name, &["--model-script", &script]);
    let context = run.pretty();
    assert_eq!(run.status, 1, "{context}");
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed", "{context}");
    assert!(reason.contains("the stream reported an error") && reason.contains("the relay refused"), "{reason}");
    assert!(!run.plane()["refused"].as_array().unwrap().is_empty());
    assert_eq!(run.step("teardown").0, "passed", "{context}");
}

#[test]
#[cfg_attr(
    not(checkfu_real_oneshot),
    ignore = "CHECKFU_REAL_ONESHOT is not set: run tests/real-agents/install-oneshot.sh DIR and set it to DIR"
)]
fn claude_code_passes_every_step_offline() {
    every_step("claude-code", "anthropic_messages", "tool");
}

#[test]
#[cfg_attr(
    not(checkfu_real_oneshot),
    ignore = "CHECKFU_REAL_ONESHOT is not set: run tests/real-agents/install-oneshot.sh DIR and set it to DIR"
)]
fn codex_passes_every_step_offline() {
    every_step("codex", "openai_responses", "text.format");
}

#[test]
#[cfg_attr(
    not(checkfu_real_oneshot),
    ignore = "CHECKFU_REAL_ONESHOT is not set: run tests/real-agents/install-oneshot.sh DIR and set it to DIR"
)]
fn claude_code_with_a_failing_model_fails_offline() {
    failing_model("claude-code");
}

#[test]
#[cfg_attr(
    not(checkfu_real_oneshot),
    ignore = "CHECKFU_REAL_ONESHOT is not set: run tests/real-agents/install-oneshot.sh DIR and set it to DIR"
)]
fn codex_with_a_failing_model_fails_offline() {
    failing_model("codex");
}

/// Qwen Code's one-shot floor with the generic flags: the prompt on stdin, text out, `-p`.
/// It needs a model name to pick its OpenAI-compatible auth; the two others only stop its
/// usage statistics (which the relay would refuse and record).
const QWEN_ONESHOT: [&str; 13] = [
    "--protocol",
    "oneshot-v1",
    "--prompt-transport",
    "stdin",
    "--output-mode",
    "text",
    "--argv=-p",
    "--env",
    "OPENAI_MODEL=stub",
    "--env",
    "QWEN_USAGE_STATISTICS_ENABLED=false",
    "--env",
    "QWEN_TELEMETRY_ENABLED=false",
];

#[test]
#[cfg_attr(
    not(checkfu_real_oneshot),
    ignore = "CHECKFU_REAL_ONESHOT is not set: run tests/real-agents/install-oneshot.sh DIR and set it to DIR"
)]
fn qwen_code_passes_the_stdin_text_floor_with_generic_flags_offline() {
    let bin = clis().expect("CHECKFU_REAL_ONESHOT");
    let options = [QWEN_ONESHOT.as_slice(), &["--step-timeout", "90"]].concat();
    let run = probe_env(&options, &["qwen"], &[("PATH", path_with(&bin))]);
    let context = run.pretty();
    assert_eq!(run.status, 0, "{context}");
    assert_eq!(run.step("prompt_exchange").0, "passed", "{context}");
    assert_eq!(run.step("teardown").0, "passed", "{context}");
    assert_eq!(run.plane()["dialects_used"], json!(["openai_chat"]), "{context}");
    // Its answer is the model's: the reply token the relay minted, not only the prompt's nonce.
    let token = run.plane()["reply_in_output"].as_str().expect("a reply token reached the output").to_owned();
    assert!(run.json["runs"][0]["answer"].as_str().unwrap().contains(&token), "{context}");
}

/// As an ordinary user (uid 65534 through setpriv when the tests run as root), which is how
/// people run the probe: both CLIs pass every step, fenced in a user namespace.
#[test]
#[cfg_attr(
    not(checkfu_real_oneshot),
    ignore = "CHECKFU_REAL_ONESHOT is not set: run tests/real-agents/install-oneshot.sh DIR and set it to DIR"
)]
fn both_clis_pass_every_step_unprivileged_offline() {
    let bin = clis().expect("CHECKFU_REAL_ONESHOT");
    let scratch = Scratch::new("real-oneshot-unprivileged");
    std::fs::set_permissions(&scratch.0, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let schema = scratch.path("answer.schema.json");
    std::fs::write(&schema, ANSWER_SCHEMA).unwrap();
    for name in ["claude-code", "codex"] {
        let staged = Staged::new(&format!("real-oneshot-{name}"));
        let recipes = staged.tree(&crate::support::project::project_root().join("recipes/oneshot"));
        let recipe = format!("{}/{name}.json", recipes.display());
        let mut command = unprivileged(&staged.file(PROBE));
        command.args([
            "probe",
            "--format",
            "json",
            "--kill-grace",
            "0.5",
            "--step-timeout",
            "90",
            "--recipe",
            &recipe,
            "--output-schema",
            &schema,
        ]);
        command.env("TMPDIR", "/tmp").env("PATH", path_with(&bin));
        let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("probe starts");
        let probe_pid = child.id();
        let output = child.wait_with_output().expect("probe runs");
        let json: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        let context =
            format!("{name}: {}\n{}", serde_json::to_string_pretty(&json).unwrap_or_default(), String::from_utf8_lossy(&output.stderr));
        for run in json["runs"].as_array().into_iter().flatten() {
            assert_no_process_in_group(run["pid"].as_u64().expect("pid") as i32);
        }
        assert_nothing_left(probe_pid);
        assert_eq!(output.status.code(), Some(0), "{context}");
        for step in ["prompt_exchange", "resume", "output_schema", "teardown"] {
            assert_eq!(json["steps"][step]["status"], "passed", "{step}: {context}");
        }
        // Fenced in a user namespace; only a machine that forbids those may fall back, and
        // then the report must say why.
        let plane = &json["model_plane"];
        assert!(plane["fence"] == "user_namespace" || plane["fence_note"].is_string(), "fenced: {context}");
        assert_eq!(json["model_plane"]["egress_attempts"], json!([]), "{context}");
    }
}

/// The built-in `faults` script on both CLIs through their recipes: each run's first call
/// meets the script's next fault (the first run's a rate limit, the resume's an overload),
/// and `model_recovery` is what the record shows: both wait out the rate limit, retry the
/// overload and answer (docs/measurements/fault-recovery.md).
#[test]
#[cfg_attr(
    not(checkfu_real_oneshot),
    ignore = "CHECKFU_REAL_ONESHOT is not set: run tests/real-agents/install-oneshot.sh DIR and set it to DIR"
)]
fn both_clis_recover_from_the_faults_script_as_their_records_show() {
    for name in ["claude-code", "codex"] {
        let run = probe(name, &["--model-script", "faults"]);
        let faults: Vec<&Value> =
            run.plane()["calls"].as_array().expect("calls").iter().map(|c| &c["fault"]).filter(|f| f.is_string()).collect();
        assert_eq!(faults, [&json!("rate_limit"), &json!("overloaded")], "{name}: {}", run.pretty());
        assert_eq!(crate::real_agents::recovery_as_recorded(&run).0, "passed", "{name}");
    }
}

/// Qwen Code 0.24.4 meets a stream cut by asking the model to go on from the cut text ("The
/// connection dropped mid-response. Resume directly …"), without the prompt: no retry by the
/// record's rule, and the run fails `model_recovery` saying so.
#[test]
#[cfg_attr(
    not(checkfu_real_oneshot),
    ignore = "CHECKFU_REAL_ONESHOT is not set: run tests/real-agents/install-oneshot.sh DIR and set it to DIR"
)]
fn qwen_code_goes_on_from_a_cut_stream_without_the_prompt() {
    let bin = clis().expect("CHECKFU_REAL_ONESHOT");
    let scratch = Scratch::new("real-oneshot-qwen-cut");
    let script = scratch.path("cut.json");
    let answer = json!({"text": "The nonce is {nonce}. The reply token is {reply_token}."});
    std::fs::write(&script, json!([{"fault": "stream_cut", "after_events": 2}, answer, answer, answer]).to_string()).expect("script");
    let options = [QWEN_ONESHOT.as_slice(), &["--model-script", &script, "--step-timeout", "90"]].concat();
    let run = probe_env(&options, &["qwen"], &[("PATH", path_with(&bin))]);
    let (status, reason) = crate::real_agents::recovery_as_recorded(&run);
    assert_eq!(status, "failed", "{}", run.pretty());
    assert!(reason.contains("did not retry the stream_cut of call 1") && reason.contains("carried the prompt again"), "{}", run.pretty());
    // It did go on: a later call of the turn, without the prompt, whose token reached the output.
    let calls = run.plane()["calls"].as_array().expect("calls");
    let answer = run.json["runs"][0]["answer"].as_str().unwrap_or_default();
    let went_on =
        calls[1..].iter().any(|c| c["nonce_in_request"] == false && c["reply_token"].as_str().is_some_and(|t| answer.contains(t)));
    assert!(went_on, "{}", run.pretty());
}

/// Qwen Code over ACP (`qwen --acp`, the package this lane installs) with the built-in
/// `faults` script: it waits out the rate limit and answers, as the record shows, and its
/// second prompt, cancelled mid-answer, ends `cancelled`.
#[test]
#[cfg_attr(
    not(checkfu_real_oneshot),
    ignore = "CHECKFU_REAL_ONESHOT is not set: run tests/real-agents/install-oneshot.sh DIR and set it to DIR"
)]
fn qwen_code_over_acp_waits_out_the_faults_scripts_rate_limit() {
    let bin = clis().expect("CHECKFU_REAL_ONESHOT");
    let options = [
        "--env",
        "OPENAI_MODEL=stub",
        "--env",
        "QWEN_USAGE_STATISTICS_ENABLED=false",
        "--env",
        "QWEN_TELEMETRY_ENABLED=false",
        "--model-script",
        "faults",
        "--step-timeout",
        "90",
    ];
    let run = probe_env(&options, &["qwen", "--acp"], &[("PATH", path_with(&bin))]);
    if let Some(pid) = run.json["harness"]["pid"].as_u64() {
        assert_no_process_in_group(pid as i32);
    }
    assert_eq!(run.step("prompt_exchange").0, "passed", "{}", run.pretty());
    assert_eq!(run.plane()["dialects_used"], json!(["openai_chat"]), "{}", run.pretty());
    assert_eq!(crate::real_agents::recovery_as_recorded(&run).0, "passed", "{}", run.pretty());
    assert_eq!(run.plane()["calls"][0]["fault"], "rate_limit", "{}", run.pretty());
    // Over ACP it is judged on cancellation too. It stopped the streamed answer and said so
    // while the cancel was the second turn; since it became the third (after the platform
    // tool's, which qwen-code fails: it never offers the granted tool to the model), a CI run
    // (2026-12-07) saw the model's answer left in flight after the cancel under this script.
    // A miss measured, not yet examined: either outcome, and only these.
    match run.step("cancellation") {
        ("passed", _) => assert_eq!(run.json["cancellation"]["stop_reason"], "cancelled", "{}", run.pretty()),
        other => {
            assert_eq!(other, ("failed", "the model's answer was still in flight to the harness after the cancel"), "{}", run.pretty())
        }
    }
}
