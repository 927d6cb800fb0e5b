//! The ACP v2 reference agent (`tests/fixture-agent/ts/agent-v2.mjs`, written with the official
//! TypeScript SDK's v2 API) and its hostile twins, installed beside `agent.mjs` by
//! `tests/fixture-agent/ts/install.sh` (so found from `CHECKFU_TS_AGENT`'s directory).
//!
//! Two ways of looking at them. Without the probe: `drive-v2.mjs`, a raw JSON-RPC client of
//! Node's standard library, runs one honest session against a stand-in model and records its
//! wire, which `checkfu-wire decode --protocol acp-v2` reads; the honest wire decodes cleanly,
//! and each twin's wire shows its fault where a decoder can see one (two faults are of order
//! only, and are read from the recorded wire here). With the probe (`--acp-version 2`, and the
//! default's retry after the SDK's -32022): the honest agent passes on the relay's record, every
//! mechanism step it declares included, and each twin (v2's own, and agent.mjs's over-declaring
//! ones) fails naming what it broke.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::probe_support::{self, Run, PROBE};

const NEEDS_TS_AGENT: &str = "CHECKFU_TS_AGENT was set when the tests were built, and is not now";
/// The recording client, run from the repository (it needs nothing installed).
const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixture-agent/ts/drive-v2.mjs");
/// The reply token drive-v2.mjs's stand-in model answers with.
const STAND_IN_REPLY: &str = "reply-token-7f3a";

/// `agent-v2.mjs`, beside the `agent.mjs` that `CHECKFU_TS_AGENT` names.
fn agent_v2() -> String {
    let v1 = PathBuf::from(std::env::var("CHECKFU_TS_AGENT").expect(NEEDS_TS_AGENT));
    let path = v1.with_file_name("agent-v2.mjs");
    assert!(path.is_file(), "{} is missing: rerun tests/fixture-agent/ts/install.sh", path.display());
    path.to_string_lossy().into_owned()
}

/// One recorded session of the agent (with `flag`, a twin): the client's summary, the
/// recorded messages, and what `decode --protocol acp-v2` said of each.
struct Drive {
    summary: Value,
    wire: Vec<Value>,
    decoded: Vec<Value>,
    decode: Output,
}

impl Drive {
    fn run(flag: Option<&str>) -> Drive {
        let dir = tempfile::Builder::new().prefix("checkfu-ts-v2-").tempdir().expect("dir");
        let capture = dir.path().join("capture.jsonl");
        let driven = Command::new("node").arg(DRIVER).arg(agent_v2()).arg(&capture).args(flag).output().expect("node runs");
        assert!(driven.status.success(), "drive-v2.mjs {flag:?}: {}", String::from_utf8_lossy(&driven.stderr));
        let summary: Value = serde_json::from_slice(&driven.stdout).expect("the client's summary is JSON");
        let text = std::fs::read_to_string(&capture).expect("the capture");
        let wire = text.lines().map(|l| serde_json::from_str::<Value>(l).expect("a capture line")).collect();
        let decode = Command::new(PROBE).args(["decode", "--protocol", "acp-v2"]).arg(&capture).output().expect("decode");
        let decoded = String::from_utf8_lossy(&decode.stdout).lines().map(|l| serde_json::from_str(l).expect("a report")).collect();
        Drive { summary, wire, decoded, decode }
    }

    fn explain(&self) -> String {
        let decoded: Vec<String> = self.decoded.iter().map(Value::to_string).collect();
        format!("{}\n{}\n{}", self.summary, decoded.join("\n"), String::from_utf8_lossy(&self.decode.stderr))
    }

    /// The decoder's reports of the lines it refused.
    fn refused(&self) -> Vec<&Value> {
        self.decoded.iter().filter(|r| r["accepted"] != true).collect()
    }

    /// The agent's session/update bodies, in wire order.
    fn updates(&self) -> Vec<&Value> {
        self.wire
            .iter()
            .filter(|r| r["direction"] == "agent_to_client" && r["message"]["method"] == "session/update")
            .map(|r| &r["message"]["params"]["update"])
            .collect()
    }
}

