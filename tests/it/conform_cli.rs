//! End-to-end runs of `checkfu-wire conform` on the traces under `tests/conformance/`.
//!
//! Layout: `tests/conformance/<check>/<status>-<rest>.jsonl`, where `<status>` is the verdict
//! that file must get from `<check>` (`pass`, `skip`, or `fail`; a fail's `<rest>` starts
//! with `at<N>` or `atnone`, the observation at fault), and
//! `tests/conformance/invalid/line<N>-<rest>.jsonl`, which must exit 2 naming line N.
//! Those names are checked independently of the snapshot `tests/conformance/expected.json`,
//! which records every file's exit status and full output; rewrite it with
//! `CHECKFU_BLESS=1 cargo test --test conform_cli` after reviewing the change.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

use checkfu_wire::catalog;
use serde_json::{json, Value};

fn traces_dir() -> PathBuf {
    crate::support::project::project_root().join("tests").join("conformance")
}

fn conform(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup"))
        .arg("conform")
        .args(args)
        .current_dir(traces_dir())
        .output()
        .expect("the checkfu-wire binary runs")
}

/// Relative paths (`dir/file.jsonl`) of every trace under a subdirectory, sorted.
fn traces_in(dir: &str) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(traces_dir().join(dir))
        .unwrap_or_else(|e| panic!("tests/conformance/{dir}: {e}"))
        .map(|entry| entry.expect("directory entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".jsonl"))
        .map(|name| format!("{dir}/{name}"))
        .collect();
    files.sort();
    files
}

/// Parses `<status>[-at<N>|-atnone]-...` into the expected JSON fragment for the check.
fn expected_from_name(file: &str) -> (String, Option<Option<u64>>) {
    let stem = file.rsplit('/').next().and_then(|n| n.strip_suffix(".jsonl")).expect("a .jsonl name");
    let mut parts = stem.split('-');
    let status = parts.next().expect("a status prefix").to_owned();
    let at = if status == "fail" {
        let at = parts.next().expect("a fail names its observation");
        Some(match at {
            "atnone" => None,
            at => Some(at.strip_prefix("at").and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{file}: bad at"))),
        })
    } else {
        None
    };
    (status, at)
}

#[test]
fn every_check_has_passing_and_failing_traces_and_each_gets_its_named_verdict() {
    let mut snapshot = BTreeMap::new();
    for check in catalog::CONFORMANCE_CHECKS {
        let files = traces_in(check.name());
        let statuses: Vec<String> = files.iter().map(|f| expected_from_name(f).0).collect();
        assert!(statuses.iter().any(|s| s == "pass"), "{}: no passing trace", check.name());
        assert!(statuses.iter().any(|s| s == "fail"), "{}: no failing trace", check.name());
        if check.tristate || check.opt_in {
            assert!(statuses.iter().any(|s| s == "skip"), "{}: no skipped trace", check.name());
        }
        for file in files {
            let output = conform(&[&file, "--format", "json"]);
            let report: Value = serde_json::from_slice(&output.stdout)
                .unwrap_or_else(|e| panic!("{file}: stdout is not JSON ({e}); stderr {}", String::from_utf8_lossy(&output.stderr)));
            let checks = report["checks"].as_object().unwrap_or_else(|| panic!("{file}: no checks object"));
            let names: Vec<&str> = checks.keys().map(String::as_str).collect();
            let catalog_names: Vec<&str> = catalog::CONFORMANCE_CHECKS.iter().map(|c| c.name()).collect();
            assert_eq!(names, catalog_names, "{file}: all seven checks, in catalog order");

            let verdict = &checks[check.name()];
            let (status, at) = expected_from_name(&file);
            assert_eq!(verdict["status"], json!(status), "{file}: {verdict}");
            match at {
                Some(Some(at)) => assert_eq!(verdict["at"], json!(at), "{file}: {verdict}"),
                Some(None) => assert!(verdict.get("at").is_none(), "{file}: {verdict}"),
                None => assert!(verdict.get("at").is_none(), "{file}: {verdict}"),
            }
            if status != "pass" {
                assert!(verdict["reason"].as_str().is_some_and(|r| !r.is_empty()), "{file}: {verdict}");
            }

            let any_fail = checks.values().any(|v| v["status"] == "fail");
            assert_eq!(output.status.code(), Some(if any_fail { 1 } else { 0 }), "{file}");
            assert!(output.stderr.is_empty(), "{file}: {}", String::from_utf8_lossy(&output.stderr));
            snapshot.insert(file, json!({"exit": output.status.code(), "report": report}));
        }
    }
    for file in traces_in("invalid") {
        let stem = file.trim_start_matches("invalid/");
        let line: usize = stem
            .strip_prefix("line")
            .and_then(|rest| rest.split('-').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{file}: name must start with line<N>-"));
        let output = conform(&[&file, "--format", "json"]);
        assert_eq!(output.status.code(), Some(2), "{file}");
        assert!(output.stdout.is_empty(), "{file}: no verdict for an invalid trace");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(stderr.starts_with(&format!("error: {file}:{line}: invalid trace: ")), "{file}: {stderr}");
        snapshot.insert(file, json!({"exit": 2, "stderr": stderr}));
    }
    compare_snapshot(&Value::Object(snapshot.into_iter().collect()));
}

fn compare_snapshot(actual: &Value) {
    let path = traces_dir().join("expected.json");
    let rendered = serde_json::to_string_pretty(actual).expect("serializes") + "\n";
    if std::env::var_os("CHECKFU_BLESS").is_some() {
        std::fs::write(&path, &rendered).expect("write the snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == rendered,
        "tests/conformance/expected.json differs from this run; review and rerun with CHECKFU_BLESS=1\n{}",
        first_difference(&expected, &rendered)
    );
}

fn first_difference(expected: &str, actual: &str) -> String {
    for (number, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        if e != a {
            return format!("line {}:\n- {e}\n+ {a}", number + 1);
        }
    }
    format!("lengths differ: {} vs {} lines", expected.lines().count(), actual.lines().count())
}

#[test]
fn the_sample_trace_in_text_form() {
    let output = conform(&["sample.jsonl"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "ready_handshake                pass\n\
         terminal_observation           pass\n\
         tool_correlation               pass\n\
         steering_correlation           pass\n\
         steering_delivered             pass\n\
         cooperative_interrupt_drained  skip  opt-in case: the trace does not opt in\n\
         subagent_correlation           pass\n\
         6 passed, 0 failed, 1 skipped over 8 observations\n"
    );
}

#[test]
fn a_failing_trace_in_text_form_names_observation_and_line() {
    let output = conform(&["tool_correlation/fail-at3-duplicate-use-id.jsonl", "--format", "text"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(
            "tool_correlation               FAIL  observation 3 (line 5): tool-use id \"t1\" is not unique (first used at observation 1)\n"
        ),
        "{stdout}"
    );
}

#[test]
fn an_unreadable_trace_exits_2() {
    let output = conform(&["no-such-trace.jsonl"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("error: cannot open no-such-trace.jsonl: "));
}

#[test]
fn an_unknown_format_is_a_usage_error() {
    let output = conform(&["sample.jsonl", "--format", "yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
}
