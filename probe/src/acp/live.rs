//! The scripted inputs of the first turn, sent while a model answer is in flight: the steer
//! (when `mid_run_input: native` was admitted) and the drain (with `--interrupt`, when
//! `interrupt: cooperative` was admitted).
//!
//! The relay paces the turn ([`TURN_PACE`]), and each input waits for a paced call in flight
//! ([`super::flight`]), so it meets a model round the relay is holding, not a turn with nothing
//! yet to steer or drain. The steer goes first. A steer acknowledged `delivered` goes into the
//! running turn, so the harness's next model request should carry it: when a drain is to
//! follow, it waits for that next request in flight, and drains it. Otherwise the drain goes
//! out at once, on the round in flight. Without a drain, pacing stops once the steer is out.
//! Whether the steer reached the model and the drain kept every byte is judged at the end,
//! from the relay's record ([`crate::verdict::steer`], [`crate::verdict::in_flight`]).
//!
//! Both ACP versions send the same methods here; only the turn's end differs, and one method
//! knows it ([`Run::first_turn_message`]): v1's prompt answer, or v2's receipt and idle
//! `state_update` ([`super::v2`]).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::flight::Flight;
use super::{negotiate, upgrade_admitted, Run, INTERRUPT_METHOD, OPT_IN_INTERRUPT, STEER_METHOD};
use crate::acp::report::Drain;
use crate::outcome::{Kind, Reason};
use crate::relay::token::{self, STEER_PREFIX};
use crate::relay::Pace;
use crate::session::{Fault, Incoming};
use checkfu_wire::admission::AdmittedCapabilities;
use checkfu_wire::catalog;
use checkfu_wire::conformance::observation::SteerAck;
use checkfu_wire::conformance::{self, Outcome};

/// How the first turn is paced when it carries a scripted input: 10 words of lead before the
/// nonce answer, in 10 pieces one event every 100 ms (about 1.5 s of stream), or held whole
/// for 1 s; a tool call's round is held as long.
pub(super) const TURN_PACE: Pace = Pace { interval: Duration::from_millis(100), pieces: 10, lead: 10 };

/// How long the drain waits for the steer's acknowledgement before it goes out anyway (an
/// unanswered steer fails its own check).
const ACK_WAIT: Duration = Duration::from_secs(2);

/// Which scripted inputs the turn carries.
#[derive(Clone, Copy, Debug)]
pub(super) struct Inputs {
    pub steer: bool,
    pub interrupt: bool,
}

impl Run<'_, '_, '_, '_> {
    /// Which scripted inputs the first turn carries, as the admitted set allows and the
    /// options ask; a turn that carries one is paced ([`TURN_PACE`]).
    pub(super) fn live_inputs(&mut self, admitted: &AdmittedCapabilities) -> Inputs {
        let inputs = Inputs {
            steer: upgrade_admitted(admitted, catalog::Check::SteeringDelivered.name()),
            interrupt: self.options.interrupt && upgrade_admitted(admitted, OPT_IN_INTERRUPT),
        };
        if inputs.steer || inputs.interrupt {
            // The scripted inputs go out while a model answer is in flight.
            self.stage.plane.relay.pace(Some(TURN_PACE));
        }
        inputs
    }

    /// One message of the open first turn, observed: the message that ended the turn when
    /// it did (v1: the prompt's answer; v2: its error answer, or `Value::Null` once the
    /// receipt and the idle came), else `None`. The one place that picks the version.
    pub(super) fn first_turn_message(&mut self, prompt: i64, incoming: Incoming) -> Option<Value> {
        if self.acp_version == negotiate::V2 {
            return self.first_turn_message_v2(prompt, incoming);
        }
        match incoming {
            Incoming::Response { id, message, .. } if id == prompt => Some(message),
            other => {
                self.dispatch(other);
                None
            }
        }
    }

    /// Reads the open first turn until it ends ([`Run::first_turn_message`]) or `until`.
    fn wait_turn_end(&mut self, prompt: i64, until: Instant) -> Result<Value, Reason> {
        loop {
            match self.session.next(until) {
                Ok(incoming) => {
                    if let Some(answer) = self.first_turn_message(prompt, incoming) {
                        return Ok(answer);
                    }
                }
                Err(fault) => return Err(self.explain_turn(&fault)),
            }
            if self.normalizer.full() {
                return Err(self.over_budget());
            }
        }
    }

