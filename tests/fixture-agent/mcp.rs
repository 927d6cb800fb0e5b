//! The fixture agent's MCP client: each stdio server `session/new` grants in `mcpServers` is
//! started (its command, arguments and variables, in the session's directory), and each
//! `http` one reached over streamable HTTP (one POST per message to its URL, read as one JSON
//! answer: the only way the probe's server answers; the agent advertises HTTP only under
//! `--mcp-http`); each is initialized and asked for its tools, which the model is offered as
//! `mcp__SERVER__TOOL`; a call of one goes to its server as `tools/call`. Every wait is
//! bounded; a server that does not answer in time is left out.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

/// How long one request to a server may take.
const WAIT: Duration = Duration::from_secs(10);
/// The most tools kept of one server.
const MAX_TOOLS: usize = 64;

/// How a server is reached.
enum Link {
    /// A child on stdio, its answers read by a thread of their own.
    Stdio { child: Child, stdin: ChildStdin, answers: Receiver<Value> },
    /// An `http` server: `host:port` and the path of its endpoint.
    Http { addr: String, path: String },
}

/// A started server.
pub struct Server {
    name: String,
    link: Link,
    next_id: i64,
    /// The value after `--result` in a stdio server's arguments, if they have one (what
    /// `--forge-mcp-log` answers in the server's stead; the probe's servers name none).
    pub result_arg: Option<String>,
    /// Its tools: the name the model gets, the server's own, the input schema.
    pub tools: Vec<(String, String, Value)>,
}

impl Server {
    /// Starts the stdio server `entry` describes (an `mcpServers` entry), in `cwd`.
    pub fn start(entry: &Value, cwd: &str) -> Result<Server, String> {
        let name = entry.get("name").and_then(Value::as_str).unwrap_or("server").to_owned();
        let command = entry.get("command").and_then(Value::as_str).ok_or("not a stdio server: no command")?;
        let args: Vec<&str> = entry.get("args").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let mut spawn = Command::new(command);
        spawn.args(&args).current_dir(cwd).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        for var in entry.get("env").and_then(Value::as_array).into_iter().flatten() {
            if let (Some(key), Some(value)) = (var.get("name").and_then(Value::as_str), var.get("value").and_then(Value::as_str)) {
                spawn.env(key, value);
            }
        }
        let mut child = spawn.spawn().map_err(|e| format!("cannot start {command}: {e}"))?;
        let (stdin, stdout) = (child.stdin.take().ok_or("no stdin")?, child.stdout.take().ok_or("no stdout")?);
        let (send, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout.take(64 << 20)).lines() {
                let Ok(line) = line else { break };
                if let Ok(message) = serde_json::from_str::<Value>(&line) {
                    if send.send(message).is_err() {
                        break;
                    }
                }
            }
        });
        let result_arg = args.iter().skip_while(|a| **a != "--result").nth(1).map(|r| (*r).to_owned());
        Server { name, link: Link::Stdio { child, stdin, answers }, next_id: 0, result_arg, tools: Vec::new() }.initialize()
    }

    /// Reaches the `http` server `entry` describes: `http://HOST:PORT/PATH` only.
    pub fn connect(entry: &Value) -> Result<Server, String> {
        let name = entry.get("name").and_then(Value::as_str).unwrap_or("server").to_owned();
        let url = entry.get("url").and_then(Value::as_str).ok_or("not an http server: no url")?;
        let rest = url.strip_prefix("http://").ok_or_else(|| format!("not a plain http URL: {url}"))?;
        let (addr, path) = rest.split_once('/').map_or((rest, String::from("/")), |(a, p)| (a, format!("/{p}")));
        Server { name, link: Link::Http { addr: addr.to_owned(), path }, next_id: 0, result_arg: None, tools: Vec::new() }.initialize()
    }

    /// Initializes the server and lists its tools.
    fn initialize(self) -> Result<Server, String> {
        let mut server = self;
        let info = json!({"name": "checkfu-fixture-agent", "version": "1.0.0"});
        server.request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}))?;
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        let listed = server.request("tools/list", json!({}))?;
        for tool in listed.get("tools").and_then(Value::as_array).into_iter().flatten().take(MAX_TOOLS) {
            let Some(own) = tool.get("name").and_then(Value::as_str) else { continue };
            let schema = tool.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"}));
            server.tools.push((format!("mcp__{}__{own}", server.name), own.to_owned(), schema));
        }
        Ok(server)
    }

    /// Sends one message; over HTTP, the server's answer to it (`None` for a 202).
    fn send(&mut self, message: &Value) -> Result<Option<Value>, String> {
        match &mut self.link {
            Link::Stdio { stdin, .. } => {
                writeln!(stdin, "{message}").and_then(|()| stdin.flush()).map_err(|e| format!("the server's stdin: {e}"))?;
                Ok(None)
            }
            Link::Http { addr, path } => {
                let accept = [("Accept", String::from("application/json, text/event-stream"))];
                let (status, body) = super::model::post(addr, path, &accept, message.to_string().as_bytes())?;
                match status {
                    202 => Ok(None),
                    200 => serde_json::from_slice(&body).map(Some).map_err(|e| format!("an answer that is not JSON: {e}")),
                    other => Err(format!("the server answered {other}: {}", String::from_utf8_lossy(&body))),
                }
            }
        }
    }

    /// One request, and its result.
    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let answered = self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let message = match (answered, &self.link) {
            (Some(message), _) => message,
            (None, Link::Stdio { answers, .. }) => loop {
                let message = answers.recv_timeout(WAIT).map_err(|_| format!("{method}: no answer from {}", self.name))?;
                if message.get("id") == Some(&json!(id)) {
                    break message;
                }
            },
            (None, Link::Http { .. }) => return Err(format!("{method}: {} answered no response", self.name)),
        };
        match message.get("error") {
            Some(error) => Err(format!("{method} answered an error: {error}")),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    /// Calls the server's tool `own` with `input`: the text of its result.
    pub fn call(&mut self, own: &str, input: &Value) -> String {
        match self.request("tools/call", json!({"name": own, "arguments": input})) {
            Ok(result) => result
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("the tool failed: {e}"),
        }
    }

    /// Stops the server (before the agent exits, so nothing of it outlives the agent).
    pub fn stop(&mut self) {
        if let Link::Stdio { child, .. } = &mut self.link {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
