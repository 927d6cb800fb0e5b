//! The fixture agent's ACP v2 mode (`--acp-version 2`): the same governed model behind the
//! relay, on v2's wire. `initialize` asking for 1 is answered `-32022` naming 2, as the
//! official SDK 2.4.0's v2 endpoint answers; asking for 2, it answers with `info` and object
//! markers. A prompt is answered with a receipt (the inserted user message's `messageId`),
//! echoed as a `user_message`, reported as keyed upserts between a `running` and an `idle`
//! `state_update` whose stop reason ends the turn (with the turn's `checkfu.turn` in its
//! `_meta`). `session/cancel` closes the model call in flight and ends the turn idle
//! `cancelled`.
//!
//! Hostile twins, one flag each: `--no-receipt-id` (the receipt has no `messageId`),
//! `--boolean-capability` (a capability `true`, not an object), `--unprefixed-update` (a custom
//! update kind `scratchpad`, without the `_` v2 asks of custom values), `--idle-without-running`
//! (no `running` before the idle), `--v1-answer` (the turn answered in the prompt's result,
//! as in v1: no receipt, no idle), `--never-cancelled` (the cancel is ignored: the turn ends
//! `end_turn`), `--string-turn` (the idle's `checkfu.turn` says `"model_calls": "0"`, which
//! the decoder drops under the fail-open rule, as v1's twin of that name). Not hostile:
//! `--need-credentials` (`session/new` answers -32000 until v2's `auth/login` with
//! `fixture-key`, and v1's `authenticate` is unknown, as in v2). `--dialect NAME` as in v1.

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::model;

/// The version this mode speaks, and the error code of a version it does not.
const VERSION: u64 = 2;
const UNSUPPORTED_VERSION: i64 = -32022;

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
    never_cancelled: bool,
    string_turn: bool,
    need_credentials: bool,
    dialect: String,
}

fn twins() -> Twins {
    let mut t = Twins { dialect: String::from("openai_chat"), ..Twins::default() };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--no-receipt-id" => t.no_receipt_id = true,
            "--boolean-capability" => t.boolean_capability = true,
            "--unprefixed-update" => t.unprefixed_update = true,
            "--idle-without-running" => t.idle_without_running = true,
            "--v1-answer" => t.v1_answer = true,
            "--never-cancelled" => t.never_cancelled = true,
            "--string-turn" => t.string_turn = true,
            "--need-credentials" => t.need_credentials = true,
            "--dialect" => t.dialect = args.next().unwrap_or_default(),
            _ => {}
        }
    }
    t
}

struct Agent {
    t: Twins,
    input: Receiver<Value>,
    /// Messages that arrived while a turn ran, handled after it.
    deferred: VecDeque<Value>,
    out: std::io::StdoutLock<'static>,
    sessions: u64,
    messages: u64,
    /// `auth/login` answered for `fixture-key` (`--need-credentials`).
    authenticated: bool,
}

/// Runs the v2 mode until stdin closes.
pub fn run() {
    let (to_agent, input) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
            if to_agent.send(message).is_err() {
                break;
            }
        }
    });
    let mut agent = Agent {
        t: twins(),
        input,
        deferred: VecDeque::new(),
        out: std::io::stdout().lock(),
        sessions: 0,
        messages: 0,
        authenticated: false,
    };
    while let Some(message) = agent.deferred.pop_front().or_else(|| agent.input.recv().ok()) {
        agent.handle(&message);
    }
}

impl Agent {
    fn write(&mut self, message: &Value) {
        let _ = writeln!(self.out, "{message}");
        let _ = self.out.flush();
    }

