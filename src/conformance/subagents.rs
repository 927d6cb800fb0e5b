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

use std::collections::HashMap;

use super::header::{gate, Header};
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
    subagents: HashMap<String, Lifecycle>,
    unsettled: usize,
    /// Tool-use id → the attribution of its first use.
    tools: HashMap<String, Option<String>>,
    terminal_at: Option<usize>,
    faults: Faults,
}

fn gate_text(kind: Kind) -> String {
    match gate(kind.name()) {
        Some(gate) => format!(
            "{:?} without the declared {} {:?} axis",
            kind.name(),
            gate.axis,
            gate.value
        ),
        None => format!("{:?} without its declaration", kind.name()),
    }
}

fn attribution(subagent: &Option<String>) -> String {
    match subagent {
        Some(id) => format!("subagent {id:?}"),
        None => String::from("the primary loop"),
    }
}

impl SubagentCorrelation {
    pub fn new(header: &Header) -> SubagentCorrelation {
        SubagentCorrelation {
            started_gate: header.admits(Kind::SubagentStarted.name()),
            completed_gate: header.admits(Kind::SubagentCompleted.name()),
            subagents: HashMap::new(),
            unsettled: 0,
            tools: HashMap::new(),
            terminal_at: None,
            faults: Faults::default(),
        }
    }

    /// New activity attributed to `subagent`: it must have started and not yet settled.
    fn activity(&mut self, at: usize, what: &str, subagent: &str) {
        match self.subagents.get(subagent) {
            None => self.faults.at(at, || {
                format!("{what} is attributed to subagent {subagent:?}, which has not started")
            }),
            Some(Lifecycle {
                settled_at: Some(settled),
                ..
            }) => {
                let settled = *settled;
                self.faults.at(at, || {
                    format!("{what} is attributed to subagent {subagent:?} after it settled at observation {settled}")
                })
            }
            Some(_) => {}
        }
    }
}

impl Check for SubagentCorrelation {
    fn observe(&mut self, at: usize, observation: &Observation) {
        match observation {
            Observation::SubagentStarted { subagent, .. } => {
                if !self.started_gate {
                    self.faults.at(at, || gate_text(Kind::SubagentStarted));
                }
                match self.subagents.get(subagent) {
                    Some(first) => {
                        let first = first.started_at;
                        self.faults.at(at, || {
                            format!(
                                "subagent {subagent:?} starts twice (first at observation {first})"
                            )
                        })
                    }
                    None => {
                        self.subagents.insert(
                            subagent.clone(),
                            Lifecycle {
                                started_at: at,
                                settled_at: None,
                            },
                        );
                        self.unsettled += 1;
                    }
                }
            }
            Observation::SubagentCompleted { subagent, .. } => {
                if !self.completed_gate {
                    self.faults.at(at, || gate_text(Kind::SubagentCompleted));
                }
                match self.subagents.get_mut(subagent) {
                    None => self.faults.at(at, || {
                        format!("settles subagent {subagent:?}, which has not started")
                    }),
                    Some(Lifecycle {
                        settled_at: Some(first),
                        ..
                    }) => {
                        let first = *first;
                        self.faults.at(at, || format!("subagent {subagent:?} settles twice (first at observation {first})"))
                    }
                    Some(lifecycle) => {
                        lifecycle.settled_at = Some(at);
                        self.unsettled -= 1;
                        if let Some(terminal) = self.terminal_at {
                            self.faults.at(at, || {
                                format!("subagent {subagent:?} settles after the terminal observation {terminal}")
                            });
                        }
                    }
                }
            }
            Observation::ToolUse { id, subagent, .. } => {
                if let Some(subagent) = subagent {
                    self.activity(at, &format!("tool use {id:?}"), subagent);
                }
                self.tools
                    .entry(id.clone())
                    .or_insert_with(|| subagent.clone());
            }
            Observation::Output {
                subagent: Some(subagent),
                ..
            } => self.activity(at, "output", subagent),
            Observation::ToolResult { id, subagent } => {
                if let Some(used_by) = self.tools.get(id) {
                    if used_by != subagent {
                        let used_by = attribution(used_by);
                        self.faults.at(at, || {
                            format!(
                                "tool result {id:?} is attributed to {} but its use to {used_by}; a settlement keeps its use's attribution",
                                attribution(subagent)
                            )
                        });
                    }
                }
                if let Some(subagent) = subagent {
                    if !self.subagents.contains_key(subagent) {
                        self.faults.at(at, || {
                            format!("tool result {id:?} is attributed to subagent {subagent:?}, which has not started")
                        });
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
                        .map(|(id, l)| (id.clone(), l.started_at));
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

    fn finish(self: Box<Self>, _observations: usize) -> Outcome {
        let mut faults = self.faults;
        for (id, lifecycle) in &self.subagents {
            let after_terminal = self
                .terminal_at
                .is_none_or(|terminal| lifecycle.started_at > terminal);
            if lifecycle.settled_at.is_none() && after_terminal {
                faults.at(lifecycle.started_at, || {
                    format!("subagent {id:?} never settles")
                });
            }
        }
        faults.outcome()
    }
}
