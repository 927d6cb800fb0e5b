//! `context_compaction`: a harness under an enforced context window, judged by the relay's
//! record, and its `checkfu.compaction` claims set against that record.
//!
//! The relay estimates every request ([`crate::relay::estimate`]) and answers one past the
//! window with the dialect's context-length error, recorded as a `context_overflow` fault.
//! What the record can show of a compaction is what a harness does about such an answer:
//! its next call of the turn (the retry, [`super::retried_by`]) is the compacted request.
//! So a *recorded compaction* is an overflowed call and the smaller call that followed it,
//! each with the relay's message count and token estimate.
//!
//! - **A compaction policy admitted** (`checkfu.runtime_config` carries `compaction`): every
//!   overflow is followed by a smaller request, the last one fits, and the turn's reply token
//!   still reached the output.
//! - **No policy admitted**: "absent means the harness must not compact". A smaller request
//!   after an overflow, or any `checkfu.compaction`, fails; an overflow the harness did not
//!   compact its way out of passes here (the turn's failure is `prompt_exchange`'s).
//! - **Every claim** is set against the recorded compaction of the same rank (the first
//!   claim against the first, and so on): `compacted_messages` must be exactly the fall in
//!   the message count, and `tokens_before` and `tokens_after` each within [`TOLERANCE_PERCENT`]
//!   (at least [`TOLERANCE_TOKENS`]) of the relay's estimate of the two requests. A claim
//!   with no recorded compaction of its rank fails: the record shows no such compaction.
//!
//! What it does not prove: a compaction a harness makes before sending anything past the
//! window (at its own trigger) leaves no overflowed request in the record, so its claim has
//! nothing to be set against and fails as unrecorded; and a recorded compaction the harness
//! does not claim is not a failure (fidelity is fail-open), only reported.

use serde::Serialize;
use serde_json::Value;

use crate::outcome::{Kind, Outcome};
use crate::relay::{Call, FaultKind};

/// How far a claimed token estimate may be from the relay's, in percent of the relay's: a
/// harness counts with its own tokenizer, and 30 % takes in any rule from about 3.1 to 5.7
/// bytes a token against the relay's four, which covers ordinary text and code, while a
/// made-up figure does not.
pub const TOLERANCE_PERCENT: u64 = 30;

/// The least tolerance, in tokens, so a small request's rounding is not a lie.
pub const TOLERANCE_TOKENS: u64 = 32;

/// The most claims kept of one turn; past it, counted (and the step fails: no turn compacts
/// that often under one window).
pub const MAX_CLAIMS: usize = 64;

/// A bounded compaction strategy, as the slots' schema names them (`CompactionStrategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    Summarize,
    TruncateOldest,
}

impl Strategy {
    /// The strategy a JSON value names; `None` for any other value.
    pub fn of(value: &Value) -> Option<Strategy> {
        match value.as_str()? {
            "summarize" => Some(Strategy::Summarize),
            "truncate_oldest" => Some(Strategy::TruncateOldest),
            _ => None,
        }
    }

    /// Every strategy, in the schema's order.
    pub const ALL: [Strategy; 2] = [Strategy::Summarize, Strategy::TruncateOldest];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Summarize => "summarize",
            Strategy::TruncateOldest => "truncate_oldest",
        }
    }
}

/// The compaction policy `checkfu.runtime_config` admitted, as the step reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Policy {
    pub strategy: Strategy,
    pub trigger_tokens: u64,
}

impl Policy {
    /// The policy of a runtime config (`None`: it admits none, or it is not one).
    pub fn of(runtime_config: &Value) -> Option<Policy> {
        let policy = runtime_config.get("compaction")?;
        Some(Policy { strategy: Strategy::of(policy.get("strategy")?)?, trigger_tokens: policy.get("trigger_tokens")?.as_u64()? })
    }
}

/// One `checkfu.compaction`, read; a malformed one is no claim (fidelity is fail-open, and
/// the decoder already said why).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Claim {
    pub strategy: Strategy,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub compacted_messages: u64,
}

