//! The end of a run, as both lanes report it: what a teardown that went wrong means, the
//! harness's exit as the report writes it, and the tail of its stderr.

use std::process::ExitStatus;

use serde_json::{json, Value};

use crate::session::{Ending, Teardown};

/// The most bytes of a harness's stderr a report keeps.
pub const STDERR_TAIL: usize = 4096;

/// Why a teardown is a failed step, if it is: a process of the group survived it, or the
/// harness had to be killed or could not be reaped. `who` names the harness (`harness`,
/// `CLI`); `ignored` what it ignored before SIGKILL.
pub fn teardown_fault(teardown: &Teardown, who: &str, ignored: &str) -> Option<String> {
    if !teardown.leftover.is_empty() {
        return Some(format!("processes of the {who}'s group survived teardown: {:?}", teardown.leftover));
    }
    match teardown.ending {
        Ending::Killed => Some(format!("the {who} ignored {ignored}; it was killed")),
        Ending::Unreaped => Some(format!("the {who} could not be reaped after SIGKILL")),
        _ => None,
    }
}

/// An exit as the report writes it: `{"code": n}`, `{"signal": n}`, or `null` when the
/// harness could not be reaped.
pub fn exit_json(status: Option<ExitStatus>) -> Value {
    let Some(status) = status else { return Value::Null };
    match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
        (Some(code), _) => json!({"code": code}),
        (None, Some(signal)) => json!({"signal": signal}),
        (None, None) => Value::Null,
    }
}

/// The last [`STDERR_TAIL`] bytes of a stderr tail, cut on a character boundary.
pub fn stderr_tail(text: &str) -> String {
    checkfu_wire::text::tail(text, STDERR_TAIL).to_owned()
}

/// A conformance report as the `checks` member of a probe's JSON, as `conform --format json`
/// prints it: check name → verdict, in catalog order. Both lanes keep their checks as the
/// checker's values and write them only here.
pub fn serialize_checks<S: serde::Serializer>(report: &checkfu_wire::conformance::Report, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(report.checks.len()))?;
    for (name, outcome) in &report.checks {
        map.serialize_entry(name, outcome)?;
    }
    map.end()
}

/// The steps of a run in the order they ended, each told to the caller as it ends: one
/// bookkeeping for both lanes.
pub struct Steps<'p> {
    pub list: Vec<(&'static str, crate::Step)>,
    progress: &'p mut dyn FnMut(crate::Progress),
}

impl<'p> Steps<'p> {
    pub fn new(progress: &'p mut dyn FnMut(crate::Progress)) -> Steps<'p> {
        Steps { list: Vec::new(), progress }
    }

    /// A step that ran for `ms` and passed, or failed with the reason.
    pub fn ended(&mut self, name: &'static str, ms: u64, outcome: Result<(), String>) {
        let (status, reason) = match outcome {
            Ok(()) => (crate::StepStatus::Passed, None),
            Err(reason) => (crate::StepStatus::Failed, Some(reason)),
        };
        self.push(name, crate::Step { status, ms, reason });
    }

    /// A step that did not run, and why.
    pub fn skipped(&mut self, name: &'static str, reason: &str) {
        self.push(name, crate::Step { status: crate::StepStatus::Skipped, ms: 0, reason: Some(reason.to_owned()) });
    }

    /// What the caller hears of a run besides its steps (a note, the start).
    pub fn tell(&mut self, event: crate::Progress) {
        (self.progress)(event);
    }

    fn push(&mut self, name: &'static str, step: crate::Step) {
        (self.progress)(crate::Progress::Step { name, step: &step });
        self.list.push((name, step));
    }

    /// The `steps` member of the JSON report: name → step, in the order they ended.
    pub fn json(list: &[(&'static str, crate::Step)]) -> serde_json::Map<String, serde_json::Value> {
        list.iter().map(|(name, step)| ((*name).to_owned(), serde_json::to_value(step).unwrap_or(serde_json::Value::Null))).collect()
    }
}
