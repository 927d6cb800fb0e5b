//! `probe --format junit` and `--format ctrf`, read by what a CI reads them with: the CTRF
//! document validated against the format's own schema (checked in unmodified beside its
//! provenance, `tests/report-formats/`), the JUnit XML parsed by `junitparser` from PyPI
//! (`read_junit.py`). Each is held to the JSON report of a run of the same harness: a case
//! per step, per check and per requirement with the same status, and a `verdict` case that fails exactly
//! when the run does, carrying the reason, its kind and an excerpt of the wire.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::probe_support::{self, AGENT, PROBE};

/// The directory of the report formats' inputs.
fn inputs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("report-formats")
}

/// The fixture agent with `switches`, probed with `--format FORMAT`: its stdout and exit
/// status. Nothing of the run may be left behind.
fn probe(format: &str, switches: &[&str]) -> (String, i32) {
    let child = Command::new(PROBE)
        .args(["probe", "--format", format, "--kill-grace", "0.5", "--step-timeout", "5", "--", AGENT])
        .args(switches)
        .env("TMPDIR", "/tmp")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("probe starts");
    let pid = child.id();
    let output = child.wait_with_output().expect("probe runs");
    probe_support::assert_nothing_left(pid);
    (String::from_utf8(output.stdout).expect("UTF-8 report"), output.status.code().unwrap_or(-1))
}

/// (suite, name) → status, as the JSON report of the same harness has them: its steps,
/// its checks, its requirements, and the verdict.
fn expected(switches: &[&str]) -> BTreeMap<(String, String), String> {
    let (json, status) = probe("json", switches);
    let json: Value = serde_json::from_str(&json).expect("a JSON report");
    let mut cases = BTreeMap::new();
    for (name, step) in json["steps"].as_object().expect("steps") {
        cases.insert(("steps".to_owned(), name.clone()), step["status"].as_str().expect("status").to_owned());
    }
    for (name, check) in json["checks"].as_object().expect("checks") {
        let status = match check["status"].as_str() {
            Some("pass") => "passed",
            Some("fail") => "failed",
            Some("skip") => "skipped",
            other => panic!("check {name}: status {other:?}"),
        };
        cases.insert(("checks".to_owned(), name.clone()), status.to_owned());
    }
    // Every requirement of the registry; one not tested is a skipped case.
    for requirement in json["requirements"].as_array().expect("requirements") {
        let status = match requirement["status"].as_str() {
            Some("passed") => "passed",
            Some("failed") => "failed",
            Some("not_tested") => "skipped",
            other => panic!("requirement {requirement}: status {other:?}"),
        };
        let id = requirement["id"].as_str().expect("id").to_owned();
        cases.insert(("requirements".to_owned(), id), status.to_owned());
    }
    let verdict = if status == 0 { "passed" } else { "failed" };
    cases.insert(("verdict".to_owned(), "verdict".to_owned()), verdict.to_owned());
    cases
}

fn ctrf_validator() -> jsonschema::Validator {
    let provenance = std::fs::read_to_string(inputs().join("ctrf-schema-0.0.provenance.toml")).expect("provenance");
    let recorded =
        provenance.lines().find_map(|line| line.strip_prefix("sha256 = \"")?.strip_suffix('"')).expect("the provenance records a sha256");
    let bytes = std::fs::read(inputs().join("ctrf-schema-0.0.json")).expect("the CTRF schema");
    let actual: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(actual, recorded, "the CTRF schema differs from the file its provenance records");
    let schema: Value = serde_json::from_slice(&bytes).expect("the CTRF schema is JSON");
    jsonschema::validator_for(&schema).expect("the CTRF schema compiles")
}

/// The CTRF document of a run of the fixture agent with `switches`, valid against the
/// schema, its cases as the JSON report's; the document's tests by (suite, name).
fn ctrf(validator: &jsonschema::Validator, switches: &[&str]) -> BTreeMap<(String, String), Value> {
    let (text, status) = probe("ctrf", switches);
    let document: Value = serde_json::from_str(&text).expect("a CTRF document is JSON");
    let errors: Vec<String> = validator.iter_errors(&document).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "the CTRF schema rejects the report: {errors:#?}\n{text}");
    let results = &document["results"];
    let tests = results["tests"].as_array().expect("tests");
    let mut by_name = BTreeMap::new();
    for test in tests {
        let key = (test["suite"][0].as_str().expect("suite").to_owned(), test["name"].as_str().expect("name").to_owned());
        assert!(by_name.insert(key.clone(), test.clone()).is_none(), "{key:?} twice");
    }
    let statuses: BTreeMap<_, _> = by_name.iter().map(|(k, t)| (k.clone(), t["status"].as_str().unwrap_or("?").to_owned())).collect();
    assert_eq!(statuses, expected(switches), "the CTRF cases are not the JSON report's");
    let summary = &results["summary"];
    let count = |status: &str| statuses.values().filter(|s| *s == status).count() as u64;
    assert_eq!(summary["tests"], tests.len() as u64);
    for status in ["passed", "failed", "skipped"] {
        assert_eq!(summary[status], count(status), "summary.{status}");
    }
    assert!(summary["start"].as_u64() <= summary["stop"].as_u64());
    assert_eq!(results["extra"]["driver"], "checkfu:acp-v1@1");
    assert_eq!(results["extra"]["revision.conformance"], checkfu_wire::catalog::Revision::Conformance.literal());
    assert_eq!(status != 0, count("failed") > 0, "the exit status and the failed cases disagree");
    by_name
}

