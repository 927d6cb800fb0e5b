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
    for id in ["ACP-INIT-003", "ACP-SESSION-002", "ACP-EXT-001", "ACP-CLIENTCAP-001", "CHECKFU-PERMISSION-001"] {
        assert!(judged[id].2.contains("the fresh agent process"), "{id}: {pretty}");
    }
    let fresh = &run.json["requirement_probe"];
    assert_eq!(fresh["ending"], "exited_on_eof", "{pretty}");
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
    ] {
        assert_eq!(judged[id].1, "passed", "{id}: {pretty}");
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
    ];
    for (switch, id, words) in cases {
        let run = probe(&[], &[switch]);
        let pretty = run.pretty();
        assert_eq!(run.status, 1, "{switch}: {pretty}");
        let (tier, status, reason) = &requirements(&run)[*id];
        assert_eq!((tier.as_str(), status.as_str()), ("mandatory", "failed"), "{switch}: {pretty}");
        assert!(reason.contains(words), "{switch}: {id}: {reason}");
        let failed = &run.json["requirements_verdict"]["mandatory_failed"];
        assert!(failed.as_array().is_some_and(|f| f.contains(&Value::from(*id))), "{switch}: {pretty}");
    }
}