/// The honest agent's session decodes as v2 with no refusal and no diagnostic, and is the v2
/// turn: receipt and echo under one `messageId`, `running` before the echo, the model's answer
/// as keyed agent-message upserts, the worker subagent's updates attributed by
/// `checkfu.subagent`, an idle with `end_turn`, a cancel confirmed by an idle with
/// `cancelled`, the baseline's list / resume (replayed under the same ids) / close, and a v1
/// `initialize` refused with -32022 naming version 2.
#[test]
#[cfg_attr(
    not(checkfu_ts_agent),
    ignore = "CHECKFU_TS_AGENT is not set: run tests/fixture-agent/ts/install.sh DIR and set it to DIR/agent.mjs"
)]
fn the_v2_reference_agents_wire_decodes_cleanly_as_acp_v2() {
    let honest = Drive::run(None);
    assert_eq!(honest.decode.status.code(), Some(0), "{}", honest.explain());
    assert_eq!(honest.decoded.len(), honest.wire.len(), "{}", honest.explain());
    // No diagnostic: the idle that ends a turn carries `checkfu.turn` in its `_meta`, v2's
    // carrier for that slot (`carrier_v2`), where the decoder decodes it.
    let noted: Vec<(&Value, &Value)> =
        honest.decoded.iter().flat_map(|r| r["diagnostics"].as_array().into_iter().flatten().map(move |d| (&r["line"], d))).collect();
    assert!(noted.is_empty(), "{noted:?}");
    let turns = honest.decoded.iter().flat_map(|r| r["slots"].as_array().into_iter().flatten()).filter(|s| s["key"] == "checkfu.turn");
    assert!(turns.clone().count() > 0 && turns.clone().all(|s| s["status"] == "decoded"), "{}", honest.explain());

    let s = &honest.summary;
    assert_eq!(s["initialize"]["protocolVersion"], 2);
    assert_eq!(s["initialize"]["info"]["name"], "checkfu-probe-ts-agent-v2");
    assert_eq!(s["initialize"]["capabilities"], json!({"session": {"prompt": {"embeddedContext": {}}, "mcp": {"stdio": {}}}}));
    let receipt = s["turn"]["result"]["messageId"].as_str().expect("a receipt with a messageId");
    assert_eq!(s["turn"]["idle"]["stopReason"], "end_turn", "{}", honest.explain());
    // The parent's call and its worker subagent's own.
    assert_eq!(s["turn"]["idle"]["_meta"]["checkfu.turn"]["model_calls"], 2);
    assert_eq!(s["cancelled"]["idle"]["stopReason"], "cancelled", "{}", honest.explain());
    assert_eq!(s["v1Initialize"]["code"], -32022);
    assert_eq!(s["v1Initialize"]["data"]["supported"], json!([2]));
    assert_eq!(s["modelCalls"], 3, "two in the first turn (the worker's own too), the cancelled one held at the model");

    // The first turn on the wire: running, the echo under the receipt's id, the answer (its
    // chunk carrying the checkpoint), the worker subagent's attributed updates, idle.
    let updates = honest.updates();
    let kinds: Vec<&str> = updates.iter().take(10).map(|u| u["sessionUpdate"].as_str().unwrap_or("?")).collect();
    let worker = ["session_info_update", "tool_call_update", "agent_message_chunk", "tool_call_update", "session_info_update"];
    assert_eq!(kinds, [&["state_update", "user_message", "agent_message_chunk", "agent_message"][..], &worker, &["state_update"]].concat());
    assert!(updates[2]["_meta"]["checkfu.journal_checkpoint"].is_object(), "{}", honest.explain());
    assert!(updates[4..9].iter().all(|u| u["_meta"]["checkfu.subagent"].is_object()), "{}", honest.explain());
    assert_eq!(updates[0]["state"], "running");
    assert_eq!(updates[1]["messageId"], receipt);
    assert_eq!(updates[2]["messageId"], updates[3]["messageId"], "the chunk and the whole message are one keyed message");
    assert!(updates[3]["content"][0]["text"].as_str().is_some_and(|t| t.contains(STAND_IN_REPLY)), "the model's answer is shown");
    // session/resume replays the two user messages and the answer under the ids they had.
    let replayed: Vec<&Value> = updates.iter().rev().take(3).rev().map(|u| &u["messageId"]).collect();
    assert_eq!(replayed, [&json!(receipt), &updates[3]["messageId"], &s["cancelled"]["result"]["messageId"]]);
    assert_eq!(s["list"]["sessions"].as_array().map(Vec::len), Some(1));
    assert_eq!((&s["resume"], &s["close"]), (&json!({}), &json!({})));
}

