//! What the ACP lane adds to a report: the admission of the harness's declaration, the seven
//! conformance checks, the harness as the run saw it, the client requests it made, and the
//! wire's counts; and how it renders itself ([`LaneReport`]).

use std::any::Any;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value};

use super::requirements::Status;
use crate::report::cases::{self as report_cases, Case};
use crate::report::process::{stderr_lines, ProcessEnd};
use crate::report::{LaneReport, Report, Step, StepStatus};
use crate::session::ClientRequest;
use crate::verdict::compaction::CompactionCheck;
use crate::verdict::TurnTelemetry;
use checkfu_wire::catalog::{self, StepName};
use checkfu_wire::conformance::Report as ConformanceReport;

/// The ACP lane's members of the report.
#[derive(Clone, Debug, Serialize)]
pub struct AcpReport {
    /// The ACP version the run spoke, as `initialize` agreed it ([`super::negotiate`]).
    pub acp_version: u64,
    /// How it was agreed: the version asked, and a `-32022`'s list when one came.
    pub negotiation: super::negotiate::Negotiation,
    pub admission: Admission,
    /// The seven checks, written as `conform --format json` prints them.
    #[serde(rename = "checks", serialize_with = "crate::report::process::serialize_checks")]
    pub report: ConformanceReport,
    pub harness: HarnessInfo,
    pub client_requests: Vec<ClientRequest>,
    pub wire: Wire,
    /// The harness's `checkfu.turn` set against the relay's record, when it sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_telemetry: Option<TurnTelemetry>,
    /// The `cancellation` step's facts, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancellation: Option<Cancellation>,
    /// The scripted drain's facts, when the interrupt was sent (`--interrupt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<Drain>,
    /// Under an enforced context window: the turn's overflows and compactions as the relay
    /// recorded them, and the harness's `checkfu.compaction` claims set against them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_compaction: Option<crate::verdict::compaction::CompactionCheck>,
    /// Every requirement of the registry as the run judged it, once the run's steps have all
    /// ended ([`super::requirements`]).
    pub requirements: Vec<crate::acp::requirements::Judged>,
    /// ACP's test kit's verdict over `requirements`: reported beside the run's own, it does
    /// not change the exit status.
    pub requirements_verdict: crate::acp::requirements::KitVerdict,
    /// The fresh agent process the requirements that need one were put to, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requirement_probe: Option<ProbeRun>,
    /// What the run put to the agent that the wire's requirements are judged on.
    #[serde(skip)]
    pub exercised: crate::acp::requirements::Exercised,
    /// The observation trace (`--trace`), and the recorded wire (`--record`).
    #[serde(skip)]
    pub trace: String,
    #[serde(skip)]
    pub record: Vec<u8>,
}

/// The fresh agent process of the requirement probes (`crate::acp::kit`): how it ended,
/// what it asked of the client, what it broke, and what each requirement it was put to
/// showed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProbeRun {
    pub pid: u32,
    /// How it ended once its stdin closed (`exited_on_eof` is a prompt shutdown).
    pub ending: &'static str,
    /// From its stdin's closing to its exit, when it exited by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_ms: Option<u64>,
    /// Bytes it wrote on stderr.
    pub stderr_bytes: u64,
    pub messages_in: usize,
    pub messages_out: usize,
    /// From its start to its end.
    pub wall_ms: u64,
    /// Its model traffic, counted and kept out of the model plane's record (which is the
    /// run's turns').
    pub model: crate::relay::Aside,
    pub client_requests: Vec<ClientRequest>,
    pub grammar_violations: Vec<crate::session::GrammarViolation>,
    /// What it did that ACP forbids: each fails the requirement it names.
    pub breaches: Vec<crate::session::Breach>,
    /// The lines of its stdout the decoder rejected and the probes read past (informational:
    /// the transport and schema requirements judge them), the first
    /// [`crate::session::MAX_SKIPPED`], and how many in all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<crate::session::Skipped>,
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_lines: usize,
    /// Its wire as recorded, opened by its launch line: the run's `--record` holds it after
    /// the main process's.
    #[serde(skip)]
    pub record: Vec<u8>,
    /// Each requirement it was put to, with what it showed.
    #[serde(skip)]
    pub judged: Vec<(checkfu_wire::catalog::Requirement, super::requirements::Status, String)>,
    /// Its stdout beside well-formed messages, and its `session/new` results.
    #[serde(skip)]
    pub hygiene: crate::session::Hygiene,
    #[serde(skip)]
    pub sessions: Vec<Value>,
    /// What its teardown left wrong (it ignored EOF and SIGTERM, a child outlived it, the
    /// image's runtime kept something): the run's teardown fails with it too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teardown_fault: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What the probe waited for before it stopped a turn mid-flight (a cancel, a drain).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MidTurn {
    /// A chunk of the agent's message reached the client while a paced model answer was
    /// streaming.
    FirstChunk,
    /// A paced model answer was in flight for a while and no chunk came (a harness that
    /// does not stream, or streams nothing until the answer is whole).
    CallInFlight,
}

