//! `terminal_observation`: exactly one successful terminal observation ends the turn.
//!
//! Faults, in trace order: a terminal whose outcome is `failure`; a terminal that stops as
//! `interrupted` without a drain the harness accepted earlier (a drained turn may legally stop
//! as interrupted; an undrained one may not claim to have been); a second terminal; a harness
//! observation after the terminal (the terminal *ends* the turn). Two kinds of observation
//! after the terminal are not turn content and are left to other checks: the suite's own
//! scripted actions, and the harness's acknowledgements of them (`steering`,
//! `interrupt_ack`), which answer a request whenever it arrives and whose timing the steering
//! and drain checks judge. Last, no terminal at all, placed at the last observation, where
//! the turn stopped without one.

use super::ids::Interner;
use super::observation::{InterruptAck, Kind, Observation, TurnOutcome};
use super::report::{Faults, Outcome};
use super::Check;

/// The stop reason a drained turn may report (CONTRACT.md section 5).
const DRAINED_STOP_REASON: &str = "interrupted";

#[derive(Default)]
pub struct TerminalObservation {
    terminal_at: Option<usize>,
    drain_accepted: bool,
    faults: Faults,
}

impl Check for TerminalObservation {
    fn observe(&mut self, at: usize, observation: &Observation, _ids: &Interner) {
        if let Some(first) = self.terminal_at {
            if observation.kind() == Kind::Terminal {
                self.faults.at(at, || format!("a second terminal observation (the first is observation {first})"));
            } else if observation.kind().is_harness() && !observation.kind().is_acknowledgement() {
                self.faults
                    .at(at, || format!("harness observation {:?} after the terminal observation {first}", observation.kind().name()));
            }
            return;
        }
        match observation {
            Observation::InterruptAck { disposition: InterruptAck::Draining } => self.drain_accepted = true,
            Observation::Terminal { outcome, stop_reason } => {
                self.terminal_at = Some(at);
                if *outcome == TurnOutcome::Failure {
                    self.faults.at(at, || format!("the terminal observation is a failure (stop reason {stop_reason:?})"));
                } else if stop_reason == DRAINED_STOP_REASON && !self.drain_accepted {
                    self.faults.at(at, || format!("the turn stops as {DRAINED_STOP_REASON:?} without an accepted drain request"));
                }
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, observations: usize, _ids: &Interner) -> Outcome {
        let mut faults = self.faults;
        if self.terminal_at.is_none() {
            match observations.checked_sub(1) {
                Some(last) => faults.at(last, || String::from("the turn ends without a terminal observation")),
                None => faults.unplaced(|| String::from("the trace has no terminal observation")),
            }
        }
        faults.outcome()
    }
}
