//! The fixture agent's model client: one HTTP/1.1 POST per call to the relay the probe
//! started (found in `ANTHROPIC_BASE_URL`, the key in `ANTHROPIC_API_KEY`), in the dialect
//! chosen by `--dialect`, always as plain JSON (`stream: false`). The relay's streams are
//! checked by the official SDKs (`tests/relay-sdk/`); this client only needs a request and
//! its answer, so it writes one request with `Connection: close` and reads to EOF.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::compaction;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Anthropic,
    Chat,
    Responses,
}

/// An earlier exchange as the dialect writes it: the user's words, then the assistant's answer.
pub fn exchange(dialect: Dialect, words: &str, answer: &str) -> [Value; 2] {
    match dialect {
        Dialect::Anthropic | Dialect::Chat => [json!({"role": "user", "content": words}), json!({"role": "assistant", "content": answer})],
        Dialect::Responses => [
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": words}]}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}),
        ],
    }
}

impl Dialect {
    pub fn parse(name: &str) -> Option<Dialect> {
        match name {
            "anthropic_messages" => Some(Dialect::Anthropic),
            "openai_chat" => Some(Dialect::Chat),
            "openai_responses" => Some(Dialect::Responses),
            _ => None,
        }
    }

    fn path(self) -> &'static str {
        match self {
            Dialect::Anthropic => "/v1/messages",
            Dialect::Chat => "/v1/chat/completions",
            Dialect::Responses => "/v1/responses",
        }
    }
}

/// What one model call came back with.
pub enum Answer {
    Text(String),
    Tool { id: String, name: String, input: Value },
    Refused(u16, String),
}

/// `host:port` of the relay, from the probe's variables.
pub fn relay_addr() -> Option<String> {
    let url = std::env::var("ANTHROPIC_BASE_URL").ok()?;
    url.strip_prefix("http://").map(|rest| rest.trim_end_matches('/').to_owned())
}

/// One POST; the status and the body.
pub fn post(addr: &str, path: &str, headers: &[(&str, String)], body: &[u8]) -> Result<(u16, Vec<u8>), String> {
    post_reading(addr, path, headers, body).map(|answer| (answer.status, answer.body))
}

/// An answer as read: its status, its `retry-after` (seconds), its body.
pub struct Received {
    pub status: u16,
    pub retry_after: Option<u64>,
    pub body: Vec<u8>,
}

/// How a model call's transient faults are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// After the `retry-after` the answer asked for (100 ms without one), as a client should.
    AfterRetryAfter,
    /// At once, whatever the answer asked (a hostile twin).
    AtOnce,
}

/// A turn's model calls as the agent made them, for its `checkfu.turn`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// Every call the model served (an answer or a fault), retries included.
    pub calls: u64,
    /// The transient faults that were tried again.
    pub transient_retries: u64,
    /// The context overflows it compacted its way past and asked again.
    pub overflow_recoveries: u64,
}

/// The most attempts of one model call under `--retry`.
const ATTEMPTS: usize = 6;

/// The connection of the model call in flight, which another thread can close: how an
/// agent stops a call when its turn is cancelled.
#[derive(Clone, Default)]
pub struct InFlight(Arc<Mutex<(Option<TcpStream>, bool)>>);

impl InFlight {
    /// Closes the call in flight, and every later one of the conversation at once.
    pub fn abort(&self) {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        state.1 = true;
        if let Some(stream) = state.0.take() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    fn aborted(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).1
    }

    fn started(&self, stream: &TcpStream) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).0 = stream.try_clone().ok();
    }
}

/// One POST, read whole.
fn post_reading(addr: &str, path: &str, headers: &[(&str, String)], body: &[u8]) -> Result<Received, String> {
    post_watched(addr, path, headers, body, &InFlight::default())
}

/// One POST, read whole, its connection left in `in_flight` for another thread to close.
fn post_watched(addr: &str, path: &str, headers: &[(&str, String)], body: &[u8], in_flight: &InFlight) -> Result<Received, String> {
    if in_flight.aborted() {
        return Err(String::from("aborted"));
    }
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    in_flight.started(&stream);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).map_err(|e| format!("write: {e}"))?;
    // A relay that refuses a body by its declared length answers before reading it and
    // closes; the write then fails, and the answer is still there to read.
    let _ = stream.write_all(body);
    read_whole(&mut stream)
}

