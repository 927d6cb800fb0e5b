//! Unit tests of the reader and the registry; the per-check pass/fail traces live under
//! `tests/conformance/` and run through the CLI.

use super::*;

const CONTRACT_EXAMPLE: &str = r#"{"trace": 1, "declared": {"subagents": "observed", "mid_run_input": "native"}, "opt_in": []}
{"kind": "ready"}
{"kind": "steer_input", "event": "e1"}
{"kind": "steering", "event": "e1", "disposition": "delivered"}
{"kind": "subagent_started", "subagent": "a", "name": "researcher"}
{"kind": "tool_use", "id": "t1", "subagent": "a"}
{"kind": "tool_result", "id": "t1", "subagent": "a"}
{"kind": "subagent_completed", "subagent": "a", "disposition": "completed"}
{"kind": "terminal", "outcome": "success", "stop_reason": "end_turn"}
"#;

#[test]
fn the_contract_example_passes_with_the_opt_in_case_skipped() {
    let report = check_str(CONTRACT_EXAMPLE).expect("valid trace");
    let names: Vec<&str> = report.checks.iter().map(|(name, _)| *name).collect();
    let catalog_names: Vec<&str> = catalog::CONFORMANCE_CHECKS.iter().map(|c| c.name()).collect();
    assert_eq!(names, catalog_names);
    for (name, outcome) in &report.checks {
        let opt_in = catalog::CONFORMANCE_CHECKS.iter().any(|c| c.name() == *name && c.opt_in);
        if opt_in {
            assert!(matches!(outcome, Outcome::Skip { .. }), "{name}: {outcome:?}");
        } else {
            assert_eq!(outcome, &Outcome::Pass, "{name}");
        }
    }
    assert_eq!(report.observations, 8);
    assert!(!report.failed());
}

#[test]
fn crlf_line_endings_read_the_same() {
    let crlf = CONTRACT_EXAMPLE.replace('\n', "\r\n");
    assert_eq!(check_str(&crlf), check_str(CONTRACT_EXAMPLE));
}

#[test]
fn invalid_traces_name_the_line() {
    let cases = [
        ("", 1, "missing header"),
        ("{\"kind\": \"ready\"}\n", 1, "missing header"),
        ("{\"trace\": 1, \"declared\": {}}\n{\"kind\": \"ready\"}\n\n{\"kind\": \"ready\"}\n", 3, "blank line"),
        ("{\"trace\": 1, \"declared\": {}}\n{\"kind\": \"ready\"}\n{\"kind\": \"wave\"}\n", 3, "unknown kind"),
        ("{\"trace\": 1, \"declared\": {}}\n{\"kind\": \"ready\"\n", 2, "not valid JSON"),
        ("{\"trace\": 1, \"declared\": {\"mid_run_input\": \"steer\"}}\n", 1, "unknown value"),
    ];
    for (trace, line, needle) in cases {
        match check_str(trace) {
            Ok(report) => panic!("{trace:?} checked: {report:?}"),
            Err(error) => {
                assert_eq!(error.line, line, "{trace:?}: {error}");
                assert!(error.message.contains(needle), "{trace:?}: {error}");
            }
        }
    }
}

#[test]
fn non_utf8_is_an_invalid_line() {
    let mut bytes = b"{\"trace\": 1, \"declared\": {}}\n{\"kind\": \"output\", \"text\": \"".to_vec();
    bytes.extend([0xff, 0xfe]);
    bytes.extend(b"\"}\n");
    let error = check_reader(bytes.as_slice()).expect_err("invalid");
    assert_eq!(error, TraceError { line: 2, message: String::from("the line is not UTF-8") });
}

#[test]
fn an_empty_turn_fails_without_blaming_an_observation() {
    let report = check_str("{\"trace\": 1, \"declared\": {}}\n").expect("valid trace");
    assert_eq!(
        report.outcome("ready_handshake"),
        Some(&Outcome::Fail { reason: String::from("the trace has no ready observation"), at: None })
    );
    assert_eq!(
        report.outcome("terminal_observation"),
        Some(&Outcome::Fail { reason: String::from("the trace has no terminal observation"), at: None })
    );
    assert_eq!(report.outcome("tool_correlation"), Some(&Outcome::Pass));
}