impl Claim {
    pub fn of(value: &Value) -> Option<Claim> {
        Some(Claim {
            strategy: Strategy::of(value.get("strategy")?)?,
            tokens_before: value.get("tokens_before")?.as_u64()?,
            tokens_after: value.get("tokens_after")?.as_u64()?,
            compacted_messages: value.get("compacted_messages")?.as_u64()?,
        })
    }
}

/// The claims of a run as they arrive: the `checkfu.compaction` of each `session/update`,
/// the first [`MAX_CLAIMS`] kept.
#[derive(Clone, Debug, Default)]
pub struct Claims {
    pub kept: Vec<Claim>,
    pub dropped: usize,
}

impl Claims {
    /// Notes the claim of one `session/update` message, if it carries a readable one.
    pub fn note(&mut self, message: &Value) {
        let Some(claim) = message.pointer("/params/update/_meta/checkfu.compaction").and_then(Claim::of) else { return };
        if self.kept.len() < MAX_CLAIMS {
            self.kept.push(claim);
        } else {
            self.dropped += 1;
        }
    }
}

/// An overflowed call and the harness's next call of the turn, as the relay recorded them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Recorded {
    /// The overflowed call's place in the turn, from 1; the retry is the next call.
    pub call: usize,
    pub messages_before: usize,
    pub messages_after: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// What the step saw, for the report.
#[derive(Clone, Debug, Serialize)]
pub struct CompactionCheck {
    /// The window the relay enforced.
    pub window: u64,
    /// The policy admitted (`null`: none, the harness must not compact).
    pub policy: Option<Policy>,
    /// The calls the relay answered with a context overflow.
    pub overflows: usize,
    /// The largest request of the turn, by the relay's estimate.
    pub largest_estimate: u64,
    /// Each `checkfu.compaction` the harness sent, in order.
    pub claimed: Vec<Claim>,
    /// Claims past [`MAX_CLAIMS`], counted only.
    pub claims_dropped: usize,
    /// Each overflow and the call after it, in order: a compaction where that call is smaller.
    pub recorded: Vec<Recorded>,
    /// Each way a claim differs from the record: the claim, the counter, the claimed and the
    /// recorded value.
    pub mismatches: Vec<String>,
    /// The step's verdict: skipped when there was nothing to judge (no request reached the
    /// window, and nothing was claimed).
    #[serde(skip)]
    pub verdict: Outcome,
}

/// A failure of the step, in `words`.
fn failed(words: impl std::fmt::Display) -> Outcome {
    Outcome::failed(Kind::Compaction, words)
}

/// Whether `claimed` is within the tolerance of the relay's `recorded` estimate.
pub fn within_tolerance(claimed: u64, recorded: u64) -> bool {
    let tolerance = (recorded * TOLERANCE_PERCENT / 100).max(TOLERANCE_TOKENS);
    claimed.abs_diff(recorded) <= tolerance
}

/// Each overflowed call of `calls` (one turn's, in order) and the call that followed it.
pub fn recorded(calls: &[Call]) -> Vec<Recorded> {
    (0..calls.len())
        .filter(|&i| calls[i].fault == Some(FaultKind::ContextOverflow))
        .filter_map(|i| {
            let next = &calls[super::retried_by(calls, i)?];
            Some(Recorded {
                call: i + 1,
                messages_before: calls[i].messages,
                messages_after: next.messages,
                tokens_before: calls[i].estimated_tokens,
                tokens_after: next.estimated_tokens,
            })
        })
        .collect()
}

