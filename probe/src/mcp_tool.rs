//! The probe's own MCP server over stdio: what `session/new`'s `mcpServers` grants the
//! harness as a `command` entry, run as `checkfu-wire mcp-tool` (a hidden subcommand of the
//! probe's own binary), which the harness starts inside the fence as ACP asks of every agent.
//!
//! The process the harness starts is a pipe and nothing more ([`pipe`]): each line it reads
//! on stdin (newline-delimited JSON-RPC, MCP's stdio transport, the messages
//! `schemas/mcp-2025-06-18.schema.json` describes) is posted whole to the probe's own MCP
//! server ([`crate::mcp_http`], at [`crate::mcp_http::Transport::Stdio`]'s path on the fence's
//! loopback, the only endpoint its `--endpoint` may name), and that server's answer is
//! written back on stdout. The server answers ([`answer`]) and keeps what reached it in the
//! probe's memory ([`ServerLog`]), and the tool's result is minted there and never leaves the
//! probe except as the answer to a call: nothing in the workspace, the arguments or the
//! variables the harness can see holds the evidence or the result, so a harness cannot forge
//! a call it never made by writing a file.
//!
//! What a harness inside the same fence can still do is speak to that endpoint itself, as
//! the pipe does: that is a call of the probe's server with the model's arguments (the only
//! way to the result the step wants back in the model's next request), not a forgery of one.
//!
//! The pipe is bounded: a line, the messages it relays, each answer it reads, and each wait
//! on the server. It stops at the first bound crossed, with an error naming it, so a flood or
//! an oversized message on the harness's side of the pipe costs the probe at most the
//! server's own bounds ([`crate::mcp_http`]).

use std::io::{BufRead, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

/// The name the probe gives its server in `mcpServers`.
pub const SERVER_NAME: &str = "checkfu";
/// The server's one tool. A harness names it as it likes (`mcp__checkfu__…`); the relay finds
/// it by this ending.
pub const TOOL: &str = "checkfu_platform_probe";
/// The hidden subcommand that runs the pipe.
pub const SUBCOMMAND: &str = "mcp-tool";
/// The flag that names the probe's endpoint.
pub const ENDPOINT_FLAG: &str = "--endpoint";
/// The MCP revision the server speaks (the vendored schema's).
const PROTOCOL: &str = "2025-06-18";
/// The earlier revisions it answers as themselves: the messages it uses are the same in each.
const EARLIER: &[&str] = &["2024-11-05", "2025-03-26"];
/// The longest line the pipe reads (the server reads no larger body), and the most messages
/// it relays.
pub const MAX_LINE: u64 = crate::mcp_http::MAX_BODY as u64;
pub const MAX_MESSAGES: usize = 4096;
/// The most calls a [`ServerLog`] keeps.
const MAX_LOGGED: usize = 256;
/// The largest answer read from the server: its answers are a few hundred bytes.
const MAX_ANSWER: u64 = 1 << 20;
/// How long the pipe waits to connect to the server, and for each read or write.
const WAIT: Duration = Duration::from_secs(30);

/// Why the pipe stopped before its input ended.
#[derive(Debug, thiserror::Error)]
pub enum PipeError {
    #[error("`{ENDPOINT_FLAG} {0}` is not the probe's endpoint: http://LOOPBACK-ADDRESS:PORT/PATH")]
    Endpoint(String),
    #[error("the MCP server's stdio failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("a line of more than {MAX_LINE} bytes on stdin")]
    LineTooLong,
    #[error("more than {MAX_MESSAGES} messages on stdin")]
    TooManyMessages,
}

/// Where the probe's server listens for the pipe: a loopback address and a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    addr: SocketAddr,
    path: String,
}

impl std::str::FromStr for Endpoint {
    type Err = PipeError;

    /// Reads `http://ADDRESS:PORT/PATH`; any other address than a loopback one is refused:
    /// the probe's server is on the fence's loopback, and the pipe reaches nothing else.
    fn from_str(url: &str) -> Result<Endpoint, PipeError> {
        let refused = || PipeError::Endpoint(url.to_owned());
        let rest = url.strip_prefix("http://").ok_or_else(refused)?;
        let (addr, path) = rest.split_once('/').ok_or_else(refused)?;
        let addr: SocketAddr = addr.parse().map_err(|_| refused())?;
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.');
        if !addr.ip().is_loopback() || !path.chars().all(plain) {
            return Err(refused());
        }
        Ok(Endpoint { addr, path: format!("/{path}") })
    }
}

