//! The ACP lane's turns when `initialize` agreed on ACP v2 ([`super::negotiate`]).
//!
//! The process, the plane, the relay, the session (and its decoder, now reading v2's
//! grammar), the handshake, `session/new` (its `mcpServers` too: v2's `NewSessionRequest`
//! keeps them, each naming its `type`) and the steps are the v1 lane's own; what differs is
//! how a turn ends ([`turn`]) and how its cancellation is confirmed ([`cancel`]):
//! - the first turn (`prompt_exchange`): one prompt bearing the nonce, with the scripted steer
//!   and drain sent mid-turn as in v1 ([`super::live`]), judged on v2's terms (the receipt's
//!   `messageId`, the user message echoed with it, `running` before the idle that ends the
//!   turn with its stop reason, messages keyed by `messageId`), then governed as in v1 (the
//!   nonce in a served call, the reply token in normalized output). The updates go to the
//!   normalizer's v2 input; its terminal is the idle's stop reason;
//! - the turns that exercise a declared mechanism or the platform tools wait for the receipt
//!   and the idle ([`await_turn`]) instead of the prompt's answer; their `checkfu.*`
//!   members ride each update's `_meta`, where v1's do;
//! - `cancellation`: a second, paced prompt cancelled with `session/cancel` while the model's
//!   answer is in flight, confirmed by an idle `state_update` with stop reason `cancelled`.

mod cancel;
mod turn;

use std::time::Instant;

use serde_json::Value;

use super::exercised::TurnEnd;
use super::Run;
use crate::outcome::{Kind, Reason};
use crate::session::{Fault, Incoming, Session};
use checkfu_wire::admission::AdmittedCapabilities;
use checkfu_wire::decode::tables::{PROMPT_METHOD, UPDATE_METHOD};
pub(super) use turn::Turn;

impl Run<'_, '_, '_, '_> {
    /// The first turn under v2: the prompt sent, the scripted inputs sent mid-turn as in v1
    /// ([`Run::live_turn`]), read until the idle that ends it (and its receipt), then watched
    /// for `--settle`, then judged ([`Turn::verdict`]).
    pub(super) fn run_turn_v2(
        &mut self,
        admitted: &AdmittedCapabilities,
        session_id: &str,
        params: Value,
        until: Instant,
    ) -> Result<(), Reason> {
        let sent = Instant::now();
        let inputs = self.live_inputs(admitted);
        let prompt = self.session.request(PROMPT_METHOD, params).map_err(|f| Reason::new(Kind::Harness, f).within(PROMPT_METHOD))?;
        self.prompt_id = Some(prompt);
        self.turn_open = true;
        self.turn_v2 = Some(Turn::default());
        let answer = self.live_turn(prompt, session_id, sent, inputs, until);
        self.stage.plane.relay.pace(None);
        let mut turn = self.turn_v2.take().unwrap_or_default();
        let answer = answer.map_err(|reason| reason.within(PROMPT_METHOD))?;
        if let Some(error) = answer.get("error") {
            return Err(Reason::new(Kind::Answer, format!("session/prompt answered an error: {}", super::rpc_error(error))));
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

    /// One message of the open first turn under v2, observed as every other: the prompt's
    /// error answer, or `Value::Null` once the receipt and the idle have both come (the turn
    /// it ended is in `turn_v2`); `None` while the turn is open.
    pub(super) fn first_turn_message_v2(&mut self, prompt: i64, incoming: Incoming) -> Option<Value> {
        let mut turn = self.turn_v2.take().unwrap_or_default();
        let mut ended = None;
        match &incoming {
            Incoming::Response { id, message, .. } if *id == prompt => match message.get("error") {
                Some(_) => ended = Some(message.clone()),
                None => turn.receipt(message),
            },
            Incoming::Notification { method, message, .. } if method == UPDATE_METHOD && turn.update(message) => {
                // The idle ends the turn: its observation follows the update's own.
                self.dispatch(incoming);
                self.normalizer.terminal(turn.stop_reason());
                return self.keep_turn(turn, None);
            }
            _ => {}
        }
        self.dispatch(incoming);
        self.keep_turn(turn, ended)
    }

    /// Puts the first turn back, and says whether it ended (`ended`, else once it has).
    fn keep_turn(&mut self, turn: Turn, ended: Option<Value>) -> Option<Value> {
        let over = turn.ended();
        self.turn_v2 = Some(turn);
        ended.or(over.then_some(Value::Null))
    }

    /// A fault while the first turn was open, in the probe's words: v2's when a v2 turn is
    /// open ([`Run::v2_fault`]), else v1's.
    pub(super) fn explain_turn(&self, fault: &Fault) -> Reason {
        match &self.turn_v2 {
            Some(turn) => self.v2_fault(fault, turn),
            None => self.explain(fault),
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

/// [`super::exercised::await_turn`] under v2: the receipt and the idle, read past everything
/// else, each update shown to `seen`, the turn judged on v2's terms at its end.
pub(super) fn await_turn(session: &mut Session, id: i64, until: Instant, seen: &mut dyn FnMut(&Value)) -> Result<(), TurnEnd> {
    let mut turn = Turn::default();
    while !turn.ended() {
        match session.next(until).map_err(TurnEnd::Fault)? {
            Incoming::Response { id: got, message, .. } if got == id => match message.get("error") {
                Some(error) => {
                    let words = format!("session/prompt answered an error: {}", super::rpc_error(error));
                    return Err(TurnEnd::Judged(Reason::new(Kind::Answer, words)));
                }
                None => turn.receipt(&message),
            },
            Incoming::Notification { method, message, .. } if method == UPDATE_METHOD => {
                seen(&message);
                turn.update(&message);
            }
            _ => {}
        }
    }
    turn.verdict().map_err(TurnEnd::Judged)
}
