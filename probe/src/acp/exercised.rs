//! What the steps that exercise a declared mechanism share: whether the harness declared it,
//! and a prompt in a turn of its own (the relay's record keeps it apart from the turns the
//! conformance checks judge), answered as the `nonce` script answers whatever the script, and
//! waited for as the ACP version the run speaks ends a turn ([`await_turn`]).

use std::time::Instant;

use serde_json::{json, Value};

use super::{negotiate, rpc_error, Run};
use crate::outcome::{Kind, Outcome, Reason};
use crate::report::Steps;
use crate::session::{Fault, Incoming, Session};
use checkfu_wire::admission::AdmittedCapabilities;
use checkfu_wire::catalog::{self, StepName};
use checkfu_wire::decode::tables::{PROMPT_METHOD, UPDATE_METHOD};

/// The declaration `step` proves, as the catalog's mechanisms say (`proof = { step, … }`): the
/// member and its one value. The catalog is the one source; a step no single-valued mechanism
/// names gets its own name and no value, which no declaration holds.
pub(super) fn declaration(step: StepName) -> (&'static str, &'static str) {
    let proved = catalog::MECHANISMS.iter().find(|m| m.proof == Some(step.name()));
    match proved.map(|m| (m.member, m.values)) {
        Some((member, [value])) => (member, value),
        _ => (step.name(), ""),
    }
}

/// The failure of `step` for `miss`: the value it proves is declared and not served.
pub(super) fn not_served(step: StepName, miss: impl std::fmt::Display) -> Outcome {
    let (member, value) = declaration(step);
    Outcome::failed(Kind::NotServed, format!("declared `{member}: {value}` is not served: {miss}"))
}

/// Whether the admitted declaration holds `member: value`.
pub(super) fn declared(admitted: &AdmittedCapabilities, member: &str, value: &str) -> bool {
    admitted.mechanism(member) == Some(value)
}

impl Run<'_, '_, '_, '_> {
    /// Why a step that exercises a declared mechanism is skipped, if it is ([`skip_reason`]).
    pub(super) fn exercise_skip(&self, admitted: &AdmittedCapabilities, step: StepName) -> Option<String> {
        skip_reason(&self.stage.steps, admitted, step)
    }

    /// Sends `prompt` (ACP content blocks) in a relay turn the caller has begun, and waits for
    /// the turn's end by the step's deadline ([`await_turn`]), reading past everything
    /// else (the session answers the agent's own requests meanwhile). The turn's updates stay
    /// out of the trace: the conformance checks judge the first turn.
    pub(super) fn exercise_turn(&mut self, session_id: &str, prompt: Value) -> Result<(), Reason> {
        self.exercise_turn_seen(session_id, prompt, &mut |_| {})
    }

    /// [`Run::exercise_turn`], each `session/update` of the turn shown to `seen` as it comes.
    pub(super) fn exercise_turn_seen(&mut self, session_id: &str, prompt: Value, seen: &mut dyn FnMut(&Value)) -> Result<(), Reason> {
        let until = self.step_deadline();
        let params = json!({"sessionId": session_id, "prompt": prompt});
        let id = self.session.request(PROMPT_METHOD, params).map_err(|f| Reason::new(Kind::Harness, f).within(PROMPT_METHOD))?;
        let ended = await_turn(&mut self.session, self.acp_version, id, until, seen);
        if let Err(TurnEnd::Fault(_)) = &ended {
            // A runner that gives up on a turn cancels it, as ACP asks.
            let _ = self.session.notify(super::CANCEL_METHOD, json!({"sessionId": session_id}));
        }
        ended.map_err(|end| match end {
            TurnEnd::Fault(fault) => self.explain(&fault).within(PROMPT_METHOD),
            TurnEnd::Judged(reason) => reason,
        })
    }
}

/// Waits on `session` for the end of the turn prompt `id` opened, by `until`: the one place
/// that knows how each ACP `version` ends a turn. In v1 the prompt's answer ends it, with a
/// stop reason; in v2 the answer is a receipt and an idle `state_update` ends the turn, judged
/// on v2's terms ([`super::v2::await_turn`]). Each `session/update` is shown to `seen`.
pub(super) fn await_turn(
    session: &mut Session,
    version: u64,
    id: i64,
    until: Instant,
    seen: &mut dyn FnMut(&Value),
) -> Result<(), TurnEnd> {
    if version == negotiate::V2 {
        return super::v2::await_turn(session, id, until, seen);
    }
    loop {
        match session.next(until).map_err(TurnEnd::Fault)? {
            Incoming::Response { id: got, message, .. } if got == id => return turn_answered(&message).map_err(TurnEnd::Judged),
            Incoming::Notification { method, message, .. } if method == UPDATE_METHOD => seen(&message),
            _ => {}
        }
    }
}

/// Why a turn the probe waited for did not end well: the session failed (or the time ran
/// out), or the turn ended in a way that fails the step.
#[derive(Debug)]
pub(super) enum TurnEnd {
    Fault(Fault),
    Judged(Reason),
}

/// Why a step that exercises a declared mechanism is skipped, if it is: undeclared, or after
/// a prompt exchange that did not pass (the harness then reaches no model).
pub(super) fn skip_reason(steps: &Steps<'_>, admitted: &AdmittedCapabilities, step: StepName) -> Option<String> {
    let (member, value) = declaration(step);
    if !declared(admitted, member, value) {
        return Some(format!("`{member}` is not declared"));
    }
    if !steps.passed(StepName::PromptExchange) {
        return Some(format!("prompt_exchange did not pass, so {} would judge nothing", step.name()));
    }
    None
}

/// The answer to request `id`, read past everything else by `until` (the session answers
/// the agent's own requests meanwhile).
pub(super) fn answer_to(session: &mut Session, id: i64, until: Instant) -> Result<Value, Fault> {
    loop {
        if let Incoming::Response { id: got, message, .. } = session.next(until)? {
            if got == id {
                return Ok(message);
            }
        }
    }
}

/// A prompt's answer as a turn's end: no error, and a stop reason.
pub(super) fn turn_answered(message: &Value) -> Result<(), Reason> {
    stop_reason(message).map(|_| ())
}

/// A prompt's stop reason, or why its answer ends no turn (an error, no reason).
pub(super) fn stop_reason(message: &Value) -> Result<&str, Reason> {
    if let Some(error) = message.get("error") {
        return Err(Reason::new(Kind::Answer, format!("session/prompt answered an error: {}", rpc_error(error))));
    }
    let stop = message.pointer("/result/stopReason").and_then(Value::as_str);
    stop.ok_or_else(|| Reason::new(Kind::Answer, "session/prompt answered without a stop reason"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mechanism_step_finds_its_declaration_in_the_catalog() {
        assert_eq!(declaration(StepName::BuiltinToolScoping), ("builtin_tool_scoping", "enforced"));
        assert_eq!(declaration(StepName::StagedFiles), ("staged_files", "resource_links"));
        assert_eq!(declaration(StepName::NativeCheckpoint), ("native_checkpoint", "external_custody"));
        // Two values: no one declaration to name.
        assert_eq!(declaration(StepName::StructuredOutput), ("structured_output", ""));
    }
}
