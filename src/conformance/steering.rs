//! `steering_correlation` and `steering_delivered`: the two checks over the steer channel.
//!
//! Which kinds are "steering members" and which declaration admits them come from the
//! generated tables: the gated-emissions row listing `observation.steering`, and the
//! declaration upgrade whose evidence is `steering_delivered` (mid_run_input → native).
//!
//! **steering_correlation** — acknowledgements require the declared axis, and exactly one
//! acknowledgement exists per steered input event. A `steer_input` event id names one steered
//! input; sending the same id again is the same input retried (the steer request carries an
//! idempotency id), so it still takes exactly one acknowledgement. Faults: an acknowledgement
//! while the gate is closed; an acknowledgement of an event not sent before it; a second
//! acknowledgement of an event (it would double-fence the delivery record); with the gate
//! open, a sent event that is never acknowledged (placed at its `steer_input`). With the gate
//! closed, zero acknowledgements is the only legal count, so unacknowledged steers pass.
//!
//! **steering_delivered** — tri-state. With the axis declared native, every scripted steer
//! sent into the live turn (before the terminal) must be accepted into it: its first
//! acknowledgement is `delivered` or `queued` and arrives before the terminal. Faults: a
//! `refused` acknowledgement; an acknowledgement after the terminal; a steer never
//! acknowledged. No steer sent into the live turn is an unexercised channel: skip. With the
//! axis undeclared, any steering member fails (at the first one) and their absence passes.

use super::header::{gate, upgrade_evidenced_by, Header};
use super::ids::{IdMap, Interner};
use super::observation::{Kind, Observation, SteerAck};
use super::report::{Faults, Outcome};
use super::Check;

/// The name of the delivered check, which is also the evidence name of its upgrade.
pub const STEERING_DELIVERED: &str = crate::catalog::Check::SteeringDelivered.name();

/// The gate of the steering acknowledgement, described for messages.
fn gate_text() -> String {
    match gate(Kind::Steering.name()) {
        Some(gate) => format!("the declared {} {:?} axis", gate.axis, gate.value),
        None => String::from("a declaration"),
    }
}

pub struct SteeringCorrelation {
    gate_open: bool,
    /// Event → (index of its first steer_input, index of its first acknowledgement).
    events: IdMap<(usize, Option<usize>)>,
    faults: Faults,
}

impl SteeringCorrelation {
    pub fn new(header: &Header) -> SteeringCorrelation {
        SteeringCorrelation { gate_open: header.admits(Kind::Steering.name()), events: IdMap::default(), faults: Faults::default() }
    }
}

impl Check for SteeringCorrelation {
    fn observe(&mut self, at: usize, observation: &Observation, ids: &Interner) {
        match observation {
            Observation::SteerInput { event } => {
                self.events.get_or_insert_with(*event, || (at, None));
            }
            Observation::Steering { event, .. } => {
                let event_id = *event;
                let event = ids.name(event_id);
                if !self.gate_open {
                    self.faults.at(at, || format!("steering acknowledgement of {event:?} without {}", gate_text()));
                    return;
                }
                match self.events.get_mut(event_id) {
                    None => self.faults.at(at, || format!("acknowledges steer event {event:?}, which was not sent before it")),
                    Some((_, Some(first))) => {
                        let first = *first;
                        self.faults
                            .at(at, || format!("a second acknowledgement of steer event {event:?} (the first is observation {first})"))
                    }
                    Some((_, acked)) => *acked = Some(at),
                }
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, _observations: usize, ids: &Interner) -> Outcome {
        let mut faults = self.faults;
        if self.gate_open {
            for (event, (sent, acked)) in self.events.iter() {
                if acked.is_none() {
                    let event = ids.name(event);
                    faults.at(*sent, || format!("steer event {event:?} has no acknowledgement"));
                }
            }
        }
        faults.outcome()
    }
}

pub struct SteeringDelivered {
    declared: bool,
    /// Kinds the undeclared axis must leave absent.
    members: Vec<Kind>,
    axis_text: String,
    terminal_at: Option<usize>,
    /// Event → (index of its steer_input, whether its first acknowledgement was seen).
    exercised: IdMap<(usize, bool)>,
    faults: Faults,
}

impl SteeringDelivered {
    pub fn new(header: &Header) -> SteeringDelivered {
        let upgrade = upgrade_evidenced_by(STEERING_DELIVERED);
        let declared = upgrade.is_some_and(|u| header.declares_at_least(u.axis, u.to));
        let members =
            Kind::ALL.into_iter().filter(|k| matches!((gate(k.name()), upgrade), (Some(g), Some(u)) if g.axis == u.axis)).collect();
        let axis_text = match upgrade {
            Some(u) => format!("{} {:?}", u.axis, u.to),
            None => String::from("steering axis"),
        };
        SteeringDelivered { declared, members, axis_text, terminal_at: None, exercised: IdMap::default(), faults: Faults::default() }
    }
}

impl Check for SteeringDelivered {
    fn observe(&mut self, at: usize, observation: &Observation, ids: &Interner) {
        if !self.declared {
            if self.members.contains(&observation.kind()) {
                let axis = &self.axis_text;
                self.faults.at(at, || {
                    format!(
                        "{:?} emitted although {axis} is not declared; an undeclared axis leaves steering members absent",
                        observation.kind().name()
                    )
                });
            }
            return;
        }
        match observation {
            Observation::Terminal { .. } if self.terminal_at.is_none() => self.terminal_at = Some(at),
            Observation::SteerInput { event } if self.terminal_at.is_none() => {
                self.exercised.get_or_insert_with(*event, || (at, false));
            }
            Observation::Steering { event, disposition } => {
                let Some((_, seen)) = self.exercised.get_mut(*event) else {
                    return;
                };
                if std::mem::replace(seen, true) {
                    return;
                }
                let event = ids.name(*event);
                if *disposition == SteerAck::Refused {
                    self.faults.at(at, || format!("the harness refused the scripted steer {event:?}"));
                } else if let Some(terminal) = self.terminal_at {
                    self.faults
                        .at(at, || format!("steer {event:?} is acknowledged after the turn ended (terminal at observation {terminal})"));
                }
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, _observations: usize, ids: &Interner) -> Outcome {
        let mut faults = self.faults;
        if !self.declared {
            return faults.outcome();
        }
        if self.exercised.is_empty() {
            return Outcome::Skip { reason: String::from("unexercised: no scripted steer was sent into the live turn") };
        }
        for (event, (sent, seen)) in self.exercised.iter() {
            if !seen {
                let event = ids.name(event);
                faults.at(*sent, || format!("the scripted steer {event:?} is never acknowledged"));
            }
        }
        faults.outcome()
    }
}
