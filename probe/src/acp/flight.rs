//! Waiting for a model call in flight: the moment the probe acts on a turn mid-answer, with
//! `session/cancel` ([`super::cancel`]), a steer or a cooperative interrupt ([`super::live`]).
//!
//! The relay paces the turn's text answers ([`crate::relay::pace`]), so a model call stays in
//! flight for seconds. The probe acts once one is in flight and either a chunk of the agent's
//! message (not an empty one) has reached the client since the call began (the model's first words got through:
//! [`MidTurn::FirstChunk`]), or the call has been held [`HELD`] with no chunk (a harness that
//! does not stream: [`MidTurn::CallInFlight`]). A chunk before any model call (an agent's own
//! "thinking…") does not count: there is nothing in flight yet to stop.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::Run;
use crate::relay::PaceEnd;
use crate::report::acp::MidTurn;
use crate::session::{Fault, Incoming};
use checkfu_wire::decode::tables::UPDATE_METHOD;

/// How long a paced call is held with no chunk before the probe acts anyway.
pub(super) const HELD: Duration = Duration::from_millis(500);

/// How often the relay's record is looked at while waiting.
const POLL: Duration = Duration::from_millis(50);

/// How the wait ended.
pub(super) enum Flight {
    /// A paced call is in flight: act now.
    InFlight(MidTurn),
    /// The prompt was answered first (its message).
    Answered(Value),
    /// The session failed, or the step's time ran out (in words).
    Failed(String),
}

impl Run<'_, '_, '_, '_> {
    /// Waits until a paced model call of `turn` that started at `not_before_ms` or later (the
    /// relay's clock) is in flight (see the module), the prompt `prompt` is answered, or
    /// `until`. With `observe`, what arrives meanwhile goes to the observations as usual;
    /// without, it is read past (a turn outside the checks' trace).
    pub(super) fn wait_for_flight(&mut self, prompt: i64, turn: usize, not_before_ms: u64, observe: bool, until: Instant) -> Flight {
        // The relay's clock when the latest chunk of the agent's message arrived.
        let mut chunk_ms: Option<u64> = None;
        loop {
            let relay = &self.stage.plane.relay;
            let now_ms = relay.now_ms();
            let in_flight = relay
                .calls(turn)
                .iter()
                .filter(|c| c.started_ms >= not_before_ms && c.paced.as_ref().is_some_and(|p| p.ended == PaceEnd::Open))
                .map(|c| c.started_ms)
                .min();
            if let Some(started) = in_flight {
                if chunk_ms.is_some_and(|at| at >= started) {
                    return Flight::InFlight(MidTurn::FirstChunk);
                }
                if now_ms.saturating_sub(started) >= HELD.as_millis() as u64 {
                    return Flight::InFlight(MidTurn::CallInFlight);
                }
            }
            let poll = (Instant::now() + POLL).min(until);
            match self.session.next(poll) {
                Ok(Incoming::Response { id, message, .. }) if id == prompt => return Flight::Answered(message),
                Ok(incoming) => {
                    if let Incoming::Notification { method, message, .. } = &incoming {
                        if method == UPDATE_METHOD && is_message_chunk(message) {
                            chunk_ms = Some(self.stage.plane.relay.now_ms());
                        }
                    }
                    if observe {
                        self.dispatch(incoming);
                    }
                }
                Err(Fault::Timeout) if Instant::now() < until => {}
                Err(fault) => return Flight::Failed(self.explain(&fault)),
            }
            if observe && self.normalizer.full() {
                return Flight::Failed(self.normalizer.over_budget("harness"));
            }
        }
    }
}

/// Whether a `session/update` carries a chunk of the agent's message with something in it
/// (Claude Code sends an empty text chunk as the model's content block opens, before any
/// word of it).
fn is_message_chunk(message: &Value) -> bool {
    let update = message.pointer("/params/update");
    let kind = update.and_then(|u| u.get("sessionUpdate")).and_then(Value::as_str);
    let content = update.and_then(|u| u.get("content"));
    let empty_text = content.and_then(|c| c.get("text")).and_then(Value::as_str).is_some_and(str::is_empty);
    kind == Some("agent_message_chunk") && content.is_some() && !empty_text
}
