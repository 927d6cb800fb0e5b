//! `probe --protocol oneshot-v1` on the fixture CLI (`tests/fixture-oneshot/cli.py`, Python's
//! standard library as the model client): each declared path passes, each way real CLIs
//! fail while exiting 0 is caught from the relay's record, a hung CLI is stopped and leaves
//! nothing, and a declaration the decoder refuses exits 2 with nothing started. Every run
//! asserts (in `probe_support`) that no process of any run's group and no directory of the
//! probe's is left.

use crate::probe_support;

use std::ffi::OsString;

use probe_support::{probe, probe_env, Run, Scratch};
use serde_json::{json, Value};

const CLI: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixture-oneshot/cli.py");
const HOSTILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixture-oneshot/hostile.py");

fn oneshot(flags: &[&str]) -> Vec<String> {
    let mut options = vec!["--protocol", "oneshot-v1"];
    options.extend_from_slice(flags);
    options.into_iter().map(str::to_owned).collect()
}

fn run(flags: &[&str], mode: &str) -> Run {
    let options = oneshot(flags);
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    probe_env(&options, &[CLI], &[("CHECKFU_FIXTURE_MODE", OsString::from(mode))])
}

/// The steps reported, which are always the catalog's (`[[oneshot.steps]]`) in its order.
fn steps(run: &Run) -> Vec<String> {
    let reported: Vec<String> = run.json["steps"].as_object().map(|s| s.keys().cloned().collect()).unwrap_or_default();
    let mut catalog = checkfu_wire::catalog::ONESHOT_STEPS.iter().map(|s| s.step.name());
    assert!(reported.iter().all(|r| catalog.any(|c| c == r)), "{reported:?} are not the catalog's steps in its order");
    reported
}

const TEXT: [&str; 4] = ["--prompt-transport", "stdin", "--output-mode", "text"];
const STREAM: [&str; 7] =
    ["--prompt-transport", "argv_path", "--output-mode", "stream_json", "--argv=--stream", "--argv=--prompt-path", "--argv={prompt_path}"];

fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

#[test]
fn the_stdin_text_floor_passes_and_reports_each_run() {
    let run = run(&TEXT, "good");
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(steps(&run), ["prompt_exchange", "teardown"], "undeclared steps are omitted");
    assert_eq!(run.json["protocol"], "oneshot-v1");
    assert_eq!(run.json["driver"], checkfu_wire::catalog::ONESHOT_DRIVER);
    for acp in ["admission", "checks", "client_requests", "wire", "requirements", "requirements_verdict"] {
        assert!(run.json.get(acp).is_none(), "no ACP member `{acp}` in a one-shot report");
    }
    let first = &run.json["runs"][0];
    assert_eq!(first["argv"], json!([CLI]));
    let nonce = run.json["nonce"].as_str().expect("nonce");
    assert!(first["stdin"].as_str().unwrap().contains(nonce));
    assert_eq!(first["exit"], json!({"code": 0}));
    assert_eq!(first["ending"], "exited_before_teardown");
    assert!(first["answer"].as_str().unwrap().contains(nonce));
    assert_eq!(first["checks"]["terminal_observation"]["status"], "pass");
    assert_eq!(run.plane()["nonce_at_relay"], true);
    assert_eq!(run.plane()["calls"][0]["turn"], 1);
}

#[test]
fn the_prompt_path_and_stream_json_paths_pass() {
    let run = run(&STREAM, "good");
    assert_eq!(run.status, 0, "{}", run.pretty());
    let first = &run.json["runs"][0];
    assert_eq!(first["stdin"], Value::Null);
    let argv: Vec<&str> = first["argv"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(&argv[..3], [CLI, "--stream", "--prompt-path"]);
    assert!(argv[3].ends_with("/prompt-1.txt"), "{argv:?}");
    assert_eq!(first["event_kinds"], json!(["session", "text_delta", "text", "usage", "terminal"]));
    assert!(first["session_id"].is_string());
    let trace = first["trace"].as_str().unwrap();
    let kinds: Vec<String> =
        trace.lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_owned()).collect();
    assert_eq!(kinds, ["ready", "output", "output", "output", "terminal"]);
}