/// Each twin's wire shows its fault. Three are faults of shape, which the v2 decoder refuses
/// (`--no-receipt-id`, `--v1-answer`) or drops with a diagnostic (`--boolean-capability`)
/// where the official schema rejects them. The other three the official schema admits, so
/// their wire decodes cleanly and the fault is read from the recorded wire here:
/// `--unprefixed-update` breaks a rule of the spec's prose, and `--idle-without-running` and
/// `--never-cancelled` are faults of order, which no decoder of single messages can see.
#[test]
#[cfg_attr(
    not(checkfu_ts_agent),
    ignore = "CHECKFU_TS_AGENT is not set: run tests/fixture-agent/ts/install.sh DIR and set it to DIR/agent.mjs"
)]
fn each_v2_twins_wire_shows_its_fault() {
    // A receipt without its messageId, and a v1 answer in its place: each prompt result refused.
    for (flag, turns) in [("--no-receipt-id", 2), ("--v1-answer", 2)] {
        let twin = Drive::run(Some(flag));
        assert_eq!(twin.decode.status.code(), Some(1), "{flag}: {}", twin.explain());
        let refused = twin.refused();
        assert_eq!(refused.len(), turns, "{flag}: {}", twin.explain());
        for report in refused {
            let error = report["error"].to_string();
            assert!(error.contains("messageId"), "{flag}: {error}");
        }
    }

    let boolean = Drive::run(Some("--boolean-capability"));
    assert_eq!(boolean.summary["initialize"]["capabilities"]["session"]["prompt"]["embeddedContext"], true);
    // Dropped as the official SDK drops it (the member is lenient), and said so.
    let dropped: Vec<&Value> =
        boolean.decoded.iter().filter(|r| r["diagnostics"].to_string().contains("lenient ACP member dropped")).collect();
    assert_eq!(dropped.len(), 1, "{}", boolean.explain());

    // Not a fault of the schema: its `other` alternative admits any kind, `_` or not (that an
    // unknown unprefixed kind is reserved for future ACP versions is the spec's prose). So every
    // message decodes, and the fault is read from the recorded wire.
    let unprefixed = Drive::run(Some("--unprefixed-update"));
    assert_eq!(unprefixed.decode.status.code(), Some(0), "{}", unprefixed.explain());
    let kinds: Vec<&Value> = unprefixed.updates().into_iter().map(|u| &u["sessionUpdate"]).collect();
    assert!(kinds.contains(&&json!("scratchpad")), "{kinds:?}");

    // Faults of order: every message well formed.
    let eager = Drive::run(Some("--idle-without-running"));
    assert_eq!(eager.decode.status.code(), Some(0), "{}", eager.explain());
    let states: Vec<&Value> = eager.updates().into_iter().filter(|u| u["sessionUpdate"] == "state_update").map(|u| &u["state"]).collect();
    assert_eq!(states, ["idle", "idle"], "idles with no running before either");

    let stubborn = Drive::run(Some("--never-cancelled"));
    assert_eq!(stubborn.decode.status.code(), Some(0), "{}", stubborn.explain());
    assert_eq!(stubborn.summary["cancelled"]["idle"]["stopReason"], "end_turn", "{}", stubborn.explain());
    let stops: Vec<&Value> = stubborn.updates().into_iter().filter_map(|u| u.get("stopReason")).collect();
    assert!(!stops.contains(&&json!("cancelled")), "{stops:?}");
}

