//! `--format ctrf`: the report as a Common Test Report Format document (CTRF, spec version
//! 0.0.0, the JSON schema the `ctrf` package 0.3.0 ships; the tests validate every rendering
//! against it). The cases are [`super::cases`]'s; the run's facts (the protocol, the driver,
//! the image's digest, the revisions) are the results' `extra`.

use serde::Serialize;
use serde_json::{Map, Value};

use super::cases::{self, Case};
use super::{Report, StepStatus, Window};

/// The CTRF specification version the document follows.
pub const SPEC_VERSION: &str = "0.0.0";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    report_format: &'static str,
    spec_version: &'static str,
    generated_by: String,
    results: Results,
}

#[derive(Serialize)]
struct Results {
    tool: Tool,
    summary: Summary,
    tests: Vec<Test>,
    extra: Map<String, Value>,
}

#[derive(Serialize)]
struct Tool {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct Summary {
    tests: usize,
    passed: usize,
    failed: usize,
    skipped: usize,
    pending: usize,
    other: usize,
    suites: usize,
    start: u64,
    stop: u64,
    duration: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Test {
    name: &'static str,
    status: StepStatus,
    /// Milliseconds; the schema requires it, so an untimed case (a check) says 0.
    duration: u64,
    suite: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<String>,
    /// The kind of a failure ([`crate::outcome::Kind::name`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_status: Option<&'static str>,
}

pub fn render(report: &Report, window: Window) -> String {
    let tests: Vec<Test> = cases::cases(report).into_iter().map(test).collect();
    let count = |status: StepStatus| tests.iter().filter(|t| t.status == status).count();
    let mut suites: Vec<&str> = tests.iter().map(|t| t.suite[0].as_str()).collect();
    suites.dedup();
    let summary = Summary {
        tests: tests.len(),
        passed: count(StepStatus::Passed),
        failed: count(StepStatus::Failed),
        skipped: count(StepStatus::Skipped),
        pending: 0,
        other: 0,
        suites: suites.len(),
        start: window.start_ms(),
        stop: window.stop_ms(),
        duration: window.duration().as_millis() as u64,
    };
    let extra = cases::properties(report).into_iter().map(|(name, value)| (name, Value::String(value))).collect();
    let document = Document {
        report_format: "CTRF",
        spec_version: SPEC_VERSION,
        generated_by: format!("checkfu-wire probe {}", env!("CARGO_PKG_VERSION")),
        results: Results { tool: Tool { name: "checkfu-wire-probe", version: env!("CARGO_PKG_VERSION") }, summary, tests, extra },
    };
    // Strings, integers and maps of strings: serializing them cannot fail.
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}

fn test(case: Case) -> Test {
    Test {
        name: case.name,
        status: case.status,
        duration: case.ms.unwrap_or(0),
        suite: vec![case.suite],
        message: case.message,
        trace: case.excerpt,
        raw_status: case.kind,
    }
}
