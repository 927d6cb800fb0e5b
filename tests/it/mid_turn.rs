//! The probe acts on turns mid-flight and judges what the agent did by the relay's record:
//! the `cancellation` step (ACP's `session/cancel` during a paced model answer, on every ACP
//! run), the truncation-safe drain (a declared cooperative interrupt during one, with
//! `--interrupt`) and the steer proven by the model (its content in a later request). The
//! fixture agent passes all three; each hostile twin fails, named for what it did: ignoring
//! the cancel, calling the model after it, cutting a drained answer off, calling the model
//! after the drain, acknowledging a steer it never passes on. The real agents' cancellation
//! is held in `real_agents.rs`, the TypeScript SDK agent's (and its queued steer) in
//! `probe.rs`.

use serde_json::Value;

use crate::probe_support::{self, Run, AGENT};

fn probe(options: &[&str], switches: &[&str]) -> Run {
    let mut harness = vec![AGENT];
    harness.extend_from_slice(switches);
    let mut options = options.to_vec();
    options.extend(["--step-timeout", "20"]);
    probe_support::probe(&options, &harness)
}

/// The calls of one turn of the run, as the record has them (the cancelled turn is the
/// third: after the prompt's and the `platform_tool` step's, since the fixture declares none of
/// the mechanisms whose steps add turns of their own).
fn calls_of(run: &Run, turn: u64) -> Vec<Value> {
    let calls = run.plane()["calls"].as_array().cloned().unwrap_or_default();
    calls.into_iter().filter(|c| c["turn"] == turn).collect()
}

fn cancelled_turn(run: &Run) -> Vec<Value> {
    calls_of(run, 3)
}

#[test]
fn an_agent_that_stops_its_model_call_passes_cancellation_and_the_record_shows_the_stream_closed() {
    let run = probe(&[], &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.step("cancellation"), ("passed", ""));
    let facts = &run.json["cancellation"];
    // The fixture agent does not stream: the cancel went out while its call was held.
    assert_eq!(facts["trigger"], "call_in_flight", "{facts}");
    assert_eq!(facts["stop_reason"], "cancelled");
    assert!(facts["settle_ms"].as_u64().is_some_and(|ms| ms < 5000), "{facts}");
    assert_eq!((facts["calls_after_cancel"].as_u64(), facts["streams_open"].as_u64()), (Some(0), Some(0)));
    let calls = cancelled_turn(&run);
    assert_eq!(calls.len(), 1, "{calls:?}");
    let paced = &calls[0]["paced"];
    assert_eq!(paced["ended"], "closed", "the agent closed the held answer: {paced}");
    assert_eq!(paced["events_sent"], 0, "{paced}");
    // The checks judge the first turn only: the second adds nothing to the trace.
    assert_eq!(run.check("terminal_observation"), "pass");
}

#[test]
fn an_agent_that_ignores_the_cancel_fails_and_its_model_answer_is_still_in_flight() {
    let run = probe(&[], &["--ignore-cancel"]);
    assert_eq!(run.status, 1, "{}", run.pretty());
    let (status, reason) = run.step("cancellation");
    assert_eq!(status, "failed");
    assert!(reason.contains("not answered") && reason.contains("still in flight"), "{reason}");
    assert_eq!(run.json["cancellation"]["settle_ms"], Value::Null);
    assert_eq!(run.json["cancellation"]["streams_open"], 1);
    // Only the cancellation failed: the first turn is judged as before.
    assert_eq!(run.step("prompt_exchange").0, "passed");
}

#[test]
fn an_agent_that_calls_the_model_after_the_cancel_fails_naming_the_call() {
    let run = probe(&[], &["--call-after-cancel"]);
    assert_eq!(run.status, 1, "{}", run.pretty());
    let (status, reason) = run.step("cancellation");
    assert_eq!(status, "failed");
    assert!(reason.starts_with("a model call started ") && reason.ends_with(" ms after the cancel"), "{reason}");
    assert_eq!(run.json["cancellation"]["calls_after_cancel"], 1);
    let calls = cancelled_turn(&run);
    assert_eq!(calls.len(), 2, "the held call and the one after the cancel: {calls:?}");
}

