//! The verdict both lanes give a turn from the relay's record: the governed model was asked
//! the prompt, and its answer, not the harness's, reached the output.
//!
//! A harness can always write the prompt's nonce itself (it was given it), so a nonce in
//! the output proves nothing. What it cannot write is the reply token the relay minted for
//! a call and put only in that call's answer. So a turn's exchange passes when:
//! - a call the relay served carried the nonce in its request's latest user turn (the
//!   prompt reached the model as the user's words: not in a system message, metadata or a
//!   tool definition, and read as JSON strings, escapes decoded);
//! - that call's reply token reached the normalized output.
//!
//! A failure names its deciding fact first; the relay's refusals are added as context only
//! where they can be its cause (no call served, or none carrying the nonce).

pub mod checkpoint;
pub mod compaction;
pub mod delegation;
pub mod in_flight;
pub mod platform;
pub mod scoping;
pub mod staged;
pub mod steer;
pub mod structured;

use serde::Serialize;
use serde_json::Value;

use crate::outcome::{Kind, Reason};
use crate::relay::{Call, FaultKind, Refusal, Relay};

/// One served call as the verdicts read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Served {
    pub nonce_in_request: bool,
    pub earlier_reply_in_request: bool,
    /// The reply token the call's answer carried.
    pub reply_token: Option<String>,
    /// The digest of the structured value it answered with ([`crate::relay::digest`]).
    pub structured_digest: Option<String>,
}

impl From<&Call> for Served {
    fn from(call: &Call) -> Served {
        Served {
            nonce_in_request: call.nonce_in_request,
            earlier_reply_in_request: call.earlier_reply_in_request,
            reply_token: call.reply_token.clone(),
            structured_digest: call.structured_digest.clone(),
        }
    }
}

/// Why an exchange failed: the deciding fact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Miss {
    /// The relay served no call in the turn.
    NoCall { echoed: bool },
    /// Calls were served, none with the nonce in its latest user turn.
    NoPrompt { served: usize, echoed: bool },
    /// The prompt reached the model, but no reply token of its answers reached the output.
    NoAnswer { tokens: Vec<String>, echoed: bool },
}

impl Miss {
    /// The kind of the deciding fact: the model was never asked (a refusal of the relay can
    /// be the cause), or its answer did not reach the output.
    pub fn kind(&self) -> Kind {
        match self {
            Miss::NoCall { .. } | Miss::NoPrompt { .. } => Kind::Unasked,
            Miss::NoAnswer { .. } => Kind::Unanswered,
        }
    }

    /// The miss as a step's reason.
    pub fn reason(&self, nonce: &str) -> Reason {
        Reason::new(self.kind(), self.describe(nonce))
    }

    /// The deciding fact in words, then whether the output echoes the nonce.
    pub fn describe(&self, nonce: &str) -> String {
        let (fact, echoed) = match self {
            Miss::NoCall { echoed } => (String::from("no call reached the model: the relay served none in this turn"), *echoed),
            Miss::NoPrompt { served, echoed } => {
                (format!("the prompt did not reach the model: none of the {served} call(s) the relay served carried the nonce {nonce} in its latest user turn"), *echoed)
            }
            Miss::NoAnswer { tokens, echoed } if tokens.is_empty() => (
                String::from("the model's answers to the prompt carried no reply token (a tool call only, or scripted replies without {reply_token})"),
                *echoed,
            ),
            Miss::NoAnswer { tokens, echoed } => (format!("no reply token of the model's answer ({}) reached the normalized output", tokens.join(", ")), *echoed),
        };
        if echoed {
            format!("{fact}; the output holds the prompt's nonce {nonce}, which the harness could write without the model (an echo of the prompt, or an error that quotes it)")
        } else {
            fact
        }
    }
}

/// The exchange of one turn: `Ok` with the reply token that reached the output, or the
/// deciding [`Miss`]. `reached` says whether a text is in the normalized output.
pub fn exchange(served: &[Served], nonce: &str, reached: &dyn Fn(&str) -> bool) -> Result<String, Miss> {
    let echoed = reached(nonce);
    if served.is_empty() {
        return Err(Miss::NoCall { echoed });
    }
    let prompted: Vec<&Served> = served.iter().filter(|c| c.nonce_in_request).collect();
    if prompted.is_empty() {
        return Err(Miss::NoPrompt { served: served.len(), echoed });
    }
    let tokens: Vec<String> = prompted.iter().filter_map(|c| c.reply_token.clone()).collect();
    match tokens.iter().find(|t| reached(t)) {
        Some(token) => Ok(token.clone()),
        None => Err(Miss::NoAnswer { tokens, echoed }),
    }
}

