//! `tool_correlation`: tool-use ids are unique; every result references an observed use.
//!
//! "Observed" means observed earlier in the trace: a result that precedes its use settles a
//! call nobody has seen yet. Faults: a tool-use id used a second time (placed at the second
//! use); a result whose id no earlier use carries. The requirement says nothing about a use
//! that never settles or a use settled twice, so neither fails this check; attribution of
//! results is `subagent_correlation`'s.

use super::ids::{IdMap, Interner};
use super::observation::Observation;
use super::report::{Faults, Outcome};
use super::Check;

#[derive(Default)]
pub struct ToolCorrelation {
    /// Tool-use id → index of its use.
    uses: IdMap<usize>,
    faults: Faults,
}

impl Check for ToolCorrelation {
    fn observe(&mut self, at: usize, observation: &Observation, ids: &Interner) {
        match observation {
            Observation::ToolUse { id, .. } => {
                // Observations have distinct indexes, so a use held at another index is an
                // earlier use of the same id.
                let first = *self.uses.get_or_insert_with(*id, || at);
                if first != at {
                    let id = ids.name(*id);
                    self.faults.at(at, || format!("tool-use id {id:?} is not unique (first used at observation {first})"))
                }
            }
            Observation::ToolResult { id, .. } if !self.uses.contains(*id) => {
                let id = ids.name(*id);
                self.faults.at(at, || format!("tool result {id:?} references no tool use observed before it"))
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, _observations: usize, _ids: &Interner) -> Outcome {
        self.faults.outcome()
    }
}
