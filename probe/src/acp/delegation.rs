//! The `subagent_delegation` step: a declared `subagents: observed` exercised. The prompt
//! asked for part of the turn to be delegated ([`DELEGATION_ASK`]); the trace's subagents are
//! then held against the reply tokens of the calls the relay served ([`verdict::delegation`]).

use std::time::Instant;

use super::Run;
use crate::outcome::{Kind, Outcome};
use crate::report::steps::StepStatus;
use crate::verdict;
use checkfu_wire::admission::AdmittedCapabilities;
use checkfu_wire::catalog::StepName;

/// The axis and value a `subagents` declaration promotes to.
const SUBAGENTS: (&str, &str) = ("subagents", "observed");

/// What the prompt adds when the harness declares subagents: a generic instruction, since a
/// harness's own way to start one (a tool, a command) is the harness's to choose.
pub(super) const DELEGATION_ASK: &str = " Delegate one part of this task to a subagent of yours: have it ask the model on its own \
     and report what the model answered it, word for word.";

/// Whether the admitted set holds the declared subagents axis.
pub(super) fn declared(admitted: &AdmittedCapabilities) -> bool {
    admitted.value(SUBAGENTS.0) == Some(SUBAGENTS.1) && admitted.promotions().iter().any(|u| u.axis == SUBAGENTS.0)
}

impl Run<'_, '_, '_, '_> {
    /// Reports `subagent_delegation`, after the prompt exchange.
    pub(super) fn delegation(&mut self, admitted: &AdmittedCapabilities) {
        if !declared(admitted) {
            self.stage.steps.skipped(StepName::SubagentDelegation, "`subagents` is not declared");
            return;
        }
        let exchanged =
            self.stage.steps.list.iter().any(|(name, step)| *name == StepName::PromptExchange && step.status() == StepStatus::Passed);
        if !exchanged {
            self.stage.steps.skipped(StepName::SubagentDelegation, "the prompt exchange did not pass");
            return;
        }
        if self.drain.as_ref().is_some_and(|d| d.ack_ms.is_some()) {
            // A drained turn stops where it is: what it would have delegated is not asked of it.
            self.stage.steps.skipped(StepName::SubagentDelegation, "the scripted interrupt drained the turn");
            return;
        }
        let started = Instant::now();
        let tokens: Vec<String> = self.stage.plane.relay.calls(1).into_iter().filter_map(|c| c.reply_token).collect();
        let outcome = verdict::delegation::judge(&self.normalizer.subagents(), &tokens, self.reply_in_output.as_deref());
        let outcome = outcome.map_or_else(|miss| Outcome::failed(Kind::NotServed, miss), |()| Outcome::Passed);
        self.step(StepName::SubagentDelegation, started, outcome);
    }
}