/// The refusals of a turn as context for a failure: how many, and the first.
pub fn refusal_context(count: usize, first: Option<&Refusal>) -> Option<String> {
    let first = first?;
    let more = if count > 1 { format!(" (and {} more)", count - 1) } else { String::new() };
    Some(format!("the relay refused during the turn: {} {}: {}{more}", first.status_text(), first.path, first.reason))
}

/// A failed step's reason, with the relay's refusals of `turn` named after it when they may
/// be its cause (its kind says): a harness whose calls were refused should be told which
/// ones, but a refusal beside a turn the model did answer is not why the turn failed.
pub fn with_refusals(reason: Reason, relay: &Relay, turn: usize) -> Reason {
    let (count, first) = relay.refusals(turn);
    match refusal_context(count, first.as_ref()).filter(|_| reason.kind.refusals_may_cause()) {
        Some(context) => reason.then(context),
        None => reason,
    }
}

/// The call that retried call `i`: the next call of the same turn that asked what call `i`
/// asked, if the harness made one. A retry sends the same request again, so it carries the
/// prompt in its latest user turn exactly when call `i` did: a call of the turn that does not
/// (a side call, or a request to go on from where a cut answer stopped, as Qwen Code 0.24.4
/// sends after a stream cut: "The connection dropped mid-response. Resume directly …", the cut
/// text as the assistant's) is no retry of it: the record keeps no bodies to tell a faithful
/// continuation from a side call. `recovery` and `telemetry` count a retry by this one rule.
fn retried_by(calls: &[Call], i: usize) -> Option<usize> {
    let failed = &calls[i];
    (i + 1..calls.len()).find(|&j| calls[j].turn == failed.turn && calls[j].nonce_in_request == failed.nonce_in_request)
}

/// How much earlier than its `retry-after` a retry may start and still count as having
/// waited: the record's clock has whole milliseconds.
const RETRY_AFTER_SLACK_MS: u64 = 10;

/// Why `model_recovery` failed: the fault the harness did not survive, in words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoRecovery {
    #[error("the script failed no call: the harness made {calls} model call(s), none of them one the script fails")]
    NoFault { calls: usize },
    #[error("the harness gave up on the {fault} of call {call} ({status}): it made no model call after it in that turn")]
    GaveUp { fault: &'static str, call: usize, status: String },
    #[error(
        "the harness did not retry the {fault} of call {call} ({status}): none of the {after} model call(s) after it in that turn {asked}"
    )]
    NotRetried { fault: &'static str, call: usize, status: String, after: usize, asked: &'static str },
    #[error("the harness retried the rate limit of call {call} after {waited} ms, before its retry-after of {seconds} s had passed")]
    Early { call: usize, waited: u64, seconds: u32 },
    #[error("no reply token of the turn's answer reached the output, and no call of that turn met a fault")]
    UnansweredWithoutFault,
    #[error("the harness retried {what} with call {retry}{answer}, but no reply token of the turn's answer reached its output")]
    AnswerLost { what: String, retry: usize, answer: String },
    #[error(
        "the harness did not recover from {what}: no later call of that turn asked it again, and no reply token of the turn's answer reached its output"
    )]
    NotRecovered { what: String },
}

