//! The conformance grammar checker: the page's seven checks over one turn's normalized
//! observations.
//!
//! A trace is JSON Lines (CONTRACT.md section 5): a [`header::Header`] line with the admitted
//! axes and the opted-in cases, then one [`observation::Observation`] per line. The checker
//! reads it in one pass, feeding every observation to every check, each of which keeps only
//! the state its requirement needs (ids seen, events pending): time is linear in the trace
//! and memory in its distinct ids. A trace that cannot be read (bad JSON, unknown kind or
//! field, unknown declared axis or value, missing header) is a [`TraceError`] naming the
//! line, not a verdict.
//!
//! Every check, axis, value and gate comes from the generated tables: the report lists
//! exactly [`catalog::CONFORMANCE_CHECKS`] in catalog order; gating is
//! [`catalog::GATED_EMISSIONS`]; the axis a tri-state control check exercises is the
//! [`catalog::UPGRADES`] row whose evidence is that check. Each check's reading of its
//! requirement is documented in its module:
//!
//! | check | module | requirement, as read |
//! |---|---|---|
//! | ready_handshake | [`ready`] | one `ready`; no harness observation before it |
//! | terminal_observation | [`terminal`] | one `terminal`, outcome `success`, last harness observation; `interrupted` only after an accepted drain |
//! | tool_correlation | [`tools`] | unique tool-use ids; each result follows a use of its id |
//! | steering_correlation | [`steering`] | acknowledgements only with the gate open; one per steered event, after it |
//! | steering_delivered | [`steering`] | declared: each live steer accepted (`delivered`/`queued`) before the terminal, else skip when none sent; undeclared: no steering members |
//! | cooperative_interrupt_drained | [`interrupt`] | opt-in, declared: the drain accepted (`draining`), then a terminal; refusal fails |
//! | subagent_correlation | [`subagents`] | gated lifecycle; start once before references; settle once before the terminal; results keep their use's attribution |
//!
//! The reader interns every id an observation names (tool ids, steer events, subagent ids) in
//! one [`ids::Interner`], so the checks keep their per-id state in vectors indexed by a dense
//! [`ids::Id`] and touch the id strings only to word a fault.
//!
//! A fail names the zero-based index of the observation at fault; when a check has several
//! faults, the one at the lowest index is reported (see [`report::Faults`]).

pub mod header;
pub mod ids;
mod interrupt;
pub mod normalize;
pub mod observation;
mod ready;
pub mod report;
mod steering;
mod subagents;
mod terminal;
mod tools;

use std::fmt;
use std::io::BufRead;

use crate::catalog;
use header::Header;
use ids::Interner;
use observation::Observation;
pub use report::{Outcome, Report};

/// One check's streaming evaluation.
trait Check {
    /// Sees observation `at` (zero-based, header excluded); `ids` names its ids.
    fn observe(&mut self, at: usize, observation: &Observation, ids: &Interner);
    /// The verdict once the trace is exhausted, given how many observations it held.
    fn finish(self: Box<Self>, observations: usize, ids: &Interner) -> Outcome;
}

/// The evaluator of a catalog check. The match is exhaustive over the generated enum: a
/// check added to the catalog does not compile here until it has an evaluator.
fn evaluator(check: catalog::Check, header: &Header) -> Box<dyn Check> {
    use catalog::Check as Name;
    match check {
        Name::ReadyHandshake => Box::<ready::ReadyHandshake>::default(),
        Name::TerminalObservation => Box::<terminal::TerminalObservation>::default(),
        Name::ToolCorrelation => Box::<tools::ToolCorrelation>::default(),
        Name::SteeringCorrelation => Box::new(steering::SteeringCorrelation::new(header)),
        Name::SteeringDelivered => Box::new(steering::SteeringDelivered::new(header)),
        Name::CooperativeInterruptDrained => Box::new(interrupt::CooperativeInterruptDrained::new(header)),
        Name::SubagentCorrelation => Box::new(subagents::SubagentCorrelation::new(header)),
    }
}

/// Why a trace could not be checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// One-based line number.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for TraceError {}

/// Checks a trace held in memory: a header line, then one observation per line.
///
/// ```
/// use checkfu_wire::conformance::{check_str, Outcome};
///
/// let trace = r#"{"trace": 1, "declared": {}}
/// {"kind": "ready"}
/// {"kind": "output", "text": "working"}
/// {"kind": "terminal", "outcome": "success", "stop_reason": "end_turn"}
/// "#;
/// let report = check_str(trace).expect("a well-formed trace");
/// assert!(!report.failed());
/// assert_eq!(report.outcome("terminal_observation"), Some(&Outcome::Pass));
///
/// // Without its terminal the turn fails that check, at the line where it should be.
/// let unfinished = trace.lines().take(3).collect::<Vec<_>>().join("\n");
/// let report = check_str(&unfinished).expect("a well-formed trace");
/// assert_eq!(report.outcome("terminal_observation").map(Outcome::status), Some("fail"));
/// ```
pub fn check_str(trace: &str) -> Result<Report, TraceError> {
    check_reader(trace.as_bytes())
}

/// Checks a trace read line by line; memory does not grow with the number of observations.
pub fn check_reader<R: BufRead>(mut reader: R) -> Result<Report, TraceError> {
    let mut line = String::new();
    let mut number = 0usize;
    let mut next_line = |line: &mut String, number: &mut usize| -> Result<bool, TraceError> {
        line.clear();
        *number += 1;
        match reader.read_line(line) {
            Ok(0) => Ok(false),
            Ok(_) => {
                let trimmed = line.trim_end_matches(['\n', '\r']).len();
                line.truncate(trimmed);
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                Err(TraceError { line: *number, message: String::from("the line is not UTF-8") })
            }
            Err(e) => Err(TraceError { line: *number, message: format!("cannot read the trace: {e}") }),
        }
    };

    if !next_line(&mut line, &mut number)? {
        return Err(TraceError { line: 1, message: String::from("missing header: the trace is empty") });
    }
    let header = Header::parse(&line).map_err(|message| TraceError { line: number, message })?;

    let mut checks: Vec<(&'static str, Box<dyn Check>)> =
        catalog::CONFORMANCE_CHECKS.iter().map(|c| (c.name(), evaluator(c.check, &header))).collect();
    let mut ids = Interner::default();
    let mut observations = 0usize;
    while next_line(&mut line, &mut number)? {
        if line.trim().is_empty() {
            return Err(TraceError { line: number, message: String::from("blank line; every line is one observation") });
        }
        let observation = Observation::parse(&line, &mut ids).map_err(|message| TraceError { line: number, message })?;
        for (_, check) in checks.iter_mut() {
            check.observe(observations, &observation, &ids);
        }
        observations += 1;
    }

    let checks = checks.into_iter().map(|(name, check)| (name, check.finish(observations, &ids))).collect();
    Ok(Report { checks, observations })
}

#[cfg(test)]
mod tests;
