//! What a probe run reports: one JSON object (`--format json`) or a few lines for a person.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::session::ClientRequest;
use checkfu_wire::conformance::Report as ConformanceReport;

/// The qualification every local result carries: useful author feedback, never evidence.
pub const QUALIFICATION: &str = "unsigned_local_only";

/// The probe's steps, in order.
pub const STEPS: [&str; 4] = ["initialize_handshake", "session_start", "prompt_exchange", "teardown"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Passed,
    Failed,
    Skipped,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    pub status: StepStatus,
    pub ms: u64,
    pub reason: Option<String>,
}

/// The handshake's admission: what the harness declared, what was admitted, what is realized.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Admission {
    pub driver: String,
    pub retention: String,
    /// The `checkfu.capabilities` member as the harness sent it (`null`: none).
    pub declaration: Value,
    /// The axes the declaration raised above the envelope.
    pub admitted_axes: Vec<&'static str>,
    /// The admitted capability set, axis → value.
    pub admitted: serde_json::Map<String, Value>,
    /// Mechanism members recorded (they promote nothing).
    pub mechanisms: serde_json::Map<String, Value>,
    /// The set with each evidence-gated promotion kept only if its case passed in this run.
    /// Local and unsigned: indicative, never a qualification.
    pub realized: serde_json::Map<String, Value>,
    /// What the run was judged against: always `envelope`, the driver envelope raised by
    /// the declaration (`admitted`). The entry's ceiling is what the catalog says an
    /// integration realizes, and is reported beside it, not judged.
    pub judged_against: &'static str,
    /// The driver envelope for the retention, axis → value.
    pub envelope: serde_json::Map<String, Value>,
    /// With `--harness`: the entry's catalog ceiling, axis → value (`null` without).
    pub ceiling: Option<serde_json::Map<String, Value>>,
    /// The axes on which `realized` is above the entry's ceiling: legal (a ceiling may sit
    /// below the envelope), but the catalog promises less than this run showed.
    pub above_ceiling: Vec<AboveCeiling>,
    /// Why admission refused the handshake, when it did.
    pub error: Option<String>,
}

/// One axis where the run realized more than the entry's ceiling allows.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct AboveCeiling {
    pub axis: String,
    pub realized: String,
    pub ceiling: String,
}

impl AboveCeiling {
    /// The axes on which `realized` is stronger than the entry's ceiling, by the axis's own
    /// order (an axis the ceiling omits stands at its `absent` value).
    pub fn of(entry: &checkfu_wire::catalog::Harness, realized: &serde_json::Map<String, Value>) -> Vec<AboveCeiling> {
        let mut above = Vec::new();
        for (axis, value) in realized {
            let (Some(axis), Some(value)) = (checkfu_wire::catalog::axis(axis), value.as_str()) else { continue };
            let Some(ceiling) = entry.ceiling.iter().find(|(a, _)| *a == axis.name).map(|(_, v)| *v).or(axis.absent) else { continue };
            let rank = |v: &str| axis.values.iter().position(|x| *x == v);
            if let (Some(got), Some(cap)) = (rank(value), rank(ceiling)) {
                if got > cap {
                    above.push(AboveCeiling { axis: axis.name.to_owned(), realized: value.to_owned(), ceiling: ceiling.to_owned() });
                }
            }
        }
        above
    }
}

/// The harness as the run saw it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HarnessInfo {
    pub command: Vec<String>,
    pub pid: u32,
    /// `agentInfo` from the initialize response (`null`: not reported).
    pub agent_info: Value,
    /// `{"code": n}` or `{"signal": n}`; `null` if it could not be reaped.
    pub exit: Value,
    /// How teardown ended it (`exited_on_eof`, `terminated`, `killed`, …).
    pub ending: &'static str,
    /// Processes of its group that teardown had to end after the harness itself was gone.
    pub reaped_children: usize,
    /// Processes of its group still alive after teardown (always empty unless a process
    /// resisted SIGKILL).
    pub leftover_processes: Vec<u32>,
    pub stderr_bytes: u64,
    /// The last bytes of its stderr (at most 4 KiB here).
    pub stderr_tail: String,
}

/// Counts of the wire.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Wire {
    pub messages_in: usize,
    pub messages_out: usize,
    /// The record was cut at its size limit.
    pub record_truncated: bool,
    /// Fail-open diagnostics of accepted messages (the first 1000).
    pub diagnostics: Vec<String>,
    /// How many more there were.
    pub diagnostics_dropped: usize,
    /// Harness updates of an optional-fidelity kind that failed their schema, with the
    /// decoder's reason: ignored for the verdict (fidelity is fail-open).
    pub ignored: Vec<checkfu_wire::decode::IgnoredFidelity>,
    /// Messages that broke the ACP grammar and were read past (a method without the `_` of
    /// an extension, answered -32601): each fails the run, while the turn's steps are still
    /// judged.
    pub grammar_violations: Vec<crate::session::GrammarViolation>,
}

