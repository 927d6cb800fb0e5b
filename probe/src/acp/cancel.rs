//! The `cancellation` step: does the agent stop when the client cancels?
//!
//! ACP says a client cancels a prompt turn with the `session/cancel` notification, and that
//! the agent then stops its model requests and tool calls as soon as it can and answers the
//! prompt with the stop reason `cancelled`; the client answers every permission request
//! still pending `cancelled`. The step tests that on every ACP agent, after
//! `prompt_exchange`:
//! 1. a second prompt, in a turn of its own in the relay's record, answered as the `nonce`
//!    script does whatever the script (its faults and replies are the first turn's), the
//!    answer paced ([`PACE`]: about nine seconds of stream);
//! 2. `session/cancel` once that answer is in flight ([`super::flight`]); from then on the
//!    session answers permission requests `cancelled`;
//! 3. the prompt must be answered `cancelled` within [`WINDOW`], no model call may start
//!    after the cancel, and the paced answer must not still be streaming to the agent once
//!    it has answered (it closed the stream; [`crate::verdict::in_flight`]).
//!
//! The turn is outside the conformance checks' trace: they judge the first turn. The facts
//! (what the cancel waited for, how long the agent took to settle) go in the report.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::flight::Flight;
use super::{rpc_error, Run, CANCEL_METHOD, UPDATE_METHOD};
use crate::acp::report::Cancellation;
use crate::outcome::{Kind, Outcome, Reason};
use crate::relay::{Pace, PaceEnd};
use crate::session::{Breach, Fault, Incoming};
use crate::verdict::in_flight::AfterStop;
use checkfu_wire::catalog::StepName;
use checkfu_wire::decode::tables::{Method, PROMPT_METHOD};

/// The second prompt's answer: 40 words of lead before the nonce answer, streamed in 40
/// pieces one event every 200 ms (about 9 s), or held whole for 8 s. Far longer than the
/// window after the cancel (which goes out on the first words, or 0.5 s into a held call),
/// so an agent that ignores the cancel is still streaming when it is judged.
pub(super) const PACE: Pace = Pace { interval: Duration::from_millis(200), pieces: 40, lead: 40 };

/// How long the agent has, from the cancel, to answer the prompt.
pub(super) const WINDOW: Duration = Duration::from_secs(5);

/// After the answer, how long a paced stream has to be seen closed: the relay learns that
/// the client left at its next write (one pace interval), so a few intervals suffice.
const CLOSE_GRACE: Duration = Duration::from_millis(1000);

pub(super) const PERMISSION_METHOD: &str = Method::SessionRequestPermission.name();

impl Run<'_, '_, '_, '_> {
    /// Runs the step, or says why it is skipped.
    pub(super) fn cancellation(&mut self, session_id: &str) {
        let exchanged = self.stage.steps.passed(StepName::PromptExchange);
        let skip = if !self.options.cancellation {
            Some("--no-cancellation was given")
        } else if !exchanged {
            Some("prompt_exchange did not pass")
        } else {
            None
        };
        if let Some(reason) = skip {
            self.stage.steps.skipped(StepName::Cancellation, reason);
            return;
        }
        let started = Instant::now();
        // ACP v2 ends the cancelled turn with an idle, not the prompt's answer ([`super::v2`]).
        let outcome = if self.acp_version == super::negotiate::V2 { self.cancel_turn_v2(session_id) } else { self.cancel_turn(session_id) };
        let outcome = outcome.unwrap_or_else(Outcome::Failed);
        self.stage.plane.relay.pace(None);
        self.step(StepName::Cancellation, started, outcome);
    }