/// `model_recovery`, under a script that fails calls: every transient fault (a rate limit,
/// an overload, a server error, a stream cut) was retried, a later call of the same turn
/// asking again what it asked ([`retried_by`]), and a rate limit not before its
/// `retry-after` had passed; and the turn's answer still reached the output (`answered`: a
/// reply token did). `calls` are the record's, in the order they arrived. The failure names
/// the fault the harness did not survive.
pub fn recovery(calls: &[Call], answered: bool) -> Result<(), NoRecovery> {
    if !calls.iter().any(|c| c.fault.is_some()) {
        return Err(NoRecovery::NoFault { calls: calls.len() });
    }
    for (i, call) in calls.iter().enumerate() {
        let Some(fault) = call.fault.filter(|f| f.transient()) else { continue };
        let status = call.status.map_or_else(|| String::from("no status"), |s| format!("status {s}"));
        let Some(retry) = retried_by(calls, i).map(|j| &calls[j]) else {
            let after = calls[i + 1..].iter().filter(|c| c.turn == call.turn).count();
            let (fault, number) = (fault.name(), i + 1);
            if after == 0 {
                return Err(NoRecovery::GaveUp { fault, call: number, status });
            }
            let asked = if call.nonce_in_request {
                "carried the prompt again (a side call, or a request to go on from a cut answer, is no retry)"
            } else {
                "was a side call like it"
            };
            return Err(NoRecovery::NotRetried { fault, call: number, status, after, asked });
        };
        if let Some(seconds) = call.retry_after {
            let waited = retry.started_ms.saturating_sub(call.started_ms);
            if waited + RETRY_AFTER_SLACK_MS < u64::from(seconds) * 1000 {
                return Err(NoRecovery::Early { call: i + 1, waited, seconds });
            }
        }
    }
    if !answered {
        return Err(unanswered(calls));
    }
    Ok(())
}

/// Why a run whose transient faults were all retried still failed its recovery: no reply
/// token of the first turn's answer (the one `answered` is about) reached the output. Names
/// the last fault served in that turn and what the harness did after it, since that is the
/// one it did not get past: a context overflow is not retried by a harness that cannot
/// shorten its request, and a retried fault can still lose its answer on the way out.
fn unanswered(calls: &[Call]) -> NoRecovery {
    let first = calls.first().map_or(1, |c| c.turn);
    let last = calls.iter().enumerate().rev().find_map(|(i, c)| c.fault.filter(|_| c.turn == first).map(|f| (i, f)));
    let Some((i, fault)) = last else {
        return NoRecovery::UnansweredWithoutFault;
    };
    let status = calls[i].status.map_or_else(|| String::from("no status"), |s| format!("status {s}"));
    let what = format!("the {} of call {} ({status})", fault.name(), i + 1);
    match retried_by(calls, i) {
        Some(j) => {
            let answer = calls[j].reply_token.as_deref().map_or_else(String::new, |t| format!(", answered with {t}"));
            NoRecovery::AnswerLost { what, retry: j + 1, answer }
        }
        None => NoRecovery::NotRecovered { what },
    }
}

/// The harness's `checkfu.turn` (`claim`) set against the record of its turn (`calls`:
/// the calls the relay served in it) and the turn's `turn_ms` as the probe saw it: each
/// counter the claim holds must be the record's (`model_calls`, `model_transient_retries`,
/// `model_overflow_recoveries`), and its `wall_time_ms` must fit inside the turn.
/// `dropped` is the decoder's reason when it dropped the claim under the fail-open rule: the
/// platform then reads no telemetry for the turn, which the author must hear, and a lie in
/// a malformed claim must not pass for want of a number to compare.
pub fn telemetry(claim: Value, turn_ms: u64, calls: &[Call], dropped: Option<&str>) -> TurnTelemetry {
    let followed = |kind: fn(FaultKind) -> bool| {
        (0..calls.len()).filter(|&i| calls[i].fault.is_some_and(kind) && retried_by(calls, i).is_some()).count() as u64
    };
    let recorded = RecordedTurn {
        model_calls: calls.len() as u64,
        model_transient_retries: followed(FaultKind::transient),
        model_overflow_recoveries: followed(|f| f == FaultKind::ContextOverflow),
        turn_ms,
    };
    let mut mismatches = Vec::new();
    if let Some(why) = dropped {
        mismatches.push(format!("dropped by the platform's fail-open rule ({why}): it reads no telemetry for this turn"));
    }
    for (counter, value) in [
        ("model_calls", recorded.model_calls),
        ("model_transient_retries", recorded.model_transient_retries),
        ("model_overflow_recoveries", recorded.model_overflow_recoveries),
    ] {
        if let Some(claimed) = claim.get(counter).and_then(Value::as_u64).filter(|c| *c != value) {
            mismatches.push(format!("{counter} claimed {claimed}, recorded {value}"));
        }
    }
    if let Some(wall) = claim.get("wall_time_ms").and_then(Value::as_u64).filter(|w| *w > turn_ms) {
        mismatches.push(format!("wall_time_ms claimed {wall}, longer than the turn's {turn_ms} ms from the prompt to its answer"));
    }
    TurnTelemetry { claimed: claim, recorded, mismatches }
}

