//! The `builtin_tool_scoping` step: a declared `builtin_tool_scoping: enforced` exercised.
//!
//! `session/new` hands the harness a `checkfu.builtin_tools` list ([`hand_list`]) holding
//! [`INSIDE`] and never [`OUTSIDE`]. In a turn of its own, the model (the relay's
//! [`Scoping`]) calls [`INSIDE`] to write one file of the workspace, then [`OUTSIDE`] to write
//! another, then answers. The workspace and the relay's record then say what the harness did
//! ([`verdict::scoping`]). The names are conventions of the probe, not of ACP: a harness that
//! declares the value and names its tools otherwise fails the step, saying which tool did not
//! run, and its author sees why.

use std::time::Instant;

use serde_json::{json, Map, Value};

use super::exercised::{declaration, declared, not_served};
use super::{AcpOptions, Run};
use crate::outcome::{Kind, Outcome};
use crate::relay::exercise::{ScopedCall, Scoping};
use crate::verdict;
use checkfu_wire::admission::AdmittedCapabilities;
use checkfu_wire::catalog::StepName;
use checkfu_wire::decode::tables::Slot;

/// The built-in tool the handed list admits: the writer of the contract's closed vocabulary
/// of built-in tool names (`bash`, `read`, `write`, `edit`, `web_search`, `web_fetch`).
pub(super) const INSIDE: &str = "write";
/// The built-in tool the list leaves out: the vocabulary's shell.
pub(super) const OUTSIDE: &str = "bash";
/// The list when the author gives none: the writer, and the reader the `tool` model script
/// calls in the first turn (a harness enforcing the list would refuse it otherwise).
const DEFAULT_LIST: &[&str] = &["read", INSIDE];
/// The files the two calls write, in the workspace.
const INSIDE_FILE: &str = "checkfu-scoping-inside.txt";
const OUTSIDE_FILE: &str = "checkfu-scoping-outside.txt";
/// The prefix of the marks the calls write: neither a nonce nor a reply token.
const MARK_PREFIX: &str = "cfb-";

/// Puts the list into `session/new`'s `_meta` when the harness declared scoping: the
/// author's `--builtin-tools` with [`INSIDE`] added, else [`DEFAULT_LIST`]. Undeclared, the
/// author's list alone goes, as before.
pub(super) fn hand_list(meta: &mut Map<String, Value>, options: &AcpOptions, admitted: &AdmittedCapabilities) {
    let (member, value) = declaration(StepName::BuiltinToolScoping);
    if !declared(admitted, member, value) {
        return;
    }
    let mut list: Vec<String> = match &options.builtin_tools {
        Some(given) => given.clone(),
        None => DEFAULT_LIST.iter().map(|t| (*t).to_owned()).collect(),
    };
    if !list.iter().any(|t| t == INSIDE) {
        list.push(INSIDE.to_owned());
    }
    meta.insert(Slot::CheckfuBuiltinTools.name().into(), json!(list));
}

impl Run<'_, '_, '_, '_> {
    /// Reports `builtin_tool_scoping`, after the prompt exchange.
    pub(super) fn builtin_tool_scoping(&mut self, admitted: &AdmittedCapabilities, session_id: &str) {
        let mut skip = self.exercise_skip(admitted, StepName::BuiltinToolScoping);
        if skip.is_none() && self.options.builtin_tools.as_ref().is_some_and(|l| l.iter().any(|t| t == OUTSIDE)) {
            skip = Some(format!("--builtin-tools admits `{OUTSIDE}`, the tool the step calls outside the list"));
        }
        if let Some(reason) = skip {
            self.stage.steps.skipped(StepName::BuiltinToolScoping, &reason);
            return;
        }
        let started = Instant::now();
        let outcome = self.scoping_turn(session_id);
        self.step(StepName::BuiltinToolScoping, started, outcome);
    }

    fn scoping_turn(&mut self, session_id: &str) -> Outcome {
        let nonce = crate::options::fresh_nonce();
        let root = self.session.workspace().root().to_path_buf();
        let call = |tool: &str, file: &str| ScopedCall {
            tool: tool.to_owned(),
            path: self.session.workspace().harness_path(&root.join(file)).to_string_lossy().into_owned(),
            mark: crate::relay::token::mint(MARK_PREFIX),
        };
        let scoping = Scoping { inside: call(INSIDE, INSIDE_FILE), outside: call(OUTSIDE, OUTSIDE_FILE) };
        let mark = scoping.inside.mark.clone();
        let relay = &self.stage.plane.relay;
        relay.begin_turn(nonce.clone(), Vec::new());
        relay.answer_plainly();
        relay.script_scoping(scoping);
        let turn = relay.turn();
        let text = format!(
            "Checkfu local diagnostic, built-in tool scoping. Run the tools the model asks for, as your session allows, then reply \
             with the nonce {nonce} and end the turn."
        );
        let answered = self.exercise_turn(session_id, json!([{"type": "text", "text": text}]));
        // What the tools did is in the workspace whatever the answer: a tool outside the list
        // that ran fails the step even in a turn that went wrong after it.
        let effects = verdict::scoping::Effects {
            inside: std::fs::read_to_string(root.join(INSIDE_FILE)).ok(),
            outside: std::fs::symlink_metadata(root.join(OUTSIDE_FILE)).is_ok(),
        };
        let seen: Vec<_> = self.stage.plane.relay.calls(turn).into_iter().filter_map(|c| c.scoping).collect();
        match verdict::scoping::judge(&seen, (INSIDE, OUTSIDE), &mark, &effects) {
            Err(miss @ verdict::scoping::ScopingMiss::Unasked) => Outcome::failed(Kind::Unasked, miss),
            Err(miss) => not_served(StepName::BuiltinToolScoping, miss),
            Ok(()) => answered.map_or_else(Outcome::Failed, |()| Outcome::Passed),
        }
    }
}