    /// The first turn from its prompt (sent at `sent`) to its end, the scripted inputs
    /// sent as the module says.
    pub(super) fn live_turn(
        &mut self,
        prompt: i64,
        session_id: &str,
        sent: Instant,
        inputs: Inputs,
        until: Instant,
    ) -> Result<Value, Reason> {
        let mut not_before_ms = 0;
        if inputs.steer {
            match self.wait_for_flight(prompt, 1, 0, true, until) {
                Flight::Act(_) => {}
                Flight::Answered(message) => return Ok(message),
                Flight::Failed(reason) => return Err(reason),
            }
            self.send_steer(session_id)?;
            if !inputs.interrupt {
                self.stage.plane.relay.pace(None);
                return self.wait_turn_end(prompt, until);
            }
            match self.wait_for_steer_ack(prompt, (Instant::now() + ACK_WAIT).min(until))? {
                SteerWait::Answered(message) => return Ok(message),
                SteerWait::Acknowledged { delivered: true, at_ms } => not_before_ms = at_ms,
                SteerWait::Acknowledged { .. } | SteerWait::Unanswered => {}
            }
        }
        if inputs.interrupt {
            let trigger = match self.wait_for_flight(prompt, 1, not_before_ms, true, until) {
                Flight::Act(trigger) => trigger,
                Flight::Answered(message) => return Ok(message),
                Flight::Failed(reason) => return Err(reason),
            };
            let id = self
                .session
                .request(INTERRUPT_METHOD, json!({"sessionId": session_id}))
                .map_err(|f| Reason::new(Kind::Harness, f).within(INTERRUPT_METHOD))?;
            self.normalizer.interrupt_request();
            self.interrupt_id = Some(id);
            let sent_ms = self.stage.plane.relay.now_ms();
            self.drain = Some(Drain { trigger, interrupt_after_ms: sent.elapsed().as_millis() as u64, sent_ms, ack_ms: None });
        }
        self.wait_turn_end(prompt, until)
    }

    /// Sends the steer, its content carrying a token the relay then looks for in every
    /// request.
    fn send_steer(&mut self, session_id: &str) -> Result<(), Reason> {
        let mark = token::mint(STEER_PREFIX);
        let event = format!("probe-steer-{}", self.nonce);
        let content = format!("Keep the reply to the nonce only (steer {mark}).");
        let relay = &self.stage.plane.relay;
        relay.watch_steer(mark);
        self.steer_sent_ms = Some(relay.now_ms());
        let params = json!({"sessionId": session_id, "id": event, "content": content});
        let id = self.session.request(STEER_METHOD, params).map_err(|f| Reason::new(Kind::Harness, f).within(STEER_METHOD))?;
        self.normalizer.steer_input(&event);
        self.steer = Some((id, event));
        Ok(())
    }

    /// Reads the turn until the steer is acknowledged, the prompt answered, or `until`.
    fn wait_for_steer_ack(&mut self, prompt: i64, until: Instant) -> Result<SteerWait, Reason> {
        loop {
            if let Some((ack, at_ms)) = self.steer_ack {
                return Ok(SteerWait::Acknowledged { delivered: ack == SteerAck::Delivered, at_ms });
            }
            match self.session.next(until) {
                Ok(incoming) => {
                    if let Some(answer) = self.first_turn_message(prompt, incoming) {
                        return Ok(SteerWait::Answered(answer));
                    }
                }
                Err(Fault::Timeout) => return Ok(SteerWait::Unanswered),
                Err(fault) => return Err(self.explain_turn(&fault)),
            }
            if self.normalizer.full() {
                return Err(self.over_budget());
            }
        }
    }
}

impl Run<'_, '_, '_, '_> {
    /// The drain's case passes on the trace (`draining`, then a terminal) only if the relay's
    /// record agrees that nothing was cut off ([`crate::verdict::in_flight::drained`]).
    pub(super) fn judge_drain(&self, report: &mut conformance::Report) {
        let Some((sent_ms, ack_ms)) = self.drain.as_ref().and_then(|d| Some((d.sent_ms, d.ack_ms?))) else { return };
        let calls = self.stage.plane.relay.calls(1);
        let output = self.normalizer.output_text();
        let Err(reason) = crate::verdict::in_flight::drained(&calls, sent_ms, ack_ms, &|text| output.contains(text)) else { return };
        overrule_pass(report, OPT_IN_INTERRUPT, Outcome::Fail { reason: reason.to_string(), at: None });
    }

    /// The steer's case passes on the trace (acknowledged in the live turn) only if the
    /// relay's record shows its content reaching the model as the acknowledgement promised
    /// ([`crate::verdict::steer`]).
    pub(super) fn judge_steer(&self, report: &mut conformance::Report) {
        let (Some(sent_ms), Some((ack, _))) = (self.steer_sent_ms, self.steer_ack) else { return };
        let relay = &self.stage.plane.relay;
        let calls: Vec<_> = (1..=relay.turn()).flat_map(|turn| relay.calls(turn)).collect();
        let reach = crate::verdict::steer::reached(&calls, 1, sent_ms, ack, relay.turn() > 1);
        if !reach.passed() {
            overrule_pass(report, catalog::Check::SteeringDelivered.name(), reach.to_check());
        }
    }
}

/// A check the trace passed, given the outcome the relay's record decides instead.
fn overrule_pass(report: &mut conformance::Report, check: &str, record_says: Outcome) {
    if let Some((_, outcome)) = report.checks.iter_mut().find(|(name, outcome)| *name == check && *outcome == Outcome::Pass) {
        *outcome = record_says;
    }
}

/// How waiting for the steer's acknowledgement ended.
enum SteerWait {
    Acknowledged { delivered: bool, at_ms: u64 },
    Unanswered,
    Answered(Value),
}