/// What a harness said of its turn (`checkfu.turn`) and what the relay's record shows.
#[derive(Clone, Debug, Serialize)]
pub struct TurnTelemetry {
    /// The `checkfu.turn` member as the harness sent it.
    pub claimed: Value,
    /// The same counters from the record of the turn.
    pub recorded: RecordedTurn,
    /// Each counter the claim gets wrong: its name, the claimed and the recorded value. Each
    /// fails the run.
    pub mismatches: Vec<String>,
}

/// A turn's counters as the relay's record shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RecordedTurn {
    /// The calls the relay served in the turn, faults included.
    pub model_calls: u64,
    /// The transient faults a later call of the turn retried (asking again what the failed call
    /// asked: `verdict::retried_by`).
    pub model_transient_retries: u64,
    /// The context overflows a later call of the turn followed, by the same rule.
    pub model_overflow_recoveries: u64,
    /// The milliseconds from the prompt's sending to its answer: the most `wall_time_ms`
    /// can be.
    pub turn_ms: u64,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const NONCE: &str = "cf-0000000000000001";
    const TOKEN: &str = "cfr-00000000000000aa";

    fn call(nonce: bool, token: Option<&str>) -> Served {
        Served { nonce_in_request: nonce, reply_token: token.map(str::to_owned), ..Served::default() }
    }

    #[test]
    fn only_the_answer_to_the_prompt_passes() {
        let output = format!("The nonce is {NONCE}. The reply token is {TOKEN}.");
        let reached = |t: &str| output.contains(t);
        assert_eq!(exchange(&[call(true, Some(TOKEN))], NONCE, &reached), Ok(TOKEN.to_owned()));
        // The token of a call that did not carry the prompt (a decoy, a side call) proves nothing.
        assert_eq!(exchange(&[call(false, Some(TOKEN))], NONCE, &reached), Err(Miss::NoPrompt { served: 1, echoed: true }));
        assert_eq!(exchange(&[], NONCE, &reached), Err(Miss::NoCall { echoed: true }));
        // An echo of the prompt: the nonce is there, the token is not.
        let echo = format!("You asked: reply with the nonce {NONCE}");
        let echoed = |t: &str| echo.contains(t);
        let miss = exchange(&[call(true, Some(TOKEN))], NONCE, &echoed).unwrap_err();
        assert_eq!(miss, Miss::NoAnswer { tokens: vec![TOKEN.to_owned()], echoed: true });
        assert!(miss.describe(NONCE).starts_with("no reply token of the model's answer"), "{}", miss.describe(NONCE));
        assert!(!miss.kind().refusals_may_cause());
    }

    pub(crate) fn served(turn: usize, started_ms: u64, fault: Option<crate::relay::FaultKind>, retry_after: Option<u32>) -> Call {
        Call {
            dialect: checkfu_wire::catalog::Dialect::OpenaiChat,
            path: String::from("/v1/chat/completions"),
            model: String::from("m"),
            stream: false,
            status: Some(if fault.is_some() { 429 } else { 200 }),
            closed: None,
            started_ms,
            ms: 1,
            nonce_in_request: true,
            turn,
            earlier_reply_in_request: false,
            steer_in_request: false,
            reply_token: None,
            fault,
            retry_after,
            events_sent: None,
            paced: None,
            structured_output: None,
            structured_digest: None,
            schema_exact: None,
            structured_broken: false,
            nonce_anywhere: true,
            tool_called: None,
            token_returned: false,
            bodies: None,
            estimated_tokens: 10,
            messages: 1,
            scoping: None,
            marks_in_request: Vec::new(),
            platform: None,
        }
    }

    #[test]
    fn recovery_asks_a_later_call_in_the_turn_and_a_wait_for_a_rate_limit() {
        use crate::relay::FaultKind::{ContextOverflow, RateLimit, ServerError};
        let waited = [served(1, 0, Some(RateLimit), Some(1)), served(1, 1000, None, None)];
        assert_eq!(recovery(&waited, true), Ok(()));
        assert!(recovery(&waited, false).expect_err("no answer").to_string().contains("no reply token"));
        let early = [served(1, 0, Some(RateLimit), Some(1)), served(1, 400, None, None)];
        assert!(recovery(&early, true).expect_err("early").to_string().contains("after 400 ms, before its retry-after of 1 s"));
        // A call in another turn is no retry of this one.
        let elsewhere = [served(1, 0, Some(ServerError), None), served(2, 5000, None, None)];
        assert!(recovery(&elsewhere, true).expect_err("gave up").to_string().contains("gave up on the server_error of call 1"));
        // An overflow is not transient: nothing asks for its retry.
        assert_eq!(recovery(&[served(1, 0, Some(ContextOverflow), None)], true), Ok(()));
        assert!(recovery(&[served(1, 0, None, None)], true).expect_err("no fault").to_string().contains("failed no call"));
    }

    /// A call that does not ask again what the failed call asked is no retry of it. Seen on
    /// Qwen Code 0.24.4: after a stream cut it asked the model to go on from the cut text,
    /// then made a side call (its memory), neither carrying the prompt.
    #[test]
    fn a_retry_asks_again_what_the_failed_call_asked() {
        use crate::relay::FaultKind::{RateLimit, StreamCut};
        let without_prompt = |started_ms| Call { nonce_in_request: false, ..served(1, started_ms, None, None) };
        let continued = [served(1, 0, Some(StreamCut), None), without_prompt(900), without_prompt(1200)];
        let reason = recovery(&continued, false).expect_err("not retried").to_string();
        assert!(
            reason.contains("did not retry the stream_cut of call 1")
                && reason.contains("none of the 2 model call(s) after it in that turn carried the prompt again"),
            "{reason}"
        );
        assert_eq!(telemetry(serde_json::json!({}), 5000, &continued, None).recorded.model_transient_retries, 0);
        // The same calls with the prompt asked again: a retry, counted as one.
        let retried = [served(1, 0, Some(StreamCut), None), without_prompt(900), served(1, 1200, None, None)];
        assert_eq!(recovery(&retried, true), Ok(()));
        assert_eq!(telemetry(serde_json::json!({}), 5000, &retried, None).recorded.model_transient_retries, 1);
        // A side call's fault is retried by a side call, not by the turn's own call.
        let side = [Call { nonce_in_request: false, ..served(1, 0, Some(RateLimit), Some(1)) }, served(1, 2000, None, None)];
        assert!(recovery(&side, true)
            .expect_err("side call dropped")
            .to_string()
            .contains("none of the 1 model call(s) after it in that turn was a side call like it"));
    }

    #[test]
    fn an_unanswered_turn_names_its_last_fault_and_what_followed() {
        use crate::relay::FaultKind::{ContextOverflow, RateLimit, StreamCut};
        // An overflow the harness did not shorten and send again.
        let overflow = [served(1, 0, Some(ContextOverflow), None)];
        let reason = recovery(&overflow, false).expect_err("unanswered").to_string();
        assert!(
            reason.starts_with("the harness did not recover from the context_overflow of call 1") && reason.contains("no later call"),
            "{reason}"
        );
        // A stream cut retried and answered, whose answer never reached the output (seen on
        // claude-agent-acp 0.23.1, whose non-streamed retry's text it did not pass on).
        let answer = Call { reply_token: Some(TOKEN.to_owned()), ..served(1, 100, None, None) };
        let lost = [served(1, 0, Some(StreamCut), None), answer];
        let reason = recovery(&lost, false).expect_err("unanswered").to_string();
        assert!(
            reason.contains(&format!("retried the stream_cut of call 1 (status 429) with call 2, answered with {TOKEN}, but")),
            "{reason}"
        );
        // The turn in question is the first: a later turn's fault is not named.
        let later = [served(1, 0, None, None), served(2, 10, Some(RateLimit), Some(1)), served(2, 1010, None, None)];
        assert!(recovery(&later, false).expect_err("unanswered").to_string().contains("no call of that turn met a fault"));
    }
}
