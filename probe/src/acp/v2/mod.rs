//! The ACP lane's steps when `initialize` agreed on ACP v2 ([`super::negotiate`]).
//!
//! The process, the plane, the relay, the session (and its decoder, now reading v2's
//! grammar), the handshake and `session/new` are the v1 lane's own; what differs is the turn
//! ([`turn`]) and how its cancellation is confirmed ([`cancel`]):
//! - `prompt_exchange`: one prompt bearing the nonce, judged on v2's terms (the receipt's
//!   `messageId`, the user message echoed with it, `running` before the idle that ends the
//!   turn with its stop reason, messages keyed by `messageId`), then governed as in v1 (the
//!   nonce in a served call, the reply token in normalized output). The updates go to the
//!   normalizer's v2 input; its terminal is the idle's stop reason;
//! - `cancellation`: a second, paced prompt cancelled with `session/cancel` while the model's
//!   answer is in flight, confirmed by an idle `state_update` with stop reason `cancelled`.
//!
//! The steps that exercise declared mechanisms (delegation, scoping, staged files, structured
//! output, the platform tool) are v1's only for now: under v2 they are skipped, saying so.

mod cancel;
mod turn;

use std::time::Instant;

use serde_json::{json, Value};

use super::Run;
use crate::outcome::{Kind, Reason};
use crate::relay::Relay;
use crate::session::{Fault, Incoming};
use crate::verdict;
use checkfu_wire::admission::AdmittedCapabilities;
use checkfu_wire::catalog::StepName;
use checkfu_wire::decode::tables::{PROMPT_METHOD, UPDATE_METHOD};
use turn::Turn;

/// Why a step of v1's mechanisms did not run under v2.
const V1_ONLY: &str = "not probed under ACP v2 yet (the probe exercises this mechanism in v1 runs)";

impl Run<'_, '_, '_, '_> {
    /// The steps after `session/new` under v2.
    pub(super) fn v2_steps(&mut self, admitted: &AdmittedCapabilities, session_id: &str) {
        self.prompt_v2(admitted, session_id);
        for step in [
            StepName::SubagentDelegation,
            StepName::BuiltinToolScoping,
            StepName::StagedFiles,
            StepName::StructuredOutput,
            StepName::PlatformTool,
            StepName::PlatformToolHttp,
        ] {
            self.stage.steps.skipped(step, V1_ONLY);
        }
        self.cancellation(session_id);
    }

    /// `prompt_exchange` under v2.
    fn prompt_v2(&mut self, admitted: &AdmittedCapabilities, session_id: &str) {
        let started = Instant::now();
        let until = self.step_deadline();
        let text = self.prompt_text(admitted);
        let params = json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]});
        let outcome = self.run_turn_v2(params, until).and_then(|()| self.governed().map_err(|miss| miss.reason(&self.nonce)));
        let relay: &Relay = &self.stage.plane.relay;
        let outcome = outcome.map_err(|reason| verdict::with_refusals(reason, relay, 1));
        if outcome.is_err() && self.turn_open {
            // A runner that gives up on a turn cancels it, as ACP asks, before tearing down.
            let _ = self.session.notify(super::CANCEL_METHOD, json!({"sessionId": session_id}));
        }
        self.step(StepName::PromptExchange, started, outcome);
    }

    /// The turn: the prompt sent, read until the idle that ends it (and its receipt), then
    /// watched for `--settle`, then judged ([`Turn::verdict`]).
    fn run_turn_v2(&mut self, params: Value, until: Instant) -> Result<(), Reason> {
        let sent = Instant::now();
        let prompt = self.session.request(PROMPT_METHOD, params).map_err(|f| Reason::new(Kind::Harness, f).within(PROMPT_METHOD))?;
        self.prompt_id = Some(prompt);
        self.turn_open = true;
        let mut turn = Turn::default();
        while !turn.ended() {
            match self.session.next(until) {
                Ok(Incoming::Response { id, message, .. }) if id == prompt => {
                    if let Some(error) = message.get("error") {
                        let words = format!("session/prompt answered an error: {}", super::rpc_error(error));
                        return Err(Reason::new(Kind::Answer, words));
                    }
                    turn.receipt(&message);
                }
                Ok(incoming) => {
                    if let Incoming::Notification { method, message, .. } = &incoming {
                        if method == UPDATE_METHOD && turn.update(message) {
                            // The idle ends the turn: its observation follows the update's own.
                            self.dispatch(incoming);
                            self.normalizer.terminal(turn.stop_reason());
                            continue;
                        }
                    }
                    self.dispatch(incoming);
                }
                Err(fault) => return Err(self.v2_fault(&fault, &turn).within(PROMPT_METHOD)),
            }
            if self.normalizer.full() {
                return Err(self.over_budget());
            }
        }
        self.turn_open = false;
        self.receipt = turn.message_id().map(str::to_owned);
        // What the harness says of its own turn rides the idle's `_meta` in v2.
        self.turn_claim = turn.claim().map(|claim| (claim, sent.elapsed().as_millis() as u64));
        self.settle();
        turn.verdict()?;
        match self.late_fault.clone() {
            Some(fault) => Err(fault.within("after the turn")),
            None => Ok(()),
        }
    }

    /// A fault while the v2 turn was open, in the probe's words, and what v2 expected when
    /// the decoder refused the prompt's answer.
    fn v2_fault(&self, fault: &Fault, turn: &Turn) -> Reason {
        let reason = self.explain(fault);
        let Fault::Rejected { line, .. } = fault else {
            return match (fault, turn.stop_reason()) {
                (Fault::Timeout | Fault::Deadline, None) => {
                    Reason::new(reason.kind, format!("{reason}: no idle `state_update` ended the turn"))
                }
                _ => reason,
            };
        };
        // A prompt answered as in v1 (its result a stop reason) has no receipt and no idle.
        if line.contains("\"stopReason\"") && !line.contains("\"method\"") {
            let words = format!(
                "{reason}: the turn was answered in the prompt's result as ACP v1 does; v2 answers with a receipt and ends the turn with an idle `state_update`"
            );
            return Reason::new(Kind::Answer, words);
        }
        reason
    }
}
