//! The probe's own MCP server: what `session/new`'s `mcpServers` grants the harness, run as
//! `checkfu-wire mcp-tool` (a hidden subcommand of the probe's own binary), which the harness
//! starts inside the fence as ACP asks of every agent.
//!
//! It speaks MCP over stdio (newline-delimited JSON-RPC, as `schemas/mcp-2025-06-18.schema.json`
//! describes the messages): `initialize`, `tools/list` with one tool ([`TOOL`]), `tools/call`
//! answered with the result the probe gave it (`--result`), and `ping`. Every request it
//! serves is appended as one JSON line to its log (`--log`, a file in the probe's
//! workspace), which the probe reads after the turn ([`read_log`]): what reached the server,
//! from inside the sandbox, and with which arguments. Reads are bounded (a line, the messages
//! of one session, the lines logged). The same answers ([`answer`]) and the same log
//! ([`ServerLog`]) serve the server over HTTP ([`crate::mcp_http`]), which keeps its log in
//! the probe's memory.

use std::io::{BufRead, Read, Write};
use std::path::Path;

use serde_json::{json, Value};

/// The name the probe gives its server in `mcpServers`.
pub const SERVER_NAME: &str = "checkfu";
/// The server's one tool. A harness names it as it likes (`mcp__checkfu__…`); the relay finds
/// it by this ending.
pub const TOOL: &str = "checkfu_platform_probe";
/// The hidden subcommand that runs the server.
pub const SUBCOMMAND: &str = "mcp-tool";
/// The MCP revision the server speaks (the vendored schema's).
const PROTOCOL: &str = "2025-06-18";
/// The earlier revisions it answers as themselves: the messages it uses are the same in each.
const EARLIER: &[&str] = &["2024-11-05", "2025-03-26"];
/// The longest line it reads, the most messages it reads, and the most lines it logs.
const MAX_LINE: u64 = 1 << 20;
const MAX_MESSAGES: usize = 4096;
const MAX_LOGGED: usize = 256;
/// The most of the log the probe reads back.
const MAX_LOG: u64 = 4 << 20;

/// Why the server stopped before its input ended.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the MCP server's log {path} cannot be written: {source}")]
    Log { path: String, source: std::io::Error },
    #[error("the MCP server's stdio failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("a line of more than {MAX_LINE} bytes")]
    LineTooLong,
    #[error("more than {MAX_MESSAGES} messages")]
    TooManyMessages,
}

/// Serves MCP on `input` and `output` until `input` ends, answering every tool call with
/// `result` and logging each request to `log`.
pub fn serve(mut input: impl BufRead, mut output: impl Write, result: &str, log: &Path) -> Result<(), ServeError> {
    let log_error = |source| ServeError::Log { path: log.display().to_string(), source };
    let mut log_file = std::fs::OpenOptions::new().create(true).append(true).open(log).map_err(log_error)?;
    let mut logged = 0;
    for _ in 0..MAX_MESSAGES {
        let mut line = Vec::new();
        let read = (&mut input).take(MAX_LINE).read_until(b'\n', &mut line)?;
        if read == 0 {
            return Ok(());
        }
        if read as u64 == MAX_LINE && line.last() != Some(&b'\n') {
            return Err(ServeError::LineTooLong);
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let (answer, entry) = match serde_json::from_slice::<Value>(&line) {
            Ok(message) => answer(&message, TOOL, result),
            Err(e) => (Some(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": e.to_string()}})), None),
        };
        if let Some(entry) = entry.filter(|_| logged < MAX_LOGGED) {
            logged += 1;
            writeln!(log_file, "{entry}").and_then(|()| log_file.flush()).map_err(log_error)?;
        }
        if let Some(answer) = answer {
            writeln!(output, "{answer}")?;
            output.flush()?;
        }
    }
    Err(ServeError::TooManyMessages)
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

/// Reads the server's log at `path` (bounded; a missing log is a server never started, a
/// line that is not JSON is skipped).
pub fn read_log(path: &Path) -> ServerLog {
    let mut text = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(MAX_LOG).read_to_end(&mut text);
    }
    let mut log = ServerLog::default();
    for entry in text.split(|b| *b == b'\n').filter_map(|line| serde_json::from_slice::<Value>(line).ok()) {
        log.note(&entry, TOOL);
    }
    log
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(lines: &[Value]) -> (Vec<Value>, ServerLog) {
        let dir = tempfile::tempdir().expect("dir");
        let log = dir.path().join("log.jsonl");
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut output = Vec::new();
        serve(input.as_bytes(), &mut output, "cfc-result", &log).expect("served");
        let answers = output.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("json")).collect();
        (answers, read_log(&log))
    }

    #[test]
    fn a_session_lists_the_tool_answers_its_call_with_the_result_and_logs_the_arguments() {
        let (answers, log) = session(&[
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": TOOL, "arguments": {"text": "cfc-arg"}}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "other"}}),
        ]);
        assert_eq!(answers.len(), 4, "{answers:?}");
        assert_eq!(answers[0]["result"]["protocolVersion"], PROTOCOL);
        assert_eq!(answers[1]["result"]["tools"][0]["name"], TOOL);
        assert_eq!(answers[2]["result"]["content"][0]["text"], "cfc-result");
        assert_eq!(answers[3]["error"]["code"], -32602);
        assert_eq!(log, ServerLog { initialized: true, listed: true, calls: vec![json!({"text": "cfc-arg"})] });
    }

    #[test]
    fn garbage_is_answered_as_a_parse_error_and_an_overlong_line_stops_the_server() {
        let dir = tempfile::tempdir().expect("dir");
        let log = dir.path().join("log.jsonl");
        let mut output = Vec::new();
        serve(&b"not json\n"[..], &mut output, "r", &log).expect("served");
        assert!(String::from_utf8_lossy(&output).contains("-32700"));
        let long = vec![b'x'; MAX_LINE as usize + 1];
        assert!(matches!(serve(&long[..], Vec::new(), "r", &log), Err(ServeError::LineTooLong)));
        assert_eq!(read_log(&log), ServerLog::default());
        assert_eq!(read_log(&dir.path().join("absent")), ServerLog::default());
    }
}
