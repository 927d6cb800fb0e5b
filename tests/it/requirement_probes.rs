//! The requirement probes (`probe/src/acp/kit.rs`) against the fixture agent: the honest agent
//! meets every mandatory requirement a default run can put to it, and every capability it
//! advertises (`--sessions`); each twin with one fault fails the run naming the requirement
//! it breaks, with the reason the report gives.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::probe_support::{self, Run, AGENT};

/// The probe on the fixture agent (declaring steer and interrupt) with `switches`, 5 s steps.
fn probe(options: &[&str], switches: &[&str]) -> Run {
    let mut options = options.to_vec();
    options.extend(["--step-timeout", "5"]);
    let mut harness = vec![AGENT, "--declare", "steer,interrupt"];
    harness.extend_from_slice(switches);
    probe_support::probe(&options, &harness)
}

/// Each requirement of a run's report, by id: (tier, status, reason).
fn requirements(run: &Run) -> BTreeMap<String, (String, String, String)> {
    let listed = run.json["requirements"].as_array().expect("requirements");
    let text = |r: &Value, key: &str| r[key].as_str().unwrap_or_default().to_owned();
    listed.iter().map(|r| (text(r, "id"), (text(r, "tier"), text(r, "status"), text(r, "reason")))).collect()
}

/// The probe on the fixture agent with `switches`: the report fails requirement `id`, in
/// `tier`, with a reason holding `words`; the run, for what else a test holds it to.
fn failing(switches: &[&str], id: &str, tier: &str, words: &str) -> Run {
    let run = probe(&[], switches);
    let pretty = run.pretty();
    let (got_tier, status, reason) = &requirements(&run)[id];
    assert_eq!((got_tier.as_str(), status.as_str()), (tier, "failed"), "{switches:?}: {pretty}");
    assert!(reason.contains(words), "{switches:?}: {id}: {reason}");
    run
}

#[test]
fn the_honest_agent_meets_every_mandatory_requirement_a_default_run_puts_to_it() {
    let run = probe(&[], &[]);
    let pretty = run.pretty();
    assert_eq!(run.status, 0, "{pretty}");
    let judged = requirements(&run);
    let mandatory: Vec<(&String, &str)> =
        judged.iter().filter(|(_, (tier, ..))| tier == "mandatory").map(|(id, (_, status, _))| (id, status.as_str())).collect();
    // Only a fault script puts the model's transient faults to it.
    let not_passed: Vec<_> = mandatory.iter().filter(|(_, status)| *status != "passed").collect();
    assert_eq!(not_passed.len(), 1, "{not_passed:?}: {pretty}");
    assert_eq!(not_passed[0].0, "CHECKFU-FAULTS-001", "{pretty}");
    for id in ["ACP-INIT-003", "ACP-SESSION-002", "ACP-EXT-001", "ACP-CLIENTCAP-001", "CHECKFU-PERMISSION-001", "CHECKFU-PERMISSION-002"] {
        assert!(judged[id].2.contains("the fresh agent process"), "{id}: {pretty}");
    }
    // The advisory ones the fresh process adds: a traced prompt, a linked resource, its
    // errors' messages.
    for id in ["ACP-META-001", "ACP-PROMPT-003", "ACP-ERROR-001"] {
        assert_eq!(judged[id].1, "passed", "{id}: {pretty}");
    }
    // It waited for the held permission answers.
    assert_eq!(judged["CHECKFU-PERMISSION-002"].1, "passed", "{pretty}");
    assert!(judged["CHECKFU-PERMISSION-002"].2.contains("held back"), "{pretty}");
    let fresh = &run.json["requirement_probe"];
    assert_eq!(fresh["ending"], "exited_on_eof", "{pretty}");
    assert!(fresh.get("teardown_fault").is_none(), "{pretty}");
    assert_eq!(fresh["breaches"], serde_json::json!([]), "{pretty}");
    // The informational and advisory ones it was put to, recorded.
    for id in ["ACP-SHUTDOWN-001", "ACP-STDERR-001", "ACP-INFO-PARSE-001", "ACP-INFO-INVALIDREQ-001", "ACP-JSONRPC-004"] {
        assert_eq!(judged[id].1, "passed", "{id}: {pretty}");
    }
    // It advertised no session method and no content type: those stay untested, at no cost.
    assert_eq!(judged["ACP-LIST-001"].1, "not_tested", "{pretty}");

    let run = probe(&[], &["--sessions"]);
    let pretty = run.pretty();
    assert_eq!(run.status, 0, "{pretty}");
    let judged = requirements(&run);
    for id in [
        "ACP-LIST-001",
        "ACP-LIST-002",
        "ACP-LOAD-001",
        "ACP-RESUME-001",
        "ACP-CLOSE-001",
        "ACP-PROMPTCAP-001",
        "ACP-PROMPTCAP-002",
        "ACP-PROMPTCAP-003",
        "ACP-LOAD-002",
        "ACP-LOAD-003",
        "ACP-RESUME-002",
        "ACP-MODES-001",
        "ACP-MODES-002",
        "ACP-CONFIG-001",
        "ACP-CONFIG-002",
        "ACP-CLOSE-002",
        "ACP-ADDDIRS-001",
        "ACP-DELETE-001",
        "ACP-DELETE-002",
        "ACP-AUTH-004",
    ] {
        assert_eq!(judged[id].1, "passed", "{id}: {pretty}");
    }
    assert!(judged["ACP-CLOSE-002"].2.contains("the prompt ended `cancelled`"), "{pretty}");
    assert!(judged["ACP-LOAD-002"].2.contains("1 replayed update(s) before the `session/load` answer"), "{pretty}");
}