/// The `cancellation` step as the run saw it: when the cancel went out and why, how long the
/// agent took to answer it, and what the relay's record shows after it.
#[derive(Clone, Debug, Serialize)]
pub struct Cancellation {
    pub trigger: MidTurn,
    /// From the second prompt's sending to the cancel's.
    pub cancel_after_ms: u64,
    /// From the cancel to the prompt's answer: how long the agent took to settle (`null`:
    /// no answer within the window).
    pub settle_ms: Option<u64>,
    /// The answer's stop reason (`null`: no answer, or an error).
    pub stop_reason: Option<String>,
    /// Model calls that started after the cancel.
    pub calls_after_cancel: usize,
    /// Paced model answers still streaming after the agent answered.
    pub streams_open: usize,
    /// Permission requests the probe answered `cancelled` after the cancel.
    pub permissions_cancelled: usize,
}

/// The scripted drain: when the interrupt went out, and when it was acknowledged.
#[derive(Clone, Debug, Serialize)]
pub struct Drain {
    pub trigger: MidTurn,
    /// From the prompt's sending to the interrupt's.
    pub interrupt_after_ms: u64,
    /// When it was sent, in the relay's clock.
    #[serde(skip)]
    pub sent_ms: u64,
    /// When the harness acknowledged it, in the relay's clock (`null`: it did not).
    #[serde(skip)]
    pub ack_ms: Option<u64>,
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
    pub admitted: Map<String, Value>,
    /// Mechanism members recorded (they promote nothing).
    pub mechanisms: Map<String, Value>,
    /// The set with each promotion kept only if its proof passed in this run, and each
    /// declared mechanism value whose step passed (`builtin_tool_scoping`, `staged_files`).
    /// Local and unsigned: indicative, never a qualification.
    pub realized: Map<String, Value>,
    /// Declared mechanism values (`member: value`) that no step of the probe exercises yet:
    /// recorded, never believed, never realized.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_exercised: Vec<String>,
    /// What the run was judged against: always `envelope`, the driver envelope raised by
    /// the declaration (`admitted`). The entry's ceiling is what the catalog says an
    /// integration realizes, and is reported beside it, not judged.
    pub judged_against: &'static str,
    /// The driver envelope for the retention, axis → value.
    pub envelope: Map<String, Value>,
    /// With `--harness`: the entry's catalog ceiling, axis → value (`null` without).
    pub ceiling: Option<Map<String, Value>>,
    /// The axes on which `realized` is above the entry's ceiling: legal (a ceiling may sit
    /// below the envelope), but the catalog promises less than this run showed.
    pub above_ceiling: Vec<AboveCeiling>,
    /// Why admission refused the handshake, when it did.
    pub error: Option<String>,
}

