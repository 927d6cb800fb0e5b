//! `subagent_correlation`: the attributed-subagent lifecycle.
//!
//! Requirement: the lifecycle requires the declared observed axis; a subagent starts once
//! before any reference to it and settles exactly once; every started subagent settles before
//! the terminal; attribution references a started subagent, and late tool settlements keep
//! their attribution. Read as:
//!
//! - `subagent_started` / `subagent_completed` are gated (the generated gated-emissions rows
//!   listing them); either one while its gate is closed fails.
//! - A start for an id already started fails (it starts once).
//! - A settlement of an id not started before it, a second settlement, or a settlement after
//!   the terminal fails.
//! - Attribution (`subagent` on `tool_use`, `tool_result`, and the added `output` field) must
//!   reference a subagent started before it. New activity (`tool_use`, `output`) attributed to
//!   a subagent that already settled fails: it settled exactly once, so nothing new is its.
//! - A `tool_result` keeps the attribution of its `tool_use`: same subagent, or both the
//!   primary loop (no `subagent`). That is what makes a late settlement legal: a result that
//!   arrives after its subagent settled is fine as long as it still names that subagent.
//! - At the first terminal, every started subagent must have settled (placed at the
//!   terminal); a subagent that never settles in a trace without a terminal is placed at its
//!   start.

use super::header::{gate, Header};
use super::ids::{Id, IdMap, Interner};
use super::observation::{Kind, Observation};
use super::report::{Faults, Outcome};
use super::Check;

struct Lifecycle {
    started_at: usize,
    settled_at: Option<usize>,
}

pub struct SubagentCorrelation {
    started_gate: bool,
    completed_gate: bool,
    subagents: IdMap<Lifecycle>,
    unsettled: usize,
    /// Tool-use id → the attribution of its first use.
    tools: IdMap<Option<Id>>,
    terminal_at: Option<usize>,
    faults: Faults,
}

fn gate_text(kind: Kind) -> String {
    match gate(kind.name()) {
        Some(gate) => format!("{:?} without the declared {} {:?} axis", kind.name(), gate.axis, gate.value),
        None => format!("{:?} without its declaration", kind.name()),
    }
}

fn attribution(subagent: Option<Id>, ids: &Interner) -> String {
    match subagent {
        Some(id) => format!("subagent {:?}", ids.name(id)),
        None => String::from("the primary loop"),
    }
}

impl SubagentCorrelation {
    pub fn new(header: &Header) -> SubagentCorrelation {
        SubagentCorrelation {
            started_gate: header.admits(Kind::SubagentStarted.name()),
            completed_gate: header.admits(Kind::SubagentCompleted.name()),
            subagents: IdMap::default(),
            unsettled: 0,
            tools: IdMap::default(),
            terminal_at: None,
            faults: Faults::default(),
        }
    }

    /// New activity attributed to `subagent`: it must have started and not yet settled.
    /// `what` names the activity; it is worded only when the fault is recorded.
    fn activity(&mut self, at: usize, what: impl Fn() -> String, subagent: Id, ids: &Interner) {
        let name = ids.name(subagent);
        match self.subagents.get(subagent) {
            None => self.faults.at(at, || format!("{} is attributed to subagent {name:?}, which has not started", what())),
            Some(Lifecycle { settled_at: Some(settled), .. }) => {
                let settled = *settled;
                self.faults.at(at, || format!("{} is attributed to subagent {name:?} after it settled at observation {settled}", what()))
            }
            Some(_) => {}
        }
    }
}

impl Check for SubagentCorrelation {
    fn observe(&mut self, at: usize, observation: &Observation, ids: &Interner) {
        match observation {
            Observation::SubagentStarted { subagent, .. } => {
                if !self.started_gate {
                    self.faults.at(at, || gate_text(Kind::SubagentStarted));
                }
                let first = self.subagents.get_or_insert_with(*subagent, || Lifecycle { started_at: at, settled_at: None }).started_at;
                // Observations have distinct indexes: a start held at another index is an
                // earlier start of the same subagent.
                if first == at {
                    self.unsettled += 1;
                } else {
                    let subagent = ids.name(*subagent);
                    self.faults.at(at, || format!("subagent {subagent:?} starts twice (first at observation {first})"))
                }
            }
            Observation::SubagentCompleted { subagent, .. } => {
                if !self.completed_gate {
                    self.faults.at(at, || gate_text(Kind::SubagentCompleted));
                }
                let subagent_id = *subagent;
                let subagent = ids.name(subagent_id);
                match self.subagents.get_mut(subagent_id) {
                    None => self.faults.at(at, || format!("settles subagent {subagent:?}, which has not started")),
                    Some(Lifecycle { settled_at: Some(first), .. }) => {
                        let first = *first;
                        self.faults.at(at, || format!("subagent {subagent:?} settles twice (first at observation {first})"))
                    }
                    Some(lifecycle) => {
                        lifecycle.settled_at = Some(at);
                        self.unsettled -= 1;
                        if let Some(terminal) = self.terminal_at {
                            self.faults.at(at, || format!("subagent {subagent:?} settles after the terminal observation {terminal}"));
                        }
                    }
                }
            }
            Observation::ToolUse { id, subagent, .. } => {
                if let Some(subagent) = *subagent {
                    let id = ids.name(*id);
                    self.activity(at, || format!("tool use {id:?}"), subagent, ids);
                }
                self.tools.get_or_insert_with(*id, || *subagent);
            }
            Observation::Output { subagent: Some(subagent), .. } => self.activity(at, || String::from("output"), *subagent, ids),
            Observation::ToolResult { id, subagent } => {
                if let Some(used_by) = self.tools.get(*id) {
                    if used_by != subagent {
                        let used_by = attribution(*used_by, ids);
                        let id = ids.name(*id);
                        self.faults.at(at, || {
                            format!(
                                "tool result {id:?} is attributed to {} but its use to {used_by}; a settlement keeps its use's attribution",
                                attribution(*subagent, ids)
                            )
                        });
                    }
                }
                if let Some(subagent) = *subagent {
                    if !self.subagents.contains(subagent) {
                        let id = ids.name(*id);
                        let subagent = ids.name(subagent);
                        self.faults.at(at, || format!("tool result {id:?} is attributed to subagent {subagent:?}, which has not started"));
                    }
                }
            }
            Observation::Terminal { .. } if self.terminal_at.is_none() => {
                self.terminal_at = Some(at);
                if self.unsettled > 0 {
                    let pending = self
                        .subagents
                        .iter()
                        .filter(|(_, l)| l.settled_at.is_none())
                        .min_by_key(|(_, l)| l.started_at)
                        .map(|(id, l)| (ids.name(id), l.started_at));
                    let count = self.unsettled;
                    if let Some((id, started)) = pending {
                        self.faults.at(at, || {
                            format!("subagent {id:?} (started at observation {started}) has not settled before the terminal ({count} unsettled)")
                        });
                    }
                }
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, _observations: usize, ids: &Interner) -> Outcome {
        let mut faults = self.faults;
        for (id, lifecycle) in self.subagents.iter() {
            let after_terminal = self.terminal_at.is_none_or(|terminal| lifecycle.started_at > terminal);
            if lifecycle.settled_at.is_none() && after_terminal {
                let id = ids.name(id);
                faults.at(lifecycle.started_at, || format!("subagent {id:?} never settles"));
            }
        }
        faults.outcome()
    }
}
