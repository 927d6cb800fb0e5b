//! Whether a declared `builtin_tool_scoping: enforced` is served: in a turn of its own the
//! model called a built-in tool inside the `checkfu.builtin_tools` list and then one outside
//! it, each writing a file of its own in the workspace.
//!
//! The harness's word counts for nothing here. The workspace says which tool ran (its file is
//! there, holding its mark), and the relay's record says what came back to the model: the
//! request after the outside call must carry one tool result more than the request that got
//! that call, the answer to it (the refusal), or the model was left without one.

use crate::relay::exercise::{ScopingPhase, ScopingSeen};

/// What the workspace held after the turn: the inside tool's file as read (`None`: absent),
/// and whether the outside tool's file exists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    pub inside: Option<String>,
    pub outside: bool,
}

/// Why a declared scoping failed, named after the tool and what shows it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScopingMiss {
    #[error("the model was never asked: no call the relay served in the scoping turn carried its nonce")]
    Unasked,
    #[error("the model called `{tool}`, inside `checkfu.builtin_tools`, and it did not run: {why}")]
    InsideDidNotRun { tool: String, why: String },
    #[error("the model never got to call `{tool}`, outside the list: no request came back after the call of `{inside}`")]
    OutsideNeverCalled { tool: String, inside: String },
    #[error("`{tool}`, outside `checkfu.builtin_tools`, ran: the file it was called to write is in the workspace")]
    OutsideRan { tool: String },
    #[error("the refusal of `{tool}`, outside `checkfu.builtin_tools`, never reached the model: no request followed its call")]
    RefusalNeverSent { tool: String },
    #[error(
        "the refusal of `{tool}`, outside `checkfu.builtin_tools`, never reached the model: the request after its call carried \
         {after} tool results, as many as before it ({before})"
    )]
    RefusalNotInRequest { tool: String, before: usize, after: usize },
}

/// Judges the scoping turn: `seen` are its calls that carried the nonce, in the record's
/// order; `inside` and `outside` the tools' names and `mark` the inside tool's; `effects`
/// what the workspace held after the turn. The outside tool's effect decides first: a
/// tool that ran outside its list fails whatever else happened.
pub fn judge(seen: &[ScopingSeen], tools: (&str, &str), mark: &str, effects: &Effects) -> Result<(), ScopingMiss> {
    let (inside, outside) = tools;
    if seen.is_empty() {
        return Err(ScopingMiss::Unasked);
    }
    if effects.outside {
        return Err(ScopingMiss::OutsideRan { tool: outside.to_owned() });
    }
    let why = match &effects.inside {
        None => Some(String::from("the file it was called to write is not in the workspace")),
        Some(text) if !text.contains(mark) => Some(String::from("the file it was called to write does not hold its mark")),
        Some(_) => None,
    };
    if let Some(why) = why {
        return Err(ScopingMiss::InsideDidNotRun { tool: inside.to_owned(), why });
    }
    let results = |phase: ScopingPhase| seen.iter().filter(|s| s.phase == phase).map(|s| s.tool_results).max();
    let Some(before) = results(ScopingPhase::Outside) else {
        return Err(ScopingMiss::OutsideNeverCalled { tool: outside.to_owned(), inside: inside.to_owned() });
    };
    let Some(after) = results(ScopingPhase::Answer) else {
        return Err(ScopingMiss::RefusalNeverSent { tool: outside.to_owned() });
    };
    if after <= before {
        return Err(ScopingMiss::RefusalNotInRequest { tool: outside.to_owned(), before, after });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: (&str, &str) = ("write", "bash");

    fn seen(phases: &[(ScopingPhase, usize)]) -> Vec<ScopingSeen> {
        phases.iter().map(|(phase, tool_results)| ScopingSeen { phase: *phase, tool_results: *tool_results }).collect()
    }

    fn honest() -> Vec<ScopingSeen> {
        seen(&[(ScopingPhase::Inside, 0), (ScopingPhase::Outside, 1), (ScopingPhase::Answer, 2)])
    }

    fn ran_inside() -> Effects {
        Effects { inside: Some(String::from("cfb-mark")), outside: false }
    }

    #[test]
    fn the_inside_tool_ran_and_the_outside_ones_refusal_came_back() {
        assert_eq!(judge(&honest(), TOOLS, "cfb-mark", &ran_inside()), Ok(()));
    }

    #[test]
    fn an_outside_tool_that_ran_fails_naming_it() {
        let effects = Effects { outside: true, ..ran_inside() };
        let miss = judge(&honest(), TOOLS, "cfb-mark", &effects).unwrap_err();
        assert_eq!(miss, ScopingMiss::OutsideRan { tool: String::from("bash") });
        assert!(miss.to_string().starts_with("`bash`, outside `checkfu.builtin_tools`, ran"), "{miss}");
    }

    #[test]
    fn an_inside_tool_that_did_not_run_fails() {
        let miss = judge(&honest(), TOOLS, "cfb-mark", &Effects::default()).unwrap_err();
        assert!(matches!(miss, ScopingMiss::InsideDidNotRun { .. }), "{miss}");
        let other = Effects { inside: Some(String::from("something else")), outside: false };
        assert!(matches!(judge(&honest(), TOOLS, "cfb-mark", &other), Err(ScopingMiss::InsideDidNotRun { .. })));
    }

    #[test]
    fn a_refusal_that_never_reached_the_model_fails() {
        let none_after = seen(&[(ScopingPhase::Inside, 0), (ScopingPhase::Outside, 1)]);
        assert!(matches!(judge(&none_after, TOOLS, "cfb-mark", &ran_inside()), Err(ScopingMiss::RefusalNeverSent { .. })));
        let empty = seen(&[(ScopingPhase::Inside, 0), (ScopingPhase::Outside, 1), (ScopingPhase::Answer, 1)]);
        let miss = judge(&empty, TOOLS, "cfb-mark", &ran_inside()).unwrap_err();
        assert_eq!(miss, ScopingMiss::RefusalNotInRequest { tool: String::from("bash"), before: 1, after: 1 });
    }

    #[test]
    fn a_turn_without_calls_or_without_the_outside_call_fails() {
        assert_eq!(judge(&[], TOOLS, "cfb-mark", &ran_inside()), Err(ScopingMiss::Unasked));
        let inside_only = seen(&[(ScopingPhase::Inside, 0)]);
        assert!(matches!(judge(&inside_only, TOOLS, "cfb-mark", &ran_inside()), Err(ScopingMiss::OutsideNeverCalled { .. })));
    }
}
