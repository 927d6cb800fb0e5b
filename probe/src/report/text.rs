//! The report as a few lines for a person: what ran, each step, the model plane, what the
//! lane adds, the image and the next steps, and last the verdict with its cause.

use std::fmt::Write as _;

use serde_json::Value;

use super::acp::AcpReport;
use super::oneshot::OneshotReport;
use super::process::stderr_lines;
use super::{steps, LaneReport, Report, QUALIFICATION};
use checkfu_wire::catalog::Protocol;
use checkfu_wire::conformance::Outcome;

pub(super) fn render(report: &Report) -> String {
    let mut out = String::new();
    // The ACP lane is the default one and says no protocol; every other says its own.
    let lane = match report.protocol {
        Protocol::AcpV1 => String::new(),
        other => format!(", protocol {other}"),
    };
    let _ = writeln!(out, "checkfu-wire probe ({QUALIFICATION}: local feedback, never qualification){lane}");
    if let Some(signal) = report.interrupted {
        let _ = writeln!(out, "interrupted by {signal}: the run was stopped, torn down and cleaned up");
    }
    match &report.lane {
        LaneReport::Acp(r) => acp_head(&mut out, r),
        LaneReport::Oneshot(r) => oneshot_head(&mut out, r),
    }
    for (name, step) in &report.steps {
        let _ = writeln!(out, "{}", steps::line(*name, step));
    }
    if report.steps.iter().any(|(_, s)| s.outcome.is_failed()) {
        match &report.lane {
            LaneReport::Acp(r) => out.push_str(&stderr_lines("", &r.harness.process.stderr_tail)),
            LaneReport::Oneshot(r) => {
                let several = r.runs.len() > 1;
                for (i, run) in r.runs.iter().enumerate() {
                    let label = if several { format!("run {}: ", i + 1) } else { String::new() };
                    out.push_str(&stderr_lines(&label, &run.process.stderr_tail));
                }
            }
        }
    }
    if let LaneReport::Oneshot(r) = &report.lane {
        if let Some(delivery) = &r.output_schema_delivery {
            let ways = if delivery.is_empty() { String::from("no call carried it") } else { delivery.join(", ") };
            let _ = writeln!(out, "schema   reached the model as: {ways}");
        }
    }
    out.push_str(&report.model_plane.summary());
    match &report.lane {
        LaneReport::Acp(r) => acp_tail(&mut out, r, report),
        LaneReport::Oneshot(r) => oneshot_tail(&mut out, r),
    }
    for warning in &report.warnings {
        let _ = writeln!(out, "warning  {warning}");
    }
    out.push_str(&crate::image::run::text_lines(report.image.as_ref()));
    if let Some(next) = &report.next {
        out.push_str(&next.to_text());
    }
    match report.first_failure() {
        None => out.push_str("PASSED\n"),
        // The cause is the last line, where a reader of a long report looks first.
        Some(cause) => {
            let _ = writeln!(out, "FAILED: {}", one_line(&cause));
        }
    }
    out
}

/// A reason on one line: its line breaks become spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn acp_head(out: &mut String, r: &AcpReport) {
    let agent = match (&r.harness.agent_info["name"], &r.harness.agent_info["version"]) {
        (Value::String(n), Value::String(v)) => format!("{n} {v}"),
        (Value::String(n), _) => n.clone(),
        _ => String::from("(no agentInfo)"),
    };
    let process = &r.harness.process;
    let _ = writeln!(out, "harness  {agent}, pid {}, {}, exit {}", process.pid, process.ending.name(), process.exit);
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
    for failed in r.requirements.iter().filter(|j| j.status == super::requirements::Status::Failed) {
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
            crate::report::acp::MidTurn::FirstChunk => "on the first streamed words",
            crate::report::acp::MidTurn::CallInFlight => "while the model call was held",
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
        for (name, outcome) in run.checks.iter().flat_map(|c| &c.checks) {
            if let Outcome::Fail { reason, .. } = outcome {
                let _ = writeln!(out, "check    run {}: {name} FAILED: {reason}", i + 1);
            }
        }
    }
}