/// The probe's v2 run, `--step-timeout 5` as the other probe tests run it.
fn probe(options: &[&str], harness: &[&str]) -> Run {
    let mut options = options.to_vec();
    options.extend(["--step-timeout", "5"]);
    probe_support::probe(&options, harness)
}

/// Every reason the run gives for a failure: its failed steps' and failed checks'.
fn failures(run: &Run) -> Vec<String> {
    let of = |group: &str, failed: &str| -> Vec<String> {
        run.json[group]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, v)| v["status"] == failed)
            .map(|(name, v)| format!("{name}: {}", v["reason"].as_str().unwrap_or("")))
            .collect()
    };
    [of("steps", "failed"), of("checks", "fail")].concat()
}

/// The honest v2 agent passes `probe --acp-version 2`, judged by the relay's record: the model
/// was asked with the turn's nonce, its reply token reached the agent's output, a rate limit
/// was retried after its retry-after, and the turn's counters agree with the record. Under the
/// default (`--acp-version 1`) the SDK answers -32022 naming 2, and the probe runs 2.
#[test]
#[cfg_attr(
    not(checkfu_ts_agent),
    ignore = "CHECKFU_TS_AGENT is not set: run tests/fixture-agent/ts/install.sh DIR and set it to DIR/agent.mjs"
)]
fn the_v2_reference_agent_passes_the_probes_v2_run() {
    let agent = agent_v2();
    let run = probe(&["--acp-version", "2", "--model-script", "faults"], &["node", &agent]);
    assert_eq!(failures(&run), Vec::<String>::new(), "{}", run.pretty());
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["acp_version"], 2, "{}", run.pretty());
    assert_eq!(run.json["harness"]["agent_info"]["name"], "checkfu-probe-ts-agent-v2");
    let plane = run.plane();
    assert_eq!(plane["nonce_at_relay"], true, "{}", run.pretty());
    let token = plane["reply_in_output"].as_str().expect("a reply token of the model's reached the output");
    let tokens: Vec<&Value> = plane["calls"].as_array().into_iter().flatten().map(|c| &c["reply_token"]).collect();
    assert!(tokens.contains(&&json!(token)), "the relay's record holds the token shown: {}", run.pretty());
    assert_eq!(run.step("model_recovery").0, "passed", "{}", run.pretty());
    assert_eq!(run.json["turn_telemetry"]["mismatches"], json!([]), "{}", run.pretty());
    assert_eq!(run.step("cancellation").0, "passed", "{}", run.pretty());
    assert_eq!(run.json["cancellation"]["stop_reason"], "cancelled");

    // Asked for v1, as the default asks: refused with -32022 naming 2, and run as 2.
    let retried = probe(&[], &["node", &agent]);
    assert_eq!(failures(&retried), Vec::<String>::new(), "{}", retried.pretty());
    assert_eq!(retried.json["acp_version"], 2, "{}", retried.pretty());
    assert_eq!(retried.plane()["nonce_at_relay"], true, "{}", retried.pretty());
}

/// Each hostile twin fails the v2 run, a reason naming what it broke.
#[test]
#[cfg_attr(
    not(checkfu_ts_agent),
    ignore = "CHECKFU_TS_AGENT is not set: run tests/fixture-agent/ts/install.sh DIR and set it to DIR/agent.mjs"
)]
fn the_v2_reference_agents_hostile_twins_each_fail_naming_what_they_broke() {
    let agent = agent_v2();
    for (flag, named) in [
        ("--no-receipt-id", "messageId"),
        ("--boolean-capability", "boolean"),
        ("--unprefixed-update", "scratchpad"),
        ("--idle-without-running", "running"),
        ("--v1-answer", "state_update"),
        ("--never-cancelled", "cancelled"),
    ] {
        let run = probe(&["--acp-version", "2"], &["node", &agent, flag]);
        assert_eq!(run.status, 1, "{flag}: {}", run.pretty());
        let reasons = failures(&run);
        assert!(reasons.iter().any(|r| r.contains(named)), "{flag}: no failure names `{named}`: {reasons:#?}");
    }
}

