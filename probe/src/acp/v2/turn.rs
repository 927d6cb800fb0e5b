//! A prompt turn as ACP v2 shapes it, read message by message and judged at its end.
//!
//! v2's `session/prompt` answer is a receipt: the `messageId` of the user message the prompt
//! inserted, which the agent also echoes as a `user_message` (or `user_message_chunk`) update
//! with that id, before or after the receipt. The turn's work is reported as `session/update`
//! upserts, each message keyed by its `messageId`; a `state_update` says `running` when the
//! work starts and `idle`, with the stop reason, when it ends. The idle is the turn's terminal
//! (v1's was the prompt's answer).

use serde_json::Value;

use crate::outcome::{Kind, Reason};
use checkfu_wire::decode::Protocol;

/// The update kinds that are messages, and so keyed by `messageId`.
const MESSAGE_KINDS: [&str; 4] = ["user_message", "user_message_chunk", "agent_message", "agent_message_chunk"];
const USER_KINDS: [&str; 2] = ["user_message", "user_message_chunk"];
const STATE_UPDATE: &str = "state_update";
/// The prefix v2 reserves for implementation-specific values of its open enumerations.
const CUSTOM_PREFIX: char = '_';
/// The slot of the harness's account of its turn: in v2, on the idle `state_update`'s `_meta`.
const TURN_KEY: &str = "checkfu.turn";
/// The most user message ids kept: a turn echoes one; more is read, not kept.
const MAX_ECHOES: usize = 64;

/// What the turn showed so far.
#[derive(Debug, Default)]
pub(crate) struct Turn {
    /// The receipt's `messageId`, once the receipt came with one; `Some(None)`: it came
    /// without.
    receipt: Option<Option<String>>,
    /// The ids of the user messages echoed.
    echoed: Vec<String>,
    /// A `running` state was reported since the prompt.
    running: bool,
    /// The idle that ended the turn: whether `running` came before it, its stop reason.
    idle: Option<Idle>,
    /// The first message update without a `messageId` (its kind).
    keyless: Option<String>,
    /// The first update kind v2's schema does not name that lacks the `_` prefix v2 asks of
    /// custom values (the schema's open alternative reserves the rest for ACP's own future
    /// kinds, so the decoder lets it pass).
    unprefixed: Option<String>,
}

#[derive(Debug)]
struct Idle {
    after_running: bool,
    stop_reason: Option<String>,
    claim: Option<Value>,
}

impl Turn {
    /// The prompt's answer (a result: the caller handled an error answer).
    pub(crate) fn receipt(&mut self, message: &Value) {
        let id = message.pointer("/result/messageId").and_then(Value::as_str).map(str::to_owned);
        self.receipt.get_or_insert(id);
    }

    /// The receipt's `messageId`, when it came with one.
    pub(crate) fn message_id(&self) -> Option<&str> {
        self.receipt.as_ref().and_then(Option::as_deref)
    }

    /// A `session/update` of the turn's session; `true` once it ended the turn (an idle
    /// after the prompt).
    pub(crate) fn update(&mut self, message: &Value) -> bool {
        let Some(update) = message.pointer("/params/update") else { return false };
        let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or_default();
        let id = update.get("messageId").and_then(Value::as_str);
        let known = Protocol::AcpV2.grammar().session_update_kinds;
        if !known.contains(&kind) && !kind.starts_with(CUSTOM_PREFIX) {
            self.unprefixed.get_or_insert_with(|| checkfu_wire::text::head(kind, 100).to_owned());
        }
        if MESSAGE_KINDS.contains(&kind) && id.is_none() {
            self.keyless.get_or_insert_with(|| kind.to_owned());
        }
        if let (true, Some(id)) = (USER_KINDS.contains(&kind), id) {
            if self.echoed.len() < MAX_ECHOES && !self.echoed.iter().any(|e| e == id) {
                self.echoed.push(id.to_owned());
            }
        }
        if kind != STATE_UPDATE || self.idle.is_some() {
            return false;
        }
        match update.get("state").and_then(Value::as_str) {
            Some("running") => self.running = true,
            Some("idle") => {
                let stop_reason = update.get("stopReason").and_then(Value::as_str).map(str::to_owned);
                let claim = update.pointer("/_meta").and_then(|m| m.get(TURN_KEY)).cloned();
                self.idle = Some(Idle { after_running: self.running, stop_reason, claim });
                return true;
            }
            _ => {}
        }
        false
    }

    /// Whether the turn has ended: an idle came, and so did the receipt (which may come
    /// after the idle, as v2 lets it).
    pub(crate) fn ended(&self) -> bool {
        self.idle.is_some() && self.receipt.is_some()
    }