/// Reads a whole answer to EOF and splits off its status line and headers.
fn read_whole(stream: &mut TcpStream) -> Result<Received, String> {
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no complete answer")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or("no status")?;
    let retry_after = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("retry-after"))
        .and_then(|(_, value)| value.trim().parse().ok());
    Ok(Received { status, retry_after, body: raw[split + 4..].to_vec() })
}

/// A conversation with the model in one dialect.
pub struct Conversation {
    pub dialect: Dialect,
    pub key: Option<String>,
    /// Whether, and how, a transient fault is retried (`None`: it ends the turn).
    pub retry: Option<Retry>,
    /// The calls made so far.
    pub usage: Usage,
    /// The call in flight, for a cancel to close.
    pub in_flight: InFlight,
    /// The compaction policy admitted (`None`: a context overflow ends the turn), and the
    /// compactions made, not yet reported.
    pub policy: Option<compaction::Policy>,
    pub compactions: Vec<compaction::Compacted>,
    /// How the session's output schema goes to the model, when it does.
    pub schema: Option<Schema>,
    /// The built-in tools offered, by name ([`READ_FILE`] alone unless the agent says more).
    pub tools: Vec<&'static str>,
    /// The tools of the MCP servers the session was granted, by the name the model gets and
    /// their input schema.
    pub mcp_tools: Vec<(String, Value)>,
    history: Vec<Value>,
}

/// The built-in tools the fixture may offer the model. The writer and the shell go by the
/// names of the contract's vocabulary for `checkfu.builtin_tools`; the reader, older, is
/// `read` in that vocabulary.
pub const READ_FILE: &str = "read_file";
pub const WRITE_FILE: &str = "write";
pub const SHELL: &str = "bash";

/// The submit tool of `structured_output: submit_tool`: its input schema is the session's
/// output schema, exactly.
pub const SUBMIT_TOOL: &str = "submit_result";

/// How a conversation asks for the session's output schema (`checkfu.output_schema`).
#[derive(Clone, Debug)]
pub enum Schema {
    /// In the dialect's own response-format field.
    ResponseFormat(Value),
    /// As the input schema of [`SUBMIT_TOOL`], offered beside the agent's own tools.
    SubmitTool(Value),
}