#[test]
fn resume_passes_only_when_the_second_request_carries_the_first_nonce() {
    let by_id = with(&STREAM, &["--argv={resume_flag}", "--resume-flag=--resume={session_id}"]);
    let good = run(&by_id, "good");
    assert_eq!(good.status, 0, "{}", good.pretty());
    assert_eq!(steps(&good), ["prompt_exchange", "resume", "teardown"]);
    let session = good.json["runs"][0]["session_id"].as_str().unwrap();
    let second: Vec<&str> = good.json["runs"][1]["argv"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(second.last().copied(), Some(format!("--resume={session}").as_str()));
    let calls = good.plane()["calls"].as_array().unwrap();
    assert_eq!(calls[1]["turn"], 2);
    assert_eq!(calls[1]["earlier_reply_in_request"], true, "the model's first answer came back to it");

    let lost = run(&by_id, "lost-resume");
    assert_eq!(lost.status, 1);
    assert_eq!(lost.step("prompt_exchange").0, "passed");
    let (status, reason) = lost.step("resume");
    assert_eq!(status, "failed");
    assert!(reason.contains("did not hold the model's first answer"), "{reason}");

    // The floor's resume: a bare flag that continues the latest session, in text mode.
    let bare = run(&with(&TEXT, &["--argv={resume_flag}", "--resume-flag=--resume"]), "good");
    assert_eq!(bare.status, 0, "{}", bare.pretty());
    let first: Vec<&str> = bare.json["runs"][0]["argv"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(first, [CLI], "{{resume_flag}} is dropped on the first run");
}

#[test]
fn an_exit_zero_with_an_error_as_the_answer_fails_and_names_the_refusal() {
    let run = run(&TEXT, "error-exit0");
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(run.json["runs"][0]["exit"], json!({"code": 0}));
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("no call reached the model") && reason.contains("404 /v1/nope"), "{reason}");
}

#[test]
fn an_echo_of_the_prompt_carries_the_nonce_but_fails() {
    let run = run(&TEXT, "echo");
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(run.json["runs"][0]["exit"], json!({"code": 0}));
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("no call reached the model") && reason.contains("could write without the model"), "{reason}");
    assert_eq!(run.plane()["nonce_in_output"], true);
    assert_eq!(run.plane()["nonce_at_relay"], false);
}

#[test]
fn an_error_event_or_a_missing_terminal_fails_whatever_the_exit_status() {
    let error = run(&STREAM, "stream-error");
    assert_eq!(error.status, 1, "{}", error.pretty());
    assert!(error.step("prompt_exchange").1.contains("the stream reported an error"), "{}", error.pretty());
    assert_eq!(error.json["runs"][0]["checks"]["terminal_observation"]["status"], "fail");

    let open = run(&STREAM, "no-terminal");
    assert_eq!(open.status, 1);
    assert_eq!(open.step("prompt_exchange").1, "the stream ended without a terminal event");
    assert_eq!(open.json["runs"][0]["checks"]["terminal_observation"]["status"], "fail");

    // Plain text where the stream was declared: every line malformed.
    let text = run(&["--prompt-transport", "stdin", "--output-mode", "stream_json"], "good");
    assert_eq!(text.status, 1);
    assert!(text.step("prompt_exchange").1.starts_with("line 1 of stdout is not a normalized stream event"), "{}", text.pretty());
}

#[test]
fn a_hung_cli_is_stopped_at_the_step_timeout_and_leaves_nothing() {
    let run = run(&with(&TEXT, &["--step-timeout", "2"]), "hang");
    assert_eq!(run.status, 1, "{}", run.pretty());
    let first = &run.json["runs"][0];
    assert_eq!(first["timed_out"], true);
    assert_eq!(first["ending"], "terminated");
    // Its sleeping child went with the group's SIGTERM: `probe_support` holds the group empty.
    assert!(run.step("prompt_exchange").1.contains("did not exit within 2.0 s"));
    assert_eq!(run.step("teardown").0, "passed");
}