    /// The prompt to cancel, sent on `session_id` as a turn of its own in the relay (its
    /// answer paced, so that it is still in flight when the cancel goes out).
    pub(super) fn send_prompt_to_cancel(&mut self, session_id: &str) -> Result<PromptToCancel, Reason> {
        let (nonce, turn) = paced_turn(&self.stage.plane.relay);
        let text = format!("Checkfu local diagnostic, cancellation. Reply with the nonce {nonce} and end the turn.");
        let until = self.step_deadline();
        let sent = Instant::now();
        let params = json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]});
        let id = self.session.request(PROMPT_METHOD, params).map_err(|f| Reason::new(Kind::Harness, f).within(PROMPT_METHOD))?;
        Ok(PromptToCancel { turn, until, sent, id })
    }

    /// `session/cancel` for `session_id`, and the permission requests still open answered
    /// `cancelled`, as ACP asks of a client (both versions do this the same way).
    pub(super) fn send_cancel(&mut self, session_id: &str) -> Result<SentCancel, Reason> {
        // The moment of the cancel is taken before it is sent: an agent may start a call within
        // a millisecond of reading it, and a probe descheduled between the two under load
        // would otherwise count that call as before the cancel.
        let at = Instant::now();
        let at_ms = self.stage.plane.relay.now_ms();
        self.session
            .notify(CANCEL_METHOD, json!({"sessionId": session_id}))
            .map_err(|f| Reason::new(Kind::Harness, f).within(CANCEL_METHOD))?;
        self.session.cancel_permissions();
        Ok(SentCancel { at, at_ms, requests_before: self.session.client_requests.len() })
    }

    fn cancel_turn(&mut self, session_id: &str) -> Result<Outcome, Reason> {
        let PromptToCancel { turn, until, sent, id: prompt } = self.send_prompt_to_cancel(session_id)?;
        let trigger = match self.wait_for_flight(prompt, turn, 0, false, until) {
            Flight::Act(trigger) => trigger,
            Flight::Answered(message) => {
                let words = format!("the prompt was answered ({}) before a model answer was in flight to cancel", answer_words(&message));
                return Err(Reason::new(Kind::Answer, words));
            }
            Flight::Failed(reason) => return Err(reason.within("no model answer was in flight to cancel")),
        };
        let SentCancel { at: cancelled, at_ms: cancel_ms, requests_before } = self.send_cancel(session_id)?;
        let answer = self.answer_to(prompt, (cancelled + WINDOW).min(until));
        let settle_ms = answer.is_ok().then(|| cancelled.elapsed().as_millis() as u64);
        let answered_cancelled = answer.as_ref().ok().and_then(|m| m.pointer("/result/stopReason")) == Some(&json!("cancelled"));
        if answered_cancelled {
            self.watch_after_cancelled(until);
        }
        if answer.is_ok() {
            self.let_streams_close(turn);
        }
        let after = AfterStop::of(&self.stage.plane.relay.calls(turn), cancel_ms);
        let stop_reason = answer.as_ref().ok().and_then(|m| m.pointer("/result/stopReason")).and_then(Value::as_str).map(str::to_owned);
        let permissions_cancelled =
            self.session.client_requests[requests_before..].iter().filter(|r| r.method == PERMISSION_METHOD).count();
        self.cancellation = Some(Cancellation {
            trigger,
            cancel_after_ms: cancelled.duration_since(sent).as_millis() as u64,
            settle_ms,
            stop_reason: stop_reason.clone(),
            calls_after_cancel: after.calls_after,
            streams_open: after.streams_open,
            permissions_cancelled,
        });
        Ok(judge(answer, stop_reason.as_deref(), &after))
    }

    /// Reads the wire for `--settle` after the prompt was answered `cancelled` (never past
    /// `until`): the answer ends the turn, so any `session/update` now breaks ACP-CANCEL-002.
    /// A second answer or a stray response is the session's to name.
    fn watch_after_cancelled(&mut self, until: Instant) {
        let end = (Instant::now() + self.options.settle).min(until);
        loop {
            match self.session.next(end) {
                Ok(Incoming::Notification { method, message, .. }) if method == UPDATE_METHOD => {
                    let kind = message.pointer("/params/update/sessionUpdate").and_then(Value::as_str).unwrap_or("?");
                    let update = checkfu_wire::text::head(kind, 100).to_owned();
                    self.session.breach(Breach::UpdateAfterCancelled { update });
                }
                Ok(_) => {}
                // The time is up, the harness left, or it broke the wire: what follows
                // (teardown, the report) says which.
                Err(_) => return,
            }
        }
    }

    /// The answer to `prompt` by `until`, reading past everything else (the session still
    /// answers the agent's own requests, permission requests `cancelled`).
    fn answer_to(&mut self, prompt: i64, until: Instant) -> Result<Value, Reason> {
        loop {
            match self.session.next(until) {
                Ok(Incoming::Response { id, message, .. }) if id == prompt => return Ok(message),
                Ok(_) => {}
                Err(Fault::Timeout) => {
                    return Err(Reason::new(Kind::Harness, format!("no answer within {:.1} s of the cancel", WINDOW.as_secs_f64())))
                }
                Err(fault) => return Err(self.explain(&fault)),
            }
        }
    }

    /// Reads past what arrives until no paced answer of `turn` is streaming, or
    /// [`CLOSE_GRACE`] has passed.
    pub(super) fn let_streams_close(&mut self, turn: usize) {
        let until = Instant::now() + CLOSE_GRACE;
        let open =
            |run: &Self| run.stage.plane.relay.calls(turn).iter().any(|c| c.paced.as_ref().is_some_and(|p| p.ended == PaceEnd::Open));
        while open(self) && Instant::now() < until {
            if let Err(Fault::Timeout) | Ok(_) = self.session.next((Instant::now() + Duration::from_millis(50)).min(until)) {
                continue;
            }
            break;
        }
    }
}