/// Each twin of `--sessions` breaks one requirement of an advertised session method or of
/// what `session/new` offered: that requirement fails with its reason, in its tier.
#[test]
fn each_fault_of_an_advertised_session_method_fails_its_requirement() {
    let cases: &[(&str, &str, &str, &str)] = &[
        // The decoder holds the schema, which refuses a `null` result outright.
        ("--null-load", "ACP-LOAD-001", "capability", "result of `session/load` at ``: expected object"),
        ("--replay-after-load", "ACP-LOAD-002", "capability", "came after the `session/load` answer"),
        ("--replay-on-resume", "ACP-RESUME-002", "capability", "`agent_message_chunk` update of the resumed session came before"),
        ("--refuse-set-mode", "ACP-MODES-002", "capability", "Unknown mode"),
        ("--partial-config", "ACP-CONFIG-002", "capability", "left out the config option \"effort\""),
        ("--close-leaves-turn", "ACP-CLOSE-002", "capability", "the prompt was not answered (no answer within 5.0 s of the close)"),
        ("--refuse-extra-directory", "ACP-ADDDIRS-001", "capability", "additionalDirectories is not supported"),
        ("--null-delete", "ACP-DELETE-001", "capability", "result of `session/delete` at ``: expected object"),
        ("--logout-null", "ACP-AUTH-004", "capability", "result of `logout` at ``: expected object"),
    ];
    for (switch, id, tier, words) in cases {
        let run = failing(&["--sessions", switch], id, tier, words);
        let pretty = run.pretty();
        // A capability the agent offers binds: the run fails.
        assert_eq!(run.status, 1, "{switch}: {pretty}");
        let failed = &run.json["requirements_verdict"]["capability_failed"];
        assert!(failed.as_array().is_some_and(|f| f.contains(&Value::from(*id))), "{switch}: {pretty}");
    }
}

/// Each twin breaks one requirement the probes put to it: the run fails, and the report
/// fails that requirement with its reason.
#[test]
fn each_fault_the_requirement_probes_look_for_fails_naming_its_requirement() {
    let cases: &[(&str, &str, &str)] = &[
        ("--same-session-id", "ACP-SESSION-002", "both answered the id"),
        ("--echo-version", "ACP-INIT-003", "protocol version 65535"),
        ("--ignore-unknown", "ACP-EXT-001", "was not answered"),
        ("--result-and-error", "ACP-JSONRPC-002", "a response refused"),
        ("--result-and-error", "ACP-SCHEMA-001", "the schema refuses"),
        ("--foreign-update", "ACP-PROMPT-002", "fixture-elsewhere"),
        ("--boolean-config", "ACP-CONFIG-003", "auto-approve"),
        ("--terminal-auth", "ACP-AUTH-002", "fixture-login"),
        ("--latin1-stdout", "ACP-TRANSPORT-002", "not UTF-8"),
        ("--garbage-stdout", "ACP-TRANSPORT-001", "no JSON"),
        ("--ignore-fs-capability", "ACP-CLIENTCAP-001", "did not advertise file system access"),
        ("--write-after-reject", "CHECKFU-PERMISSION-001", "answered the turn's permission request"),
        ("--write-before-answer", "CHECKFU-PERMISSION-002", "while the turn's permission request was still unanswered"),
    ];
    for (switch, id, words) in cases {
        let run = failing(&[switch], id, "mandatory", words);
        let pretty = run.pretty();
        assert_eq!(run.status, 1, "{switch}: {pretty}");
        let failed = &run.json["requirements_verdict"]["mandatory_failed"];
        assert!(failed.as_array().is_some_and(|f| f.contains(&Value::from(*id))), "{switch}: {pretty}");
    }
}

/// The fresh process's teardown is the run's: one that ignores EOF and SIGTERM (its main
/// process did not) is killed, and the run's teardown fails naming it, as the report says.
#[test]
fn the_fresh_process_left_killed_fails_the_runs_teardown() {
    let run = probe(&[], &["--hang-when-probed"]);
    let pretty = run.pretty();
    assert_eq!(run.status, 1, "{pretty}");
    let (status, reason) = run.step("teardown");
    assert_eq!(status, "failed", "{pretty}");
    assert!(reason.contains("the requirement probes' harness ignored EOF on stdin and SIGTERM; it was killed"), "{reason}");
    let fresh = &run.json["requirement_probe"];
    assert_eq!(fresh["ending"], "killed", "{pretty}");
    assert!(fresh["teardown_fault"].as_str().is_some_and(|f| f.contains("killed")), "{pretty}");
    // Its main process ended as asked.
    assert_eq!(run.json["harness"]["ending"], "exited_on_eof", "{pretty}");
}