#[test]
fn a_cli_that_exits_leaving_a_child_on_stdout_is_not_a_hang() {
    let run = run(&with(&TEXT, &["--step-timeout", "20"]), "leave-child");
    assert_eq!(run.status, 0, "{}", run.pretty());
    let first = &run.json["runs"][0];
    assert_eq!(first["timed_out"], false);
    assert_eq!(first["exit"], json!({"code": 0}));
    assert!(first["ms"].as_u64().unwrap() < 10_000, "read 1 s after the exit, not at the step's time: {first}");
    assert_eq!(first["reaped_children"], 1, "the child it left was ended with its group: {first}");
    assert_eq!(run.step("teardown").0, "passed");
}

#[test]
fn the_output_schema_is_sent_checked_and_judged() {
    let scratch = Scratch::new("oneshot-schema");
    let schema = scratch.path("schema.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"], "additionalProperties": false}"#,
    )
    .unwrap();
    let flags = with(&STREAM, &["--output-schema-flag=--output-schema", "--output-schema-transport", "argv_path"]);
    let flags: Vec<&str> = flags.into_iter().chain(["--output-schema", schema.as_str()]).collect();
    let good = run(&flags, "good");
    assert_eq!(good.status, 0, "{}", good.pretty());
    assert_eq!(steps(&good), ["prompt_exchange", "output_schema", "teardown"]);
    let argv = good.json["runs"][0]["argv"].as_array().unwrap();
    assert_eq!(argv[argv.len() - 2], "--output-schema");
    assert_eq!(good.json["output_schema_delivery"], json!(["text.format"]));

    let broken = run(&flags, "schema-break");
    assert_eq!(broken.status, 1, "{}", broken.pretty());
    assert_eq!(broken.step("prompt_exchange").0, "passed");
    let (status, reason) = broken.step("output_schema");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("the final answer is not JSON"), "{reason}");

    // A schema the safety profile refuses starts nothing.
    std::fs::write(&schema, r#"{"type": "array", "uniqueItems": true}"#).unwrap();
    let unsafe_ = run(&flags, "good");
    assert_eq!(unsafe_.status, 2);
    assert!(unsafe_.stderr.contains("fails the safety profile"), "{}", unsafe_.stderr);
    assert!(unsafe_.json.is_null());
}

/// The page's own declaration names an output-schema flag and gives no schema file: the
/// declared path is exercised with the probe's own schema, not left out, and judged as an
/// author's would be.
#[test]
fn a_declared_output_schema_flag_is_exercised_without_a_schema_file() {
    let flags = with(&STREAM, &["--output-schema-flag=--output-schema", "--output-schema-transport", "argv_path"]);
    let good = run(&flags, "good");
    assert_eq!(good.status, 0, "{}", good.pretty());
    assert_eq!(steps(&good), ["prompt_exchange", "output_schema", "teardown"]);
    let argv: Vec<&str> = good.json["runs"][0]["argv"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(argv[argv.len() - 2], "--output-schema");
    assert!(argv[argv.len() - 1].ends_with("/output-schema.json"), "{argv:?}");
    assert_eq!(good.json["output_schema_delivery"], json!(["text.format"]));
    let answer: Value = serde_json::from_str(good.json["runs"][0]["answer"].as_str().unwrap()).expect("a JSON answer");
    assert!(answer["answer"].is_string() && answer["confidence"].is_u64(), "the probe's own schema's members: {answer}");

    let broken = run(&flags, "schema-break");
    assert_eq!(broken.status, 1, "{}", broken.pretty());
    let (status, reason) = broken.step("output_schema");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("the final answer is not JSON"), "{reason}");
}

