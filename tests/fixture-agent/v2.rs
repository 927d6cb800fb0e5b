//! The fixture agent's ACP v2 mode (`--acp-version 2`): the very agent of `agent.rs`, every
//! switch and mechanism of it, on v2's wire. What differs is written here, as a translation
//! of what the v1 agent writes ([`Wire::translate`]) and the two places where v2 asks more
//! than a rewrite: `initialize` and the opening of a turn.
//!
//! - `initialize` asking for 1 is answered `-32022` naming 2, as the official SDK 2.4.0's v2
//!   endpoint answers; asking for 2, it answers with `info` and object markers (MCP servers
//!   over stdio, and over HTTP with `--mcp-http`), its `checkfu.capabilities` as in v1.
//! - A prompt is answered with a receipt (the inserted user message's `messageId`), echoed as
//!   a `user_message`, between a `running` `state_update` and the turn's work.
//! - The turn's work is the v1 agent's: its updates become keyed upserts (message chunks get
//!   the turn's `messageId`, a `tool_call` becomes a `tool_call_update`), a permission request
//!   takes v2's `title` and `subject`, and the prompt's answer becomes the idle `state_update`
//!   that ends the turn with its stop reason (and the turn's `checkfu.turn` in its `_meta`).
//!   Every `checkfu.*` member stays in the update's `_meta`, where v2 keeps it.
//!
//! Hostile twins, one flag each: `--no-receipt-id` (the receipt has no `messageId`),
//! `--boolean-capability` (a capability `true`, not an object), `--unprefixed-update` (a custom
//! update kind `scratchpad`, without the `_` v2 asks of custom values), `--idle-without-running`
//! (no `running` before the idle), `--v1-answer` (the turn answered in the prompt's result,
//! as in v1: no receipt, no idle), `--never-cancelled` (the cancel is ignored: the turn ends
//! `end_turn`, as v1's `--ignore-cancel`). The v1 twins of a mechanism (`--no-subagent`,
//! `--run-outside-scope`, `--ignore-staged`, `--schema-unsent`, `--ignore-mcp`, …) are twins
//! in v2 too; so are `--string-turn` (the idle's `checkfu.turn` says `"model_calls": "0"`,
//! which the decoder drops under the fail-open rule) and `--need-credentials` (`session/new`
//! refused until a login with `fixture-key`, which v2 names `auth/login`; v1's
//! `authenticate` is no v2 method).

use serde_json::{json, Value};

use super::Agent;

/// The version this mode speaks, and the error code of a version it does not.
const VERSION: u64 = 2;
const UNSUPPORTED_VERSION: i64 = -32022;

/// The switches of this mode alone (the v1 agent's parser leaves them to it).
pub const SWITCHES: [&str; 6] =
    ["--no-receipt-id", "--boolean-capability", "--unprefixed-update", "--idle-without-running", "--v1-answer", "--never-cancelled"];

/// Whether the command line asks for this mode.
pub fn wanted() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.windows(2).any(|w| w[0] == "--acp-version" && w[1] == "2")
}

#[derive(Default)]
struct Twins {
    no_receipt_id: bool,
    boolean_capability: bool,
    unprefixed_update: bool,
    idle_without_running: bool,
    v1_answer: bool,
}

fn twins() -> Twins {
    let mut t = Twins::default();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--no-receipt-id" => t.no_receipt_id = true,
            "--boolean-capability" => t.boolean_capability = true,
            "--unprefixed-update" => t.unprefixed_update = true,
            "--idle-without-running" => t.idle_without_running = true,
            "--v1-answer" => t.v1_answer = true,
            _ => {}
        }
    }
    t
}

/// Whether `--never-cancelled` was given: the v1 agent's `--ignore-cancel` serves it.
pub fn never_cancelled() -> bool {
    std::env::args().any(|a| a == "--never-cancelled")
}

/// The v2 wire of one agent: its twins, and the turn open now.
pub struct Wire {
    t: Twins,
    /// The open turn: the prompt's id, its session, and the agent message it writes.
    turn: Option<(Value, String, String)>,
    messages: u64,
}

impl Wire {
    pub fn new() -> Wire {
        Wire { t: twins(), turn: None, messages: 0 }
    }

    fn next_message_id(&mut self, who: &str) -> String {
        self.messages += 1;
        format!("{who}-{}", self.messages)
    }