impl Conversation {
    pub fn new(dialect: Dialect, key: Option<String>, prompt: &str) -> Conversation {
        let first = match dialect {
            Dialect::Anthropic | Dialect::Chat => json!({"role": "user", "content": prompt}),
            Dialect::Responses => json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}),
        };
        Conversation {
            dialect,
            key,
            retry: None,
            usage: Usage::default(),
            in_flight: InFlight::default(),
            policy: None,
            compactions: Vec::new(),
            schema: None,
            tools: vec![READ_FILE],
            mcp_tools: Vec::new(),
            history: vec![first],
        }
    }

    /// Opens the conversation with earlier messages, before the prompt.
    pub fn reload(&mut self, earlier: Vec<Value>) {
        self.history.splice(0..0, earlier);
    }

    fn body(&self) -> Value {
        let mut body = self.plain_body();
        match (&self.schema, self.dialect) {
            (None, _) => {}
            (Some(Schema::ResponseFormat(schema)), Dialect::Chat) => {
                body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "output", "schema": schema}});
            }
            (Some(Schema::ResponseFormat(schema)), Dialect::Responses) => {
                body["text"] = json!({"format": {"type": "json_schema", "name": "output", "schema": schema}});
            }
            (Some(Schema::ResponseFormat(schema)), Dialect::Anthropic) => {
                body["output_format"] = json!({"type": "json_schema", "schema": schema});
            }
            (Some(Schema::SubmitTool(schema)), dialect) => {
                let description = "Submits the final answer";
                let tool = match dialect {
                    Dialect::Anthropic => json!({"name": SUBMIT_TOOL, "description": description, "input_schema": schema}),
                    Dialect::Chat => {
                        json!({"type": "function", "function": {"name": SUBMIT_TOOL, "description": description, "parameters": schema}})
                    }
                    Dialect::Responses => {
                        json!({"type": "function", "name": SUBMIT_TOOL, "description": description, "parameters": schema})
                    }
                };
                if let Some(tools) = body.get_mut("tools").and_then(Value::as_array_mut) {
                    tools.push(tool);
                }
            }
        }
        body
    }

    fn plain_body(&self) -> Value {
        let mut tools: Vec<Value> = self.tools.iter().map(|name| self.tool(name)).collect();
        tools.extend(self.mcp_tools.iter().map(|(name, schema)| self.offered(name, "A tool of an MCP server", schema.clone())));
        match self.dialect {
            Dialect::Anthropic => json!({"model": "fixture-model", "max_tokens": 512, "messages": self.history, "tools": tools}),
            Dialect::Chat => json!({"model": "fixture-model", "messages": self.history, "tools": tools}),
            Dialect::Responses => json!({"model": "fixture-model", "input": self.history, "tools": tools}),
        }
    }

    /// One built-in tool as the dialect offers it.
    fn tool(&self, name: &str) -> Value {
        let string = json!({"type": "string"});
        let (description, schema) = match name {
            WRITE_FILE => (
                "Writes a file",
                json!({"type": "object", "properties": {"path": string, "content": string}, "required": ["path", "content"]}),
            ),
            SHELL => ("Runs a shell command", json!({"type": "object", "properties": {"command": string}, "required": ["command"]})),
            _ => ("Reads a file", json!({"type": "object", "properties": {"path": string}, "required": ["path"]})),
        };
        self.offered(name, description, schema)
    }

    /// A tool as the dialect offers it.
    fn offered(&self, name: &str, description: &str, schema: Value) -> Value {
        match self.dialect {
            Dialect::Anthropic => json!({"name": name, "description": description, "input_schema": schema}),
            Dialect::Chat => json!({"type": "function", "function": {"name": name, "description": description, "parameters": schema}}),
            Dialect::Responses => json!({"type": "function", "name": name, "description": description, "parameters": schema}),
        }
    }

    pub fn headers(&self) -> Vec<(&'static str, String)> {
        match (&self.key, self.dialect) {
            (None, _) => vec![],
            (Some(key), Dialect::Anthropic) => vec![("x-api-key", key.clone()), ("anthropic-version", "2023-06-01".into())],
            (Some(key), _) => vec![("Authorization", format!("Bearer {key}"))],
        }
    }

    pub fn ask(&mut self, addr: &str) -> Answer {
        let mut body = self.body().to_string();
        let mut attempt = 0;
        let (status, answer, text) = loop {
            attempt += 1;
            let read = match post_watched(addr, self.dialect.path(), &self.headers(), body.as_bytes(), &self.in_flight) {
                Ok(read) => read,
                Err(e) => return Answer::Refused(0, e),
            };
            // A call the gateway refused (no key, a path off its list) never reached the
            // model: `checkfu.turn` counts the calls the model served, faults included.
            self.usage.calls += u64::from(!matches!(read.status, 401 | 403 | 404 | 405 | 408 | 413 | 501));
            let text = String::from_utf8_lossy(&read.body).into_owned();
            // Past the window: compact under the admitted policy, and ask again.
            if compaction::is_overflow(read.status, &text) && attempt < ATTEMPTS {
                let window = self.policy.as_ref().map(|p| p.window);
                if let Some(done) = window.and_then(|w| compaction::truncate_oldest(&mut self.history, w)) {
                    self.compactions.push(done);
                    self.usage.overflow_recoveries += 1;
                    body = self.body().to_string();
                    continue;
                }
            }
            let answer = (read.status == 200).then(|| serde_json::from_str::<Value>(&text).ok()).flatten();
            // A fault worth another try: a rate limit, an overload, a server error, or an
            // answer cut short (a 200 whose JSON never ends).
            let transient = matches!(read.status, 429 | 500 | 503 | 529) || (read.status == 200 && answer.is_none());
            let retry = self.retry.filter(|_| transient && attempt < ATTEMPTS);
            self.usage.transient_retries += u64::from(retry.is_some());
            match retry {
                Some(Retry::AfterRetryAfter) => std::thread::sleep(Duration::from_millis(read.retry_after.map_or(100, |s| s * 1000))),
                Some(Retry::AtOnce) => {}
                None => break (read.status, answer, text),
            }
        };
        let Some(answer) = answer.filter(|_| status == 200) else { return Answer::Refused(status, text) };
        let answer = self.read(&answer);
        if let Answer::Tool { id, name, input } = &answer {
            self.history.push(match self.dialect {
                Dialect::Anthropic => {
                    json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]})
                }
                Dialect::Chat => json!({"role": "assistant", "content": null,
                    "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}}]}),
                Dialect::Responses => json!({"type": "function_call", "call_id": id, "name": name, "arguments": input.to_string()}),
            });
        }
        answer
    }

    fn read(&self, answer: &Value) -> Answer {
        let text = |v: Option<&Value>| Answer::Text(v.and_then(Value::as_str).unwrap_or_default().to_owned());
        match self.dialect {
            Dialect::Anthropic => {
                let block = &answer["content"][0];
                if block["type"] == "tool_use" {
                    return Answer::Tool { id: s(&block["id"]), name: s(&block["name"]), input: block["input"].clone() };
                }
                text(block.get("text"))
            }
            Dialect::Chat => {
                let message = &answer["choices"][0]["message"];
                if let Some(call) = message.pointer("/tool_calls/0") {
                    let input = serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}")).unwrap_or(Value::Null);
                    return Answer::Tool { id: s(&call["id"]), name: s(&call["function"]["name"]), input };
                }
                text(message.get("content"))
            }
            Dialect::Responses => {
                let item = &answer["output"][0];
                if item["type"] == "function_call" {
                    let input = serde_json::from_str(item["arguments"].as_str().unwrap_or("{}")).unwrap_or(Value::Null);
                    return Answer::Tool { id: s(&item["call_id"]), name: s(&item["name"]), input };
                }
                text(item.pointer("/content/0/text"))
            }
        }
    }

    /// Goes on after the model's `answer` with the user's `words` (a steer passed on).
    pub fn follow_up(&mut self, answer: &str, words: &str) {
        match self.dialect {
            Dialect::Anthropic | Dialect::Chat => {
                self.history.push(json!({"role": "assistant", "content": answer}));
                self.history.push(json!({"role": "user", "content": words}));
            }
            Dialect::Responses => {
                self.history.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}));
                self.history.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": words}]}));
            }
        }
    }

    /// Goes on with the user's `words` (after a tool's result).
    pub fn user(&mut self, words: &str) {
        self.history.push(match self.dialect {
            Dialect::Anthropic | Dialect::Chat => json!({"role": "user", "content": words}),
            Dialect::Responses => json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": words}]}),
        });
    }

    /// Sends a tool's result back in the dialect's way.
    pub fn tool_result(&mut self, id: &str, output: &str) {
        self.history.push(match self.dialect {
            Dialect::Anthropic => json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": output}]}),
            Dialect::Chat => json!({"role": "tool", "tool_call_id": id, "content": output}),
            Dialect::Responses => json!({"type": "function_call_output", "call_id": id, "output": output}),
        });
    }
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// Asks the proxy (`HTTPS_PROXY`) for a tunnel to an outside host; its status.
pub fn try_egress(host: &str) -> Option<u16> {
    let proxy = std::env::var("HTTPS_PROXY").ok()?;
    let addr = proxy.strip_prefix("http://")?.trim_end_matches('/').to_owned();
    let mut stream = TcpStream::connect(&addr).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    stream.write_all(format!("CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n").as_bytes()).ok()?;
    // The relay answers and closes; a real proxy would keep the tunnel open.
    let mut raw = [0u8; 512];
    let n = stream.read(&mut raw).ok()?;
    String::from_utf8_lossy(&raw[..n]).split(' ').nth(1)?.parse().ok()
}