impl Admission {
    /// Sets `entry`'s catalog ceiling beside the realized set, and the axes the run realized
    /// above it. Reported, not judged: the run was judged against the envelope.
    pub(crate) fn bind_ceiling(&mut self, entry: &checkfu_wire::catalog::Harness) {
        self.ceiling = Some(entry.ceiling.iter().map(|(a, v)| ((*a).to_owned(), serde_json::json!(v))).collect());
        self.above_ceiling = AboveCeiling::of(entry, &self.realized);
    }
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
    pub fn of(entry: &checkfu_wire::catalog::Harness, realized: &Map<String, Value>) -> Vec<AboveCeiling> {
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
#[derive(Clone, Debug, Serialize)]
pub struct HarnessInfo {
    pub command: Vec<String>,
    /// `agentInfo` from the initialize response (`null`: not reported).
    pub agent_info: Value,
    #[serde(flatten)]
    pub process: ProcessEnd,
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
    /// What the harness did that ACP forbids, each with the requirement it breaks, in the
    /// order it happened: each fails the run.
    pub breaches: Vec<crate::session::Breach>,
}

impl AcpReport {
    /// Judges every requirement of the registry over this report and the run's `steps`.
    pub(crate) fn judge_requirements(&mut self, steps: &[(checkfu_wire::catalog::StepName, crate::report::Step)]) {
        self.requirements = crate::acp::requirements::judge(self, steps);
        use crate::acp::requirements::{KitVerdict, NOT_RUN_UNDER_V2};
        // A v2 run puts none of the kit's (v1) requirements to the agent: no verdict, rather
        // than "not conformant" for requirements that were never run.
        self.requirements_verdict = if self.acp_version == crate::acp::negotiate::V2 {
            KitVerdict::not_judged(NOT_RUN_UNDER_V2)
        } else {
            KitVerdict::of(&self.requirements)
        };
    }

    /// The first thing besides a step that fails the run: a failed check, then a broken
    /// grammar, then a breach, then a turn the harness misreported, then a binding
    /// requirement failed.
    pub fn first_failure(&self) -> Option<String> {
        let check = self.report.checks.iter().find_map(|(name, check)| match crate::outcome::Outcome::from(check) {
            crate::outcome::Outcome::Failed(reason) => Some(format!("check {name}: {reason}")),
            _ => None,
        });
        check
            .or_else(|| self.wire.grammar_violations.first().map(|v| format!("grammar violated: {}", v.reason)))
            .or_else(|| self.wire.breaches.first().map(|b| format!("{}: {b}", b.requirement())))
            .or_else(|| self.turn_telemetry.as_ref().and_then(|t| t.mismatches.first()).map(|m| format!("checkfu.turn: {m}")))
            .or_else(|| self.requirement_failure())
    }

    /// A failed requirement that binds (mandatory, or a capability the agent offers): most
    /// fail a step, a check or the wire first, but what only the registry judges (the
    /// version `initialize` answers) must fail the run too, so that a CI counting failed
    /// cases and the exit status agree. An advisory or informational failure is reported and
    /// fails nothing, as in the kit; a requirement not tested fails nothing either.
    fn requirement_failure(&self) -> Option<String> {
        use checkfu_wire::catalog::Tier;
        let binds = |tier: Tier| matches!(tier, Tier::Mandatory | Tier::Capability);
        let failed = self.requirements.iter().find(|j| binds(j.tier) && j.status == crate::acp::requirements::Status::Failed)?;
        Some(format!("requirement {}: {}", failed.id, failed.reason))
    }
}

impl LaneReport for AcpReport {
    fn members(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }))
    }

    fn driver(&self) -> &str {
        &self.admission.driver
    }

    fn properties(&self) -> Vec<(String, String)> {
        vec![(String::from("acp_version"), self.acp_version.to_string())]
    }

    fn first_failure(&self) -> Option<String> {
        AcpReport::first_failure(self)
    }

    fn trace(&self) -> &str {
        &self.trace
    }

    fn wire_record(&self) -> Option<&[u8]> {
        Some(&self.record)
    }

    fn context_compaction(&self) -> Option<&CompactionCheck> {
        self.context_compaction.as_ref()
    }

    /// The promotions not realized and the mechanisms not realized.
    fn unproven(&self, _steps: &[(StepName, Step)]) -> Vec<String> {
        let a = &self.admission;
        let axes = a.admitted_axes.iter().filter(|axis| a.realized.get(**axis) != a.admitted.get(**axis));
        let axes = axes.map(|axis| format!("{axis}: {}", a.admitted.get(*axis).and_then(Value::as_str).unwrap_or_default()));
        let mechanisms = a.mechanisms.iter().filter(|(m, _)| !a.realized.contains_key(*m));
        axes.chain(mechanisms.map(|(m, v)| format!("{m}: {}", v.as_str().unwrap_or_default()))).collect()
    }

    fn judge_requirements(&mut self, steps: &[(StepName, Step)]) {
        AcpReport::judge_requirements(self, steps);
    }

    fn bind_ceiling(&mut self, entry: &catalog::Harness) {
        self.admission.bind_ceiling(entry);
    }

    fn text_head(&self, out: &mut String) {
        acp_head(out, self);
    }

    fn text_after_steps(&self, out: &mut String, failed: bool) {
        if failed {
            out.push_str(&stderr_lines("", &self.harness.process.stderr_tail));
        }
    }

    fn text_tail(&self, out: &mut String, report: &Report) {
        acp_tail(out, self, report);
    }

    fn cases(&self, cases: &mut Vec<Case>, wire: Option<&str>) {
        report_cases::checks(cases, report_cases::CHECKS, &self.report, &self.trace);
        // Every requirement of the registry: one the run did not put to the agent is
        // skipped with why, never passed.
        for judged in &self.requirements {
            let status = match judged.status {
                Status::Passed => StepStatus::Passed,
                Status::Failed => StepStatus::Failed,
                Status::NotTested => StepStatus::Skipped,
            };
            let failed = status == StepStatus::Failed;
            cases.push(Case {
                suite: report_cases::REQUIREMENTS.to_owned(),
                name: judged.id.id(),
                status,
                ms: None,
                kind: failed.then_some("requirement"),
                message: (status != StepStatus::Passed).then(|| judged.reason.clone()),
                excerpt: wire.filter(|_| failed).map(str::to_owned),
            });
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn acp_head(out: &mut String, r: &AcpReport) {
    let agent = match (&r.harness.agent_info["name"], &r.harness.agent_info["version"]) {
        (Value::String(n), Value::String(v)) => format!("{n} {v}"),
        (Value::String(n), _) => n.clone(),
        _ => String::from("(no agentInfo)"),
    };
    let process = &r.harness.process;
    let _ = writeln!(out, "harness  {agent}, pid {}, {}, exit {}", process.pid, process.ending.name(), process.exit);
    let _ = writeln!(out, "acp      version {} ({})", r.acp_version, negotiation_words(r));
}

/// How the run's ACP version was agreed, in a few words.
fn negotiation_words(r: &AcpReport) -> String {
    let n = &r.negotiation;
    match &n.supported {
        Some(supported) => format!("asked {}; the agent answered -32022 naming {supported:?}, and was asked again", n.asked),
        None if n.asked != r.acp_version => format!("asked {}; the agent answered {}", n.asked, r.acp_version),
        None => format!("asked {}", n.asked),
    }
}

fn acp_tail(out: &mut String, r: &AcpReport, report: &Report) {
    let admission = &r.admission;
    let declaration = if admission.declaration.is_null() { String::from("nothing") } else { admission.declaration.to_string() };
    let raised = if admission.admitted_axes.is_empty() { String::from("none") } else { admission.admitted_axes.join(", ") };
    let _ = writeln!(out, "declared {declaration}; raised: {raised}");
    if let Some(error) = &admission.error {
        let _ = writeln!(out, "admission refused: {error}");
    }
    let _ = writeln!(out, "realized {}", Value::Object(admission.realized.clone()));
    if !admission.not_exercised.is_empty() {
        let _ = writeln!(out, "declared, not exercised (no step yet; never realized): {}", admission.not_exercised.join(", "));
    }
    if let Some(ceiling) = &admission.ceiling {
        let harness = report.model_plane.catalog.as_ref().map_or("", |c| c.harness.as_str());
        let _ = writeln!(
            out,
            "ceiling  {} (`{harness}` in the catalog; the run was judged against the envelope, as realized)",
            Value::Object(ceiling.clone())
        );
        for above in &admission.above_ceiling {
            let _ = writeln!(out, "ceiling  realized {}: {} is above the entry's ceiling {}", above.axis, above.realized, above.ceiling);
        }
    }
    for ignored in &r.wire.ignored {
        let _ = writeln!(out, "warning  ignored a malformed `{}` update (optional fidelity, not judged): {}", ignored.kind, ignored.reason);
    }
    for violation in &r.wire.grammar_violations {
        let _ = writeln!(out, "grammar  violated: {}", violation.reason);
    }
    for breach in &r.wire.breaches {
        let _ = writeln!(out, "breach   {}: {breach}", breach.requirement());
    }
    if let Some(p) = &r.requirement_probe {
        for breach in &p.breaches {
            let _ = writeln!(out, "breach   {}: {breach} (the fresh agent process)", breach.requirement());
        }
        let _ = writeln!(
            out,
            "probes   a fresh agent, pid {}, {} {} ms; {} model call(s) set aside from the record",
            p.pid, p.ending, p.wall_ms, p.model.calls
        );
    }
    if !r.requirements.is_empty() {
        let _ = writeln!(out, "{}", r.requirements_verdict.line(&r.requirements));
    }
    for failed in r.requirements.iter().filter(|j| j.status == Status::Failed) {
        let _ = writeln!(out, "failed   {} ({}): {}", failed.id, failed.tier.name(), failed.reason);
    }
    for mismatch in r.turn_telemetry.iter().flat_map(|t| &t.mismatches) {
        let _ = writeln!(out, "turn     checkfu.turn {mismatch}");
    }
    if let Some(c) = &r.cancellation {
        let answered = match (&c.stop_reason, c.settle_ms) {
            (Some(stop), Some(ms)) => format!("answered `{stop}` {ms} ms later"),
            (None, Some(ms)) => format!("answered without a stop reason {ms} ms later"),
            (_, None) => String::from("no answer in the window"),
        };
        let trigger = match c.trigger {
            MidTurn::FirstChunk => "on the first streamed words",
            MidTurn::CallInFlight => "while the model call was held",
        };
        let _ = writeln!(
            out,
            "cancel   sent {trigger}, {} ms into the second prompt; {answered}; {} model call(s) after it, {} answer(s) still in flight",
            c.cancel_after_ms, c.calls_after_cancel, c.streams_open
        );
    }
    // Every way a compaction claim differs from the record (the step names the first).
    for mismatch in r.context_compaction.iter().flat_map(|c| &c.mismatches) {
        let _ = writeln!(out, "turn     {mismatch}");
    }
    for request in &r.client_requests {
        let _ = writeln!(out, "client   {} {}: {}", request.method, request.outcome, request.detail);
    }
    out.push_str(&r.report.to_text());
}