/// Relays MCP from `input` to the probe's server at `endpoint` and its answers to `output`,
/// until `input` ends.
pub fn pipe(mut input: impl BufRead, mut output: impl Write, endpoint: &Endpoint) -> Result<(), PipeError> {
    for _ in 0..MAX_MESSAGES {
        let mut line = Vec::new();
        let read = (&mut input).take(MAX_LINE).read_until(b'\n', &mut line)?;
        if read == 0 {
            return Ok(());
        }
        if read as u64 == MAX_LINE && line.last() != Some(&b'\n') {
            return Err(PipeError::LineTooLong);
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(answer) = relay(&line, endpoint) {
            writeln!(output, "{answer}")?;
            output.flush()?;
        }
    }
    Err(PipeError::TooManyMessages)
}

/// Posts one message to the server: its answer, or an error answer of the pipe's own for a
/// request the server did not answer (so the harness's client never waits on a lost id);
/// `None` for a notification or a response, which have no answer.
fn relay(line: &[u8], endpoint: &Endpoint) -> Option<Value> {
    let id = serde_json::from_slice::<Value>(line).ok().and_then(|m| m.get("method").and(m.get("id")).cloned());
    let failed = |why: String| id.clone().map(|id| json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": why}}));
    let (status, body) = match post(endpoint, line) {
        Ok(answered) => answered,
        Err(e) => return failed(format!("the probe's MCP server could not be reached: {e}")),
    };
    match serde_json::from_slice::<Value>(&body) {
        // The server's own JSON-RPC answer, an error included (a parse error's has no id).
        Ok(answer) if answer.get("jsonrpc").is_some() => Some(answer),
        _ if status == 202 => None,
        _ => failed(format!("the probe's MCP server answered {status}: {}", String::from_utf8_lossy(&body))),
    }
}

/// One POST of `body` on a connection of its own: the status and the body of the answer.
/// hyper reads the answer (its framing, chunked or not), bounded to [`MAX_ANSWER`] and
/// [`WAIT`]; the pipe writes no HTTP of its own.
fn post(endpoint: &Endpoint, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
    use http_body_util::{BodyExt, Full, Limited};
    use hyper::header::{ACCEPT, CONTENT_TYPE, HOST};
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let late = |_| std::io::Error::new(std::io::ErrorKind::TimedOut, "the probe's MCP server did not answer in time");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
    runtime.block_on(async {
        let stream = tokio::time::timeout(WAIT, tokio::net::TcpStream::connect(endpoint.addr)).await.map_err(late)??;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.map_err(|e| invalid(e.to_string()))?;
        tokio::spawn(connection);
        let request = hyper::Request::post(endpoint.path.as_str())
            .header(HOST, endpoint.addr.to_string())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(Full::new(hyper::body::Bytes::copy_from_slice(body)))
            .map_err(|e| invalid(e.to_string()))?;
        let response = tokio::time::timeout(WAIT, sender.send_request(request)).await.map_err(late)?.map_err(|e| invalid(e.to_string()))?;
        let status = response.status().as_u16();
        let limited = Limited::new(response.into_body(), MAX_ANSWER as usize);
        let collected = tokio::time::timeout(WAIT, limited.collect()).await.map_err(late)?;
        let collected = collected.map_err(|_| invalid(String::from("an answer of more than 1 MiB")))?;
        Ok((status, collected.to_bytes().to_vec()))
    })
}

/// The answer to one message (`None` for a notification or a response), and what the log
/// keeps of it: the server's one tool is `tool`, whose calls are answered `result`.
pub(crate) fn answer(message: &Value, tool: &str, result: &str) -> (Option<Value>, Option<Value>) {
    let Some(method) = message.get("method").and_then(Value::as_str) else { return (None, None) };
    let Some(id) = message.get("id").cloned() else { return (None, None) };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let reply = |result: Value| Some(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    let error = |code: i64, words: String| Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": words}}));
    let logged = Some(json!({"method": method}));
    match method {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str).filter(|v| EARLIER.contains(v)).unwrap_or(PROTOCOL);
            let info = json!({"name": "checkfu-wire probe", "version": env!("CARGO_PKG_VERSION")});
            (reply(json!({"protocolVersion": asked, "capabilities": {"tools": {"listChanged": false}}, "serverInfo": info})), logged)
        }
        "tools/list" => (reply(json!({"tools": [described(tool)]})), logged),
        "tools/call" if params.get("name").and_then(Value::as_str) == Some(tool) => {
            let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
            let answered = json!({"content": [{"type": "text", "text": result}], "isError": false});
            (reply(answered), Some(json!({"method": method, "name": tool, "arguments": arguments})))
        }
        "tools/call" => {
            let name = params.get("name").cloned().unwrap_or(Value::Null);
            (error(-32602, format!("unknown tool {name}")), Some(json!({"method": method, "name": name})))
        }
        "ping" => (reply(json!({})), None),
        other => (error(-32601, format!("method not found: {other}")), None),
    }
}

/// The tool named `name` as `tools/list` describes it.
fn described(name: &str) -> Value {
    json!({
        "name": name,
        "title": "Checkfu platform probe",
        "description": "The Checkfu probe's platform tool: call it with the text the model was given; it answers a nonce.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    })
}

/// What reached the server, as its log says: whether it was started (`initialize`), listed
/// its tool, and the arguments of each call of it, in order (a call of a tool it does not
/// have is not one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerLog {
    pub initialized: bool,
    pub listed: bool,
    pub calls: Vec<Value>,
}

impl ServerLog {
    /// Takes in one entry [`answer`] logged, for the server whose one tool is `tool` (the
    /// calls kept are bounded).
    pub(crate) fn note(&mut self, entry: &Value, tool: &str) {
        match entry.get("method").and_then(Value::as_str) {
            Some("initialize") => self.initialized = true,
            Some("tools/list") => self.listed = true,
            Some("tools/call") if entry.get("name").and_then(Value::as_str) == Some(tool) && self.calls.len() < MAX_LOGGED => {
                self.calls.push(entry.get("arguments").cloned().unwrap_or(Value::Null));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Budget;
    use crate::mcp_http::{McpHttp, Transport};

    fn server() -> (McpHttp, Endpoint) {
        let endpoints = vec![(Transport::Stdio, String::from("cfm-result"))];
        let server = McpHttp::start(None, endpoints, Budget::after(Duration::from_secs(60))).expect("starts");
        let endpoint = server.url(Transport::Stdio).parse().expect("the probe's own endpoint");
        (server, endpoint)
    }

    fn lines(messages: &[Value]) -> String {
        messages.iter().map(|m| format!("{m}\n")).collect()
    }

    fn answers(output: &[u8]) -> Vec<Value> {
        output.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("json")).collect()
    }

    fn call(id: usize, text: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": TOOL, "arguments": {"text": text}}})
    }

    /// What goes through the pipe is answered by the probe's server and kept in its memory:
    /// the process the harness starts holds neither the result nor the record.
    #[test]
    fn a_session_through_the_pipe_is_answered_and_recorded_by_the_probe_s_server() {
        let (server, endpoint) = server();
        let input = lines(&[
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            call(2, "cfn-arg"),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "other"}}),
        ]) + "not json\n\n";
        let mut output = Vec::new();
        pipe(input.as_bytes(), &mut output, &endpoint).expect("piped");
        let answers = answers(&output);
        assert_eq!(answers.len(), 5, "{answers:?}");
        assert_eq!(answers[0]["result"]["protocolVersion"], PROTOCOL);
        assert_eq!(answers[1]["result"]["tools"][0]["name"], TOOL);
        assert_eq!(answers[2]["result"]["content"][0]["text"], "cfm-result");
        assert_eq!(answers[3]["error"]["code"], -32602);
        assert_eq!(answers[4]["error"]["code"], -32700);
        let log = server.log(Transport::Stdio);
        assert_eq!(log, ServerLog { initialized: true, listed: true, calls: vec![json!({"text": "cfn-arg"})] });
    }

    /// An oversized line stops the pipe before anything of it reaches the server; a flood
    /// stops it after its bound, and the server keeps a bounded record of it.
    #[test]
    fn an_oversized_line_or_a_flood_stops_the_pipe_and_the_record_stays_bounded() {
        let (server, endpoint) = server();
        let long = vec![b'x'; MAX_LINE as usize + 1];
        assert!(matches!(pipe(&long[..], Vec::new(), &endpoint), Err(PipeError::LineTooLong)));
        assert_eq!(server.log(Transport::Stdio), ServerLog::default());
        // Blank lines count as messages without a request each, so the bound is reached fast.
        let calls: Vec<Value> = (0..MAX_LOGGED + 10).map(|i| call(i, &format!("cfn-{i}"))).collect();
        let flood = lines(&calls) + &"\n".repeat(MAX_MESSAGES);
        let mut output = Vec::new();
        assert!(matches!(pipe(flood.as_bytes(), &mut output, &endpoint), Err(PipeError::TooManyMessages)));
        assert_eq!(answers(&output).len(), MAX_LOGGED + 10);
        assert_eq!(server.log(Transport::Stdio).calls.len(), MAX_LOGGED);
    }

    /// With the probe's server gone, a request is answered with an error of the pipe's own (a
    /// client waiting on it does not hang), and a notification with nothing.
    #[test]
    fn a_server_that_is_gone_is_an_error_answer_not_a_wait() {
        let (server, endpoint) = server();
        server.stop();
        let input = lines(&[call(7, "cfn-x"), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})]);
        let mut output = Vec::new();
        pipe(input.as_bytes(), &mut output, &endpoint).expect("piped");
        let answers = answers(&output);
        assert_eq!(answers.len(), 1, "{answers:?}");
        assert_eq!(answers[0]["id"], 7);
        assert!(answers[0]["error"]["message"].as_str().is_some_and(|m| m.contains("could not be reached")), "{answers:?}");
    }

    #[test]
    fn only_an_http_endpoint_on_the_loopback_is_piped_to() {
        assert_eq!("http://127.0.0.1:9/stdio".parse::<Endpoint>().ok().map(|e| e.path), Some(String::from("/stdio")));
        assert!("http://[::1]:9/stdio".parse::<Endpoint>().is_ok());
        for refused in
            ["http://10.0.0.1:9/stdio", "https://127.0.0.1:9/stdio", "http://127.0.0.1:9", "http://localhost:9/x", "http://127.0.0.1:9/a b"]
        {
            let error = refused.parse::<Endpoint>().expect_err(refused).to_string();
            assert!(error.contains(refused) && error.contains("--endpoint"), "{error}");
        }
    }
}
