//! What the one-shot lane adds to a report: its driver, the declaration as the decoder
//! accepted it, and each run of the CLI as it was (argv as run, stdin, exit, the normalized
//! events' kinds, the answer, the trace and its checks).

use serde::Serialize;
use serde_json::Value;

use super::process::ProcessEnd;
use checkfu_wire::conformance::{Outcome, Report as ConformanceReport};
use checkfu_wire::oneshot::Declaration;

/// The one-shot lane's members of the report.
#[derive(Debug, Serialize)]
pub struct OneshotReport {
    /// The one-shot driver the lane's catalog data names.
    pub driver: &'static str,
    /// The declaration as the decoder accepted it.
    pub declaration: Declaration,
    pub runs: Vec<RunReport>,
    /// The second run's nonce, when a resume was run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_nonce: Option<String>,
    /// How the output schema reached the model, per the relay (`tool`, `response_format`,
    /// `text.format`, …); present when `--output-schema` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema_delivery: Option<Vec<&'static str>>,
}

/// What one run was, as the report shows it.
#[derive(Debug, Serialize)]
pub struct RunReport {
    /// The entrypoint and its arguments, as run (placeholders expanded).
    pub argv: Vec<String>,
    /// What was written to stdin (`null`: the prompt went by file, and stdin was closed).
    pub stdin: Option<String>,
    pub nonce: String,
    #[serde(flatten)]
    pub process: ProcessEnd,
    pub timed_out: bool,
    pub ms: u64,
    pub stdout_bytes: u64,
    /// The session id its stream reported (stream mode).
    pub session_id: Option<String>,
    /// The stream's event kinds in order of first appearance (stream mode).
    pub event_kinds: Vec<&'static str>,
    pub stream_errors: Vec<String>,
    pub malformed_lines: Vec<Value>,
    /// The final answer (its first 4 KiB).
    pub answer: String,
    /// The observations, as `conform` reads them.
    pub trace: String,
    /// The conformance checks over that trace, as `conform --format json` prints them;
    /// `null` when the checker refused the trace (a fault of the normalizer, which
    /// `trace_refused` then names, and which fails the run).
    #[serde(serialize_with = "checks_map")]
    pub checks: Option<ConformanceReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_refused: Option<String>,
}

/// The checks as `conform --format json` prints its `checks` member, or `null`.
fn checks_map<S: serde::Serializer>(checks: &Option<ConformanceReport>, s: S) -> Result<S::Ok, S::Error> {
    match checks {
        None => s.serialize_none(),
        Some(report) => super::process::serialize_checks(report, s),
    }
}

impl RunReport {
    /// Whether its checks failed, or could not be made.
    pub fn checks_failed(&self) -> bool {
        self.checks.as_ref().is_none_or(|c| c.failed())
    }
}

impl OneshotReport {
    /// The first run's trace, as `--trace` writes it (every run's is in `runs`).
    pub fn trace(&self) -> &str {
        self.runs.first().map_or("", |r| r.trace.as_str())
    }

    /// The first run whose checks failed, or could not be made, and why.
    pub fn first_failure(&self) -> Option<String> {
        self.runs.iter().enumerate().find_map(|(i, run)| {
            if let Some(refused) = &run.trace_refused {
                return Some(format!("run {}: {refused}", i + 1));
            }
            run.checks.iter().flat_map(|c| &c.checks).find_map(|(name, outcome)| match outcome {
                Outcome::Fail { reason, .. } => Some(format!("run {}: check {name}: {reason}", i + 1)),
                _ => None,
            })
        })
    }
}
