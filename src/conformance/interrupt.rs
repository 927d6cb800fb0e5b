//! `cooperative_interrupt_drained`: tri-state and opt-in.
//!
//! Skipped unless the header opts in (the page keeps the case opt-in; the probe's drain also
//! judges the relay's record, so that a drain that truncates the model's answer fails:
//! `checkfu-wire-probe`'s `verdict::in_flight`), and skipped when the interrupt axis is not declared at the value of the
//! declaration upgrade whose evidence this check is (interrupt → cooperative): the case is
//! defined only for a declared cooperative interrupt.
//!
//! When it runs, the scripted drain is the first `interrupt_request` sent into the live turn
//! (before any terminal). The harness must answer it with `draining` and then settle its own
//! terminal observation; any stop reason is legal, `interrupted` included. The trace carries
//! no clock, so "inside the drain window" is read as "after the acceptance, before the trace
//! ends": the suite stops recording when the window closes. Faults: an acknowledgement with no
//! request before it; `refused` (refusal fails the case); a terminal while the request is
//! still unanswered (the turn ended without accepting the drain); a request never answered;
//! an accepted drain with no terminal after it. No request in the live turn: skip.

use super::header::{upgrade_evidenced_by, Header};
use super::ids::Interner;
use super::observation::{InterruptAck, Observation};
use super::report::{Faults, Outcome};
use super::Check;

/// The check's name, which is also the evidence name of its upgrade.
pub const COOPERATIVE_INTERRUPT_DRAINED: &str = crate::catalog::Check::CooperativeInterruptDrained.name();

enum Drain {
    /// No request sent into the live turn yet.
    Unexercised,
    /// Requested at this observation, not yet answered.
    Requested(usize),
    /// Accepted at this observation, terminal not yet seen.
    Accepted(usize),
    /// Accepted and settled, or already failed: nothing further to judge.
    Settled,
}

pub struct CooperativeInterruptDrained {
    skip: Option<String>,
    drain: Drain,
    terminal_seen: bool,
    /// A request arrived only after the turn ended: its answer is not a fault of the case.
    late_request: bool,
    faults: Faults,
}

impl CooperativeInterruptDrained {
    pub fn new(header: &Header) -> CooperativeInterruptDrained {
        let upgrade = upgrade_evidenced_by(COOPERATIVE_INTERRUPT_DRAINED);
        let skip = if !header.opts_in(COOPERATIVE_INTERRUPT_DRAINED) {
            Some(String::from("opt-in case: the trace does not opt in"))
        } else {
            match upgrade {
                Some(u) if header.declares_at_least(u.axis, u.to) => None,
                Some(u) => {
                    Some(format!("{} is not declared {:?}; the drain case applies only to a declared cooperative interrupt", u.axis, u.to))
                }
                None => Some(String::from("the catalog names no upgrade evidenced by this case")),
            }
        };
        CooperativeInterruptDrained {
            skip,
            drain: Drain::Unexercised,
            terminal_seen: false,
            late_request: false,
            faults: Faults::default(),
        }
    }
}

impl Check for CooperativeInterruptDrained {
    fn observe(&mut self, at: usize, observation: &Observation, _ids: &Interner) {
        if self.skip.is_some() {
            return;
        }
        match (observation, &self.drain) {
            (Observation::InterruptRequest, Drain::Unexercised) if !self.terminal_seen => self.drain = Drain::Requested(at),
            (Observation::InterruptRequest, Drain::Unexercised) => self.late_request = true,
            (Observation::InterruptAck { .. }, Drain::Unexercised) if !self.late_request => {
                self.faults.at(at, || String::from("an interrupt acknowledgement with no drain request before it"));
                self.drain = Drain::Settled;
            }
            (Observation::InterruptAck { disposition }, Drain::Requested(request)) => {
                let request = *request;
                match disposition {
                    InterruptAck::Draining => self.drain = Drain::Accepted(at),
                    InterruptAck::Refused => {
                        self.faults.at(at, || format!("the harness refused the scripted drain (requested at observation {request})"));
                        self.drain = Drain::Settled;
                    }
                }
            }
            (Observation::Terminal { .. }, Drain::Requested(request)) => {
                let request = *request;
                self.faults.at(at, || format!("the turn ended before the drain requested at observation {request} was accepted"));
                self.drain = Drain::Settled;
            }
            (Observation::Terminal { .. }, Drain::Accepted(_)) => self.drain = Drain::Settled,
            _ => {}
        }
        if matches!(observation, Observation::Terminal { .. }) {
            self.terminal_seen = true;
        }
    }

    fn finish(self: Box<Self>, _observations: usize, _ids: &Interner) -> Outcome {
        if let Some(reason) = self.skip {
            return Outcome::Skip { reason };
        }
        let mut faults = self.faults;
        match self.drain {
            Drain::Unexercised => {
                return Outcome::Skip { reason: String::from("unexercised: no drain request was sent into the live turn") }
            }
            Drain::Requested(request) => faults.at(request, || String::from("the drain request is never acknowledged")),
            Drain::Accepted(ack) => {
                faults.at(ack, || String::from("the harness accepted the drain but never settled a terminal observation"))
            }
            Drain::Settled => {}
        }
        faults.outcome()
    }
}
