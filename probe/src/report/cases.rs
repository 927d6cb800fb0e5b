//! The report as test cases, for the formats a CI system reads ([`super::junit`],
//! [`super::ctrf`]).
//!
//! A case per step, per conformance check (per run, in the one-shot lane), per requirement of
//! the registry (`requirements`, [`super::requirements`]: a breach on the wire fails the
//! requirement it names), and one for the run's verdict. The verdict's case is there because a run can fail on what no step or check
//! names (the wire's grammar, the turn telemetry against the relay's record, the catalog
//! binding, a signal): a CI that only counts failed cases must still see the run fail. A
//! failed case carries its reason, its kind and an excerpt of what the probe saw: the
//! observation a check blames (with the lines around it), or the end of the recorded wire
//! for a step.

use std::fmt::Write as _;

use checkfu_wire::catalog::Revision;
use checkfu_wire::conformance::{Outcome as CheckOutcome, Report as ConformanceReport};

use super::{Report, StepStatus};
use crate::outcome::Outcome;

/// How many lines an excerpt holds at most, and how much of each line: a CI page shows the
/// excerpt whole, and a harness's line can be megabytes.
const EXCERPT_LINES: usize = 12;
const EXCERPT_LINE_BYTES: usize = 400;
/// Lines shown on each side of the observation a check blames.
const AROUND: usize = 2;

/// The suite of the steps, as both formats name it.
pub const STEPS: &str = "steps";
/// The suite of the ACP lane's checks.
pub const CHECKS: &str = "checks";
/// The suite of the requirement registry, a case per requirement (not tested: skipped).
pub const REQUIREMENTS: &str = "requirements";
/// The suite of the verdict's one case, and the case's name.
pub const VERDICT: &str = "verdict";

/// One case: where it belongs, how it ended, and for a failure what to show.
#[derive(Debug)]
pub struct Case {
    /// `steps`, `checks`, `run N checks` or `verdict`.
    pub suite: String,
    pub name: &'static str,
    pub status: StepStatus,
    /// How long it ran, when the probe timed it (steps only).
    pub ms: Option<u64>,
    /// What kind of fact failed it ([`crate::outcome::Kind::name`]), or `check` for a check.
    pub kind: Option<&'static str>,
    /// The reason it failed, or why it was skipped.
    pub message: Option<String>,
    /// What the probe saw, for a failure.
    pub excerpt: Option<String>,
}

/// The facts a CI report carries beside the cases, name → value, in a stable order.
pub fn properties(report: &Report) -> Vec<(String, String)> {
    let mut properties = vec![
        ("protocol".to_owned(), report.protocol.name().to_owned()),
        ("qualification".to_owned(), report.qualification.to_owned()),
        ("nonce".to_owned(), report.nonce.clone()),
    ];
    properties.push(("driver".to_owned(), report.lane.driver().to_owned()));
    properties.extend(report.lane.properties());
    if let Some(image) = &report.image {
        properties.push(("image.reference".to_owned(), image.reference.clone()));
        properties.push(("image.digest".to_owned(), image.digest.clone()));
    }
    if let Some(signal) = report.interrupted {
        properties.push(("interrupted".to_owned(), signal.to_owned()));
    }
    // The revisions the run was judged under, as the generated catalog pins them: a report
    // read later says which contract it holds the harness to.
    for revision in Revision::ALL {
        properties.push((format!("revision.{}", revision.name()), revision.literal().to_owned()));
    }
    properties
}

