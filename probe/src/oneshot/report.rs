//! What a one-shot probe run reports: one JSON object (`--format json`) or a few lines.
//!
//! `steps` and `model_plane` have the shapes of the ACP lane's report; what it adds is
//! `runs`, each run as it was (argv as run, stdin, exit, the normalized events' kinds, the
//! answer, the trace and its checks). No ACP admission or handshake is reported.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value};

use super::process::RunReport;
use crate::model_plane::ModelPlane;
use crate::result::{stderr_lines, step_line, QUALIFICATION};
use crate::{Step, StepStatus};
use checkfu_wire::conformance::Outcome;
use checkfu_wire::oneshot::Declaration;

#[derive(Debug, Serialize)]
pub struct OneshotResult {
    pub qualification: &'static str,
    pub protocol: &'static str,
    /// The one-shot driver the lane's catalog data names.
    pub driver: &'static str,
    /// The declaration as the decoder accepted it.
    pub declaration: Declaration,
    pub steps: Map<String, Value>,
    pub runs: Vec<RunReport>,
    pub nonce: String,
    /// The second run's nonce, when a resume was run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_nonce: Option<String>,
    /// How the output schema reached the model, per the relay (`tool`, `response_format`,
    /// `text.format`, …); present when `--output-schema` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema_delivery: Option<Vec<&'static str>>,
    pub model_plane: ModelPlane,
    /// The image the CLI ran in (`--image`), and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::image::run::ImageRun>,
    /// What to do next after an image run (`--image`, `--build-context`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<crate::image::run::NextSteps>,
    /// The signal that stopped the run, if one did ([`crate::interrupt`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<&'static str>,
    /// What the run did that may not be what was meant, though it judges nothing: a home
    /// file that does not parse as its format ([`crate::config_file`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub step_list: Vec<(&'static str, Step)>,
}

impl OneshotResult {
    pub fn new(
        declaration: &Declaration,
        step_list: Vec<(&'static str, Step)>,
        runs: Vec<RunReport>,
        nonce: String,
        resume_nonce: Option<String>,
        output_schema_delivery: Option<Vec<&'static str>>,
        model_plane: ModelPlane,
    ) -> OneshotResult {
        let steps = crate::ending::Steps::json(&step_list);
        OneshotResult {
            qualification: QUALIFICATION,
            protocol: checkfu_wire::catalog::ONESHOT_PROTOCOL,
            driver: checkfu_wire::catalog::ONESHOT_DRIVER,
            declaration: declaration.clone(),
            steps,
            runs,
            nonce,
            resume_nonce,
            output_schema_delivery,
            model_plane,
            image: None,
            next: None,
            interrupted: crate::interrupt::received().map(crate::interrupt::name),
            warnings: Vec::new(),
            step_list,
        }
    }

    /// Every step passed, no run's check failed, and the CLI matched its catalog entry.
    pub fn passed(&self) -> bool {
        self.step_list.iter().all(|(_, s)| s.status == StepStatus::Passed)
            && self.runs.iter().all(|r| !checks_failed(r))
            && self.model_plane.mismatches().is_empty()
            && self.interrupted.is_none()
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        text.push('\n');
        text
    }

    /// The first run's trace, as `--trace` writes it (every run's is in `runs`).
    pub fn trace(&self) -> &str {
        self.runs.first().map_or("", |r| r.trace.as_str())
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "checkfu-wire probe ({QUALIFICATION}: local feedback, never qualification), protocol {}", self.protocol);
        if let Some(signal) = self.interrupted {
            let _ = writeln!(out, "interrupted by {signal}: the run was stopped, torn down and cleaned up");
        }
        for (i, run) in self.runs.iter().enumerate() {
            let _ = writeln!(out, "run {}    {}", i + 1, run.argv.join(" "));
            let kinds = if run.event_kinds.is_empty() { String::from("-") } else { run.event_kinds.join(", ") };
            let _ = writeln!(
                out,
                "run {}    pid {}, {}, exit {}, {} ms; events: {kinds}; session: {}",
                i + 1,
                run.pid,
                run.ending,
                run.exit,
                run.ms,
                run.session_id.as_deref().unwrap_or("-")
            );
            let answer: String = run.answer.chars().take(200).collect();
            let _ = writeln!(out, "run {}    answer: {answer:?}", i + 1);
        }
        for (name, step) in &self.step_list {
            let _ = writeln!(out, "{}", step_line(name, step));
        }
        if self.step_list.iter().any(|(_, s)| s.status == StepStatus::Failed) {
            let several = self.runs.len() > 1;
            for (i, run) in self.runs.iter().enumerate() {
                let label = if several { format!("run {}: ", i + 1) } else { String::new() };
                out.push_str(&stderr_lines(&label, &run.stderr_tail));
            }
        }
        if let Some(delivery) = &self.output_schema_delivery {
            let ways = if delivery.is_empty() { String::from("no call carried it") } else { delivery.join(", ") };
            let _ = writeln!(out, "schema   reached the model as: {ways}");
        }
        out.push_str(&self.model_plane.summary());
        for warning in &self.warnings {
            let _ = writeln!(out, "warning  {warning}");
        }
        for (i, run) in self.runs.iter().enumerate() {
            if let Some(refused) = &run.trace_refused {
                let _ = writeln!(out, "check    run {}: FAILED: {refused}", i + 1);
            }
            for (name, outcome) in run.checks.iter().flat_map(|c| &c.checks) {
                if let Outcome::Fail { reason, .. } = outcome {
                    let _ = writeln!(out, "check    run {}: {name} FAILED: {reason}", i + 1);
                }
            }
        }
        out.push_str(&crate::image::run::text_lines(self.image.as_ref(), self.next.as_ref()));
        let _ = writeln!(out, "{}", if self.passed() { "PASSED" } else { "FAILED" });
        out
    }
}

/// Whether a run's checks failed, or could not be made.
fn checks_failed(run: &RunReport) -> bool {
    run.checks.as_ref().is_none_or(|c| c.failed())
}