#[test]
fn a_ctrf_report_is_valid_ctrf_and_holds_the_json_report_s_cases() {
    let validator = ctrf_validator();
    let honest = ctrf(&validator, &[]);
    assert_eq!(honest[&("verdict".to_owned(), "verdict".to_owned())]["status"], "passed");
    // A requirement the run did not put to the agent is skipped, saying why.
    let untested = &honest[&("requirements".to_owned(), "ACP-LIST-001".to_owned())];
    assert_eq!(untested["status"], "skipped");
    assert_eq!(untested["message"], "the agent does not offer `agentCapabilities.sessionCapabilities.list`");
    assert_eq!(honest[&("requirements".to_owned(), "ACP-JSONRPC-001".to_owned())]["status"], "passed");

    // A harness that declares subagents and never delegates: the step fails with its kind
    // and an excerpt of the wire, and so does the verdict.
    let twin = ctrf(&validator, &["--no-subagent"]);
    let step = &twin[&("steps".to_owned(), "subagent_delegation".to_owned())];
    assert_eq!(step["status"], "failed");
    assert_eq!(step["rawStatus"], "not_served");
    assert!(step["message"].as_str().is_some_and(|m| m.contains("no subagent started")), "{step}");
    assert!(step["trace"].as_str().is_some_and(|t| t.contains("session/prompt")), "{step}");
    let verdict = &twin[&("verdict".to_owned(), "verdict".to_owned())];
    assert_eq!(verdict["status"], "failed");
    assert!(verdict["message"].as_str().is_some_and(|m| m.starts_with("step subagent_delegation:")), "{verdict}");
}

/// A failed check's excerpt is the trace around the observation it blames, that line
/// marked; a case that did not fail carries none.
#[test]
fn a_failed_check_s_excerpt_marks_the_observation_it_blames() {
    let validator = ctrf_validator();
    // The fixture agent that answers its prompt twice breaks the terminal observation.
    let tests = ctrf(&validator, &["--duplicate-terminal"]);
    let check = &tests[&("checks".to_owned(), "terminal_observation".to_owned())];
    assert_eq!(check["status"], "failed");
    assert_eq!(check["rawStatus"], "check");
    let excerpt = check["trace"].as_str().expect("a failed check carries an excerpt");
    let marked: Vec<&str> = excerpt.lines().filter(|line| line.starts_with('>')).collect();
    assert_eq!(marked.len(), 1, "one line is the blamed observation: {excerpt}");
    assert!(marked[0].contains("terminal"), "the blamed observation is a terminal one: {excerpt}");
    for test in tests.values().filter(|t| t["status"] != "failed") {
        assert!(test.get("trace").is_none(), "{test}");
    }
}

/// `read_junit.py`'s reading of the JUnit report of the fixture agent with `switches`.
fn junit(switches: &[&str]) -> Value {
    let (xml, _) = probe("junit", switches);
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("report.xml");
    std::fs::write(&file, xml).expect("write");
    let output = Command::new("python3").arg(inputs().join("read_junit.py")).arg(&file).output().expect("python3 runs");
    assert!(output.status.success(), "junitparser could not read the report: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("read_junit.py prints JSON")
}

#[test]
#[cfg_attr(
    not(checkfu_report_consumers),
    ignore = "needs junitparser (pip install -r tests/report-formats/requirements.txt) and CHECKFU_REPORT_CONSUMERS=1"
)]
fn junitparser_reads_a_junit_report_as_the_json_report_has_it() {
    for switches in [&[][..], &["--no-subagent"][..]] {
        let read = junit(switches);
        let mut statuses = BTreeMap::new();
        for suite in read["suites"].as_array().expect("suites") {
            let name = suite["name"].as_str().expect("suite name");
            assert_eq!(suite["properties"]["protocol"], "acp-v1", "suite {name}");
            assert_eq!(suite["properties"]["driver"], "checkfu:acp-v1@1", "suite {name}");
            let cases = suite["cases"].as_array().expect("cases");
            assert_eq!(suite["tests"], cases.len() as u64, "suite {name}");
            for case in cases {
                let status = match case["result"].as_str() {
                    Some("passed") => "passed",
                    Some("failure") => "failed",
                    Some("skipped") => "skipped",
                    other => panic!("{case}: result {other:?}"),
                };
                assert_eq!(case["classname"], format!("checkfu-wire-probe.{name}"));
                statuses.insert((name.to_owned(), case["name"].as_str().expect("case name").to_owned()), status.to_owned());
                if status == "failed" {
                    assert!(case["message"].as_str().is_some_and(|m| !m.is_empty()), "{case}");
                    assert!(case["type"].as_str().is_some(), "{case}");
                }
            }
        }
        assert_eq!(statuses, expected(switches), "junitparser's cases are not the JSON report's ({switches:?})");
        if switches.contains(&"--no-subagent") {
            let steps = read["suites"].as_array().unwrap().iter().find(|s| s["name"] == "steps").expect("steps");
            let case = steps["cases"].as_array().unwrap().iter().find(|c| c["name"] == "subagent_delegation").expect("case");
            assert_eq!(case["type"], "not_served");
            assert!(case["text"].as_str().is_some_and(|t| t.contains("session/prompt")), "{case}");
        }
    }
}