#[test]
fn declarations_the_decoder_refuses_start_nothing() {
    let cases: [(&[&str], &str); 6] = [
        (&["--prompt-transport", "stdin", "--output-mode", "text", "--argv={prompt_path}"], "[prompt_path_iff_argv_path]"),
        (&["--prompt-transport", "argv_path", "--output-mode", "text"], "no element of `argv` holds `{prompt_path}`"),
        (&["--prompt-transport", "stdin", "--output-mode", "text", "--resume-flag=--resume"], "[resume_flag_placeholder]"),
        (
            &["--prompt-transport", "stdin", "--output-mode", "text", "--argv={resume_flag}", "--resume-flag=--resume={session_id}"],
            "[session_id_needs_stream_json]",
        ),
        (&["--prompt-transport", "stdin", "--output-mode", "text", "--output-schema-flag=--schema"], "[output_schema_pair]"),
        (&["--prompt-transport", "stdin", "--output-mode", "text", "--argv={relay_ur}"], "unknown placeholder `{relay_ur}`"),
    ];
    for (flags, expected) in cases {
        let run = run(flags, "good");
        assert_eq!(run.status, 2, "{flags:?}: {}", run.pretty());
        assert!(run.stderr.contains(expected), "{flags:?}: {}", run.stderr);
        assert!(run.json.is_null(), "nothing ran");
    }
    // A flag of each lane: the parser refuses the mix.
    let mixed = run(&with(&TEXT, &["--interrupt"]), "good");
    assert_eq!(mixed.status, 2);
    assert!(mixed.stderr.contains("cannot be used with") && mixed.stderr.contains("--interrupt"), "{}", mixed.stderr);
    // An ACP flag alone in a oneshot-v1 run: the lane refuses it.
    let acp_only = probe(&["--protocol", "oneshot-v1", "--retention", "durable"], &[CLI]);
    assert_eq!(acp_only.status, 2);
    assert!(acp_only.stderr.contains("--retention belongs to the acp-v1 lane"), "{}", acp_only.stderr);
    let mode = run(&["--prompt-transport", "file", "--output-mode", "text"], "good");
    assert_eq!(mode.status, 2);
    // Read by the parser, in the declaration's own words.
    assert!(
        mode.stderr.contains("invalid value 'file' for '--prompt-transport") && mode.stderr.contains("expected `stdin` or `argv_path`"),
        "{}",
        mode.stderr
    );
    let no_protocol = probe(&["--output-mode", "text"], &[CLI]);
    assert_eq!(no_protocol.status, 2);
    assert!(no_protocol.stderr.contains("--output-mode is a oneshot-v1 flag"), "{}", no_protocol.stderr);
}

#[test]
fn a_oneshot_recipe_resolves_its_entrypoint_against_its_directory() {
    let scratch = Scratch::new("oneshot-recipe");
    std::fs::create_dir_all(scratch.0.join("bin")).unwrap();
    std::fs::copy(CLI, scratch.0.join("bin/cli.py")).unwrap();
    let recipe = json!({
        "protocol": "oneshot-v1",
        "declaration": {"entrypoint": "bin/cli.py", "argv": ["--stream"], "prompt_transport": "stdin", "output_mode": "stream_json",
                        "env": {"CHECKFU_FIXTURE_MODE": "good", "FIXTURE_NOTE": "{{literal}} {home}"}},
        "notes": "a test recipe"
    });
    let path = scratch.path("r.json");
    std::fs::write(&path, recipe.to_string()).unwrap();
    let run = probe(&["--recipe", &path], &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["runs"][0]["argv"][0], scratch.path("bin/cli.py"));

    let refused =
        json!({"protocol": "oneshot-v1", "declaration": {"entrypoint": "x", "prompt_transport": "argv_path", "output_mode": "text"}});
    std::fs::write(&path, refused.to_string()).unwrap();
    let run = probe(&["--recipe", &path], &[]);
    assert_eq!(run.status, 2);
    assert!(run.stderr.contains("r.json") && run.stderr.contains("[prompt_path_iff_argv_path]"), "{}", run.stderr);
}

