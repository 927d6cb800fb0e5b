//! The `structured_output` step: a declared `structured_output` exercised. `session/new`
//! carried `checkfu.output_schema` (the author's, else [`crate::plane::probe_output_schema`]);
//! after the prompt exchange, one more prompt in a turn of its own, whose first request for
//! the schema the relay answers with a value that breaks it ([`crate::relay::Relay::break_first`]).
//! The turn's output and the relay's record of it are then judged by
//! [`verdict::structured`]. A turn of its own, so the prompt exchange and the subagents are
//! judged on a turn the relay answered truly.

use std::time::Instant;

use serde_json::{json, Value};

use super::Run;
use crate::outcome::{Kind, Outcome, Reason};
use crate::verdict;
use crate::verdict::structured::{Mechanism, Turn, MAX_OUTPUT};
use checkfu_wire::admission::AdmittedCapabilities;
use checkfu_wire::catalog::StepName;

/// The declaration member the step exercises.
const MEMBER: &str = "structured_output";

/// The declared mechanism, when the admitted set holds one.
pub(super) fn declared(admitted: &AdmittedCapabilities) -> Option<Mechanism> {
    admitted.mechanism(MEMBER).and_then(Mechanism::of)
}

impl Run<'_, '_, '_, '_> {
    /// Reports `structured_output`, after the prompt exchange.
    pub(super) fn structured_output(&mut self, admitted: &AdmittedCapabilities, session_id: &str) {
        let Some(mechanism) = declared(admitted) else {
            self.stage.steps.skipped(StepName::StructuredOutput, "`structured_output` is not declared");
            return;
        };
        if !self.stage.steps.passed(StepName::PromptExchange) {
            self.stage.steps.skipped(StepName::StructuredOutput, "the prompt exchange did not pass");
            return;
        }
        let Some(schema) = self.output_schema.clone() else {
            // Set with the declaration in `run`; a session without it never reaches here.
            self.stage.steps.skipped(StepName::StructuredOutput, "no output schema was sent");
            return;
        };
        let validator = match jsonschema::validator_for(&schema) {
            Ok(validator) => validator,
            Err(e) => {
                let reason = format!("the output schema cannot be compiled: {e}");
                self.stage.steps.skipped(StepName::StructuredOutput, &reason);
                return;
            }
        };
        let Some(broken) = verdict::structured::broken_value(&schema, &validator) else {
            self.stage.steps.skipped(StepName::StructuredOutput, "the output schema admits every value, so no answer can break it");
            return;
        };
        let started = Instant::now();
        let earlier = self.stage.plane.relay.calls(self.stage.plane.relay.turn());
        let outcome = match self.structured_turn(session_id, broken.clone()) {
            Err(reason) => Outcome::Failed(reason),
            Ok((turn, output)) => {
                let calls = self.stage.plane.relay.calls(turn);
                let judged = Turn { calls: &calls, earlier: &earlier, output: &output, validator: &validator, broken: &broken };
                verdict::structured::judge(mechanism, &judged)
                    .map_or_else(|miss| Outcome::failed(Kind::NotServed, miss), |()| Outcome::Passed)
            }
        };
        self.step(StepName::StructuredOutput, started, outcome);
    }

    /// The structured turn: its number in the relay's record, and the text the parent put in
    /// its output (the first [`MAX_OUTPUT`] bytes; a subagent's attributed words are not the
    /// turn's final value).
    fn structured_turn(&mut self, session_id: &str, broken: Value) -> Result<(usize, String), Reason> {
        let nonce = crate::options::fresh_nonce();
        let relay = &self.stage.plane.relay;
        relay.begin_turn(nonce.clone(), Vec::new());
        let turn = relay.turn();
        // The script's faults and replies are the first turn's; this one is answered plainly.
        relay.answer_plainly();
        relay.break_first(broken);
        let text = format!(
            "Checkfu local diagnostic, structured output. Reply with the nonce {nonce} and end the turn, giving the final answer as the session's output schema asks."
        );
        let mut output = String::new();
        let mut seen = |message: &Value| {
            let update = message.pointer("/params/update").unwrap_or(&Value::Null);
            let parent = update.pointer("/_meta/checkfu.subagent").is_none();
            let words = checkfu_wire::conformance::normalize::message_chunk_text(update).filter(|_| parent);
            if let Some(words) = words.filter(|w| output.len() + w.len() <= MAX_OUTPUT) {
                output.push_str(words);
            }
        };
        self.exercise_turn_seen(session_id, json!([{"type": "text", "text": text}]), &mut seen)?;
        Ok((turn, output))
    }
}
