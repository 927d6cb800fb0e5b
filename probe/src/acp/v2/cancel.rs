//! The `cancellation` step under ACP v2: a second prompt, its answer paced in the relay, is
//! cancelled with `session/cancel` once that answer is in flight (as in v1,
//! [`super::super::cancel`]); v2 confirms the cancel with an idle `state_update` whose stop
//! reason is `cancelled`, within the same window, and no model call may start after it.

use std::time::Instant;

use serde_json::{json, Value};

use super::super::cancel::{PromptToCancel, SentCancel, WINDOW};
use super::super::flight::Flight;
use super::super::Run;
use crate::acp::report::Cancellation;
use crate::outcome::{Kind, Outcome, Reason};
use crate::session::{Fault, Incoming};
use crate::verdict::in_flight::AfterStop;
use checkfu_wire::decode::tables::UPDATE_METHOD;

/// How the wait for the idle after the cancel ended: the idle's stop reason (`None`: it
/// had none), or why none came.
type Settled = Result<Option<String>, Reason>;

impl Run<'_, '_, '_, '_> {
    /// The cancelled turn's outcome; `Err` when it could not be cancelled at all.
    pub(in crate::acp) fn cancel_turn_v2(&mut self, session_id: &str) -> Result<Outcome, Reason> {
        let PromptToCancel { turn, until, sent, id: prompt } = self.send_prompt_to_cancel(session_id)?;
        // The receipt first (read past: this turn is outside the checks' trace), then the
        // model's answer in flight.
        let receipt = loop {
            match self.session.next(until) {
                Ok(Incoming::Response { id, message, .. }) if id == prompt => break message,
                Ok(_) => {}
                Err(fault) => return Err(self.explain(&fault).within("the cancelled prompt's receipt")),
            }
        };
        if let Some(error) = receipt.get("error") {
            let words = format!("the prompt to cancel was answered with an error: {}", super::super::rpc_error(error));
            return Err(Reason::new(Kind::Answer, words));
        }
        let trigger = match self.wait_for_flight(prompt, turn, 0, false, until) {
            Flight::Act(trigger) => trigger,
            Flight::Answered(_) => return Err(Reason::new(Kind::Answer, "the prompt to cancel was answered twice")),
            Flight::Failed(reason) => return Err(reason.within("no model answer was in flight to cancel")),
        };
        let SentCancel { at: cancelled, at_ms: cancel_ms, requests_before } = self.send_cancel(session_id)?;
        let settled = self.idle_after_cancel((cancelled + WINDOW).min(until));
        let settle_ms = settled.is_ok().then(|| cancelled.elapsed().as_millis() as u64);
        if settled.is_ok() {
            self.let_streams_close(turn);
        }
        let after = AfterStop::of(&self.stage.plane.relay.calls(turn), cancel_ms);
        let permission = super::super::cancel::PERMISSION_METHOD;
        self.cancellation = Some(Cancellation {
            trigger,
            cancel_after_ms: cancelled.duration_since(sent).as_millis() as u64,
            settle_ms,
            stop_reason: settled.as_ref().ok().cloned().flatten(),
            calls_after_cancel: after.calls_after,
            streams_open: after.streams_open,
            permissions_cancelled: self.session.client_requests[requests_before..].iter().filter(|r| r.method == permission).count(),
        });
        Ok(judge(settled, &after))
    }

    /// The stop reason of the first idle `state_update` by `until`, reading past the rest
    /// (the session still answers the agent's own requests, permission requests `cancelled`).
    fn idle_after_cancel(&mut self, until: Instant) -> Settled {
        loop {
            match self.session.next(until) {
                Ok(Incoming::Notification { method, message, .. }) if method == UPDATE_METHOD => {
                    let update = message.pointer("/params/update").unwrap_or(&Value::Null);
                    let idle = update.get("sessionUpdate") == Some(&json!("state_update")) && update.get("state") == Some(&json!("idle"));
                    if idle {
                        return Ok(update.get("stopReason").and_then(Value::as_str).map(str::to_owned));
                    }
                }
                Ok(_) => {}
                Err(Fault::Timeout) => {
                    let words =
                        format!("no idle `state_update` with stop reason `cancelled` within {:.1} s of the cancel", WINDOW.as_secs_f64());
                    return Err(Reason::new(Kind::Harness, words));
                }
                Err(fault) => return Err(self.explain(&fault).within("waiting for the idle `state_update` with stop reason `cancelled`")),
            }
        }
    }
}

/// The step's verdict, the deciding fact first: a model call after the cancel, then the idle
/// (none, or another stop reason), then a stream the agent still read once idle.
fn judge(settled: Settled, after: &AfterStop) -> Outcome {
    let after_stop = || after.fault("cancel").map_or(Outcome::Passed, Outcome::Failed);
    if after.calls_after > 0 {
        return after_stop();
    }
    match settled {
        Ok(Some(stop)) if stop == "cancelled" => after_stop(),
        Ok(Some(other)) => Outcome::failed(Kind::Answer, format!("the cancelled turn ended idle with `{other}`, not `cancelled`")),
        Ok(None) => Outcome::failed(Kind::Answer, "the cancelled turn ended idle without a stop reason, not `cancelled`"),
        Err(reason) if after.streams_open > 0 => {
            Outcome::failed(Kind::MidTurn, format!("{reason}, and the model's answer was still in flight to the agent"))
        }
        Err(reason) => Outcome::Failed(reason),
    }
}