/// Each way `claims` differ from the `recorded` compactions, rank by rank.
pub fn mismatches(claims: &[Claim], recorded: &[Recorded], policy: Option<&Policy>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, claim) in claims.iter().enumerate() {
        let name = format!("checkfu.compaction #{}", k + 1);
        let Some(record) = recorded.get(k) else {
            out.push(format!(
                "{name} claims {} message(s) compacted ({} → {} tokens), but the record shows no compaction #{}: the relay answered {} context overflow(s) that a later call followed",
                claim.compacted_messages, claim.tokens_before, claim.tokens_after, k + 1, recorded.len()
            ));
            continue;
        };
        let fell = record.messages_before.saturating_sub(record.messages_after) as u64;
        if claim.compacted_messages != fell {
            out.push(format!(
                "{name}: compacted_messages claimed {}, recorded {fell} (call {} had {} messages, the call after it {})",
                claim.compacted_messages, record.call, record.messages_before, record.messages_after
            ));
        }
        for (counter, claimed, relay) in
            [("tokens_before", claim.tokens_before, record.tokens_before), ("tokens_after", claim.tokens_after, record.tokens_after)]
        {
            if !within_tolerance(claimed, relay) {
                out.push(format!(
                    "{name}: {counter} claimed {claimed}, recorded {relay} (the relay's estimate; within {TOLERANCE_PERCENT} % or {TOLERANCE_TOKENS} tokens is agreement)"
                ));
            }
        }
        if let Some(policy) = policy.filter(|p| p.strategy != claim.strategy) {
            out.push(format!("{name}: strategy claimed {}, admitted {}", claim.strategy.name(), policy.strategy.name()));
        }
    }
    out
}

/// The step over one turn: `window` and `policy` as the probe sent them, `claims` the
/// harness's `checkfu.compaction` members, `calls` the turn's record in order, and
/// `answered` whether its reply token reached the output.
pub fn judge(window: u64, policy: Option<Policy>, claims: Claims, calls: &[Call], answered: bool) -> CompactionCheck {
    let recorded = recorded(calls);
    let mismatches = mismatches(&claims.kept, &recorded, policy.as_ref());
    let overflows = calls.iter().filter(|c| c.fault == Some(FaultKind::ContextOverflow)).count();
    let largest_estimate = calls.iter().map(|c| c.estimated_tokens).max().unwrap_or(0);
    let mut check = CompactionCheck {
        window,
        policy,
        overflows,
        largest_estimate,
        claimed: claims.kept,
        claims_dropped: claims.dropped,
        recorded,
        mismatches,
        verdict: Outcome::Passed,
    };
    check.verdict = verdict(&check, calls, answered);
    check
}

/// The verdict of a check whose facts are gathered.
fn verdict(check: &CompactionCheck, calls: &[Call], answered: bool) -> Outcome {
    if check.claims_dropped > 0 {
        return failed(format!("the harness sent more than {MAX_CLAIMS} checkfu.compaction members in one turn"));
    }
    let compacted = check.recorded.iter().find(|r| r.tokens_after < r.tokens_before);
    if check.policy.is_none() {
        if let Some(claim) = check.claimed.first() {
            return failed(format!(
                "checkfu.runtime_config admitted no compaction policy, so the harness must not compact, and it claims a {} compaction of {} message(s)",
                claim.strategy.name(),
                claim.compacted_messages
            ));
        }
        if let Some(r) = compacted {
            return failed(format!(
                "checkfu.runtime_config admitted no compaction policy, so the harness must not compact, and after the context overflow of call {} ({} tokens, {} messages) it sent {} tokens in {} messages",
                r.call, r.tokens_before, r.messages_before, r.tokens_after, r.messages_after
            ));
        }
    }
    if let Some(first) = check.mismatches.first() {
        return failed(first);
    }
    if check.overflows == 0 {
        return Outcome::Skipped(format!(
            "no request reached the window of {} tokens (the largest the relay estimated was {}), and no compaction was claimed",
            check.window, check.largest_estimate
        ));
    }
    if check.policy.is_none() {
        return Outcome::Passed;
    }
    recovered(check, calls, answered)
}

