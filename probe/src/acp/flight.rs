//! Waiting for a model call in flight: the moment the probe acts on a turn mid-answer, with
//! `session/cancel` ([`super::cancel`]), a steer or a cooperative interrupt ([`super::live`]).
//!
//! The relay paces the turn's text answers ([`crate::relay::pace`]), so a model call stays in
//! flight for seconds. The probe acts once one is in flight and either a chunk of the agent's
//! message whose text is words of that call's answer has reached the client since the call
//! began (the model's first words got through: [`MidTurn::FirstChunk`]), or the call has been
//! held [`HELD`] with no such chunk (a harness that does not stream:
//! [`MidTurn::CallInFlight`]). A chunk of the agent's own ("thinking…") or of an earlier
//! answer does not count.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::Run;
use crate::acp::report::MidTurn;
use crate::outcome::Reason;
use crate::relay::PaceEnd;
use crate::session::{Fault, Incoming};
use checkfu_wire::conformance::normalize;
use checkfu_wire::decode::tables::UPDATE_METHOD;

/// How long a paced call is held with no chunk before the probe acts anyway.
pub(super) const HELD: Duration = Duration::from_millis(500);

/// The most bytes of a chunk compared with the answer in flight (its start says enough).
const MAX_CHUNK: usize = 256;

/// How often the relay's record is looked at while waiting.
const POLL: Duration = Duration::from_millis(50);

/// How the wait ended.
pub(super) enum Flight {
    /// A paced call is in flight: act now.
    Act(MidTurn),
    /// The prompt was answered first (its message).
    Answered(Value),
    /// The session failed, or the step's time ran out.
    Failed(Reason),
}

impl Run<'_, '_, '_, '_> {
    /// Waits until a paced model call of `turn` that started at `not_before_ms` or later (the
    /// relay's clock) is in flight (see the module), the prompt `prompt` is answered, or
    /// `until`. With `observe` (the first turn), what arrives meanwhile goes to the
    /// observations as usual and the turn's end is the version's; without, it is read past (a
    /// turn outside the checks' trace) and the prompt's answer ends the wait.
    pub(super) fn wait_for_flight(&mut self, prompt: i64, turn: usize, not_before_ms: u64, observe: bool, until: Instant) -> Flight {
        // The latest chunk of the agent's message: the relay's clock when it arrived, its text.
        let mut chunk: Option<(u64, String)> = None;
        loop {
            let relay = &self.stage.plane.relay;
            let now_ms = relay.now_ms();
            let calls = relay.calls(turn);
            let in_flight = calls
                .iter()
                .filter(|c| c.started_ms >= not_before_ms)
                .filter_map(|c| Some((c.started_ms, c.paced.as_ref().filter(|p| p.ended == PaceEnd::Open)?)))
                .min_by_key(|(started, _)| *started);
            if let Some((started, paced)) = in_flight {
                // The chunk came after the call began and holds words of its answer: the
                // model's words got through (not the agent's own, nor an earlier answer's).
                if chunk.as_ref().is_some_and(|(at, text)| *at >= started && paced.text.contains(text.as_str())) {
                    return Flight::Act(MidTurn::FirstChunk);
                }
                if now_ms.saturating_sub(started) >= HELD.as_millis() as u64 {
                    return Flight::Act(MidTurn::CallInFlight);
                }
            }
            let poll = (Instant::now() + POLL).min(until);
            match self.session.next(poll) {
                Ok(Incoming::Response { id, message, .. }) if id == prompt && !observe => return Flight::Answered(message),
                Ok(incoming) => {
                    if let Incoming::Notification { method, message, .. } = &incoming {
                        if let Some(text) = chunk_text(message).filter(|_| method == UPDATE_METHOD) {
                            chunk = Some((self.stage.plane.relay.now_ms(), checkfu_wire::text::head(text, MAX_CHUNK).to_owned()));
                        }
                    }
                    // The first turn, observed: its end is the version's ([`Run::first_turn_message`]).
                    if let Some(answer) = observe.then(|| self.first_turn_message(prompt, incoming)).flatten() {
                        return Flight::Answered(answer);
                    }
                }
                Err(Fault::Timeout) if Instant::now() < until => {}
                Err(fault) if observe => return Flight::Failed(self.explain_turn(&fault)),
                Err(fault) => return Flight::Failed(self.explain(&fault)),
            }
            if observe && self.normalizer.full() {
                return Flight::Failed(self.over_budget());
            }
        }
    }
}

/// The words of a `session/update` that carries a chunk of the agent's message, as the
/// normalized output takes them, when there are any (Claude Code sends an empty text chunk as
/// the model's content block opens, before any word of it).
fn chunk_text(message: &Value) -> Option<&str> {
    message.pointer("/params/update").and_then(normalize::message_chunk_text).filter(|text| !text.trim().is_empty())
}