/// The whole result.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeResult {
    pub qualification: &'static str,
    pub steps: serde_json::Map<String, Value>,
    pub admission: Admission,
    /// The seven checks, written as `conform --format json` prints them.
    #[serde(rename = "checks", serialize_with = "crate::ending::serialize_checks")]
    pub report: ConformanceReport,
    pub harness: HarnessInfo,
    pub nonce: String,
    pub client_requests: Vec<ClientRequest>,
    pub wire: Wire,
    #[serde(skip)]
    pub step_list: Vec<(&'static str, Step)>,
    /// The observation trace (`--trace`), and the recorded wire (`--record`).
    #[serde(skip)]
    pub trace: String,
    #[serde(skip)]
    pub record: Vec<u8>,
    #[serde(skip)]
    pub nonce_in_output: bool,
    #[serde(skip)]
    pub reply_in_output: Option<String>,
    /// What the relay served and refused, and the catalog binding (`--harness`).
    pub model_plane: Option<super::model_plane::ModelPlane>,
    /// The image the agent ran in (`--image`, `--build-context`), and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::image::run::ImageRun>,
    /// The signal that stopped the run (`SIGINT`, `SIGTERM`, `SIGHUP`), if one did
    /// ([`crate::interrupt`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<&'static str>,
    /// What to do next after an image run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<crate::image::run::NextSteps>,
    /// What the run did that may not be what was meant, though it judges nothing: a home
    /// file that does not parse as its format ([`crate::config_file`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One step as the text format prints it.
pub fn step_line(name: &str, step: &Step) -> String {
    let status = match step.status {
        StepStatus::Passed => "passed",
        StepStatus::Failed => "FAILED",
        StepStatus::Skipped => "skipped",
    };
    let mut line = format!("step     {name:<22} {status:<8} {:>6} ms", step.ms);
    if let Some(reason) = &step.reason {
        line.push_str("  ");
        line.push_str(reason);
    }
    line
}

/// The most lines of a harness's stderr the text report shows when a step failed.
const STDERR_LINES: usize = 20;

/// The end of a harness's stderr as the text report shows it when a step failed: its last
/// [`STDERR_LINES`] lines, each after `stderr   ` (a harness that prints its error and exits
/// says why here, not only in the JSON report). Empty when it wrote nothing.
pub fn stderr_lines(label: &str, tail: &str) -> String {
    let lines: Vec<&str> = tail.lines().filter(|l| !l.trim().is_empty()).collect();
    let shown = &lines[lines.len().saturating_sub(STDERR_LINES)..];
    let mut out = String::new();
    for line in shown {
        let _ = writeln!(out, "stderr   {label}{line}");
    }
    out
}

impl ProbeResult {
    /// Every step passed, no check failed, the harness kept to the ACP grammar, and it
    /// matched its catalog entry.
    pub fn passed(&self) -> bool {
        self.step_list.iter().all(|(_, s)| s.status == StepStatus::Passed)
            && !self.report.failed()
            && self.wire.grammar_violations.is_empty()
            && self.model_plane.as_ref().is_none_or(|p| p.mismatches().is_empty())
            && self.interrupted.is_none()
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        text.push('\n');
        text
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "checkfu-wire probe ({QUALIFICATION}: local feedback, never qualification)");
        let agent = match (&self.harness.agent_info["name"], &self.harness.agent_info["version"]) {
            (Value::String(n), Value::String(v)) => format!("{n} {v}"),
            (Value::String(n), _) => n.clone(),
            _ => String::from("(no agentInfo)"),
        };
        if let Some(signal) = self.interrupted {
            let _ = writeln!(out, "interrupted by {signal}: the run was stopped, torn down and cleaned up");
        }
        let _ = writeln!(out, "harness  {agent}, pid {}, {}, exit {}", self.harness.pid, self.harness.ending, self.harness.exit);
        for (name, step) in &self.step_list {
            let _ = writeln!(out, "{}", step_line(name, step));
        }
        if self.step_list.iter().any(|(_, s)| s.status == StepStatus::Failed) {
            out.push_str(&stderr_lines("", &self.harness.stderr_tail));
        }
        if let Some(plane) = &self.model_plane {
            out.push_str(&plane.summary());
        }
        let declaration =
            if self.admission.declaration.is_null() { String::from("nothing") } else { self.admission.declaration.to_string() };
        let _ = writeln!(
            out,
            "declared {declaration}; raised: {}",
            if self.admission.admitted_axes.is_empty() { String::from("none") } else { self.admission.admitted_axes.join(", ") }
        );
        if let Some(error) = &self.admission.error {
            let _ = writeln!(out, "admission refused: {error}");
        }
        let _ = writeln!(out, "realized {}", Value::Object(self.admission.realized.clone()));
        if let Some(ceiling) = &self.admission.ceiling {
            let harness = self.model_plane.as_ref().and_then(|p| p.catalog.as_ref()).map_or("", |c| c.harness.as_str());
            let _ = writeln!(
                out,
                "ceiling  {} (`{harness}` in the catalog; the run was judged against the envelope, as realized)",
                Value::Object(ceiling.clone())
            );
            for above in &self.admission.above_ceiling {
                let _ =
                    writeln!(out, "ceiling  realized {}: {} is above the entry's ceiling {}", above.axis, above.realized, above.ceiling);
            }
        }
        for ignored in &self.wire.ignored {
            let _ =
                writeln!(out, "warning  ignored a malformed `{}` update (optional fidelity, not judged): {}", ignored.kind, ignored.reason);
        }
        for warning in &self.warnings {
            let _ = writeln!(out, "warning  {warning}");
        }
        for violation in &self.wire.grammar_violations {
            let _ = writeln!(out, "grammar  violated: {}", violation.reason);
        }
        for request in &self.client_requests {
            let _ = writeln!(out, "client   {} {}: {}", request.method, request.outcome, request.detail);
        }
        out.push_str(&self.report.to_text());
        out.push_str(&crate::image::run::text_lines(self.image.as_ref(), self.next.as_ref()));
        let _ = writeln!(out, "{}", if self.passed() { "PASSED" } else { "FAILED" });
        out
    }
}