#[test]
fn a_permission_request_after_the_cancel_is_answered_cancelled() {
    let run = probe(&[], &["--ask-after-cancel"]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["cancellation"]["permissions_cancelled"], 1);
    let requests = run.json["client_requests"].as_array().cloned().unwrap_or_default();
    let last = requests.last().expect("the late request");
    assert_eq!((last["method"].as_str(), last["detail"].as_str()), (Some("session/request_permission"), Some("cancelled")), "{requests:?}");
    // Before the cancel, the same agent's permission request was granted by the policy.
    assert_eq!(requests[0]["detail"], "selected option \"allow\"");
}

#[test]
fn no_cancellation_skips_the_step_and_its_turn() {
    let run = probe(&["--no-cancellation"], &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.step("cancellation"), ("skipped", "--no-cancellation was given"));
    assert!(cancelled_turn(&run).is_empty());
    assert!(!calls_of(&run, 2).is_empty(), "the platform tool's turn: {}", run.pretty());
    assert_eq!(run.json["cancellation"], Value::Null);
}

#[test]
fn a_drain_that_lets_the_answer_finish_passes_and_one_that_cuts_it_off_fails() {
    let honest = probe(&["--interrupt"], &[]);
    assert_eq!(honest.status, 0, "{}", honest.pretty());
    assert_eq!(honest.check("cooperative_interrupt_drained"), "pass");
    assert_eq!(honest.json["drain"]["trigger"], "call_in_flight");
    // The steer went first and was delivered, so the drain waited for the request that
    // carried it, and let that answer run to its end.
    let first = calls_of(&honest, 1);
    assert_eq!(first.len(), 2, "{first:?}");
    let paced = &first[1]["paced"];
    assert_eq!(first[1]["steer_in_request"], true, "{first:?}");
    assert_eq!((paced["ended"].as_str(), &paced["events_sent"]), (Some("finished"), &paced["events"]), "{paced}");

    let cut = probe(&["--interrupt"], &["--truncate-drain"]);
    assert_eq!(cut.status, 1);
    assert_eq!(cut.check("cooperative_interrupt_drained"), "fail");
    let reason = cut.check_reason("cooperative_interrupt_drained");
    assert!(reason.contains("closed the model's stream after 0 of its 1 events") && reason.contains("cut the answer off"), "{reason}");
    // The trace alone would pass it: the harness acknowledged `draining` and ended its turn.
    assert!(cut.json["admission"]["realized"]["interrupt"] != "cooperative", "a failed drain realizes nothing: {}", cut.pretty());
}

#[test]
fn a_drain_followed_by_another_model_call_fails_naming_it() {
    let run = probe(&["--interrupt"], &["--call-after-drain"]);
    assert_eq!(run.status, 1, "{}", run.pretty());
    assert_eq!(run.check("cooperative_interrupt_drained"), "fail");
    let reason = run.check_reason("cooperative_interrupt_drained");
    assert!(reason.starts_with("a model call started ") && reason.ends_with("after the drain was acknowledged"), "{reason}");
}

#[test]
fn a_delivered_steer_passes_only_when_a_later_request_of_the_turn_carries_it() {
    // Without `subagents`, whose own model call would follow the two this test reads.
    let run = probe(&["--no-cancellation"], &["--declare", "steer,interrupt"]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.check("steering_delivered"), "pass");
    let first = calls_of(&run, 1);
    // The prompt's call, then the one the agent made with the steer as the user's words.
    let carried: Vec<bool> = first.iter().map(|c| c["steer_in_request"] == true).collect();
    assert_eq!(carried, [false, true], "{first:?}");

    let dropped = probe(&["--no-cancellation"], &["--drop-steer"]);
    assert_eq!(dropped.status, 1, "{}", dropped.pretty());
    assert_eq!(dropped.check("steering_delivered"), "fail");
    assert_eq!(
        dropped.check_reason("steering_delivered"),
        "the steer was acknowledged `delivered`, but no later model request of the turn carried it"
    );
    // Acknowledged, so the trace alone would pass it; the record says it never reached the model.
    assert_eq!(dropped.check("steering_correlation"), "pass");
    assert_eq!(dropped.json["admission"]["realized"]["mid_run_input"], "unsupported");
}