/// A turn of its own in the relay, for a prompt to stop in flight: a fresh nonce, answered as
/// the `nonce` script does, the answer paced ([`PACE`]); the nonce and the turn's index.
pub(super) fn paced_turn(relay: &crate::relay::Relay) -> (String, usize) {
    let nonce = crate::options::fresh_nonce();
    relay.begin_turn(nonce.clone(), Vec::new());
    let turn = relay.turn();
    relay.answer_plainly();
    relay.pace(Some(PACE));
    (nonce, turn)
}

/// The step's verdict, the deciding fact first: a model call after the cancel (the agent
/// went on working), then the answer (none, an error, another stop reason), then a stream
/// the agent still read after answering.
fn judge(answer: Result<Value, Reason>, stop_reason: Option<&str>, after: &AfterStop) -> Outcome {
    let after_stop = || after.fault("cancel").map_or(Outcome::Passed, Outcome::Failed);
    if after.calls_after > 0 {
        return after_stop();
    }
    let message = match answer {
        Ok(message) => message,
        Err(reason) if after.streams_open > 0 => {
            let words =
                format!("the cancelled prompt was not answered ({reason}), and the model's answer was still in flight to the agent");
            return Outcome::failed(Kind::MidTurn, words);
        }
        Err(reason) => return Outcome::Failed(reason.within("the cancelled prompt was not answered")),
    };
    if let Some(error) = message.get("error") {
        return Outcome::failed(
            Kind::Answer,
            format!("the cancelled prompt was answered with an error, not `cancelled`: {}", rpc_error(error)),
        );
    }
    match stop_reason {
        Some("cancelled") => after_stop(),
        Some(other) => Outcome::failed(Kind::Answer, format!("the cancelled prompt was answered `{other}`, not `cancelled`")),
        None => Outcome::failed(Kind::Answer, "the cancelled prompt was answered without a stop reason"),
    }
}

/// A prompt's answer in a few words: its stop reason, or its error.
fn answer_words(message: &Value) -> String {
    match (message.pointer("/result/stopReason").and_then(Value::as_str), message.get("error")) {
        (Some(stop), _) => format!("`{stop}`"),
        (None, Some(error)) => format!("error {}", rpc_error(error)),
        (None, None) => String::from("without a stop reason"),
    }
}

/// A `session/cancel` as sent ([`Run::send_cancel`]).
pub(super) struct SentCancel {
    /// When it was sent, by the probe's clock and by the relay's (the record's times).
    pub at: Instant,
    pub at_ms: u64,
    /// How many client requests the harness had sent by then (the permission requests after
    /// it are those the cancel answered).
    pub requests_before: usize,
}

/// The prompt the `cancellation` step cancels, as sent ([`Run::send_prompt_to_cancel`]).
pub(super) struct PromptToCancel {
    /// Its turn's index in the relay's record.
    pub turn: usize,
    /// The step's deadline.
    pub until: Instant,
    pub sent: Instant,
    /// The request's id.
    pub id: i64,
}