/// The advisory requirements of the prompt and of errors: each twin fails its own, in its
/// tier, with its reason, and fails nothing else of the kit's mandatory ones.
#[test]
fn each_advisory_fault_of_the_fresh_process_fails_its_requirement() {
    let cases: &[(&str, &str, &str)] = &[
        ("--refuse-meta", "ACP-META-001", "Unexpected _meta"),
        ("--refuse-resource-link", "ACP-PROMPT-003", "Unsupported content block"),
        ("--multiline-error", "ACP-ERROR-001", "a short sentence on one line"),
    ];
    let sessions: &[(&str, &str, &str)] = &[("--delete-gone-fails", "ACP-DELETE-002", "session deleted already: with the error -32602")];
    let all = cases.iter().map(|c| (&[][..], c)).chain(sessions.iter().map(|c| (&["--sessions"][..], c)));
    for (more, (switch, id, words)) in all {
        let mut switches = more.to_vec();
        switches.push(*switch);
        let run = failing(&switches, id, "advisory", words);
        let pretty = run.pretty();
        let failed = &run.json["requirements_verdict"]["mandatory_failed"];
        assert_eq!(failed, &serde_json::json!([]), "{switch}: {pretty}");
    }
}

/// ACP-AUTH-003 under `--authenticate`: the honest agent's sessions follow its
/// `authenticate`; the twin that forgets it in the fresh process refuses them -32000.
#[test]
fn a_session_refused_after_authenticate_fails_auth_003() {
    let run = probe(&["--authenticate", "fixture-key"], &["--need-credentials"]);
    let pretty = run.pretty();
    assert_eq!(run.status, 0, "{pretty}");
    assert_eq!(requirements(&run)["ACP-AUTH-003"].1, "passed", "{pretty}");

    let run = probe(&["--authenticate", "fixture-key"], &["--need-credentials", "--forget-auth-when-probed"]);
    let pretty = run.pretty();
    assert_eq!(run.status, 1, "{pretty}");
    let (tier, status, reason) = &requirements(&run)["ACP-AUTH-003"];
    assert_eq!((tier.as_str(), status.as_str()), ("capability", "failed"), "{pretty}");
    assert!(reason.contains("refused -32000"), "{reason}");
}

/// A line the decoder rejects that answers no request of the probes' (an error with no id,
/// sent for an unknown `_` notification, as codex-acp does) is read past and listed: the
/// request that is out when it comes (here the mode change) is not charged with it, and the
/// schema's requirement still fails on it.
#[test]
fn a_stray_bad_line_is_skipped_and_listed_not_charged_to_the_next_request() {
    let run = probe(&[], &["--sessions", "--idless-error"]);
    let pretty = run.pretty();
    let judged = requirements(&run);
    assert_eq!(judged["ACP-MODES-002"].1, "passed", "{pretty}");
    assert_eq!(judged["ACP-SCHEMA-001"].1, "failed", "{pretty}");
    let skipped = &run.json["requirement_probe"]["skipped"];
    assert_eq!(run.json["requirement_probe"]["skipped_lines"], 1, "{pretty}");
    assert!(skipped[0]["line"].as_str().is_some_and(|l| l.contains(r#""error":{"code":-32601"#)), "{pretty}");
    assert!(skipped[0]["stdout_line"].as_u64().is_some_and(|n| n > 1), "{pretty}");
    // Nothing else of the capabilities it offers fails for it.
    assert_eq!(run.json["requirements_verdict"]["capability_failed"], serde_json::json!([]), "{pretty}");
}

/// `--record` holds the fresh process's wire after the main one's, opened by its own launch
/// line, and decodes back: no rejection, the probes' deliberately invalid lines shown as such.
#[test]
fn the_record_holds_the_fresh_process_and_decodes_back() {
    let scratch = probe_support::Scratch::new("requirement-probes-record");
    let record = scratch.path("record.jsonl");
    let run = probe(&["--record", &record], &["--sessions"]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    let text = std::fs::read_to_string(&record).expect("the record");
    let launches: Vec<&str> = text.lines().filter(|l| l.starts_with(r#"{"launch""#)).collect();
    assert_eq!(launches.len(), 2, "{text}");
    assert!(launches[1].contains(r#""process":"requirement_probes""#), "{}", launches[1]);
    let fresh = &text[text.find(launches[1]).expect("the second launch")..];
    assert!(fresh.contains(r#""protocolVersion":65535"#), "the fresh process's initialize: {fresh}");
    let decoded = std::process::Command::new(probe_support::PROBE).args(["decode", &record]).output().expect("decode runs");
    let out = String::from_utf8_lossy(&decoded.stdout);
    assert!(decoded.status.success(), "{out}\n{}", String::from_utf8_lossy(&decoded.stderr));
    assert_eq!(out.lines().filter(|l| l.contains(r#""invalid":"#)).count(), 2, "{out}");
}