/// Under an admitted policy: every overflow was followed by a smaller request, and the
/// turn's answer reached the output.
fn recovered(check: &CompactionCheck, calls: &[Call], answered: bool) -> Outcome {
    for (i, call) in calls.iter().enumerate().filter(|(_, c)| c.fault == Some(FaultKind::ContextOverflow)) {
        let Some(record) = check.recorded.iter().find(|r| r.call == i + 1) else {
            return failed(format!(
                "the harness gave up after the context overflow of call {} ({} tokens, past the window of {}): it made no model call after it in the turn",
                i + 1,
                call.estimated_tokens,
                check.window
            ));
        };
        if record.tokens_after >= record.tokens_before {
            return failed(format!(
                "the harness did not compact after the context overflow of call {}: the call after it was {} tokens in {} messages, not fewer than {} tokens in {}",
                i + 1,
                record.tokens_after,
                record.messages_after,
                record.tokens_before,
                record.messages_before
            ));
        }
    }
    if !answered {
        return failed(String::from("the harness compacted, but no reply token of the turn's answer reached its output"));
    }
    Outcome::Passed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::FaultKind::{ContextOverflow, RateLimit};

    fn call(turn: usize, fault: Option<FaultKind>, messages: usize, tokens: u64) -> Call {
        let mut call = crate::verdict::tests::served(turn, 0, fault, None);
        call.messages = messages;
        call.estimated_tokens = tokens;
        call
    }

    fn claim(compacted: u64, before: u64, after: u64) -> Claim {
        Claim { strategy: Strategy::TruncateOldest, tokens_before: before, tokens_after: after, compacted_messages: compacted }
    }

    fn claims(kept: Vec<Claim>, dropped: usize) -> Claims {
        Claims { kept, dropped }
    }

    fn policy() -> Option<Policy> {
        Some(Policy { strategy: Strategy::TruncateOldest, trigger_tokens: 500 })
    }

    /// A turn whose first request (17 messages, 900 tokens) overflowed a window of 500, and
    /// whose retry (5 messages, 300 tokens) was answered.
    fn compacted_turn() -> Vec<Call> {
        vec![call(1, Some(ContextOverflow), 17, 900), call(1, None, 5, 300)]
    }

    #[test]
    fn an_honest_compaction_passes_and_is_recorded() {
        let check = judge(500, policy(), claims(vec![claim(12, 880, 310)], 0), &compacted_turn(), true);
        assert_eq!(check.verdict, Outcome::Passed, "{:?}", check.mismatches);
        assert_eq!(
            check.recorded,
            vec![Recorded { call: 1, messages_before: 17, messages_after: 5, tokens_before: 900, tokens_after: 300 }]
        );
        // A compaction the harness does not claim is no failure: fidelity is fail-open.
        assert_eq!(judge(500, policy(), claims(vec![], 0), &compacted_turn(), true).verdict, Outcome::Passed);
    }

    #[test]
    fn each_lie_is_named_with_the_claim_and_the_record() {
        let count = judge(500, policy(), claims(vec![claim(13, 900, 300)], 0), &compacted_turn(), true);
        assert_eq!(
            count.verdict,
            failed("checkfu.compaction #1: compacted_messages claimed 13, recorded 12 (call 1 had 17 messages, the call after it 5)")
        );
        let tokens = judge(500, policy(), claims(vec![claim(12, 9000, 300)], 0), &compacted_turn(), true);
        let Outcome::Failed(reason) = tokens.verdict else { panic!("a lie passed") };
        let reason = reason.words();
        assert!(reason.starts_with("checkfu.compaction #1: tokens_before claimed 9000, recorded 900"), "{reason}");
        let unrecorded = judge(500, policy(), claims(vec![claim(12, 900, 300), claim(1, 300, 200)], 0), &compacted_turn(), true);
        let Outcome::Failed(reason) = unrecorded.verdict else { panic!("an unrecorded claim passed") };
        let reason = reason.words();
        assert!(reason.contains("#2 claims 1 message(s) compacted") && reason.contains("shows no compaction #2"), "{reason}");
        let strategy = Claim { strategy: Strategy::Summarize, ..claim(12, 900, 300) };
        assert_eq!(
            judge(500, policy(), claims(vec![strategy], 0), &compacted_turn(), true).mismatches,
            ["checkfu.compaction #1: strategy claimed summarize, admitted truncate_oldest"]
        );
    }

    #[test]
    fn the_tolerance_is_a_share_of_the_estimate_with_a_floor() {
        assert!(within_tolerance(1300, 1000) && within_tolerance(700, 1000));
        assert!(!within_tolerance(1301, 1000) && !within_tolerance(699, 1000));
        assert!(within_tolerance(42, 10) && !within_tolerance(43, 10));
    }

    #[test]
    fn under_a_policy_the_harness_must_compact_and_still_answer() {
        let gave_up = judge(500, policy(), claims(vec![], 0), &[call(1, Some(ContextOverflow), 17, 900)], false);
        let Outcome::Failed(reason) = gave_up.verdict else { panic!("giving up passed") };
        let reason = reason.words();
        assert!(reason.starts_with("the harness gave up after the context overflow of call 1 (900 tokens"), "{reason}");
        let same = [call(1, Some(ContextOverflow), 17, 900), call(1, Some(ContextOverflow), 17, 900)];
        let Outcome::Failed(reason) = judge(500, policy(), claims(vec![], 0), &same, false).verdict else {
            panic!("the same request passed")
        };
        let reason = reason.words();
        assert!(reason.starts_with("the harness did not compact after the context overflow of call 1"), "{reason}");
        let unanswered = judge(500, policy(), claims(vec![], 0), &compacted_turn(), false);
        assert_eq!(unanswered.verdict, failed("the harness compacted, but no reply token of the turn's answer reached its output"));
        // A retry in another turn is no compaction of this one.
        let elsewhere = [call(1, Some(ContextOverflow), 17, 900), call(2, None, 5, 300)];
        assert!(
            matches!(judge(500, policy(), claims(vec![], 0), &elsewhere, true).verdict, Outcome::Failed(r) if r.words().contains("gave up"))
        );
    }

    #[test]
    fn without_a_policy_the_harness_must_not_compact() {
        let compacted = judge(500, None, claims(vec![], 0), &compacted_turn(), true);
        let Outcome::Failed(reason) = compacted.verdict else { panic!("an unadmitted compaction passed") };
        let reason = reason.words();
        assert!(
            reason.contains(
                "must not compact, and after the context overflow of call 1 (900 tokens, 17 messages) it sent 300 tokens in 5 messages"
            ),
            "{reason}"
        );
        let claimed = judge(500, None, claims(vec![claim(12, 900, 300)], 0), &[call(1, None, 1, 10)], true);
        assert!(matches!(claimed.verdict, Outcome::Failed(r) if r.words().contains("claims a truncate_oldest compaction of 12")));
        // The overflow stood: the harness obeyed (the turn's failure is prompt_exchange's).
        assert_eq!(judge(500, None, claims(vec![], 0), &[call(1, Some(ContextOverflow), 17, 900)], false).verdict, Outcome::Passed);
    }

    #[test]
    fn nothing_past_the_window_and_nothing_claimed_is_a_skip() {
        let calls = [call(1, Some(RateLimit), 1, 40), call(1, None, 1, 40)];
        assert_eq!(
            judge(500, policy(), claims(vec![], 0), &calls, true).verdict,
            Outcome::Skipped(String::from(
                "no request reached the window of 500 tokens (the largest the relay estimated was 40), and no compaction was claimed"
            ))
        );
        assert!(
            matches!(judge(500, policy(), claims(vec![], 1), &calls, true).verdict, Outcome::Failed(r) if r.words().contains("more than 64"))
        );
    }

    #[test]
    fn claims_and_policies_are_read_fail_open() {
        let value = serde_json::json!({"strategy": "summarize", "tokens_before": 9, "tokens_after": 3, "compacted_messages": 2});
        assert_eq!(Claim::of(&value).map(|c| c.compacted_messages), Some(2));
        assert_eq!(Claim::of(&serde_json::json!({"strategy": "summarize", "tokens_before": -5})), None);
        let config = serde_json::json!({"context_window": 500, "compaction": {"strategy": "truncate_oldest", "trigger_tokens": 400}});
        assert_eq!(Policy::of(&config), Some(Policy { strategy: Strategy::TruncateOldest, trigger_tokens: 400 }));
        assert_eq!(Policy::of(&serde_json::json!({"context_window": 500})), None);
        let mut noted = Claims::default();
        let update = |meta: Value| serde_json::json!({"method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "_meta": meta}}});
        noted.note(&update(serde_json::json!({"checkfu.compaction": value})));
        noted.note(&update(serde_json::json!({"checkfu.compaction": {"strategy": 7}})));
        noted.note(&update(serde_json::json!({"checkfu.turn": {}})));
        assert_eq!((noted.kept.len(), noted.dropped), (1, 0));
    }
}
