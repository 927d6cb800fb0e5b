//! A run's steps: each one's record, the bookkeeping both lanes share (every step told to
//! the caller as it ends), and the line the text format prints for one.

use serde::Serialize;

use crate::Progress;
use checkfu_wire::catalog::StepName;

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

/// The steps of a run in the order they ended, each told to the caller as it ends (the
/// lanes' bookkeeping, inside the crate).
pub(crate) struct Steps<'p> {
    pub list: Vec<(StepName, Step)>,
    progress: &'p mut dyn FnMut(Progress),
}

impl<'p> Steps<'p> {
    pub fn new(progress: &'p mut dyn FnMut(Progress)) -> Steps<'p> {
        Steps { list: Vec::new(), progress }
    }

    /// A step that ran for `ms` and passed, or failed with the reason.
    pub fn ended(&mut self, name: StepName, ms: u64, outcome: Result<(), String>) {
        let (status, reason) = match outcome {
            Ok(()) => (StepStatus::Passed, None),
            Err(reason) => (StepStatus::Failed, Some(reason)),
        };
        self.push(name, Step { status, ms, reason });
    }

    /// A step that did not run, and why.
    pub fn skipped(&mut self, name: StepName, reason: &str) {
        self.push(name, Step { status: StepStatus::Skipped, ms: 0, reason: Some(reason.to_owned()) });
    }

    /// What the caller hears of a run besides its steps (a note, the start).
    pub fn tell(&mut self, event: Progress) {
        (self.progress)(event);
    }

    fn push(&mut self, name: StepName, step: Step) {
        (self.progress)(Progress::Step { name, step: &step });
        self.list.push((name, step));
    }
}

/// One step as the text format prints it.
pub fn line(name: StepName, step: &Step) -> String {
    let status = match step.status {
        StepStatus::Passed => "passed",
        StepStatus::Failed => "FAILED",
        StepStatus::Skipped => "skipped",
    };
    let mut line = format!("step     {:<22} {status:<8} {:>6} ms", name.name(), step.ms);
    if let Some(reason) = &step.reason {
        line.push_str("  ");
        line.push_str(reason);
    }
    line
}