/// Under v2 the reference agent runs every step it declares, as agent.mjs does in v1, and
/// passes each: the mechanism steps' turns end with v2's receipt and idle, the granted stdio
/// MCP server's tool is called, the queued steer reaches the next turn's model request, and
/// with `--interrupt` the drain is acknowledged and the turn ends idle with nothing cut off.
#[test]
#[cfg_attr(
    not(checkfu_ts_agent),
    ignore = "CHECKFU_TS_AGENT is not set: run tests/fixture-agent/ts/install.sh DIR and set it to DIR/agent.mjs"
)]
fn the_v2_reference_agent_passes_every_step_it_declares_under_v2() {
    let agent = agent_v2();
    let run = probe(&["--acp-version", "2"], &["node", &agent, "--structured", "response_format"]);
    assert_eq!(failures(&run), Vec::<String>::new(), "{}", run.pretty());
    assert_eq!(run.status, 0, "{}", run.pretty());
    for step in [
        "subagent_delegation",
        "builtin_tool_scoping",
        "staged_files",
        "structured_output",
        "platform_tool",
        "native_checkpoint",
        "cancellation",
    ] {
        assert_eq!(run.step(step).0, "passed", "{step}: {}", run.pretty());
    }
    assert_eq!(run.check("steering_delivered"), "pass", "{}", run.pretty());
    // It advertises no MCP over HTTP, and the step says so, citing v2's capability.
    let (status, reason) = run.step("platform_tool_http");
    assert_eq!((status, reason.contains("capabilities.session.mcp.http")), ("skipped", true), "{reason}");
    for (member, value) in [("subagents", "observed"), ("mid_run_input", "native"), ("structured_output", "response_format")] {
        assert_eq!(run.json["admission"]["realized"][member], value, "{member}: {}", run.pretty());
    }

    let drained = probe(&["--acp-version", "2", "--interrupt"], &["node", &agent]);
    assert_eq!(failures(&drained), Vec::<String>::new(), "{}", drained.pretty());
    assert_eq!(drained.check("cooperative_interrupt_drained"), "pass", "{}", drained.pretty());
    assert_eq!(drained.json["admission"]["realized"]["interrupt"], "cooperative", "{}", drained.pretty());
}

/// agent.mjs's over-declaring twins, on the v2 agent: each fails what it does not serve under
/// v2, naming it.
#[test]
#[cfg_attr(
    not(checkfu_ts_agent),
    ignore = "CHECKFU_TS_AGENT is not set: run tests/fixture-agent/ts/install.sh DIR and set it to DIR/agent.mjs"
)]
fn the_v2_reference_agents_over_declaring_twins_fail_naming_the_value() {
    let agent = agent_v2();
    for (flag, named) in [
        ("--narrate-subagent", "subagent_delegation: subagent \"worker\""),
        ("--run-outside-scope", "builtin_tool_scoping: declared `builtin_tool_scoping: enforced` is not served"),
        ("--ignore-staged", "staged_files: declared `staged_files: resource_links` is not served"),
        ("--no-checkpoint", "native_checkpoint: declared `native_checkpoint: external_custody` is not served"),
        ("--ignore-mcp", "platform_tool: the platform tool is not delivered: the harness ignored `mcpServers`"),
        ("--drop-steer", "steering_delivered: the steer was acknowledged `queued`"),
    ] {
        let run = probe(&["--acp-version", "2", "--no-cancellation"], &["node", &agent, flag]);
        assert_eq!(run.status, 1, "{flag}: {}", run.pretty());
        assert_eq!(run.json["acp_version"], 2, "{flag}: {}", run.pretty());
        let reasons = failures(&run);
        assert!(reasons.iter().any(|r| r.starts_with(named)), "{flag}: no failure starts `{named}`: {reasons:#?}");
    }
}