    /// What the v1 agent wrote, as v2 says it (nothing, one message, or more).
    pub fn translate(&mut self, mut message: Value) -> Vec<Value> {
        let id = message.get("id").cloned();
        let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
        match (method.as_deref(), &self.turn) {
            (None, Some((prompt, _, _))) if id.as_ref() == Some(prompt) => self.turn_end(message),
            (Some("session/update"), _) => {
                let message_id = self.turn.as_ref().map(|(_, _, m)| m.clone()).unwrap_or_else(|| self.next_message_id("replay"));
                if let Some(update) = message.pointer_mut("/params/update") {
                    upsert(update, &message_id);
                }
                vec![message]
            }
            (Some("session/request_permission"), _) => {
                if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
                    let call = params.remove("toolCall").unwrap_or(Value::Null);
                    let title = call.get("title").cloned().unwrap_or(json!("Permission"));
                    params.insert("title".into(), title);
                    params.insert("subject".into(), json!({"type": "tool_call", "toolCall": call}));
                }
                vec![message]
            }
            _ => vec![message],
        }
    }

    /// The prompt's answer: an error stays an answer; a stop reason becomes the idle that
    /// ends the turn (`--v1-answer`: it stays the prompt's result, as in v1).
    fn turn_end(&mut self, message: Value) -> Vec<Value> {
        let Some((_, session, reply)) = self.turn.take() else { return vec![message] };
        let Some(stop) = message.pointer("/result/stopReason").cloned().filter(|_| !self.t.v1_answer) else { return vec![message] };
        let mut out = Vec::new();
        if self.t.unprefixed_update {
            out.push(update(&session, json!({"sessionUpdate": "scratchpad", "messageId": reply, "notes": "thinking"})));
        }
        let mut idle = json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": stop});
        if let Some(meta) = message.pointer("/result/_meta") {
            idle["_meta"] = meta.clone();
        }
        out.push(update(&session, idle));
        out
    }
}

/// An update of v1's as v2's upsert: a message chunk keyed by the turn's `messageId`, a
/// tool call reported as the `tool_call_update` v2 upserts tool calls with.
fn upsert(update: &mut Value, message_id: &str) {
    let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or_default().to_owned();
    if kind.ends_with("message_chunk") && update.get("messageId").is_none() {
        update["messageId"] = json!(message_id);
    }
    if kind == "tool_call" {
        update["sessionUpdate"] = json!("tool_call_update");
    }
}

fn update(session: &str, update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}})
}

impl Agent {
    /// `initialize` on v2's terms: `-32022` below 2, else `info` and object markers.
    pub(super) fn initialize_v2(&mut self, id: &Value, asked: u64) {
        if asked < VERSION {
            let error = json!({"code": UNSUPPORTED_VERSION, "message": "Unsupported protocol version",
                "data": {"requested": asked, "supported": [VERSION]}});
            self.write(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
            return;
        }
        let boolean = self.v2.as_ref().is_some_and(|w| w.t.boolean_capability);
        let image = if boolean { json!(true) } else { json!({}) };
        let mut mcp = json!({"stdio": {}});
        if self.s.mcp_http || self.s.ignore_mcp_http {
            mcp["http"] = json!({});
        }
        let mut result = json!({"protocolVersion": VERSION,
            "info": {"name": "checkfu-fixture-agent", "title": "Checkfu fixture agent (ACP v2)", "version": env!("CARGO_PKG_VERSION")},
            "capabilities": {"session": {"prompt": {"image": image, "embeddedContext": {}}, "mcp": mcp}},
            "authMethods": []});
        if self.s.need_credentials {
            result["authMethods"] = json!([{"type": "agent", "methodId": "fixture-key", "name": "Fixture key"}]);
        }
        let declaration = self.declaration();
        if !declaration.is_empty() {
            result["_meta"] = json!({"checkfu.capabilities": declaration});
        }
        self.respond(id, result);
    }

    /// Opens a v2 turn for prompt `id`: `running`, the user message echoed, the receipt.
    pub(super) fn open_turn_v2(&mut self, id: &Value, message: &Value) {
        let Some(wire) = self.v2.as_mut() else { return };
        let session = message.pointer("/params/sessionId").and_then(Value::as_str).unwrap_or_default().to_owned();
        let user = wire.next_message_id("user");
        let reply = wire.next_message_id("agent");
        let (quiet, receipt_id, v1_answer) = (wire.t.idle_without_running, !wire.t.no_receipt_id, wire.t.v1_answer);
        let prompt = message.pointer("/params/prompt").cloned().unwrap_or(json!([]));
        if !quiet {
            self.write(&update(&session, json!({"sessionUpdate": "state_update", "state": "running"})));
        }
        self.write(&update(&session, json!({"sessionUpdate": "user_message", "messageId": user, "content": prompt})));
        if !v1_answer {
            self.respond(id, if receipt_id { json!({"messageId": user}) } else { json!({}) });
        }
        // Set after the receipt, so that the receipt is not taken for the turn's end.
        if let Some(wire) = self.v2.as_mut() {
            wire.turn = Some((id.clone(), session, reply));
        }
    }
}
