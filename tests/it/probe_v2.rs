//! `checkfu-wire probe` and ACP v2 (issue 54): the fixture agent's v2 mode
//! (`tests/fixture-agent/v2.rs`) passes the v2 run, proven by the relay's record; each of its
//! hostile twins fails naming what it broke; the v1 fixture asked for 2 negotiates down and is
//! judged as v1; the v2 fixture asked for 1 answers `-32022` and is asked again in 2.

use serde_json::Value;

use crate::probe_support::{self, Run, AGENT};

fn probe(options: &[&str], switches: &[&str]) -> Run {
    let mut options = options.to_vec();
    options.extend(["--step-timeout", "10"]);
    let mut harness = vec![AGENT];
    harness.extend_from_slice(switches);
    probe_support::probe(&options, &harness)
}

fn v2(switches: &[&'static str]) -> Vec<&'static str> {
    let mut all = vec!["--acp-version", "2"];
    all.extend_from_slice(switches);
    all
}

/// The relay's record of the first turn: a call was served, its latest user turn held the
/// nonce, and its reply token reached the normalized output.
fn governed_turn_recorded(run: &Run) {
    let plane = run.plane();
    let calls = plane["calls"].as_array().cloned().unwrap_or_default();
    let first: Vec<&Value> = calls.iter().filter(|c| c["turn"] == 1).collect();
    assert!(!first.is_empty(), "no call of the first turn in the relay's record: {}", run.pretty());
    assert_eq!(plane["nonce_in_output"], true, "{}", run.pretty());
    let reply = plane["reply_in_output"].as_str().unwrap_or_default();
    assert!(!reply.is_empty() && first.iter().any(|c| c["reply_token"] == reply), "{}", run.pretty());
}

#[test]
fn the_honest_v2_agent_passes_the_v2_run() {
    let run = probe(&["--acp-version", "2"], &v2(&[]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["acp_version"], 2);
    assert_eq!(run.json["negotiation"]["asked"], 2);
    for step in ["initialize_handshake", "session_start", "prompt_exchange", "cancellation", "teardown"] {
        assert_eq!(run.step(step).0, "passed", "{step}: {}", run.pretty());
    }
    assert_eq!(run.check("terminal_observation"), "pass", "{}", run.pretty());
    assert_eq!(run.json["harness"]["agent_info"]["name"], "checkfu-fixture-agent");
    governed_turn_recorded(&run);
    // The cancelled turn ended idle `cancelled`, and no call started after the cancel.
    assert_eq!(run.json["cancellation"]["stop_reason"], "cancelled", "{}", run.pretty());
    assert_eq!(run.json["cancellation"]["calls_after_cancel"], 0);
}

#[test]
fn the_v2_agent_asked_for_1_answers_32022_and_runs_as_v2() {
    let run = probe(&[], &v2(&[]));
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["acp_version"], 2);
    assert_eq!(run.json["negotiation"]["asked"], 1);
    assert_eq!(run.json["negotiation"]["supported"], serde_json::json!([2]));
    assert_eq!(run.step("prompt_exchange").0, "passed", "{}", run.pretty());
    governed_turn_recorded(&run);
}

#[test]
fn the_v1_agent_asked_for_2_negotiates_down_and_passes_as_v1() {
    let run = probe(&["--acp-version", "2"], &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["acp_version"], 1);
    assert_eq!(run.json["negotiation"]["asked"], 2);
    assert_eq!(run.step("prompt_exchange").0, "passed", "{}", run.pretty());
    assert_eq!(run.step("cancellation").0, "passed", "{}", run.pretty());
    governed_turn_recorded(&run);
}

/// Each twin fails the run, the step that judges what it broke naming it.
#[test]
fn each_hostile_v2_twin_fails_naming_what_it_broke() {
    let cases: [(&str, &str, &str); 6] = [
        ("--no-receipt-id", "prompt_exchange", "messageId"),
        ("--boolean-capability", "initialize_handshake", "boolean"),
        ("--unprefixed-update", "prompt_exchange", "scratchpad"),
        ("--idle-without-running", "prompt_exchange", "running"),
        ("--v1-answer", "prompt_exchange", "state_update"),
        ("--never-cancelled", "cancellation", "cancelled"),
    ];
    for (twin, step, keyword) in cases {
        let run = probe(&["--acp-version", "2"], &v2(&[twin]));
        assert_eq!(run.status, 1, "{twin}: {}", run.pretty());
        let (status, reason) = run.step(step);
        assert_eq!(status, "failed", "{twin}: {}", run.pretty());
        assert!(reason.contains(keyword), "{twin}: `{reason}` does not name `{keyword}`");
    }
}
