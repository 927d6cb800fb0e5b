//! What the one-shot lane adds to a report: its driver, the declaration as the decoder
//! accepted it, and each run of the CLI as it was (argv as run, stdin, exit, the normalized
//! events' kinds, the answer, the trace and its checks).

use std::any::Any;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::outcome::Outcome;
use crate::report::cases::{self as report_cases, Case};
use crate::report::process::{stderr_lines, ProcessEnd};
use crate::report::{LaneReport, Report, Step};
use checkfu_wire::catalog::{self, StepName};
use checkfu_wire::conformance::Report as ConformanceReport;
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
        Some(report) => crate::report::process::serialize_checks(report, s),
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
            run.checks.iter().flat_map(|c| &c.checks).find_map(|(name, check)| match Outcome::from(check) {
                Outcome::Failed(reason) => Some(format!("run {}: check {name}: {reason}", i + 1)),
                _ => None,
            })
        })
    }
}

impl LaneReport for OneshotReport {
    fn members(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }))
    }

    fn driver(&self) -> &str {
        self.driver
    }

    fn first_failure(&self) -> Option<String> {
        OneshotReport::first_failure(self)
    }

    fn trace(&self) -> &str {
        OneshotReport::trace(self)
    }

    /// The declaration's members that name a step (`resume_flag`, `output_schema_flag`)
    /// whose step did not run and pass.
    fn unproven(&self, steps: &[(StepName, Step)]) -> Vec<String> {
        let declaration = serde_json::to_value(&self.declaration).unwrap_or(Value::Null);
        let passed = |name: StepName| steps.iter().any(|(n, step)| *n == name && step.outcome.passed());
        let declared = catalog::ONESHOT_STEPS.iter().filter_map(|s| s.declared.map(|member| (member, s.step)));
        declared
            .filter_map(|(member, step)| declaration.get(member).filter(|v| !v.is_null()).map(|v| (member, v, step)))
            .filter(|(_, _, step)| !passed(*step))
            .map(|(member, value, _)| format!("{member}: {}", value.as_str().map_or_else(|| value.to_string(), str::to_owned)))
            .collect()
    }

    fn text_head(&self, out: &mut String) {
        oneshot_head(out, self);
    }

    fn text_after_steps(&self, out: &mut String, failed: bool) {
        if failed {
            let several = self.runs.len() > 1;
            for (i, run) in self.runs.iter().enumerate() {
                let label = if several { format!("run {}: ", i + 1) } else { String::new() };
                out.push_str(&stderr_lines(&label, &run.process.stderr_tail));
            }
        }
        if let Some(delivery) = &self.output_schema_delivery {
            let ways = if delivery.is_empty() { String::from("no call carried it") } else { delivery.join(", ") };
            let _ = writeln!(out, "schema   reached the model as: {ways}");
        }
    }

    fn text_tail(&self, out: &mut String, _report: &Report) {
        oneshot_tail(out, self);
    }

    fn cases(&self, cases: &mut Vec<Case>, _wire: Option<&str>) {
        for (i, run) in self.runs.iter().enumerate() {
            if let Some(checks_made) = &run.checks {
                report_cases::checks(cases, &format!("run {} {}", i + 1, report_cases::CHECKS), checks_made, &run.trace);
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn oneshot_head(out: &mut String, r: &OneshotReport) {
    for (i, run) in r.runs.iter().enumerate() {
        let _ = writeln!(out, "run {}    {}", i + 1, run.argv.join(" "));
        let kinds = if run.event_kinds.is_empty() { String::from("-") } else { run.event_kinds.join(", ") };
        let _ = writeln!(
            out,
            "run {}    pid {}, {}, exit {}, {} ms; events: {kinds}; session: {}",
            i + 1,
            run.process.pid,
            run.process.ending.name(),
            run.process.exit,
            run.ms,
            run.session_id.as_deref().unwrap_or("-")
        );
        let answer: String = run.answer.chars().take(200).collect();
        let _ = writeln!(out, "run {}    answer: {answer:?}", i + 1);
    }
}

fn oneshot_tail(out: &mut String, r: &OneshotReport) {
    for (i, run) in r.runs.iter().enumerate() {
        if let Some(refused) = &run.trace_refused {
            let _ = writeln!(out, "check    run {}: FAILED: {refused}", i + 1);
        }
        for (name, check) in run.checks.iter().flat_map(|c| &c.checks) {
            if let Outcome::Failed(reason) = Outcome::from(check) {
                let _ = writeln!(out, "check    run {}: {name} FAILED: {reason}", i + 1);
            }
        }
    }
}
