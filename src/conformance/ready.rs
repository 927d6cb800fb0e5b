//! `ready_handshake`: exactly one ready observation precedes all harness output.
//!
//! "Harness output" is every observation the harness emits (every kind but the suite's own
//! `steer_input` and `interrupt_request`): the ready observation marks the end of the
//! initialize/session handshake, so nothing the harness says may come before it. Faults, in
//! trace order: a harness observation before the first ready; a second ready; a trace with no
//! ready at all (placed at nothing only when the trace has no harness observation to blame).

use super::ids::Interner;
use super::observation::{Kind, Observation};
use super::report::{Faults, Outcome};
use super::Check;

#[derive(Default)]
pub struct ReadyHandshake {
    ready_at: Option<usize>,
    faults: Faults,
}

impl Check for ReadyHandshake {
    fn observe(&mut self, at: usize, observation: &Observation, _ids: &Interner) {
        let kind = observation.kind();
        match (kind, self.ready_at) {
            (Kind::Ready, None) => self.ready_at = Some(at),
            (Kind::Ready, Some(first)) => self.faults.at(at, || format!("a second ready observation (the first is observation {first})")),
            (kind, None) if kind.is_harness() => {
                self.faults.at(at, || format!("harness observation {:?} precedes the ready observation", kind.name()))
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, _observations: usize, _ids: &Interner) -> Outcome {
        let mut faults = self.faults;
        if self.ready_at.is_none() && !faults.any() {
            faults.unplaced(|| String::from("the trace has no ready observation"));
        }
        faults.outcome()
    }
}
