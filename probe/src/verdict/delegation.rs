//! Whether a declared `subagents: observed` is served: the prompt asked for part of the turn
//! to be delegated, and the trace and the relay's record must both show a subagent at work.
//!
//! A lifecycle is the harness's word. What it cannot make up is a reply token: the relay
//! mints one per served call and puts it in that call's answer only. So a subagent is real
//! when the output attributed to it carries the token of a call the relay served, and that
//! call is not the one whose answer the turn itself gave (the prompt exchange's): repeating
//! the parent's answer under a subagent's name is narration, not delegation.

use checkfu_wire::conformance::normalize::SubagentSeen;

/// Why a declared subagent surface failed, named after what the record lacks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DelegationMiss {
    #[error(
        "the prompt asked for part of the turn to be delegated, and no subagent started (no `checkfu.subagent` lifecycle in the turn)"
    )]
    NoSubagent,
    #[error("subagent {name:?} ({id}) was attributed output but never started")]
    NeverStarted { id: String, name: String },
    #[error("subagent {name:?} ({id}) started and never settled")]
    NeverSettled { id: String, name: String },
    #[error(
        "subagent {name:?} ({id}) is narrated: its attributed output carries the reply token of no model call the relay served \
         besides the turn's own answer ({calls} served)"
    )]
    Narrated { id: String, name: String, calls: usize },
}

/// Judges the subagents of a turn: `seen` as the trace holds them, `tokens` the reply tokens
/// of every call the relay served in the turn, `answer` the token that reached the turn's
/// own output as its answer (the prompt exchange's). Every subagent must have started,
/// settled, and carry a served token other than `answer`; at least one must exist.
pub fn judge(seen: &[SubagentSeen], tokens: &[String], answer: Option<&str>) -> Result<(), DelegationMiss> {
    if seen.is_empty() {
        return Err(DelegationMiss::NoSubagent);
    }
    for subagent in seen {
        let (id, name) = (subagent.id.clone(), subagent.name.clone());
        if !subagent.started {
            return Err(DelegationMiss::NeverStarted { id, name });
        }
        if subagent.settled.is_none() {
            return Err(DelegationMiss::NeverSettled { id, name });
        }
        let own = tokens.iter().filter(|t| Some(t.as_str()) != answer).any(|t| subagent.output.contains(t.as_str()));
        if !own {
            return Err(DelegationMiss::Narrated { id, name, calls: tokens.len() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subagent(output: &str, settled: bool) -> SubagentSeen {
        SubagentSeen {
            id: String::from("subagent-1"),
            name: String::from("researcher"),
            started: true,
            settled: settled.then(|| String::from("completed")),
            output: output.to_owned(),
        }
    }

    fn tokens() -> Vec<String> {
        vec![String::from("rt-parent"), String::from("rt-child")]
    }

    #[test]
    fn a_subagent_carrying_its_own_calls_token_passes() {
        assert_eq!(judge(&[subagent("found: rt-child", true)], &tokens(), Some("rt-parent")), Ok(()));
    }

    #[test]
    fn no_subagent_fails() {
        assert_eq!(judge(&[], &tokens(), Some("rt-parent")), Err(DelegationMiss::NoSubagent));
    }

    #[test]
    fn a_narrated_subagent_fails_naming_it() {
        let miss = judge(&[subagent("I read the notes.", true)], &tokens(), Some("rt-parent")).unwrap_err();
        assert!(matches!(&miss, DelegationMiss::Narrated { name, .. } if name == "researcher"), "{miss}");
        assert!(miss.to_string().contains("\"researcher\" (subagent-1) is narrated"), "{miss}");
    }

    #[test]
    fn the_turns_own_answer_repeated_under_a_subagent_is_narration() {
        let miss = judge(&[subagent("rt-parent", true)], &tokens(), Some("rt-parent")).unwrap_err();
        assert!(matches!(miss, DelegationMiss::Narrated { .. }));
    }

    #[test]
    fn an_unsettled_or_unstarted_subagent_fails() {
        assert!(matches!(judge(&[subagent("rt-child", false)], &tokens(), None), Err(DelegationMiss::NeverSettled { .. })));
        let unstarted = SubagentSeen { started: false, ..subagent("rt-child", true) };
        assert!(matches!(judge(&[unstarted], &tokens(), None), Err(DelegationMiss::NeverStarted { .. })));
    }
}