/// The probe's flags and `CHECKFU_FIXTURE_SEEN`, for a run whose CLI writes what it was
/// started with (its `PWD`, `OLDPWD`, directory and home files) into `seen`; `env` goes to
/// the probe's own process.
fn run_seen(flags: &[&str], seen: &str, env: &[(&str, OsString)]) -> (Run, Value) {
    let options = oneshot(flags);
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut env = env.to_vec();
    env.extend([("CHECKFU_FIXTURE_MODE", OsString::from("good")), ("CHECKFU_FIXTURE_SEEN", OsString::from(seen))]);
    let run = probe_env(&options, &[CLI], &env);
    let seen = std::fs::read_to_string(seen).ok().and_then(|text| serde_json::from_str(&text).ok()).unwrap_or(Value::Null);
    (run, seen)
}

#[test]
fn the_cli_s_pwd_is_the_workspace_it_starts_in_and_the_probe_s_own_directories_stay_out() {
    let scratch = Scratch::new("oneshot-pwd");
    let seen = scratch.path("seen.json");
    // The probe's own `PWD` and `OLDPWD` name the user's directories: neither reaches the CLI.
    let (run, seen) = run_seen(&TEXT, &seen, &[("PWD", scratch.0.clone().into()), ("OLDPWD", OsString::from("/"))]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    let cwd = seen["cwd"].as_str().expect("the CLI wrote what it saw");
    let workspace = std::env::temp_dir().canonicalize().expect("temp dir").join("checkfu-probe-");
    assert!(cwd.starts_with(workspace.to_string_lossy().as_ref()), "the CLI starts in the fresh workspace: {seen}");
    assert_eq!(seen["pwd"], cwd, "PWD names the directory it starts in");
    assert_eq!(seen["oldpwd"], Value::Null, "no OLDPWD");
}

/// The hostile CLI (`tests/fixture-oneshot/hostile.py`) in `mode`, its prompt on stdin and its
/// answer as text.
fn hostile(flags: &[&str], mode: &str) -> Run {
    let options = oneshot(&with(&TEXT, flags));
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    probe_env(&options, &[HOSTILE], &[("CHECKFU_HOSTILE", OsString::from(mode))])
}

#[test]
fn a_cli_that_asks_the_model_and_prints_an_error_quoting_the_prompt_fails() {
    let run = hostile(&[], "quote-error");
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(run.json["runs"][0]["exit"], json!({"code": 0}));
    assert_eq!(run.plane()["nonce_at_relay"], true, "the model was asked the prompt");
    let (status, reason) = run.step("prompt_exchange");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("no reply token of the model's answer (cfr-"), "the deciding fact first: {reason}");
    assert!(reason.contains("an error that quotes it"), "{reason}");
}

#[test]
fn a_nonce_only_in_the_system_message_or_metadata_is_not_the_prompt() {
    let run = hostile(&[], "decoy");
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(run.plane()["nonce_at_relay"], false);
    assert_eq!(run.plane()["calls"][0]["nonce_in_request"], false);
    let reason = run.step("prompt_exchange").1;
    assert!(reason.starts_with("the prompt did not reach the model: none of the 1 call(s)"), "{reason}");
}

#[test]
fn a_nonce_written_with_json_escapes_is_the_same_nonce() {
    let run = hostile(&[], "escaped");
    assert_eq!(run.status, 0, "a request that escapes the nonce's characters still carries it: {}", run.pretty());
    assert_eq!(run.plane()["calls"][0]["nonce_in_request"], true);
}