    /// The idle's stop reason, when an idle came with one.
    pub(crate) fn stop_reason(&self) -> Option<&str> {
        self.idle.as_ref().and_then(|i| i.stop_reason.as_deref())
    }

    /// The idle's `checkfu.turn`, when it carried one.
    pub(crate) fn claim(&mut self) -> Option<Value> {
        self.idle.as_mut().and_then(|i| i.claim.take())
    }

    /// The turn on v2's terms, the first thing it broke named.
    pub(crate) fn verdict(&self) -> Result<(), Reason> {
        let fail = |words: String| Err(Reason::new(Kind::Answer, words));
        let Some(receipt) = &self.receipt else { return fail(String::from("session/prompt was never answered with a receipt")) };
        let Some(message_id) = receipt else {
            return fail(String::from("the prompt's receipt has no `messageId` (ACP v2 answers a prompt with the inserted message's id)"));
        };
        let Some(idle) = &self.idle else {
            return fail(String::from("no idle `state_update` ended the turn (ACP v2 ends a turn with one, carrying its stop reason)"));
        };
        if !idle.after_running {
            return fail(String::from("an idle `state_update` ended the turn with no `running` state_update before it"));
        }
        if idle.stop_reason.is_none() {
            return fail(String::from("the idle `state_update` that ended the turn carries no stop reason"));
        }
        if !self.echoed.iter().any(|e| e == message_id) {
            return fail(format!(
                "the user message was never echoed: no `user_message` or `user_message_chunk` with the receipt's messageId `{message_id}`"
            ));
        }
        if let Some(kind) = &self.unprefixed {
            return fail(format!("a custom update kind `{kind}` without the `_` prefix ACP v2 asks of custom values"));
        }
        if let Some(kind) = &self.keyless {
            return fail(format!("a `{kind}` update without a `messageId` (ACP v2's messages are upserts keyed by it)"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn update(body: Value) -> Value {
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": body}})
    }

    fn honest() -> Turn {
        let mut turn = Turn::default();
        turn.update(&update(json!({"sessionUpdate": "state_update", "state": "running"})));
        turn.update(&update(json!({"sessionUpdate": "user_message", "messageId": "u1", "content": []})));
        turn.receipt(&json!({"result": {"messageId": "u1"}}));
        turn.update(&update(json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "hi"}})));
        turn
    }

    #[test]
    fn an_honest_turn_passes_once_idle() {
        let mut turn = honest();
        assert!(!turn.ended());
        assert!(turn.update(&update(json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn",
            "_meta": {"checkfu.turn": {"model_calls": 1}}}))));
        assert!(turn.ended());
        assert_eq!(turn.stop_reason(), Some("end_turn"));
        assert!(turn.verdict().is_ok(), "{:?}", turn.verdict());
        assert_eq!(turn.claim(), Some(json!({"model_calls": 1})));
    }

    #[test]
    fn each_break_is_named() {
        let idle = update(json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}));
        let words = |turn: &Turn| turn.verdict().err().map(|r| r.to_string()).unwrap_or_default();
        let mut no_id = Turn::default();
        no_id.update(&update(json!({"sessionUpdate": "state_update", "state": "running"})));
        no_id.receipt(&json!({"result": {}}));
        no_id.update(&idle);
        assert!(words(&no_id).contains("`messageId`"), "{}", words(&no_id));
        let mut no_running = Turn::default();
        no_running.update(&update(json!({"sessionUpdate": "user_message", "messageId": "u1"})));
        no_running.receipt(&json!({"result": {"messageId": "u1"}}));
        no_running.update(&idle);
        assert!(words(&no_running).contains("`running`"), "{}", words(&no_running));
        let mut unechoed = Turn::default();
        unechoed.update(&update(json!({"sessionUpdate": "state_update", "state": "running"})));
        unechoed.receipt(&json!({"result": {"messageId": "u9"}}));
        unechoed.update(&idle);
        assert!(words(&unechoed).contains("never echoed"), "{}", words(&unechoed));
        let mut open = honest();
        assert!(words(&open).contains("no idle `state_update`"), "{}", words(&open));
        open.update(&update(json!({"sessionUpdate": "agent_message", "content": []})));
        open.update(&idle);
        assert!(words(&open).contains("without a `messageId`"), "{}", words(&open));
        let mut custom = honest();
        custom.update(&update(json!({"sessionUpdate": "_scratchpad", "notes": "fine"})));
        custom.update(&idle);
        assert!(custom.verdict().is_ok(), "{}", words(&custom));
        let mut unprefixed = honest();
        unprefixed.update(&update(json!({"sessionUpdate": "scratchpad", "notes": "not fine"})));
        unprefixed.update(&idle);
        assert!(words(&unprefixed).contains("`scratchpad`"), "{}", words(&unprefixed));
    }
}