/// Every case of `report`, in the order the report lists them.
pub fn cases(report: &Report) -> Vec<Case> {
    let mut cases = Vec::new();
    let wire = wire_tail(report);
    for (name, step) in &report.steps {
        let failed = match &step.outcome {
            Outcome::Failed(reason) => Some(reason.kind.name()),
            _ => None,
        };
        cases.push(Case {
            suite: STEPS.to_owned(),
            name: name.name(),
            status: step.status(),
            ms: Some(step.ms),
            kind: failed,
            message: step.outcome.why().map(str::to_owned),
            excerpt: failed.and(wire.clone()),
        });
    }
    report.lane.cases(&mut cases, wire.as_deref());
    let failure = report.first_failure();
    cases.push(Case {
        suite: VERDICT.to_owned(),
        name: VERDICT,
        status: if failure.is_some() { StepStatus::Failed } else { StepStatus::Passed },
        ms: None,
        kind: failure.as_ref().map(|_| VERDICT),
        excerpt: failure.as_ref().and(wire),
        message: failure,
    });
    cases
}

/// A case per conformance check of `report`, in `suite`; a failed one shows the observation
/// of `trace` it blames.
pub(crate) fn checks(cases: &mut Vec<Case>, suite: &str, report: &ConformanceReport, trace: &str) {
    for (name, check) in &report.checks {
        let outcome = Outcome::from(check);
        let status = StepStatus::of(&outcome);
        let message = outcome.why().map(str::to_owned);
        let excerpt = match check {
            CheckOutcome::Fail { at: Some(at), .. } => Some(around(trace, *at)),
            _ => None,
        };
        cases.push(Case {
            suite: suite.to_owned(),
            name,
            status,
            ms: None,
            kind: match &outcome {
                Outcome::Failed(reason) => Some(reason.kind.name()),
                _ => None,
            },
            message,
            excerpt,
        });
    }
}

/// The observation `at` of `trace` with the lines around it, each numbered as the trace's
/// line (the header is line 1, so observation `at` is line `at + 2`).
fn around(trace: &str, at: usize) -> String {
    let line = at + 1;
    let first = line.saturating_sub(AROUND);
    let mut out = String::new();
    for (i, text) in trace.lines().enumerate().skip(first).take(line + AROUND + 1 - first) {
        let mark = if i == line { '>' } else { ' ' };
        let _ = writeln!(out, "{mark}{:>5} {}", i + 1, clip(text));
    }
    out
}

/// The end of the recorded wire (the ACP lane's `--record`), else of the observation trace:
/// what a failed step saw last.
fn wire_tail(report: &Report) -> Option<String> {
    let text = match report.wire_record() {
        Some(record) if !record.is_empty() => String::from_utf8_lossy(record).into_owned(),
        _ => report.trace().to_owned(),
    };
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return None;
    }
    let mut out = String::new();
    let skipped = lines.len().saturating_sub(EXCERPT_LINES);
    if skipped > 0 {
        let _ = writeln!(out, "… {skipped} earlier lines");
    }
    for text in &lines[skipped..] {
        out.push_str(&clip(text));
        out.push('\n');
    }
    Some(out)
}

/// `text` cut at [`EXCERPT_LINE_BYTES`] on a character boundary, saying so.
fn clip(text: &str) -> String {
    if text.len() <= EXCERPT_LINE_BYTES {
        return text.to_owned();
    }
    let mut end = EXCERPT_LINE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} … ({} bytes)", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_marks_the_blamed_observation_and_numbers_lines_as_the_trace_does() {
        let trace = "header\nobs0\nobs1\nobs2\nobs3\nobs4\nobs5\n";
        let excerpt = around(trace, 2);
        assert_eq!(excerpt, "     2 obs0\n     3 obs1\n>    4 obs2\n     5 obs3\n     6 obs4\n");
        // At the start and past the end it shows what there is.
        assert_eq!(around(trace, 0), "     1 header\n>    2 obs0\n     3 obs1\n     4 obs2\n");
        assert_eq!(around("header\n", 5), "");
    }

    #[test]
    fn a_long_line_is_clipped_on_a_character_boundary() {
        let line = "é".repeat(EXCERPT_LINE_BYTES);
        let clipped = clip(&line);
        assert!(clipped.starts_with(&"é".repeat(EXCERPT_LINE_BYTES / 2)));
        assert!(clipped.ends_with(&format!("({} bytes)", line.len())), "{clipped}");
        assert_eq!(clip("short"), "short");
    }
}