    fn respond(&mut self, id: &Value, result: Value) {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn update(&mut self, session: &str, update: Value) {
        self.write(&json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}}));
    }

    fn next_message_id(&mut self, who: &str) -> String {
        self.messages += 1;
        format!("{who}-{}", self.messages)
    }

    fn handle(&mut self, message: &Value) {
        let id = message.get("id").cloned();
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
        let Some(id) = id else { return };
        match method {
            "initialize" => self.initialize(&id, message),
            "auth/login" if message.pointer("/params/methodId").and_then(Value::as_str) == Some("fixture-key") => {
                self.authenticated = true;
                self.respond(&id, json!({}));
            }
            "auth/login" => self.write(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "unknown auth method"}})),
            "session/new" if self.t.need_credentials && !self.authenticated => {
                self.write(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "Authentication required"}}));
            }
            "session/new" => {
                self.sessions += 1;
                let session = format!("fixture-v2-{}", self.sessions);
                self.respond(&id, json!({"sessionId": session}));
            }
            "session/prompt" => self.turn(&id, message),
            _ => self.write(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})),
        }
    }

    fn initialize(&mut self, id: &Value, message: &Value) {
        let requested = message.pointer("/params/protocolVersion").and_then(Value::as_u64).unwrap_or(0);
        if requested < VERSION {
            let error = json!({"code": UNSUPPORTED_VERSION, "message": "Unsupported protocol version",
                "data": {"requested": requested, "supported": [VERSION]}});
            self.write(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
            return;
        }
        let image = if self.t.boolean_capability { json!(true) } else { json!({}) };
        let auth_methods =
            if self.t.need_credentials { json!([{"type": "agent", "methodId": "fixture-key", "name": "Fixture key"}]) } else { json!([]) };
        let result = json!({"protocolVersion": VERSION,
            "info": {"name": "checkfu-fixture-agent", "title": "Checkfu fixture agent (ACP v2)", "version": env!("CARGO_PKG_VERSION")},
            "capabilities": {"session": {"prompt": {"image": image, "embeddedContext": {}}}},
            "authMethods": auth_methods});
        self.respond(id, result);
    }

    fn turn(&mut self, id: &Value, message: &Value) {
        let began = Instant::now();
        let session = message.pointer("/params/sessionId").and_then(Value::as_str).unwrap_or_default().to_owned();
        let prompt = message.pointer("/params/prompt").cloned().unwrap_or(json!([]));
        let words: String = prompt.as_array().into_iter().flatten().filter_map(|b| b.get("text").and_then(Value::as_str)).collect();
        let user = self.next_message_id("user");
        if !self.t.idle_without_running {
            self.update(&session, json!({"sessionUpdate": "state_update", "state": "running"}));
        }
        self.update(&session, json!({"sessionUpdate": "user_message", "messageId": user, "content": prompt}));
        if !self.t.v1_answer {
            let receipt = if self.t.no_receipt_id { json!({}) } else { json!({"messageId": user}) };
            self.respond(id, receipt);
        }
        let (answer, calls, cancelled) = self.ask_model(&words);
        let reply = self.next_message_id("agent");
        if cancelled && !self.t.never_cancelled {
            self.update(&session, json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}));
            return;
        }
        let text = json!({"type": "text", "text": answer});
        self.update(&session, json!({"sessionUpdate": "agent_message_chunk", "messageId": reply, "content": text}));
        self.update(&session, json!({"sessionUpdate": "agent_message", "messageId": reply, "content": [text]}));
        if self.t.unprefixed_update {
            self.update(&session, json!({"sessionUpdate": "scratchpad", "messageId": reply, "notes": "thinking"}));
        }
        // `--string-turn`: a claim the decoder drops, so its lie is compared with nothing.
        let model_calls = if self.t.string_turn { json!("0") } else { json!(calls) };
        let claim = json!({"execution": "shell", "shell_commands": 0, "filesystem_commands": 0, "mcp_calls": 0, "model_calls": model_calls,
            "wall_time_ms": began.elapsed().as_millis() as u64, "model_transient_retries": 0, "model_overflow_recoveries": 0});
        if self.t.v1_answer {
            self.respond(id, json!({"stopReason": "end_turn", "_meta": {"checkfu.turn": claim}}));
            return;
        }
        let idle = json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn", "_meta": {"checkfu.turn": claim}});
        self.update(&session, idle);
    }

    /// The model's answer to `words` behind the relay, the calls it took, and whether the
    /// turn was cancelled meanwhile (which closes the call, unless `--never-cancelled`).
    fn ask_model(&mut self, words: &str) -> (String, u64, bool) {
        let Some(addr) = model::relay_addr() else { return (String::from("(no relay: ANTHROPIC_BASE_URL is not set)"), 0, false) };
        let Some(dialect) = model::Dialect::parse(&self.t.dialect) else {
            return (format!("(unknown dialect {})", self.t.dialect), 0, false);
        };
        let key = std::env::var("ANTHROPIC_API_KEY").ok();
        let mut conversation = model::Conversation::new(dialect, key, words);
        let in_flight = conversation.in_flight.clone();
        let mut cancelled = false;
        let answer = std::thread::scope(|scope| {
            let call = scope.spawn(|| conversation.ask(&addr));
            while !call.is_finished() {
                match self.input.recv_timeout(Duration::from_millis(20)) {
                    Ok(message) if message.get("method") == Some(&json!("session/cancel")) => {
                        cancelled = true;
                        if !self.t.never_cancelled {
                            in_flight.abort();
                        }
                    }
                    Ok(message) => self.deferred.push_back(message),
                    Err(RecvTimeoutError::Timeout) => {}
                    // The client is gone: the call ends with nothing to do.
                    Err(RecvTimeoutError::Disconnected) => in_flight.abort(),
                }
            }
            call.join().unwrap_or(model::Answer::Refused(0, String::from("the call panicked")))
        });
        let text = match answer {
            model::Answer::Text(text) => text,
            model::Answer::Refused(status, body) => format!("(the model call was refused: {status} {body})"),
            model::Answer::Tool { name, .. } => format!("(the model called {name}; the v2 mode runs no tool)"),
        };
        (text, conversation.usage.calls, cancelled)
    }
}
