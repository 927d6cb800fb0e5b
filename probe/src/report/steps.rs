//! A run's steps: each one's record, the bookkeeping both lanes share (every step told to
//! the caller as it ends), and the line the text format prints for one.

use serde::{Serialize, Serializer};

use crate::outcome::Outcome;
use crate::Progress;
use checkfu_wire::catalog::StepName;

/// A step's status as the report writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Passed,
    Failed,
    Skipped,
}

impl StepStatus {
    pub fn of(outcome: &Outcome) -> StepStatus {
        match outcome {
            Outcome::Passed => StepStatus::Passed,
            Outcome::Failed(_) => StepStatus::Failed,
            Outcome::Skipped(_) => StepStatus::Skipped,
        }
    }
}

/// One step: how it ended, and how long it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub outcome: Outcome,
    pub ms: u64,
}

impl Step {
    pub fn status(&self) -> StepStatus {
        StepStatus::of(&self.outcome)
    }
}

/// A step as the report has always written it: `status`, `ms`, then `reason` (`null` when it
/// passed; a skip's reason is why).
impl Serialize for Step {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut step = s.serialize_struct("Step", 3)?;
        step.serialize_field("status", &self.status())?;
        step.serialize_field("ms", &self.ms)?;
        step.serialize_field("reason", &self.outcome.why())?;
        step.end()
    }
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

    /// A step that ran for `ms` and ended as `outcome`.
    pub fn ended(&mut self, name: StepName, ms: u64, outcome: impl Into<Outcome>) {
        self.push(name, Step { outcome: outcome.into(), ms });
    }

    /// A step that did not run, and why.
    pub fn skipped(&mut self, name: StepName, why: &str) {
        self.ended(name, 0, Outcome::skipped(why));
    }

    /// Whether step `name` ended and passed.
    pub fn passed(&self, name: StepName) -> bool {
        self.list.iter().any(|(n, step)| *n == name && step.outcome.passed())
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
    let status = match step.status() {
        StepStatus::Passed => "passed",
        StepStatus::Failed => "FAILED",
        StepStatus::Skipped => "skipped",
    };
    let mut line = format!("step     {:<22} {status:<8} {:>6} ms", name.name(), step.ms);
    if let Some(reason) = step.outcome.why() {
        line.push_str("  ");
        line.push_str(reason);
    }
    line
}