#[test]
fn a_model_script_whose_reply_lacks_the_reply_token_never_passes() {
    let scratch = Scratch::new("oneshot-script");
    let script = scratch.path("script.json");
    std::fs::write(&script, r#"[{"text": "The nonce is {nonce}."}]"#).unwrap();
    let run = run(&with(&TEXT, &["--model-script", &script]), "good");
    assert_eq!(run.status, 1, "{}", run.pretty());
    let reason = run.step("prompt_exchange").1;
    assert!(reason.starts_with("the model's answers to the prompt carried no reply token"), "{reason}");
    std::fs::write(&script, r#"[{"text": "The nonce is {nonce}; {reply_token}."}]"#).unwrap();
    let run = self::run(&with(&TEXT, &["--model-script", &script]), "good");
    assert_eq!(run.status, 0, "{}", run.pretty());
}

#[test]
fn a_structured_answer_the_cli_made_up_fails_although_it_validates() {
    let scratch = Scratch::new("oneshot-made-up");
    let schema = scratch.path("schema.json");
    std::fs::write(&schema, r#"{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}"#).unwrap();
    let run =
        hostile(&["--output-schema-flag=--output-schema", "--output-schema-transport", "argv_path", "--output-schema", &schema], "made-up");
    assert_eq!(run.status, 1, "{}", run.pretty());
    let (status, reason) = run.step("output_schema");
    assert_eq!(status, "failed");
    assert!(reason.contains("the relay served no structured value") || reason.contains("not the structured value"), "{reason}");
}

#[test]
fn a_schema_bomb_or_a_ref_cycle_in_a_request_is_refused_at_once_and_recorded() {
    for (mode, words) in [("schema-bomb", "more than 20000 values"), ("ref-cycle", "cycle")] {
        let started = std::time::Instant::now();
        let run = hostile(&["--deadline", "30"], mode);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{mode}: the probe answered within its deadline");
        assert_eq!(run.status, 1, "{mode}: {}", run.pretty());
        let refused = &run.plane()["refused"][0];
        assert_eq!(refused["status"], 400, "{mode}: {refused}");
        assert!(refused["reason"].as_str().unwrap_or_default().contains(words), "{mode}: {refused}");
        assert_eq!(run.json["runs"][0]["exit"], json!({"code": 0}), "{mode}");
    }
}

#[test]
fn at_the_deadline_the_cli_is_killed_a_report_written_and_nothing_left() {
    let started = std::time::Instant::now();
    let run = run(&with(&TEXT, &["--deadline", "3", "--step-timeout", "60"]), "hang");
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(12), "the deadline held: {took:?}");
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(run.json["runs"][0]["timed_out"], true);
    assert_eq!(run.step("prompt_exchange").0, "failed");
    // `probe_env` holds that no process of the group and no directory of the probe is left.
}

#[test]
fn a_flood_of_huge_models_long_paths_and_idle_connections_is_recorded_within_bounds() {
    let run = probe_env(
        &oneshot(&with(&TEXT, &["--step-timeout", "120", "--deadline", "180"])).iter().map(String::as_str).collect::<Vec<_>>(),
        &[HOSTILE],
        &[("CHECKFU_HOSTILE", OsString::from("flood")), ("CHECKFU_HOSTILE_REFUSALS", OsString::from("300"))],
    );
    assert_eq!(run.status, 0, "the turn itself was answered: {}", run.pretty());
    let plane = run.plane();
    let report = run.json.to_string();
    assert!(report.len() < 2_000_000, "the report is {} bytes", report.len());
    let refused = plane["refused"].as_array().expect("refusals");
    let long = refused.iter().find(|r| r["status"] == 404).expect("a refused long path");
    let path = long["path"].as_str().unwrap_or_default();
    assert!(path.len() < 400 && path.ends_with("(truncated: 61441 bytes)"), "{path}");
    let huge = plane["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .find(|c| c["model"].as_str().is_some_and(|m| m.starts_with("mmm")))
        .expect("a huge model");
    assert!(huge["model"].as_str().unwrap_or_default().ends_with("(truncated: 31457280 bytes)"), "{}", huge["model"]);
    assert!(refused.iter().any(|r| r["reason"].as_str().unwrap_or_default().contains("output schema")), "the schemas were refused");
}

#[test]
fn a_real_json_config_passes_through_home_file_at_file_with_only_its_placeholder_expanded() {
    let scratch = Scratch::new("oneshot-json-config");
    // A config as a CLI keeps it: nested objects, `}}` closing two of them, braces in text,
    // one placeholder, and a doubled identifier that is to stay a literal `{api_key}`.
    let config = r##"{
  "model": {"provider": {"url": "{relay_url}/v1", "headers": {}}},
  "ui": {"theme": {"name": "dark", "colors": {"fg": "#fff"}}},
  "literal": "{{api_key}}",
  "text": "{ not a placeholder } {} }} {{ {1}"
}
"##;
    let file = scratch.path("settings.json");
    std::fs::write(&file, config).expect("the config");
    let home_file = format!(".config/fixture/settings.json=@{file}");
    let flags: Vec<&str> = TEXT.iter().copied().chain(["--home-file", home_file.as_str()]).collect();
    let (run, seen) = run_seen(&flags, &scratch.path("seen.json"), &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    let written = seen["home"][".config/fixture/settings.json"].as_str().expect("the CLI found the file in its home");
    let parsed: Value = serde_json::from_str(written).expect("still JSON");
    let relay = parsed["model"]["provider"]["url"].as_str().and_then(|u| u.strip_suffix("/v1")).expect("the url");
    assert!(relay.starts_with("http://127.0.0.1:") && relay[17..].bytes().all(|b| b.is_ascii_digit()), "{relay}");
    assert_eq!(
        written,
        config.replace("{relay_url}", relay).replace("{{api_key}}", "{api_key}"),
        "the file as written, but for the placeholder"
    );
    assert_eq!(parsed["literal"], "{api_key}");
    assert!(run.json.get("warnings").is_none(), "a config that parses has no warning: {}", run.pretty());
}

/// A JSON home file in the old doubled-brace form is written as given, which is not JSON:
/// the run still judges the CLI, and the report names the file, where the parser stopped,
/// and the old form, in JSON and in text.
#[test]
fn a_home_file_that_does_not_parse_as_its_format_is_a_warning() {
    let home_file = r#"cfg/x.json={{"a": "{relay_url}"}}"#;
    let flags: Vec<&str> = TEXT.iter().copied().chain(["--home-file", home_file]).collect();
    let run = run(&flags, "good");
    assert_eq!(run.status, 0, "a warning judges nothing: {}", run.pretty());
    let warnings = run.json["warnings"].as_array().cloned().unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{}", run.pretty());
    let warning = warnings[0].as_str().unwrap_or_default();
    assert!(warning.starts_with("the home file cfg/x.json does not parse as JSON at line 1, column 2: "), "{warning}");
    assert!(warning.contains("the old doubled-brace form"), "{warning}");
    let mut options = oneshot(&flags);
    options.insert(0, String::from("probe"));
    let text = std::process::Command::new(probe_support::PROBE)
        .args(&options)
        .arg("--")
        .arg(CLI)
        .env("CHECKFU_FIXTURE_MODE", "good")
        .output()
        .expect("probe");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("warning  {warning}\n")), "{text}");
}

/// `model_recovery` in the one-shot lane: the `faults` script's rate limit, retried after its
/// `retry-after`, passes; retried at once, or not at all, fails naming the fault.
#[test]
fn model_recovery_is_judged_on_the_record_in_the_oneshot_lane() {
    let options = oneshot(&with(&TEXT, &["--model-script", "faults"]));
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let retry = |how: &str| {
        let mut env = vec![("CHECKFU_FIXTURE_MODE", OsString::from("good"))];
        if !how.is_empty() {
            env.push(("CHECKFU_FIXTURE_RETRY", OsString::from(how)));
        }
        probe_env(&options, &[CLI], &env)
    };
    let after = retry("after");
    assert_eq!(after.status, 0, "{}", after.pretty());
    let reported: Vec<&String> = after.json["steps"].as_object().expect("steps").keys().collect();
    assert_eq!(reported, ["prompt_exchange", "model_recovery", "teardown"]);
    assert_eq!(after.plane()["calls"][0]["fault"], "rate_limit");
    let early = retry("early");
    assert_eq!(early.status, 1, "{}", early.pretty());
    assert!(early.step("model_recovery").1.contains("before its retry-after of 1 s"), "{}", early.pretty());
    let gave_up = retry("");
    assert_eq!(gave_up.status, 1, "{}", gave_up.pretty());
    assert!(gave_up.step("model_recovery").1.contains("gave up on the rate_limit of call 1"), "{}", gave_up.pretty());
}
