//! The report as a few lines for a person: what ran, each step, the model plane, what the
//! lane adds, the image and the next steps, and last the verdict with its cause.

use std::fmt::Write as _;

use super::{steps, Report, QUALIFICATION};
use checkfu_wire::catalog::Protocol;

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
    report.lane.text_head(&mut out);
    for (name, step) in &report.steps {
        let _ = writeln!(out, "{}", steps::line(*name, step));
    }
    let failed = report.steps.iter().any(|(_, s)| s.outcome.is_failed());
    report.lane.text_after_steps(&mut out, failed);
    out.push_str(&report.model_plane.summary());
    report.lane.text_tail(&mut out, report);
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
